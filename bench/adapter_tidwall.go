package main

import (
	"sync"

	"github.com/tidwall/wal"
)

// github.com/tidwall/wal: entries numbered from 1, each a key/value frame. NoSync for the
// no-fsync workloads; its default (fsync after every write or batch) for workload c. Reads use
// NoCopy (its documented zero-copy option). A read loads and parses the whole 20 MB segment
// holding the entry and keeps SegmentCacheSize segments (default 2): on a log of more segments
// random reads reload a segment almost every time (225 reads/s on workload a's 118 MB log,
// measured on the benchmark machine), so for the read workloads (Options.ReadMostly) the adapter
// keeps up to 64 segments cached, the whole log; the write workloads keep the default. Writers must give the next index, so the adapter serializes appends
// with a mutex (the log takes its own lock anyway).

func tidwallSystem() *System {
	return &System{
		Name:       "tidwall/wal",
		Kind:       KindPeer,
		Version:    "github.com/tidwall/wal v1.2.1",
		Config:     "Binary format, 20 MB segments, NoSync (c: fsync per write), NoCopy reads, SegmentCacheSize 2 (d, e: 64; with 2, 225 random reads/s)",
		Workloads:  "abcdefg",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			cache := 2 // the default
			if o.ReadMostly {
				cache = 64
			}
			l, err := wal.Open(dir, &wal.Options{NoSync: !o.Durable, NoCopy: true, SegmentSize: 20 << 20, SegmentCacheSize: cache})
			if err != nil {
				return nil, err
			}
			last, err := l.LastIndex()
			if err != nil {
				return nil, err
			}
			return &tidwallLog{l: l, last: last}, nil
		},
	}
}

// tidwallLog adapts a *wal.Log.
type tidwallLog struct {
	l      *wal.Log
	mu     sync.Mutex // serializes appends: each needs the next index
	last   uint64
	batch  wal.Batch
	frame  []byte
	frames [][]byte
}

func (t *tidwallLog) Append(recs []Rec) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(recs) == 1 {
		t.frame = AppendFrame(t.frame[:0], &recs[0])
		if err := t.l.Write(t.last+1, t.frame); err != nil {
			return err
		}
		t.last++
		return nil
	}
	t.frame, t.frames = Frames(t.frame, t.frames, recs)
	for i, f := range t.frames {
		t.batch.Write(t.last+1+uint64(i), f)
	}
	if err := t.l.WriteBatch(&t.batch); err != nil {
		t.batch.Clear()
		return err
	}
	t.last += uint64(len(recs))
	return nil
}

func (t *tidwallLog) Sync() error { return t.l.Sync() }

func (t *tidwallLog) Count() (int64, error) {
	last, err := t.l.LastIndex()
	return int64(last), err
}

func (t *tidwallLog) Scan(fn func(i int64, key, value []byte) error) error {
	last, err := t.l.LastIndex()
	if err != nil {
		return err
	}
	for idx := uint64(1); idx <= last; idx++ {
		data, err := t.l.Read(idx)
		if err != nil {
			return err
		}
		k, v, err := SplitFrame(data)
		if err != nil {
			return err
		}
		if err := fn(int64(idx-1), k, v); err != nil {
			return err
		}
	}
	return nil
}

func (t *tidwallLog) Get(i int64) ([]byte, []byte, error) {
	data, err := t.l.Read(uint64(i) + 1)
	if err != nil {
		return nil, nil, err
	}
	return SplitFrame(data)
}

func (t *tidwallLog) Close() error { return t.l.Close() }
