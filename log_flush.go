package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// The flush of sealed segments. Under SyncNever and SyncInterval a roll does not wait for the
// disk: it seals the old segment's indexes, creates the new segment, and hands the old segment's
// flush to the log's flusher goroutine, as Kafka's UnifiedLog.roll schedules
// flushUptoOffsetExclusive(newSegment.baseOffset) on its scheduler. The flush syncs every sealed
// segment below the flush target (its .log and both indexes), then the directory, and only then
// advances the recovery point and checkpoints it: a crash before that scans those segments again
// on open. A roll under SyncAlways flushes before it returns (see roll), so none is ever pending.
//
// Pending flushes coalesce: the target is a watermark (the newest roll's base offset), and one
// flush covers every segment below it. The flush works by path, opening each file again through
// the log's file system (fsync writes back an inode's dirty pages through any descriptor of it),
// so it holds no reference on a segment: retention and truncation delete files as usual, the file
// cache closes idle segments as usual, and a file that is gone has nothing left to flush.

// flusher is the flush of a log's sealed segments: the flushes themselves (flushSealed, run by
// the flusher goroutine, Sync and Close; syncDirIfDirty), with the lock that serialises them and
// the mark of directory entries no flush has synced yet, and the flusher goroutine under SyncNever
// and SyncInterval: wake (capacity 1) asks it to flush sealed segments; closing stop stops it and
// it closes done when it returns. The channels are all nil under SyncAlways, which runs none. The
// Log holds one by value; it holds no Log: what a flush reads and changes of the log's state
// (the recovery point, the flush target, the segment list, all under the Log's mu) it reaches
// through the flushedLog each call is given, and the goroutine holds that only on its own stack.
//
// Locking: flushSealed and syncDirIfDirty take flushMu; their callers hold none of the Log's locks
// (Close holds appendMu and syncMu, never mu). syncFlush is for a caller holding flushMu. The
// flushedLog's methods take the Log's mu (planFlush, finishFlush) and the state file's lock
// (checkpointRecoveryPoint) themselves, inside flushMu.
type flusher struct {
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	fs  fsys.FS // the log's file system and directory, set at open
	dir string
	// dirDirty says that a roll under SyncNever or SyncInterval created (or claimed) segment
	// files whose directory entries no SyncDir has covered yet. The flush of sealed segments
	// syncs the directory, but a roll at the recovery point (the first roll after an open, whose
	// recovery point is the log end offset) leaves no flush pending: Sync and Close then sync the
	// directory themselves (syncDirIfDirty).
	dirDirty atomic.Bool
	// flushMu serialises flushes of sealed segments: the flusher's, Sync's and Close's.
	flushMu sync.Mutex
	// stats counts the flushes and their latency: the log's flush counters, set at open.
	stats *flushCounters
}

// flushedLog is what the flush of sealed segments does to its log (*Log): Sync every interval
// (the goroutine), plan a flush and finish it against the log's state under the log's lock,
// checkpoint the recovery point a flush reached, and fail the log when an fsync fails.
type flushedLog interface {
	Sync() error
	planFlush() (sealedFlush, error)
	finishFlush(f sealedFlush) (advanced, retry bool)
	checkpointBehind() bool
	checkpointRecoveryPoint()
	fail(err error) error
}

// flushedSuffixes are the files of a sealed segment that its flush syncs.
// (The .txnindex exists only once the segment has an aborted transaction; syncPath passes over a
// missing file.)
var flushedSuffixes = [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix}

// start starts the log's flusher goroutine under SyncNever and SyncInterval (policy): it flushes
// sealed segments of l when a roll asks (wakeUp), making the spares of the next roll first, and,
// under SyncInterval, calls Sync every interval. Under SyncAlways there is no goroutine: nothing
// is left to flush in the background.
func (f *flusher) start(policy syncPolicy, l flushedLog, spares *spareFiles, logger *slog.Logger) {
	if !policy.runsFlusher() {
		return
	}
	f.wake = make(chan struct{}, 1)
	f.stop = make(chan struct{})
	f.done = make(chan struct{})
	go f.run(policy.flushInterval(), l, spares, logger)
}

