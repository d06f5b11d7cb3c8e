package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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

// groupSyncFiles is the producers workload's partition count for the groupsync-4 baseline: the
// same as commitlog-Topic's topic, so both are bound by one fsync per file per group.
const groupSyncFiles = producerPartitions

// groupSyncPartitionedSystem is the group-commit baseline spread over as many files as the
// producers workload's topic has partitions: each append goes to the file its key hashes to and
// waits for that file's group fsync, as a Topic.Append waits for its partition's. It is the
// ceiling of per-file group commit on this machine: what a log that fsyncs each partition's file
// can reach with the same writers and the same spread of keys.
func groupSyncPartitionedSystem() *System {
	return &System{
		Name:    "groupsync-4",
		Kind:    KindBaseline,
		Version: "bufio.Writer + fdatasync (golang.org/x/sys/unix), one per file",
		Config: fmt.Sprintf("%d files, each a groupsync log (length-prefixed frames, its own group fdatasync); an append goes to the file of its key's FNV-1a hash mod %d",
			groupSyncFiles, groupSyncFiles),
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			if !o.Durable {
				return nil, errors.New("the groupsync-4 baseline has only a durable mode")
			}
			p := &groupSyncPartitioned{}
			for i := range p.files {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("groupsync-%d", i)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					return nil, errors.Join(err, p.Close())
				}
				p.files[i] = &groupSyncLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}
			}
			return p, nil
		},
	}
}

// groupSyncPartitioned is groupSyncFiles group-commit logs, an append going to one of them by
// its first record's key.
type groupSyncPartitioned struct {
	files [groupSyncFiles]*groupSyncLog
}

// file returns the log the records keyed key go to.
func (p *groupSyncPartitioned) file(key []byte) *groupSyncLog {
	h := fnv.New32a()
	h.Write(key)
	return p.files[h.Sum32()%groupSyncFiles]
}

func (p *groupSyncPartitioned) Append(recs []Rec) error {
	if len(recs) == 0 {
		return nil
	}
	return p.file(recs[0].Key).Append(recs)
}

func (p *groupSyncPartitioned) Sync() error {
	var errs []error
	for _, f := range p.files {
		errs = append(errs, f.Sync())
	}
	return errors.Join(errs...)
}

func (p *groupSyncPartitioned) Count() (int64, error) {
	var n int64
	for _, f := range p.files {
		c, err := f.Count()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func (p *groupSyncPartitioned) Scan(func(int64, []byte, []byte) error) error {
	return errors.New("the groupsync-4 baseline is write-only")
}

func (p *groupSyncPartitioned) Get(int64) ([]byte, []byte, error) {
	return nil, nil, errors.New("the groupsync-4 baseline is write-only")
}

func (p *groupSyncPartitioned) Close() error {
	var errs []error
	for _, f := range p.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}
