package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/cleaner"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// Log compaction, Kafka's LogCleaner for one log: the cleaner keeps at least the latest record of
// every key and removes the older ones, and tombstones once delete.retention.ms has passed since
// the clean that first kept them (KIP-534's delete horizon, stored in the batch).
//
// One pass (cleanPass) works as Kafka's Cleaner.doClean:
//
//  1. The plan, under mu: the dirty part runs from the cleaner point (the first dirty offset,
//     Kafka's cleaner-offset-checkpoint entry) to the uncleanable offset (the active segment's
//     base offset, lowered to the segment holding the high watermark of a replicated log and to
//     the first segment min.compaction.lag.ms holds back). Every segment below the uncleanable
//     offset is acquired, so that retention cannot delete its files under the clean.
//  2. The offset map (cleaner.OffsetMap) takes the keys of the dirty batches, each at its latest
//     offset, until it is full (Kafka's buildOffsetMap): the pass then ends at the batch that did
//     not fit, and the next pass starts there. Batches of aborted transactions (the .txnindex
//     entries, markers past the cleaned segments included) put no key, and the filter removes
//     their records.
//  3. The segments from the log start to the map's end are grouped (cleaner.GroupBySize: up to
//     segment.bytes and segment.index.bytes, Kafka's groupSegmentsBySize), and each group is
//     copied into one new segment, the batches filtered by cleaner.Filter (Kafka's
//     MemoryRecords.filterTo with the cleaner's rules), written as "*.cleaned", synced; the
//     group's aborted transactions (their txn indexes' entries) go to its txn index.
//  4. The swap (swapIn), under appendMu, as Kafka's replaceSegments: the cleaned files are renamed
//     "*.swap" and the directory synced (from here a crash completes the swap at the next open,
//     see logLoader), the new segment replaces the group in the list under mu, the old segments
//     are retired (renamed "*.deleted", deleted once no read holds them), and the swap files are
//     renamed to their final names. A group that changed meanwhile (retention, a truncation)
//     is not swapped: its cleaned files are removed and the pass ends.
//  5. The cleaner point moves to the map's end, and the owner checkpoints it.
//
// Offsets never change: a cleaned log has gaps, which every read steps over (a read at a removed
// offset returns the next record). Batches keep their base offset, leader epoch, producer id,
// epoch and base sequence, and their last offset delta; a batch whose records all go is kept as
// an empty batch when it is the last of its producer, so that producer state survives.

// logCleaning is a log's compaction state (Kafka's LogCleanerManager keeps it per partition).
type logCleaning struct {
	// mu serialises cleans of the log: a background thread's and Compact's.
	mu sync.Mutex
	// point is the cleaner point; -1 until the owner gives one or a clean sets it, which reads
	// as the log start offset.
	point atomic.Int64
	// horizon is the earliest delete horizon among the batches the last clean kept tombstones
	// in, ms; math.MaxInt64 when none (or unknown since open, as in Kafka). A log whose horizon
	// has passed is due, so that expired tombstones go even when little is dirty.
	horizon atomic.Int64
	// failed is the error that made the last clean fail (corrupt data, as a rule): the
	// background cleaner skips the log until it reopens (Kafka's uncleanable partitions).
	failed atomic.Pointer[error]
	// memory is the dedupe buffer of an on-demand Compact: one cleaner thread's share.
	memory int
}

func (c *logCleaning) init(memory int) {
	c.point.Store(-1)
	c.horizon.Store(math.MaxInt64)
	c.memory = memory
}

// cleanerMemory is one cleaner thread's share of log.cleaner.dedupe.buffer.size.
func cleanerMemory(o options) int {
	n := o.cleanerDedupe
	if o.cleanerThreads > 1 {
		n /= int64(o.cleanerThreads)
	}
	return int(min(max(n, MinCleanerDedupeBufferSize), math.MaxInt32))
}