// recoveryCheckpointInterval is the least time between two checkpoints of the recovery point by
// the flusher. A checkpoint is a file creation, two fsyncs, a rename and a directory fsync; a log
// rolling many times a second would pay them at every roll. Kafka checkpoints recovery points
// every log.flush.offset.checkpoint.interval.ms (60 s); a checkpoint that lags only makes the
// next recovery scan more segments. Sync and Close checkpoint at once.
const recoveryCheckpointInterval = time.Second

// run is the flusher goroutine's loop; interval is SyncInterval's period, or 0.
func (f *flusher) run(interval time.Duration, l flushedLog, spares *spareFiles, logger *slog.Logger) {
	defer close(f.done)
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	// A checkpoint the interval holds back waits for ckTimer (ckDue is nil when none waits).
	ckTimer := time.NewTimer(time.Hour)
	ckTimer.Stop()
	defer ckTimer.Stop()
	var ckDue <-chan time.Time
	var lastCheckpoint time.Time
	for {
		select {
		case <-f.stop:
			return
		case <-tick:
			if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) {
				logger.Error("background flush failed", "err", err)
			}
		case <-ckDue:
			ckDue = nil
			l.checkpointRecoveryPoint()
			lastCheckpoint = time.Now()
		case <-f.wake:
			// A roll woke us: the spares first, as the next roll may come before the flush
			// below ends.
			spares.prepare()
			for {
				retry, err := f.flushSealed(l, false, spares.prepare)
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						logger.Error("background flush of sealed segments failed", "err", err)
					}
					break
				}
				if !retry {
					break
				}
			}
			if ckDue != nil || !l.checkpointBehind() {
				break
			}
			if wait := recoveryCheckpointInterval - time.Since(lastCheckpoint); wait > 0 {
				ckTimer.Reset(wait)
				ckDue = ckTimer.C
				break
			}
			l.checkpointRecoveryPoint()
			lastCheckpoint = time.Now()
		}
	}
}

// wakeUp tells the flusher that the flush target moved; a wake already pending covers it.
func (f *flusher) wakeUp() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// stopAndWait stops the flusher goroutine and waits for a flush it is running to end; calls
// after the first only wait. Close calls it, then flushes what is still pending itself.
func (f *flusher) stopAndWait() {
	if f.stop != nil {
		f.stopOnce.Do(func() { close(f.stop) })
		<-f.done
	}
}

// flushSealed makes the sealed segments below the flush target durable (data, both indexes, then
// the directory's entries), then advances the recovery point to the target and, with checkpoint
// set, writes it to the state file. A truncation that ran meanwhile (TruncateTo, a follower's
// start-over) may have replaced the bytes below the target: the recovery point then stays, and
// retry is true so that the caller flushes again against the truncated log. A failed fsync fails
// the log as a failed foreground fsync does (ErrSync, the sync-failure marker). The flusher
// passes its spare-making as beforeEach, run before each file's fsync (nil for none): a flush
// takes milliseconds a segment, and a roll that comes meanwhile wants its spares ready.
func (f *flusher) flushSealed(l flushedLog, checkpoint bool, beforeEach func()) (retry bool, err error) {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	plan, err := l.planFlush()
	if err != nil || plan.target <= plan.from {
		return false, err
	}
	began := time.Now()
	if err := f.syncFlush(l, plan, beforeEach); err != nil {
		return false, err
	}
	if f.stats != nil {
		f.stats.observe(time.Since(began))
	}
	advanced, retry := l.finishFlush(plan)
	if advanced && checkpoint {
		l.checkpointRecoveryPoint()
	}
	return retry, nil
}

// sealedFlush is one flush of sealed segments, as planFlush saw the log: the files to sync, the
// recovery point it starts from and the one it reaches, and the truncation count then.
type sealedFlush struct {
	from, target int64
	gen          uint64
	paths        []string
}

