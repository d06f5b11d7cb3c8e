package cleaner

import (
	"math"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Rules are what a clean's Filter keeps (Kafka's LogCleaner RecordFilter).
type Rules struct {
	// Map holds the latest offset of every key of the pass's dirty range.
	Map *OffsetMap
	// Now is the clean's time, ms since the Unix epoch: tombstones of batches whose delete
	// horizon is at or before it go, and a horizon set now is Now+DeleteRetention.
	Now int64
	// DeleteRetention is delete.retention.ms; negative is taken as 0.
	DeleteRetention int64
	// KeepEmpty says whether a batch none of whose records is kept stays as an empty batch:
	// true for the last batch of its producer (Kafka's BatchRetention.RETAIN_EMPTY). nil keeps
	// none.
	KeepEmpty func(h *recordbatch.Header) bool
	// Aborted says whether a transactional data batch belongs to an aborted transaction: all
	// its records go, as Kafka's cleaner discards aborted batches (CleanedTransactionMetadata),
	// the batch itself kept empty if KeepEmpty says so. nil: none is.
	Aborted func(h *recordbatch.Header) bool
	// Limits bound the batches decoded.
	Limits recordbatch.Limits
}

// Result is what Filter.Batch did with one batch.
type Result struct {
	Kept        bool // a batch was appended to dst
	Original    bool // it is the input batch, byte for byte
	RecordsRead int  // records in the input batch
	RecordsKept int  // records in the batch written
	Tombstones  int  // tombstones in the batch written
	// LastOffset and MaxTimestamp are the header's of the batch written (an empty batch keeps
	// the input's last offset).
	LastOffset   int64
	MaxTimestamp int64
	// DeleteHorizon is the delete horizon of the batch written, ms; -1 when it has none.
	DeleteHorizon int64
}

// Filter copies batches, keeping what Rules say (Kafka's MemoryRecords.filterTo for one batch).
// Its decoder and builder are reused from batch to batch, so a warmed-up Filter allocates
// little. The zero value is ready to use; not safe for concurrent use.
type Filter struct {
	dec  recordbatch.Decoder
	bld  recordbatch.Builder
	kept []recordbatch.Record
}

// Batch appends to dst the retained form of the batch at the start of batch (see the package
// documentation for the rules) and returns the extended slice with what it did. The input batch
// is decoded whole, CRC included: a damaged one is an error wrapping recordbatch.ErrCorrupt (or
// ErrShort, ErrTooLarge), with dst unchanged.
func (f *Filter) Batch(dst, batch []byte, r *Rules) ([]byte, Result, error) {
	f.dec.Limits = r.Limits
	b, err := f.dec.Decode(batch)
	if err != nil {
		return dst, Result{}, err
	}
	h := b.Header
	res := Result{RecordsRead: int(h.RecordCount), LastOffset: h.LastOffset(), DeleteHorizon: -1}
	horizon, hasHorizon := h.DeleteHorizon()
	if hasHorizon {
		res.DeleteHorizon = horizon
	}
	if h.Attributes.Control() {
		res.Kept, res.Original, res.RecordsKept, res.MaxTimestamp = true, true, int(h.RecordCount), h.MaxTimestamp
		return append(dst, batch[:h.Size()]...), res, nil
	}
	f.kept = f.kept[:0]
	tombstones := 0
	latest := r.Map.LatestOffset()
	aborted := h.Attributes.Transactional() && r.Aborted != nil && r.Aborted(&h)
	for rec := range b.Records() {
		if aborted {
			break
		}
		if b.RecordOffset(&rec) > latest {
			// Past the map: the pass did not read its keys, so nothing is known to supersede
			// it, and a tombstone there may still hide an older value the map holds (Kafka's
			// shouldRetainRecord keeps every record past the map's latest offset).
			if rec.Value == nil {
				tombstones++
			}
			f.kept = append(f.kept, rec)
			continue
		}
		if rec.Key == nil {
			continue // Kafka's cleaner drops keyless records (invalid on a compacted topic)
		}
		if latest, ok := r.Map.Get(rec.Key); ok && b.RecordOffset(&rec) < latest {
			continue
		}
		if rec.Value == nil {
			if hasHorizon && horizon <= r.Now {
				continue
			}
			tombstones++
		}
		f.kept = append(f.kept, rec)
	}
	res.RecordsKept, res.Tombstones = len(f.kept), tombstones
	if len(f.kept) == int(h.RecordCount) && (tombstones == 0 || hasHorizon) {
		res.Kept, res.Original, res.MaxTimestamp = true, true, h.MaxTimestamp
		return append(dst, batch[:h.Size()]...), res, nil
	}
	if len(f.kept) == 0 {
		if r.KeepEmpty == nil || !r.KeepEmpty(&h) {
			return dst, res, nil
		}
		// Kafka's MemoryRecords.writeEmptyHeader: no records, no codec, the batch's last
		// offset, producer fields, leader epoch, timestamp type and transactional bit, its max
		// timestamp, and -1 as the base timestamp (DefaultRecordBatch: "If the batch is empty,
		// the BaseTimestamp will be set to -1").
		eh := h
		eh.Attributes = h.Attributes.WithCodec(recordbatch.CodecNone).WithDeleteHorizon(false)
		f.bld.Reset(eh)
		f.bld.SetHeaderFields(h.LastOffsetDelta, -1, h.MaxTimestamp)
		out, err := f.bld.Finish()
		if err != nil {
			return dst, Result{}, err
		}
		res.Kept, res.MaxTimestamp = true, h.MaxTimestamp
		return append(dst, out...), res, nil
	}

	// Rebuilt: Kafka's buildRetainedRecordsInto with overrideLastOffset, the delete horizon set
	// the first time a tombstone is kept.
	nh := h
	base := b.RecordTimestamp(&f.kept[0])
	switch {
	case hasHorizon:
		base = horizon
	case tombstones > 0:
		base = horizonAt(r.Now, r.DeleteRetention)
		nh.Attributes = nh.Attributes.WithDeleteHorizon(true)
		res.DeleteHorizon = base
	}
	maxTS := h.MaxTimestamp // LogAppendTime: the broker's time, every record's
	if !h.Attributes.LogAppendTime() {
		maxTS = b.RecordTimestamp(&f.kept[0])
	}
	nh.BaseTimestamp = base
	f.bld.Reset(nh)
	for i := range f.kept {
		rec := f.kept[i]
		ts := b.RecordTimestamp(&rec)
		if !h.Attributes.LogAppendTime() {
			maxTS = max(maxTS, ts)
		}
		rec.TimestampDelta = ts - base
		rec.Attributes = 0 // Kafka's builder writes 0: the byte is unused
		f.bld.AddRecord(rec)
	}
	f.bld.SetHeaderFields(h.LastOffsetDelta, base, maxTS)
	out, err := f.bld.Finish()
	if err != nil {
		return dst, Result{}, err
	}
	res.Kept, res.MaxTimestamp = true, maxTS
	return append(dst, out...), res, nil
}

// horizonAt returns now + retention ms, retention taken as 0 when negative and the sum held at
// math.MaxInt64 rather than wrapped: delete.retention.ms may be Long.MAX_VALUE, "for ever".
func horizonAt(now, retention int64) int64 {
	retention = max(retention, 0)
	if now > 0 && retention > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + retention
}