// CompactionState is where a compacted log's cleaning stands (Kafka's LogToClean): what the
// background cleaner weighs when it picks a log, and what `commitlog topics` shows.
type CompactionState struct {
	// CleanerPoint is the first dirty offset: everything below it was cleaned (Kafka's
	// cleaner-offset-checkpoint entry for the partition). At least the log start offset.
	CleanerPoint int64
	// UncleanableOffset is the first offset no clean may touch yet: the active segment's base
	// offset, lowered to the base of the segment holding the high watermark of a replicated log
	// and to the first segment min.compaction.lag.ms still holds back.
	UncleanableOffset int64
	// CleanBytes is the size of the segments below the cleaner point, DirtyBytes that of the
	// segments from it to the uncleanable offset (a segment holding the cleaner point counts in
	// both, as in Kafka's LogToClean).
	CleanBytes, DirtyBytes int64
	// DirtyRatio is DirtyBytes / (CleanBytes + DirtyBytes), 0 when both are 0.
	DirtyRatio float64
	// Due says the background cleaner would clean the log now: it compacts, and its dirty ratio
	// is above min.cleanable.dirty.ratio, or its oldest dirty batch is older than
	// max.compaction.lag.ms, or tombstones the last clean kept have passed their delete horizon.
	Due bool
}

// CompactionResult says what one Compact did (Kafka's CleanerStats).
type CompactionResult struct {
	Passes         int   // cleaning passes: more than one when the dirty keys did not fit the dedupe buffer at once
	BytesRead      int64 // bytes of segments read, by the offset map and by the copies
	BytesWritten   int64 // bytes of cleaned segments written
	RecordsRead    int64 // records the copies read
	RecordsRemoved int64 // records the copies left out: older values of a key, expired tombstones, keyless records
	SegmentsBefore int   // segments replaced
	SegmentsAfter  int   // segments they became
	CleanerPoint   int64 // the cleaner point after the last pass
}

// add sums r into c.
func (c *CompactionResult) add(r CompactionResult) {
	c.Passes += r.Passes
	c.BytesRead += r.BytesRead
	c.BytesWritten += r.BytesWritten
	c.RecordsRead += r.RecordsRead
	c.RecordsRemoved += r.RecordsRemoved
	c.SegmentsBefore += r.SegmentsBefore
	c.SegmentsAfter += r.SegmentsAfter
	c.CleanerPoint = max(c.CleanerPoint, r.CleanerPoint)
}

// CompactionState returns the log's compaction state at the log's clock (WithClock's, else
// time.Now). A log whose cleanup.policy does not compact is never Due.
func (l *Log) CompactionState() CompactionState {
	now := l.now()
	l.mu.RLock()
	p := l.planLocked(now)
	l.mu.RUnlock()
	return l.stateOf(p, now)
}

// cleanPlan is what one pass may clean, as of one moment under mu.
type cleanPlan struct {
	segs        []*segment.Segment // the segments below the uncleanable offset, from the log start
	truncations []uint64           // their truncation counts then
	active      *segment.Segment   // the active segment, for the producers' last batches
	activeSize  int64
	dirtyFrom   int // the index in segs of the first segment holding offsets at or past firstDirty
	firstDirty  int64
	uncleanable int64
	cleanBytes  int64
	dirtyBytes  int64
}

// cleanerPointLocked returns the cleaner point as a clean takes it: a checkpoint below the log
// start offset, or past the log end offset after a truncation, restarts at the log start offset
// (Kafka's LogCleanerManager.cleanableOffsets). Callers hold mu.
func (l *Log) cleanerPointLocked() int64 {
	point := l.cleaning.point.Load()
	if point < l.logStartOffset || point > l.active().NextOffset() {
		return l.logStartOffset
	}
	return point
}

