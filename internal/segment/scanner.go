package segment

import (
	"errors"
	"io"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// scanner walks the batches of a segment file from a position up to a limit, reading ahead in
// chunks so that a walk over small batches costs few system calls. It trusts nothing: every
// length is checked against the limit and maxBatch before a byte is read for it.
type scanner struct {
	file     fsys.File
	pos      int64 // position of the next batch
	limit    int64 // end of the bytes that may be read
	maxBatch int   // bound on a batch's size
	chunk    int   // read-ahead size

	buf      []byte // bytes [bufStart, bufStart+len(buf)) of the file
	bufStart int64
}

func newScanner(f fsys.File, pos, limit int64, maxBatch, chunk int, buf []byte) *scanner {
	return &scanner{file: f, pos: pos, limit: limit, maxBatch: maxBatch, chunk: chunk, buf: buf[:0], bufStart: pos}
}

// fill makes the buffer hold at least n bytes starting at sc.pos, which the caller has checked
// lie below the limit.
func (sc *scanner) fill(n int) error {
	if sc.pos >= sc.bufStart && sc.pos+int64(n) <= sc.bufStart+int64(len(sc.buf)) {
		return nil
	}
	want := int64(max(n, sc.chunk))
	want = min(want, sc.limit-sc.pos)
	if int64(cap(sc.buf)) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	sc.bufStart = sc.pos
	m, err := sc.file.ReadAt(sc.buf, sc.pos)
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		sc.buf = sc.buf[:m]
		return err
	}
	sc.buf = sc.buf[:m]
	return nil
}

// header parses the header of the batch at sc.pos without moving. Errors: io.EOF at the limit,
// recordbatch.ErrShort when a header or the batch's length runs past the limit (a torn tail),
// recordbatch.ErrCorrupt for a malformed header, or the file's read error.
func (sc *scanner) header() (recordbatch.Header, error) {
	left := sc.limit - sc.pos
	if left <= 0 {
		return recordbatch.Header{}, io.EOF
	}
	if left < recordbatch.HeaderSize {
		return recordbatch.Header{}, recordbatch.ErrShort
	}
	if err := sc.fill(recordbatch.HeaderSize); err != nil {
		return recordbatch.Header{}, err
	}
	off := sc.pos - sc.bufStart
	h, err := recordbatch.ParseHeader(sc.buf[off:], sc.maxBatch)
	if err != nil {
		return h, err
	}
	if int64(h.Size()) > left {
		return h, recordbatch.ErrShort
	}
	return h, nil
}

// batch returns the bytes of the batch at sc.pos, whose header h came from header(), with its
// CRC verified. The bytes alias the scanner's buffer until the next call.
func (sc *scanner) batch(h recordbatch.Header) ([]byte, error) {
	if err := sc.fill(h.Size()); err != nil {
		return nil, err
	}
	off := sc.pos - sc.bufStart
	b := sc.buf[off : off+int64(h.Size())]
	if _, err := recordbatch.Check(b, sc.maxBatch); err != nil {
		return b, err
	}
	return b, nil
}

// skip moves past the batch at sc.pos.
func (sc *scanner) skip(h recordbatch.Header) { sc.pos += int64(h.Size()) }
