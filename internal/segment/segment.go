package commitlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// File name suffixes of a segment, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentName returns the file name stem of the segment with the given base offset: 20 digits,
// zero-padded, as Kafka names segment files.
func segmentName(baseOffset int64) string { return fmt.Sprintf("%020d", baseOffset) }

// parseSegmentName returns the base offset named by a file name such as
// "00000000000000001234.log" and whether the name is one.
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// segment is one .log file and its two indexes. The log serialises writers; readers look the
// indexes up under the log's read lock (the active segment's grow, and truncation rebuilds a
// segment's), and read the .log file without it.
//
// The active segment's files are open for as long as it is active. A sealed segment's files are
// opened on first use and may be closed again when idle (no read holds a reference) to keep the
// files a store holds open under its bound (see fileCache): a read acquires the segment, then
// finds its files open (filesReady) or opens them (open); they stay open until it releases.
// The in-memory state (sizes, offsets, timestamps) stays whether the files are open or not.
type segment struct {
	fs         fsys.FS
	dir        string
	baseOffset int64
	cfg        *LogConfig
	files      *fileCache // bounds open files across the store; nil keeps the files open

	// file and the indexes are valid while isOpen is set (for a reader that holds a reference,
	// until it releases it); they change only under openMu with no reference held, or, for the
	// active segment, under the log's locks. A closed file stays in file, so that a read that
	// took it before the log closed gets an error from it rather than a nil.
	file      fsys.File
	offsetIdx *index.Offset
	timeIdx   *index.Time

	// openMu serialises opening and closing the files: a read opening them, the cache closing
	// them for idleness, Close, and retire's renames (a reopen must find the files' names).
	openMu sync.Mutex
	isOpen atomic.Bool // file and the indexes are open; set and cleared under openMu
	dead   bool        // closed for good (log closed, segment removed); guarded by openMu
	// pinned keeps the files open: the indexes are writable (the active segment, or one being
	// sealed until its indexes are remapped read-only).
	pinned atomic.Bool
	// used is the cache's reference bit, set by every read, cleared by the clock hand.
	used atomic.Bool
	// cacheNext and cachePrev link the segment in its cache's ring while its files are open;
	// guarded by the cache's mu.
	cacheNext, cachePrev *segment

	// size is the number of bytes of whole, valid batches; readers never read past it.
	size atomic.Int64
	// nextOffset is the offset after the segment's last batch (baseOffset when empty).
	nextOffset int64
	// maxTimestamp is the largest batch MaxTimestamp in the segment (-1 when none) and
	// offsetOfMaxTimestamp the last offset of the batch that holds it, for the time index.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// timesUnknown is set at open for a segment holding bytes left in place that cannot be read
	// (a corrupt batch, or an unreadable rest): their timestamps are unknown, so OffsetForTime
	// must not skip the segment for a largest timestamp taken from the readable batches. Time
	// retention still goes by maxTimestamp, as Kafka's goes by the time index's largest entry.
	timesUnknown bool
	// rollTimestamp is the first batch's MaxTimestamp, which segment.ms is measured from
	// (Kafka's rollingBasedTimestamp); -1 when empty.
	rollTimestamp int64
	// bytesSinceIndex counts bytes appended since the last offset index entry.
	bytesSinceIndex int
	sealed          bool

	// refs counts reads in progress; a retired segment's files are closed and removed only
	// when it drops to 0 (and its delete delay has passed), and only a segment at 0 is closed for
	// idleness (the cache holds it at evicting meanwhile).
	refs atomic.Int32
	// retired is set when retention or truncation removed the segment from the log and renamed
	// its files "*.deleted" (set under the log's retireMu and openMu); deleteAt, guarded by
	// retireMu, is when they may go.
	retired atomic.Bool // read without retireMu by release, on every read's end
	// truncations counts the times the segment's data was cut in place (TruncateTo), so that a
	// BatchRange, which holds positions rather than bytes, can tell that they changed.
	truncations atomic.Uint64
	deleteAt    time.Time
	// retiredSuffix ends the names of its files once retired (see retiredSuffixFor); set before
	// retired, under openMu.
	retiredSuffix string

	// posCache is the store's record position cache (nil: none); positions heads the list of
	// this segment's entries in it, guarded by the cache's mu.
	posCache  *positionCache
	positions *positionEntry

	// The read mapping of the .log file (see segment_map.go): shared says whether the file
	// system's mappings share the file's pages; rmap is the current mapping, nil when none;
	// mapMu serialises making and dropping it, and mapHold (guarded by mapMu) counts the
	// truncations under way, during which no mapping is made.
	shared  bool
	mapMu   sync.Mutex
	rmap    atomic.Pointer[readMapping]
	mapHold int
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+suffix)
}

