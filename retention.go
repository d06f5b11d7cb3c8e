package commitlog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
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

// acquire marks s in use by a read; callers hold mu (read) while they pick s, so that a segment
// retired after that still has its files until release.
func acquire(s *segment) { s.refs.Add(1) }

// release ends a read of s and deletes its files if s was retired meanwhile and is now unused.
func (l *Log) release(s *segment) {
	if s.refs.Add(-1) == 0 {
		if s.retired.Load() {
			// After Close no check sweeps again: the last read of a retired segment takes its
			// files and handles with it, as Close did for the segments nobody read.
			if err := l.sweepRetired(l.now(), l.isClosed()); err != nil {
				l.logger.Warn("deleting retired segment files failed", "err", err)
			}
		}
	}
}

// retire takes segments that left the log (by retention or truncation): their files are renamed
// "*.deleted" at once, as Kafka does, and deleted once no read uses them and FileDeleteDelay has
// passed. The caller has already removed them from l.segments under mu.
func (l *Log) retire(segs []*segment) error {
	deleteAt := l.now().Add(max(l.cfg.FileDeleteDelay, 0))
	var errs []error
	l.retireMu.Lock()
	for _, s := range segs {
		errs = append(errs, s.retire(deleteAt, l.retiredSuffixFor(s.baseOffset)))
		l.retired = append(l.retired, s)
	}
	l.retireMu.Unlock()
	errs = append(errs, l.fs.SyncDir(l.dir))
	errs = append(errs, l.sweepRetired(l.now(), false))
	return errors.Join(errs...)
}

// retiredSuffixFor returns the suffix for the files of a segment at base being retired:
// ".deleted", as Kafka names them, unless a retired segment with the same base offset still
// waits for its delete delay (a truncation, a refill and another truncation, or retention, within
// file.delete.delay.ms), whose files have that name: then ".<n>.deleted", with the smallest n
// from 1 that no waiting segment uses. Renaming over the waiting files would lose them under
// their reads, and deleting them later would delete the new ones. Any name ending ".deleted" is
// a leftover to the next open (see listSegments), as to Kafka's. Callers hold retireMu.
func (l *Log) retiredSuffixFor(base int64) string {
	used := map[string]bool{}
	for _, r := range l.retired {
		if r.baseOffset == base {
			used[r.retiredSuffix] = true
		}
	}
	suffix := deletedSuffix
	for n := 1; used[suffix]; n++ {
		suffix = "." + strconv.Itoa(n) + deletedSuffix
	}
	return suffix
}

// trimRetirementNumber removes the ".<n>" that retiredSuffixFor puts before ".deleted" from
// stem, the name of a file without its ".deleted": "00000000000000000010.log.2" gives
// "00000000000000000010.log". Other stems are returned as they are.
func trimRetirementNumber(stem string) string {
	i := strings.LastIndexByte(stem, '.')
	if i < 0 || i == len(stem)-1 {
		return stem
	}
	for _, c := range stem[i+1:] {
		if c < '0' || c > '9' {
			return stem
		}
	}
	return stem[:i]
}

