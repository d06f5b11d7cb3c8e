package commitlog

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// locateChunk is the read-ahead used to find the batch holding an offset: the index leaves at
// most index.interval.bytes (4 KiB by default) plus one batch to walk.
const locateChunk = 8 << 10

// ReadBatches appends to dst the whole batches that hold offset and the offsets after it, in
// order, up to maxBytes in total (the first batch is returned whole even when larger), and
// returns the extended slice. The batches are Kafka's bytes as stored: a broker can hand them to
// a fetch response unchanged. The first batch may start below offset (a batch is never split);
// batches never reach past the log end offset seen when the call began. The batches come from one
// segment, as a Kafka fetch's do: a read that reaches the end of a segment stops there, and the
// next read, from the offset after its last batch, goes on in the next segment. Every batch
// returned has a verified CRC.
//
// A truncation (TruncateTo) that cuts the segment while it is read does not show as damage: the
// read finds the offset again in the log as it now is, and returns its batches there, nothing at
// the new log end offset, or ErrOffsetOutOfRange past it. The batches returned are all of one
// history of the log, one that was current while the call ran.
//
// Reading at exactly the log end offset returns dst unchanged and no error. It returns
// ErrOffsetOutOfRange when offset < LogStartOffset or offset > LogEndOffset, ErrCorrupt (naming
// segment, position and offset) when the first batch it would return is corrupt, and ErrClosed
// after Close. Readers never block writers.
func (l *Log) ReadBatches(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	out, _, err := l.readBatches(dst, offset, maxBytes)
	return out, err
}

// maxReadRetries bounds the reads again of a read whose segment truncations keep overtaking:
// each needs a truncation of the segment, so more than a few means a log whose end moves back
// and forth faster than one batch can be read.
const maxReadRetries = 16

// readBatches is ReadBatches; logGen is the log's truncation count (truncGen) when the history
// the batches come from was current (see readSpot).
func (l *Log) readBatches(dst []byte, offset int64, maxBytes int) (out []byte, logGen uint64, err error) {
	buf := l.getScratch()
	defer l.scratch.Put(buf)
	for range maxReadRetries {
		out, logGen, retry, err := l.readBatchesOnce(dst, offset, maxBytes, buf)
		if !retry {
			return out, logGen, err
		}
	}
	return dst, 0, l.truncatedUnder(offset)
}

// truncatedUnder is the error of a read that truncations of its segment overtook maxReadRetries
// times in a row.
func (l *Log) truncatedUnder(offset int64) error {
	return fmt.Errorf("%w: offset %d of %s: its segment was truncated under %d reads in a row", ErrOffsetOutOfRange, offset, l.dir, maxReadRetries)
}

// readBatchesOnce is one attempt of readBatches; retry says that a truncation of a segment read
// may have changed the bytes under it, and out and err are to be ignored.
func (l *Log) readBatchesOnce(dst []byte, offset int64, maxBytes int, buf *[]byte) (out []byte, logGen uint64, retry bool, err error) {
	sp, err := l.locate(offset)
	if err != nil || sp.s == nil {
		return dst, sp.logGen, false, err
	}
	for {
		out, found, err := sp.s.read(dst, offset, sp.end, sp.pos, sp.limit, maxBytes, buf)
		// Whatever the read found (a short read, a header of other bytes, or batches whole),
		// bytes cut or written again since sp was taken may be in it.
		changed := sp.s.truncations.Load() != sp.gen
		l.release(sp.s)
		if changed {
			return dst, 0, true, nil
		}
		if err != nil {
			if l.isClosed() {
				return dst, 0, false, ErrClosed
			}
			return dst, 0, false, err
		}
		if found {
			return out, sp.logGen, false, nil
		}
		// offset lies in a gap after this segment's last batch (compaction leaves gaps): the
		// next segment holds the following offsets.
		if sp, err = l.nextSegment(sp.s, sp.end); err != nil || sp.s == nil {
			return dst, sp.logGen, false, err
		}
	}
}

// readSpot is where a read of an offset begins, all as of one moment under mu: the segment s
// holding the offset, acquired (the reader releases it), its truncation count gen, the position
// pos its offset index gives to scan from, its size limit, the log end offset end and the log's
// truncation count logGen. A segment's bytes below limit change only by a truncation of that
// segment, which counts in s.truncations before it cuts the file: a read that finds the count
// still gen after it read has read bytes of the history that was current at logGen. A read that
// finds it changed may have read cut or rewritten bytes, and locates the offset again; it never
// takes them for damage.
type readSpot struct {
	s          *segment
	gen        uint64
	pos, limit int64
	end        int64
	logGen     uint64
}

