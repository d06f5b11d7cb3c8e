package recordbatch

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"
)

// DefaultMaxMessageBytes is Kafka's default max.message.bytes: the largest batch, LogOverhead
// included, that a broker accepts (1 MiB plus the 12-byte log overhead).
const DefaultMaxMessageBytes = 1048588

// Limits bound what decoding accepts. A zero field means DefaultMaxMessageBytes; a negative one
// means no limit beyond the format's (math.MaxInt32 bytes).
type Limits struct {
	// MaxBatchSize bounds a batch's size in bytes, LogOverhead included, like Kafka's
	// max.message.bytes.
	MaxBatchSize int
	// MaxDecompressedSize bounds the bytes a compressed batch's records decompress to.
	MaxDecompressedSize int
}

func limitOrDefault(n int) int {
	switch {
	case n == 0:
		return DefaultMaxMessageBytes
	case n < 0 || n > math.MaxInt32:
		return math.MaxInt32
	}
	return n
}

// batchSize is the limit in ParseHeader's terms, where 0 means none.
func (l Limits) batchSize() int {
	if l.MaxBatchSize < 0 {
		return 0
	}
	return limitOrDefault(l.MaxBatchSize)
}

func (l Limits) decompressedSize() int { return limitOrDefault(l.MaxDecompressedSize) }

// Batch is a decoded batch whose CRC, header and every record's framing have been checked: its
// header, and its records section uncompressed, from which records are read without copying.
// Obtain one from Decode or Decoder.Decode; the zero Batch has no records.
type Batch struct {
	Header
	records        []byte // RecordCount records, back to back, framing checked
	headers        int    // record headers in the batch
	headerKeyBytes int    // bytes of all record header keys
	// maxTimestamp is the largest of the records' timestamps (BaseTimestamp plus each
	// TimestampDelta), found by the scan; math.MinInt64 for no records.
	maxTimestamp int64
}

// RecordBytes returns the batch's records section uncompressed: RecordCount records back to
// back, as Kafka stores them inside the batch. It aliases the decoded input or the decompressed
// buffer, with Decode's lifetime.
func (b Batch) RecordBytes() []byte { return b.records }

// Records returns an iterator over the batch's records in order. It allocates nothing per
// record: Key, Value and header values alias the batch's bytes (see Decode and Decoder.Decode
// for how long those stay valid), each capacity-limited so appending to one cannot overwrite
// the next; header keys and Headers slices come from two allocations per iteration, none when
// the batch has no headers, and belong to the caller. Since Decode checked every record, the
// iteration cannot fail, so it yields no errors.
func (b Batch) Records() iter.Seq[Record] {
	return func(yield func(Record) bool) {
		var a headerArena
		a.reserve(b.headers, b.headerKeyBytes)
		raw := b.records
		for i := 0; i < int(b.RecordCount) && len(raw) > 0; i++ {
			var r Record
			n, err := parseRecord(raw, i, &r, &a)
			if err != nil {
				return // unreachable for a batch from Decode, whose records were all parsed
			}
			raw = raw[n:]
			if !yield(r) {
				return
			}
		}
	}
}

// AppendRecords appends the batch's records to dst and returns the extended slice, with
// Records' aliasing rules. It allocates at most dst's growth and the headers of the batch.
func (b Batch) AppendRecords(dst []Record) []Record {
	dst = slices.Grow(dst, int(b.RecordCount))
	var a headerArena
	a.reserve(b.headers, b.headerKeyBytes)
	raw := b.records
	for i := 0; i < int(b.RecordCount) && len(raw) > 0; i++ {
		var r Record
		n, err := parseRecord(raw, i, &r, &a)
		if err != nil {
			break // unreachable for a batch from Decode
		}
		raw = raw[n:]
		dst = append(dst, r)
	}
	return dst
}

// RecordOffset returns r's absolute offset: BaseOffset + r.OffsetDelta.
func (h *Header) RecordOffset(r *Record) int64 { return h.BaseOffset + int64(r.OffsetDelta) }

