package main

import (
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// github.com/hashicorp/raft-wal: raft log entries numbered from 1, each carrying a key/value
// frame as its Data. It has no no-fsync mode: every StoreLogs call ends with an fsync, so it
// pays one fsync per batch in every workload. Appends are serialized by a mutex (entries need
// the next index). WAL.Close leaves its metadata database (bbolt) open, and a second Open of the
// folder then waits for bbolt's file lock forever, so the adapter passes its own
// metadb.BoltMetaDB (WithMetaStore) and closes it after the WAL.

func raftWALSystem() *System {
	return &System{
		Name:       "raft-wal",
		Kind:       KindPeer,
		Version:    "github.com/hashicorp/raft-wal v0.4.0",
		Config:     "defaults (64 MiB segments); one fsync per StoreLogs batch, always",
		Workloads:  "abcdefg",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			meta := &metadb.BoltMetaDB{}
			w, err := raftwal.Open(dir, raftwal.WithLogger(hclog.NewNullLogger()), raftwal.WithMetaStore(meta))
			if err != nil {
				return nil, errors.Join(err, meta.Close())
			}
			last, err := w.LastIndex()
			if err != nil {
				return nil, errors.Join(err, w.Close(), meta.Close())
			}
			return &raftWALLog{w: w, meta: meta, last: last}, nil
		},
	}
}

// raftWALLog adapts a *raftwal.WAL.
type raftWALLog struct {
	w      *raftwal.WAL
	meta   *metadb.BoltMetaDB
	mu     sync.Mutex // serializes appends: each needs the next index
	last   uint64
	frame  []byte
	frames [][]byte
	logs   []raft.Log
	ptrs   []*raft.Log
	get    raft.Log
}

func (r *raftWALLog) Append(recs []Rec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frame, r.frames = Frames(r.frame, r.frames, recs)
	if cap(r.logs) < len(recs) {
		r.logs = make([]raft.Log, len(recs))
		r.ptrs = make([]*raft.Log, len(recs))
	}
	r.ptrs = r.ptrs[:len(recs)]
	for i, f := range r.frames {
		r.logs[i] = raft.Log{Index: r.last + 1 + uint64(i), Term: 1, Type: raft.LogCommand, Data: f}
		r.ptrs[i] = &r.logs[i]
	}
	if err := r.w.StoreLogs(r.ptrs); err != nil {
		return err
	}
	r.last += uint64(len(recs))
	return nil
}

// Sync has nothing to do: every StoreLogs was synced.
func (r *raftWALLog) Sync() error { return nil }

func (r *raftWALLog) Count() (int64, error) {
	last, err := r.w.LastIndex()
	return int64(last), err
}

func (r *raftWALLog) Scan(fn func(i int64, key, value []byte) error) error {
	last, err := r.w.LastIndex()
	if err != nil {
		return err
	}
	for idx := uint64(1); idx <= last; idx++ {
		if err := r.w.GetLog(idx, &r.get); err != nil {
			return err
		}
		k, v, err := SplitFrame(r.get.Data)
		if err != nil {
			return err
		}
		if err := fn(int64(idx-1), k, v); err != nil {
			return err
		}
	}
	return nil
}

func (r *raftWALLog) Get(i int64) ([]byte, []byte, error) {
	if err := r.w.GetLog(uint64(i)+1, &r.get); err != nil {
		return nil, nil, err
	}
	return SplitFrame(r.get.Data)
}

func (r *raftWALLog) Close() error { return errors.Join(r.w.Close(), r.meta.Close()) }
