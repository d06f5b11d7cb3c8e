package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The file baseline: what a program does without a log library. Appends go through a
// bufio.Writer (default 4 KiB buffer) to one file, each record as a 4-byte big-endian length and
// the key/value frame; sequential reads through a bufio.Reader (default size); reads by number
// with one pread from a table of positions kept in memory, made by a scan on open (appends do
// not extend it, so that the append workloads' memory is the writer's alone). No fsync but at
// Sync.

// fileName is the baseline's one file in its folder.
const fileName = "records"

func fileSystem() *System {
	return &System{
		Name:       "bufio",
		Kind:       KindBaseline,
		Version:    "Go standard library",
		Config:     "bufio.Writer/bufio.Reader (4 KiB), length-prefixed frames in one file; e: pread with a kept position table",
		Workloads:  "abdeg",
		Named:      []string{"reader"},
		Persistent: true,
		Open:       openFileLog,
		Label: func(w string) string {
			if w == "e" {
				return "pread table"
			}
			return ""
		},
	}
}

// fileLog is the baseline's file, its writer and position table.
type fileLog struct {
	f     *os.File
	w     *bufio.Writer
	n     int64   // records
	end   int64   // bytes
	pos   []int64 // start of every record found on open, then the end of the last
	frame []byte
	buf   []byte // Get's buffer
}

func openFileLog(dir string, o Options) (Log, error) {
	if o.Durable {
		return nil, errors.New("the bufio baseline has no durable mode (the fdatasync baseline is workload c's)")
	}
	f, err := os.OpenFile(filepath.Join(dir, fileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &fileLog{f: f, pos: []int64{0}}
	if err := l.loadPositions(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	l.n, l.end = int64(len(l.pos)-1), l.pos[len(l.pos)-1]
	if _, err := f.Seek(l.end, io.SeekStart); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	l.w = bufio.NewWriter(f)
	return l, nil
}

// loadPositions reads the file once to rebuild the position table.
func (l *fileLog) loadPositions() error {
	r := bufio.NewReader(io.NewSectionReader(l.f, 0, 1<<62))
	var lenBuf [4]byte
	end := int64(0)
	for {
		if _, err := io.ReadFull(r, lenBuf[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint32(lenBuf[:]))
		if _, err := r.Discard(int(n)); err != nil {
			return err
		}
		end += 4 + n
		l.pos = append(l.pos, end)
	}
}

func (l *fileLog) Append(recs []Rec) error {
	for i := range recs {
		l.frame = binary.BigEndian.AppendUint32(l.frame[:0], uint32(FrameSize(&recs[i])))
		l.frame = AppendFrame(l.frame, &recs[i])
		if _, err := l.w.Write(l.frame); err != nil {
			return err
		}
		l.end += int64(len(l.frame))
		l.n++
	}
	return nil
}

func (l *fileLog) Sync() error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *fileLog) Count() (int64, error) { return l.n, nil }

func (l *fileLog) Scan(fn func(i int64, key, value []byte) error) error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	f, err := os.Open(l.f.Name())
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var lenBuf [4]byte
	buf := make([]byte, 0, 4096)
	for i := int64(0); ; i++ {
		if _, err := io.ReadFull(r, lenBuf[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(lenBuf[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		k, v, err := SplitFrame(buf)
		if err != nil {
			return err
		}
		if err := fn(i, k, v); err != nil {
			return err
		}
	}
}

func (l *fileLog) Get(i int64) ([]byte, []byte, error) {
	if i < 0 || i >= int64(len(l.pos)-1) {
		return nil, nil, fmt.Errorf("record %d not in the %d records found on open", i, len(l.pos)-1)
	}
	start, end := l.pos[i]+4, l.pos[i+1]
	if cap(l.buf) < int(end-start) {
		l.buf = make([]byte, end-start)
	}
	l.buf = l.buf[:end-start]
	if _, err := l.f.ReadAt(l.buf, start); err != nil {
		return nil, nil, err
	}
	return SplitFrame(l.buf)
}

func (l *fileLog) Close() error {
	return errors.Join(l.w.Flush(), l.f.Close())
}
