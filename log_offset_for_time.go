package commitlog

import (
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// OffsetForTime returns the offset of the first record whose timestamp is >= t, searching in
// offset order from the log start offset (Kafka's ListOffsets by timestamp). When no record is
// that recent, or the log holds none, it returns -1 and an error wrapping ErrNoOffsetForTime,
// as ListOffsets answers offset -1. t is taken at millisecond precision (t.UnixMilli()), the
// precision of Kafka's record timestamps and of ListOffsets, as Partition.OffsetForTime takes it. Records whose timestamps go backwards are handled as Kafka
// does: the segment is the first whose largest timestamp is >= t, and the time index, which
// only grows, gives the offset to scan from. A truncation that cuts a segment while it is
// searched does not show as damage: the search starts again in the log as it now is. Returns
// ErrClosed after Close and ErrCorrupt when a batch on the way cannot be read.
func (l *Log) OffsetForTime(t time.Time) (int64, error) {
	ts := t.UnixMilli()
	for range maxReadRetries {
		off, retry, err := l.offsetForTimeOnce(ts)
		switch {
		case retry:
			continue
		case err == nil && off < 0:
			return -1, fmt.Errorf("%w: no record of %s has a timestamp at or after %d ms", ErrNoOffsetForTime, l.dir, ts)
		}
		return off, err
	}
	return 0, fmt.Errorf("%w: the search for time %d in %s was overtaken by %d truncations in a row", ErrOffsetOutOfRange, ts, l.dir, maxReadRetries)
}

// offsetForTimeOnce is one attempt of OffsetForTime, off -1 when no record is found; retry
// says that a truncation of a segment searched may have changed the bytes under it, and off and
// err are to be ignored.
func (l *Log) offsetForTimeOnce(ts int64) (off int64, retry bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, false, ErrClosed
	}
	start, end := l.logStartOffset, l.active().NextOffset()
	// The candidates are the segments whose largest timestamp reaches ts, in offset order. Each
	// is held and opened only while it is searched: most searches end in the first, and holding
	// them all would keep every open one from being closed for the bound meanwhile.
	type cand struct {
		s     *segment.Segment
		gen   uint64 // s.Truncations(), loaded with limit (see readSpot)
		limit int64
	}
	var cands []cand
	for i := l.segments.find(start); i < len(l.segments); i++ {
		s := l.segments[i]
		if s.MaxTimestamp() >= ts || s.TimesUnknown() {
			cands = append(cands, cand{s, s.Truncations(), s.Size()})
		}
	}
	l.mu.RUnlock()

	for _, c := range cands {
		from, pos, ok, err := l.timeLookup(c.s, ts, start)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			// Retention or truncation took the segment since: the candidates and the end are of
			// a log that is no more (a truncation may have written the offsets again, in a new
			// segment), so the search starts again.
			return 0, true, nil
		}
		off, found, err := c.s.FirstAtOrAfter(ts, from, end, pos, c.limit, l.conf().readDecompressLimit())
		changed := c.s.Truncations() != c.gen
		l.release(c.s)
		switch {
		case changed:
			return 0, true, nil
		case err != nil && l.isClosed():
			// Close closed the file under the search: not an I/O error of the segment.
			return 0, false, ErrClosed
		case err != nil:
			return 0, false, err
		case found:
			return off, false, nil
		}
	}
	return -1, false, nil
}

// timeLookup acquires s, opens its files, and returns the offset to search from for the first
// timestamp >= ts (at least start) and the position of the batch to scan from. ok is false, and
// s not acquired, when s has left the log. On success the caller releases s.
func (l *Log) timeLookup(s *segment.Segment, ts, start int64) (from, pos int64, ok bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, 0, false, ErrClosed
	}
	if i := l.segments.find(s.BaseOffset()); l.segments[i] != s {
		l.mu.RUnlock()
		return 0, 0, false, nil
	}
	s.Acquire()
	if !s.FilesReady() {
		l.mu.RUnlock()
		if err := l.openForRead(s); err != nil {
			l.release(s)
			return 0, 0, false, err
		}
		l.mu.RLock()
		if l.closed {
			l.mu.RUnlock()
			l.release(s)
			return 0, 0, false, ErrClosed
		}
	}
	defer l.mu.RUnlock()
	from = max(s.LookupTime(ts), start)
	return from, s.Lookup(from), true, nil
}
