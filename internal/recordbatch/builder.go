package recordbatch

import (
	"fmt"
	"math"
)

// Builder encodes one batch at a time: Reset, then Add (or AddRecord) per record, then Finish.
// Its buffers grow to the largest batch built and are reused from one batch to the next, so once
// warmed up, adding a record allocates nothing and neither does Finish for uncompressed batches
// (compressors are created on first use and then reused too). The zero value is ready for Reset.
// A Builder is not safe for concurrent use.
type Builder struct {
	h   Header // from Reset; BaseTimestamp set by the first Add
	buf []byte // HeaderSize bytes reserved for the header, then the uncompressed records
	out []byte // the compressed batch, when the codec asks for one

	n               int32 // records added
	lastOffsetDelta int32 // offset delta of the last record added
	maxTsDelta      int64 // largest timestamp delta added

	explicit bool // SetHeaderFields was called: its fields go into the header verbatim
	err      error

	comp *compressor
}

// Reset starts a new batch with h's BaseOffset, PartitionLeaderEpoch, Attributes (the codec
// bits select the compression Finish applies; the LogAppendTime, transactional and control bits
// are written as given), ProducerID, ProducerEpoch and BaseSequence.
//
// h.BaseTimestamp is replaced by the first Add's timestamp; batches built with AddRecord alone
// keep it, as the base their records' deltas refer to. h.MaxTimestamp is only used under
// LogAppendTime, where it is the broker's append time (Kafka's MemoryRecordsBuilder writes its
// logAppendTime there). Magic, BatchLength, CRC, RecordCount and LastOffsetDelta are computed
// by Finish. Bytes returned by an earlier Finish are overwritten from here on.
func (b *Builder) Reset(h Header) {
	b.h = h
	if cap(b.buf) < HeaderSize {
		b.buf = make([]byte, HeaderSize, 4<<10)
	}
	b.buf = b.buf[:HeaderSize]
	b.n = 0
	b.lastOffsetDelta = 0
	b.maxTsDelta = 0
	b.explicit = false
	b.err = nil
}

// Add appends a record with timestamp timestampMs (ms since the Unix epoch) and offset delta
// Len(), the next in sequence. The first record's timestamp becomes the batch's BaseTimestamp
// and later ones are stored as deltas from it, negative when a record is older than the first.
// A nil key or value is null; headers are written in order, repeated names included. Nothing is
// retained: key, value and headers may be reused as soon as Add returns.
//
// Errors (a field longer than the format's int32 lengths) are reported by Finish.
func (b *Builder) Add(timestampMs int64, key, value []byte, headers []RecordHeader) {
	if b.n == 0 {
		b.h.BaseTimestamp = timestampMs
	}
	b.add(0, timestampMs-b.h.BaseTimestamp, b.n, key, value, headers, math.MaxInt)
}

// AddWithin adds a record as Add does, unless the batch already holds a record and this one's
// worst-case size (see RecordSizeBound) would take EstimatedSize past limit bytes: then it adds
// nothing and returns false, and the caller finishes the batch and starts the next. The first
// record of a batch is always added, whatever its size. It sizes the record for the limit and
// for its encoding in one pass over its fields, for producers splitting a call's records into
// batches of at most max.message.bytes.
func (b *Builder) AddWithin(limit int, timestampMs int64, key, value []byte, headers []RecordHeader) bool {
	if b.n == 0 {
		b.h.BaseTimestamp = timestampMs
	}
	return b.add(0, timestampMs-b.h.BaseTimestamp, b.n, key, value, headers, limit)
}

// RecordSizeBound is an upper bound of the encoded size of a record with these fields, length
// prefix included: every varint counted at its widest (5 bytes, 10 for the timestamp delta),
// and one attributes byte. AddWithin checks limits against it, so that a batch split by it does
// not depend on the timestamps and offsets a record ends up with.
func RecordSizeBound(key, value []byte, headers []RecordHeader) int {
	n := 5 + 1 + 10 + 5 + 5 + len(key) + 5 + len(value) + 5
	for i := range headers {
		n += 5 + len(headers[i].Key) + 5 + len(headers[i].Value)
	}
	return n
}

// AddRecord appends r as it is, deltas and attributes included, for re-encoding a decoded batch
// byte for byte. Offset deltas must be non-negative and increasing, or Finish fails. Finish then
// derives LastOffsetDelta from the last record and MaxTimestamp from the Reset header's
// BaseTimestamp plus the largest delta, unless SetHeaderFields gives them (as a compacted
// batch's header, which may cover offsets whose records are gone, needs).
func (b *Builder) AddRecord(r Record) {
	b.add(r.Attributes, r.TimestampDelta, r.OffsetDelta, r.Key, r.Value, r.Headers, math.MaxInt)
}

