package segment

import (
	"errors"
	"os"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// BaseOffset returns the offset the segment's file names carry: the lowest offset it can hold.
func (s *Segment) BaseOffset() int64 { return s.baseOffset }

// NextOffset returns the offset after the segment's last batch (its base offset when empty):
// for the active segment, the log end offset. It changes under the single writer (IndexBatch,
// Load, Truncate, MarkTimesUnknown): a reader reads it under the lock the writer publishes under.
func (s *Segment) NextOffset() int64 { return s.nextOffset }

// Size returns the bytes of whole, valid batches readers may read (the .log file may hold more:
// a write not yet published). Safe concurrently.
func (s *Segment) Size() int64 { return s.size.Load() }

// SetSize sets the bytes readers may read: after a write's IndexBatch, the end of its bytes; at
// load, the file's size, to keep in place unreadable bytes that Load stopped at (reads of them
// return ErrCorrupt). Single writer.
func (s *Segment) SetSize(n int64) { s.size.Store(n) }

// MaxTimestamp returns the largest batch MaxTimestamp in the segment, ms (-1 when none): what time
// retention and OffsetForTime go by. Read under the writer's publication lock, as NextOffset.
func (s *Segment) MaxTimestamp() int64 { return s.maxTimestamp }

// OffsetOfMaxTimestamp returns the last offset of the first batch whose MaxTimestamp is the
// segment's (-1 when none): where the record of the largest timestamp lies. Read under the
// writer's publication lock, as NextOffset.
func (s *Segment) OffsetOfMaxTimestamp() int64 { return s.offsetOfMaxTimestamp }

// TimesUnknown reports whether the segment holds bytes whose timestamps are unknown (a corrupt
// batch or an unreadable rest left in place, see MarkTimesUnknown): OffsetForTime must search it
// whatever MaxTimestamp says.
func (s *Segment) TimesUnknown() bool { return s.timesUnknown }

// MarkTimesUnknown records, at load, that the segment holds bytes left in place that cannot be
// read: their timestamps are unknown (see TimesUnknown), and their offsets may run up to next (the
// next segment's base offset), which becomes NextOffset. Time retention still goes by
// MaxTimestamp, as Kafka's goes by the time index's largest entry. Single writer.
func (s *Segment) MarkTimesUnknown(next int64) {
	s.timesUnknown = true
	s.nextOffset = next
}

// Truncations returns how many times the segment's data was cut in place (Truncate). A read
// loads it with Size under the log's read lock, and compares it after reading: a change says the
// bytes it read may be cut or rewritten ones, and it must read again rather than report damage.
// Safe concurrently.
func (s *Segment) Truncations() uint64 { return s.truncations.Load() }

// File returns the .log file, for a zero-copy transfer (sendfile) of a range of whole batches.
// It is valid while the caller holds a reference (Acquire) and has opened the files (FilesReady
// or OpenFiles); the caller must not write to it.
func (s *Segment) File() fsys.File {
	s.ensureOpen() // a failure leaves the closed file, whose reads return the error
	return s.file
}

// WriteAt writes p, whole batches, to the .log file at pos, the segment's Size (plus what the
// writer staged since): nothing of it is visible to readers until IndexBatch and SetSize. Single
// writer. On error part of p may be in the file: the writer removes it with DiscardFrom.
func (s *Segment) WriteAt(p []byte, pos int64) error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	_, err := s.file.WriteAt(p, pos)
	return err
}

// DiscardFrom truncates the .log file to pos, at or past Size: a failed write's partial bytes,
// or, at load, a torn tail Load reported with Cut (then pos is its BadPos, already Size). The
// indexes are left alone (nothing past Size is indexed). No fsync (see Sync). Single writer.
func (s *Segment) DiscardFrom(pos int64) error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	return s.file.Truncate(pos)
}

