package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The group-commit baseline: the least code that shares fsyncs between concurrent durable
// appends. Each append writes its length-prefixed frames into one bufio.Writer under a mutex and
// notes the byte position it reached; it returns once a fdatasync covers that position. The
// first waiter that finds no sync running flushes everything buffered so far and fdatasyncs it,
// for itself and for every append that wrote before the flush; appends arriving meanwhile wait
// for the next sync. The producers workload only.

func groupSyncSystem() *System {
	return &System{
		Name:       "groupsync",
		Kind:       KindBaseline,
		Version:    "bufio.Writer + fdatasync (golang.org/x/sys/unix)",
		Config:     "one file, length-prefixed frames; each append waits until a fdatasync covers its bytes, one waiter at a time flushes and syncs for all that wrote before it",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			if !o.Durable {
				return nil, errors.New("the groupsync baseline has only a durable mode")
			}
			f, err := os.OpenFile(filepath.Join(dir, "groupsync"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return nil, err
			}
			return &groupSyncLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
		},
	}
}

// groupSyncLog is the file, its writer and how far it is durable.
type groupSyncLog struct {
	f *os.File

	mu      sync.Mutex // guards w, written, count, frame
	w       *bufio.Writer
	written int64 // bytes handed to w
	count   int64 // records handed to w
	frame   []byte

	syncMu  sync.Mutex   // held by the one append flushing and syncing
	durable atomic.Int64 // bytes known to be on stable storage
}

func (g *groupSyncLog) Append(recs []Rec) error {
	g.mu.Lock()
	for i := range recs {
		g.frame = binary.BigEndian.AppendUint32(g.frame[:0], uint32(FrameSize(&recs[i])))
		g.frame = AppendFrame(g.frame, &recs[i])
		if _, err := g.w.Write(g.frame); err != nil {
			g.mu.Unlock()
			return err
		}
		g.written += int64(len(g.frame))
	}
	g.count += int64(len(recs))
	mine := g.written
	g.mu.Unlock()
	for g.durable.Load() < mine {
		if err := g.syncUpTo(mine); err != nil {
			return err
		}
	}
	return nil
}

// syncUpTo flushes and syncs everything written so far unless another append's sync already
// covered position pos.
func (g *groupSyncLog) syncUpTo(pos int64) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	if g.durable.Load() >= pos {
		return nil
	}
	g.mu.Lock()
	err := g.w.Flush()
	upTo := g.written
	g.mu.Unlock()
	if err != nil {
		return err
	}
	if err := unix.Fdatasync(int(g.f.Fd())); err != nil {
		return err
	}
	g.durable.Store(upTo)
	return nil
}

func (g *groupSyncLog) Sync() error {
	g.mu.Lock()
	pos := g.written
	g.mu.Unlock()
	return g.syncUpTo(pos)
}

func (g *groupSyncLog) Count() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count, nil
}

func (g *groupSyncLog) Scan(func(int64, []byte, []byte) error) error {
	return errors.New("the groupsync baseline is write-only")
}

func (g *groupSyncLog) Get(int64) ([]byte, []byte, error) {
	return nil, nil, errors.New("the groupsync baseline is write-only")
}

func (g *groupSyncLog) Close() error {
	return errors.Join(g.Sync(), g.f.Close())
}
