package commitlog

import (
	"fmt"
	"slices"
	"time"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// Kafka's defaults for the retention configs.
const (
	DefaultRetentionDuration      = 7 * 24 * time.Hour // retention.ms
	DefaultFileDeleteDelay        = time.Minute        // file.delete.delay.ms
	DefaultRetentionCheckInterval = 5 * time.Minute    // log.retention.check.interval.ms
	// DefaultTimestampAfterMax is how far ahead of the append time a record's timestamp may be
	// (message.timestamp.after.max.ms). Kafka's default is unlimited; ours is one hour, so that one
	// producer with a wrong clock cannot pin every segment against time retention.
	DefaultTimestampAfterMax = time.Hour
)

// retentionSegment is what the retention policies look at in a segment.
type retentionSegment struct {
	size         int64 // bytes
	maxTimestamp int64 // ms; -1 when the segment holds no timestamp
}

// deletableByTime returns how many of the oldest segments are past retention by time: Kafka's
// rule, a segment goes when now minus its largest record timestamp exceeds retention, oldest
// first, stopping at the first that must stay. retention < 0 keeps everything.
func deletableByTime(segs []retentionSegment, now int64, retention time.Duration) int {
	if retention < 0 {
		return 0
	}
	for i, s := range segs {
		if s.maxTimestamp < 0 || now-s.maxTimestamp <= retention.Milliseconds() {
			return i
		}
	}
	return len(segs)
}

// deletableBySize returns how many of the oldest segments go so that the log is no larger than
// limit bytes: Kafka's rule, a segment goes while the log exceeds limit by at least that
// segment's size. limit < 0 keeps everything.
func deletableBySize(segs []retentionSegment, limit int64) int {
	if limit < 0 {
		return 0
	}
	var total int64
	for _, s := range segs {
		total += s.size
	}
	excess := total - limit
	for i, s := range segs {
		if excess-s.size < 0 {
			return i
		}
		excess -= s.size
	}
	return len(segs)
}

// ApplyRetention is ApplyRetentionAt at the time of the log's clock: WithClock's, else time.Now.
// It is what a store's background check runs (see WithRetentionCheckInterval).
func (l *Log) ApplyRetention() (int, error) { return l.ApplyRetentionAt(l.now()) }

// ApplyRetentionAt deletes, oldest first, the segments that retention says must go at now, and
// stops at the first segment that stays, as Kafka's UnifiedLog.deleteOldSegments does: by
// retention.ms, a segment whose largest record timestamp is more than RetentionDuration before now
// (a segment goes by the newest record it holds, not by its file times); by retention.bytes, the
// oldest segment while the log is larger than RetentionBytes by at least that segment's size.
// Nothing of a replicated log past its high watermark goes. It returns the number of segments
// deleted.
//
// The log start offset moves to the first remaining segment's base offset, and is checkpointed,
// before any file is touched; it only ever moves forward. When every segment is due, an empty
// segment is first rolled at the log end offset, so numbering continues after everything aged
// out, even across restarts. Reads in progress on a deleted segment finish on its open files;
// later reads below the new log start offset get ErrOffsetOutOfRange. ErrClosed after Close.
func (l *Log) ApplyRetentionAt(now time.Time) (int, error) {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	l.expireProducers(now)
	n := l.retentionCount(now)
	if n == 0 {
		return 0, l.sweepRetired(now, false)
	}
	if n == len(l.segments) {
		if err := l.roll(l.active().NextOffset()); err != nil {
			return 0, err
		}
	}

	l.mu.RLock()
	newStart := max(l.logStartOffset, l.segments[n].BaseOffset())
	st := logState{logStartOffset: newStart, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	if err := l.state.write(st); err != nil {
		return 0, fmt.Errorf("commitlog: checkpoint log start offset %d: %w", newStart, err)
	}

	l.mu.Lock()
	gone := slices.Clone(l.segments[:n])
	l.segments = slices.Delete(l.segments, 0, n)
	l.logStartOffset = newStart
	l.mu.Unlock()
	for _, s := range gone {
		l.logger.Info("retention deleted segment", "segment", s.Path(segment.LogSuffix), "base_offset", s.BaseOffset(),
			"bytes", s.Size(), "max_timestamp", s.MaxTimestamp(), "log_start_offset", newStart)
	}
	l.stats.deleted(gone)
	if err := l.retire(gone); err != nil {
		return n, err
	}
	// The epochs below the new start are gone with their batches; a stale entry costs nothing
	// but a longer file, so a failed write is only logged.
	if err := l.trimEpochs(newStart, l.LogEndOffset()); err != nil {
		l.logger.Warn("leader epoch checkpoint not trimmed", "err", err)
	}
	l.trimProducers(newStart)
	return n, nil
}

// retentionCount returns how many of the oldest segments retention deletes now. The active
// segment counts when it holds data: if it is due, the caller rolls first. Callers hold
// appendMu.
func (l *Log) retentionCount(now time.Time) int {
	if !l.conf().CleanupPolicy.Delete() {
		// cleanup.policy=compact alone: retention deletes nothing (the log start offset still
		// moves by a follower's leader; DeleteRecords refuses such a log, as Kafka does).
		return 0
	}
	l.mu.RLock()
	segs := l.segments
	if l.active().Size() == 0 {
		segs = segs[:len(segs)-1]
	}
	rs := make([]retentionSegment, len(segs))
	for i, s := range segs {
		rs[i] = retentionSegment{size: s.Size(), maxTimestamp: s.MaxTimestamp()}
	}

	ends := make([]int64, len(segs)) // the offset after each segment's last
	for i := range segs {
		if i+1 < len(l.segments) {
			ends[i] = l.segments[i+1].BaseOffset()
		} else {
			ends[i] = l.active().NextOffset()
		}
	}
	l.mu.RUnlock()
	n := l.retentionDue(rs, now, segs)
	// A replicated log deletes only what every in-sync replica holds (Kafka's deleteOldSegments
	// keeps the log start offset at or below the high watermark): records past it may exist
	// nowhere else yet.
	if hw := l.owner.retentionLimit(); hw >= 0 {
		for n > 0 && ends[n-1] > hw {
			n--
		}
	}
	// Nor past the first offset of an open transaction: its records, and the producer state
	// that knows them, must stay until its marker decides them.
	if fuo := l.producers.m.FirstUndecidedOffset(); fuo >= 0 {
		for n > 0 && ends[n-1] > fuo {
			n--
		}
	}
	return n
}

// retentionDue applies the time and size policies to segments rs (segs, for logging).
func (l *Log) retentionDue(rs []retentionSegment, now time.Time, segs []*segment.Segment) int {
	byTime := deletableByTime(rs, now.UnixMilli(), l.conf().RetentionDuration)
	if byTime < len(rs) && l.conf().RetentionDuration >= 0 && rs[byTime].maxTimestamp > now.UnixMilli() {
		// Only possible with TimestampAfterMax disabled (or a clock that went back): one record
		// from the future holds every later segment against time retention.
		l.logger.Warn("segment has records timestamped in the future; time retention cannot pass it",
			"segment", segs[byTime].Path(segment.LogSuffix), "max_timestamp", rs[byTime].maxTimestamp, "now", now.UnixMilli())
	}
	return max(byTime, deletableBySize(rs, l.conf().RetentionBytes))
}

// advanceLogStartOffset moves the log start offset up to offset, as a follower does when its
// leader's log start offset passed its own (Kafka's maybeIncrementLogStartOffset): reads below it
// get ErrOffsetOutOfRange, and the segments wholly below it, never the active one, are deleted as
// retention deletes them. The new start is checkpointed first. Offsets at or below the current
// start, or past the log end offset, change nothing.
func (l *Log) advanceLogStartOffset(offset int64) error {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	start, end := l.logStartOffset, l.active().NextOffset()
	st := logState{logStartOffset: offset, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	if offset <= start || offset > end {
		return nil
	}
	if err := l.state.write(st); err != nil {
		return fmt.Errorf("commitlog: checkpoint log start offset %d: %w", offset, err)
	}
	l.mu.Lock()
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].BaseOffset() <= offset {
		n++
	}
	gone := slices.Clone(l.segments[:n])
	l.segments = slices.Delete(l.segments, 0, n)
	l.logStartOffset = offset
	l.mu.Unlock()
	if n == 0 {
		return nil
	}
	l.logger.Info("log start offset advanced", "log_start_offset", offset, "segments_deleted", n)
	l.stats.deleted(gone)
	if err := l.retire(gone); err != nil {
		return err
	}
	if err := l.trimEpochs(offset, l.LogEndOffset()); err != nil {
		l.logger.Warn("leader epoch checkpoint not trimmed", "err", err)
	}
	l.trimProducers(offset)
	return nil
}

// trimProducers drops what the producer state holds below a new log start offset start, and the
// snapshots below it (Kafka's onLogStartOffsetIncremented and deleteSnapshotsBefore).
func (l *Log) trimProducers(start int64) {
	l.producers.m.TruncateHead(start)
	if _, err := l.producers.removeSnapshots(nil, func(off int64) bool { return off < start }); err != nil {
		l.logger.Warn("producer snapshots below the log start offset not removed", "err", err)
	}
}