// Sync makes the .log file's data durable (fdatasync where the file system has it), and the
// .txnindex file's when it was written since its last sync (Kafka's LogSegment.flush syncs the
// txn index with the log). Safe concurrently with reads and with the single writer's WriteAt and
// AppendAbortedTxn (it covers what was written before it began). Files the cache closed while
// idle are opened again for it, and stay open until it ends: it runs outside the writer lock.
func (s *Segment) Sync() error {
	if s.writer != nil {
		s.openMu.Lock()
		defer s.openMu.Unlock()
		if !s.dead && !s.isOpen.Load() {
			// Closed for idleness: the files are synced by name, not opened and mapped again.
			if err := s.syncClosed(); err != nil {
				return err
			}
			return s.txn.Sync()
		}
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	return s.txn.Sync()
}

// syncClosed makes the .log file of a segment whose files are closed durable, and its indexes
// when they were trimmed at the close and not synced since (idleUnsynced): each is opened
// read-only, synced and closed, as Kafka's LogSegment.flush syncs the log and both indexes. The
// caller holds openMu.
func (s *Segment) syncClosed() error {
	if err := syncByName(s.fs, s.Path(LogSuffix)); err != nil {
		return err
	}
	if s.idleUnsynced.Load() {
		return s.syncClosedIndexes()
	}
	return nil
}

// syncClosedIndexes syncs the index files of a segment whose files are closed, by name, and
// clears idleUnsynced. The caller holds openMu.
func (s *Segment) syncClosedIndexes() error {
	if err := errors.Join(syncByName(s.fs, s.Path(IndexSuffix)), syncByName(s.fs, s.Path(TimeIndexSuffix))); err != nil {
		return err
	}
	s.idleUnsynced.Store(false)
	return nil
}

// syncByName opens the file at name read-only, syncs it and closes it: fsync makes the file's
// data and size durable through any descriptor of it.
func syncByName(fsy fsys.FS, name string) error {
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// Unpin lets the file cache close a sealed segment's files when idle, and closes idle segments
// now if the open files exceed the bound. A rolling log calls it once the sealed segment's
// indexes are remapped read-only: their bytes are in the page cache, and a reopen finds them; a
// compaction once it has swapped a segment made by CreateCleaned into the log.
func (s *Segment) Unpin() {
	s.pinHeld = false
	s.pinned.Store(false)
	if s.files != nil {
		s.files.Trim()
	}
}

// Lookup returns the position the offset index gives to scan from for offset: that of the batch
// of the last entry at or below offset, or 0. The caller holds a reference with the files open,
// and no writer changes the indexes meanwhile (IndexBatch, SealIndexes and Truncate of the
// segment run under the writer side of the lock the caller holds for reading).
func (s *Segment) Lookup(offset int64) int64 {
	if s.offsetIdx == nil {
		return 0 // files closed: the scan starts at the segment's first batch
	}
	_, pos := s.offsetIdx.Lookup(offset)
	return pos
}

// LookupTime returns the offset to search from for the first timestamp >= ts (ms), by the time
// index (Kafka's TimeIndex.lookup, with a strict bound: see index.Time.LookupBefore): one past the
// offset of the last entry whose timestamp is below ts, or the base offset when none is.
// Conditions as for Lookup.
func (s *Segment) LookupTime(ts int64) int64 {
	if s.timeIdx == nil {
		return s.baseOffset // files closed: the search starts at the segment's first offset
	}
	if off, ok := s.timeIdx.LookupBefore(ts); ok {
		return off + 1
	}
	return s.baseOffset
}

// State is a snapshot of a segment's in-memory state and index entries, for tests and
// diagnostics.
type State struct {
	Size, NextOffset                   int64      // as Size and NextOffset return them
	MaxTimestamp, OffsetOfMaxTimestamp int64      // ms, and the last offset of the batch holding it; -1 when none
	RollTimestamp                      int64      // the first batch's MaxTimestamp, ms; -1 when empty
	BytesSinceIndex                    int        // bytes appended since the last offset index entry
	Sealed                             bool       // read-only indexes: the segment is not the active one
	OffsetEntries                      [][2]int64 // the offset index's (offset, position) entries
	TimeEntries                        [][2]int64 // the time index's (timestamp, offset) entries
}

// State returns a snapshot of the segment (see State). The caller holds a reference with the
// files open, and the lock the writer publishes under.
func (s *Segment) State() State {
	st := State{Size: s.size.Load(), NextOffset: s.nextOffset, MaxTimestamp: s.maxTimestamp,
		OffsetOfMaxTimestamp: s.offsetOfMaxTimestamp, RollTimestamp: s.rollTimestamp,
		BytesSinceIndex: s.bytesSinceIndex, Sealed: s.sealed}
	if s.ensureOpen() != nil {
		return st // no index entries to show
	}
	for i := range s.offsetIdx.Entries() {
		o, p := s.offsetIdx.Entry(i)
		st.OffsetEntries = append(st.OffsetEntries, [2]int64{o, p})
	}
	for i := range s.timeIdx.Entries() {
		ts, o := s.timeIdx.Entry(i)
		st.TimeEntries = append(st.TimeEntries, [2]int64{ts, o})
	}
	return st
}

// IndexEntries returns the number of entries in the offset index and in the time index, without
// copying them as State does. The caller holds a reference with the files open, and the lock the
// writer publishes under. For tests and diagnostics.
func (s *Segment) IndexEntries() (offsetEntries, timeEntries int) {
	if err := s.ensureOpen(); err != nil {
		return 0, 0
	}
	return s.offsetIdx.Entries(), s.timeIdx.Entries()
}

// CheckIndexes runs the indexes' own checks (index.Offset.Check against Size, index.Time.Check
// against NextOffset-1): entries in order and pointing inside the data. Each error wraps
// index.ErrCorrupt. The caller holds a reference with the files open, and the lock the writer
// publishes under. For tests and diagnostics.
func (s *Segment) CheckIndexes() (offsetErr, timeErr error) {
	if err := s.ensureOpen(); err != nil {
		return err, err
	}
	return s.offsetIdx.Check(s.size.Load()), s.timeIdx.Check(s.nextOffset - 1)
}

// FilesOpen reports whether the segment's files are open now (the file cache may close a sealed
// segment's when idle). For tests and diagnostics: the answer may be stale at once.
func (s *Segment) FilesOpen() bool { return s.isOpen.Load() }

// Pinned reports whether the file cache must leave the segment's files open: its indexes are
// writable (the active segment, or one being sealed). For tests and diagnostics.
func (s *Segment) Pinned() bool { return s.pinned.Load() }

// Retired reports whether Retire renamed the segment's files. Safe concurrently.
func (s *Segment) Retired() bool { return s.retired.Load() }

// CloseIdle closes the files of s as its file cache closes an idle segment, if s is idle (open,
// not pinned, held by no read): closed says whether it did. For tests and diagnostics; the files
// open again on the next read.
func (s *Segment) CloseIdle() (closed bool, err error) {
	if !s.beginEvict() {
		return false, nil
	}
	if s.files != nil {
		s.files.remove(s)
	}
	return true, s.finishEvict()
}

// MappedSize returns the bytes the segment's current read mapping covers, -1 when it holds none.
// For tests and diagnostics.
func (s *Segment) MappedSize() int64 {
	if m := s.rmap.Load(); m != nil {
		return int64(len(m.b))
	}
	return -1
}

// SharesMappings reports whether the file system's mappings of the .log file share its pages, so
// that ReadRecord reads through a mapping (see the package documentation).
func (s *Segment) SharesMappings() bool { return s.shared }
