package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog"
)

// This library's file store used as an application uses it: a topic of a Store, not a Log opened
// on its own. Three systems, one per user path:
//
//   - commitlog-Scan reads a topic of one partition with Partition.Scan (the reader workload's
//     reference);
//   - commitlog-Reader reads the same with a Reader's Records iterator from the earliest offset;
//   - commitlog-Topic appends with Topic.Append, one record per call, to a topic of four
//     partitions under the store's default durability (the producers workload), and is the
//     store of the partition scale workload (scale.go).

// benchTopic is the topic every store adapter uses.
const benchTopic = "bench"

// readerTimeout bounds one Reader drain: Records blocks at the end of the log, so a reader that
// missed records would otherwise wait for ever.
const readerTimeout = 10 * time.Minute

// producerPartitions is the producers workload's partition count.
const producerPartitions = 4

func commitlogScanSystem() *System {
	return &System{
		Name:       "commitlog-Scan",
		Kind:       KindOurs,
		Version:    "this repository (Store, file store)",
		Config:     "Open, topic of 1 partition, SyncNever; reads: Partition.Scan, the zero-copy record iterator",
		Named:      []string{"reader"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			return openStoreLog(dir, o, 1)
		},
	}
}

func commitlogReaderSystem() *System {
	return storeReaderSystem("commitlog-Reader", "Reader.Records, each record the caller's", false)
}

func commitlogReaderScanSystem() *System {
	return storeReaderSystem("commitlog-Reader.Scan", "Reader.Scan, the Reader's zero-copy mode (a record valid for one loop turn)", true)
}

// storeReaderSystem is a store of one partition read by a Reader from its earliest offset,
// through reads (Records, or Scan with zeroCopy).
func storeReaderSystem(name, reads string, zeroCopy bool) *System {
	return &System{
		Name:       name,
		Kind:       KindOurs,
		Version:    "this repository (Store, file store)",
		Config:     "Open, topic of 1 partition, SyncNever; reads: Topic.NewReader (Start: Earliest), " + reads,
		Named:      []string{"reader"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			l, err := openStoreLog(dir, o, 1)
			if err != nil {
				return nil, err
			}
			return &storeReaderLog{storeLog: l, zeroCopy: zeroCopy}, nil
		},
	}
}

func commitlogTopicSystem() *System {
	return &System{
		Name:    "commitlog-Topic",
		Kind:    KindOurs,
		Version: "this repository (Store, file store)",
		Config: fmt.Sprintf("Open, topic of %d partitions, the store's default durability (SyncAlways: an append returns once fsynced, appends waiting together share one fsync), "+
			"Topic.Append of one record per call, keys spread by the default partitioner; scale: WithSync(SyncNever), WithMaxOpenFiles(-scale-max-open-files)", producerPartitions),
		Named:      []string{"producers", "scale"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			return openStoreLog(dir, o, producerPartitions)
		},
	}
}

// storeLog is a Store and its topic "bench": appends go through Topic.Append, reads by offset
// and Scan through partition 0 (the read workloads' topics have one partition).
type storeLog struct {
	ourLog
	store *commitlog.Store
	topic *commitlog.Topic
}

// openStoreLog opens the store in dir with its topic "bench" of partitions partitions, creating
// it on first use: SyncNever unless o.Durable, which keeps the store's default (SyncAlways).
func openStoreLog(dir string, o Options, partitions int) (*storeLog, error) {
	var opts []commitlog.Option
	if !o.Durable {
		opts = append(opts, commitlog.WithSync(commitlog.SyncNever))
	}
	s, err := commitlog.Open(dir, opts...)
	if err != nil {
		return nil, err
	}
	t, err := s.Topic(benchTopic)
	if errors.Is(err, commitlog.ErrUnknownTopic) {
		t, err = s.CreateTopic(benchTopic, commitlog.TopicConfig{Partitions: int32(partitions),
			LogConfig: commitlog.LogConfig{RetentionDuration: -1}})
	}
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	p0, err := t.Partition(0)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	l := &storeLog{store: s, topic: t}
	l.ourLog = ourLog{app: t, read: p0, sync: l.syncAll, count: l.countAll, close: s.Close}
	return l, nil
}

// onePartition returns an error unless the topic has one partition: reads by number and Scan
// read partition 0 and would miss the others' records.
func (l *storeLog) onePartition() error {
	if n := l.topic.PartitionCount(); n != 1 {
		return fmt.Errorf("the store adapters read topics of 1 partition, not %d", n)
	}
	return nil
}

// Scan reads the one partition with Partition.Scan.
func (l *storeLog) Scan(fn func(i int64, key, value []byte) error) error {
	if err := l.onePartition(); err != nil {
		return err
	}
	return l.ourLog.Scan(fn)
}

// Get reads record i of the one partition with Partition.ReadRecord.
func (l *storeLog) Get(i int64) ([]byte, []byte, error) {
	if err := l.onePartition(); err != nil {
		return nil, nil, err
	}
	return l.ourLog.Get(i)
}

// syncAll syncs every partition.
func (l *storeLog) syncAll() error {
	var errs []error
	for id := range l.topic.PartitionCount() {
		p, err := l.topic.Partition(id)
		if err == nil {
			err = p.Sync()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// countAll is the records of every partition (log end offsets: nothing is deleted).
func (l *storeLog) countAll() int64 {
	var n int64
	for id := range l.topic.PartitionCount() {
		if p, err := l.topic.Partition(id); err == nil {
			n += p.LogEndOffset()
		}
	}
	return n
}

// storeReaderLog reads with a Reader: Records, or with zeroCopy Scan.
type storeReaderLog struct {
	*storeLog
	zeroCopy bool
}

// Scan drains the one partition with a new anonymous Reader from the earliest offset, up to the
// log end offset at the call.
func (l *storeReaderLog) Scan(fn func(i int64, key, value []byte) error) error {
	if err := l.onePartition(); err != nil {
		return err
	}
	end := l.countAll()
	if end == 0 {
		return nil
	}
	rd, err := l.topic.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readerTimeout)
	defer cancel()
	read := int64(0)
	records := rd.Records
	if l.zeroCopy {
		records = rd.Scan
	}
	for rec, err := range records(ctx) {
		if err != nil {
			return errors.Join(fmt.Errorf("after %d of %d records: %w", read, end, err), rd.Close())
		}
		read++
		if err := fn(rec.Offset, rec.Key, rec.Value); err != nil {
			return errors.Join(err, rd.Close())
		}
		if rec.Offset >= end-1 {
			break
		}
	}
	return rd.Close()
}
