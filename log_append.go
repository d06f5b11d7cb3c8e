package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// batchInfo is what the log needs to know of a batch it is about to index.
type batchInfo struct {
	position     int64
	size         int
	baseOffset   int64
	lastOffset   int64
	maxTimestamp int64
}

// pendingWrite is one or more whole batches about to be written to the active segment.
type pendingWrite struct {
	data    []byte
	batches []batchInfo // positions relative to the start of data
	// firstOffset and lastOffset span the batches' offsets once assigned; maxTimestamp is the
	// largest batch MaxTimestamp.
	firstOffset, lastOffset, maxTimestamp int64
	// producer says that a batch carries a producer id (idempotent, transactional or a
	// transaction marker): write then checks and updates the producer state (log_producers.go).
	producer bool
	// calls is the number of appends the write carries (coalesced calls, see appendQueue); 0
	// counts as 1. The stats count each a produce request.
	calls int
	// duplicate is set by write when the batches repeat ones the log holds (a producer's retry):
	// nothing was written, and firstOffset and lastOffset are the original batches' offsets.
	duplicate bool
}

// requests is the number of appends w carries, at least 1.
func (w *pendingWrite) requests() int { return max(w.calls, 1) }

// Append encodes recs into a RecordBatch v2 and appends it, assigning consecutive offsets from
// the log end offset. Each record's Offset is set; its Timestamp is set to the append time when
// zero, and always under LogAppendTime. Records that together exceed MaxMessageBytes are split
// into several batches in order; a single record that cannot fit a batch of MaxMessageBytes
// returns ErrRecordTooLarge and nothing is written. Under CreateTime a record timestamped more than
// TimestampAfterMax ahead of the append time returns ErrInvalidTimestamp, nothing written.
//
// Under SyncAlways Append returns once the batch is on stable storage; concurrent appends share
// one fdatasync, and those waiting for the same one are written with one write (if that write
// fails, each of them returns its error and none stays in the log). It returns ErrClosed after Close, an error wrapping ErrSync after a failed
// fsync, ErrNoSpace when the disk is full (nothing of the call stays in the log), and ctx's
// error if ctx is done before the write starts.
func (l *Log) Append(ctx context.Context, recs ...*Record) error {
	t, err := l.appendRecords(ctx, recs, true)
	if err != nil {
		return err
	}
	return l.awaitDurable(t)
}

// appendRecords is Append up to the write: it returns the write's ticket for awaitDurable (zero
// when recs is empty). await says that the caller will call awaitDurable.
func (l *Log) appendRecords(ctx context.Context, recs []*Record, await bool) (writeTicket, error) {
	return l.appendProducerRecords(ctx, recs, await, nil)
}

// appendProducerRecords is appendRecords for the batches of producer prod (nil: none); a retry
// of batches the log holds sets recs' offsets to the original ones and writes nothing.
func (l *Log) appendProducerRecords(ctx context.Context, recs []*Record, await bool, prod *producerFields) (writeTicket, error) {
	return l.appendCalls(ctx, recs, nil, 0, await, prod)
}

// appendCalls is appendProducerRecords for the records of several appends, back to back in recs,
// each starting at its index in starts, written with one write: a new call starts a new batch when
// its first record would take the batch past batchSize bytes (see encoder.encodeCalls). An error
// is the whole write's: nothing of any call is written. starts nil is one call.
func (l *Log) appendCalls(ctx context.Context, recs []*Record, starts []int, batchSize int, await bool, prod *producerFields) (writeTicket, error) {
	if err := ctx.Err(); err != nil {
		return writeTicket{}, err
	}
	if len(recs) == 0 {
		return writeTicket{}, nil
	}
	if l.conf().CleanupPolicy.Compact() {
		if err := checkKeys(recs); err != nil {
			return writeTicket{}, err
		}
	}
	now := l.now()
	l.gc.writing.Add(1) // see lingerForWriters
	defer l.gc.writing.Add(-1)
	enc := l.getEncoder()
	defer l.builders.Put(enc)
	// The encoder gives records without a timestamp (all, under LogAppendTime) the append time
	// and checks the others against TimestampAfterMax, as it encodes them.
	w, err := enc.encodeCalls(recs, starts, batchSize, l.conf(), now, l.latestTimestamp(now), prod)
	if err != nil {
		return writeTicket{}, err
	}
	t, first, err := l.write(w, true, await)
	if err != nil {
		return writeTicket{}, err
	}
	for i, r := range recs {
		r.Offset = first + int64(i)
	}
	return t, nil
}