// createSegment creates the files of a new, empty, active segment, with the disk space of its
// indexes' first entries reserved. The caller syncs the directory. spared says that a roll has
// just renamed spare files to the segment's names (log_spare.go): they are empty, and no stale
// index is left to remove.
//
// On failure (a full disk, as a rule: syscall.ENOSPC from a creation, the index preallocation or
// the reservation) no segment is made, and the files at the segment's names are removed: they
// are empty or stale, as nothing of the log is at or past the base offset of a segment being
// created.
func createSegment(fs fsys.FS, dir string, baseOffset int64, cfg *LogConfig, spared bool) (*segment, error) {
	s := &segment{fs: fs, dir: dir, baseOffset: baseOffset, cfg: cfg, files: fileCacheOf(fs), posCache: positionCacheOf(fs),
		nextOffset: baseOffset, maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1}
	if err := s.createFiles(spared); err != nil {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if rerr := fs.Remove(s.path(suf)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
		return nil, err
	}
	s.isOpen.Store(true)
	s.files.add(s)
	return s, nil
}

// createFiles creates (or, spared, opens) the .log file and the writable indexes of a new
// segment; on failure it closes whichever it opened.
func (s *segment) createFiles(spared bool) error {
	f, err := s.fs.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	s.file, s.shared = f, fsys.SharesMappings(f)
	// Stale indexes of an earlier segment at this base offset must not be trusted; claimed spares
	// were renamed over them.
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if spared {
			break
		}
		if err := s.fs.Remove(s.path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errors.Join(err, f.Close())
		}
	}
	if err := s.openIndexes(true); err != nil {
		return errors.Join(err, f.Close())
	}
	return nil
}

// openSegment opens an existing segment's .log file and takes its size; load then opens the
// indexes and recovers the in-memory state, and the log adds the segment to its file cache.
func openSegment(fs fsys.FS, dir string, baseOffset int64, cfg *LogConfig, sealed bool) (*segment, error) {
	s := &segment{fs: fs, dir: dir, baseOffset: baseOffset, cfg: cfg, files: fileCacheOf(fs), posCache: positionCacheOf(fs),
		nextOffset: baseOffset, maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1, sealed: sealed}
	f, err := fs.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.file, s.shared = f, fsys.SharesMappings(f)
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size.Store(size)
	s.isOpen.Store(true)
	return s, nil
}

// filesReady reports whether s's files are open, for a read that has acquired s; it marks s
// used for the cache. When it returns true the files stay open until the read releases s: the
// cache closes only segments whose count it moves from 0 to evicting, which the read's reference
// prevents. A negative count is an eviction that began before the read's acquire: the read must
// wait for it in open.
func (s *segment) filesReady() bool {
	if s.refs.Load() <= 0 || !s.isOpen.Load() {
		return false
	}
	if !s.used.Load() {
		// Only a clear bit is written: every read of a hot segment storing it would bounce its
		// cache line between cores.
		s.used.Store(true)
	}
	return true
}

// open opens the files of a sealed segment closed for idleness (a no-op when they are open),
// for a read that has acquired s and called filesReady. The indexes are mapped read-only; the
// .log file is opened for writing too, as truncation may make the segment active again. The
// files are found under their "*.deleted" names once the segment is retired. ErrClosed when the
// log closed or the segment was removed.
func (s *segment) open() error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.dead {
		return ErrClosed
	}
	s.used.Store(true)
	if s.isOpen.Load() {
		return nil
	}
	suffix := ""
	if s.retired.Load() {
		suffix = s.retiredSuffix
	}
	f, err := s.fs.OpenFile(s.path(logSuffix+suffix), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	ox, err := index.OpenOffset(s.fs, s.path(indexSuffix+suffix), s.baseOffset, s.cfg.SegmentIndexBytes, false)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	tx, err := index.OpenTime(s.fs, s.path(timeIndexSuffix+suffix), s.baseOffset, s.cfg.SegmentIndexBytes, false)
	if err != nil {
		return errors.Join(err, ox.Close(), f.Close())
	}
	s.file, s.offsetIdx, s.timeIdx = f, ox, tx
	s.isOpen.Store(true)
	s.files.add(s)
	return nil
}

// beginEvict claims s for the cache to close its files: it succeeds only when nobody opens or
// closes s (openMu is free; it stays held until finishEvict), s is open, not pinned, and no read
// holds it (the reference count goes from 0 to evicting, so a read acquiring s meanwhile sees a
// negative count and waits on openMu).
func (s *segment) beginEvict() bool {
	if !s.openMu.TryLock() {
		return false
	}
	if s.dead || !s.isOpen.Load() || s.pinned.Load() || !s.refs.CompareAndSwap(0, evicting) {
		s.openMu.Unlock()
		return false
	}
	return true
}

