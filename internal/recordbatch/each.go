package recordbatch

import "fmt"

// EachRecord calls fn with every record of the batch at the start of b, in order, parsing each
// just before it is delivered: the one-pass path for a reader whose bytes were already checked
// (a log's read verified the CRC over these same bytes), where Decode would check the CRC again
// and parse every record twice. The header is parsed (magic, length, sizes against d.Limits) but
// the CRC is not compared. A compressed batch is decompressed into d's buffer first.
//
// fn's record, its Key, Value and header values alias b or d's buffer, and its Headers slice is
// reused: all are valid only until fn returns. Returning false from fn stops the iteration with
// a nil error. Returns the header, and ErrCorrupt (or ErrShort, ErrTooLarge) at the first thing
// wrong: a malformed record, offset deltas that do not increase or pass LastOffsetDelta, a count
// other than RecordCount, or bytes after the last record; records before it were delivered.
func (d *Decoder) EachRecord(b []byte, fn func(h *Header, r *Record) bool) (Header, error) {
	h, err := ParseHeader(b, d.Limits.batchSize())
	if err != nil {
		return h, err
	}
	if len(b) < h.Size() {
		return h, ErrShort
	}
	raw := b[HeaderSize:h.Size()]
	if codec := h.Attributes.Codec(); codec != CodecNone {
		out, err := d.dec.decompress(d.buf[:0], codec, raw, d.Limits.decompressedSize())
		d.buf = out
		if err != nil {
			return h, err
		}
		raw = out
	}
	var a headerArena
	var r Record
	prev := int32(-1)
	p := 0
	for i := 0; i < int(h.RecordCount); i++ {
		if p == len(raw) {
			return h, fmt.Errorf("%w: record count %d, only %d records present", ErrCorrupt, h.RecordCount, i)
		}
		a.hdrs = a.hdrs[:0]
		n, err := parseRecord(raw[p:], i, &r, &a)
		if err != nil {
			return h, err
		}
		if r.OffsetDelta <= prev || r.OffsetDelta > h.LastOffsetDelta {
			return h, fmt.Errorf("%w: record %d: offset delta %d after %d, last offset delta %d", ErrCorrupt, i, r.OffsetDelta, prev, h.LastOffsetDelta)
		}
		prev = r.OffsetDelta
		p += n
		if !fn(&h, &r) {
			return h, nil
		}
	}
	if p != len(raw) {
		return h, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(raw)-p, h.RecordCount)
	}
	return h, nil
}
