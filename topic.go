package commitlog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Topic is a named set of partitions, each its own log. Records are spread over the partitions
// by key (see Partitioner), so that one key's records stay in one partition, in order. A Topic is
// safe for concurrent use; it is valid until its store closes or the topic is deleted.
type Topic struct {
	positions readerStore      // the store's committed reader positions, for the topic's readers
	now       func() time.Time // the store's clock (WithClock), for ApplyRetention
	name      string
	id        TopicID // set before the topic is handed out, never changed (topic_id.go)
	// state is the topic's configuration and partitions, replaced whole (under the store's lock)
	// by AlterTopicConfig and CreatePartitions and read without a lock: a caller takes it once
	// and sees one configuration and one partition list, which only grows.
	state atomic.Pointer[topicState]

	// workers are the store's, which open and close the partitions' logs (log_workers.go).
	workers logWorkers

	partitioner atomic.Pointer[Partitioner]
	routes      sync.Pool // *routing, AppendAcks' scratch

	mu sync.Mutex
	// appended is closed at the next append to any partition (and at close); nil while nobody
	// waits, so that appends without waiting readers allocate nothing.
	appended chan struct{}
	closed   bool
	// shut mirrors closed for isClosed, which a reader asks at every record: read without mu.
	shut atomic.Bool
}

// topicState is a topic's configuration and partitions; never changed once published.
type topicState struct {
	cfg        TopicConfig // defaults filled in, Sync resolved against the store's
	stored     TopicConfig // as given (zero fields for the defaults), as the store keeps it
	partitions []*Partition
}

// openTopic opens (creating when missing) every partition of a topic; creating says that CreateTopic
// made their folders just now and syncs them itself afterwards (writeNewPartitionFiles).
func openTopic(s *Store, name string, cfg TopicConfig, creating bool) (*Topic, error) {
	t := &Topic{positions: s, now: s.o.now, name: name, workers: s.workers}
	p := KeyHashPartitioner()
	t.partitioner.Store(&p)
	parts, err := t.openPartitions(s, 0, cfg.Partitions, cfg.LogConfig, creating)
	if err != nil {
		return nil, err
	}
	st := &topicState{cfg: cfg, stored: cfg, partitions: parts}
	st.cfg.LogConfig, _, _ = st.cfg.LogConfig.resolve(s.o.sync) // each openLog above checked it
	t.state.Store(st)
	return t, nil
}

// openPartitions opens (creating when missing) partitions from to to-1 of the topic with cfg; on
// failure it closes those it opened. The topic publishes them. creating says that the partitions
// are new, their folders synced by the caller once it has written their files
// (writeNewPartitionFiles).
func (t *Topic) openPartitions(s *Store, from, to int32, cfg LogConfig, creating bool) ([]*Partition, error) {
	parts := make([]*Partition, to-from)
	o := s.o
	o.newFolderSyncedLater = creating
	errs := s.workers.each(int(to-from), func(i int) error {
		id := from + int32(i)
		p, err := openPartition(t.name, id, filepath.Join(s.dir, partitionDirName(t.name, id)), cfg, o, t.broadcast)
		if err != nil {
			return fmt.Errorf("commitlog: topic %s partition %d: %w", t.name, id, err)
		}
		parts[i] = p
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			if p != nil {
				p.close()
				p.log.Close()
			}
		}
		return nil, err
	}
	// Logs opened at once keep each other's files open while they load (their writer locks are
	// held): the bound is enforced again now that they are idle.
	s.o.caches.Files.Trim()
	return parts, nil
}

// parts returns the topic's partitions now, by id; the list only grows (CreatePartitions).
func (t *Topic) parts() []*Partition { return t.state.Load().partitions }

// Name returns the topic's name.
func (t *Topic) Name() string { return t.name }

// Config returns the topic's configuration, defaults filled in.
func (t *Topic) Config() TopicConfig { return t.state.Load().cfg }

// StoredConfig returns the topic's configuration as given to CreateTopic (or AlterTopicConfig),
// as the store keeps it: a zero field takes its default, and Sync SyncDefault the store's
// WithSync. It is the base for a change of one config (SetKafkaConfig, ResetKafkaConfig, then
// AlterTopicConfig), and KafkaConfigOverrides of it tells the configs the topic sets from the
// defaults. A topic adopted from folders without a configuration has only its partition count.
func (t *Topic) StoredConfig() TopicConfig {
	c := t.state.Load().stored
	c.maxBatchFloor = 0 // the store's own (AlterTopicConfig), not the caller's
	return c
}

