package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// minRecordSize is the fewest bytes a record takes in a batch (length, attributes, timestamp
// delta, offset delta, key length, value length and header count, one byte each): it bounds the
// records a batch's bytes can hold, whatever its header's count says.
const minRecordSize = 7

// ownedDecode is the decode of one read's batches into records the caller owns, in as few
// allocations as the read: one slab of Records for all the batches, and no copy of the keys,
// values and header values of uncompressed batches, which alias the read's buffer (the caller
// gives that buffer up to the records). Compressed batches are decompressed into the decoder's
// reused buffer, so their bytes are copied out, into one buffer per batch. Reader.fetch and
// ReadRecords share it.
type ownedDecode struct {
	// topic and partition are set on every record.
	topic     string
	partition int32
	// maxDecompressed bounds the decompressed size of one batch.
	maxDecompressed int
	// maxBytes, when positive, stops the decode once the records taken hold that many bytes of
	// keys and values (at least one record is taken).
	maxBytes int
	// epochs, when not nil, gets the leader epoch of each record's batch appended.
	epochs *[]int32
	// reuse, when large enough, is the slab to decode into, its records overwritten: a
	// zero-copy reader's (Reader.Scan) records of its last fetch, all dead.
	reuse []Record
	// chunk, when positive, stops the decode at the end of the first batch that brings the
	// records taken to chunk or more: a zero-copy reader decodes its fetch a few batches at a
	// time, so that its slab stays small enough to be read back from the CPU's cache. used is
	// then set to the bytes of batches the decode went through.
	chunk int
	used  int
	// dec, when not nil, is the decoder to use (and its decompression buffer): a zero-copy
	// reader's, kept from one chunk to the next.
	dec *recordbatch.Decoder
}

// decode returns the records at or after from in batches (back to back, each CRC-checked by the
// log's read, as ReadBatches returns them), skipping control batches, in one slab. The records
// alias batches, which the caller must not reuse. Returns ErrCorrupt (with the batch's byte
// position) for a batch that does not decode, with the records decoded before it.
func (o *ownedDecode) decode(batches []byte, from int64) ([]Record, error) {
	// Size the slab from the headers, each count bounded by what its batch's bytes can hold.
	n := 0
	for pos := 0; pos+recordbatch.HeaderSize <= len(batches); {
		h, err := recordbatch.ParseHeader(batches[pos:], 0)
		if err != nil || h.Size() > len(batches)-pos {
			break // the decode below reports it
		}
		if !h.Attributes.Control() && h.LastOffset() >= from {
			room := h.Size() - recordbatch.HeaderSize
			if h.Attributes.Codec() != recordbatch.CodecNone {
				room = max(o.maxDecompressed, room) // what decompression may give
			}
			n += min(max(int(h.RecordCount), 0), room/minRecordSize)
		}
		pos += h.Size()
		if o.chunk > 0 && n >= o.chunk {
			break
		}
	}
	if o.maxBytes > 0 {
		// A record taken adds its key and value to the total: past maxBytes of them, the
		// decode stops. Only records of no key and no value go beyond this, and grow the slab.
		n = min(n, o.maxBytes+1)
	}
	if n == 0 {
		o.used = len(batches)
		return nil, o.check(batches, from)
	}
	var recs []Record
	if cap(o.reuse) >= n {
		recs = o.reuse[:0]
	} else {
		recs = make([]Record, 0, n)
	}
	dec := o.dec
	if dec == nil {
		dec = &recordbatch.Decoder{}
	}
	dec.Limits = recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: o.maxDecompressed}
	var (
		hdrs     []Header
		lastTS   = int64(-1 << 63)
		lastTime time.Time
		taken    int
		full     bool
	)
	pos := 0
	defer func() { o.used = pos }()
	for pos < len(batches) && !full && (o.chunk <= 0 || len(recs) < o.chunk) {
		h, err := recordbatch.ParseHeader(batches[pos:], 0)
		if err != nil || h.Size() > len(batches)-pos {
			return recs, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, pos, errors.Join(err, recordbatch.ErrShort))
		}
		if h.Attributes.Control() || h.LastOffset() < from {
			pos += h.Size()
			continue
		}
		// The bytes of a compressed batch's records live in the decoder's buffer until the
		// next batch: copied out into one buffer per batch, sized by the decompressed records
		// section, which bounds every key, value and header value in it.
		compressed := h.Attributes.Codec() != recordbatch.CodecNone
		var buf []byte
		_, err = dec.EachRecord(batches[pos:], func(h *recordbatch.Header, r *recordbatch.Record) bool {
			off := h.RecordOffset(r)
			if off < from {
				return true
			}
			if ts := h.RecordTimestamp(r); ts != lastTS {
				lastTime, lastTS = time.UnixMilli(ts), ts
			}
			if len(recs) == cap(recs) {
				recs = slices.Grow(recs, 1) // only records of no key and no value get here
			}
			// Field by field into the slab, every field set: a composite literal appended
			// would be copied with a bulk write barrier while the collector marks.
			recs = recs[:len(recs)+1]
			rec := &recs[len(recs)-1]
			rec.Offset, rec.Timestamp, rec.Topic, rec.Partition = off, lastTime, o.topic, o.partition
			if compressed {
				if buf == nil {
					buf = make([]byte, 0, dec.DecompressedSize())
				}
				rec.Key, buf = take(buf, r.Key)
				rec.Value, buf = take(buf, r.Value)
			} else {
				rec.Key, rec.Value = r.Key, r.Value // cap-limited by the parse
			}
			rec.Headers = nil
			if len(r.Headers) > 0 {
				start := len(hdrs)
				for _, hd := range r.Headers {
					v := hd.Value
					if compressed {
						v, buf = take(buf, hd.Value)
					}
					hdrs = append(hdrs, Header{Key: hd.Key, Value: v})
				}
				rec.Headers = hdrs[start:len(hdrs):len(hdrs)]
			}
			if o.epochs != nil {
				*o.epochs = append(*o.epochs, h.PartitionLeaderEpoch)
			}
			if o.maxBytes > 0 {
				taken += len(r.Key) + len(r.Value)
				full = taken >= o.maxBytes
			}
			return !full
		})
		if err != nil {
			return recs, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, pos, err)
		}
		pos += h.Size()
	}
	return recs, nil
}