// RecordTimestamp returns r's timestamp in ms since the Unix epoch: BaseTimestamp +
// r.TimestampDelta, or MaxTimestamp when the batch is LogAppendTime, whose records' own
// timestamps Kafka ignores (DefaultRecordBatch hands every record the batch's max timestamp).
func (h *Header) RecordTimestamp(r *Record) int64 {
	if h.Attributes.LogAppendTime() {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// Decoder decodes batches reusing its decompression buffer and decompressors, so that
// decoding compressed batches allocates nothing once warmed up. The zero value is ready to use
// with default limits. A Decoder is not safe for concurrent use.
type Decoder struct {
	Limits Limits
	buf    []byte
	dec    decompressor
}

// Decode decodes the batch at the start of b as the package's Decode does, bytes after it being
// ignored, except that a compressed batch's records are decompressed into the Decoder's own
// buffer: records from such a batch stay valid until the next Decode on d; records from an
// uncompressed one alias b.
func (d *Decoder) Decode(b []byte) (Batch, error) {
	return decode(b, d.Limits, &d.dec, &d.buf)
}

// DecompressedSize returns the size in bytes of the records section the last Decode or
// EachRecord on d decompressed: during EachRecord's fn, that of the batch being walked. It is 0
// before the first compressed batch, and stays that of the last compressed batch while
// uncompressed ones are read.
func (d *Decoder) DecompressedSize() int { return len(d.buf) }

// scratch is what Decode and Validate borrow from a pool: decompressors are costly to create
// (zstd's most of all), so they are shared rather than made per call.
type scratch struct {
	dec decompressor
	buf []byte
}

// maxPooledBuffer bounds the decompression buffer a pooled scratch keeps, so one huge batch
// does not pin its memory in the pool.
const maxPooledBuffer = 4 << 20

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.buf) > maxPooledBuffer {
		s.buf = nil
	}
	scratchPool.Put(s)
}

// Decode checks and decodes the batch at the start of b; bytes after it (h.Size() onward) are
// ignored, so b may run on into the next batch of a log. Records of an uncompressed batch alias
// b and stay valid while b is unmodified; a compressed batch's records are decompressed into a
// new buffer that the Batch owns.
//
// Returns ErrShort when b is shorter than the header or than the batch's length says (at a
// log's tail, a torn write); ErrTooLarge when the batch exceeds lim.MaxBatchSize (an error that
// also matches ErrCorrupt, as Kafka's log reader treats it) or its records decompress to more
// than lim.MaxDecompressedSize; and ErrCorrupt for a bad magic, length or CRC, an unknown codec,
// a compressed stream its decoder rejects, a malformed record, a record count other than
// RecordCount, offset deltas that are negative, not increasing or above LastOffsetDelta, or
// bytes after the last record.
func Decode(b []byte, lim Limits) (Batch, error) {
	s := getScratch()
	defer putScratch(s)
	batch, err := decode(b, lim, &s.dec, &s.buf)
	if err != nil || batch.Attributes.Codec() == CodecNone {
		return batch, err
	}
	batch.records = slices.Clone(batch.records)
	return batch, nil
}

