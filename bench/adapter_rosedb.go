package main

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/rosedblabs/wal"
)

// github.com/rosedblabs/wal: chunks addressed by position (segment, block, offset), not by
// number. A program that reads by record number keeps the positions Write returns, so the
// adapter keeps them in a table, and on open rebuilds the table by reading the log once (part
// of its reopen time in workload f: without it the log cannot be read by number). Batches go
// through PendingWrites and WriteAll, single records through Write; Sync: false for the
// no-fsync workloads, Sync: true (an fsync in every Write) for workload c.

func roseDBSystem() *System {
	return &System{
		Name:       "rosedb/wal",
		Kind:       KindPeer,
		Version:    "github.com/rosedblabs/wal v1.3.8",
		Config:     "1 GiB segments, Sync false (c: true); positions kept in a table, rebuilt by a scan on open",
		Workloads:  "abcdefg",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			w, err := wal.Open(wal.Options{DirPath: dir, SegmentSize: wal.GB, SegmentFileExt: ".SEG", Sync: o.Durable})
			if err != nil {
				return nil, err
			}
			r := &roseDBLog{w: w, durable: o.Durable}
			rd := w.NewReader()
			for {
				_, pos, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("reading the log to rebuild its positions: %w (and closing: %v)", err, w.Close())
				}
				r.pos = append(r.pos, *pos)
			}
			return r, nil
		},
	}
}

// roseDBLog adapts a *wal.WAL.
type roseDBLog struct {
	w       *wal.WAL
	durable bool
	mu      sync.Mutex // keeps pos in the order of the log
	pos     []wal.ChunkPosition
	frame   []byte
	frames  [][]byte
}

func (r *roseDBLog) Append(recs []Rec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(recs) == 1 {
		r.frame = AppendFrame(r.frame[:0], &recs[0])
		pos, err := r.w.Write(r.frame)
		if err != nil {
			return err
		}
		r.pos = append(r.pos, *pos)
		return nil
	}
	r.frame, r.frames = Frames(r.frame, r.frames, recs)
	for _, f := range r.frames {
		r.w.PendingWrites(f)
	}
	positions, err := r.w.WriteAll()
	if err != nil {
		return err
	}
	for _, p := range positions {
		r.pos = append(r.pos, *p)
	}
	if r.durable {
		return r.w.Sync()
	}
	return nil
}

func (r *roseDBLog) Sync() error { return r.w.Sync() }

func (r *roseDBLog) Count() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.pos)), nil
}

func (r *roseDBLog) Scan(fn func(i int64, key, value []byte) error) error {
	rd := r.w.NewReader()
	for i := int64(0); ; i++ {
		data, _, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		k, v, err := SplitFrame(data)
		if err != nil {
			return err
		}
		if err := fn(i, k, v); err != nil {
			return err
		}
	}
}

func (r *roseDBLog) Get(i int64) ([]byte, []byte, error) {
	if i < 0 || i >= int64(len(r.pos)) {
		return nil, nil, fmt.Errorf("record %d not in a log of %d", i, len(r.pos))
	}
	data, err := r.w.Read(&r.pos[i])
	if err != nil {
		return nil, nil, err
	}
	return SplitFrame(data)
}

func (r *roseDBLog) Close() error { return r.w.Close() }
