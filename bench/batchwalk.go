package main

import (
	"encoding/binary"
	"fmt"
)

// Walking Kafka RecordBatch v2 bytes, as this library's ReadBatches returns them (CRCs already
// verified), without copying: what a program that reads the stored batches does to reach each
// record's key and value. Only uncompressed batches are walked; the adapters append
// uncompressed.

// batchHeaderSize is the size of a RecordBatch v2 header.
const batchHeaderSize = 61

// batchError reports bytes that are not an uncompressed RecordBatch v2.
func batchError(format string, args ...any) error {
	return fmt.Errorf("not an uncompressed RecordBatch v2: "+format, args...)
}

// batchInfo is what a walk needs of a batch header.
type batchInfo struct {
	baseOffset int64
	size       int // whole batch, header included
	count      int
}

// parseBatch reads the header of the batch at the start of b.
func parseBatch(b []byte) (batchInfo, error) {
	if len(b) < batchHeaderSize {
		return batchInfo{}, batchError("%d bytes left", len(b))
	}
	length := int(int32(binary.BigEndian.Uint32(b[8:])))
	size := 12 + length
	if length < batchHeaderSize-12 || size > len(b) || b[16] != 2 {
		return batchInfo{}, batchError("length %d, magic %d", length, b[16])
	}
	attrs := binary.BigEndian.Uint16(b[21:])
	if attrs&7 != 0 {
		return batchInfo{}, batchError("compressed (codec %d)", attrs&7)
	}
	return batchInfo{
		baseOffset: int64(binary.BigEndian.Uint64(b)),
		size:       size,
		count:      int(int32(binary.BigEndian.Uint32(b[57:]))),
	}, nil
}

// walkBatch calls fn with the offset, key and value of every record of the batch at the start
// of b (views of b), and returns the batch's header.
func walkBatch(b []byte, fn func(offset int64, key, value []byte) error) (batchInfo, error) {
	h, err := parseBatch(b)
	if err != nil {
		return h, err
	}
	rec := b[batchHeaderSize:h.size]
	for range h.count {
		var delta int64
		var key, value []byte
		if delta, key, value, rec, err = nextRecord(rec); err != nil {
			return h, err
		}
		if err := fn(h.baseOffset+delta, key, value); err != nil {
			return h, err
		}
	}
	return h, nil
}

// nextRecord decodes the record at the start of rec: its offset delta, key and value (views of
// rec), and the bytes after it.
func nextRecord(rec []byte) (delta int64, key, value, rest []byte, err error) {
	length, n := binary.Varint(rec)
	if n <= 0 || length < 1 || int64(len(rec)-n) < length {
		return 0, nil, nil, nil, batchError("record length")
	}
	r := rec[n+1 : n+int(length)] // after the attributes byte
	rest = rec[n+int(length):]
	if _, n = binary.Varint(r); n <= 0 { // timestamp delta
		return 0, nil, nil, nil, batchError("timestamp delta")
	}
	r = r[n:]
	if delta, n = binary.Varint(r); n <= 0 {
		return 0, nil, nil, nil, batchError("offset delta")
	}
	if key, r, err = varBytes(r[n:]); err != nil {
		return 0, nil, nil, nil, err
	}
	if value, _, err = varBytes(r); err != nil {
		return 0, nil, nil, nil, err
	}
	return delta, key, value, rest, nil
}

// varBytes reads a varint length (-1 for null) and that many bytes.
func varBytes(b []byte) (field, rest []byte, err error) {
	n, w := binary.Varint(b)
	if w <= 0 || n < -1 || int64(len(b)-w) < n {
		return nil, nil, batchError("field length")
	}
	if n < 0 {
		return nil, b[w:], nil
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

// findInBatch returns the key and value of the record at offset in the batches b (views of b).
func findInBatch(b []byte, offset int64) (key, value []byte, err error) {
	for len(b) > 0 {
		h, err := parseBatch(b)
		if err != nil {
			return nil, nil, err
		}
		rec := b[batchHeaderSize:h.size]
		for range h.count {
			var delta int64
			if delta, key, value, rec, err = nextRecord(rec); err != nil {
				return nil, nil, err
			}
			if h.baseOffset+delta == offset {
				return key, value, nil
			}
		}
		b = b[h.size:]
	}
	return nil, nil, fmt.Errorf("offset %d not in the batches read", offset)
}
