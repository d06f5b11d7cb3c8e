package commitlog

import (
	"context"
	"time"
)

// Partition is one partition of a topic: its log, and (with replication, later) its role and
// high watermark. Without replication the high watermark is the log end offset. A Partition is
// safe for concurrent use.
type Partition struct {
	topic *Topic
	id    int32
	log   *Log
}

// Topic returns the name of the partition's topic.
func (p *Partition) Topic() string { return p.topic.name }

// ID returns the partition's number within its topic, from 0.
func (p *Partition) ID() int32 { return p.id }

// Append appends recs to this partition as one batch (several when they exceed
// max.message.bytes), whatever their keys, and sets their Topic, Partition, Offset and
// Timestamp as Log.Append does. Errors as for Log.Append.
func (p *Partition) Append(ctx context.Context, recs ...*Record) error {
	for _, r := range recs {
		r.Topic, r.Partition = p.topic.name, p.id
	}
	err := p.log.Append(ctx, recs...)
	p.topic.broadcast()
	return err
}

// AppendAsLeader appends a producer's RecordBatch v2 bytes, assigning offsets; see
// Log.AppendAsLeader.
func (p *Partition) AppendAsLeader(ctx context.Context, batches []byte) (firstOffset, lastOffset int64, err error) {
	first, last, err := p.log.AppendAsLeader(ctx, batches)
	p.topic.broadcast()
	return first, last, err
}

// AppendAsFollower appends a leader's RecordBatch v2 bytes with their own offsets; see
// Log.AppendAsFollower.
func (p *Partition) AppendAsFollower(ctx context.Context, batches []byte) (lastOffset int64, err error) {
	last, err := p.log.AppendAsFollower(ctx, batches)
	p.topic.broadcast()
	return last, err
}

// ReadBatches appends to dst the stored batches from offset on, up to maxBytes and below the
// high watermark; see Log.ReadBatches.
func (p *Partition) ReadBatches(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	return p.log.ReadBatches(dst, offset, maxBytes)
}

// ReadRecords returns the records from offset on, below the high watermark; see
// Log.ReadRecords. Their Topic and Partition are set.
func (p *Partition) ReadRecords(offset int64, maxBytes int) ([]*Record, error) {
	recs, err := p.log.ReadRecords(offset, maxBytes)
	for _, r := range recs {
		r.Topic, r.Partition = p.topic.name, p.id
	}
	return recs, err
}

// OffsetForTime returns the offset of the first record whose timestamp is >= t, or the log end
// offset; see Log.OffsetForTime.
func (p *Partition) OffsetForTime(t time.Time) (int64, error) {
	return p.log.OffsetForTime(t.UnixMilli())
}

// LogStartOffset returns the first offset the partition holds; see Log.LogStartOffset.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LogEndOffset returns the offset the next record will get; see Log.LogEndOffset.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// HighWatermark returns the offset below which records are readable: without replication, the
// log end offset.
func (p *Partition) HighWatermark() int64 { return p.log.LogEndOffset() }

// Size returns the bytes of batches in the partition's segments.
func (p *Partition) Size() int64 { return p.log.Size() }

// SegmentCount returns the number of segments.
func (p *Partition) SegmentCount() int { return p.log.SegmentCount() }

// TruncateTo removes the records at or after offset; see Log.TruncateTo.
func (p *Partition) TruncateTo(offset int64) error {
	err := p.log.TruncateTo(offset)
	p.topic.broadcast()
	return err
}

// Sync flushes the partition's appends to stable storage; see Log.Sync.
func (p *Partition) Sync() error { return p.log.Sync() }

// ApplyRetention deletes the partition's segments that retention says must go; see
// Log.ApplyRetention. It returns the number of segments deleted.
func (p *Partition) ApplyRetention(now time.Time) (int, error) { return p.log.ApplyRetention(now) }
