package commitlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Partition is one partition of a topic: its log, its replication role (Replica, its replication
// API) and its high watermark, the offset below which records are readable. A partition that is not
// replicated is its own leader with no followers, and its high watermark is its log end offset.
// A Partition is safe for concurrent use.
type Partition struct {
	topicName string
	id        int32
	log       *Log
	// onChange tells the partition's owner (its Topic, which wakes its waiting readers) that the
	// log end offset, the high watermark or the role changed; given at construction, so that the
	// partition holds no pointer up.
	onChange func()

	// replicated is set while the partition has followers or is one; hw is then the high
	// watermark, else the log end offset is.
	replicated atomic.Bool
	hw         atomic.Int64
	// roleEpoch is the leader epoch of the partition's last role, checkpointed with the high
	// watermark (see replicationState).
	roleEpoch atomic.Int32
	// ckptMu serialises writes of the replication checkpoint; ckptSaved is the state it holds.
	ckptMu    sync.Mutex
	ckptSaved replicationState

	// roleMu is held shared by every write of the log under a role (appends as leader, a
	// follower's copy of its leader's batches) and exclusively by role changes, so that no write
	// of the old role lands after a change.
	roleMu sync.RWMutex

	// mu guards the replication state below.
	mu       sync.Mutex
	follower bool
	// roleGiven says that the partition's epochs are a controller's: it was given a role
	// (BecomeLeader, BecomeFollower) or reopened replicated. Only a partition without one starts
	// epochs of its own (see TruncateTo).
	roleGiven  bool
	epoch      int32
	epochStart int64 // the log end offset when this leader's epoch began
	lagTimeMax time.Duration
	replicas   []*replicaState
	// changed is closed, and cleared, at every change of the log end offset, high watermark or
	// role, waking AcksAll appends and waiting fetches; nil while nobody waits.
	changed   chan struct{}
	closed    bool
	stopCheck chan struct{}   // stops the ISR check of a leader with followers
	fetcher   *ReplicaFetcher // the running fetch loop of a follower, or nil

	replica Replica // the replication API, Replica()

	queue appendQueue // AppendAcks' coalesced appends (partition_append_queue.go)
}

// newPartition wraps partition id's log. A partition whose replication state start says it was
// replicated when it last ran opens as a follower of no leader yet, readable up to its high
// watermark, and takes no appends until BecomeLeader or BecomeFollower says its role (a restarted
// Kafka broker waits for the controller likewise). Any other opens as a leader on its own. saved
// is the replication checkpoint as the partition's file holds it (see openPartition); cleaned
// checkpoints the log's cleaner point after a clean (the store's cleaner-offset-checkpoint; nil
// keeps it in memory only).
func newPartition(topic string, id int32, l *Log, onChange func(), start, saved replicationState, cleaned func(int64) error) *Partition {
	p := &Partition{topicName: topic, id: id, log: l, onChange: onChange, epoch: max(l.latestEpoch(), start.leaderEpoch, 0),
		ckptSaved: saved}
	p.replica.p = p
	if start.replicated {
		p.replicated.Store(true)
		p.follower, p.roleGiven = true, true
		p.hw.Store(min(start.highWatermark, l.LogEndOffset()))
		p.roleEpoch.Store(start.leaderEpoch)
	}
	l.owner.set(logHooks{checkpointed: p.saveCheckpoint, retentionLimit: p.retentionLimit, cleaned: cleaned})
	return p
}

// Topic returns the name of the partition's topic.
func (p *Partition) Topic() string { return p.topicName }

// ID returns the partition's number within its topic, from 0.
func (p *Partition) ID() int32 { return p.id }

// Append appends recs to this partition as one batch (several when they exceed
// max.message.bytes), whatever their keys, with AcksAll; see AppendAcks, and for the calls made
// at the same time, which may share the batch, Coalescing there.
func (p *Partition) Append(ctx context.Context, recs ...*Record) error {
	return p.AppendAcks(ctx, AcksAll, recs...)
}

// AppendAcks appends recs as Append does and returns when acks says: AcksNone once they are in
// the log, AcksLeader once the log holds them durably (its sync policy), AcksAll once the high
// watermark has passed them too. It sets their Topic, Partition, Offset and Timestamp as
// Log.Append does.
//
// ErrNotLeader on a follower; with AcksAll, ErrNotEnoughReplicas, nothing written, when fewer
// replicas than MinInsyncReplicas are in sync. An AcksAll append whose records were written
// returns ctx's error if ctx is done before the high watermark passes them, and ErrNotLeader if
// the partition stops leading first: the records stay in the log, unacknowledged, and a new
// leader may or may not have them. ErrNotEnoughReplicas also when the high watermark passed the
// records after followers left the in-sync replicas, leaving fewer than MinInsyncReplicas: the
// records are committed with fewer copies than asked (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND).
// ErrInvalidConfig for an acks value other than the three; ErrInvalidRecord, nothing written, for
// a nil record. Other errors as for Log.Append.
//
// Coalescing. Calls made while the partition writes are queued and written together by the next
// round, as Kafka's producer accumulates the records sent to one partition (RecordAccumulator):
// their records, each call's together and in order, go into batches of up to batch.size bytes
// (WithBatchSize), with one write and, for the calls that wait for durability, one fsync, the
// first to start after they arrived (a round takes up to max.message.bytes of calls; later ones
// wait for the next). A lone call is written at once; WithLinger makes a round wait
// for more (linger.ms). Each call keeps its own offsets, timestamps and errors: a record too large
// or a timestamp too far ahead fails its call alone (Kafka's producer fails the whole batch), a
// call whose ctx is done while it is queued returns ctx's error with nothing written. When the
// round's one write fails (nothing of it stays in the log), each call is written again on its
// own and gets that write's outcome: its own error, or success when the failure was the
// combined write's alone (a full disk then fails each call that still does not fit). A failed
// fsync fails every call of its round. An AcksNone call queued with calls that
// wait for durability returns with them, after the round's fsync. A Producer's idempotent and
// transactional appends are never coalesced.
func (p *Partition) AppendAcks(ctx context.Context, acks Acks, recs ...*Record) error {
	if err := acks.check(); err != nil {
		return err
	}
	if err := checkRecords(recs); err != nil {
		return err
	}
	for _, r := range recs {
		r.Topic, r.Partition = p.topicName, p.id
	}
	if len(recs) > 0 && p.queue.on() {
		return p.appendQueued(ctx, acks, recs)
	}
	var next int64
	err := p.appendAsLeader(ctx, acks, func() (writeTicket, error) {
		t, err := p.log.appendRecords(ctx, recs, acks != AcksNone)
		if err == nil && len(recs) > 0 {
			next = recs[len(recs)-1].Offset + 1
		}
		return t, err
	})
	if err != nil || next == 0 {
		return err
	}
	return p.awaitAcks(ctx, acks, next)
}

// AppendAsLeader appends a producer's RecordBatch v2 bytes, assigning offsets and stamping the
// leader epoch (see Log.AppendAsLeader), and returns when acks says (see AppendAcks), as Kafka's
// broker answers a produce request. Errors as for AppendAcks and Log.AppendAsLeader.
func (p *Partition) AppendAsLeader(ctx context.Context, acks Acks, batches []byte) (firstOffset, lastOffset int64, err error) {
	if err := acks.check(); err != nil {
		return 0, 0, err
	}
	var first, last int64
	err = p.appendAsLeader(ctx, acks, func() (writeTicket, error) {
		t, f, l, err := p.log.appendRawLeader(ctx, batches, acks != AcksNone)
		first, last = f, l
		return t, err
	})
	if err != nil {
		return 0, 0, err
	}
	return first, last, p.awaitAcks(ctx, acks, last+1)
}

// appendAsLeader checks the role (and, for AcksAll, the in-sync replicas), runs write under the
// role, waits for the write to be durable unless acks is AcksNone, and moves the high watermark.
func (p *Partition) appendAsLeader(ctx context.Context, acks Acks, write func() (writeTicket, error)) error {
	p.roleMu.RLock()
	if err := p.checkLeader(acks); err != nil {
		p.roleMu.RUnlock()
		return err
	}
	t, err := write()
	if err == nil && acks != AcksNone {
		err = p.log.awaitDurable(t)
	}
	p.roleMu.RUnlock()
	p.appended()
	return err
}

// awaitAcks waits, for AcksAll, until the high watermark reaches next.
func (p *Partition) awaitAcks(ctx context.Context, acks Acks, next int64) error {
	if acks != AcksAll {
		return nil
	}
	return p.awaitHighWatermark(ctx, next)
}

// AppendAsFollower appends a leader's RecordBatch v2 bytes with their own offsets and epochs
// (see Log.AppendAsFollower): the raw API for a program that runs its own fetch loop instead of
// Follow. A partition leading followers refuses it with ErrNotLeader (Kafka's
// NOT_LEADER_OR_FOLLOWER): its log is the one the others copy. Errors as for
// Log.AppendAsFollower.
func (rep *Replica) AppendAsFollower(ctx context.Context, batches []byte) (lastOffset int64, err error) {
	p := rep.p
	p.roleMu.RLock()
	p.mu.Lock()
	leading, epoch := !p.follower && len(p.replicas) > 0, p.epoch
	p.mu.Unlock()
	if leading {
		p.roleMu.RUnlock()
		return 0, fmt.Errorf("%w: topic %s partition %d leads epoch %d; it copies no other log", ErrNotLeader, p.topicName, p.id, epoch)
	}
	last, err := p.log.AppendAsFollower(ctx, batches)
	p.roleMu.RUnlock()
	p.appended()
	return last, err
}

// ReadBatches appends to dst the stored batches from offset on, up to maxBytes, that lie wholly
// below the high watermark; see Log.ReadBatches. Reading at or past the high watermark (up to
// the log end offset) returns dst unchanged: those records are not committed yet. Errors as for
// Log.ReadBatches.
func (p *Partition) ReadBatches(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	out, err := p.readBatches(dst, offset, maxBytes)
	if err == nil {
		p.log.stats.countFetch(out[len(dst):])
	}
	return out, err
}

// readBatches is ReadBatches, uncounted.
func (p *Partition) readBatches(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	if !p.replicated.Load() {
		return p.log.ReadBatches(dst, offset, maxBytes)
	}
	hw := p.hw.Load()
	if offset >= hw {
		if start, end := p.log.LogStartOffset(), p.log.LogEndOffset(); offset < start || offset > end {
			return dst, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, p.log.dir, start, end)
		}
		return dst, nil
	}
	n := len(dst)
	out, err := p.log.ReadBatches(dst, offset, maxBytes)
	if err != nil {
		return out, err
	}
	return out[:n+belowOffset(out[n:], hw)], nil
}

