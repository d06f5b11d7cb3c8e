package commitlog

import (
	"context"
	"fmt"
)

// DeleteRecords deletes the partition's records below offset, as Kafka's DeleteRecords does
// (Partition.deleteRecordsOnLeader, UnifiedLog.maybeIncrementLogStartOffset): the log start
// offset rises to offset (never falls: an offset at or below it changes nothing), and records
// below it can no longer be read (ReadBatches, ReadRecords, ReadRecord and Scan get
// ErrOffsetOutOfRange; LogStartOffset reports it). A Reader positioned below it gets
// ErrOffsetOutOfRange, or its ResetPolicy, at its next fetch; the records it fetched before the
// call (up to ReaderConfig.MaxBytes a partition) it still returns first, as a Kafka consumer
// returns the records of a fetch it already made. The segments wholly below it are
// deleted at once, as retention deletes them (their files after file.delete.delay.ms); the
// segment holding offset stays, its records below offset unreadable. The new log start offset
// is checkpointed in the partition's state file (Kafka's log-start-offset-checkpoint) before
// anything is deleted, and the records up to it are flushed first, so that it survives a
// reopen, after a crash too. offset -1 (Kafka's DeleteRecordsRequest.HIGH_WATERMARK) means the
// high watermark: every committed record goes. It returns the log start offset after the call,
// Kafka's low watermark for a partition without followers; with followers, Kafka answers once
// every follower has moved its own log start offset, where this returns once the leader has
// (its followers move theirs at their next fetch).
//
// Returns ErrOffsetOutOfRange for an offset above the high watermark or below -1, changing
// nothing (Kafka's OFFSET_OUT_OF_RANGE); ErrPolicyViolation when the topic's cleanup.policy is
// compact alone (Kafka's POLICY_VIOLATION); ErrNotLeader on a follower (Kafka's
// NOT_LEADER_OR_FOLLOWER); ctx's error when ctx is done before it starts; ErrClosed after the
// store closed; an error wrapping ErrSync when the log cannot be made durable.
func (p *Partition) DeleteRecords(ctx context.Context, offset int64) (lowWatermark int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p.log.mu.RLock()
	closed := p.log.closed
	p.log.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	// Held shared, as by appends: no role change (a follower's truncation) runs meanwhile.
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	follower, epoch := p.follower, p.epoch
	p.mu.Unlock()
	if follower {
		return 0, fmt.Errorf("%w: topic %s partition %d follows in epoch %d", ErrNotLeader, p.topicName, p.id, epoch)
	}
	if policy := p.log.conf().CleanupPolicy; !policy.Delete() {
		return 0, fmt.Errorf("%w: records of topic %s partition %d cannot be deleted under cleanup.policy %s", ErrPolicyViolation, p.topicName, p.id, policy)
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: cannot delete records of topic %s partition %d below offset %d: the high watermark is %d",
			ErrOffsetOutOfRange, p.topicName, p.id, offset, hw)
	}
	if offset > p.log.LogStartOffset() {
		// The records below the new start must not be lost to a crash, or the recovered log
		// would end below its checkpointed start.
		if err := p.log.Sync(); err != nil {
			return 0, err
		}
		if err := p.log.advanceLogStartOffset(offset); err != nil {
			return 0, err
		}
	}
	return p.log.LogStartOffset(), nil
}