// planLocked returns the plan at now. Callers hold mu.
func (l *Log) planLocked(now time.Time) cleanPlan {
	segs := l.segments
	act := l.active()
	p := cleanPlan{active: act, activeSize: act.Size(), firstDirty: l.cleanerPointLocked()}
	p.uncleanable = act.BaseOffset()
	if hw := l.owner.retentionLimit(); hw >= 0 && hw < p.uncleanable {
		// Kafka cleans nothing past the last stable offset, which the high watermark bounds:
		// the segment holding it stays dirty.
		p.uncleanable = segs[segs.find(hw)].BaseOffset()
	}
	hw := act.NextOffset()
	if lim := l.owner.retentionLimit(); lim >= 0 {
		hw = min(hw, lim)
	}
	if fuo := l.producers.m.FirstUnstableOffset(hw); fuo >= 0 && fuo < p.uncleanable {
		// Nor past the first unstable offset (Kafka's firstUncleanableDirtyOffset takes it): the
		// first offset of an open transaction, or of a decided one whose marker the high
		// watermark has not passed; whether their records count is not settled yet.
		p.uncleanable = segs[segs.find(fuo)].BaseOffset()
	}
	youngest := now.UnixMilli() - l.conf().MinCompactionLag.Milliseconds()
	p.dirtyFrom = -1
	for i, s := range segs[:len(segs)-1] {
		if s.BaseOffset() >= p.uncleanable {
			break
		}
		dirty := segs[i+1].BaseOffset() > p.firstDirty
		if dirty && l.conf().MinCompactionLag > 0 && (s.MaxTimestamp() > youngest || s.TimesUnknown()) {
			// min.compaction.lag.ms: this segment and the later ones wait.
			p.uncleanable = s.BaseOffset()
			break
		}
		if s.BaseOffset() < p.firstDirty {
			p.cleanBytes += s.Size()
		}
		if dirty {
			p.dirtyBytes += s.Size()
			if p.dirtyFrom < 0 {
				p.dirtyFrom = len(p.segs)
			}
		}
		p.segs = append(p.segs, s)
		p.truncations = append(p.truncations, s.Truncations())
	}
	if p.dirtyFrom < 0 {
		p.dirtyFrom = len(p.segs)
	}
	p.uncleanable = max(p.uncleanable, segs[0].BaseOffset())
	p.firstDirty = min(p.firstDirty, p.uncleanable)
	return p
}

// horizonDue reports whether a tombstone the last clean kept has passed its delete horizon at
// now, which makes a clean due however little is dirty.
func (l *Log) horizonDue(now time.Time) bool { return l.cleaning.horizon.Load() <= now.UnixMilli() }

// stateOf turns a plan into the state the API shows.
func (l *Log) stateOf(p cleanPlan, now time.Time) CompactionState {
	st := CompactionState{CleanerPoint: p.firstDirty, UncleanableOffset: p.uncleanable,
		CleanBytes: p.cleanBytes, DirtyBytes: p.dirtyBytes}
	if total := p.cleanBytes + p.dirtyBytes; total > 0 {
		st.DirtyRatio = float64(p.dirtyBytes) / float64(total)
	}
	if !l.conf().CleanupPolicy.Compact() {
		return st
	}
	switch {
	case p.dirtyBytes > 0 && st.DirtyRatio > l.conf().MinCleanableDirtyRatio:
		st.Due = true
	case l.horizonDue(now):
		st.Due = true
	case l.conf().MaxCompactionLag > 0 && p.dirtyBytes > 0:
		st.Due = l.oldestDirtyBatch(p) < now.UnixMilli()-l.conf().MaxCompactionLag.Milliseconds()
	}
	return st
}

// oldestDirtyBatch returns the smallest first-batch timestamp (its MaxTimestamp, ms) of the
// dirty segments of p, as Kafka's LogCleanerManager.maxCompactionDelay reads them
// (getFirstBatchTimestampForSegments); math.MaxInt64 when none can be read.
func (l *Log) oldestDirtyBatch(p cleanPlan) int64 {
	oldest := int64(math.MaxInt64)
	for _, s := range p.segs[p.dirtyFrom:] {
		s.Acquire()
		if err := l.openForRead(s); err == nil {
			_ = s.WalkHeaders(0, s.Size(), s.BaseOffset(), func(_ int64, h *recordbatch.Header) bool {
				oldest = min(oldest, h.MaxTimestamp)
				return false
			})
		}
		l.release(s)
	}
	return oldest
}

