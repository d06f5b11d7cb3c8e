package commitlog

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// BatchRange is a run of whole batches as stored in one segment file, not read into memory: what
// a broker sends in a fetch response (Kafka's FileRecords slice). WriteTo sends it to a socket or
// file with sendfile(2) on Linux, so the bytes go from the page cache to the socket without
// entering the process; elsewhere, and on the in-memory file system, it copies through a buffer.
//
// A BatchRange holds its segment: retention and the open-file bound leave its files alone until
// Close. A truncation (TruncateTo) into its segment does not wait for it: WriteTo then returns
// ErrOffsetOutOfRange, whether it notices before sending or only after, when the bytes sent may
// be others than the range's (a broker closes that connection; Kafka's consumers check CRCs).
// The bytes are not CRC-checked on the way out (Kafka's broker does not check them on a fetch
// either): use ReadBatches for checked bytes.
type BatchRange struct {
	l         *Log
	s         *segment // nil for an empty range
	pos, size int64
	next      int64
	gen       uint64 // s.truncations when the range was taken
	once      sync.Once
}

// Len returns the range's size in bytes; 0 when the read was at the log end offset.
func (r *BatchRange) Len() int64 { return r.size }

// NextOffset returns the offset after the range's last batch: where the next read continues.
func (r *BatchRange) NextOffset() int64 { return r.next }

// WriteTo writes the range's bytes to w and returns how many it wrote: with sendfile when w is a
// socket or file of the operating system (a *net.TCPConn, an *os.File) and the log is on the OS
// file system, with a copy otherwise. Errors are w's, or the file's read error (wrapping
// ErrClosed once the log closed), or ErrOffsetOutOfRange after a truncation (see BatchRange).
func (r *BatchRange) WriteTo(w io.Writer) (int64, error) {
	if r.s == nil {
		return 0, nil
	}
	if err := r.check(); err != nil {
		return 0, err
	}
	n, handled, err := sendfile(w, r.s.file, r.pos, r.size)
	if !handled {
		n, err = io.Copy(w, io.NewSectionReader(r.s.file, r.pos, r.size))
		if err == nil && n < r.size {
			err = io.ErrUnexpectedEOF
		}
	}
	if cerr := r.check(); cerr != nil {
		return n, cerr
	}
	if err != nil && r.l.isClosed() {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return n, err
}

// check returns ErrOffsetOutOfRange once the range's segment was truncated in place.
func (r *BatchRange) check() error {
	if r.s.truncations.Load() != r.gen {
		return fmt.Errorf("%w: segment %s was truncated while a range of offsets up to %d was held",
			ErrOffsetOutOfRange, r.s.path(logSuffix), r.next-1)
	}
	return nil
}

// Close releases the segment. It returns nil, also when called again.
func (r *BatchRange) Close() error {
	r.once.Do(func() {
		if r.s != nil {
			r.l.release(r.s)
		}
	})
	return nil
}

// ReadRange returns the whole batches that hold offset and the offsets after it, up to maxBytes in
// total (the first batch whole even when larger), within one segment: a broker's zero-copy fetch.
// A fetch that wants more calls again at NextOffset. At the log end offset the range is empty.
// The caller must Close it. Errors as for ReadBatches, except that the bytes are not CRC-checked.
func (l *Log) ReadRange(offset int64, maxBytes int) (*BatchRange, error) {
	return l.readRange(offset, maxBytes, math.MaxInt64)
}

// readRange is ReadRange with only batches wholly below upTo.
func (l *Log) readRange(offset int64, maxBytes int, upTo int64) (*BatchRange, error) {
	s, pos, limit, end, err := l.locate(offset)
	if err != nil {
		return nil, err
	}
	if s == nil || offset >= upTo {
		if s != nil {
			l.release(s)
		}
		return &BatchRange{l: l, next: offset}, nil
	}
	end = min(end, upTo)
	for {
		r, found, err := l.rangeIn(s, offset, pos, limit, maxBytes, upTo)
		if err != nil || found {
			if err != nil || r.s == nil {
				l.release(s)
			}
			return r, err
		}
		// A gap after this segment's last batch (compaction): the next segment goes on.
		l.release(s)
		if s, err = l.nextSegment(s, end); err != nil {
			return nil, err
		}
		if s == nil {
			return &BatchRange{l: l, next: offset}, nil
		}
		pos, limit = 0, s.size.Load()
	}
}

// rangeIn walks s's batch headers from pos to the first batch holding offset or later, and
// returns the range from there up to maxBytes, of batches wholly below upTo; found is false when
// s holds no such batch.
func (l *Log) rangeIn(s *segment, offset, pos, limit int64, maxBytes int, upTo int64) (*BatchRange, bool, error) {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), headerWalkChunk, nil)
	r := &BatchRange{l: l, s: s, pos: -1, gen: s.truncations.Load()}
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, s.readError(sc.pos, offset, err)
		}
		if h.LastOffset() < offset {
			sc.skip(h)
			continue
		}
		if h.LastOffset() >= upTo {
			if r.pos < 0 {
				return &BatchRange{l: l, next: offset}, true, nil // nothing committed yet
			}
			break
		}
		if r.pos < 0 {
			r.pos = sc.pos
		} else if r.size+int64(h.Size()) > int64(maxBytes) {
			break
		}
		r.size += int64(h.Size())
		r.next = h.NextOffset()
		sc.skip(h)
	}
	if r.pos < 0 {
		return nil, false, nil
	}
	return r, true, nil
}

// headerWalkChunk is the read-ahead of a range's header walk: enough for the headers of
// many small batches per system call, little waste when batches are large.
const headerWalkChunk = 4 << 10
