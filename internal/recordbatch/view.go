package recordbatch

import "fmt"

// This file is the record-at-a-time access a reader of one record needs: find a batch's records
// section (decompressed when needed), step over records by their length prefix, and read one
// record's fields in place, without the per-batch arenas Decode and EachRecord build.

// RecordsSection parses the header of the batch at the start of b and returns it with the batch's
// records section: RecordCount records back to back, aliasing b when the batch is uncompressed,
// or decompressed into d's buffer (valid until d's next use) when it is not. The CRC is not
// compared: the caller checks it (Check) when it has not already. Errors as for
// Decoder.EachRecord's header and decompression.
func (d *Decoder) RecordsSection(b []byte) (Header, []byte, error) {
	h, err := ParseHeader(b, d.Limits.batchSize())
	if err != nil {
		return h, nil, err
	}
	if len(b) < h.Size() {
		return h, nil, ErrShort
	}
	raw := b[HeaderSize:h.Size()]
	if codec := h.Attributes.Codec(); codec != CodecNone {
		out, err := d.dec.decompress(d.buf[:0], codec, raw, d.Limits.decompressedSize())
		d.buf = out
		if err != nil {
			return h, nil, err
		}
		raw = out
	}
	return h, raw, nil
}

// PeekRecord reads the framing of the record at the start of b, a records section from some
// record on: its offset delta and the bytes the whole record occupies (length prefix included),
// without parsing its key, value or headers. idx numbers the record in errors. ErrCorrupt when
// the length varint is bad, the length runs past b or is too short to hold the fields up to the
// offset delta, or a varint before it is bad.
func PeekRecord(b []byte, idx int) (offsetDelta int32, size int, err error) {
	length, n := readVarint(b)
	if n <= 0 {
		return 0, 0, varintErr(idx, "length", n)
	}
	if length < 0 || int(length) > len(b)-n {
		return 0, 0, recordErr(idx, "length %d exceeds %d bytes left", length, len(b)-n)
	}
	size = n + int(length)
	body := b[n:size:size]
	if len(body) == 0 {
		return 0, 0, recordErr(idx, "empty")
	}
	p := 1 // attributes
	_, m := readVarlong(body[p:])
	if m <= 0 {
		return 0, 0, varintErr(idx, "timestamp delta", m)
	}
	p += m
	offsetDelta, m = readVarint(body[p:])
	if m <= 0 {
		return 0, 0, varintErr(idx, "offset delta", m)
	}
	return offsetDelta, size, nil
}

// SkipRecord returns the bytes the record at the start of b occupies (length prefix included),
// reading only its length: the step of a walk over records whose framing was checked before.
// idx numbers the record in errors. ErrCorrupt when the length varint is bad, the length is
// below the smallest record body or runs past b.
func SkipRecord(b []byte, idx int) (int, error) {
	length, n := readVarint(b)
	if n <= 0 {
		return 0, varintErr(idx, "length", n)
	}
	if length < minRecordSize-1 || int(length) > len(b)-n {
		return 0, recordErr(idx, "length %d with %d bytes left", length, len(b)-n)
	}
	return n + int(length), nil
}

// RecordView is one record read in place: every byte slice aliases the records section it was
// read from, capacity-limited to its length. A nil Key or Value is null. Header keys are bytes
// rather than strings (a string would be a copy); Headers walks them.
type RecordView struct {
	Attributes     int8
	TimestampDelta int64 // milliseconds from the batch's BaseTimestamp
	OffsetDelta    int32 // from the batch's BaseOffset
	Key, Value     []byte
	HeaderCount    int
	headers        []byte // the encoded headers, checked by ParseRecordView
}

// ParseRecordView reads the record at the start of b into v and returns the bytes it occupies,
// with every check parseRecord (and so Decode) makes: varints, lengths within the record, header
// count bounded by the bytes present, header keys non-null, and fields filling the record's
// length exactly. idx numbers the record in errors. Returns ErrCorrupt for any failure, leaving
// v undefined.
func ParseRecordView(b []byte, idx int, v *RecordView) (int, error) {
	length, n := readVarint(b)
	if n <= 0 {
		return 0, varintErr(idx, "length", n)
	}
	if length < 0 || int(length) > len(b)-n {
		return 0, recordErr(idx, "length %d exceeds %d bytes left", length, len(b)-n)
	}
	size := n + int(length)
	body := b[n:size:size]
	if len(body) == 0 {
		return 0, recordErr(idx, "empty")
	}
	v.Attributes = int8(body[0])
	p := 1
	if v.TimestampDelta, n = readVarlong(body[p:]); n <= 0 {
		return 0, varintErr(idx, "timestamp delta", n)
	}
	p += n
	if v.OffsetDelta, n = readVarint(body[p:]); n <= 0 {
		return 0, varintErr(idx, "offset delta", n)
	}
	p += n
	var err error
	if v.Key, p, err = readNullable(body, p, idx, "key", -1); err != nil {
		return 0, err
	}
	if v.Value, p, err = readNullable(body, p, idx, "value", -1); err != nil {
		return 0, err
	}
	count, n := readVarint(body[p:])
	if n <= 0 {
		return 0, varintErr(idx, "header count", n)
	}
	p += n
	// Each header takes at least two bytes (key and value lengths): bound the count by the bytes
	// present before anything is sized by it.
	if count < 0 || int(count) > (len(body)-p)/2 {
		return 0, recordErr(idx, "header count %d with %d bytes left", count, len(body)-p)
	}
	start := p
	for j := 0; j < int(count); j++ {
		kl, n := readVarint(body[p:])
		if n <= 0 {
			return 0, varintErr(idx, fmt.Sprintf("header %d key length", j), n)
		}
		p += n
		if kl < 0 || int(kl) > len(body)-p {
			return 0, recordErr(idx, "header %d key length %d with %d bytes left", j, kl, len(body)-p)
		}
		p += int(kl)
		if _, p, err = readNullable(body, p, idx, "value", j); err != nil {
			return 0, err
		}
	}
	if p != len(body) {
		return 0, recordErr(idx, "%d bytes left after its fields in a %d-byte record", len(body)-p, len(body))
	}
	v.HeaderCount = int(count)
	v.headers = body[start:p:p]
	return size, nil
}

// HeaderWalk steps through the headers of a RecordView; the zero value has none.
type HeaderWalk struct {
	b    []byte
	left int
}

// Headers returns a walk over v's headers, in order.
func (v *RecordView) Headers() HeaderWalk { return HeaderWalk{b: v.headers, left: v.HeaderCount} }

// Next returns the next header's key and value (nil for a null value), aliasing the record, and
// false when none is left. ParseRecordView checked the bytes; Next still stops, rather than
// reading out of bounds, at anything malformed.
func (w *HeaderWalk) Next() (key, value []byte, ok bool) {
	if w.left <= 0 {
		return nil, nil, false
	}
	kl, n := readVarint(w.b)
	if n <= 0 || kl < 0 || int(kl) > len(w.b)-n {
		w.left = 0
		return nil, nil, false
	}
	key = w.b[n : n+int(kl) : n+int(kl)]
	value, p, err := readNullable(w.b, n+int(kl), 0, "value", 0)
	if err != nil {
		w.left = 0
		return nil, nil, false
	}
	w.b = w.b[p:]
	w.left--
	return key, value, true
}