// check returns ErrCorrupt when batches, which hold no record at or after from to decode, are not
// whole back-to-back batches; their records are not decoded (control batches, batches below
// from).
func (o *ownedDecode) check(batches []byte, from int64) error {
	_, err := decodeChecked(nil, batches, from, o.maxDecompressed, o.maxBytes)
	return err
}

// ownedRecord is one record read alone (ReadRecords of a few bytes) with the slice that returns
// it, in one allocation.
type ownedRecord struct {
	rec Record
	ptr [1]*Record
}

// set copies the record v of the batch h into o.rec: its key and value into one new buffer, its
// headers into a new slice. Called again (a read again after a truncation), it starts afresh.
func (o *ownedRecord) set(h *recordbatch.Header, v *recordbatch.RecordView) {
	r := &o.rec
	r.Offset = h.BaseOffset + int64(v.OffsetDelta)
	ts := h.BaseTimestamp + v.TimestampDelta
	if h.Attributes.LogAppendTime() {
		ts = h.MaxTimestamp // Kafka hands every record of a LogAppendTime batch its max timestamp
	}
	r.Timestamp = time.UnixMilli(ts)
	buf := make([]byte, 0, len(v.Key)+len(v.Value))
	r.Key, buf = take(buf, v.Key)
	r.Value, _ = take(buf, v.Value)
	r.Headers = nil
	if v.HeaderCount > 0 {
		r.Headers = make([]Header, v.HeaderCount)
		w := v.Headers()
		for i := range r.Headers {
			key, value, _ := w.Next() // ParseRecordView checked all of them
			r.Headers[i] = Header{Key: string(key), Value: bytes.Clone(value)}
		}
	}
}

// cloneRecord returns a copy of r that shares nothing with it: its key, value and header values
// in one new buffer.
func cloneRecord(r *Record) *Record {
	c := *r
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Value)
	}
	buf := make([]byte, 0, n)
	c.Key, buf = take(buf, r.Key)
	c.Value, buf = take(buf, r.Value)
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i].Key = h.Key
			c.Headers[i].Value, buf = take(buf, h.Value)
		}
	}
	return &c
}