// AppendAsLeader appends batches handed over as RecordBatch v2 bytes, back to back (a producer's
// batches, as a broker receives them), and assigns them offsets from the log end offset, as
// Kafka's leader does. The bytes are validated (length, magic, CRC, record framing and count,
// consecutive offset deltas) and stored unchanged but for BaseOffset, which the CRC does not
// cover, and, under LogAppendTime, the timestamp type and MaxTimestamp (CRC recomputed). The
// rewrite happens in place: batches is the log's until the call returns.
//
// It returns the first and last offsets assigned. ErrCorrupt when a batch is malformed,
// ErrRecordTooLarge when one is larger than MaxMessageBytes, ErrInvalidTimestamp when a CreateTime
// batch's MaxTimestamp is more than TimestampAfterMax ahead; nothing is written then. Other
// errors as for Append.
func (l *Log) AppendAsLeader(ctx context.Context, batches []byte) (firstOffset, lastOffset int64, err error) {
	t, first, last, err := l.appendRawLeader(ctx, batches, true)
	if err != nil {
		return 0, 0, err
	}
	return first, last, l.awaitDurable(t)
}

// appendRawLeader is AppendAsLeader up to the write: it returns the write's ticket for
// awaitDurable and the offsets assigned. await says that the caller will call awaitDurable.
func (l *Log) appendRawLeader(ctx context.Context, batches []byte, await bool) (t writeTicket, firstOffset, lastOffset int64, err error) {
	if err := ctx.Err(); err != nil {
		return t, 0, 0, err
	}
	l.gc.writing.Add(1) // see lingerForWriters
	defer l.gc.writing.Add(-1)
	w, err := l.validateRaw(batches, true)
	if err != nil {
		return t, 0, 0, err
	}
	if l.conf().TimestampType == CreateTime {
		if now := l.now(); w.maxTimestamp > l.latestTimestamp(now) {
			return t, 0, 0, l.timestampError(w.maxTimestamp, now)
		}
	}
	if l.conf().TimestampType == LogAppendTime {
		now := l.now().UnixMilli()
		for _, b := range w.batches {
			recordbatch.SetLogAppendTime(batches[b.position:b.position+int64(b.size)], now)
		}
		w.maxTimestamp = now
		for i := range w.batches {
			w.batches[i].maxTimestamp = now
		}
	}
	t, first, err := l.write(w, true, await)
	if err != nil {
		return t, 0, 0, err
	}
	return t, first, first + (w.lastOffset - w.firstOffset), nil
}

// AppendAsFollower appends batches that already carry their offsets (a follower copying its
// leader, byte for byte). Each batch's base offset must be at least the log end offset and above
// the previous batch's last offset; gaps are allowed, as compaction leaves them. It returns the
// last offset appended. ErrOffsetOutOfOrder when offsets do not grow; other errors as for
// AppendAsLeader. Nothing is written when an error is returned before the write.
func (l *Log) AppendAsFollower(ctx context.Context, batches []byte) (lastOffset int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.gc.writing.Add(1) // see lingerForWriters
	w, err := l.validateRaw(batches, false)
	if err != nil {
		l.gc.writing.Add(-1)
		return 0, err
	}
	t, _, err := l.write(w, false, true)
	l.gc.writing.Add(-1)
	if err != nil {
		return 0, err
	}
	return w.lastOffset, l.awaitDurable(t)
}