// PartitionCount returns the number of partitions now: CreatePartitions raises it.
func (t *Topic) PartitionCount() int32 { return int32(len(t.parts())) }

// Partition returns partition id, or ErrUnknownTopic when the topic has no such partition.
func (t *Topic) Partition(id int32) (*Partition, error) {
	parts := t.parts()
	if id < 0 || int(id) >= len(parts) {
		return nil, fmt.Errorf("%w: topic %s has no partition %d (it has %d)", ErrUnknownTopic, t.name, id, len(parts))
	}
	return parts[id], nil
}

// SetPartitioner replaces the partitioner Append uses (KeyHashPartitioner by default). The
// choice is not stored: set it again after the store reopens.
func (t *Topic) SetPartitioner(p Partitioner) { t.partitioner.Store(&p) }

// Append appends records to the topic: each record's partition is chosen by the partitioner,
// records are grouped by partition into one batch per partition (in the order given), and each
// partition's batch is appended as Partition.Append does, the partitions in parallel (calls from
// several goroutines to one partition are coalesced into shared batches, see Partition.AppendAcks). On
// success every record's Topic, Partition and Offset are set, and its Timestamp when zero (or
// always, under LogAppendTime).
//
// A nil record is ErrInvalidRecord, and nothing of the call is written. Records larger than
// max.message.bytes give ErrRecordTooLarge, and nothing of the call is written to that partition; other partitions of the same call may have been written (the
// returned error joins each failed partition's). ErrUnknownTopic when a manual partitioner
// names a partition the topic lacks (nothing is written then).
func (t *Topic) Append(ctx context.Context, recs ...*Record) error {
	return t.AppendAcks(ctx, AcksAll, recs...)
}

// AppendAcks appends records as Append does and returns, for each partition's batch, when acks
// says (see Partition.AppendAcks). ErrInvalidConfig, nothing written, for an acks value other
// than AcksNone, AcksLeader and AcksAll.
func (t *Topic) AppendAcks(ctx context.Context, acks Acks, recs ...*Record) error {
	if err := acks.check(); err != nil {
		return err
	}
	if err := t.checkRecords(recs); err != nil {
		return err
	}
	if len(recs) == 0 {
		return ctx.Err()
	}
	part := *t.partitioner.Load()
	parts := t.parts() // one list for the call: a CreatePartitions meanwhile spreads later calls
	n := int32(len(parts))
	if n == 1 && hashesKeys(part) {
		// The key-hashing partitioners can only answer 0: skip them. Any other partitioner
		// (ManualPartitioner, the caller's own) is asked, so that an out-of-range answer is
		// refused with one partition as with several.
		return parts[0].AppendAcks(ctx, acks, recs...)
	}
	rt := t.getRouting(int(n), len(recs))
	defer t.putRouting(rt)
	for i, r := range recs {
		p := part.Partition(r, n)
		if p < 0 || p >= n {
			return fmt.Errorf("%w: partitioner chose partition %d of topic %s, which has %d", ErrUnknownTopic, p, t.name, n)
		}
		rt.parts[i] = p
		rt.ends[p]++
	}
	// A counting sort: each partition's records, in call order, as one window of grouped. The
	// partitions set each record's Topic and Partition, only now that every record has a valid
	// partition: a refused call leaves them as they were (ManualPartitioner reads Partition).
	used, sole := 0, int32(0)
	for p, c := range rt.ends {
		if c > 0 {
			used, sole = used+1, int32(p)
		}
		if p > 0 {
			rt.ends[p] += rt.ends[p-1]
		}
	}
	if used == 1 {
		// One partition (a single record, or one key): no goroutine needed.
		return parts[sole].AppendAcks(ctx, acks, recs...)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		p := rt.parts[i]
		rt.ends[p]--
		rt.grouped[rt.ends[p]] = recs[i]
	}
	// ends[p] is now where partition p's window starts; the next partition's start ends it.
	var wg sync.WaitGroup
	for p := range rt.ends {
		end := len(recs)
		if p+1 < len(rt.ends) {
			end = rt.ends[p+1]
		}
		g := rt.grouped[rt.ends[p]:end]
		if len(g) == 0 {
			continue
		}
		wg.Go(func() { rt.errs[p] = parts[p].AppendAcks(ctx, acks, g...) })
	}
	wg.Wait()
	return errors.Join(rt.errs...)
}

