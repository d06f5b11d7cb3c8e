package commitlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// lockFileName is the directory lock of a log opened on its own, named as Kafka names the lock
// of a log directory.
const lockFileName = ".lock"

// Log is one partition's log: an append-only sequence of RecordBatch v2 batches numbered by
// offset, kept in segment files named by their base offset, in a folder laid out as Kafka lays
// out a partition (<dir>/00000000000000000000.log, .index, .timeindex, ...).
//
// One writer at a time appends (Append, AppendAsLeader, AppendAsFollower and TruncateTo are
// serialised); any number of goroutines read concurrently, and readers never wait for a write's
// I/O. A Log is safe for concurrent use.
type Log struct {
	dir string
	// live is the configuration the log runs (defaults filled in) with what its segments use of
	// it; reconfigure (a topic's AlterTopicConfig) replaces it whole, so a reader takes it once
	// (conf, segConf) and sees one configuration.
	live   atomic.Pointer[liveConfig]
	sync   syncPolicy // the config's Sync resolved: every branch of the write path on the policy asks it
	fs     fsys.FS
	logger *slog.Logger
	now    func() time.Time
	unlock io.Closer // the directory lock, nil when the owner holds it

	// appendMu serialises writers: appends, rolls, truncation, close. gc.stage, under it, holds
	// the appends copied for the group commit's leader to write (log_stage.go).
	appendMu sync.Mutex

	// mu guards what readers look at: the segment list, the active segment's indexes and
	// in-memory state, the log start offset, closed. Writers hold it only to publish.
	mu             sync.RWMutex
	segments       segmentList // ordered by base offset; the last is the active segment
	logStartOffset int64
	recoveryPoint  int64 // offsets below are known durable; checkpointed
	appendSeq      uint64
	closed         bool

	// syncMu serialises fsyncs; waiters whose write an earlier fsync covered return at once.
	syncMu     sync.Mutex
	durableSeq uint64
	failure    error // set once an fsync fails; guarded by mu

	// gc is the group commit (log_stage.go): the fsyncs appends share, and their stage.
	gc groupCommit

	// epochs is the leader-epoch cache with its file, and leaderEpoch the epoch this log stamps
	// on the batches it assigns offsets to; both change under appendMu and mu together, so either
	// guards a read.
	epochs      leaderEpochFile
	leaderEpoch int32
	// owner holds the owner's callbacks and an earlier version's replication lines (logOwner).
	owner logOwner

	// retired are the segments removed from the log whose files wait for their readers and their
	// delete delay before they are deleted (log_retire.go).
	retired retiredSegments

	builders sync.Pool // *recordbatch.Builder
	readBufs sync.Pool // *[]byte batch buffers of ReadRecords and Scan, which hand out no bytes of them
	// caches are the store-wide caches the segments share (the open-file bound, the record
	// position cache); bufs the pooled buffers of their reads.
	caches segment.Caches
	bufs   segment.Buffers

	// flushTarget is the base offset of the newest roll: the sealed segments below it are to be
	// flushed, and the recovery point advances to it once they are (see flushSealed). truncGen
	// counts truncations (TruncateTo, truncateFullyAndStartAt), which may lower the recovery point
	// under a flush in progress. Both guarded by mu.
	flushTarget int64
	truncGen    atomic.Uint64 // changed under mu; loaded without it by the acknowledgement path
	// truncations remembers the last truncations, for the appends waiting for durability while
	// they ran (see removedByTruncation); guarded by mu.
	truncations [8]truncation
	// cutFloors answers, for any earlier truncation count, the lowest log end offset a
	// truncation since left (see cutBelow); guarded by mu.
	cutFloors []cutFloor
	// state is the state file with its lock and the state last written (log_state.go).
	state stateFile

	// flusher is the flush of sealed segments, with its lock and the directory's dirty mark, and
	// the flusher goroutine under SyncNever and SyncInterval (log_flush.go).
	flusher flusher
	// spares are the spare files of the next segment (log_spare.go), made by the flusher.
	spares spareFiles
	// cleaning is the log's compaction state: its cleaner point, the lock of its cleans
	// (log_compact.go).
	cleaning logCleaning
	// producers is the producer state with its snapshot files (log_producers.go).
	producers producerState
	// stats are the log's activity counters (stats.go).
	stats logStats
}