// Compact cleans the log now, whatever its dirty ratio: everything from the cleaner point to the
// uncleanable offset (see CompactionState), in as many passes as the dedupe buffer needs
// (WithCleanerDedupeBufferSize: one cleaner thread's share), as Kafka's log cleaner does when it
// picks the log. It waits for a clean of the log already running. Reads and appends go on
// meanwhile; a reader that acquired a replaced segment finishes on its files.
//
// ErrInvalidConfig when the log's cleanup.policy does not compact; ErrClosed after Close;
// ctx's error when it is done first (the clean in progress is dropped, nothing of it kept);
// ErrCorrupt when a batch to be cleaned is damaged (the log is then left as it was, and the
// background cleaner skips it until it is reopened, as Kafka marks a partition uncleanable).
// A group of segments that retention or a truncation changed while it was copied is left as
// it is, without error.
func (l *Log) Compact(ctx context.Context) (CompactionResult, error) {
	if !l.conf().CleanupPolicy.Compact() {
		return CompactionResult{}, fmt.Errorf("%w: %s: cleanup.policy %s does not compact", ErrInvalidConfig, l.dir, l.conf().CleanupPolicy)
	}
	l.cleaning.mu.Lock()
	defer l.cleaning.mu.Unlock()
	return l.compactLocked(ctx, cleaner.NewOffsetMap(l.cleaning.memory))
}

// compactLocked runs passes until the dirty part is clean. Callers hold cleaning.mu.
func (l *Log) compactLocked(ctx context.Context, m *cleaner.OffsetMap) (total CompactionResult, err error) {
	start, began := l.now(), time.Now()
	defer func() { l.stats.cleaned(total, start, time.Since(began)) }()
	for {
		r, more, err := l.cleanPass(ctx, m, l.now())
		total.add(r)
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				l.cleaning.failed.Store(&err)
			}
			return total, err
		}
		if !more {
			l.mu.RLock()
			total.CleanerPoint = max(total.CleanerPoint, l.cleanerPointLocked())
			l.mu.RUnlock()
			return total, nil
		}
	}
}