// add appends a record unless the batch holds one already and the record's RecordSizeBound
// would take it past limit bytes (it returns false then). A record refused for an error (kept
// for Finish) counts as added.
func (b *Builder) add(attrs int8, tsDelta int64, offsetDelta int32, key, value []byte, headers []RecordHeader, limit int) bool {
	if b.err != nil {
		return true
	}
	switch {
	case b.n == math.MaxInt32:
		b.err = fmt.Errorf("%w: more than %d records", ErrTooLarge, math.MaxInt32)
		return true
	case offsetDelta < 0 || (b.n > 0 && offsetDelta <= b.lastOffsetDelta):
		b.err = fmt.Errorf("%w: record %d: offset delta %d after %d would not increase", ErrCorrupt, b.n, offsetDelta, b.lastOffsetDelta)
		return true
	}
	size, bound := recordSizes(tsDelta, offsetDelta, key, value, headers)
	if b.n > 0 && len(b.buf) > limit-bound {
		return false
	}
	if size < 0 {
		b.err = fmt.Errorf("%w: record %d: a field is longer than an int32 length allows", ErrTooLarge, b.n)
		return true
	}
	at := len(b.buf)
	total := sizeVarint(int32(size)) + int(size)
	if cap(b.buf)-at < total {
		b.buf = append(b.buf, make([]byte, total)...)[:at]
	}
	b.buf = b.buf[:at+total]
	putRecord(b.buf[at:], int32(size), attrs, tsDelta, offsetDelta, key, value, headers)
	if b.n == 0 || tsDelta > b.maxTsDelta {
		b.maxTsDelta = tsDelta
	}
	b.lastOffsetDelta = offsetDelta
	b.n++
	return true
}

// SetHeaderFields makes Finish write these LastOffsetDelta, BaseTimestamp and MaxTimestamp
// verbatim instead of deriving them, for re-encoding a decoded batch byte for byte. Finish
// fails with ErrCorrupt when lastOffsetDelta is below the last record's offset delta. Reset
// clears them.
func (b *Builder) SetHeaderFields(lastOffsetDelta int32, baseTimestamp, maxTimestamp int64) {
	b.explicit = true
	b.h.LastOffsetDelta = lastOffsetDelta
	b.h.BaseTimestamp = baseTimestamp
	b.h.MaxTimestamp = maxTimestamp
}

// Len returns the number of records added since Reset.
func (b *Builder) Len() int { return int(b.n) }

// EstimatedSize returns the bytes the batch would take uncompressed, header included: an upper
// bound on what Finish returns for an uncompressed batch, and usually one for compressed ones,
// for checking size limits (Kafka's max.message.bytes, batch.size) before Finish.
func (b *Builder) EstimatedSize() int { return max(len(b.buf), HeaderSize) }

// Finish completes the batch and returns it: the records compressed when the Reset header's
// codec asks for it, then the header with Magic 2, BatchLength, RecordCount, LastOffsetDelta
// (the last, hence largest, record offset delta), BaseTimestamp and MaxTimestamp (the first
// Add's timestamp and the largest record timestamp; under LogAppendTime, MaxTimestamp is the
// Reset header's) and the CRC filled in. SetHeaderFields overrides the three derived fields.
// A batch with no records keeps the Reset header's values for them.
//
// The bytes belong to the Builder and stay valid until the next Reset. Returns ErrTooLarge when
// a record or the batch exceeds the format's int32 lengths, ErrCorrupt when AddRecord offset
// deltas do not increase, the header's LastOffsetDelta is below them or the codec is unknown,
// and a compressor's error should it fail.
func (b *Builder) Finish() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.buf) < HeaderSize {
		b.Reset(b.h) // zero Builder: an empty batch from a zero header
	}
	h := b.h
	h.Magic = Magic
	h.RecordCount = b.n
	if b.n > 0 && !b.explicit {
		h.LastOffsetDelta = b.lastOffsetDelta
		if !h.Attributes.LogAppendTime() {
			h.MaxTimestamp = h.BaseTimestamp + b.maxTsDelta
		}
	}
	if b.n > 0 && h.LastOffsetDelta < b.lastOffsetDelta {
		return nil, fmt.Errorf("%w: last offset delta %d below the last record's %d", ErrCorrupt, h.LastOffsetDelta, b.lastOffsetDelta)
	}
	out := b.buf
	if codec := h.Attributes.Codec(); codec != CodecNone {
		if b.comp == nil {
			b.comp = new(compressor)
		}
		var err error
		out, err = b.comp.compress(append(b.out[:0], b.buf[:HeaderSize]...), codec, b.buf[HeaderSize:])
		if err != nil {
			return nil, err
		}
		b.out = out
	}
	if len(out)-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(out))
	}
	h.BatchLength = int32(len(out) - LogOverhead)
	PutHeader(out, &h)
	h.CRC = ComputeCRC(out)
	PutHeader(out, &h)
	return out, nil
}

// Encode appends to dst one batch holding recs, with h's fields written as given, including
// BaseTimestamp, MaxTimestamp and LastOffsetDelta, and recs' deltas and attributes as they are:
// the inverse of Decode, byte for byte for uncompressed batches (compressed ones decode to the
// same records, though a compressor's output may differ from the original's). Magic,
// BatchLength, RecordCount and CRC are computed; h's are ignored.
//
// Returns dst unchanged and an error when Builder.Finish would fail: ErrCorrupt when offset
// deltas do not increase or exceed h.LastOffsetDelta, ErrTooLarge past the format's lengths.
func Encode(dst []byte, h Header, recs []Record) ([]byte, error) {
	var b Builder
	b.Reset(h)
	for i := range recs {
		b.AddRecord(recs[i])
	}
	b.SetHeaderFields(h.LastOffsetDelta, h.BaseTimestamp, h.MaxTimestamp)
	out, err := b.Finish()
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}
