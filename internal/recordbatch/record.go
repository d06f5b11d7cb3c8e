package recordbatch

import (
	"fmt"
	"math"
	"strings"
)

// RecordHeader is one record header (Kafka's RecordHeader). A nil Value is a null value (length
// -1), an empty non-nil Value has length 0. Header names may repeat within a record and their
// order is kept.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record in Kafka's DefaultRecord (v2) form, with offsets and timestamps relative
// to its batch: its offset is the batch's BaseOffset+OffsetDelta, its timestamp (ms) the batch's
// BaseTimestamp+TimestampDelta, or the batch's MaxTimestamp under LogAppendTime (see
// Header.RecordOffset and Header.RecordTimestamp).
//
// A nil Key or Value is null (written as length -1); an empty non-nil one has length 0. Kafka
// treats the two differently: a null value is a tombstone for log compaction.
//
// On the wire a record is: length varint (bytes after it), attributes int8 (unused by Kafka,
// kept as is), timestampDelta varlong, offsetDelta varint, keyLength varint, key,
// valueLength varint, value, headerCount varint, then per header keyLength varint, key,
// valueLength varint, value; all varints zigzag-encoded.
type Record struct {
	Attributes     int8
	TimestampDelta int64 // milliseconds from the batch's BaseTimestamp; may be negative
	OffsetDelta    int32 // from the batch's BaseOffset
	Key, Value     []byte
	Headers        []RecordHeader
}

// minRecordSize is the smallest record on the wire: a one-byte length and six one-byte fields
// (attributes, timestampDelta, offsetDelta, keyLength, valueLength, headerCount).
const minRecordSize = 7

// nullableSize is the encoded size of a length-prefixed, nullable byte string.
func nullableSize(b []byte) int64 {
	if b == nil {
		return 1 // varint -1
	}
	return int64(sizeVarint(int32(len(b)))) + int64(len(b))
}

// recordBodySize returns the size of a record after its length varint, or -1 when a key,
// value, header or the whole record is longer than the int32 lengths the format can express.
func recordBodySize(tsDelta int64, offsetDelta int32, key, value []byte, headers []RecordHeader) int64 {
	n, _ := recordSizes(tsDelta, offsetDelta, key, value, headers)
	return n
}

// recordSizes returns recordBodySize and RecordSizeBound of a record in one pass over its fields:
// the encoder's hot path sizes every record both ways.
func recordSizes(tsDelta int64, offsetDelta int32, key, value []byte, headers []RecordHeader) (body int64, bound int) {
	bound = 5 + 1 + 10 + 5 + 5 + len(key) + 5 + len(value) + 5
	if len(key) > math.MaxInt32 || len(value) > math.MaxInt32 || len(headers) > math.MaxInt32 {
		return -1, bound
	}
	n := 1 + int64(sizeVarlong(tsDelta)) + int64(sizeVarint(offsetDelta)) +
		nullableSize(key) + nullableSize(value) + int64(sizeVarint(int32(len(headers))))
	tooLong := false
	for i := range headers {
		h := &headers[i]
		bound += 5 + len(h.Key) + 5 + len(h.Value)
		if len(h.Key) > math.MaxInt32 || len(h.Value) > math.MaxInt32 {
			tooLong = true // the bound still counts every header
			continue
		}
		n += int64(sizeVarint(int32(len(h.Key)))) + int64(len(h.Key)) + nullableSize(h.Value)
	}
	if tooLong || n > math.MaxInt32 {
		return -1, bound
	}
	return n, bound
}

// putNullable writes a length-prefixed, nullable byte string at b[0:] and returns its size.
func putNullable(b, v []byte) int {
	if v == nil {
		b[0] = 1 // varint -1
		return 1
	}
	n := putVarint(b, int32(len(v)))
	return n + copy(b[n:], v)
}

// putRecord writes one record whose body size (from recordBodySize) is size into b, which must
// hold exactly sizeVarint(size)+size bytes. It writes by index rather than appending: the encode
// hot path, measurably faster than growing a slice field by field.
func putRecord(b []byte, size int32, attrs int8, tsDelta int64, offsetDelta int32, key, value []byte, headers []RecordHeader) {
	p := putVarint(b, size)
	b[p] = byte(attrs)
	p++
	p += putVarlong(b[p:], tsDelta)
	p += putVarint(b[p:], offsetDelta)
	p += putNullable(b[p:], key)
	p += putNullable(b[p:], value)
	p += putVarint(b[p:], int32(len(headers)))
	for i := range headers {
		h := &headers[i]
		p += putVarint(b[p:], int32(len(h.Key)))
		p += copy(b[p:], h.Key)
		p += putNullable(b[p:], h.Value)
	}
}