// cleanPass runs one pass (see the top of this file) at now; more says that the offset map
// filled before the end of the dirty part, so another pass is due.
func (l *Log) cleanPass(ctx context.Context, m *cleaner.OffsetMap, now time.Time) (r CompactionResult, more bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return r, false, ErrClosed
	}
	p := l.planLocked(now)
	if len(p.segs) == 0 || (p.firstDirty >= p.uncleanable && !l.horizonDue(now)) {
		l.mu.RUnlock()
		return r, false, nil
	}
	for _, s := range p.segs {
		s.Acquire()
	}
	l.mu.RUnlock()
	defer func() {
		for _, s := range p.segs {
			l.release(s)
		}
	}()
	r.Passes = 1

	// The aborted transactions that may hold batches of the segments cleaned, their markers
	// possibly past them: their batches put no key in the map and are removed (every
	// transaction there is decided: the uncleanable offset stops at the first undecided one).
	abortedTxns, err := l.abortedTxns(nil, p.segs[0].BaseOffset(), p.uncleanable)
	if err != nil {
		return r, false, err
	}
	aborted := func(h *recordbatch.Header) bool {
		return h.Attributes.Transactional() && !h.Attributes.Control() && isAborted(abortedTxns, h.ProducerID, h.BaseOffset)
	}
	m.Reset()
	end, read, err := l.buildOffsetMap(ctx, p, m, aborted)
	r.BytesRead += read
	if err != nil {
		return r, false, err
	}
	last, err := l.producersLastBatches(p)
	if err != nil {
		return r, false, err
	}
	rules := cleaner.Rules{Map: m, Now: now.UnixMilli(), DeleteRetention: max(l.conf().DeleteRetention, 0).Milliseconds(),
		KeepEmpty: func(h *recordbatch.Header) bool {
			return h.ProducerID >= 0 && last[h.ProducerID] == h.LastOffset()
		},
		Aborted: aborted,
		Limits:  recordbatch.Limits{MaxBatchSize: l.segConf().MaxBatchSize(), MaxDecompressedSize: l.conf().readDecompressLimit()}}

	// The segments to copy: every one from the log start that holds offsets below end.
	var spans []cleaner.SegmentSpan
	for i, s := range p.segs {
		if s.BaseOffset() >= end {
			break
		}
		next := p.uncleanable
		if i+1 < len(p.segs) {
			next = p.segs[i+1].BaseOffset()
		}
		offsetEntries, timeEntries := s.IndexEntries()
		spans = append(spans, cleaner.SegmentSpan{BaseOffset: s.BaseOffset(), Size: s.Size(),
			OffsetIndexBytes: offsetEntries * 8, TimeIndexBytes: timeEntries * 12, LastOffset: next - 1})
	}
	horizon := int64(math.MaxInt64)
	var f cleaner.Filter
	at := 0
	for _, g := range cleaner.GroupBySize(spans, l.conf().SegmentBytes, l.conf().SegmentIndexBytes) {
		group, truncs := p.segs[at:at+len(g)], p.truncations[at:at+len(g)]
		at += len(g)
		cleaned, gs, err := l.cleanGroup(ctx, group, &f, &rules)
		r.BytesRead += gs.bytesRead
		r.RecordsRead += gs.recordsRead
		r.RecordsRemoved += gs.recordsRead - gs.recordsKept
		if err != nil {
			return r, false, err
		}
		swapped, err := l.swapIn(group, truncs, cleaned)
		if err != nil || !swapped {
			// Nothing past a group that could not be swapped is cleaned in this pass; the
			// cleaner point stays, so the next clean starts again from it.
			return r, false, err
		}
		r.BytesWritten += cleaned.Size()
		r.SegmentsBefore += len(group)
		r.SegmentsAfter++
		horizon = min(horizon, gs.horizon)
	}
	l.cleaning.horizon.Store(horizon)
	l.cleaning.point.Store(end)
	r.CleanerPoint = end
	if err := l.owner.cleaned(end); err != nil {
		l.logger.Warn("cleaner offset checkpoint not written", "cleaner_point", end, "err", err)
	}
	l.logger.Info("log cleaned", "cleaner_point", end, "segments_before", r.SegmentsBefore, "segments_after", r.SegmentsAfter,
		"bytes_read", r.BytesRead, "bytes_written", r.BytesWritten, "records_removed", r.RecordsRemoved)
	return r, end < p.uncleanable, nil
}

// batchesOf calls fn with each whole batch of s (acquired by the caller) from its start to its
// size (segment.Segment.EachBatch), until fn returns false or an error; it opens s's files if
// the cache closed them, and checks ctx every 64 batches. A batch fn finds damaged (its decode
// fails) is ErrCorrupt naming the segment and the position.
func (l *Log) batchesOf(ctx context.Context, s *segment.Segment, buf *[]byte, fn func(batch []byte) (bool, error)) error {
	if err := l.openForRead(s); err != nil {
		return err
	}
	n := 0
	return s.EachBatch(buf, func(pos int64, b []byte) (bool, error) {
		if n++; n%64 == 1 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		ok, err := fn(b)
		if errors.Is(err, recordbatch.ErrCorrupt) || errors.Is(err, recordbatch.ErrShort) {
			err = fmt.Errorf("%w: clean %s at position %d: %w", ErrCorrupt, s.Path(segment.LogSuffix), pos, err)
		}
		return ok, err
	})
}

