package commitlog

import (
	"fmt"
	"io"
	"math"
	"sort"
	"sync"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// BatchRange is a run of whole batches as stored in one segment file, not read into memory: what
// a broker sends in a fetch response (Kafka's FileRecords slice). WriteTo sends it to a socket or
// file with sendfile(2) on Linux, so the bytes go from the page cache to the socket without
// entering the process; elsewhere, and on the in-memory file system, it copies through a buffer.
//
// A BatchRange holds its segment: retention and the open-file bound leave its files alone until
// Close. A truncation (TruncateTo) does not wait for it, and a range never sends the bytes of a
// history the truncation ended as if they were the log's: once a truncation removed any of the
// range's records (it left a log end offset below NextOffset), WriteTo returns
// ErrOffsetOutOfRange, whether it notices before sending, and sends nothing, or only after,
// when the bytes sent may be others than the range's (a broker closes that connection; Kafka's
// consumers check CRCs). A truncation that left the range's records in place (to NextOffset or
// beyond) changes none of its bytes and no WriteTo. The bytes are not CRC-checked on the way out
// (Kafka's broker does not check them on a fetch either): use ReadBatches for checked bytes.
type BatchRange struct {
	l         *Log
	s         *segment.Segment // nil for an empty range
	pos, size int64
	next      int64
	logGen    uint64 // the log's truncation count (truncGen) when the range was taken
	once      sync.Once
	// batches and records count the range's batches and their records, for the fetch counters.
	batches, records int64
}

// Len returns the range's size in bytes; 0 when the read was at the log end offset.
func (r *BatchRange) Len() int64 { return r.size }

// NextOffset returns the offset after the range's last batch: where the next read continues.
func (r *BatchRange) NextOffset() int64 { return r.next }

// WriteTo writes the range's bytes to w and returns how many it wrote: with sendfile when w is a
// socket or file of the operating system (a *net.TCPConn, an *os.File) and the log is on the OS
// file system, with a copy otherwise. Errors are w's, or the file's read error (wrapping
// ErrClosed once the log closed), or ErrOffsetOutOfRange after a truncation that removed records
// of the range (see BatchRange).
func (r *BatchRange) WriteTo(w io.Writer) (int64, error) {
	if r.s == nil {
		return 0, nil
	}
	if err := r.check(); err != nil {
		return 0, err
	}
	n, handled, err := sendfile(w, r.s.File(), r.pos, r.size)
	if !handled {
		n, err = io.Copy(w, io.NewSectionReader(r.s.File(), r.pos, r.size))
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

// check returns ErrOffsetOutOfRange once a truncation since the range was taken removed some of
// its records. Under mu, where a truncation cuts the file and notes itself in one step: a check
// after a send that read any byte the truncation changed finds it noted.
func (r *BatchRange) check() error {
	l := r.l
	l.mu.RLock()
	to, cut := l.cutBelow(r.logGen, r.next)
	l.mu.RUnlock()
	if cut {
		return fmt.Errorf("%w: log %s was truncated to %d while a range of segment %s up to offset %d was held",
			ErrOffsetOutOfRange, l.dir, to, r.s.Path(segment.LogSuffix), r.next-1)
	}
	return nil
}

// cutBelow reports whether a truncation counted after logGen (a value of truncGen) left a log end
// offset below offset, removing records under it, and the lowest it left (no lower than the log
// start offset). It is exact however many truncations ran since logGen, unless more than
// maxCutFloors truncations, each leaving a higher log end than the one before, have run since:
// then it may report a cut, to a lower offset than the true one, that did not happen (a reader
// told to read again loses nothing; one told nothing might mix histories). Callers hold mu.
func (l *Log) cutBelow(logGen uint64, offset int64) (to int64, cut bool) {
	if l.truncGen.Load() == logGen {
		return 0, false
	}
	// The floors' generations increase: the first one after logGen holds the minimum.
	i := sort.Search(len(l.cutFloors), func(i int) bool { return l.cutFloors[i].gen > logGen })
	if i == len(l.cutFloors) {
		return l.logStartOffset, true // not reached: the newest truncation has a floor
	}
	to = l.cutFloors[i].offset
	return max(to, l.logStartOffset), to < offset
}

// cutFloor says that the truncations counted after the previous floor's gen, up to and including
// gen, and every one after them, left log end offsets at or above offset.
type cutFloor struct {
	gen    uint64
	offset int64
}

// maxCutFloors bounds the floors kept. Only truncations each leaving a higher log end offset
// than the last add floors; past the bound the two oldest merge, into one that may say a lower
// offset than the truth for the older generations (a cut reported that did not happen).
const maxCutFloors = 64

// noteCutFloor records that truncation count gen left a log end offset of leo: the floors whose
// offsets are not below leo are dropped (leo is now the minimum for them), and the new one goes
// on top, keeping both gens and offsets increasing. Callers hold mu.
func (l *Log) noteCutFloor(gen uint64, leo int64) {
	n := len(l.cutFloors)
	for n > 0 && l.cutFloors[n-1].offset >= leo {
		n--
	}
	l.cutFloors = append(l.cutFloors[:n], cutFloor{gen: gen, offset: leo})
	if len(l.cutFloors) > maxCutFloors {
		l.cutFloors[1].offset = l.cutFloors[0].offset
		l.cutFloors = append(l.cutFloors[:0], l.cutFloors[1:]...)
	}
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
// A truncation that cuts the segment while the range is found does not show as damage: the
// offset is found again in the log as it now is (see ReadBatches). The caller must Close it.
// Errors as for ReadBatches, except that the bytes are not CRC-checked.
func (l *Log) ReadRange(offset int64, maxBytes int) (*BatchRange, error) {
	return l.readRange(offset, maxBytes, math.MaxInt64)
}

// readRange is ReadRange with only batches wholly below upTo.
func (l *Log) readRange(offset int64, maxBytes int, upTo int64) (*BatchRange, error) {
	for range maxReadRetries {
		r, retry, err := l.readRangeOnce(offset, maxBytes, upTo)
		if !retry {
			return r, err
		}
	}
	return nil, l.truncatedUnder(offset)
}

// readRangeOnce is one attempt of readRange; retry says that a truncation of the segment walked
// may have changed the bytes under it, and the range is to be ignored (it holds no segment).
func (l *Log) readRangeOnce(offset int64, maxBytes int, upTo int64) (r *BatchRange, retry bool, err error) {
	sp, err := l.locate(offset)
	if err != nil {
		return nil, false, err
	}
	if sp.s == nil || offset >= upTo {
		if sp.s != nil {
			l.release(sp.s)
		}
		return &BatchRange{l: l, next: offset}, false, nil
	}
	end := min(sp.end, upTo)
	for {
		r, found, err := l.rangeIn(sp, offset, maxBytes, upTo)
		if sp.s.Truncations() != sp.gen {
			// The walk may have read cut bytes, or headers of batches written since.
			l.release(sp.s)
			return nil, true, nil
		}
		if err != nil || found {
			if err != nil || r.s == nil {
				l.release(sp.s)
			}
			if err != nil && l.isClosed() {
				// Close closed the file under the walk: not an I/O error of the segment.
				return nil, false, ErrClosed
			}
			return r, false, err
		}
		// A gap after this segment's last batch (compaction): the next segment goes on.
		l.release(sp.s)
		if sp, err = l.nextSegment(sp.s, end); err != nil {
			return nil, false, err
		}
		if sp.s == nil {
			return &BatchRange{l: l, next: offset}, false, nil
		}
	}
}

// rangeIn walks the batch headers of sp's segment from sp.pos to the first batch holding offset
// or later, and returns the range from there up to maxBytes, of batches wholly below upTo; found
// is false when the segment holds no such batch.
func (l *Log) rangeIn(sp readSpot, offset int64, maxBytes int, upTo int64) (*BatchRange, bool, error) {
	s := sp.s
	r := &BatchRange{l: l, s: s, pos: -1, logGen: sp.logGen}
	empty := false // the first batch holding offset or later is not wholly below upTo
	err := s.WalkHeaders(sp.pos, sp.limit, offset, func(pos int64, h *recordbatch.Header) bool {
		if h.LastOffset() < offset {
			return true
		}
		if h.LastOffset() >= upTo {
			empty = r.pos < 0
			return false
		}
		if r.pos < 0 {
			r.pos = pos
		} else if r.size+int64(h.Size()) > int64(maxBytes) {
			return false
		}
		r.size += int64(h.Size())
		r.batches++
		r.records += int64(h.RecordCount)
		r.next = h.NextOffset()
		return true
	})
	if err != nil {
		return nil, false, err
	}
	if empty {
		return &BatchRange{l: l, next: offset}, true, nil // nothing committed yet
	}
	if r.pos < 0 {
		return nil, false, nil
	}
	return r, true, nil
}
