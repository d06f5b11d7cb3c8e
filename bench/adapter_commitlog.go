package main

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog"
)

// This library's file store through its single-partition Log: SyncNever for the no-fsync
// workloads (flushed by Sync/Close at the end), SyncAlways (group commit) for workload c.
// Sequential reads use Scan, reads by offset ReadRecord.

// readChunk is the maxBytes of one sequential ReadRecords call.
const readChunk = 1 << 20

func commitlogSystem() *System {
	return &System{
		Name:       "commitlog",
		Kind:       KindOurs,
		Version:    "this repository (Log, file store)",
		Config:     "OpenLog, SyncNever (c: SyncAlways); reads: Scan, the zero-copy record iterator (e: ReadRecord into one reused Record, 32 MiB record position cache by default)",
		Workloads:  "abcdefg",
		Named:      []string{"reader", "producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			l, err := commitlog.OpenLog(dir, logConfig(o))
			if err != nil {
				return nil, err
			}
			return &ourLog{app: l, read: l, sync: l.Sync, count: l.LogEndOffset, close: l.Close}, nil
		},
		OpenTopic: func(dir string, partitions int) (Topic, error) {
			s, err := commitlog.Open(dir)
			if err != nil {
				return nil, err
			}
			return openOurTopic(s, partitions)
		},
	}
}

// logConfig is the log configuration for o: Kafka's defaults but for the sync policy.
func logConfig(o Options) commitlog.LogConfig {
	cfg := commitlog.LogConfig{Sync: commitlog.SyncNever, RetentionDuration: -1}
	if o.Durable {
		cfg.Sync = commitlog.SyncAlways
	}
	return cfg
}

// appender is what Log and Partition share for appending.
type appender interface {
	Append(ctx context.Context, recs ...*commitlog.Record) error
}

// batchReader is what Log and Partition share for reading.
type batchReader interface {
	ReadRecords(offset int64, maxBytes int) ([]*commitlog.Record, error)
	ReadRecord(offset int64, r *commitlog.Record) error
	Scan(from int64) iter.Seq2[*commitlog.Record, error]
}

// ourLog adapts a Log or a Partition.
type ourLog struct {
	app     appender
	read    batchReader
	sync    func() error
	count   func() int64
	close   func() error
	scratch sync.Pool        // *ourScratch
	rec     commitlog.Record // Get's record, whose buffers ReadRecord reuses
}

// ourScratch holds the records of one Append call, reused across calls.
type ourScratch struct {
	recs []commitlog.Record
	ptrs []*commitlog.Record
}

// records converts recs into the library's records, in s.
func (s *ourScratch) records(recs []Rec) []*commitlog.Record {
	if cap(s.recs) < len(recs) {
		s.recs = make([]commitlog.Record, len(recs))
		s.ptrs = make([]*commitlog.Record, len(recs))
		for i := range s.recs {
			s.ptrs[i] = &s.recs[i]
		}
	}
	for i := range recs {
		r := &s.recs[i]
		r.Key, r.Value, r.Timestamp = recs[i].Key, recs[i].Value, time.Time{}
		if recs[i].Time != 0 {
			r.Timestamp = time.UnixMilli(recs[i].Time)
		}
	}
	return s.ptrs[:len(recs)]
}

func (l *ourLog) Append(recs []Rec) error {
	s, _ := l.scratch.Get().(*ourScratch)
	if s == nil {
		s = new(ourScratch)
	}
	err := l.app.Append(context.Background(), s.records(recs)...)
	l.scratch.Put(s)
	return err
}

func (l *ourLog) Sync() error { return l.sync() }

func (l *ourLog) Count() (int64, error) { return l.count(), nil }

func (l *ourLog) Scan(fn func(i int64, key, value []byte) error) error {
	for r, err := range l.read.Scan(0) {
		if err != nil {
			return err
		}
		if err := fn(r.Offset, r.Key, r.Value); err != nil {
			return err
		}
	}
	return nil
}

// Get reads record i with ReadRecord into one reused Record: no allocation a read once its key
// and value buffers have grown. The first read of a batch checks its CRC; later reads of its
// records find them through the log's record position cache.
func (l *ourLog) Get(i int64) ([]byte, []byte, error) {
	if err := l.read.ReadRecord(i, &l.rec); err != nil {
		return nil, nil, err
	}
	return l.rec.Key, l.rec.Value, nil
}

func (l *ourLog) Close() error { return l.close() }

// ourTopic adapts a Store's topic.
type ourTopic struct {
	store   *commitlog.Store
	topic   *commitlog.Topic
	scratch ourScratch
}

// openOurTopic creates the topic "bench" of partitions partitions in s (Kafka's defaults,
// SyncNever, no retention: the flights are from 2001).
func openOurTopic(s *commitlog.Store, partitions int) (Topic, error) {
	t, err := s.CreateTopic("bench", commitlog.TopicConfig{Partitions: int32(partitions),
		LogConfig: commitlog.LogConfig{Sync: commitlog.SyncNever, RetentionDuration: -1}})
	if err != nil {
		return nil, fmt.Errorf("%w (and closing: %v)", err, s.Close())
	}
	return &ourTopic{store: s, topic: t}, nil
}

func (t *ourTopic) Append(recs []Rec) error {
	return t.topic.Append(context.Background(), t.scratch.records(recs)...)
}

func (t *ourTopic) Sync() error {
	for id := range t.topic.PartitionCount() {
		p, err := t.topic.Partition(id)
		if err != nil {
			return err
		}
		if err := p.Sync(); err != nil {
			return err
		}
	}
	return nil
}

func (t *ourTopic) Count() (int64, error) {
	var n int64
	for id := range t.topic.PartitionCount() {
		p, err := t.topic.Partition(id)
		if err != nil {
			return 0, err
		}
		n += p.LogEndOffset()
	}
	return n, nil
}

func (t *ourTopic) Close() error { return t.store.Close() }
