package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// scanChunk is the read-ahead of recovery scans: large, since they read everything.
const scanChunk = 1 << 20

// NoCut is the cutFrom of a Load that may truncate nothing: every bad batch stays in place.
const NoCut = int64(math.MaxInt64)

// LoadReport says how Load went, for the caller (the log) to act on and to log. Load changes no
// byte of the .log file: whether to cut at BadPos (Cut) or keep the bytes (SetSize) is the
// caller's decision.
type LoadReport struct {
	// BadPos is the position where the scan stopped: at a batch whose framing is broken (a
	// length out of bounds or past the end of the file, a magic other than 2, offsets not
	// increasing), after which nothing of the segment can be read, or at the first bad batch of
	// any kind whose first offset is at or past the scan's cutFrom (then Cut is set). -1 when
	// the scan reached the end of the file.
	BadPos int64
	// BadOffset is the first offset the bytes at BadPos could hold: the last offset + 1 of the
	// valid batch before them, or the segment's base offset when none was scanned before them.
	BadOffset int64
	// Cause says what was wrong at BadPos.
	Cause error
	// Cut says the bytes from BadPos on may be truncated: a torn tail in the unflushed region.
	Cut bool
	// Corrupt lists the batches whose framing was whole but whose CRC or records failed: the
	// scan walked over them by their length and went on; they stay in place, byte for byte,
	// and reads of them return ErrCorrupt.
	Corrupt []CorruptBatch
	// Rebuilt is set when an index was rebuilt from the log, and says why.
	Rebuilt error
	// TxnIndexReset is set when the .txnindex file was corrupt at open (it wraps
	// txnindex.ErrCorrupt): its entries were dropped and the file emptied, and the log must
	// append the segment's aborted transactions again (see Segment.TxnIndexCorrupt).
	TxnIndexReset error
}

// CorruptBatch is a batch that recovery walked over and left in place.
type CorruptBatch struct {
	Pos        int64 // position in the .log file, bytes
	BaseOffset int64 // from the header (not covered by the CRC, but above the previous batch's)
	Cause      error // why the CRC or the records failed
}