// OpenLog opens the partition log in dir, creating dir and an empty log when missing, and
// recovers it: after an unclean shutdown the batches from the recovery point on are checked
// (length, magic, CRC, offsets) and a torn tail there is truncated and logged; nothing else is
// ever cut (see the recovery rule in load); indexes that are missing or disagree with the data
// are rebuilt.
//
// The directory is locked for as long as the log is open: a second OpenLog of dir, in this
// process or another, returns ErrLocked and changes nothing. A failed OpenLog leaves no lock, file
// or mapping open. cfg's zero fields take Kafka's defaults; a field out of range returns
// ErrInvalidConfig. A corrupt batch left in place (after a clean shutdown, below the recovery
// point, or in the middle of a sealed segment) does not stop the open: it is logged, and reads of
// it return ErrCorrupt. In the folder of a replicated partition (its commitlog-replication
// checkpoint says so) the log starts no leader epoch of its own after an unclean shutdown, as the
// partition's log does not, and retention deletes nothing at or past the checkpointed high
// watermark.
func OpenLog(dir string, cfg LogConfig, opts ...Option) (*Log, error) {
	o := newOptions(opts)
	saved, _ := readReplicationCheckpoint(o.fs, dir, o.logger)
	l, err := openLog(dir, cfg, o, true, saved.replicated)
	if err == nil && saved.replicated {
		hw := saved.highWatermark
		l.owner.set(logHooks{retentionLimit: func() int64 { return hw }})
	}
	return l, err
}