// locate returns the spot to read offset from (see readSpot). s is nil, with no error, when
// offset is the log end offset. ErrClosed after Close, ErrOffsetOutOfRange outside
// [LogStartOffset, LogEndOffset].
func (l *Log) locate(offset int64) (readSpot, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return readSpot{}, ErrClosed
	}
	start, end := l.logStartOffset, l.active().nextOffset
	sp := readSpot{end: end, logGen: l.truncGen.Load()}
	if offset < start || offset > end {
		l.mu.RUnlock()
		return sp, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, l.dir, start, end)
	}
	if offset == end {
		l.mu.RUnlock()
		return sp, nil
	}
	s, gen, limit, pos, err := l.acquireLocked(offset)
	if err != nil {
		return readSpot{end: end}, err
	}
	sp.s, sp.gen, sp.limit, sp.pos = s, gen, limit, pos
	return sp, nil
}

// acquireLocked acquires the segment holding offset and returns it with its truncation count, its
// size and the position its offset index gives to scan from for offset, all as of one moment.
// Callers hold mu read-locked, with offset in [LogStartOffset, LogEndOffset); acquireLocked
// unlocks it (a segment whose files the cache closed is opened after that). On error the segment
// is released.
func (l *Log) acquireLocked(offset int64) (s *segment, gen uint64, limit, pos int64, err error) {
	s = l.segments[l.segmentFor(offset)]
	acquire(s)
	// Truncation counts under mu, before it cuts the file and changes the size: the count is
	// loaded with the size it goes with.
	gen, limit = s.truncations.Load(), s.size.Load()
	ready := s.filesReady()
	if ready {
		_, pos = s.offsetIdx.Lookup(offset)
	}
	l.mu.RUnlock()
	if !ready {
		if pos, err = l.openAndLookup(s, offset); err != nil {
			l.release(s)
			return nil, 0, 0, 0, err
		}
	}
	return s, gen, limit, pos, nil
}

// nextSegment returns the spot at the start of the segment after s (see readSpot), acquired, or
// one whose s is nil when no segment holds offsets below end (or the log closed meanwhile). The
// caller has released s.
func (l *Log) nextSegment(s *segment, end int64) (readSpot, error) {
	l.mu.RLock()
	sp := readSpot{end: end, logGen: l.truncGen.Load()}
	next := l.segmentAfter(s.baseOffset)
	if next == nil || next.baseOffset >= end || l.closed {
		l.mu.RUnlock()
		return sp, nil
	}
	acquire(next)
	sp.s, sp.gen, sp.limit = next, next.truncations.Load(), next.size.Load()
	ready := next.filesReady()
	l.mu.RUnlock()
	if !ready {
		if err := l.openForRead(next); err != nil {
			l.release(next)
			return readSpot{end: end}, err
		}
	}
	return sp, nil
}

// openForRead opens the files of s, which the caller has acquired, when the file cache closed
// them. It runs outside mu: the writer's publication and other reads never wait for that I/O.
func (l *Log) openForRead(s *segment) error {
	if err := s.open(); err != nil {
		if errors.Is(err, ErrClosed) || l.isClosed() {
			return ErrClosed
		}
		return fmt.Errorf("commitlog: open segment %s: %w", s.path(logSuffix), err)
	}
	return nil
}

// openAndLookup opens s's files (see openForRead) and returns the offset index's position to scan
// from for offset, looked up under mu, where the active segment's index grows and truncation
// rebuilds a segment's indexes.
func (l *Log) openAndLookup(s *segment, offset int64) (int64, error) {
	if err := l.openForRead(s); err != nil {
		return 0, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	_, pos := s.offsetIdx.Lookup(offset)
	return pos, nil
}

// segmentAfter returns the first segment whose base offset is above base, or nil. Callers hold
// mu.
func (l *Log) segmentAfter(base int64) *segment {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > base })
	if i == len(l.segments) {
		return nil
	}
	return l.segments[i]
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

func (l *Log) getScratch() *[]byte {
	if b, ok := l.scratch.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, locateChunk)
	return &b
}