// latestTimestamp returns the largest CreateTime timestamp (ms) an append at now accepts:
// TimestampAfterMax ahead of it (Kafka's message.timestamp.after.max.ms), or no limit.
func (l *Log) latestTimestamp(now time.Time) int64 {
	if l.conf().TimestampAfterMax < 0 {
		return math.MaxInt64
	}
	return now.Add(l.conf().TimestampAfterMax).UnixMilli()
}

// timestampError is the ErrInvalidTimestamp for a timestamp ts (ms) past latestTimestamp(now).
func (l *Log) timestampError(ts int64, now time.Time) error { return timestampError(l.conf(), ts, now) }

// timestampError is Log.timestampError for a log of configuration cfg.
func timestampError(cfg *LogConfig, ts int64, now time.Time) error {
	return fmt.Errorf("%w: timestamp %d is %s ahead of the append time %d; message.timestamp.after.max.ms is %d",
		ErrInvalidTimestamp, ts, time.Duration(ts-now.UnixMilli())*time.Millisecond, now.UnixMilli(), cfg.TimestampAfterMax.Milliseconds())
}

// validateRaw checks every batch in data and describes them for write. For a leader's append
// the offsets are placeholders, assigned by write.
func (l *Log) validateRaw(data []byte, leader bool) (*pendingWrite, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no batches", ErrCorrupt)
	}
	w := &pendingWrite{data: data, maxTimestamp: -1}
	// max.message.bytes bounds a batch as sent, compressed (Kafka's LogValidator); what it
	// decompresses to is bounded only against bombs, by the limit reads use, so that every batch
	// taken can be read back.
	lim := recordbatch.Limits{MaxBatchSize: l.conf().MaxMessageBytes, MaxDecompressedSize: l.conf().readDecompressLimit()}
	var next int64
	for pos := 0; pos < len(data); {
		h, err := recordbatch.ParseHeader(data[pos:], 0)
		if err == nil && h.Size() > l.conf().MaxMessageBytes {
			return nil, fmt.Errorf("%w: batch at byte %d is %d bytes, max.message.bytes is %d", ErrRecordTooLarge, pos, h.Size(), l.conf().MaxMessageBytes)
		}
		if err == nil {
			if leader {
				// A producer's batch gets the broker's checks (Kafka's LogValidator).
				h, err = recordbatch.Validate(data[pos:], lim)
			} else {
				// A leader's batch may be a control batch or have compaction gaps.
				var b recordbatch.Batch
				b, err = recordbatch.Decode(data[pos:], lim)
				h = b.Header
			}
		}
		if errors.Is(err, recordbatch.ErrTooLarge) {
			return nil, fmt.Errorf("%w: batch at byte %d: %w", ErrRecordTooLarge, pos, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, pos, err)
		}
		if leader && l.conf().CleanupPolicy.Compact() {
			if err := checkBatchKeys(data[pos:], lim); err != nil {
				return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
			}
		}
		if leader {
			h.BaseOffset = next // placeholder, rebased by write
		} else if len(w.batches) > 0 && h.BaseOffset < next {
			return nil, fmt.Errorf("%w: batch at byte %d: base offset %d not above the previous batch's last offset %d", ErrOffsetOutOfOrder, pos, h.BaseOffset, next-1)
		}
		if len(w.batches) == 0 {
			w.firstOffset = h.BaseOffset
		}
		w.batches = append(w.batches, batchInfo{position: int64(pos), size: h.Size(), baseOffset: h.BaseOffset, lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp})
		if h.ProducerID >= 0 || h.Attributes.Transactional() {
			w.producer = true
		}
		w.lastOffset = h.LastOffset()
		w.maxTimestamp = max(w.maxTimestamp, h.MaxTimestamp)
		next = h.NextOffset()
		pos += h.Size()
	}
	if w.lastOffset >= math.MaxInt64-math.MaxInt32 {
		// The next segment would start past the last base offset whose relative offsets fit
		// int64 (the indexes refuse it): the log could take no write after this one.
		return nil, fmt.Errorf("%w: last offset %d beyond the largest a log can hold", ErrCorrupt, w.lastOffset)
	}
	if w.lastOffset-w.firstOffset > math.MaxInt32 {
		// One write lands in one segment, whose indexes hold offsets relative to its base in 31
		// bits: written, the batches past that range could not be indexed, and recovery would
		// cut them off. Kafka's LogSegment refuses such an append too.
		return nil, fmt.Errorf("%w: batches span offsets %d to %d, more than one segment can hold", ErrCorrupt, w.firstOffset, w.lastOffset)
	}
	return w, nil
}