// ReadRange returns, not copied, the stored batches from offset on, up to maxBytes within one
// segment, that lie wholly below the high watermark; see Log.ReadRange. The caller must Close
// it.
func (p *Partition) ReadRange(offset int64, maxBytes int) (*BatchRange, error) {
	if !p.replicated.Load() {
		return p.countRange(p.log.ReadRange(offset, maxBytes))
	}
	return p.countRange(p.log.readRange(offset, maxBytes, p.hw.Load()))
}

// ReadRecords returns the records from offset on, below the high watermark, decoded from the
// batches ReadBatches returns; their Topic and Partition are set. Cost as for Log.ReadRecords;
// errors as for ReadBatches.
func (p *Partition) ReadRecords(offset int64, maxBytes int) ([]*Record, error) {
	hw := int64(-1)
	if p.replicated.Load() {
		hw = p.hw.Load()
	}
	return p.log.readRecords(offset, maxBytes, hw, p.ReadBatches, p.topicName, p.id)
}

// ReadRecord reads the record at offset (the first at or after it) into r, below the high
// watermark: records past it are not committed yet. It sets r.Topic and r.Partition to this
// partition's; the rest as for Log.ReadRecord, whose storage reuse, cost and errors it shares,
// with ErrNoRecordYet from the high watermark up to the log end offset, as at the log end offset.
func (p *Partition) ReadRecord(offset int64, r *Record) error {
	hw := int64(-1)
	if p.replicated.Load() {
		hw = p.hw.Load()
	}
	if err := p.log.readRecord(offset, hw, func(h recordbatch.Header, v recordbatch.RecordView) { setRecord(r, &h, &v) }); err != nil {
		return err
	}
	r.Topic, r.Partition = p.topicName, p.id
	return nil
}

