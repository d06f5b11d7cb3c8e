package cleaner

import (
	"errors"
	"fmt"
	"io"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// ReadChunk is the read-ahead of a BatchReader, Kafka's log.cleaner.io.buffer.size (512 KiB).
const ReadChunk = 512 << 10

// BatchReader reads the whole batches of a .log file between two positions in order, through
// one buffer reused from read to read (a clean's sequential read of a segment). Only headers are
// checked (framing, length within the bound); the caller decodes what it needs.
type BatchReader struct {
	r          io.ReaderAt
	pos, limit int64
	maxBatch   int
	buf        []byte
	bufAt      int64 // the file position of buf[0]
	n          int   // valid bytes in buf
}

// NewBatchReader returns a reader of the batches of r from pos to limit. maxBatch bounds a
// batch's length (its header's length field is checked against it before the buffer grows to
// it); buf is a buffer to reuse (nil: one of ReadChunk bytes is made).
func NewBatchReader(r io.ReaderAt, pos, limit int64, maxBatch int, buf []byte) *BatchReader {
	if cap(buf) < ReadChunk {
		buf = make([]byte, ReadChunk)
	}
	return &BatchReader{r: r, pos: pos, limit: limit, maxBatch: maxBatch, buf: buf[:cap(buf)], bufAt: pos}
}

// Buffer returns the reader's buffer, for the next NewBatchReader.
func (br *BatchReader) Buffer() []byte { return br.buf }

// fill makes buf hold at least need bytes from pos, reading ahead up to its capacity or limit.
func (br *BatchReader) fill(need int) error {
	if br.pos >= br.bufAt && br.pos+int64(need) <= br.bufAt+int64(br.n) {
		return nil
	}
	if need > len(br.buf) {
		br.buf = make([]byte, need)
	}
	n := int(min(int64(len(br.buf)), br.limit-br.pos))
	got, err := br.r.ReadAt(br.buf[:n], br.pos)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	br.bufAt, br.n = br.pos, n
	return nil
}

// Next returns the next batch and its position. The bytes are valid until the next call. io.EOF
// at limit; an error wrapping recordbatch.ErrCorrupt, naming the position, for a header that does
// not parse, a length past maxBatch, or a batch running past limit; the reader's errors
// otherwise.
func (br *BatchReader) Next() (batch []byte, pos int64, err error) {
	pos = br.pos
	if pos >= br.limit {
		return nil, pos, io.EOF
	}
	if br.limit-pos < recordbatch.HeaderSize {
		return nil, pos, fmt.Errorf("%w: %d bytes at position %d, less than a batch header", recordbatch.ErrCorrupt, br.limit-pos, pos)
	}
	if err := br.fill(recordbatch.HeaderSize); err != nil {
		return nil, pos, err
	}
	at := int(pos - br.bufAt)
	h, err := recordbatch.ParseHeader(br.buf[at:at+recordbatch.HeaderSize], br.maxBatch)
	if err != nil {
		return nil, pos, fmt.Errorf("batch at position %d: %w", pos, err)
	}
	size := h.Size()
	if int64(size) > br.limit-pos {
		return nil, pos, fmt.Errorf("%w: batch at position %d of %d bytes runs past %d", recordbatch.ErrCorrupt, pos, size, br.limit)
	}
	if err := br.fill(size); err != nil {
		return nil, pos, err
	}
	at = int(pos - br.bufAt)
	br.pos += int64(size)
	return br.buf[at : at+size], pos, nil
}