// write appends w's bytes to the active segment, rolling first when they do not fit, and
// publishes them to readers. With assign set, offsets are assigned from the log end offset and
// written into the batches; otherwise w's own offsets must start at or above it. It returns the
// write's sequence number for awaitDurable and the first offset written.
func (l *Log) write(w *pendingWrite, assign, await bool) (t writeTicket, firstOffset int64, err error) {
	l.appendMu.Lock()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return t, 0, err
	}
	seg := l.active()
	leo := seg.NextOffset()
	if l.gc.stage.writes > 0 {
		leo = l.gc.stage.next
	}
	if assign {
		// A leader's batches carry its epoch, in the header field Kafka reserves for it (not
		// covered by the CRC), so that followers can find where their logs diverge.
		shift := leo - w.firstOffset
		for i := range w.batches {
			b := &w.batches[i]
			b.baseOffset += shift
			b.lastOffset += shift
			recordbatch.SetBaseOffset(w.data[b.position:], b.baseOffset)
			recordbatch.SetPartitionLeaderEpoch(w.data[b.position:], l.leaderEpoch)
		}
		w.firstOffset, w.lastOffset = leo, w.lastOffset+shift
	} else if w.firstOffset < leo {
		return t, 0, fmt.Errorf("%w: base offset %d below the log end offset %d", ErrOffsetOutOfOrder, w.firstOffset, leo)
	}
	if w.producer && assign {
		// A producer's batches: its retry is answered with the original offsets, and the
		// sequence, epoch and transaction checks refuse the rest before anything is written.
		pc, err := l.checkProducers(w)
		if err != nil {
			return t, 0, err
		}
		if pc.duplicate {
			w.duplicate = true
			w.firstOffset, w.lastOffset = pc.firstOffset, pc.lastOffset
			// Acknowledged as the original: once what the log holds now is durable.
			return writeTicket{seq: l.appendSeq, gen: l.truncGen.Load(), last: pc.lastOffset}, pc.firstOffset, nil
		}
	}

	// A producer's batches are never staged: their producer state changes with their write.
	stageable := assign && !w.producer
	if l.gc.shouldStage(seg, stageable, await, l.stageable) {
		if l.gc.stageFits(seg, w, stageable, await, l.stageable) {
			return l.gc.stageWrite(seg, w, l.appendSeq, l.truncGen.Load()), w.firstOffset, nil
		}
		if err := l.drainStage(); err != nil {
			// Nothing of this write was staged or written: it fails with the appends before it.
			return t, 0, fmt.Errorf("appends staged before this one could not be written: %w", err)
		}
	}

	if !seg.CanHold(len(w.data), w.lastOffset, w.maxTimestamp) {
		// A follower's batch after a gap starts the new segment at its own base offset.
		if err := l.roll(max(leo, w.firstOffset)); err != nil {
			return t, 0, err
		}
		seg = l.active()
	}

	// The indexes' space first: a full disk then fails the write before any of it is in the
	// .log, and the stores of its entries through the mappings cannot fault.
	if err := seg.ReserveIndexes(len(w.batches)); err != nil {
		return t, 0, wrapIOErr("reserve index space of "+seg.Path(segment.LogSuffix), err)
	}
	epochsOnDisk, err := l.writeEpochsAhead(w.data, w.batches)
	if err != nil {
		return t, 0, err
	}
	pos := seg.Size()
	if err := seg.WriteAt(w.data, pos); err != nil {
		// Remove whatever part reached the file so the framing stays whole; if even that fails
		// the file's state is unknown and the log stops taking writes.
		if terr := seg.DiscardFrom(pos); terr != nil {
			l.fail(fmt.Errorf("remove partial write of %s at %d: %w (after %w)", seg.Path(segment.LogSuffix), pos, terr, err))
		}
		return t, 0, wrapIOErr("write "+seg.Path(segment.LogSuffix), err)
	}
	if w.producer {
		// In the file, not yet visible: the producer state takes the batches now, so that a
		// transaction is open (the last stable offset held below it) before a reader can see
		// its first batch, and an aborted one is in the .txnindex before its marker is.
		if err := l.applyProducers(seg, w); err != nil {
			if terr := seg.DiscardFrom(pos); terr != nil {
				l.fail(fmt.Errorf("remove partial write of %s at %d: %w (after %w)", seg.Path(segment.LogSuffix), pos, terr, err))
			}
			return t, 0, err
		}
	}
	if err := l.publish(seg, w.data, w.batches, pos, 1, w.requests(), epochsOnDisk); err != nil {
		return t, 0, err
	}
	return writeTicket{seq: l.appendSeq, gen: l.truncGen.Load(), last: w.lastOffset}, w.firstOffset, nil
}