// Validate runs on the batch at the start of b the checks a Kafka broker runs on a batch a
// producer sends (LogValidator with a client origin), and returns its header. Beyond Decode's
// checks (CRC, sizes against lim, every record's framing, the count) it returns ErrCorrupt,
// as Kafka's InvalidRecordException, when the batch has no records, when RecordCount is not
// LastOffsetDelta+1 (producers number records consecutively from 0), when it is a control batch
// (only the transaction coordinator writes those), or when it has a producer id but a negative
// base sequence, or when a CreateTime batch's MaxTimestamp is not its records' largest timestamp.
// Checks that depend on topic configuration (timestamps against
// message.timestamp.*.ms, keys on compacted topics) are the caller's.
func Validate(b []byte, lim Limits) (Header, error) {
	s := getScratch()
	defer putScratch(s)
	batch, err := decode(b, lim, &s.dec, &s.buf)
	if err != nil {
		return Header{}, err
	}
	h := batch.Header
	switch {
	case h.RecordCount == 0:
		return h, fmt.Errorf("%w: a producer batch with no records", ErrCorrupt)
	case int64(h.LastOffsetDelta)+1 != int64(h.RecordCount):
		return h, fmt.Errorf("%w: last offset delta %d inconsistent with record count %d", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	case h.Attributes.Control():
		return h, fmt.Errorf("%w: control batch from a producer", ErrCorrupt)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return h, fmt.Errorf("%w: base sequence %d with producer id %d", ErrCorrupt, h.BaseSequence, h.ProducerID)
	}
	if !h.Attributes.LogAppendTime() {
		// The header's MaxTimestamp is what retention and the time index trust; a header that
		// understates its records' times would let a future record past every check. The scan
		// that checked the records' framing found their largest timestamp.
		if maxTs := batch.maxTimestamp; maxTs != h.MaxTimestamp {
			return h, fmt.Errorf("%w: max timestamp %d in the header, %d in the records", ErrCorrupt, h.MaxTimestamp, maxTs)
		}
	}
	return h, nil
}

// decode checks the batch at the start of b, decompressing into *buf (whose capacity is kept for
// reuse even on failure), and scans its records.
func decode(b []byte, lim Limits, dec *decompressor, buf *[]byte) (Batch, error) {
	h, err := Check(b, lim.batchSize())
	if err != nil {
		return Batch{}, err
	}
	raw := b[HeaderSize:h.Size()]
	if codec := h.Attributes.Codec(); codec != CodecNone {
		out, err := dec.decompress((*buf)[:0], codec, raw, lim.decompressedSize())
		*buf = out
		if err != nil {
			return Batch{}, err
		}
		raw = out
	}
	headers, keyBytes, maxTs, err := scanRecords(&h, raw)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Header: h, records: raw, headers: headers, headerKeyBytes: keyBytes, maxTimestamp: maxTs}, nil
}

// scanRecords parses every record of raw without keeping any, checking the framing, the count
// against h.RecordCount, the offset deltas against each other and h.LastOffsetDelta, and that
// nothing follows the last record. It returns the number of record headers and their key bytes,
// so iteration can size its allocations once, and the records' largest timestamp
// (h.BaseTimestamp plus a TimestampDelta; math.MinInt64 for none), which Validate checks.
func scanRecords(h *Header, raw []byte) (headers, keyBytes int, maxTimestamp int64, err error) {
	// Bound the count by the bytes present first, for a clearer error than the record that runs
	// out; nothing is sized by it either way.
	if int64(h.RecordCount) > int64(len(raw)/minRecordSize) {
		return 0, 0, 0, fmt.Errorf("%w: record count %d cannot fit in %d bytes of records", ErrCorrupt, h.RecordCount, len(raw))
	}
	a := headerArena{countOnly: true}
	var r Record
	p := 0
	prev := int32(-1)
	maxTimestamp = math.MinInt64
	for i := 0; i < int(h.RecordCount); i++ {
		if p == len(raw) {
			return 0, 0, 0, fmt.Errorf("%w: record count %d, only %d records present", ErrCorrupt, h.RecordCount, i)
		}
		n, err := parseRecord(raw[p:], i, &r, &a)
		if err != nil {
			return 0, 0, 0, err
		}
		switch {
		case r.OffsetDelta <= prev:
			return 0, 0, 0, fmt.Errorf("%w: record %d: offset delta %d after %d", ErrCorrupt, i, r.OffsetDelta, prev)
		case r.OffsetDelta > h.LastOffsetDelta:
			return 0, 0, 0, fmt.Errorf("%w: record %d: offset delta %d above the batch's last offset delta %d", ErrCorrupt, i, r.OffsetDelta, h.LastOffsetDelta)
		}
		prev = r.OffsetDelta
		maxTimestamp = max(maxTimestamp, h.BaseTimestamp+r.TimestampDelta)
		p += n
	}
	if p != len(raw) {
		// Kafka: "Incorrect declared batch size, records still remaining in file".
		return 0, 0, 0, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(raw)-p, h.RecordCount)
	}
	return a.n, a.keyBytes, maxTimestamp, nil
}