// read finds, from pos, the first batch whose last offset is >= offset and appends it and the
// batches after it in this segment to dst, up to maxBytes and below end. found is false when
// the segment holds no such batch.
func (s *segment) read(dst []byte, offset, end, pos, limit int64, maxBytes int, scratch *[]byte) (out []byte, found bool, err error) {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), locateChunk, *scratch)
	defer func() { *scratch = sc.buf[:0] }()
	var h recordbatch.Header
	for {
		h, err = sc.header()
		if errors.Is(err, io.EOF) {
			return dst, false, nil
		}
		if err != nil {
			return dst, false, s.readError(sc.pos, offset, err)
		}
		if h.BaseOffset >= end {
			// Every batch below limit was published before end was read, so one claiming a later
			// offset is damaged (the CRC does not cover the base offset). Saying "nothing here"
			// would tell the caller it has reached the end of the log.
			return dst, false, s.readError(sc.pos, offset, fmt.Errorf("%w: base offset %d at or past the log end offset %d",
				recordbatch.ErrCorrupt, h.BaseOffset, end))
		}
		if h.LastOffset() >= offset {
			break
		}
		sc.skip(h)
	}

	// One read for everything returned: from the batch found up to maxBytes, or the whole first
	// batch when it is larger; then cut at the last whole batch that is valid and below end.
	first := sc.pos
	n := min(max(int64(maxBytes), int64(h.Size())), limit-first)
	base := len(dst)
	dst = grow(dst, int(n))
	if off := first - sc.bufStart; off >= 0 && off+n <= int64(len(sc.buf)) {
		// The locating read-ahead already holds it (a small read, as a random read by offset
		// is): no second system call for the same bytes.
		copy(dst[base:base+int(n)], sc.buf[off:off+n])
	} else {
		m, rerr := s.file.ReadAt(dst[base:base+int(n)], first)
		if int64(m) < n {
			if rerr == nil || errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF
			}
			return dst[:base], false, s.readError(first, offset, rerr)
		}
	}
	var used int
	for used < int(n) {
		b := dst[base+used : base+int(n)]
		bh, err := recordbatch.Check(b, s.maxBatchSize())
		if err == nil && bh.BaseOffset >= end {
			break
		}
		if err != nil {
			if used == 0 {
				return dst[:base], false, s.readError(first, offset, err)
			}
			// Not the caller's batch: a later read starting there reports it.
			break
		}
		used += bh.Size()
	}
	return dst[:base+used], true, nil
}

// readError wraps an error met reading at pos, looking for offset.
func (s *segment) readError(pos, offset int64, err error) error {
	if errors.Is(err, recordbatch.ErrCorrupt) || errors.Is(err, recordbatch.ErrShort) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.corruptError(pos, offset, err)
	}
	return fmt.Errorf("commitlog: read %s at %d: %w", s.path(logSuffix), pos, err)
}

// grow extends b by n bytes, reallocating when its capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// OffsetForTime returns the offset of the first record whose timestamp is >= ts, searching in
// offset order from the log start offset, or the log end offset when no record is that recent
// (Kafka's ListOffsets by timestamp). Records whose timestamps go backwards are handled as Kafka
// does: the segment is the first whose largest timestamp is >= ts, and the time index, which
// only grows, gives the offset to scan from. A truncation that cuts a segment while it is
// searched does not show as damage: the search starts again in the log as it now is. Returns
// ErrClosed after Close and ErrCorrupt when a batch on the way cannot be read.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	for range maxReadRetries {
		off, retry, err := l.offsetForTimeOnce(ts)
		if !retry {
			return off, err
		}
	}
	return 0, fmt.Errorf("%w: the search for time %d in %s was overtaken by %d truncations in a row", ErrOffsetOutOfRange, ts, l.dir, maxReadRetries)
}