// finishEvict closes the files of a segment beginEvict claimed and lets reads open them again.
func (s *segment) finishEvict() error {
	// Cleared before the count is restored: a read that sees its reference counted sees the
	// files closed.
	s.isOpen.Store(false)
	err := s.closeFiles()
	s.refs.Add(-evicting)
	s.openMu.Unlock()
	return err
}

// closeFiles closes the indexes and the .log file, lets the read mapping go once the reads using
// it end, and drops the segment's cached record positions (a closed segment may be truncated or
// removed before it opens again). Callers hold openMu (or own s alone) and have cleared isOpen.
func (s *segment) closeFiles() error {
	s.dropMapping()
	s.posCache.invalidate(s)
	err := s.closeIndexes()
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	return err
}

// openIndexes opens both indexes, writable (preallocated) or read-only. Writable indexes pin
// the segment's files open (see syncIndexes for the unpinning).
func (s *segment) openIndexes(writable bool) error {
	s.pinned.Store(writable)
	var err error
	s.offsetIdx, err = index.OpenOffset(s.fs, s.path(indexSuffix), s.baseOffset, s.cfg.SegmentIndexBytes, writable)
	if err != nil {
		return err
	}
	s.timeIdx, err = index.OpenTime(s.fs, s.path(timeIndexSuffix), s.baseOffset, s.cfg.SegmentIndexBytes, writable)
	if err != nil {
		s.offsetIdx.Close()
		s.offsetIdx = nil
		return err
	}
	return nil
}

// closeIndexes closes whichever indexes are open.
func (s *segment) closeIndexes() error {
	var errs []error
	if s.offsetIdx != nil {
		errs = append(errs, s.offsetIdx.Close())
		s.offsetIdx = nil
	}
	if s.timeIdx != nil {
		errs = append(errs, s.timeIdx.Close())
		s.timeIdx = nil
	}
	return errors.Join(errs...)
}

// batchInfo is what the log needs to know of a batch it is about to index.
type batchInfo struct {
	position     int64
	size         int
	baseOffset   int64
	lastOffset   int64
	maxTimestamp int64
}