// sweepRetired deletes the files of retired segments that no read uses and whose delete time
// has come (all unused ones, with force).
func (l *Log) sweepRetired(now time.Time, force bool) error {
	l.retireMu.Lock()
	defer l.retireMu.Unlock()
	var errs []error
	keep := l.retired[:0]
	for _, s := range l.retired {
		if s.refs.Load() == 0 && (force || !now.Before(s.deleteAt)) {
			errs = append(errs, s.removeRetired())
			continue
		}
		keep = append(keep, s)
	}
	clear(l.retired[len(keep):])
	l.retired = keep
	return errors.Join(errs...)
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
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	n := l.retentionCount(now)
	if n == 0 {
		return 0, l.sweepRetired(now, false)
	}
	if n == len(l.segments) {
		if err := l.roll(l.active().nextOffset); err != nil {
			return 0, err
		}
	}

	l.mu.RLock()
	newStart := max(l.logStartOffset, l.segments[n].baseOffset)
	st := logState{logStartOffset: newStart, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	if err := l.writeState(st); err != nil {
		return 0, fmt.Errorf("commitlog: checkpoint log start offset %d: %w", newStart, err)
	}

	l.mu.Lock()
	gone := slices.Clone(l.segments[:n])
	l.segments = slices.Delete(l.segments, 0, n)
	l.logStartOffset = newStart
	l.mu.Unlock()
	for _, s := range gone {
		l.logger.Info("retention deleted segment", "segment", s.path(logSuffix), "base_offset", s.baseOffset,
			"bytes", s.size.Load(), "max_timestamp", s.maxTimestamp, "log_start_offset", newStart)
	}
	if err := l.retire(gone); err != nil {
		return n, err
	}
	// The epochs below the new start are gone with their batches; a stale entry costs nothing
	// but a longer file, so a failed write is only logged.
	if err := l.trimEpochs(newStart, l.LogEndOffset()); err != nil {
		l.logger.Warn("leader epoch checkpoint not trimmed", "err", err)
	}
	return n, nil
}

// retentionCount returns how many of the oldest segments retention deletes now. The active
// segment counts when it holds data: if it is due, the caller rolls first. Callers hold
// appendMu.
func (l *Log) retentionCount(now time.Time) int {
	l.mu.RLock()
	segs := l.segments
	if l.active().size.Load() == 0 {
		segs = segs[:len(segs)-1]
	}
	rs := make([]retentionSegment, len(segs))
	for i, s := range segs {
		rs[i] = retentionSegment{size: s.size.Load(), maxTimestamp: s.maxTimestamp}
	}

	ends := make([]int64, len(segs)) // the offset after each segment's last
	for i := range segs {
		if i+1 < len(l.segments) {
			ends[i] = l.segments[i+1].baseOffset
		} else {
			ends[i] = l.active().nextOffset
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
	return n
}

// retentionDue applies the time and size policies to segments rs (segs, for logging).
func (l *Log) retentionDue(rs []retentionSegment, now time.Time, segs []*segment) int {
	byTime := deletableByTime(rs, now.UnixMilli(), l.cfg.RetentionDuration)
	if byTime < len(rs) && l.cfg.RetentionDuration >= 0 && rs[byTime].maxTimestamp > now.UnixMilli() {
		// Only possible with TimestampAfterMax disabled (or a clock that went back): one record
		// from the future holds every later segment against time retention.
		l.logger.Warn("segment has records timestamped in the future; time retention cannot pass it",
			"segment", segs[byTime].path(logSuffix), "max_timestamp", rs[byTime].maxTimestamp, "now", now.UnixMilli())
	}
	return max(byTime, deletableBySize(rs, l.cfg.RetentionBytes))
}

// advanceLogStartOffset moves the log start offset up to offset, as a follower does when its
// leader's log start offset passed its own (Kafka's maybeIncrementLogStartOffset): reads below it
// get ErrOffsetOutOfRange, and the segments wholly below it, never the active one, are deleted as
// retention deletes them. The new start is checkpointed first. Offsets at or below the current
// start, or past the log end offset, change nothing.
func (l *Log) advanceLogStartOffset(offset int64) error {
	l.lockWriters()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	start, end := l.logStartOffset, l.active().nextOffset
	st := logState{logStartOffset: offset, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	if offset <= start || offset > end {
		return nil
	}
	if err := l.writeState(st); err != nil {
		return fmt.Errorf("commitlog: checkpoint log start offset %d: %w", offset, err)
	}
	l.mu.Lock()
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].baseOffset <= offset {
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
	if err := l.retire(gone); err != nil {
		return err
	}
	if err := l.trimEpochs(offset, l.LogEndOffset()); err != nil {
		l.logger.Warn("leader epoch checkpoint not trimmed", "err", err)
	}
	return nil
}
