package commitlog

import (
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// producerFields is what an idempotent or transactional producer's append puts in its batches'
// headers: producer id, epoch, the first batch's base sequence, the transactional bit.
type producerFields struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	transactional bool
}

// encoder turns records into batches. Its buffers are reused from call to call (the log keeps
// encoders in a pool), so encoding allocates nothing per record once warm.
type encoder struct {
	b   recordbatch.Builder
	out []byte // the batches of a call that needs more than one
	w   pendingWrite
}

func (l *Log) getEncoder() *encoder {
	if e, ok := l.builders.Get().(*encoder); ok {
		return e
	}
	return &encoder{}
}

// encodeCalls builds the batches for recs, split so that none exceeds cfg.MaxMessageBytes. Offsets in
// the result start at 0; the log rebases them. The result aliases the encoder's buffers.
//
// It also takes each record's timestamp, in the same pass: a record with none, and every record
// under LogAppendTime, gets now (recs are changed); under CreateTime a timestamp past latest (ms)
// is ErrInvalidTimestamp (see Log.timestampError), and records before it may have been given now.
//
// prod, when not nil, is the idempotent or transactional producer whose batches these are: each
// batch carries its producer id and epoch, a base sequence counted from prod.baseSequence by the
// records before it, and the transactional bit when prod.transactional.
//
// recs may hold the records of several appends, back to back, each starting at its index in
// starts (increasing, from 0): a producer's accumulated calls, coalesced (see appendQueue). A
// call whose first record would take the batch it joins past batchSize bytes (Kafka's batch.size:
// estimated, each record at its RecordSizeBound) starts a new batch; the records after a call's
// first fill batches up to max.message.bytes. With starts nil, recs are one call's.
func (e *encoder) encodeCalls(recs []*Record, starts []int, batchSize int, cfg *LogConfig, now time.Time, latest int64, prod *producerFields) (*pendingWrite, error) {
	attrs := recordbatch.Attributes(0).WithCodec(recordbatch.Codec(cfg.Compression))
	if prod != nil && prod.transactional {
		attrs |= recordbatch.AttrTransactional
	}
	logAppendTime := cfg.TimestampType == LogAppendTime
	if logAppendTime {
		attrs |= recordbatch.AttrLogAppendTime
	}
	nowMs := now.UnixMilli()
	hdr := recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if prod != nil {
		hdr.ProducerID, hdr.ProducerEpoch, hdr.BaseSequence = prod.producerID, prod.producerEpoch, prod.baseSequence
	}
	if logAppendTime {
		// The builder writes the header's MaxTimestamp for LogAppendTime batches: the append
		// time, which every record gets.
		hdr.MaxTimestamp = nowMs
	}
	limit := cfg.MaxMessageBytes
	e.w = pendingWrite{batches: e.w.batches[:0], maxTimestamp: -1, producer: prod != nil, calls: len(starts)}
	e.out = e.out[:0]

	var next int64 // offset of the next record, relative to the call's first
	hdr.BaseOffset = next
	e.b.Reset(hdr)
	var single []byte // the call's only batch, left in the builder's buffer
	// flush finishes the current batch; the last one of a call that needed only one stays in
	// the builder's buffer, any other is copied out before the builder is reused.
	flush := func(last bool) error {
		data, err := e.b.Finish()
		if err != nil {
			return err
		}
		if len(data) > limit {
			return fmt.Errorf("%w: batch of %d records is %d bytes, max.message.bytes is %d", ErrRecordTooLarge, e.b.Len(), len(data), limit)
		}
		h, err := recordbatch.ParseHeader(data, 0)
		if err != nil {
			return err
		}
		pos := len(e.out)
		if last && len(e.w.batches) == 0 {
			single = data
		} else {
			e.out = append(e.out, data...)
		}
		e.w.batches = append(e.w.batches, batchInfo{position: int64(pos), size: len(data), baseOffset: h.BaseOffset,
			lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp})
		e.w.maxTimestamp = max(e.w.maxTimestamp, h.MaxTimestamp)
		e.w.lastOffset = h.LastOffset()
		return nil
	}
	if err := checkRecords(recs); err != nil {
		return nil, err
	}
	for i, r := range recs {
		var ts int64
		if logAppendTime || r.Timestamp.IsZero() {
			r.Timestamp, ts = now, nowMs
		} else if ts = r.Timestamp.UnixMilli(); ts > latest {
			return nil, fmt.Errorf("record %d: %w", i, timestampError(cfg, ts, now))
		}
		within := limit
		if len(starts) > 0 && starts[0] == i {
			starts = starts[1:]
			within = min(limit, batchSize)
		}
		if !e.b.AddWithin(within, ts, r.Key, r.Value, r.Headers) {
			if err := flush(false); err != nil {
				return nil, err
			}
			hdr.BaseOffset = next
			if prod != nil {
				hdr.BaseSequence = producerstate.LastSequence(prod.baseSequence, int32(next)) // wraps as Kafka's sequences do
			}
			e.b.Reset(hdr)
			e.b.AddWithin(limit, ts, r.Key, r.Value, r.Headers) // the first record always goes
		}
		next++
		if e.b.Len() == 1 && e.b.EstimatedSize() > limit {
			return nil, fmt.Errorf("%w: record of %d bytes, max.message.bytes is %d", ErrRecordTooLarge, e.b.EstimatedSize(), limit)
		}
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	if single != nil {
		e.w.data = single
	} else {
		e.w.data = e.out
	}
	return &e.w, nil
}