// indexBatch records a batch appended at b.position in the in-memory state and the indexes,
// following Kafka's LogSegment.append: an index entry is written before a batch once more than
// index.interval.bytes were appended since the last entry.
func (s *segment) indexBatch(b batchInfo) error {
	if s.rollTimestamp < 0 {
		s.rollTimestamp = b.maxTimestamp
	}
	if b.maxTimestamp > s.maxTimestamp {
		s.maxTimestamp = b.maxTimestamp
		s.offsetOfMaxTimestamp = b.lastOffset
	}
	if s.bytesSinceIndex > s.cfg.IndexIntervalBytes {
		// One write of several batches can bring more entries than an index has room for
		// (canHold checks for one). An entry is only a shortcut for lookups: one that does not
		// fit is left out, and the next write rolls the segment. The time index keeps its last
		// slot for the entry written at seal and close.
		if s.offsetIdx.CanAppend(b.lastOffset) {
			if err := s.offsetIdx.Append(b.lastOffset, b.position); err != nil {
				return err
			}
		}
		if s.timeIdx.CanAppend(s.offsetOfMaxTimestamp) {
			if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil {
				return err
			}
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += b.size
	s.nextOffset = b.lastOffset + 1
	return nil
}

// reserveIndexes makes sure that the index entries of the next batches batches need no disk
// space when they are stored (see index.Offset.Reserve): a write reserves them before its bytes
// go to the .log, so that a full disk fails it with nothing written. Callers hold the log's
// writers' lock.
func (s *segment) reserveIndexes(batches int) error {
	if err := s.offsetIdx.Reserve(batches); err != nil {
		return err
	}
	return s.timeIdx.Reserve(batches)
}

// canHold reports whether a write of n bytes whose last offset is lastOffset and largest
// timestamp maxTimestamp fits this segment, by Kafka's roll rules: size, segment.ms measured in
// record time, full indexes, 32-bit relative offsets.
func (s *segment) canHold(n int, lastOffset, maxTimestamp int64) bool {
	return s.canHoldAt(s.size.Load(), n, lastOffset, maxTimestamp)
}

// canHoldAt is canHold for the segment grown to size bytes (with appends staged for it).
func (s *segment) canHoldAt(size int64, n int, lastOffset, maxTimestamp int64) bool {
	if size == 0 {
		return s.offsetIdx.CanAppend(lastOffset) && s.timeIdx.CanAppend(lastOffset)
	}
	switch {
	case size > s.cfg.SegmentBytes-int64(n):
		return false
	case s.rollTimestamp >= 0 && maxTimestamp-s.rollTimestamp > s.cfg.SegmentDuration.Milliseconds():
		return false
	case !s.offsetIdx.CanAppend(lastOffset) || !s.timeIdx.CanAppend(lastOffset):
		return false
	}
	return true
}

// seal makes the segment read-only: the final time index entry (Kafka appends the segment's max
// timestamp when it becomes inactive), data synced, indexes trimmed, synced and remapped.
func (s *segment) seal() error {
	if s.sealed {
		return nil
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	if err := s.sealIndexes(); err != nil {
		return err
	}
	// Trimmed and synced, the indexes of a sealed segment survive a power loss as they are.
	return s.syncIndexes()
}

// sealIndexes writes the final time index entry (Kafka appends the segment's max timestamp when
// it becomes inactive), trims both indexes and remaps them read-only, and marks the segment
// sealed. It does no fsync: a rolling log runs it under the lock readers take for index lookups
// and syncs afterwards.
func (s *segment) sealIndexes() error {
	if s.maxTimestamp >= 0 {
		if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil && !errors.Is(err, index.ErrFull) {
			return err
		}
	}
	if err := s.offsetIdx.Seal(); err != nil {
		return err
	}
	if err := s.timeIdx.Seal(); err != nil {
		return err
	}
	s.sealed = true
	return nil
}

// syncIndexes makes both indexes' entries and sizes durable. Once a sealed segment's indexes are
// durable, the files may be closed for idleness: nothing is written to them again, and a reopen
// finds them as they are.
func (s *segment) syncIndexes() error {
	err := errors.Join(s.offsetIdx.Sync(), s.timeIdx.Sync())
	if err == nil && s.sealed {
		s.pinned.Store(false)
	}
	return err
}

// close releases the segment's files for good (the log closes, or the segment is removed);
// writable indexes are trimmed to their used size. The final time index entry is written first,
// so a reopen knows the segment's max timestamp. A read that still holds the segment gets errors
// from the closed files; it cannot open them again.
func (s *segment) close() error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.dead = true
	s.files.remove(s)
	if !s.isOpen.Load() {
		return nil
	}
	var errs []error
	if !s.sealed && s.timeIdx != nil && s.maxTimestamp >= 0 {
		if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil && !errors.Is(err, index.ErrFull) {
			errs = append(errs, err)
		}
	}
	if !s.sealed && s.offsetIdx != nil && s.timeIdx != nil {
		// A clean shutdown trusts the indexes on the next open: make them durable.
		errs = append(errs, s.syncIndexes())
	}
	s.isOpen.Store(false)
	errs = append(errs, s.closeFiles())
	return errors.Join(errs...)
}

// deletedSuffix marks the files of a segment retention or truncation removed, until they are
// deleted, as Kafka marks them.
const deletedSuffix = ".deleted"

// retire renames the segment's files to "*<suffix>" (".deleted", or ".<n>.deleted"; see
// retiredSuffixFor); they stay open for reads in progress, and a read that acquired the segment
// before it left the log reopens them under those names.
func (s *segment) retire(deleteAt time.Time, suffix string) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	// Nothing is written to a segment out of the log: its files may close when idle.
	s.pinned.Store(false)
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Rename(s.path(suf), s.path(suf+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.retiredSuffix = suffix
	s.deleteAt = deleteAt
	s.retired.Store(true)
	// Reads in progress finish on the files; no later read needs the positions.
	s.posCache.invalidate(s)
	return errors.Join(errs...)
}

// removeRetired closes a retired segment and deletes its renamed files.
func (s *segment) removeRetired() error {
	errs := []error{s.close()}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Remove(s.path(suf + s.retiredSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	errs := []error{s.close()}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Remove(s.path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// headerAt reads and parses the batch header at pos, for a segment whose valid data ends at
// limit. It checks the length against limit and the configured maximum but not the CRC.
func (s *segment) headerAt(buf []byte, pos, limit int64) (recordbatch.Header, error) {
	if limit-pos < recordbatch.HeaderSize {
		return recordbatch.Header{}, recordbatch.ErrShort
	}
	buf = buf[:recordbatch.HeaderSize]
	if _, err := s.file.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return recordbatch.Header{}, err
	}
	h, err := recordbatch.ParseHeader(buf, s.maxBatchSize())
	if err != nil {
		return h, err
	}
	if int64(h.Size()) > limit-pos {
		return h, recordbatch.ErrShort
	}
	return h, nil
}

// maxBatchSize bounds the length field of batches read from disk. A batch written under an
// earlier, larger max.message.bytes must stay readable, so the bound is the larger of the
// configured limit and the segment size limit.
func (s *segment) maxBatchSize() int {
	return int(max(int64(s.cfg.MaxMessageBytes), min(s.cfg.SegmentBytes, 1<<31-1)))
}

// corruptError describes a bad batch in this segment.
func (s *segment) corruptError(pos int64, offset int64, cause error) error {
	return fmt.Errorf("%w: %s position %d (offset %d): %w", ErrCorrupt, s.path(logSuffix), pos, offset, cause)
}