// Scan returns an iterator over the records from offset from up to the high watermark seen when
// the iteration starts, with Log.Scan's zero-copy rules: each record (Topic and Partition set)
// and its bytes are valid only until the loop body returns. Errors as for Log.Scan.
func (p *Partition) Scan(from int64) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		p.log.scan(from, p.HighWatermark(), func(r *Record, err error) bool {
			if r != nil {
				r.Topic, r.Partition = p.topicName, p.id
			}
			return yield(r, err)
		})
	}
}

// OffsetForTime returns the offset of the first record whose timestamp is >= t; see
// Log.OffsetForTime. When there is none below the high watermark (records above it are not yet
// readable, as Kafka's ListOffsets looks only below it), it returns -1 and an error wrapping
// ErrNoOffsetForTime.
func (p *Partition) OffsetForTime(t time.Time) (int64, error) {
	off, err := p.log.OffsetForTime(t)
	if hw := p.HighWatermark(); errors.Is(err, ErrNoOffsetForTime) || err == nil && off >= hw {
		return -1, fmt.Errorf("%w: topic %s partition %d has no record with a timestamp at or after %d ms below its high watermark %d",
			ErrNoOffsetForTime, p.topicName, p.id, t.UnixMilli(), hw)
	}
	return off, err
}

// LogStartOffset returns the first offset the partition holds; see Log.LogStartOffset.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LogEndOffset returns the offset the next record will get; see Log.LogEndOffset.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// HighWatermark returns the offset below which records are readable: for a partition with
// followers, the smallest log end offset among the in-sync replicas, which only grows while it
// leads; for a follower, its leader's high watermark as last fetched, within its own log; for a
// partition on its own, the log end offset.
func (p *Partition) HighWatermark() int64 {
	if !p.replicated.Load() {
		return p.log.LogEndOffset()
	}
	return p.hw.Load()
}

