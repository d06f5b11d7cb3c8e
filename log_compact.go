package commitlog

import (
	"context"
	"errors"
)

// CompactionState is where a compacted log's cleaning stands (Kafka's LogToClean): what the
// background cleaner weighs when it picks a log, and what `commitlog topics` shows.
type CompactionState struct {
	// CleanerPoint is the first dirty offset: everything below it was cleaned (Kafka's
	// cleaner-offset-checkpoint entry for the partition). At least the log start offset.
	CleanerPoint int64
	// UncleanableOffset is the first offset no clean may touch yet: the active segment's base
	// offset, lowered to the high watermark of a replicated log and to the first segment
	// min.compaction.lag.ms still holds back.
	UncleanableOffset int64
	// CleanBytes and DirtyBytes are the sizes of the segments below the cleaner point and of
	// those from it to the uncleanable offset.
	CleanBytes, DirtyBytes int64
	// DirtyRatio is DirtyBytes / (CleanBytes + DirtyBytes), 0 when both are 0; a log is due
	// when it reaches min.cleanable.dirty.ratio.
	DirtyRatio float64
	// Due says the background cleaner would clean the log now: its dirty ratio reached
	// min.cleanable.dirty.ratio, or its oldest dirty record passed max.compaction.lag.ms.
	Due bool
}

// CompactionResult says what one Compact did (Kafka's CleanerStats).
type CompactionResult struct {
	Passes         int   // cleans run: more than one when the dirty keys did not fit the dedupe buffer at once
	BytesRead      int64 // bytes of segments read, the map's passes and the copies
	BytesWritten   int64 // bytes of cleaned segments written
	RecordsRead    int64 // records read while copying
	RecordsRemoved int64 // records the copies left out: older values of a key, expired tombstones, keyless records
	SegmentsBefore int   // segments cleaned
	SegmentsAfter  int   // segments they became
	CleanerPoint   int64 // the cleaner point after the last pass
}

// add sums r into c.
func (c *CompactionResult) add(r CompactionResult) {
	c.Passes += r.Passes
	c.BytesRead += r.BytesRead
	c.BytesWritten += r.BytesWritten
	c.RecordsRead += r.RecordsRead
	c.RecordsRemoved += r.RecordsRemoved
	c.SegmentsBefore += r.SegmentsBefore
	c.SegmentsAfter += r.SegmentsAfter
	c.CleanerPoint = max(c.CleanerPoint, r.CleanerPoint)
}

// CompactionState returns the log's compaction state at the log's clock.
func (l *Log) CompactionState() CompactionState {
	return CompactionState{}
}

// Compact cleans the log now, whatever its dirty ratio: everything from the cleaner point to
// the uncleanable offset, in as many passes as the dedupe buffer needs.
func (l *Log) Compact(ctx context.Context) (CompactionResult, error) {
	return CompactionResult{}, errors.New("commitlog: compaction not done")
}
