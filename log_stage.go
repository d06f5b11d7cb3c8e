package commitlog

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// Combined writes under SyncAlways.
//
// When appends from many goroutines share each fsync (the group commit of syncTo), every one of
// them used to write its batch with its own pwrite before waiting, and those writes, one after
// the other under appendMu, took about a fifth of each round on a 2-core machine. An append
// that will wait for an fsync anyway gains nothing from being in the file before that fsync
// starts, so while appends contend, each copies its bytes into the log's stage (offsets
// assigned, nothing published), and the group commit's leader writes the whole stage with one
// pwrite, publishes it, and only then fsyncs. Readers see staged records only once they are in
// the file and published, exactly as before: a staged append has not returned yet.
//
// A lone appender never stages: it is the one leading its own fsync, and a copy would only add
// to its latency. Appends that do not wait for durability (AcksNone, SyncNever, SyncInterval)
// and a follower's appends (whose batches may start a leader epoch) never stage either.

// groupCommit is a log's group commit: the fsyncs that appends share (syncTo) and the stage of
// appends its leader writes (shouldStage, stageFits, stageWrite). It owns their state; what it
// needs of its log (the stage's write, the fsync of the active segment, the policy's and epochs'
// say on staging, the sequence numbers) it is given as arguments by the Log that holds it by
// value. stage is guarded by the log's appendMu.
type groupCommit struct {
	// mu guards whether a leader's fsync is running (syncing) and the sequence number its last
	// fsync made durable (durable). cond, on mu, wakes the waiters.
	mu      sync.Mutex
	cond    sync.Cond
	syncing bool
	durable uint64
	// For lingerForWriters: appends between the start of their encoding and the end of their
	// write, the last fsync's writes, and how long it took (ns).
	writing     atomic.Int32
	lastRound   atomic.Uint64 // writes the last fsync made durable
	assignedSeq atomic.Uint64 // appendSeq plus the appends staged
	durableHint atomic.Uint64 // the log's durableSeq, readable without its syncMu
	lastFsync   atomic.Int64
	fsyncs      atomic.Int64 // group-commit fsyncs done, for the benchmarks' appends per fsync

	// stage, under the log's appendMu, holds the appends copied for the group commit's leader
	// to write.
	stage   writeStage
	staging atomic.Bool // stage.writes > 0, readable without appendMu
}

// init readies g for use; openLog calls it before the log takes appends.
func (g *groupCommit) init() { g.cond.L = &g.mu }

// syncTo makes writes up to seq durable. Group commit: one caller at a time is the leader, which
// flushes everything published so far; the callers that arrive while it runs wait for it, and
// those its fsync covered return without one of their own, all at once, while one of the others
// leads the next fsync. Segments before the active one were flushed when they were sealed
// (SyncAlways), or are flushed by flushSealed (the other policies). The leader writes out the
// stage with drainForSync and fsyncs with fsyncTo, the log's (Log.drainForSync, Log.fsyncTo),
// which returns the sequence number then durable.
func (g *groupCommit) syncTo(seq uint64, drainForSync func(), fsyncTo func(seq uint64) (uint64, error)) error {
	g.mu.Lock()
	for g.syncing && g.durable < seq {
		g.cond.Wait()
	}
	if g.durable >= seq {
		g.mu.Unlock()
		return nil
	}
	g.syncing = true
	g.mu.Unlock()

	g.lingerForWriters()
	drainForSync()
	start := time.Now()
	durable, err := fsyncTo(seq)
	g.lastFsync.Store(int64(time.Since(start)))

	g.mu.Lock()
	g.syncing = false
	g.durable = max(g.durable, durable)
	g.cond.Broadcast()
	g.mu.Unlock()
	return err
}

// maxLinger bounds lingerForWriters whatever the disk: a slow fsync must not make every
// acknowledgement wait that much longer.
const maxLinger = time.Millisecond

// lingerForWriters holds the group commit's fsync back while more appends are on their way, so
// that one fsync covers them too instead of each waiting for the next: single-record appends from
// many goroutines then share one fsync per round rather than splitting into cohorts that
// alternate. It waits until as many writes wait for this fsync as the last one covered (the
// goroutines it released, appending again), and while an append is encoding or writing, but
// never longer than half the last fsync took (capped at maxLinger), so no acknowledgement is
// delayed by more than that; a single appender never waits.
func (g *groupCommit) lingerForWriters() {
	want := g.lastRound.Load()
	pending := func() uint64 { return g.assignedSeq.Load() - g.durableHint.Load() }
	if want <= 1 || (pending() >= want && g.writing.Load() == 0) {
		return
	}
	deadline := time.Now().Add(min(time.Duration(g.lastFsync.Load())/2, maxLinger))
	for time.Now().Before(deadline) {
		runtime.Gosched()
		if g.writing.Load() == 0 && pending() >= want {
			return
		}
	}
}