// planFlush lists the files of the sealed segments that hold offsets between the recovery point
// and the flush target: every segment below the target that ends past the recovery point. It
// returns the log's failure, if any. Callers hold the flusher's flushMu.
func (l *Log) planFlush() (sealedFlush, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	f := sealedFlush{from: l.recoveryPoint, target: l.flushTarget, gen: l.truncGen.Load()}
	if l.failure != nil {
		return f, l.failure
	}
	if f.target <= f.from {
		return f, nil
	}
	for i, s := range l.segments[:len(l.segments)-1] {
		if s.BaseOffset() >= f.target {
			break
		}
		if s.NextOffset() > f.from || s.BaseOffset() >= f.from {
			for _, suf := range flushedSuffixes {
				f.paths = append(f.paths, s.Path(suf))
			}
			// The producer snapshot the roll that sealed s wrote, named by the next segment's
			// base offset (see writeSnapshot); syncPath passes over a missing one.
			f.paths = append(f.paths, filepath.Join(l.dir, producerstate.SnapshotName(l.segments[i+1].BaseOffset())))
		}
	}
	return f, nil
}

// syncFlush fsyncs plan's files, then the directory, whose entries of the segments' files (and of
// those rolls created since) may not be durable yet. A failure fails the log l. beforeEach, when
// not nil, runs before each file's fsync. Callers hold flushMu.
func (f *flusher) syncFlush(l flushedLog, plan sealedFlush, beforeEach func()) error {
	for _, path := range plan.paths {
		if beforeEach != nil {
			beforeEach()
		}
		if err := syncPath(f.fs, path); err != nil {
			return l.fail(fmt.Errorf("flush %s: %w", path, err))
		}
	}
	f.dirDirty.Store(false) // cleared first: a roll after this sets it again
	if err := f.fs.SyncDir(f.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", f.dir, err))
	}
	return nil
}

// syncDirIfDirty syncs the directory when a roll created segment files since the last flush of
// sealed segments synced it: a roll at the recovery point leaves no flush pending, yet the new
// segment's directory entries must be durable before Sync acknowledges what was appended to it.
// A failure fails the log l. It holds flushMu, as the flush does: a second Sync that finds the
// mark cleared returns only after the directory fsync of the first, which covers its rolls too.
func (f *flusher) syncDirIfDirty(l flushedLog) error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	if !f.dirDirty.Load() {
		return nil
	}
	f.dirDirty.Store(false)
	if err := f.fs.SyncDir(f.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", f.dir, err))
	}
	return nil
}

// finishFlush advances the recovery point to f's target once f's files are durable, unless a
// truncation ran since planFlush (then retry reports whether a flush is still pending).
func (l *Log) finishFlush(f sealedFlush) (advanced, retry bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncGen.Load() != f.gen {
		return false, l.flushTarget > l.recoveryPoint
	}
	if f.target > l.recoveryPoint {
		l.recoveryPoint = f.target
		return true, false
	}
	return false, false
}

// flushPending reports whether sealed segments wait for their flush.
func (l *Log) flushPending() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.flushTarget > l.recoveryPoint
}

// syncPath fsyncs the file at path of fsy through a descriptor of its own. A file that is gone
// (retention or truncation deleted it, or renamed it to "*.deleted") has nothing to flush.
func syncPath(fsy fsys.FS, path string) error {
	// Opened for writing: Windows' FlushFileBuffers needs a handle with write access.
	f, err := fsy.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// checkpointBehind reports whether the recovery point in memory differs from the one last
// written to the state file.
func (l *Log) checkpointBehind() bool {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint != l.state.last.recoveryPoint
}

// checkpointRecoveryPoint writes the recovery point the log holds now to the state file, beside
// the log start offset of the last state written (which a retention may have written before it
// publishes it). Reading the recovery point under the state file's lock orders this write with a truncation's,
// which lowers it first and writes after: the file never ends with a point the truncation undid.
func (l *Log) checkpointRecoveryPoint() {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	l.mu.RLock()
	rp, closed := l.recoveryPoint, l.closed
	l.mu.RUnlock()
	if closed {
		return // Close writes the final state
	}
	st := l.state.last
	st.recoveryPoint, st.clean = rp, false
	if err := l.state.writeLocked(st); err != nil {
		l.logger.Warn("recovery point checkpoint failed; the next recovery scans more", "err", err)
	}
}