// offsetForTimeOnce is one attempt of OffsetForTime; retry says that a truncation of a segment
// searched may have changed the bytes under it, and off and err are to be ignored.
func (l *Log) offsetForTimeOnce(ts int64) (off int64, retry bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, false, ErrClosed
	}
	start, end := l.logStartOffset, l.active().nextOffset
	// The candidates are the segments whose largest timestamp reaches ts, in offset order. Each
	// is held and opened only while it is searched: most searches end in the first, and holding
	// them all would keep every open one from being closed for the bound meanwhile.
	type cand struct {
		s     *segment
		gen   uint64 // s.truncations, loaded with limit (see readSpot)
		limit int64
	}
	var cands []cand
	for i := l.segmentFor(start); i < len(l.segments); i++ {
		s := l.segments[i]
		if s.maxTimestamp >= ts || s.timesUnknown {
			cands = append(cands, cand{s, s.truncations.Load(), s.size.Load()})
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
		off, found, err := c.s.firstAtOrAfter(ts, from, end, pos, c.limit, l.cfg.readDecompressLimit())
		changed := c.s.truncations.Load() != c.gen
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
	return end, false, nil
}

// timeLookup acquires s, opens its files, and returns the offset to search from for the first
// timestamp >= ts (at least start) and the position of the batch to scan from. ok is false, and
// s not acquired, when s has left the log. On success the caller releases s.
func (l *Log) timeLookup(s *segment, ts, start int64) (from, pos int64, ok bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, 0, false, ErrClosed
	}
	if i := l.segmentFor(s.baseOffset); l.segments[i] != s {
		l.mu.RUnlock()
		return 0, 0, false, nil
	}
	acquire(s)
	if !s.filesReady() {
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
	from = s.baseOffset
	if off, ok := s.timeIdx.LookupBefore(ts); ok {
		from = off + 1
	}
	from = max(from, start)
	_, pos = s.offsetIdx.Lookup(from)
	return from, pos, true, nil
}

// firstAtOrAfter scans from pos for the first record at an offset >= from and below end whose
// timestamp is >= ts.
func (s *segment) firstAtOrAfter(ts, from, end, pos, limit int64, maxDecompressed int) (int64, bool, error) {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), locateChunk, nil)
	lim := recordbatch.Limits{MaxBatchSize: s.maxBatchSize(), MaxDecompressedSize: max(maxDecompressed, s.maxBatchSize())}
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, s.readError(sc.pos, from, err)
		}
		if h.BaseOffset >= end {
			return 0, false, nil
		}
		if h.LastOffset() >= from && h.MaxTimestamp >= ts && !h.Attributes.Control() {
			// A bad batch is named by the first offset of it the search needed, as a read of
			// that offset names it.
			at := max(from, h.BaseOffset)
			b, err := sc.batch(h)
			if err != nil {
				return 0, false, s.readError(sc.pos, at, err)
			}
			off, ok, err := firstRecordAtOrAfter(b, lim, from, ts)
			if err != nil {
				return 0, false, s.readError(sc.pos, at, err)
			}
			if ok {
				return off, true, nil
			}
		}
		sc.skip(h)
	}
}

// firstRecordAtOrAfter returns the offset of the first record of batch b at or after offset
// from whose timestamp is >= ts.
func firstRecordAtOrAfter(b []byte, lim recordbatch.Limits, from, ts int64) (int64, bool, error) {
	batch, err := recordbatch.Decode(b, lim)
	if err != nil {
		return 0, false, err
	}
	for r := range batch.Records() {
		if off := batch.RecordOffset(&r); off >= from && batch.RecordTimestamp(&r) >= ts {
			return off, true, nil
		}
	}
	return 0, false, nil
}

// ReadRecords returns the records from offset on, decoded from the batches ReadBatches(nil,
// offset, maxBytes) returns, until their keys and values total maxBytes: at least one record when
// offset is below the log end offset (unless the batches there hold only control records), none
// at the log end offset. ReadRecords(offset, 1) returns one record. The records are the caller's
// (one allocation of records, bytes and headers for each batch, not for each record). Errors as
// for ReadBatches.
func (l *Log) ReadRecords(offset int64, maxBytes int) ([]*Record, error) {
	buf := l.getReadBuf()
	defer l.putReadBuf(buf)
	b, err := l.ReadBatches((*buf)[:0], offset, maxBytes)
	*buf = b
	if err != nil {
		return nil, err
	}
	return decodeChecked(nil, b, offset, l.cfg.readDecompressLimit(), maxBytes)
}

// getReadBuf returns a pooled buffer for batches that are decoded and copied out before it goes
// back (putReadBuf): a read of one record does not allocate its whole batch.
func (l *Log) getReadBuf() *[]byte {
	if b, ok := l.readBufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// maxPooledReadBuf bounds the buffers kept for reuse: a rare huge read does not pin its memory.
const maxPooledReadBuf = 8 << 20

func (l *Log) putReadBuf(b *[]byte) {
	if cap(*b) <= maxPooledReadBuf {
		*b = (*b)[:0]
		l.readBufs.Put(b)
	}
}