// writeStage is the appends copied but not yet written; guarded by appendMu.
type writeStage struct {
	seg     *segment.Segment // the active segment the bytes go to
	pos     int64            // the file position of data[0]: seg's size when the stage began
	data    []byte           // the staged batches, back to back
	batches []batchInfo      // positions relative to data
	writes  int              // appends staged, each one sequence number
	calls   int              // the calls those appends carry (pendingWrite.requests), for the stats
	next    int64            // the offset after the last staged batch
	maxTS   int64            // the largest staged MaxTimestamp
	result  *stageResult
}

// stageResult is how the appends of one stage learn that writing it failed: their sequence
// numbers are then skipped rather than made durable. err is set under appendMu before the
// group commit that covers the stage's sequence numbers ends, so a waiter reads it after its
// syncTo returns.
type stageResult struct{ err error }

// writeTicket is what an append hands to awaitDurable: its sequence number, its stage's result
// when it was staged, the log's truncation count when it was written and its last offset (see
// removedByTruncation).
type writeTicket struct {
	seq    uint64
	staged *stageResult
	gen    uint64
	last   int64
}

// stageable reports whether an append may be staged at all: it is assigned offsets by this log
// (assign), its caller waits for durability (await) under SyncAlways, and it does not begin a
// leader epoch (that batch waits for the epoch file, which write itself writes). Callers hold
// appendMu.
func (l *Log) stageable(assign, await bool) bool {
	if !assign || !await || !l.sync.appendWaits() {
		return false
	}
	e, ok := l.epochs.latest()
	return l.leaderEpoch < 0 || (ok && e.epoch >= l.leaderEpoch)
}

// shouldStage reports whether an append goes to the stage rather than to the file: something is
// staged already (whatever follows staged bytes must follow them in the file too), or the append
// is stageable (the log's stageable), its segment is not empty, and the last fsync covered
// several appends (appends contend). Callers hold appendMu.
func (g *groupCommit) shouldStage(seg *segment.Segment, assign, await bool, stageable func(assign, await bool) bool) bool {
	return g.stage.writes > 0 ||
		(seg.Size() > 0 && g.lastRound.Load() > 1 && stageable(assign, await))
}

// stageFits reports whether w can join the stage: it is stageable, the stage is for seg, and seg
// would hold the stage and w together (canHold's rules, at the size the segment will have).
func (g *groupCommit) stageFits(seg *segment.Segment, w *pendingWrite, assign, await bool, stageable func(assign, await bool) bool) bool {
	st := &g.stage
	size := seg.Size()
	if size == 0 || (st.writes > 0 && st.seg != seg) || !stageable(assign, await) {
		return false
	}
	return seg.CanHoldAt(size+int64(len(st.data)), len(w.data), w.lastOffset, max(st.maxTS, w.maxTimestamp))
}

// stageWrite copies w, whose offsets are assigned, into the stage and returns its ticket, whose
// sequence number follows the log's appendSeq and the appends staged before it, and gen the log's
// truncation count. Callers hold appendMu and checked stageFits.
func (g *groupCommit) stageWrite(seg *segment.Segment, w *pendingWrite, appendSeq, gen uint64) writeTicket {
	st := &g.stage
	if st.writes == 0 {
		st.seg, st.pos, st.maxTS = seg, seg.Size(), -1
		st.result = &stageResult{}
	}
	base := int64(len(st.data))
	st.data = append(st.data, w.data...)
	for _, b := range w.batches {
		b.position += base
		st.batches = append(st.batches, b)
	}
	st.writes++
	st.calls += w.requests()
	g.staging.Store(true)
	st.next = w.lastOffset + 1
	st.maxTS = max(st.maxTS, w.maxTimestamp)
	seq := appendSeq + uint64(st.writes)
	g.assignedSeq.Store(seq)
	return writeTicket{seq: seq, staged: st.result, gen: gen, last: w.lastOffset}
}

