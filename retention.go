package commitlog

import (
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

// retentionReason says which policy deleted a segment, or blocked deletion.
type retentionReason int8

const (
	retainedNothing retentionReason = iota
	retainedByTime
	retainedBySize
)

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