// headerArena holds the headers of the records of one batch, so that decoding a batch costs
// two allocations for all its headers rather than two per record. Records' Headers are
// capacity-limited windows of hdrs; keys are substrings of one string grown in keys. An arena
// must not be copied once used (strings.Builder forbids it).
type headerArena struct {
	countOnly bool // only count headers and key bytes, keep nothing
	n         int  // headers seen
	keyBytes  int  // header key bytes seen
	hdrs      []RecordHeader
	keys      strings.Builder
}

// reserve sizes the arena for n headers whose keys total keyBytes, as counted by a scan.
func (a *headerArena) reserve(n, keyBytes int) {
	if n > 0 && cap(a.hdrs) == 0 {
		a.hdrs = make([]RecordHeader, 0, n)
	}
	if keyBytes > 0 && a.keys.Cap() == 0 {
		a.keys.Grow(keyBytes)
	}
}

func (a *headerArena) key(b []byte) string {
	a.keys.Write(b)
	s := a.keys.String() // aliases the builder's bytes, which it never rewrites
	return s[len(s)-len(b):]
}

func recordErr(idx int, format string, args ...any) error {
	return fmt.Errorf("%w: record %d: %s", ErrCorrupt, idx, fmt.Sprintf(format, args...))
}

func varintErr(idx int, field string, n int) error {
	if n == 0 {
		return recordErr(idx, "%s varint runs past the record", field)
	}
	return recordErr(idx, "%s varint overflows", field)
}

// readNullable reads a length-prefixed byte string at body[p:]: nil for length -1. The result
// aliases body with its capacity cut to its length, so appending to it cannot overwrite the
// bytes that follow. field names it in errors, as header hdr's when hdr >= 0.
func readNullable(body []byte, p, idx int, field string, hdr int) ([]byte, int, error) {
	l, n := readVarint(body[p:])
	if n <= 0 {
		return nil, p, nullableErr(idx, field, hdr, n, 0, 0)
	}
	p += n
	if l == -1 {
		return nil, p, nil
	}
	if l < -1 || int(l) > len(body)-p {
		return nil, p, nullableErr(idx, field, hdr, 1, l, len(body)-p)
	}
	end := p + int(l)
	return body[p:end:end], end, nil
}

// nullableErr describes readNullable's failures, out of its way so it stays small and the
// success path formats nothing: n <= 0 is a bad length varint (readVarint's n), otherwise
// length l is out of range with left bytes remaining.
func nullableErr(idx int, field string, hdr, n int, l int32, left int) error {
	if hdr >= 0 {
		field = fmt.Sprintf("header %d %s", hdr, field)
	}
	switch {
	case n <= 0:
		return varintErr(idx, field+" length", n)
	case l < -1:
		// Kafka reads any negative length as null; no writer produces anything but -1, and
		// accepting other values would make re-encoding change the bytes.
		return recordErr(idx, "%s length %d", field, l)
	}
	return recordErr(idx, "%s length %d exceeds %d bytes left", field, l, left)
}

// parseRecord decodes the record at the start of b into r and returns the bytes it occupies.
// idx numbers the record in errors. Headers go into a (a.countOnly: counted, not kept).
// Key, Value and header values alias b.
//
// Returns ErrCorrupt when a varint is truncated or overflows, a length is negative (other than
// -1 for nullable fields) or runs past the record, or the fields do not fill the record's
// length exactly (Kafka's "Invalid record size" InvalidRecordException).
func parseRecord(b []byte, idx int, r *Record, a *headerArena) (int, error) {
	var v RecordView
	size, err := ParseRecordView(b, idx, &v)
	if err != nil {
		return 0, err
	}
	r.Attributes, r.TimestampDelta, r.OffsetDelta, r.Key, r.Value = v.Attributes, v.TimestampDelta, v.OffsetDelta, v.Key, v.Value
	r.Headers = nil
	if v.HeaderCount == 0 {
		return size, nil
	}
	start := len(a.hdrs)
	w := v.Headers()
	for key, value, ok := w.Next(); ok; key, value, ok = w.Next() {
		if a.countOnly {
			a.n++
			a.keyBytes += len(key)
			continue
		}
		a.hdrs = append(a.hdrs, RecordHeader{Key: a.key(key), Value: value})
	}
	if !a.countOnly {
		r.Headers = a.hdrs[start:len(a.hdrs):len(a.hdrs)]
	}
	return size, nil
}