// openLog opens the log in dir, as OpenLog does, locking dir when lock is set; replicated says
// that the partition's own checkpoint says it is replicated (see openPartition).
func openLog(dir string, cfg LogConfig, o options, lock, replicated bool) (l *Log, err error) {
	cfg, policy, err := cfg.resolve(o.sync)
	if err != nil {
		return nil, err
	}
	l = &Log{dir: dir, sync: policy, fs: o.fs, logger: o.logger.With("log", dir), now: o.now, caches: o.caches}
	// The store's file cache may close the active segment's files too while the writer is not
	// at work (segment.Caches.Writer): a store of thousands of partitions keeps its descriptors
	// under WithMaxOpenFiles.
	l.caches.Writer = &l.appendMu
	l.caches.Lookups = &l.mu
	l.live.Store(newLiveConfig(cfg))
	l.state = stateFile{fs: l.fs, dir: dir, logger: l.logger, owner: &l.owner}
	if o.logDir != nil && o.logDirTP.topic != "" {
		l.state.logDir, l.state.tp = o.logDir, o.logDirTP
	}
	l.gc.init()
	l.cleaning.init(cleanerMemory(o))
	l.spares = spareFiles{fs: l.fs, dir: dir, logger: l.logger}
	l.producers = producerState{fs: l.fs, dir: dir, logger: l.logger, m: producerstate.NewManager(0), expiration: o.producerIDExpiration}
	l.flusher.fs, l.flusher.dir, l.flusher.stats = l.fs, dir, &l.stats.flushes
	if err := fsys.MkdirAllDurable(l.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
	}
	if lock {
		u, err := l.fs.Lock(filepath.Join(dir, lockFileName))
		if err != nil {
			if errors.Is(err, fsys.ErrLocked) {
				return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
			}
			return nil, fmt.Errorf("commitlog: lock %s: %w", dir, err)
		}
		l.unlock = u
	}
	opened := l // "return nil, err" sets l to nil before the cleanup runs
	defer func() {
		if err != nil {
			for _, s := range opened.segments {
				s.Close()
			}
			if opened.unlock != nil {
				opened.unlock.Close()
			}
			l = nil
		}
	}()
	// What the last run left, read before the loader rewrites it: where epochs may be missing from
	// the epoch checkpoint, and the replication lines of an earlier version.
	st, haveState := l.state.read()
	l.owner.carry(st.legacy) // written back until the partition holds it
	rewriteFrom := int64(0)
	if haveState {
		rewriteFrom = st.recoveryPoint
	}
	ld := logLoader{fs: l.fs, dir: dir, logger: l.logger, sync: l.sync, segCfg: l.segConf(), caches: l.caches, state: &l.state,
		folderSyncedLater: o.newFolderSyncedLater}
	// The loader works on the segments' files as the writer does: the file cache must not close
	// them under it. Held until the producer state is loaded: the leader epochs' and the
	// producers' replays read the active segment the loader recovered, which the cache would
	// otherwise close (a store of thousands of partitions is over its bound) and the reads open
	// again, preallocating and mapping its indexes once more.
	l.appendMu.Lock()
	rec, err := ld.run(rewriteFrom)
	if err != nil {
		l.appendMu.Unlock()
		return nil, err
	}
	l.segments, l.logStartOffset, l.recoveryPoint = rec.segments, rec.logStartOffset, rec.recoveryPoint
	l.flushTarget = l.recoveryPoint
	epochsFrom := l.active().BaseOffset() // a Kafka broker's folder: its file covers its flushed segments
	if haveState {
		epochsFrom = st.recoveryPoint
		if st.clean {
			epochsFrom = math.MaxInt64
		}
	}
	// A log no replication drives starts a new leader epoch after an unclean shutdown: its end
	// may lie below what its readers saw (see leaderEpochFile.startAbove).
	l.epochs = leaderEpochFile{fs: l.fs, path: filepath.Join(l.dir, leaderEpochFileName), logger: l.logger, deferSync: o.openSyncedLater,
		noTemp: rec.entries != nil && !slices.ContainsFunc(rec.entries, func(e fs.DirEntry) bool { return e.Name() == leaderEpochFileName+checkpoint.TempSuffix })}
	if err := l.epochs.load(epochsFrom, l.logStartOffset, l.active().NextOffset(), haveState && !st.clean && !replicated && !st.legacy.present, l.ReadRange); err != nil {
		l.appendMu.Unlock()
		return nil, err
	}
	l.epochs.deferSync = false // writes from now on are synced as they are made
	l.leaderEpoch = max(l.latestEpoch(), 0)
	err = l.loadProducerState(haveState && st.clean, &producerOpen{listing: rec.entries, syncedLater: o.openSyncedLater})
	l.appendMu.Unlock()
	if err != nil {
		return nil, err
	}
	l.flusher.start(l.sync, l, &l.spares, l.logger)
	return l, nil
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's configuration with defaults filled in.
func (l *Log) Config() LogConfig { return *l.conf() }

// liveConfig is a log's configuration, defaults filled in, with what its segments use of it.
// Never changed once published: a change publishes another.
type liveConfig struct {
	cfg LogConfig
	seg segment.Config
}

// newLiveConfig returns the live configuration of the resolved config cfg.
func newLiveConfig(cfg LogConfig) *liveConfig {
	return &liveConfig{cfg: cfg, seg: segment.Config{IndexIntervalBytes: cfg.IndexIntervalBytes,
		SegmentBytes: cfg.SegmentBytes, SegmentDuration: cfg.SegmentDuration, SegmentIndexBytes: cfg.SegmentIndexBytes,
		MaxMessageBytes: max(cfg.MaxMessageBytes, cfg.maxBatchFloor), MaxDecompressedBytes: cfg.readDecompressLimit()}}
}

// conf returns the configuration the log runs now, defaults filled in; not to be changed.
func (l *Log) conf() *LogConfig { return &l.live.Load().cfg }

// segConf returns what new segments use of the configuration; not to be changed.
func (l *Log) segConf() *segment.Config { return &l.live.Load().seg }

// LogStartOffset returns the first offset the log holds or will hold (Kafka's log start
// offset). Offsets below it were never written or have been deleted.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset
}

// LogEndOffset returns the offset the next appended record will get (Kafka's log end offset):
// one past the last record's offset.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().NextOffset()
}

// Size returns the bytes of batches in all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.Size()
	}
	return n
}

// SegmentCount returns the number of segments, the active one included.
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

// active returns the segment appends go to. Callers hold mu or appendMu.
func (l *Log) active() *segment.Segment { return l.segments[len(l.segments)-1] }