// Size returns the bytes of batches in the partition's segments.
func (p *Partition) Size() int64 { return p.log.Size() }

// SegmentCount returns the number of segments.
func (p *Partition) SegmentCount() int { return p.log.SegmentCount() }

// TruncateTo removes the records at or after offset; see Log.TruncateTo. The high watermark
// drops with the log end offset when it was above it. A partition leading followers refuses it
// with ErrNotLeader: its log is the one the followers copy, and a Kafka leader never truncates
// (a follower's fetch loop truncates followers as needed).
//
// A partition that was never given a role (no BecomeLeader or BecomeFollower, not reopened
// replicated) that loses records starts a new leader epoch, one above its highest, at the new
// log end offset, so that readers whose positions lie past the cut find the divergence even
// after the log is refilled (ErrLogTruncated, or their reset policy; see Reader). A partition
// given a role keeps the epochs its controller assigns: a new epoch of its own could collide with
// one the controller gives another replica. There a reader past the cut finds the divergence
// only once the log is refilled in a newer epoch (or while it ends below the position).
func (p *Partition) TruncateTo(offset int64) error {
	p.roleMu.RLock()
	p.mu.Lock()
	leading, local, epoch := !p.follower && len(p.replicas) > 0, !p.follower && !p.roleGiven, p.epoch
	p.mu.Unlock()
	if leading {
		p.roleMu.RUnlock()
		return fmt.Errorf("%w: topic %s partition %d leads epoch %d with followers; a leader does not truncate", ErrNotLeader, p.topicName, p.id, epoch)
	}
	err := p.log.truncateTo(offset, local)
	if local {
		p.mu.Lock()
		p.epoch = max(p.epoch, p.log.latestEpoch())
		p.mu.Unlock()
	}
	p.roleMu.RUnlock()
	p.logCut()
	return err
}

// logCut keeps the high watermark within a log that was truncated or started over, and wakes
// waiters and readers.
func (p *Partition) logCut() {
	p.mu.Lock()
	p.clampHighWatermarkLocked()
	p.signalLocked()
	p.mu.Unlock()
	p.onChange()
}

// Sync flushes the partition's appends to stable storage; see Log.Sync.
func (p *Partition) Sync() error { return p.log.Sync() }

// ApplyRetention deletes the partition's segments that retention says must go at the store's
// clock (WithClock, else time.Now); see Log.ApplyRetentionAt. It returns the number deleted.
func (p *Partition) ApplyRetention() (int, error) { return p.log.ApplyRetention() }

// ApplyRetentionAt deletes the partition's segments that retention says must go at now; see
// Log.ApplyRetentionAt. It returns the number of segments deleted.
func (p *Partition) ApplyRetentionAt(now time.Time) (int, error) { return p.log.ApplyRetentionAt(now) }

// appended tells waiters and readers that the log end offset moved, and moves the high watermark
// of a leader whose in-sync replicas allow it.
func (p *Partition) appended() {
	p.mu.Lock()
	p.advanceHighWatermarkLocked() // nothing to move unless the partition leads followers
	p.signalLocked()
	p.mu.Unlock()
	p.onChange()
}

// waitChan returns a channel closed at the next change of the log end offset, high watermark or
// role.
func (p *Partition) waitChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// signalLocked wakes the waiters of waitChan. Callers hold mu.
func (p *Partition) signalLocked() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// clampHighWatermarkLocked keeps the high watermark within the log after a truncation. Callers
// hold mu.
func (p *Partition) clampHighWatermarkLocked() {
	if leo := p.log.LogEndOffset(); p.replicated.Load() && p.hw.Load() > leo {
		p.hw.Store(leo)
	}
}

// close wakes every waiter for good; called when the topic closes.
func (p *Partition) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.stopISRCheckLocked()
	p.signalLocked()
}

// belowOffset returns how many bytes of b, back-to-back whole batches the log has checked
// (ReadBatches output), hold batches wholly below offset: the prefix a reader may see under a
// high watermark of offset.
func belowOffset(b []byte, offset int64) int {
	n := 0
	for len(b)-n >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(b[n:], 0)
		if err != nil || h.Size() > len(b)-n || h.LastOffset() >= offset {
			break
		}
		n += h.Size()
	}
	return n
}

// CompactionState returns the partition's compaction state (see Log.CompactionState).
func (p *Partition) CompactionState() CompactionState { return p.log.CompactionState() }

// Compact cleans the partition's log now (see Log.Compact).
func (p *Partition) Compact(ctx context.Context) (CompactionResult, error) { return p.log.Compact(ctx) }