// Load recovers the in-memory state of a segment opened with Open (Kafka's LogSegment.recover,
// and, for a segment trusted as it is, the header walk of LogSegment.readNextOffset) and brings
// its indexes in line with its data. It runs once, before the segment is shared.
//
// With full set (the segment may hold bytes written after the last known flush) it rebuilds
// both indexes from a scan of every batch. Otherwise it trusts the batches before the last
// offset index entry and scans from there; if either index fails its check (missing, a size
// that is not whole entries, out of order, pointing past the data) it falls back to the full
// rebuild. A batch whose CRC (or records) fails but whose framing is whole is walked over by its
// length and reported in Corrupt; the scan stops at a batch whose framing is broken (length,
// magic, base offset not above the previous batch's last offset), and, when cutFrom is not
// NoCut, at the first bad batch of either kind whose first offset is >= cutFrom (the recovery
// point of an unclean shutdown: bytes there were never known to be flushed). Load reports the
// position and leaves the file alone: truncating (DiscardFrom, Truncate), or keeping (SetSize),
// is the caller's decision. Size and NextOffset end at the last batch scanned.
//
// The .txnindex file was read at Open: a corrupt one was emptied then, which the report's
// TxnIndexReset says; Load does not rebuild it from the log's control batches (the log's job).
//
// On success the segment joins its file cache: from then on a sealed segment's files may be
// closed for idleness (the active segment's writable indexes pin it open). Errors: the file
// system's, and index errors other than a corrupt or missing index (those are rebuilt).
func (s *Segment) Load(full bool, cutFrom int64) (LoadReport, error) {
	rep := LoadReport{BadPos: -1, TxnIndexReset: s.txnReset}
	if !full && !s.sealed && cutFrom == NoCut && s.files != nil {
		if loaded, err := s.loadClosed(); err != nil || loaded {
			return rep, err
		}
	}
	if full && !s.sealed {
		// The rebuild empties the indexes anyway. Opened as they are, the files a crash left
		// at their grown size (up to segment.index.bytes, 10 MiB by default) would first get
		// disk space for every byte and then be zeroed through the mapping: tens of MiB of page
		// cache and writes per partition, as Kafka's LogSegment.recover avoids by resetting
		// (truncating) the index files before it rebuilds them. An empty file is kept: it is
		// what the rebuild starts from, and opens unmapped (an active segment that holds no more
		// than index.interval.bytes gets no entry), where a removal and a creation would cost two
		// changes of the folder per partition.
		for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
			if fi, err := s.fs.Stat(s.Path(suf)); err == nil && fi.Size() == 0 {
				continue
			}
			if err := s.fs.Remove(s.Path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return rep, err
			}
		}
	}
	if err := s.openIndexes(!s.sealed); err != nil {
		// A sealed segment's missing index is rebuilt like a corrupt one (an active segment's
		// is created empty, and caught below).
		if !errors.Is(err, index.ErrCorrupt) && !errors.Is(err, fs.ErrNotExist) {
			return rep, err
		}
		rep.Rebuilt = err
		full = true
	}
	if !full {
		if err := s.offsetIdx.Check(s.size.Load()); err != nil {
			rep.Rebuilt, full = err, true
		} else if err := s.timeIdx.Check(1<<63 - 1); err != nil {
			rep.Rebuilt, full = err, true
		} else if s.timeIdx.Entries() == 0 && s.size.Load() > 0 {
			// Close and seal leave the segment's largest timestamp in its time index; without
			// it, a scan of the tail alone would take the tail's largest timestamp for the
			// segment's, and OffsetForTime would skip the segment.
			rep.Rebuilt, full = fmt.Errorf("%w: %s: empty time index for a segment holding data", index.ErrCorrupt, s.Path(TimeIndexSuffix)), true
		}
	}
	if !full {
		r, err := s.scanTail(cutFrom)
		if err != nil {
			return rep, err
		}
		// A time index pointing past the recovered data (the log was cut under it) is rebuilt.
		if ts, off, ok := s.timeIdx.LastEntry(); ok && off >= s.nextOffset {
			rep.Rebuilt = fmt.Errorf("%w: time index entry (%d, %d) past the last offset %d",
				index.ErrCorrupt, ts, off, s.nextOffset-1)
			full = true
		} else if r.BadPos >= 0 {
			// Entries at or past a bad batch would point into bytes about to be cut.
			if _, pos, ok := s.offsetIdx.LastEntry(); ok && pos >= r.BadPos {
				full = true
			} else {
				rep.BadPos, rep.BadOffset, rep.Cause, rep.Cut = r.BadPos, r.BadOffset, r.Cause, r.Cut
			}
		}
		if !full {
			rep.Corrupt = r.Corrupt
		}
	}
	if full {
		if s.sealed || s.offsetIdx == nil {
			// A sealed segment's indexes are read-only: rebuild them in fresh writable files.
			if err := s.recreateIndexes(); err != nil {
				return rep, err
			}
		}
		// A tail scan that stopped at a bad batch left size there: the rebuild covers the
		// whole file, so that the bad batch is reported and the tail is cut.
		size, err := s.file.Size()
		if err != nil {
			return rep, err
		}
		s.size.Store(size)
		r, err := s.rebuildCut(cutFrom)
		if err != nil {
			return rep, err
		}
		rep.BadPos, rep.BadOffset, rep.Cause, rep.Cut, rep.Corrupt = r.BadPos, r.BadOffset, r.Cause, r.Cut, r.Corrupt
		if s.sealed {
			s.sealed = false
			if err := s.Seal(); err != nil {
				return rep, err
			}
		}
	}
	// Loaded, a sealed segment is idle: its files count against the store's bound from now on
	// and are closed when it is passed, so that a log of thousands of segments opens under a
	// small descriptor limit and does not keep them all open after. The active segment is pinned
	// by its writable indexes.
	s.files.add(s)
	return rep, nil
}

// loadClosed is Load of an active segment trusted as it is (a clean shutdown) whose .log file
// holds no more than index.interval.bytes: such a segment's offset index holds no entry (the
// first entry is written once more than that many bytes precede a batch), so a scan of the whole
// file costs what a scan from the last entry would, and the index files need not be opened. As
// Kafka's LogSegment holds its indexes as LazyIndex, opened on first access, and its LogLoader
// reads no index after a clean shutdown, the segment is loaded closed, as the file cache leaves
// an idle one: its indexes are opened (writable) by the first read or append that
// needs its files (ensureOpen, OpenFiles), and in a store of thousands of partitions most are
// never opened until used. Before it trusts them unopened it looks at their sizes: an offset index
// holding no entry and a time index of whole entries (each clean close adds the segment's largest
// timestamp when it grew) no larger than segment.index.bytes; anything else, or a batch the scan
// cannot read, and loaded is false, with the segment as Open left it, for Load's checked path.
// The time index's entries are checked when the files first open (see openLocked).
func (s *Segment) loadClosed() (loaded bool, err error) {
	size := s.size.Load()
	if size > int64(s.cfg.Load().IndexIntervalBytes) {
		return false, nil
	}
	if fi, err := s.fs.Stat(s.Path(IndexSuffix)); err != nil || fi.Size() != 0 {
		return false, nil
	}
	if fi, err := s.fs.Stat(s.Path(TimeIndexSuffix)); err != nil || fi.Size()%index.TimeEntrySize != 0 || fi.Size() > int64(s.cfg.Load().SegmentIndexBytes) {
		return false, nil
	}
	r, err := s.scanFrom(0, NoCut)
	if err != nil {
		return false, err
	}
	if r.BadPos >= 0 || len(r.Corrupt) > 0 {
		// Load's checked path reports and handles it, from a fresh state.
		s.size.Store(size)
		s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp, s.rollTimestamp = s.baseOffset, -1, -1, -1
		s.bytesSinceIndex = 0
		return false, nil
	}
	s.isOpen.Store(false)
	s.checkTimeIndex, s.checkTimeIndexBelow = true, s.nextOffset
	return true, s.file.Close()
}

