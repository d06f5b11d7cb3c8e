package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// LocateChunk is the read-ahead used to find the batch holding an offset: the index leaves at
// most index.interval.bytes (4 KiB by default) plus one batch to walk. Buffers' scratch buffers
// start at this capacity.
const LocateChunk = 8 << 10

// headerWalkChunk is the read-ahead of WalkHeaders: enough for the headers of many small
// batches per system call, little waste when batches are large.
const headerWalkChunk = 4 << 10

// Read finds, from pos (a position Lookup gave), the first batch whose last offset is >= offset
// and appends it and the batches after it in this segment to dst, up to maxBytes in total (the
// first batch whole even when larger) and below end (the log end offset the caller read with
// limit), and returns the extended slice: Kafka's bytes as stored, every batch's CRC verified
// (the first batch's failure is the error; a later bad batch ends the bytes returned, and a read
// from it reports it). limit is the Size the caller loaded with Truncations. found is false when
// the segment holds no such batch (offset lies in a gap after its last batch). scratch is a
// read-ahead buffer the read may grow (see Buffers).
//
// Errors wrap ErrCorrupt naming the file, the position and offset (a bad batch, a length past
// limit, a batch claiming an offset at or past end, a batch whose base offset is below the
// segment's or not above the last offset of the batch before it, see orderError: the unreadable
// rest a load left in place), or are the file
// system's. Bytes returned never hold such a batch: they end before it. Safe concurrently
// with other reads and with the writer; the caller holds a reference with the files open, and
// compares Truncations after the read (a truncation may have cut the bytes it read).
func (s *Segment) Read(dst []byte, offset, end, pos, limit int64, maxBytes int, scratch *[]byte) (out []byte, found bool, err error) {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), LocateChunk, *scratch)
	defer func() { *scratch = sc.buf[:0] }()
	var h recordbatch.Header
	next := s.baseOffset // the lowest offset the batch at sc.pos may hold (see orderError)
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
		if err := s.orderError(&h, next); err != nil {
			// Where a load stopped and left the rest in place as unreadable: the offset, past
			// the batches walked, lies in it.
			return dst, false, s.readError(sc.pos, offset, err)
		}
		if h.LastOffset() >= offset {
			break
		}
		next = h.LastOffset() + 1
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
		if err == nil && (bh.BaseOffset >= end || s.orderError(&bh, next) != nil) {
			// Past the end, or offsets that do not grow: bytes a load left in place as
			// unreadable (its scan stopped at them), which a read from there reports.
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
		next = bh.LastOffset() + 1
	}
	return dst[:base+used], true, nil
}

// readError wraps an error met reading at pos, looking for offset.
func (s *Segment) readError(pos, offset int64, err error) error {
	if errors.Is(err, recordbatch.ErrCorrupt) || errors.Is(err, recordbatch.ErrShort) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.corruptError(pos, offset, err)
	}
	return fmt.Errorf("commitlog: read %s at %d: %w", s.Path(LogSuffix), pos, err)
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

// FirstAtOrAfter scans from pos (a position Lookup gave for from) for the first record at an
// offset >= from and below end whose timestamp is >= ts (ms), skipping control batches, as
// Kafka's LogSegment.findOffsetByTimestamp does; found is false when the segment holds none.
// limit, errors and concurrency as for Read (a bad batch is named by the first offset of it the
// search needed).
func (s *Segment) FirstAtOrAfter(ts, from, end, pos, limit int64, maxDecompressed int) (int64, bool, error) {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), LocateChunk, nil)
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

// PositionOf returns the position of the first batch whose last offset is >= offset, or Size when
// there is none: where Truncate cuts to remove offset and everything after it (a batch is never
// split). The caller holds a reference with the files open, and is the single writer. Errors as
// for Read.
func (s *Segment) PositionOf(offset int64) (int64, error) {
	_, pos := s.offsetIdx.Lookup(offset)
	sc := newScanner(s.file, pos, s.size.Load(), s.maxBatchSize(), LocateChunk, nil)
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			return sc.pos, nil
		}
		if err != nil {
			return 0, s.readError(sc.pos, offset, err)
		}
		if h.LastOffset() >= offset {
			return sc.pos, nil
		}
		sc.skip(h)
	}
}

