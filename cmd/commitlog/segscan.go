package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Files are read as they are, never trusting them: a length is checked against the bytes present
// before anything is read or allocated, decompression is bounded, and no content makes the
// scanners panic (see the fuzz tests).

// maxScanBatch bounds one batch's size when files are scanned: a length above it is damage.
// Kafka's max.message.bytes is 1 MiB by default; brokers rarely allow more than a few tens.
const maxScanBatch = 256 << 20

// maxDecompressed bounds the records of one compressed batch when they are decoded.
const maxDecompressed = 256 << 20

// window reads a file through a buffer that slides forward, so that a sequential scan, and a
// byte-by-byte search for the next batch after damage, cost one read per buffer.
type window struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64 // file position of buf[0]
}

const windowSize = 1 << 20

// at returns the n bytes at pos, fewer where the file ends; valid until the next call.
func (w *window) at(pos int64, n int) ([]byte, error) {
	if pos >= w.size {
		return nil, nil
	}
	n = int(min(int64(n), w.size-pos))
	if pos >= w.off && pos+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[pos-w.off : pos-w.off+int64(n)], nil
	}
	want := int(min(int64(max(n, windowSize)), w.size-pos))
	if cap(w.buf) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	got, err := w.r.ReadAt(w.buf, pos)
	w.buf, w.off = w.buf[:got], pos
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read at %d: %w", pos, err)
	}
	return w.buf[:n], nil
}

// batchEvent is what the scan of a .log file found at one position: a batch, or damage.
type batchEvent struct {
	pos     int64
	size    int64              // bytes of the batch, or of the damaged region
	hdr     recordbatch.Header // parsed when hdrOK
	hdrOK   bool
	whole   bool // the whole batch was present, and its CRC computed
	crcOK   bool
	crc     uint32            // computed, when the whole batch was present
	batch   recordbatch.Batch // the decoded batch, when decoded; aliases the scan's buffers
	decoded bool
	err     error // what is wrong; nil for a good batch
	torn    bool  // the file ends inside this batch: a write cut short, at the tail of a log
}

// scanLog reads the batches of a .log file in order and calls fn for each, and for each damaged
// region. After damage it searches forward for the next position holding a whole batch with a
// valid CRC and resumes there, so that one damaged batch hides nothing after it. It returns
// fn's first error, or a read error.
func scanLog(r io.ReaderAt, size int64, fn func(*batchEvent) error) error {
	w := &window{r: r, size: size}
	dec := recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: maxDecompressed}}
	for pos := int64(0); pos < size; {
		ev := batchEvent{pos: pos}
		hb, err := w.at(pos, recordbatch.HeaderSize)
		if err != nil {
			return err
		}
		var next int64
		switch h, herr := recordbatch.ParseHeader(hb, maxScanBatch); {
		case errors.Is(herr, recordbatch.ErrShort):
			if next, err = resync(w, pos+1); err != nil {
				return err
			}
			if next < size {
				ev.err = fmt.Errorf("%d bytes that are not a batch", next-pos)
			} else {
				ev.torn = true
				ev.err = fmt.Errorf("the file ends %d bytes into a batch header of %d bytes", size-pos, recordbatch.HeaderSize)
			}
		case herr != nil:
			ev.hdr = h
			ev.err = herr
			if next, err = resync(w, pos+1); err != nil {
				return err
			}
		case pos+int64(h.Size()) > size:
			ev.hdr, ev.hdrOK = h, true
			if next, err = resync(w, pos+1); err != nil {
				return err
			}
			if next < size {
				ev.err = fmt.Errorf("batch length %d runs past the next batch, at position %d", h.BatchLength, next)
			} else {
				ev.torn = true
				ev.err = fmt.Errorf("the file ends %d bytes into a batch of %d bytes", size-pos, h.Size())
			}
		default:
			ev.hdr, ev.hdrOK = h, true
			b, err := w.at(pos, h.Size())
			if err != nil {
				return err
			}
			ev.whole = true
			ev.crc = recordbatch.ComputeCRC(b)
			ev.crcOK = ev.crc == h.CRC
			if !ev.crcOK {
				ev.err = fmt.Errorf("CRC-32C mismatch: stored %08x, computed %08x", h.CRC, ev.crc)
				if next, err = resync(w, pos+1); err != nil {
					return err
				}
				break
			}
			next = pos + int64(h.Size())
			ev.batch, err = dec.Decode(b)
			if err != nil {
				ev.err = fmt.Errorf("records do not match the header: %w", err)
			} else {
				ev.decoded = true
			}
		}
		ev.size = next - pos
		if ev.torn {
			ev.size = size - pos
			next = size
		}
		if err := fn(&ev); err != nil {
			return err
		}
		pos = next
	}
	return nil
}

// resync returns the first position at or after from where a whole batch with a valid CRC
// starts, or the file's size when there is none.
func resync(w *window, from int64) (int64, error) {
	for p := from; p+recordbatch.HeaderSize <= w.size; p++ {
		hb, err := w.at(p, recordbatch.HeaderSize)
		if err != nil {
			return 0, err
		}
		if hb[16] != recordbatch.Magic { // cheap first test: the magic byte
			continue
		}
		h, err := recordbatch.ParseHeader(hb, maxScanBatch)
		if err != nil || p+int64(h.Size()) > w.size {
			continue
		}
		b, err := w.at(p, h.Size())
		if err != nil {
			return 0, err
		}
		if recordbatch.ComputeCRC(b) == h.CRC {
			return p, nil
		}
	}
	return w.size, nil
}

// Index entry sizes (Kafka's OffsetIndex and TimeIndex).
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

// indexEntries reads an index file's entries. Entries of zeros at its end are not returned but
// counted: they are the unused, preallocated space of the index of an active segment (or of one
// left by a crash). partial is the number of bytes after the last whole entry.
func indexEntries(r io.ReaderAt, size int64, entrySize int) (entries [][]byte, zeros int, partial int, err error) {
	w := &window{r: r, size: size}
	n := size / int64(entrySize)
	zero := make([]byte, entrySize)
	for i := range n {
		e, err := w.at(i*int64(entrySize), entrySize)
		if err != nil {
			return nil, 0, 0, err
		}
		if allZero(e) {
			zeros++
			continue
		}
		for ; zeros > 0; zeros-- {
			entries = append(entries, zero)
		}
		entries = append(entries, append([]byte(nil), e...))
	}
	return entries, zeros, int(size % int64(entrySize)), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func offsetEntry(e []byte) (rel, pos uint32) {
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

func timeEntry(e []byte) (ts int64, rel uint32) {
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// Segment file suffixes.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
)

// segmentBase returns the base offset a segment file's name gives: 20 decimal digits, then the
// suffix.
func segmentBase(path string) (int64, bool) {
	name := filepath.Base(path)
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:i], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