// recreateIndexes replaces the segment's index files with empty writable ones.
func (s *Segment) recreateIndexes() error {
	if err := s.closeIndexes(); err != nil {
		return err
	}
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
		if err := s.fs.Remove(s.Path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return s.openIndexes(true)
}

// rebuild empties both indexes and scans every batch from position 0, cutting nothing.
func (s *Segment) rebuild() (LoadReport, error) { return s.rebuildCut(NoCut) }

// rebuildCut is rebuild with the cutFrom of load.
func (s *Segment) rebuildCut(cutFrom int64) (LoadReport, error) {
	s.offsetIdx.Reset()
	s.timeIdx.Reset()
	s.nextOffset = s.baseOffset
	s.maxTimestamp, s.offsetOfMaxTimestamp, s.rollTimestamp = -1, -1, -1
	s.bytesSinceIndex = 0
	return s.scanFrom(0, cutFrom)
}

// scanTail restores the in-memory state from the indexes and scans the batches after the last
// offset index entry. With the entry at (o, p), the batch at p is the one the entry was written
// for, so bytesSinceIndex restarts at 0 there, exactly as when it was first appended.
func (s *Segment) scanTail(cutFrom int64) (LoadReport, error) {
	var start int64
	if _, pos, ok := s.offsetIdx.LastEntry(); ok {
		start = pos
	}
	if ts, off, ok := s.timeIdx.LastEntry(); ok {
		s.maxTimestamp, s.offsetOfMaxTimestamp = ts, off
	}
	// segment.ms counts from the first batch's max timestamp.
	sc := newScanner(s.file, 0, s.size.Load(), s.maxBatchSize(), recordbatch.HeaderSize, nil)
	if h, err := sc.header(); err == nil {
		s.rollTimestamp = h.MaxTimestamp
	}
	s.bytesSinceIndex = 0
	s.nextOffset = s.baseOffset
	return s.scanFrom(start, cutFrom)
}

// orderError returns the ErrCorrupt of a batch header whose base offset is below next, the lowest
// offset a batch may hold where it lies (one past the last offset of the batch before it, or the
// segment's base offset for the first), nil when it is not: offsets only grow within a segment;
// gaps are legal (Kafka's compaction leaves them). The load's scan stops at such a batch, and a
// read finds the same.
func (s *Segment) orderError(h *recordbatch.Header, next int64) error {
	switch {
	case h.BaseOffset < s.baseOffset:
		return fmt.Errorf("%w: base offset %d below the segment's %d", recordbatch.ErrCorrupt, h.BaseOffset, s.baseOffset)
	case h.BaseOffset < next:
		return fmt.Errorf("%w: base offset %d not above the previous last offset %d", recordbatch.ErrCorrupt, h.BaseOffset, next-1)
	}
	return nil
}

// scanFrom walks the batches from pos to the end of the file, indexing each valid one. A batch
// whose framing is whole (length within bounds and inside the file, magic 2, base offset above
// the previous batch's) but whose CRC or records fail is walked over by its length, as Kafka's
// LogSegment.readNextOffset walks batch headers, and listed in the report's corrupt; the walk
// stops at a batch whose framing is broken, and at the first bad batch of either kind whose
// first offset (the previous valid batch's last offset + 1) is >= cutFrom. s.size ends as the
// position where the walk stopped; s.nextOffset as one past the last offset of the valid
// batches and of the corrupt ones' headers (a later append must not reuse an offset a corrupt
// batch may hold).
func (s *Segment) scanFrom(pos, cutFrom int64) (LoadReport, error) {
	rep := LoadReport{BadPos: -1}
	limit := s.size.Load()
	sc := newScanner(s.file, pos, limit, s.maxBatchSize(), scanChunk, nil)
	lastCorruptBase, claimedNext := int64(-1), int64(-1)
	afterCorrupt := false // a batch was walked over since the last valid one
	for {
		h, err := sc.header()
		if errors.Is(err, io.EOF) {
			break
		}
		parsed := err == nil // the header's fields can be read (its offsets are checked below)
		if err == nil {
			// Offsets only grow; gaps are legal (Kafka's compaction leaves them).
			err = s.orderError(&h, s.nextOffset)
			switch {
			case err != nil:
			case h.BaseOffset <= lastCorruptBase:
				err = fmt.Errorf("%w: base offset %d not above the previous batch's %d", recordbatch.ErrCorrupt, h.BaseOffset, lastCorruptBase)
			case h.LastOffset()-s.baseOffset > math.MaxInt32:
				// The indexes hold offsets relative to the base offset in 31 bits (Kafka's
				// LogSegment rejects such a batch too): no segment ever written holds it.
				err = fmt.Errorf("%w: last offset %d more than 2^31-1 above the segment's base offset %d", recordbatch.ErrCorrupt, h.LastOffset(), s.baseOffset)
			}
		}
		framed := err == nil
		if err == nil {
			_, err = sc.batch(h)
		}
		if err != nil {
			if !errors.Is(err, recordbatch.ErrCorrupt) && !errors.Is(err, recordbatch.ErrShort) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return rep, err
			}
			first := s.nextOffset
			if parsed && h.BaseOffset >= s.baseOffset && h.BaseOffset < first {
				// The batch names offsets below those of the batches before it, whose base
				// offset (not covered by the CRC) must then be damaged: these bytes hold its own
				// offsets, and whether they lie below the recovery point is decided by them, not
				// by the damaged claim. A flipped base offset must not turn flushed bytes into
				// a "torn tail".
				first = h.BaseOffset
			}
			if first >= cutFrom || !framed {
				rep.BadPos, rep.BadOffset, rep.Cause, rep.Cut = sc.pos, first, err, first >= cutFrom
				break
			}
			// Whole framing, bad contents: left in place, walked over.
			rep.Corrupt = append(rep.Corrupt, CorruptBatch{Pos: sc.pos, BaseOffset: h.BaseOffset, Cause: err})
			lastCorruptBase = h.BaseOffset
			claimedNext = max(claimedNext, h.LastOffset()+1)
			afterCorrupt = true
			s.bytesSinceIndex += h.Size()
			sc.skip(h)
			continue
		}
		if afterCorrupt && !s.sealed && s.offsetIdx != nil && s.offsetIdx.CanAppend(h.BaseOffset) {
			// A read finds its batch by the last offsets in the headers from the index entry
			// before it on, and a corrupt batch's header may claim any: an entry at this batch's
			// base offset starts the reads of its offsets here, past the corrupt ones, which
			// still answer ErrCorrupt for the offsets below it. Kafka's entries are a batch's
			// last offset; one at its base offset is as valid a place to start a scan.
			if err := s.offsetIdx.Append(h.BaseOffset, sc.pos); err != nil {
				return rep, err
			}
			s.bytesSinceIndex = 0
		}
		afterCorrupt = false
		if err := s.indexLoaded(BatchInfo{Position: sc.pos, Size: h.Size(), LastOffset: h.LastOffset(), MaxTimestamp: h.MaxTimestamp}); err != nil {
			return rep, err
		}
		// The corrupt batches before this valid one hold offsets below its base offset, whatever
		// their damaged headers claim: a claim past it (a flipped last offset delta, which the
		// CRC covers) must not move the log end offset.
		claimedNext = -1
		sc.skip(h)
	}
	s.size.Store(sc.pos)
	s.nextOffset = max(s.nextOffset, claimedNext)
	return rep, nil
}

// indexLoaded is indexBatch for a batch found on disk: a sealed segment's read-only indexes are
// already complete, so only the in-memory state moves.
func (s *Segment) indexLoaded(b BatchInfo) error {
	if !s.sealed && s.offsetIdx != nil {
		return s.IndexBatch(b)
	}
	if !s.sealed {
		// Loaded closed (loadClosed): the batch is counted as IndexBatch counts it, its index
		// files untouched (the scan covers no more than index.interval.bytes: no entry is due).
		s.bytesSinceIndex += b.Size
	}
	if s.rollTimestamp < 0 {
		s.rollTimestamp = b.MaxTimestamp
	}
	if b.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = b.MaxTimestamp, b.LastOffset
	}
	s.nextOffset = b.LastOffset + 1
	return nil
}