// buildOffsetMap puts the keys of the dirty batches of p into m (Kafka's Cleaner.buildOffsetMap)
// and returns where the map ends: p.uncleanable when every dirty batch fitted, else the base
// offset of the first batch that did not. A dedupe buffer that cannot hold the first dirty
// batch's keys is ErrInvalidConfig. read counts the bytes read.
func (l *Log) buildOffsetMap(ctx context.Context, p cleanPlan, m *cleaner.OffsetMap, aborted func(*recordbatch.Header) bool) (end int64, read int64, err error) {
	end = p.uncleanable
	var dec recordbatch.Decoder
	dec.Limits = recordbatch.Limits{MaxBatchSize: l.segConf().MaxBatchSize(), MaxDecompressedSize: l.conf().readDecompressLimit()}
	var buf []byte
	first := true
	for _, s := range p.segs[p.dirtyFrom:] {
		full := false
		err = l.batchesOf(ctx, s, &buf, func(b []byte) (bool, error) {
			h, err := recordbatch.ParseHeader(b, 0)
			if err != nil {
				return false, err
			}
			if h.LastOffset() < p.firstDirty {
				return true, nil
			}
			read += int64(len(b))
			if aborted(&h) {
				return true, nil // Kafka's buildOffsetMapForSegment passes over aborted batches
			}
			added, err := m.AddBatch(&dec, b)
			if err != nil {
				return false, err
			}
			if !added {
				if first {
					return false, fmt.Errorf("%w: %s: the dedupe buffer (%d bytes) cannot hold the keys of the batch at offset %d; raise log.cleaner.dedupe.buffer.size",
						ErrInvalidConfig, l.dir, m.MemoryBytes(), h.BaseOffset)
				}
				end, full = h.BaseOffset, true
				return false, nil
			}
			first = false
			return true, nil
		})
		if err != nil || full {
			break
		}
	}
	if err == nil {
		// The map covers [firstDirty, end), keys or not (Kafka's updateLatestOffset).
		m.UpdateLatestOffset(end - 1)
	}
	return end, read, err
}

// producersLastBatches returns, for every producer id in the log, the last offset of its last
// batch: the batch the cleaner keeps even when all its records go (Kafka keeps it so that
// the producer's state, its epoch and last sequence, survives: BatchRetention.RETAIN_EMPTY).
// It walks the batch headers of every segment of p and of the active segment as p saw it.
func (l *Log) producersLastBatches(p cleanPlan) (map[int64]int64, error) {
	last := map[int64]int64{}
	walk := func(s *segment.Segment, size int64) error {
		if err := l.openForRead(s); err != nil {
			return err
		}
		return s.WalkHeaders(0, size, s.BaseOffset(), func(_ int64, h *recordbatch.Header) bool {
			if h.ProducerID >= 0 {
				last[h.ProducerID] = h.LastOffset()
			}
			return true
		})
	}
	for _, s := range p.segs {
		if err := walk(s, s.Size()); err != nil {
			return nil, err
		}
	}
	p.active.Acquire()
	defer l.release(p.active)
	if err := walk(p.active, p.activeSize); err != nil && !l.isClosed() {
		return nil, err
	}
	return last, nil
}

// groupStats is what cleanGroup did.
type groupStats struct {
	bytesRead                int64
	recordsRead, recordsKept int64
	horizon                  int64 // the earliest delete horizon of a batch kept with tombstones, ms; MaxInt64 when none
}