// writeEpochsAhead writes the leader-epoch checkpoint with the epochs that batches (about to be
// written, their offsets assigned) start, before their bytes go to the .log, and reports whether
// it did: a full disk then fails the write with ErrNoSpace and nothing written, where writing the
// file after the batches were published could only fail the log. Nothing is written when no
// batch starts an epoch, as for every write but the first of an epoch. Callers hold appendMu.
func (l *Log) writeEpochsAhead(data []byte, batches []batchInfo) (bool, error) {
	l.mu.RLock()
	latest, _ := l.epochs.latest()
	starts := false
	for _, b := range batches {
		// assign's test: only an epoch above the latest starts one.
		if e := recordbatch.PartitionLeaderEpochOf(data[b.position:]); e >= 0 && e > latest.epoch {
			starts = true
			break
		}
	}
	var next epochCache
	if starts {
		next.entries = slices.Clone(l.epochs.entries)
	}
	l.mu.RUnlock()
	if !starts {
		return false, nil
	}
	changed := false
	for _, b := range batches {
		changed = next.assign(recordbatch.PartitionLeaderEpochOf(data[b.position:]), b.baseOffset) || changed
	}
	if !changed {
		return false, nil
	}
	path := filepath.Join(l.dir, leaderEpochFileName)
	if err := checkpoint.WriteRaw(l.fs, path, next.encode()); err != nil {
		return false, wrapIOErr("write "+path, err)
	}
	return true, nil
}

