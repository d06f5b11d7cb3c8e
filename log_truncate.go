package commitlog

import (
	"fmt"
	"math"
	"slices"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// TruncateTo removes every record at or after offset, as a follower does before it fetches from a
// new leader (Kafka's truncateTo). A batch is never split: when offset falls inside a batch the
// whole batch goes, and the log end offset becomes that batch's base offset. Later segments are
// deleted and the segment holding offset becomes the active one, its indexes rebuilt.
//
// Offsets at or past the log end offset change nothing. Appends still waiting for durability
// (SyncAlways) whose records it removes return ErrTruncated. It returns ErrOffsetOutOfRange when
// offset < LogStartOffset, ErrClosed after Close, and an error wrapping ErrSync when the
// truncation could not be made durable. Reads racing it never take its cut for damage: a read
// whose segment it cuts finds its offset again in the log as it then is, and returns the records
// still there, none at the new log end offset (ErrNoRecordYet from ReadRecord), or
// ErrOffsetOutOfRange past it; never another file's bytes, nor ErrCorrupt. It waits for the
// ReadRecord calls using the segment's read mapping when it starts (the file must not shrink
// under a mapping in use).
func (l *Log) TruncateTo(offset int64) error { return l.truncateTo(offset, false) }

// truncateTo is TruncateTo; with newEpoch, the truncation also starts a new local leader epoch at
// the new log end offset (see leaderEpochFile.startAbove), as Partition.TruncateTo asks for a
// partition that no leader's epochs describe.
func (l *Log) truncateTo(offset int64, newEpoch bool) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	// At or past the log end offset readers see, nothing changes: appends still staged (not
	// returned, not visible) stay, and are written below.
	if offset >= l.LogEndOffset() {
		return nil
	}
	_ = l.drainStage() // a failed stage write is its appends' error
	// No fsync of the group commit may run on a segment being removed.
	l.syncMu.Lock()
	defer l.syncMu.Unlock()

	l.mu.RLock()
	start, end := l.logStartOffset, l.active().NextOffset()
	i := l.segments.find(offset)
	l.mu.RUnlock()
	if offset >= end {
		return nil
	}
	if offset < start {
		return fmt.Errorf("%w: truncate to %d below the log start offset %d", ErrOffsetOutOfRange, offset, start)
	}
	keep := l.segments[i]
	// A sealed keep's files may be closed for idleness: held, they stay open until truncation
	// makes it the active segment, which stays open.
	keep.Acquire()
	defer l.release(keep)
	if err := l.openForRead(keep); err != nil {
		return err
	}
	cut, err := keep.PositionOf(offset)
	if err != nil {
		return err
	}
	// The cut file must not be mapped by a read: mapped pages past its end are a SIGBUS.
	keep.HoldMappings()
	defer keep.ReleaseMappings()

	l.mu.Lock()
	drop := slices.Clone(l.segments[i+1:])
	l.segments = slices.Clone(l.segments[:i+1])
	l.mu.Unlock()
	// Reads in progress on the dropped segments finish on their files; see retire.
	if err := l.retire(drop); err != nil {
		return l.fail(fmt.Errorf("remove segments after %s: %w", keep.Path(segment.LogSuffix), err))
	}

	// Readers look up the active segment's indexes under mu, so the rebuild happens under it.
	l.mu.Lock()
	err = keep.Truncate(cut)
	if err == nil {
		l.recoveryPoint = min(l.recoveryPoint, keep.NextOffset())
		// A flush running now must not advance the recovery point past bytes this cut
		// replaces; the sealed segments below keep still wait for theirs (see flushSealed).
		l.truncGen.Add(1)
		l.noteTruncation(keep.NextOffset())
		l.flushTarget = min(l.flushTarget, keep.BaseOffset())
		l.durableSeq = l.appendSeq
	}
	st := logState{logStartOffset: l.logStartOffset, recoveryPoint: l.recoveryPoint}
	l.mu.Unlock()
	if err != nil {
		return l.fail(fmt.Errorf("truncate %s to %d: %w", keep.Path(segment.LogSuffix), cut, err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
	}
	if err := l.state.write(st); err != nil {
		l.logger.Warn("recovery point checkpoint failed; the next recovery scans more", "err", err)
	}
	if err := l.trimEpochsAfterCut(start, keep.NextOffset(), newEpoch); err != nil {
		return l.fail(err)
	}
	l.owner.cutLegacy(keep.NextOffset())
	l.cutCleanerPoint(keep.NextOffset())
	// The producer state forgets the batches cut: it is read again from the newest snapshot at or
	// below the new end, and the batches after it replayed (Kafka's truncateTo reloads it so).
	if err := l.loadProducerState(false, nil); err != nil {
		return l.fail(fmt.Errorf("reload producer state after truncation to %d: %w", keep.NextOffset(), err))
	}
	l.logger.Info("truncated", "offset", offset, "log_end_offset", keep.NextOffset())
	return nil
}

// truncateFullyAndStartAt deletes every segment and starts the log over, empty, at offset: its
// log start offset and log end offset become offset. A follower does this (Kafka's
// truncateFullyAndStartAt) when its leader's log starts past everything it holds, since
// retention removed the offsets it would fetch next. ErrClosed after Close.
func (l *Log) truncateFullyAndStartAt(offset int64) error {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if offset < l.LogEndOffset() {
		return fmt.Errorf("%w: start over at %d below the log end offset %d", ErrOffsetOutOfRange, offset, l.LogEndOffset())
	}
	// The new start goes to disk first: a crash from here on reopens a log that starts at offset
	// and finishes deleting the segments below it.
	l.mu.RLock()
	st := logState{logStartOffset: offset, recoveryPoint: offset}
	l.mu.RUnlock()
	if err := l.state.write(st); err != nil {
		return l.fail(fmt.Errorf("checkpoint log start offset %d: %w", offset, err))
	}
	seg, err := segment.Create(l.fs, l.dir, offset, l.segConf(), l.caches, false)
	if err != nil {
		return l.fail(fmt.Errorf("create segment %d: %w", offset, err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.Remove()
		return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
	}
	l.mu.Lock()
	drop := l.segments
	l.segments = []*segment.Segment{seg}
	l.logStartOffset, l.recoveryPoint, l.flushTarget = offset, offset, offset
	l.truncGen.Add(1)               // see flushSealed
	l.noteTruncation(math.MinInt64) // nothing below offset stays
	l.durableSeq = l.appendSeq
	l.mu.Unlock()
	if err := l.retire(drop); err != nil {
		return l.fail(fmt.Errorf("remove segments below %d: %w", offset, err))
	}
	if err := l.trimEpochs(offset, offset); err != nil {
		return l.fail(err)
	}
	l.owner.cutLegacy(offset)
	l.producers.m.Reset(offset)
	if _, err := l.producers.removeSnapshots(nil, func(int64) bool { return true }); err != nil {
		l.logger.Warn("producer snapshots not removed", "err", err)
	}
	l.logger.Info("log started over", "log_start_offset", offset)
	return nil
}