// cleanGroup copies the batches of group, filtered by rules, into a new segment at the group's
// base offset, written as "*.cleaned" and synced, and returns it (Kafka's Cleaner.cleanSegments).
// On error nothing of it is left.
func (l *Log) cleanGroup(ctx context.Context, group []*segment.Segment, f *cleaner.Filter, rules *cleaner.Rules) (cleaned *segment.Segment, st groupStats, err error) {
	st.horizon = math.MaxInt64
	cleaned, err = segment.CreateCleaned(l.fs, l.dir, group[0].BaseOffset(), l.segConf(), l.caches)
	if err != nil {
		return nil, st, fmt.Errorf("commitlog: create cleaned segment %d of %s: %w", group[0].BaseOffset(), l.dir, err)
	}
	defer func() {
		if err != nil {
			if rerr := cleaned.Remove(); rerr != nil {
				l.logger.Warn("removing cleaned segment failed", "segment", cleaned.Path(segment.LogSuffix), "err", rerr)
			}
			cleaned = nil
		}
	}()
	var (
		out     []byte              // filtered batches not yet written
		infos   []segment.BatchInfo // theirs
		pos     int64               // where out goes in the cleaned file
		readBuf []byte
	)
	const writeChunk = 512 << 10 // log.cleaner.io.buffer.size
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if err := cleaned.ReserveIndexes(len(infos)); err != nil {
			return err
		}
		if err := cleaned.WriteAt(out, pos); err != nil {
			return err
		}
		for _, b := range infos {
			if err := cleaned.IndexBatch(b); err != nil {
				return err
			}
		}
		pos += int64(len(out))
		cleaned.SetSize(pos)
		out, infos = out[:0], infos[:0]
		return nil
	}
	for _, s := range group {
		err := l.batchesOf(ctx, s, &readBuf, func(b []byte) (bool, error) {
			st.bytesRead += int64(len(b))
			before := len(out)
			var res cleaner.Result
			var err error
			out, res, err = f.Batch(out, b, rules)
			if err != nil {
				return false, err
			}
			st.recordsRead += int64(res.RecordsRead)
			st.recordsKept += int64(res.RecordsKept)
			if !res.Kept {
				return true, nil
			}
			if res.DeleteHorizon >= 0 && res.Tombstones > 0 {
				st.horizon = min(st.horizon, res.DeleteHorizon)
			}
			infos = append(infos, segment.BatchInfo{Position: pos + int64(before), Size: len(out) - before,
				LastOffset: res.LastOffset, MaxTimestamp: res.MaxTimestamp})
			if len(out) >= writeChunk {
				return true, flush()
			}
			return true, nil
		})
		if err != nil {
			return cleaned, st, err
		}
	}
	if err := flush(); err != nil {
		return cleaned, st, fmt.Errorf("commitlog: write cleaned segment %s: %w", cleaned.Path(segment.LogSuffix), err)
	}
	if err := copyAbortedTxns(group, cleaned); err != nil {
		return cleaned, st, fmt.Errorf("commitlog: write cleaned segment %s: %w", cleaned.Path(segment.LogSuffix), err)
	}
	// Seal trims and syncs the indexes and syncs the data: the cleaned files are whole on disk
	// before the rename that commits them.
	if err := cleaned.Seal(); err != nil {
		return cleaned, st, fmt.Errorf("commitlog: seal cleaned segment %s: %w", cleaned.Path(segment.LogSuffix), err)
	}
	return cleaned, st, nil
}