// drainStage writes the stage to its segment with one write and publishes it. On failure the
// file is cut back to where the stage began, the staged appends' sequence numbers are skipped
// and their result says why, so each of them returns the error and nothing of them stays in
// the log (the log keeps taking writes unless even the cut failed). Callers hold appendMu.
func (l *Log) drainStage() error {
	st := &l.gc.stage
	if st.writes == 0 {
		return nil
	}
	seg, pos, writes, res := st.seg, st.pos, st.writes, st.result
	defer func() {
		st.reset()
		l.gc.staging.Store(false)
	}()
	if err := l.checkWritable(); err != nil {
		// A failed log (an fsync failed after these appends were staged) or a closed one writes
		// nothing more: the staged appends fail with it.
		res.err = err
		l.skipSeqs(writes)
		return err
	}
	// The indexes' space first, as write reserves it: a full disk fails the stage with nothing
	// written.
	if err := seg.ReserveIndexes(len(st.batches)); err != nil {
		res.err = wrapIOErr(fmt.Sprintf("reserve index space for %d appends to %s", writes, seg.Path(segment.LogSuffix)), err)
		l.skipSeqs(writes)
		return res.err
	}
	epochsOnDisk, err := l.writeEpochsAhead(st.data, st.batches)
	if err != nil {
		res.err = err
		l.skipSeqs(writes)
		return res.err
	}
	if err := seg.WriteAt(st.data, pos); err != nil {
		if terr := seg.DiscardFrom(pos); terr != nil {
			l.fail(fmt.Errorf("remove partial write of %s at %d: %w (after %w)", seg.Path(segment.LogSuffix), pos, terr, err))
		}
		res.err = wrapIOErr(fmt.Sprintf("write %d appends to %s", writes, seg.Path(segment.LogSuffix)), err)
		l.skipSeqs(writes)
		return res.err
	}
	if err := l.publish(seg, st.data, st.batches, pos, writes, st.calls, epochsOnDisk); err != nil {
		res.err = err
		return err
	}
	return nil
}

// skipSeqs passes over the sequence numbers of n staged appends that were not written, so that
// no later write takes them: their waiters' group commit then ends at once, and their result
// tells them why. Callers hold appendMu.
func (l *Log) skipSeqs(n int) {
	l.mu.Lock()
	l.appendSeq += uint64(n)
	l.mu.Unlock()
	l.gc.assignedSeq.Store(l.appendSeq)
}

// truncation is one truncation of the log: the truncation count it made, the log end offset it
// left, and the sequence number durable when it ran.
type truncation struct {
	gen     uint64
	offset  int64
	durable uint64
}

// noteTruncation records a truncation to a log end offset of leo; callers hold appendMu,
// syncMu and mu, and have just counted it in truncGen.
func (l *Log) noteTruncation(leo int64) {
	copy(l.truncations[1:], l.truncations[:len(l.truncations)-1])
	l.truncations[0] = truncation{gen: l.truncGen.Load(), offset: leo, durable: l.durableSeq}
	l.noteCutFloor(l.truncGen.Load(), leo)
}

// removedByTruncation reports whether a truncation since t's write removed some of its records
// before they were durable: the append is then not acknowledged (ErrTruncated). A write durable
// before the truncation ran was acknowledged, whatever the truncation removed afterwards. When
// more truncations ran during one append's wait than are remembered, the append is reported
// removed: an error for a kept write is a retry, a success for a removed one a lost record.
func (l *Log) removedByTruncation(t writeTicket) bool {
	if l.truncGen.Load() == t.gen {
		return false // no truncation since the write: every acknowledgement's case, without mu
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, tr := range l.truncations {
		if tr.gen <= t.gen {
			return false
		}
		if t.seq > tr.durable && t.last >= tr.offset {
			return true
		}
	}
	return true
}

// reset empties the stage, keeping its buffers.
func (st *writeStage) reset() {
	st.seg, st.result = nil, nil
	st.data, st.batches = st.data[:0], st.batches[:0]
	st.writes, st.calls = 0, 0
}

// lockWriters takes appendMu for a change other than an append (close, truncation, retention,
// a role change), first writing out the stage, so that the change sees every append that was
// assigned offsets. A failed stage write is its appends' error, not the change's.
func (l *Log) lockWriters() {
	l.appendMu.Lock()
	_ = l.drainStage()
}

// unlockWriters releases appendMu, then lets the file cache close idle segments if the files open
// exceed the store's bound: while this writer held appendMu, a segment opened by another log
// could not close the active segment's files (see segment.Caches.Writer), and nothing else would
// until a segment opens again.
func (l *Log) unlockWriters() {
	l.appendMu.Unlock()
	l.caches.Files.TrimIfOver()
}

// drainForSync writes out the stage before the group commit's fsync. With nothing staged (a lone
// appender, every policy but SyncAlways) it takes no lock: a stage begun after the check is
// drained by the next fsync, which its appender waits for.
func (l *Log) drainForSync() {
	if !l.gc.staging.Load() {
		return
	}
	l.appendMu.Lock()
	_ = l.drainStage()
	l.unlockWriters()
}
