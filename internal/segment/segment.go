package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// File name suffixes of a segment, as Kafka names them.
const (
	LogSuffix       = ".log"       // the batches
	IndexSuffix     = ".index"     // the offset index
	TimeIndexSuffix = ".timeindex" // the time index
	TxnIndexSuffix  = ".txnindex"  // the aborted-transaction index, once it has an entry
)

// Errors of the package. The root package re-exports ErrCorrupt and ErrClosed under the same
// names, so their texts are the ones its callers see; it turns ErrNoRecord into its own
// ErrNoRecordYet.
var (
	// ErrCorrupt is wrapped by every error about bytes of a segment that are not a valid
	// RecordBatch v2 (bad length, magic or CRC, records that disagree with their header); the
	// wrapping text names the file, the position and the offset.
	ErrCorrupt = errors.New("commitlog: corrupt data")
	// ErrClosed is returned by a read that needs the files of a segment closed for good (its
	// log closed, or it was removed).
	ErrClosed = errors.New("commitlog: closed")
	// ErrNoRecord ends a ReadRecord that found no record below the readable end it was given.
	ErrNoRecord = errors.New("no record")
)

// Config is what a segment uses of its log's configuration (Kafka's LogConfig). The caller fills
// every field (the log applies Kafka's defaults first) and does not change it while a segment
// uses it.
type Config struct {
	// IndexIntervalBytes is index.interval.bytes: the bytes appended between two offset index
	// entries.
	IndexIntervalBytes int
	// SegmentBytes is segment.bytes: CanHold refuses a write that would make the .log larger.
	SegmentBytes int64
	// SegmentDuration is segment.ms: CanHold refuses a write whose largest timestamp is this much
	// newer than the segment's first batch's (Kafka's rollingBasedTimestamp).
	SegmentDuration time.Duration
	// SegmentIndexBytes is segment.index.bytes: the largest size of each writable index file
	// (it grows to it by steps, see package index); CanHold refuses a write once an index is full.
	SegmentIndexBytes int
	// MaxMessageBytes is max.message.bytes. With SegmentBytes it bounds the length field of a
	// batch read from disk: the larger of the two (SegmentBytes capped at 2^31-1), so that a
	// batch written under an earlier, larger max.message.bytes stays readable.
	MaxMessageBytes int
	// MaxDecompressedBytes bounds the decompressed size of one stored batch when ReadRecord
	// decodes it (a compressed batch); FirstAtOrAfter takes its bound as an argument.
	MaxDecompressedBytes int
}

// Caches are the store-wide caches a segment uses, shared by every segment of the logs opened
// with one set of options. A nil field turns its cache off.
type Caches struct {
	// Files bounds the files held open (nil: every segment keeps its files open).
	Files *FileCache
	// Positions keeps ReadRecord's verified batches (nil: every ReadRecord checks its batch).
	Positions *PositionCache
	// Writer is the lock the segment's log holds while it writes (its appendMu): with it set,
	// the file cache may close the files of the log's active segment too while idle, holding
	// Writer meanwhile (it only tries it: a writer at work keeps the files open), and the
	// segment's writer methods open them again when they find them closed (see ensureOpen).
	// nil: an active segment keeps its files open. Not store-wide: each log sets its own.
	Writer *sync.Mutex
	// Lookups is the lock the log's readers hold read-locked while they look an index up (its
	// mu): ReserveIndexes holds it for writing while an index grows, since growing remaps it
	// (see package index). nil: no read looks the indexes up while the writer reserves.
	Lookups *sync.RWMutex
}

// Name returns the file name stem of the segment with the given base offset: 20 digits,
// zero-padded, as Kafka names segment files.
func Name(baseOffset int64) string { return fmt.Sprintf("%020d", baseOffset) }