// Truncate cuts the segment's data at pos (a position PositionOf gave, or a Load report's BadPos),
// syncs the file, makes the segment the writable active segment again and rebuilds its indexes
// and state from what remains (Kafka's LogSegment.truncateTo); the txn index loses the entries
// whose LastOffset is at or past the new NextOffset, the aborted transactions whose markers were
// cut (no fsync, as for the indexes). Truncations counts it first, and the segment's cached record
// positions go. The caller is the single writer, holds the mappings
// (HoldMappings: the file must not shrink under a mapping in use) and no index lookup runs
// meanwhile. Errors: the file system's, or ErrCorrupt when what remains does not scan whole.
func (s *Segment) Truncate(pos int64) error {
	// Counted before the cut, so that a read that saw the old bytes cannot cache their positions
	// (PositionCache.put) and sees the change when it checks the count after its read.
	if err := s.ensureOpen(); err != nil {
		return err
	}
	s.truncations.Add(1)
	s.posCache.invalidate(s)
	if err := s.file.Truncate(pos); err != nil {
		return err
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	s.size.Store(pos)
	if err := s.closeIndexes(); err != nil {
		return err
	}
	s.sealed = false
	if err := s.recreateIndexes(); err != nil {
		return err
	}
	rep, err := s.rebuild()
	if err != nil {
		return err
	}
	// The aborted transactions whose markers were cut go too (Kafka's LogSegment.truncateTo
	// truncates the txn index at the offset it cuts to): every batch kept ends below nextOffset.
	if err := s.txn.TruncateTo(s.nextOffset); err != nil {
		return err
	}
	if rep.BadPos >= 0 {
		return s.corruptError(rep.BadPos, s.nextOffset, rep.Cause)
	}
	return nil
}

// WalkHeaders reads the headers of the batches from pos up to limit, in order, and calls fn with
// each batch's position and header until fn returns false or the batches end; it reads no
// record and checks no CRC (a BatchRange's walk, the rebuild of the leader-epoch cache). Errors
// as for Read: a header that does not parse or a length past limit wraps ErrCorrupt, naming
// offset, the offset the caller looks for; the file system's errors are wrapped with the file's
// name. Concurrency as for Read.
func (s *Segment) WalkHeaders(pos, limit, offset int64, fn func(pos int64, h *recordbatch.Header) bool) error {
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), headerWalkChunk, nil)
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.readError(sc.pos, offset, err)
		}
		if !fn(sc.pos, &h) {
			return nil
		}
		sc.skip(h)
	}
}

// CopyChunk is the read-ahead of EachBatch, Kafka's log.cleaner.io.buffer.size (512 KiB).
const CopyChunk = 512 << 10

// EachBatch calls fn with the position and the bytes of every whole batch of the segment, in
// order, from its start to its Size, until fn returns false or an error (which EachBatch
// returns): the sequential read of a clean. Only the framing is checked (header, length within
// the segment and the batch bound); the caller decodes, and so checks the CRC of, what it uses.
// The bytes alias *buf, valid during the call; *buf is the read-ahead buffer, grown as needed
// and left for the next call. Errors as for WalkHeaders, naming the segment's base offset.
// Concurrency as for Read: the caller holds a reference with the files open.
func (s *Segment) EachBatch(buf *[]byte, fn func(pos int64, batch []byte) (bool, error)) error {
	sc := newScanner(s.file, 0, s.size.Load(), s.maxBatchSize(), CopyChunk, *buf)
	defer func() { *buf = sc.buf[:0] }()
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			err = sc.fill(h.Size())
		}
		if err != nil {
			return s.readError(sc.pos, s.baseOffset, err)
		}
		off := sc.pos - sc.bufStart
		if ok, err := fn(sc.pos, sc.buf[off:off+int64(h.Size())]); !ok || err != nil {
			return err
		}
		sc.skip(h)
	}
}