// publish makes batches, just written at pos of the active segment seg by writes appends
// carrying requests calls (counted in the stats), what readers see: the indexes, the segment's size and next offset, the append sequence number; and,
// once per leader epoch, writes the epoch file before any of them is acknowledged, unless
// epochsOnDisk says that writeEpochsAhead wrote it. Callers hold appendMu.
func (l *Log) publish(seg *segment.Segment, data []byte, batches []batchInfo, pos int64, writes, requests int, epochsOnDisk bool) error {
	l.mu.Lock()
	var ierr error
	newEpoch := false
	var records int64
	for _, b := range batches {
		newEpoch = l.epochs.assign(recordbatch.PartitionLeaderEpochOf(data[b.position:]), b.baseOffset) || newEpoch
		records += int64(recordbatch.RecordCountOf(data[b.position:]))
		b.position += pos
		if ierr = seg.IndexBatch(segment.BatchInfo{Position: b.position, Size: b.size, LastOffset: b.lastOffset, MaxTimestamp: b.maxTimestamp}); ierr != nil {
			break
		}
	}
	if ierr == nil {
		seg.SetSize(pos + int64(len(data)))
		l.appendSeq += uint64(writes)
		l.gc.assignedSeq.Store(l.appendSeq)
	}
	l.mu.Unlock()
	if ierr != nil {
		return l.fail(fmt.Errorf("index %s: %w", seg.Path(segment.LogSuffix), ierr))
	}
	l.stats.appended.add(int64(requests), int64(len(batches)), records, int64(len(data)))
	if newEpoch && !epochsOnDisk {
		// Once per leader epoch: the first batch of an epoch is not acknowledged before the
		// epoch's start is on disk, so a restarted follower can always find it.
		if err := l.epochs.write(); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// roll seals the active segment and starts a new one at newBase. An empty active segment is
// replaced rather than sealed. Callers hold appendMu.
//
// The new segment's files are made (or claimed from the spares) and their index space reserved
// before anything of the old segment changes: when that fails, with ENOSPC as a rule, the roll
// returns the error (ErrNoSpace for a full disk), the old segment stays active and unsealed, the
// log stays writable, and the next write tries the roll again. Kafka's roll creates the new
// segment before it marks the old one inactive too (UnifiedLog.roll).
//
// Under SyncAlways the old segment's data is fsynced before the new segment becomes active: the
// group commit's fsync covers the active segment only, and appends whose bytes went to the old
// one may still wait for theirs. Its indexes are synced and the new segment's directory entry too
// before any append lands in it, and the recovery point advances at once. Under SyncNever and
// SyncInterval nothing waits for the disk here: the old segment's flush, the directory's and the
// recovery point's checkpoint go to the flusher (see flushSealed), as Kafka's roll schedules
// them; a process kill loses nothing of them, the page cache keeps it.
func (l *Log) roll(newBase int64) error {
	old := l.active()
	empty := old.Size() == 0
	if empty && newBase == old.BaseOffset() {
		// Rolling an empty segment to its own base would recreate it under the same name; only a
		// write wider than one segment's 2^31 offsets asks that, and validateRaw refuses those.
		return fmt.Errorf("%w: a write cannot fit an empty segment at base offset %d", ErrCorrupt, newBase)
	}
	always := l.sync.rollSyncs()
	if !empty && always {
		if err := old.Sync(); err != nil {
			return l.fail(fmt.Errorf("seal %s: %w", old.Path(segment.LogSuffix), err))
		}
	}
	seg, err := segment.Create(l.fs, l.dir, newBase, l.segConf(), l.caches, l.spares.claim(newBase))
	if err != nil {
		// Nothing changed: the old segment is still the active one, whole and writable.
		l.logger.Warn("creating the next segment failed; the log stays on its active segment", "base_offset", newBase, "err", err)
		return wrapIOErr(fmt.Sprintf("create segment %d of %s", newBase, l.dir), err)
	}
	if !empty {
		// Readers look up the indexes under mu, so remapping them happens under it; the fsync
		// of the trimmed indexes after happens outside, so that readers never wait for the disk.
		l.mu.Lock()
		err := old.SealIndexes()
		l.mu.Unlock()
		if err == nil && always {
			err = old.SyncIndexes()
		}
		if err != nil {
			return errors.Join(l.fail(fmt.Errorf("seal %s: %w", old.Path(segment.LogSuffix), err)), seg.Remove())
		}
		// Sealed, the indexes are read-only and their bytes are in the page cache: the file
		// cache may close the files before the flusher syncs them by path. The new segment's
		// files were added to the cache while the old one was still pinned: the bound is
		// enforced again now that it can be closed.
		old.Unpin()
	}
	if always {
		if err := l.fs.SyncDir(l.dir); err != nil {
			seg.Remove()
			return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
		}
	} else {
		// Set before any append can land in seg: a Sync that acknowledges such an append sees
		// it (see syncDirIfDirty).
		l.flusher.dirDirty.Store(true)
	}
	l.mu.Lock()
	if empty {
		l.segments[len(l.segments)-1] = seg
	} else {
		l.segments = append(l.segments, seg)
	}
	l.flushTarget = newBase
	if always {
		l.recoveryPoint = newBase
	}
	st := logState{logStartOffset: l.logStartOffset, recoveryPoint: newBase}
	l.mu.Unlock()
	if empty {
		// Out of the list now, so no new read picks it; an empty segment has no bytes to read.
		if err := old.Remove(); err != nil {
			return l.fail(fmt.Errorf("remove empty segment %s: %w", old.Path(segment.LogSuffix), err))
		}
	}
	// Kafka's roll takes a producer snapshot at the new segment's base offset: a recovery replays
	// from the newest one. Synced here under SyncAlways, whose roll waits for the disk anyway;
	// else by the flusher, with the segment this roll sealed (planFlush).
	spare, ok := l.spares.takeSnapshot(newBase) // the flusher's spare file, when this roll claimed its spares
	if !ok {
		spare = ""
	}
	if err := l.producers.writeSnapshotVia(newBase, always, false, spare); err != nil {
		l.logger.Warn("producer snapshot not written at roll; a recovery replays from an older one", "base_offset", newBase, "err", err)
	}
	if !always {
		l.flusher.wakeUp()
	} else if err := l.state.write(st); err != nil {
		// Everything below newBase is on disk; a crash from here on scans only the new segment.
		l.logger.Warn("recovery point checkpoint failed; the next recovery scans more", "err", err)
	}
	l.logger.Debug("rolled segment", "base_offset", newBase)
	return nil
}

// awaitDurable waits, under SyncAlways, until the write of t is on stable storage, and returns
// its stage's error if it was staged and writing the stage failed, or ErrTruncated if a
// truncation removed it first.
func (l *Log) awaitDurable(t writeTicket) error {
	if !l.sync.appendWaits() || t.seq == 0 {
		return nil
	}
	if err := l.gc.syncTo(t.seq, l.drainForSync, l.fsyncTo); err != nil {
		return err
	}
	if t.staged != nil && t.staged.err != nil {
		return t.staged.err
	}
	if l.removedByTruncation(t) {
		return fmt.Errorf("%w: offsets up to %d of %s", ErrTruncated, t.last, l.dir)
	}
	return nil
}

// Sync flushes every append made so far to stable storage, whatever the sync policy. Returns
// ErrClosed after Close, and an error wrapping ErrSync (and the operating system's error) if the
// fsync fails; the log then refuses writes until reopened.
func (l *Log) Sync() error {
	l.mu.RLock()
	seq, closed := l.appendSeq, l.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	// Sealed segments first: their flush may still be pending in the background, and so may
	// the checkpoint of the recovery point a finished one reached.
	for l.flushPending() {
		retry, err := l.flusher.flushSealed(l, true, nil)
		if err != nil {
			return err
		}
		if !retry {
			break
		}
	}
	if err := l.flusher.syncDirIfDirty(l); err != nil {
		return err
	}
	if l.sync.runsFlusher() && l.checkpointBehind() {
		l.checkpointRecoveryPoint()
	}
	return l.gc.syncTo(seq, l.drainForSync, l.fsyncTo)
}

// fsyncTo flushes the active segment unless the writes up to seq are already durable, and
// returns the sequence number known durable. Holding syncMu, it never runs beside Close or
// TruncateTo.
func (l *Log) fsyncTo(seq uint64) (uint64, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.durableSeq >= seq {
		return l.durableSeq, nil
	}
	l.mu.RLock()
	failure, closed, target, seg := l.failure, l.closed, l.appendSeq, l.active()
	l.mu.RUnlock()
	if failure != nil {
		return l.durableSeq, failure
	}
	if closed {
		return l.durableSeq, ErrClosed
	}
	began := time.Now()
	if err := seg.Sync(); err != nil {
		return l.durableSeq, l.fail(fmt.Errorf("fdatasync %s: %w", seg.Path(segment.LogSuffix), err))
	}
	l.stats.flushes.observe(time.Since(began))
	l.gc.lastRound.Store(target - l.durableSeq)
	l.durableSeq = target
	l.gc.durableHint.Store(target)
	l.gc.fsyncs.Add(1)
	return target, nil
}