// copyAbortedTxns appends every entry of the txn indexes of group, in order, to cleaned's, as
// Kafka's Cleaner.cleanSegments rebuilds the cleaned segment's txn index from the aborted
// transactions of the segments it replaces (collected over each segment's whole range). Kafka
// keeps an entry only while its ABORT marker is kept; the filter keeps every control batch
// (cleaner.Filter), so every entry stays. Before Seal, which syncs the file.
func copyAbortedTxns(group []*segment.Segment, cleaned *segment.Segment) error {
	var txns []txnindex.AbortedTxn
	for _, s := range group {
		var err error
		txns, err = s.CollectAbortedTxns(txns[:0], math.MinInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		for _, a := range txns {
			if err := cleaned.AppendAbortedTxn(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// swapIn replaces group, whose truncation counts were truncs when the pass planned, by cleaned,
// as Kafka's LocalLog.replaceSegments does (see the top of this file), and reports whether it
// did. It does not when the log closed or the group is no longer in the log as it was (retention
// took a segment, a truncation cut one): cleaned is then removed. A failure after the rename
// to "*.swap" is the log's next open's to finish.
func (l *Log) swapIn(group []*segment.Segment, truncs []uint64, cleaned *segment.Segment) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	at := -1
	if !l.closed {
		at = l.segments.find(group[0].BaseOffset())
		for j, s := range group {
			if at+j >= len(l.segments)-1 || l.segments[at+j] != s || s.Truncations() != truncs[j] {
				at = -1
				break
			}
		}
	}
	l.mu.RUnlock()
	if at < 0 {
		return false, errors.Join(cleaned.Remove(), l.closedErr())
	}
	if err := cleaned.SetSuffix(segment.SwapSuffix); err != nil {
		return false, errors.Join(fmt.Errorf("commitlog: swap in cleaned segment %s: %w", cleaned.Path(segment.LogSuffix), err), cleaned.Remove())
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		// The swap may or may not survive a crash; either is a whole log at the next open.
		return false, fmt.Errorf("commitlog: swap in cleaned segment %s: %w", cleaned.Path(segment.LogSuffix), err)
	}
	l.mu.Lock()
	// A new slice: a reader may hold the old one (see planLocked's callers).
	l.segments = slices.Replace(slices.Clone(l.segments), at, at+len(group), cleaned)
	l.mu.Unlock()
	errs := []error{l.retire(group)}
	if err := cleaned.SetSuffix(""); err != nil {
		errs = append(errs, fmt.Errorf("commitlog: rename swapped segment %s: %w", cleaned.Path(segment.LogSuffix), err))
	} else {
		errs = append(errs, l.fs.SyncDir(l.dir))
		cleaned.Unpin()
	}
	return true, errors.Join(errs...)
}

// closedErr returns ErrClosed once the log is closed, else nil.
func (l *Log) closedErr() error {
	if l.isClosed() {
		return ErrClosed
	}
	return nil
}

// cutCleanerPoint lowers the cleaner point to end, the log end offset a truncation left, and
// has the owner checkpoint it, as Kafka's LogCleanerManager.maybeTruncateCheckpoint does: the
// offsets appended again from there on are dirty. Callers hold appendMu.
func (l *Log) cutCleanerPoint(end int64) {
	if p := l.cleaning.point.Load(); p > end {
		l.cleaning.point.Store(end)
		if err := l.owner.cleaned(end); err != nil {
			l.logger.Warn("cleaner offset checkpoint not written", "cleaner_point", end, "err", err)
		}
	}
}

// setCleanerPoint gives the log the cleaner point its owner checkpointed (see planLocked for
// how one outside the log is taken).
func (l *Log) setCleanerPoint(offset int64) { l.cleaning.point.Store(offset) }

// checkKeys returns ErrKeylessRecord, naming the record, when one of recs has no key: the check
// an append to a compacted log makes first (Kafka's LogValidator.validateKey).
func checkKeys(recs []*Record) error {
	for i, r := range recs {
		if r.Key == nil {
			return fmt.Errorf("%w: record %d of %d", ErrKeylessRecord, i, len(recs))
		}
	}
	return nil
}

// checkBatchKeys returns ErrKeylessRecord when a record of the producer's batch at the start of
// b has no key (Kafka's LogValidator.validateKey, on the leader's path only: replicated data is
// not validated again). The batch was validated; lim bounds its decompression.
func checkBatchKeys(b []byte, lim recordbatch.Limits) error {
	batch, err := recordbatch.Decode(b, lim)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	i := 0
	for r := range batch.Records() {
		if r.Key == nil {
			return fmt.Errorf("%w: record %d of the batch at offset delta %d", ErrKeylessRecord, i, r.OffsetDelta)
		}
		i++
	}
	return nil
}