// ParseName returns the base offset named by a file name such as
// "00000000000000001234.log" (with suffix ".log") and whether the name is one.
func ParseName(name, suffix string) (int64, bool) {
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

// Segment is one .log file and its two indexes (Kafka's LogSegment with its OffsetIndex and
// TimeIndex); see the package documentation for the layout, the lifecycle and which methods the
// caller serialises. The caller (the log) serialises the writer's methods; readers look the
// indexes up under the lock the writer publishes under (the active segment's grow, and
// truncation rebuilds a segment's), and read the .log file without it.
//
// A segment's files are opened on first use and may be closed again when idle (no read holds a
// reference, and, for the active segment, its log's writer is not at work: Caches.Writer) to
// keep the files a store holds open under its bound (see FileCache): a read acquires the
// segment, then finds its files open (FilesReady) or opens them (OpenFiles); they stay open
// until it releases. The writer's methods open them again themselves (ensureOpen). The
// in-memory state (sizes, offsets, timestamps) stays whether the files are open or not.
type Segment struct {
	fs         fsys.FS
	dir        string
	baseOffset int64
	// cfg is the log's configuration as the segment uses it; SetConfig replaces it whole.
	cfg   atomic.Pointer[Config]
	files *FileCache // bounds open files across the store; nil keeps the files open
	// writer is Caches.Writer: the log's writer lock, which the cache holds while it closes the
	// files of the segment when its indexes are writable (evictWriter says it does).
	writer      *sync.Mutex
	evictWriter bool // guarded by openMu
	// lookups is Caches.Lookups: held for writing while ReserveIndexes grows an index.
	lookups *sync.RWMutex
	// idleUnsynced says the files were closed for idleness with writable indexes (the active
	// segment's), trimmed and not synced since: a sync while they are closed syncs them by name
	// (syncClosed) rather than opening and mapping them again. Set under openMu.
	idleUnsynced atomic.Bool

	// file and the indexes are valid while isOpen is set (for a reader that holds a reference,
	// until it releases it); they change only under openMu with no reference held, or, for the
	// active segment, under the log's locks. A closed file stays in file, so that a read that
	// took it before the log closed gets an error from it rather than a nil.
	file      fsys.File
	offsetIdx *index.Offset
	timeIdx   *index.Time

	// txn is the aborted-transaction index (.txnindex), its entries in memory; it holds no file
	// open between calls, so it is never closed for idleness and is valid for the segment's
	// whole life (see txn.go). txnReset is the ErrCorrupt its file had at open, when it was
	// emptied then (nil: it opened whole).
	txn      *txnindex.Index
	txnReset error

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
	cacheNext, cachePrev *Segment

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
	// checkTimeIndex is set by a load that left the files closed (loadClosed), and
	// checkTimeIndexBelow to the segment's next offset then: the first open checks the time
	// index's entries against it, empties an index that fails, and clears checkTimeIndex.
	// Guarded by openMu.
	checkTimeIndex      bool
	checkTimeIndexBelow int64

	// refs counts reads in progress; a retired segment's files are closed and removed only
	// when it drops to 0 (and its delete delay has passed), and only a segment at 0 is closed for
	// idleness (the cache holds it at evicting meanwhile).
	refs atomic.Int32
	// retired is set when retention or truncation removed the segment from the log and renamed
	// its files "*.deleted" (set by Retire, under openMu and the caller's retired-list lock);
	// deleteAt, guarded by that caller's lock, is when they may go.
	retired atomic.Bool // read without that lock by Release, on every read's end
	// truncations counts the times the segment's data was cut in place (TruncateTo), so that a
	// BatchRange, which holds positions rather than bytes, can tell that they changed.
	truncations atomic.Uint64
	deleteAt    time.Time
	// suffix ends the names of its files after their kind's suffix (see Path): "" for a
	// segment of the log, CleanedSuffix or SwapSuffix while compaction writes and swaps it in
	// (CreateCleaned, OpenSwap, SetSuffix), the retired suffix once retired (Retire, which sets
	// it before retired). Changed under openMu, with the renames; read anywhere (nil: "").
	suffix atomic.Pointer[string]
	// pinHeld keeps the pin of a segment made by CreateCleaned through Seal and SyncIndexes,
	// until Unpin (see CreateCleaned). Single writer.
	pinHeld bool

	// posCache is the store's record position cache (nil: none); positions heads the list of
	// this segment's entries in it, guarded by the cache's mu.
	posCache  *PositionCache
	positions *positionEntry

	// The read mapping of the .log file (see mapping.go): shared says whether the file
	// system's mappings share the file's pages; rmap is the current mapping, nil when none;
	// mapMu serialises making and dropping it, and mapHold (guarded by mapMu) counts the
	// truncations under way, during which no mapping is made.
	shared  bool
	mapMu   sync.Mutex
	rmap    atomic.Pointer[readMapping]
	mapHold int
}

// Path returns the path of the segment's file of the given kind (LogSuffix, IndexSuffix or
// TimeIndexSuffix) as it is named now: dir/<Name(base)><kind><Suffix()>, where Suffix is "" for a
// segment of the log, CleanedSuffix or SwapSuffix during a compaction's swap, and the retired
// suffix once Retire renamed the files. Safe concurrently (a rename may follow at once).
func (s *Segment) Path(kind string) string { return s.pathWith(kind, s.Suffix()) }

// pathWith is the path of the segment's file of the given kind with the given suffix after it.
func (s *Segment) pathWith(kind, suffix string) string {
	return filepath.Join(s.dir, Name(s.baseOffset)+kind+suffix)
}

// Suffix returns what ends the names of the segment's files after their kind's suffix: "" for a
// segment of the log, CleanedSuffix or SwapSuffix during a compaction's swap (CreateCleaned,
// OpenSwap, SetSuffix), the suffix Retire gave them once retired. Safe concurrently.
func (s *Segment) Suffix() string {
	if p := s.suffix.Load(); p != nil {
		return *p
	}
	return ""
}

// setSuffix records the suffix the files now carry. Callers hold openMu or own s alone.
func (s *Segment) setSuffix(suffix string) { s.suffix.Store(&suffix) }

// Create creates the files of a new, empty, active segment at baseOffset in dir, with the disk
// space of its indexes' first entries reserved, and adds it to caches.Files. The caller syncs
// the directory. spared says that the caller has just renamed spare files to the segment's names:
// they are empty, and no stale index is left to remove.
//
// On failure (a full disk, as a rule: syscall.ENOSPC from a creation, the index preallocation or
// the reservation) no segment is made, and the files at the segment's names are removed: they
// are empty or stale, as nothing of the log is at or past the base offset of a segment being
// created.
func Create(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches, spared bool) (*Segment, error) {
	return create(fsy, dir, baseOffset, cfg, caches, spared, "")
}

// create is Create with the files named with suffix after their kind's (see Path).
func create(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches, spared bool, suffix string) (*Segment, error) {
	s := &Segment{fs: fsy, dir: dir, baseOffset: baseOffset, files: caches.Files, writer: caches.Writer, lookups: caches.Lookups, posCache: caches.Positions,
		nextOffset: baseOffset, maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1}
	s.cfg.Store(cfg)
	s.setSuffix(suffix)
	s.pinHeld = suffix == CleanedSuffix
	if err := s.createFiles(spared); err != nil {
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			if rerr := fsy.Remove(s.Path(suf)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
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
func (s *Segment) createFiles(spared bool) error {
	f, err := s.fs.OpenFile(s.Path(LogSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	s.file, s.shared = f, fsys.SharesMappings(f)
	// Stale indexes of an earlier segment at this base offset must not be trusted; claimed spares
	// were renamed over them.
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
		if spared {
			break
		}
		if err := s.fs.Remove(s.Path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errors.Join(err, f.Close())
		}
	}
	if err := s.openIndexes(true); err != nil {
		return errors.Join(err, f.Close())
	}
	// The first entries' space now (an empty index is opened unmapped), so that a segment that
	// could take no entry is refused when it is made (a roll), not at its first append.
	err = s.offsetIdx.Reserve(1)
	if err == nil {
		err = s.timeIdx.Reserve(1)
	}
	// The aborted transactions of an earlier segment at this base offset are not this one's; the
	// spares are no .txnindex, so it goes even then. Its file comes with the first entry.
	if err == nil {
		err = s.openTxnIndex(true)
	}
	if err != nil {
		return errors.Join(err, s.closeIndexes(), f.Close())
	}
	return nil
}

// Open opens the .log file of an existing segment at baseOffset in dir and takes its size; Load
// then opens the indexes, recovers the in-memory state and adds the segment to caches.Files.
// sealed says that the segment is not the log's last (its indexes are opened read-only).
// Errors: the file system's (fs.ErrNotExist for a missing .log file).
func Open(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches, sealed bool) (*Segment, error) {
	return open(fsy, dir, baseOffset, cfg, caches, sealed, "")
}

// open is Open of the files named with suffix after their kind's (see Path).
func open(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches, sealed bool, suffix string) (*Segment, error) {
	s := &Segment{fs: fsy, dir: dir, baseOffset: baseOffset, files: caches.Files, writer: caches.Writer, lookups: caches.Lookups, posCache: caches.Positions,
		nextOffset: baseOffset, maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1, sealed: sealed}
	s.cfg.Store(cfg)
	s.setSuffix(suffix)
	f, err := fsy.OpenFile(s.Path(LogSuffix), os.O_RDWR, 0)
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
	if err := s.openTxnIndex(false); err != nil {
		f.Close()
		return nil, err
	}
	s.isOpen.Store(true)
	return s, nil
}

// FilesReady reports whether s's files are open, for a read that has acquired s; it marks s
// used for the cache. When it returns true the files stay open until the read releases s: the
// cache closes only segments whose count it moves from 0 to evicting, which the read's reference
// prevents. A negative count is an eviction that began before the read's acquire: the read must
// wait for it in OpenFiles.
func (s *Segment) FilesReady() bool {
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

// OpenFiles opens the files of a segment closed for idleness (a no-op when they are open), for a
// read that has acquired s and called FilesReady. A sealed segment's indexes are mapped
// read-only, the active segment's writable (mapped again at their size, an empty one when an
// entry needs room); the .log
// file is opened for writing too, as truncation may make the segment active again. The files
// are found under their names of now (Path): "*.deleted" once the segment is retired, those
// SetSuffix gave them during a compaction's swap. ErrClosed when the log closed or the segment
// was removed.
func (s *Segment) OpenFiles() error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	return s.openLocked()
}

// ensureOpen opens the files of the segment again if the file cache closed them while idle: the
// writer's methods call it first. The writer holds its lock (Caches.Writer), so the cache cannot
// close them again before the writer lets go of it. Reads go through Acquire and OpenFiles.
func (s *Segment) ensureOpen() error {
	if s.isOpen.Load() {
		return nil
	}
	return s.OpenFiles()
}

// openLocked is OpenFiles for a caller holding openMu.
func (s *Segment) openLocked() error {
	if s.dead {
		return ErrClosed
	}
	s.used.Store(true)
	if s.isOpen.Load() {
		return nil
	}
	f, err := s.fs.OpenFile(s.Path(LogSuffix), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	pinned := s.pinned.Load()
	s.file = f
	if err := s.openIndexes(!s.sealed); err != nil {
		s.pinned.Store(pinned)
		return errors.Join(err, f.Close())
	}
	if s.checkTimeIndex {
		// Loaded closed: the time index, unread until now, holds the entries clean closes wrote
		// (its offset index none). One that does not check out is emptied, as Load rebuilds
		// one; the segment's largest timestamp is in memory, and the next seal or close writes
		// its entry.
		s.checkTimeIndex = false
		if err := s.timeIdx.Check(s.checkTimeIndexBelow - 1); err != nil && !s.sealed {
			s.timeIdx.Reset()
		}
	}
	s.isOpen.Store(true)
	s.files.add(s)
	return nil
}

// beginEvict claims s for the cache to close its files: it succeeds only when nobody opens or
// closes s (openMu is free; it stays held until finishEvict), s is open, no read holds it (the
// reference count goes from 0 to evicting, so a read acquiring s meanwhile sees a negative count
// and waits on openMu), and s is not pinned, or is its log's active segment (writable indexes)
// and its writer is not at work: the writer lock, tried and not waited for, stays held until
// finishEvict, and the writer's next method opens the files again (ensureOpen). A segment made
// by CreateCleaned stays pinned until Unpin whatever the writer does.
func (s *Segment) beginEvict() bool {
	if !s.openMu.TryLock() {
		return false
	}
	if s.dead || !s.isOpen.Load() {
		s.openMu.Unlock()
		return false
	}
	locked := false
	if s.pinned.Load() {
		if s.writer == nil || !s.writer.TryLock() {
			s.openMu.Unlock()
			return false
		}
		// Pinned under the writer lock, unpinned by the writer: look again now that it is held.
		if s.pinHeld || (s.sealed && s.pinned.Load()) {
			s.writer.Unlock()
			s.openMu.Unlock()
			return false
		}
		locked = true
	}
	if !s.refs.CompareAndSwap(0, evicting) {
		if locked {
			s.writer.Unlock()
		}
		s.openMu.Unlock()
		return false
	}
	s.evictWriter = locked
	return true
}

// finishEvict closes the files of a segment beginEvict claimed and lets reads open them again.
// Writable indexes are trimmed to their entries as a close trims them; OpenFiles maps them again
// (an empty one once an entry needs room).
func (s *Segment) finishEvict() error {
	// Cleared before the count is restored: a read that sees its reference counted sees the
	// files closed.
	s.isOpen.Store(false)
	if !s.sealed {
		s.idleUnsynced.Store(true)
	}
	err := s.closeFiles()
	s.refs.Add(-evicting)
	if s.evictWriter {
		s.evictWriter = false
		s.writer.Unlock()
	}
	s.openMu.Unlock()
	return err
}

// closeFiles closes the indexes and the .log file, lets the read mapping go once the reads using
// it end, and drops the segment's cached record positions (a closed segment may be truncated or
// removed before it opens again). Callers hold openMu (or own s alone) and have cleared isOpen.
func (s *Segment) closeFiles() error {
	s.dropMapping()
	s.posCache.invalidate(s)
	err := s.closeIndexes()
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	return err
}

// openIndexes opens both indexes, writable (grown as entries need room; an empty file is left
// unmapped until then) or read-only. Writable indexes pin
// the segment's files open (see syncIndexes for the unpinning).
func (s *Segment) openIndexes(writable bool) error {
	s.pinned.Store(writable)
	var err error
	s.offsetIdx, err = index.OpenOffset(s.fs, s.Path(IndexSuffix), s.baseOffset, s.cfg.Load().SegmentIndexBytes, writable)
	if err != nil {
		return err
	}
	s.timeIdx, err = index.OpenTime(s.fs, s.Path(TimeIndexSuffix), s.baseOffset, s.cfg.Load().SegmentIndexBytes, writable)
	if err != nil {
		s.offsetIdx.Close()
		s.offsetIdx = nil
		return err
	}
	return nil
}

// closeIndexes closes whichever indexes are open.
func (s *Segment) closeIndexes() error {
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

// BatchInfo is what IndexBatch needs to know of a batch just written to the .log file.
type BatchInfo struct {
	Position     int64 // where the batch starts in the .log file, bytes
	Size         int   // the batch's length, bytes (its header's length field + 12)
	LastOffset   int64 // the batch's base offset + last offset delta
	MaxTimestamp int64 // the batch's MaxTimestamp, ms
}

// IndexBatch records a batch written at b.Position (WriteAt) in the in-memory state and the
// indexes, following Kafka's LogSegment.append: an index entry is written before a batch once
// more than index.interval.bytes were appended since the last entry. Readers see the batch once
// SetSize covers it. Single writer, and no index lookup may run meanwhile (the log holds its
// readers' lock for writing). Errors: the index's (a failed store through its mapping).
func (s *Segment) IndexBatch(b BatchInfo) error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	if s.rollTimestamp < 0 {
		s.rollTimestamp = b.MaxTimestamp
	}
	if b.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = b.MaxTimestamp
		s.offsetOfMaxTimestamp = b.LastOffset
	}
	if s.bytesSinceIndex > s.cfg.Load().IndexIntervalBytes {
		// One write of several batches can bring more entries than an index has room for
		// (canHold checks for one). An entry is only a shortcut for lookups: one that does not
		// fit is left out, and the next write rolls the segment. The time index keeps its last
		// slot for the entry written at seal and close.
		if s.offsetIdx.CanAppend(b.LastOffset) {
			if err := s.offsetIdx.Append(b.LastOffset, b.Position); err != nil {
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
	s.bytesSinceIndex += b.Size
	s.nextOffset = b.LastOffset + 1
	return nil
}

// ReserveIndexes makes sure that the index entries of the next batches batches need no disk
// space when they are stored (see index.Offset.Reserve): a write reserves them before its bytes
// go to the .log, so that a full disk fails it with nothing written (syscall.ENOSPC from the
// file system). Single writer.
func (s *Segment) ReserveIndexes(batches int) error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	if s.lookups != nil && (s.offsetIdx.MustGrow(batches) || s.timeIdx.MustGrow(batches)) {
		// Growing remaps the index: no lookup may read the mapping meanwhile.
		s.lookups.Lock()
		defer s.lookups.Unlock()
	}
	if err := s.offsetIdx.Reserve(batches); err != nil {
		return err
	}
	return s.timeIdx.Reserve(batches)
}

// CanHold reports whether a write of n bytes whose last offset is lastOffset and largest
// timestamp maxTimestamp (ms) fits this segment, by Kafka's roll rules (UnifiedLog.roll's
// LogSegment.shouldRoll): size (segment.bytes), segment.ms measured in record time from the first
// batch, full indexes (segment.index.bytes), 31-bit relative offsets. An empty segment holds any
// write its indexes can. Single writer (it reads the active segment's indexes).
func (s *Segment) CanHold(n int, lastOffset, maxTimestamp int64) bool {
	return s.CanHoldAt(s.size.Load(), n, lastOffset, maxTimestamp)
}

// CanHoldAt is CanHold for the segment grown to size bytes (with appends staged for it).
func (s *Segment) CanHoldAt(size int64, n int, lastOffset, maxTimestamp int64) bool {
	if s.ensureOpen() != nil {
		// Refused: the roll that follows finds the error again and returns it.
		return false
	}
	if size == 0 {
		return s.offsetIdx.CanAppend(lastOffset) && s.timeIdx.CanAppend(lastOffset)
	}
	switch {
	case size > s.cfg.Load().SegmentBytes-int64(n):
		return false
	case s.rollTimestamp >= 0 && maxTimestamp-s.rollTimestamp > s.cfg.Load().SegmentDuration.Milliseconds():
		return false
	case !s.offsetIdx.CanAppend(lastOffset) || !s.timeIdx.CanAppend(lastOffset):
		return false
	}
	return true
}

// Seal makes the segment read-only: the final time index entry (Kafka appends the segment's max
// timestamp when it becomes inactive, LogSegment.onBecomeInactiveSegment), data synced, indexes
// trimmed, synced and remapped read-only. A no-op on a sealed segment. Single writer, with no
// index lookup running (see SealIndexes for the split a rolling log uses).
func (s *Segment) Seal() error {
	if s.sealed {
		return nil
	}
	if err := s.ensureOpen(); err != nil {
		return err
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	if err := s.SealIndexes(); err != nil {
		return err
	}
	// Trimmed and synced, the indexes of a sealed segment survive a power loss as they are.
	return s.SyncIndexes()
}

// SealIndexes writes the final time index entry (Kafka appends the segment's max timestamp when
// it becomes inactive), trims both indexes and remaps them read-only, and marks the segment
// sealed. It does no fsync: a rolling log runs it under the lock readers take for index lookups
// and syncs afterwards.
func (s *Segment) SealIndexes() error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
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

// SyncIndexes makes both indexes' entries and sizes durable (fsync), and the .txnindex file's
// when it was written since its last sync. Once a sealed segment's indexes are durable, the files
// may be closed for idleness: nothing is written to them again, and a reopen finds them as they
// are (a segment made by CreateCleaned stays pinned until Unpin). Single writer.
func (s *Segment) SyncIndexes() error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	err := errors.Join(s.offsetIdx.Sync(), s.timeIdx.Sync(), s.txn.Sync())
	if err == nil && s.sealed && !s.pinHeld {
		s.pinned.Store(false)
	}
	if err == nil {
		s.idleUnsynced.Store(false)
	}
	return err
}

// Close releases the segment's files for good (the log closes, or the segment is removed) and
// takes it out of its file cache; writable indexes are trimmed to their used size and synced, and
// so is the .txnindex file when written since its last sync.
// The final time index entry is written first, so a reopen knows the segment's max timestamp. A
// read that still holds the segment gets errors from the closed files; it cannot open them again
// (OpenFiles returns ErrClosed). Safe concurrently with reads; a second call is a no-op.
func (s *Segment) Close() error { return s.close(true) }

// CloseUnsynced is Close without the syncs of the indexes and the .txnindex: for a caller that
// makes the whole file system durable afterwards (fsys.SyncFileSystem) before it relies on them.
// The indexes are trimmed and unmapped as Close does, so their bytes are all in the files.
func (s *Segment) CloseUnsynced() error { return s.close(false) }

func (s *Segment) close(sync bool) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.dead = true
	s.files.remove(s)
	// The txn index holds no file open: its entries are made durable whether the other files are
	// open or not (a no-op unless written since its last sync), and it takes no more changes.
	var txnErr error
	if sync {
		txnErr = s.txn.Sync()
	}
	txnErr = errors.Join(txnErr, s.txn.Close())
	if !s.isOpen.Load() {
		// Closed for idleness: indexes trimmed then and not synced since are synced by name,
		// without opening and mapping them again (the final time index entry is not needed: a
		// reopen scans the batches past the last offset index entry, see scanTail).
		if sync && s.idleUnsynced.Load() && !s.retired.Load() {
			txnErr = errors.Join(txnErr, s.syncClosedIndexes())
		}
		return txnErr
	}
	errs := []error{txnErr}
	if !s.sealed && s.timeIdx != nil && s.maxTimestamp >= 0 {
		if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil && !errors.Is(err, index.ErrFull) {
			errs = append(errs, err)
		}
	}
	if sync && !s.sealed && s.offsetIdx != nil && s.timeIdx != nil {
		// A clean shutdown trusts the indexes on the next open: make them durable.
		errs = append(errs, s.SyncIndexes())
	}
	s.isOpen.Store(false)
	errs = append(errs, s.closeFiles())
	return errors.Join(errs...)
}

// DeletedSuffix marks the files of a segment retention or truncation removed, until they are
// deleted, as Kafka marks them.
const DeletedSuffix = ".deleted"

// Retire renames the segment's files (.log, .index, .timeindex, and .txnindex when it exists) from
// their names of now (Path: the log's names, or those SetSuffix gave them) to
// "<base><kind><suffix>" (suffix ".deleted", or ".<n>.deleted" when the
// caller still holds a retired segment at the same base offset), as Kafka's
// LogSegment.changeFileSuffixes does for a deleted segment; they stay open for reads in progress,
// and a read that acquired the segment before it left the log reopens them under those names.
// deleteAt is when RemoveIfDue may delete them once no read holds the segment. The caller has
// taken the segment out of its list first, so that no new read acquires it. A file already
// missing is no error.
func (s *Segment) Retire(deleteAt time.Time, suffix string) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	// Nothing is written to a segment out of the log: its files may close when idle.
	s.pinned.Store(false)
	s.pinHeld = false
	var errs []error
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		if err := s.fs.Rename(s.Path(suf), s.pathWith(suf, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// Renamed when there is a file; the index takes the new name either way.
	if err := s.txn.Rename(s.pathWith(TxnIndexSuffix, suffix)); err != nil {
		errs = append(errs, err)
	}
	s.setSuffix(suffix)
	s.deleteAt = deleteAt
	s.retired.Store(true)
	// Reads in progress finish on the files; no later read needs the positions.
	s.posCache.invalidate(s)
	return errors.Join(errs...)
}

// RemoveRetired closes a retired segment and deletes its renamed files, whatever its reference
// count (see RemoveIfDue).
func (s *Segment) RemoveRetired() error {
	errs := []error{s.Close()}
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		if err := s.fs.Remove(s.Path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.txn.Remove())
	return errors.Join(errs...)
}

// Remove closes the segment and deletes its files (the .txnindex too, when it exists) under their
// names of now (a segment that never
// left the caller's list by Retire: an empty active segment a roll replaces, one below the log
// start offset at load, a cleaned segment a compaction abandons).
func (s *Segment) Remove() error {
	errs := []error{s.Close()}
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		if err := s.fs.Remove(s.Path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.txn.Remove())
	return errors.Join(errs...)
}

// maxBatchSize is s.cfg.MaxBatchSize().
func (s *Segment) maxBatchSize() int { return s.cfg.Load().MaxBatchSize() }

// SetConfig replaces the configuration the segment uses from its next use on (a topic's config
// changed while its log is open): the roll rules of CanHold, the index interval and the read
// bounds. Indexes already open keep their size. The caller fills every field, as for Create,
// and keeps the bounds of the batches the segment holds readable (MaxBatchSize,
// MaxDecompressedBytes).
func (s *Segment) SetConfig(cfg *Config) { s.cfg.Store(cfg) }

// MaxBatchSize bounds the length field of batches read from disk, bytes. A batch written under
// an earlier, larger max.message.bytes must stay readable, so the bound is the larger of
// MaxMessageBytes and SegmentBytes (capped at 2^31-1).
func (c *Config) MaxBatchSize() int {
	return int(max(int64(c.MaxMessageBytes), min(c.SegmentBytes, 1<<31-1)))
}

// corruptError describes a bad batch in this segment.
func (s *Segment) corruptError(pos int64, offset int64, cause error) error {
	return fmt.Errorf("%w: %s position %d (offset %d): %w", ErrCorrupt, s.Path(LogSuffix), pos, offset, cause)
}