// checkRecords refuses, before any is routed, a call's nil record (ErrInvalidRecord) and, on a
// compacted topic, its keyless one (ErrKeylessRecord): a refused call writes nothing to any
// partition.
func (t *Topic) checkRecords(recs []*Record) error {
	if err := checkRecords(recs); err != nil {
		return err
	}
	if t.Config().CleanupPolicy.Compact() {
		return checkKeys(recs)
	}
	return nil
}

// routing is the scratch of one AppendAcks call over several partitions, kept in the topic's pool
// so that routing a call allocates nothing once warm: each record's partition, the counts and
// then the window bounds per partition, the records grouped by partition, the partitions' errors.
type routing struct {
	parts   []int32
	ends    []int
	grouped []*Record
	errs    []error
}

// getRouting returns routing scratch for a call of recs records over n partitions, counts and
// errors zeroed.
func (t *Topic) getRouting(n, recs int) *routing {
	rt, ok := t.routes.Get().(*routing)
	if !ok {
		rt = &routing{}
	}
	rt.parts = slices.Grow(rt.parts[:0], recs)[:recs]
	rt.grouped = slices.Grow(rt.grouped[:0], recs)[:recs]
	rt.ends = slices.Grow(rt.ends[:0], n)[:n]
	clear(rt.ends)
	rt.errs = slices.Grow(rt.errs[:0], n)[:n]
	clear(rt.errs)
	return rt
}

// putRouting returns rt to the pool, dropping its references to the caller's records.
func (t *Topic) putRouting(rt *routing) {
	clear(rt.grouped)
	t.routes.Put(rt)
}

// hashesKeys reports whether p is one of the package's key-hashing partitioners, whose answer
// with one partition is always 0.
func hashesKeys(p Partitioner) bool {
	switch p.(type) {
	case *keyHash, *murmur2Partitioner:
		return true
	}
	return false
}

// appendedChan returns a channel closed at the next append to any partition, or at close.
func (t *Topic) appendedChan() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c := make(chan struct{})
		close(c)
		return c
	}
	if t.appended == nil {
		t.appended = make(chan struct{})
	}
	return t.appended
}

// broadcast wakes readers waiting for appends.
func (t *Topic) broadcast() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.appended != nil {
		close(t.appended)
		t.appended = nil
	}
}

// isClosed reports whether the topic was closed or deleted.
func (t *Topic) isClosed() bool { return t.shut.Load() }

// close closes every partition's log and wakes waiting readers.
func (t *Topic) close() error { return t.closeLogs(true) }

// closeLogs is close; without syncEach the logs close without their fsyncs (Log.closeUnsynced),
// for Store.Close, which syncs the file system once after every topic closed.
func (t *Topic) closeLogs(syncEach bool) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.shut.Store(true)
	if t.appended != nil {
		close(t.appended)
		t.appended = nil
	}
	t.mu.Unlock()
	parts := t.parts()
	return errors.Join(t.workers.each(len(parts), func(i int) error {
		parts[i].close()
		if !syncEach {
			return parts[i].log.closeUnsynced()
		}
		return parts[i].log.Close()
	})...)
}

// ApplyRetention is ApplyRetentionAt at the time of the store's clock (WithClock, else time.Now).
func (t *Topic) ApplyRetention() (int, error) { return t.ApplyRetentionAt(t.now()) }

// ApplyRetentionAt applies retention at now to every partition (see Log.ApplyRetentionAt) and
// returns the number of segments deleted; errors of the partitions are joined.
func (t *Topic) ApplyRetentionAt(now time.Time) (int, error) {
	var n int
	var errs []error
	for _, p := range t.parts() {
		d, err := p.ApplyRetentionAt(now)
		n += d
		if err != nil {
			errs = append(errs, fmt.Errorf("topic %s partition %d: %w", t.name, p.id, err))
		}
	}
	return n, errors.Join(errs...)
}

// checkRecords returns ErrInvalidRecord, naming its place in the call, for the first nil record
// of recs: an append takes records, and a nil one would be dereferenced by the partitioner or
// the encoder.
func checkRecords(recs []*Record) error {
	for i, r := range recs {
		if r == nil {
			return fmt.Errorf("%w: record %d of %d is nil", ErrInvalidRecord, i, len(recs))
		}
	}
	return nil
}

// Compact cleans every partition of a compacted topic now (see Log.Compact), one after the
// other, and returns the sums. A topic whose cleanup.policy does not compact is
// ErrInvalidConfig.
func (t *Topic) Compact(ctx context.Context) (CompactionResult, error) {
	var total CompactionResult
	for _, p := range t.parts() {
		r, err := p.Compact(ctx)
		total.add(r)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