// Close flushes every segment (sealed segments whose background flush is pending too), stops the
// background flusher, trims the indexes, records a clean shutdown so that the next open
// need not scan, and releases the directory. Blocked and later calls return ErrClosed. Close is
// idempotent: later calls return nil.
func (l *Log) Close() error { return l.close(true) }

// closeUnsynced is Close for a caller that makes the whole file system durable afterwards
// (fsys.SyncFileSystem, Store.Close) before it writes the clean state it notes: the active
// segment's files, its indexes and the producer snapshot are written but not fsynced here, nor is
// the folder after the snapshot's rename. Until that sync the noted state is in memory only, and
// a crash finds the log as after any crash: no clean shutdown marker, the recovery points of the
// last checkpoint, and a snapshot that is torn or missing at worst, which loading deletes and
// reads the one before (see writeSnapshot). Sealed segments that the flusher had not flushed are
// flushed as Close flushes them.
func (l *Log) closeUnsynced() error { return l.close(false) }

func (l *Log) close(syncEach bool) error {
	// First, before the locks below: the flusher's periodic Sync waits for them, and Close would
	// wait for it. What it has not flushed yet, Close flushes.
	l.flusher.stopAndWait()
	l.lockWriters()
	defer l.appendMu.Unlock()
	// Holding syncMu, no group commit is mid-fsync on a file about to close; waiters behind it
	// find their writes durable or the log failed.
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	failed := l.failure
	l.mu.Unlock()

	var errs []error
	act := l.active()
	clean := failed == nil
	if clean {
		// Sealed segments whose background flush has not run yet; the clean state written
		// below records the recovery point this flush reaches.
		if _, err := l.flusher.flushSealed(l, false, nil); err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	if clean {
		if err := l.flusher.syncDirIfDirty(l); err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	// Appends that wait for their fsync (SyncAlways) and are behind this Close find their
	// writes durable when it returns, as with Close: without syncEach too.
	if clean && (syncEach || (l.sync.appendWaits() && l.durableSeq < l.appendSeq)) {
		if err := act.Sync(); err != nil {
			errs = append(errs, l.fail(err))
			clean = false
		} else {
			l.durableSeq = l.appendSeq
		}
	}
	if clean && !l.producers.snapshotCurrent(act.NextOffset()) {
		// Kafka's close takes a producer snapshot at the log end offset: the next open reads it
		// and replays nothing. One there already, durable and of the same state, is kept (as
		// Kafka's takeSnapshot takes none unless the log end offset moved past the latest).
		if err := l.producers.writeSnapshot(act.NextOffset(), syncEach, syncEach); err != nil {
			l.logger.Warn("producer snapshot not written at close; the next open replays from an older one", "err", err)
		}
	}
	for _, s := range l.segments {
		if syncEach {
			errs = append(errs, s.Close())
		} else {
			errs = append(errs, s.CloseUnsynced())
		}
	}
	// Nobody can start a read now; files of reads still running go with the log.
	errs = append(errs, l.sweepRetired(time.Time{}, true), l.spares.remove())
	if clean && errors.Join(errs...) == nil {
		// Only a log whose every byte reached the disk may skip recovery next time.
		st := logState{logStartOffset: l.logStartOffset, recoveryPoint: act.NextOffset(), clean: true}
		errs = append(errs, l.state.note(st))
	}
	if l.unlock != nil {
		errs = append(errs, l.unlock.Close())
	}
	return errors.Join(errs...)
}

// checkWritable returns ErrClosed or the recorded sync failure. Callers hold appendMu.
func (l *Log) checkWritable() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return l.failure
}

// fail records a write-path failure that leaves the disk state unknown: every later write
// returns it until the log is reopened and recovered.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	first := l.failure == nil
	if first {
		l.failure = fmt.Errorf("%w: %s: %w", ErrSync, l.dir, err)
		l.logger.Error("log failed; writes refused until reopened", "err", err)
	}
	failure := l.failure
	l.mu.Unlock()
	if first {
		l.markSyncFailed(err)
	}
	return failure
}

// wrapIOErr classifies an error from the file system for the caller.
func wrapIOErr(op string, err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("%w: %s: %w", ErrNoSpace, op, err)
	}
	return fmt.Errorf("commitlog: %s: %w", op, err)
}
