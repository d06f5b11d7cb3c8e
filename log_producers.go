package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// A log's producer state (Kafka's ProducerStateManager in UnifiedLog): every batch that carries
// a producer id passes through it. The leader's appends are checked (duplicates, sequences,
// epochs, transactions; checkProducers) before anything is written, and the state takes them
// (applyProducers) once their bytes are in the file, before readers can see them; a follower's
// and the recovery's batches are taken unchecked. An ABORT marker adds its transaction to the
// .txnindex of the segment it lands in. The state is snapshotted in Kafka's .snapshot files at
// each roll (fsynced at once under SyncAlways, else by the flusher with the sealed segment: a
// snapshot torn meanwhile only means an older one is read and more replayed), after a replay,
// and, fsynced with the folder, at Close; at open, and after a truncation, it is read from the
// newest snapshot at or below the log end offset and the batch headers after it are replayed.

// DefaultProducerIDExpiration is Kafka's producer.id.expiration.ms default: a producer silent
// for a day is forgotten by the partitions.
const DefaultProducerIDExpiration = 24 * time.Hour

// producerState is a log's producer state with its snapshot files. m is safe for concurrent use;
// the log changes it under appendMu.
type producerState struct {
	fs         fsys.FS
	dir        string
	logger     *slog.Logger
	m          *producerstate.Manager
	expiration time.Duration
	// durable is the snapshot known to be durable on disk and what it holds, encoded: the one
	// the last Close wrote, or the one a clean open read at the log end offset. Close writes no
	// snapshot when it would write these bytes at this offset again (Kafka's takeSnapshot takes
	// none unless the log end offset moved past the latest snapshot's). durableOK says it is set.
	durableOff   int64
	durableBytes []byte
	durableOK    bool
	// unsynced says that the snapshot written after a replay at open was left unsynced
	// (producerOpen.syncedLater), for Store.Open to sync.
	unsynced bool
}

// producerOpen is what a log's open tells the producer state's load; a truncation's load has
// none (nil).
type producerOpen struct {
	// listing is the folder's listing the log's load read: removeSnapshots uses it rather than
	// listing the folder again.
	listing []fs.DirEntry
	// syncedLater leaves out the fsync of the snapshot written after a replay: Store.Open syncs
	// the file system before it relies on it (options.openSyncedLater). Until then a power loss
	// may leave the snapshot torn or empty, which loading deletes (it is the newest), reading the
	// one before and replaying from there.
	syncedLater bool
}

// snapshotCurrent reports whether the snapshot file at offset is durable and holds the state as
// it is now: Close then has nothing to write.
func (ps *producerState) snapshotCurrent(offset int64) bool {
	return ps.durableOK && ps.durableOff == offset && bytes.Equal(ps.durableBytes, producerstate.EncodeSnapshot(ps.m.Entries()))
}

// noteDurable records that the snapshot file at offset is durable and holds b.
func (ps *producerState) noteDurable(offset int64, b []byte) {
	ps.durableOff, ps.durableBytes, ps.durableOK = offset, b, true
}

// writeSnapshot writes the state as the snapshot at offset, replacing one there, under a
// temporary name renamed into place, so that a snapshot file is whole or absent. syncFile fsyncs
// the file before the rename, durable also the folder after it (Close). A roll under SyncNever
// and SyncInterval syncs neither: the flusher syncs the snapshot with the segment the roll sealed
// (planFlush), as Kafka's roll leaves the snapshot's flush to its background flush; until then a
// power loss may leave it empty or torn, which only the newest snapshots can be (the flush goes in
// roll order), and loading deletes a snapshot that does not decode and reads the one before.
func (ps *producerState) writeSnapshot(offset int64, syncFile, durable bool) error {
	return ps.writeSnapshotVia(offset, syncFile, durable, "")
}

// writeSnapshotVia is writeSnapshot through the file at spare, an empty file made ahead (a roll's
// spare, log_spare.go), when spare is not "": no file is created then, only renamed.
func (ps *producerState) writeSnapshotVia(offset int64, syncFile, durable bool, spare string) error {
	b := producerstate.EncodeSnapshot(ps.m.Entries())
	if ps.durableOK && ps.durableOff == offset {
		ps.durableOK = false // the file is rewritten: durable again only if this write is
	}
	path := filepath.Join(ps.dir, producerstate.SnapshotName(offset))
	tmp, flag := path+".tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC
	if spare != "" {
		tmp, flag = spare, os.O_RDWR|os.O_TRUNC
	}
	f, err := ps.fs.OpenFile(tmp, flag, 0o644)
	if err != nil {
		return fmt.Errorf("commitlog: write %s: %w", path, err)
	}
	_, err = f.WriteAt(b, 0)
	if err == nil && (syncFile || durable) {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ps.fs.Rename(tmp, path)
	}
	if err == nil && durable {
		err = ps.fs.SyncDir(ps.dir)
	}
	if err != nil {
		ps.fs.Remove(tmp)
		return wrapIOErr("write producer snapshot "+path, err)
	}
	if durable {
		ps.noteDurable(offset, b)
	}
	return nil
}

// removeSnapshots deletes the snapshot files whose offset drop says, and leftovers of an
// interrupted write, and returns the offsets of the snapshot files it kept, ascending (from the
// one folder listing, which the load then reads the newest of: readLatest). entries is the
// folder's listing when the caller has read it; nil lists the folder.
func (ps *producerState) removeSnapshots(entries []fs.DirEntry, drop func(off int64) bool) ([]int64, error) {
	if entries == nil {
		var err error
		if entries, err = ps.fs.ReadDir(ps.dir); err != nil {
			return nil, fmt.Errorf("commitlog: list %s: %w", ps.dir, err)
		}
	}
	var errs []error
	var kept []int64
	for _, e := range entries {
		name := e.Name()
		if stem, ok := cutSnapshotTemp(name); ok {
			if _, ok := producerstate.ParseSnapshotName(stem); ok {
				errs = append(errs, removeIfExists(ps.fs, filepath.Join(ps.dir, name)))
			}
			continue
		}
		if off, ok := producerstate.ParseSnapshotName(name); ok && drop(off) {
			if ps.durableOK && ps.durableOff == off {
				ps.durableOK = false
			}
			errs = append(errs, removeIfExists(ps.fs, filepath.Join(ps.dir, name)))
			continue
		}
		if off, ok := producerstate.ParseSnapshotName(name); ok && !e.IsDir() {
			kept = append(kept, off)
		}
	}
	slices.Sort(kept)
	return kept, errors.Join(errs...)
}

func cutSnapshotTemp(name string) (string, bool) {
	const suffix = ".tmp"
	if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
		return name[:len(name)-len(suffix)], true
	}
	return "", false
}

func removeIfExists(fsy fsys.FS, path string) error {
	if err := fsy.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// readLatest loads the newest snapshot whose offset is in [start, end] of the snapshot files at
// offs (ascending) into the state and returns its offset; a snapshot that does not decode is
// logged, deleted, and the next older one tried (Kafka's loadFromSnapshot). Without one the
// state is emptied at start and ok is false.
func (ps *producerState) readLatest(offs []int64, start, end int64, now time.Time) (off int64, ok bool, err error) {
	for i := len(offs) - 1; i >= 0; i-- {
		o := offs[i]
		if o > end || o < start {
			continue
		}
		path := filepath.Join(ps.dir, producerstate.SnapshotName(o))
		b, rerr := readWholeFile(ps.fs, path, 1<<30)
		var entries []producerstate.Entry
		if rerr == nil {
			entries, rerr = producerstate.DecodeSnapshot(b)
		}
		if rerr != nil {
			ps.logger.Warn("producer snapshot unreadable; deleted, an older one is read", "file", path, "err", rerr)
			if err := removeIfExists(ps.fs, path); err != nil {
				return 0, false, err
			}
			continue
		}
		ps.m.Load(entries, o, now.UnixMilli(), ps.expiration.Milliseconds())
		return o, true, nil
	}
	ps.m.Reset(start)
	return start, false, nil
}

// loadProducerState rebuilds the producer state at open or after a truncation: from the newest
// snapshot in [log start offset, log end offset], replaying the batch headers after it; snapshot
// files past the log end offset (of batches the log no longer has) are deleted first. Without
// a snapshot the replay starts at the log start offset, or, when lastTwo is set (a clean
// shutdown that left no snapshot: a folder written before producer state existed), at the base
// of the last two segments, as Kafka's upgrade path does. When the replay read sealed segments,
// a snapshot is then written at the log end offset, so the next recovery starts there, as
// Kafka's recovery ends with one (UnifiedLog.rebuildProducerState's takeSnapshot). A replay
// within the active segment writes none: the next one reads no more than this one did (a roll
// and a close write a snapshot), and a store of thousands of partitions reopened after a kill
// would otherwise create and rename a file in every partition's folder for a replay of a few
// bytes. A truncation (open nil) always writes one at its new end when it replayed: it has
// just deleted the snapshots past it. Callers hold appendMu, or run before the log is shared.
func (l *Log) loadProducerState(lastTwo bool, open *producerOpen) error {
	l.mu.RLock()
	start, leo, activeBase := l.logStartOffset, l.active().NextOffset(), l.active().BaseOffset()
	from := start
	if lastTwo {
		from = max(start, l.segments[max(len(l.segments)-2, 0)].BaseOffset())
	}
	// A segment whose .txnindex was damaged (emptied when it opened) gets its entries back from
	// the replay: it starts at or below that segment, from an older snapshot if need be, as
	// Kafka's recovery of a segment rebuilds its transaction index.
	limit := leo
	for _, s := range l.segments {
		if s.TxnIndexCorrupt() {
			limit = s.BaseOffset()
			from = min(from, limit)
			break
		}
	}
	l.mu.RUnlock()
	ps := &l.producers
	var listing []fs.DirEntry
	syncedLater := false
	if open != nil {
		listing, syncedLater = open.listing, open.syncedLater
	}
	offs, err := ps.removeSnapshots(listing, func(off int64) bool { return off > leo || off < start })
	if err != nil {
		return err
	}
	off, ok, err := ps.readLatest(offs, start, limit, l.now())
	if err != nil {
		return err
	}
	if ok {
		from = off
		if lastTwo && off == leo {
			// A clean close wrote it, synced, at the log end offset: a close that finds the
			// state unchanged need not write it again.
			ps.noteDurable(off, producerstate.EncodeSnapshot(ps.m.Entries()))
		}
	} else {
		ps.m.Reset(from)
	}
	if from < leo {
		if err := l.replayProducers(from, leo); err != nil {
			return err
		}
	}
	if from < leo && (open == nil || from < activeBase) {
		// What was replayed need not be again: Kafka's recovery ends with a snapshot too. A
		// log with nothing to replay (new, or read whole from a snapshot), or, at open, only
		// its active segment's batches, writes none.
		ps.unsynced = syncedLater
		if err := ps.writeSnapshot(leo, !syncedLater, false); err != nil {
			l.logger.Warn("producer snapshot not written after recovery; the next one replays more", "err", err)
		}
	}
	return nil
}

// replayProducers feeds the producer state the batches in [from, leo) from their headers (and
// each marker's one record), unchecked, as Kafka's loadProducersFromRecords does; the .txnindex
// entries of ABORT markers at or past from are written again, after the entries from there on
// are dropped. A batch that cannot be read ends the replay, logged: what follows it is read as
// ErrCorrupt anyway.
func (l *Log) replayProducers(from, leo int64) error {
	l.mu.RLock()
	segs := slices.Clone(l.segments[l.segments.find(from):])
	l.mu.RUnlock()
	for _, s := range segs {
		if err := s.TruncateTxnIndex(from); err != nil {
			return wrapIOErr("truncate the transaction index of "+s.Path(segment.LogSuffix), err)
		}
	}
	var ctl []byte
	for off := from; off < leo; {
		r, err := l.ReadRange(off, math.MaxInt32)
		if err != nil {
			l.logger.Warn("producer state not rebuilt past an unreadable batch", "offset", off, "err", err)
			return nil
		}
		if r.Len() == 0 {
			r.Close()
			return nil
		}
		seg := r.s
		var ferr error
		walkErr := seg.WalkHeaders(r.pos, r.pos+r.size, off, func(pos int64, h *recordbatch.Header) bool {
			if h.LastOffset() < from || h.ProducerID < 0 {
				return true
			}
			if !h.Attributes.Control() {
				l.producers.m.Apply(producerBatchOf(h))
				return true
			}
			// A marker: its one record says commit or abort.
			if h.Size() > maxControlBatchSize {
				l.logger.Warn("control batch too large to be a marker; its transaction stays open", "offset", h.BaseOffset, "bytes", h.Size())
				return true
			}
			ctl = slices.Grow(ctl[:0], h.Size())[:h.Size()]
			if _, err := seg.File().ReadAt(ctl, pos); err != nil {
				ferr = fmt.Errorf("commitlog: read control batch at %d of %s: %w", h.BaseOffset, seg.Path(segment.LogSuffix), err)
				return false
			}
			mk, err := parseMarker(ctl, h)
			if err != nil {
				l.logger.Warn("control batch not read; its transaction stays open", "offset", h.BaseOffset, "err", err)
				return true
			}
			c, lso := l.producers.m.CompleteTxn(mk)
			if c.Aborted {
				if err := seg.AppendAbortedTxn(abortedTxnOf(c, lso)); err != nil {
					ferr = wrapIOErr("write the transaction index of "+seg.Path(segment.LogSuffix), err)
					return false
				}
			}
			return true
		})
		next := max(off, r.NextOffset())
		r.Close()
		if ferr != nil {
			return ferr
		}
		if walkErr != nil {
			l.logger.Warn("producer state not rebuilt past an unreadable batch", "offset", off, "err", walkErr)
			return nil
		}
		off = next
	}
	return nil
}

// maxControlBatchSize bounds the control batches the replay reads: a marker is one record of a
// 4-byte key and a 6-byte value, under 100 bytes.
const maxControlBatchSize = 64 << 10

// producerBatchOf describes a data batch with a producer id for the producer state.
func producerBatchOf(h *recordbatch.Header) producerstate.Batch {
	return producerstate.Batch{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, FirstSeq: h.BaseSequence,
		LastSeq: producerstate.LastSequence(h.BaseSequence, h.LastOffsetDelta), FirstOffset: h.BaseOffset,
		LastOffset: h.LastOffset(), MaxTimestamp: h.MaxTimestamp, Transactional: h.Attributes.Transactional()}
}

func abortedTxnOf(c producerstate.CompletedTxn, lso int64) txnindex.AbortedTxn {
	return txnindex.AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, LastStableOffset: lso}
}

// Control record types (Kafka's ControlRecordType): the key of a marker's one record.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// parseMarker reads the transaction marker of control batch b (header h): its record's key is
// Kafka's ControlRecordKey (version, type: 0 ABORT, 1 COMMIT), its value an EndTxnMarker
// (version, coordinator epoch), both decoded with franz-go's kmsg.
func parseMarker(b []byte, h *recordbatch.Header) (producerstate.Marker, error) {
	batch, err := recordbatch.Decode(b, recordbatch.Limits{MaxBatchSize: len(b), MaxDecompressedSize: 1 << 20})
	if err != nil {
		return producerstate.Marker{}, err
	}
	for r := range batch.Records() {
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(r.Key); err != nil {
			return producerstate.Marker{}, fmt.Errorf("%w: control record key: %w", ErrCorrupt, err)
		}
		if key.Type != kmsg.ControlRecordKeyType(controlAbort) && key.Type != kmsg.ControlRecordKeyType(controlCommit) {
			return producerstate.Marker{}, fmt.Errorf("%w: control record type %d is no transaction marker", ErrCorrupt, key.Type)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(r.Value); err != nil {
			return producerstate.Marker{}, fmt.Errorf("%w: end transaction marker: %w", ErrCorrupt, err)
		}
		return producerstate.Marker{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Commit: int16(key.Type) == controlCommit,
			CoordinatorEpoch: val.CoordinatorEpoch, Offset: h.BaseOffset, Timestamp: h.MaxTimestamp}, nil
	}
	return producerstate.Marker{}, fmt.Errorf("%w: control batch at %d has no record", ErrCorrupt, h.BaseOffset)
}

// encodeMarker returns the control batch of a transaction marker as Kafka's coordinator writes
// it (EndTransactionMarker, MemoryRecords.withEndTransactionMarker): attributes transactional and
// control, the producer's id and epoch, base sequence -1, one record at timestamp tsMs whose key
// is the ControlRecordKey and whose value the EndTxnMarker, encoded by franz-go's kmsg.
func encodeMarker(b *recordbatch.Builder, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, tsMs int64) ([]byte, error) {
	typ := controlAbort
	if commit {
		typ = controlCommit
	}
	key := (&kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}).AppendTo(nil)
	val := (&kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}).AppendTo(nil)
	b.Reset(recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
		ProducerID: producerID, ProducerEpoch: epoch, BaseSequence: -1})
	b.Add(tsMs, key, val, nil)
	return b.Finish()
}

// producerCheck is the outcome of checkProducers for one write.
type producerCheck struct {
	duplicate               bool
	firstOffset, lastOffset int64 // the original batches' offsets when duplicate
}

// checkProducers applies the leader's checks to the batches of w that carry a producer id, its
// offsets assigned (Kafka's analyzeAndValidateProducerState with origin CLIENT), changing
// nothing. When the batches repeat batches the log holds (a producer's retry), it reports them
// duplicate with the original offsets; a write mixing repeated and new batches is
// ErrOutOfOrderSequence. Callers hold appendMu.
func (l *Log) checkProducers(w *pendingWrite) (producerCheck, error) {
	var pc producerCheck
	dups, fresh := 0, 0
	var pending map[int64]producerstate.Batch // earlier batches of this write, by producer (several only)
	for _, b := range w.batches {
		h, err := recordbatch.ParseHeader(w.data[b.position:], 0)
		if err != nil {
			return pc, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if h.ProducerID < 0 {
			if h.Attributes.Transactional() {
				return pc, fmt.Errorf("%w: transactional batch at offset %d without a producer id", ErrInvalidRecord, h.BaseOffset)
			}
			fresh++
			continue
		}
		if h.Attributes.Control() {
			mk, err := parseMarker(w.data[b.position:b.position+int64(b.size)], &h)
			if err != nil {
				return pc, err
			}
			if err := l.producers.m.CheckMarker(mk); err != nil {
				return pc, err
			}
			fresh++
			continue
		}
		pb := producerBatchOf(&h)
		if orig, ok := l.producers.m.FindDuplicate(pb); ok {
			// A retry: answered with the original offsets, if the whole write is one.
			if dups == 0 {
				pc.firstOffset = orig.FirstOffset
			} else if orig.FirstOffset != pc.lastOffset+1 {
				return pc, fmt.Errorf("%w: producer %d resent batches that were not written together", ErrOutOfOrderSequence, pb.ProducerID)
			}
			pc.lastOffset = orig.LastOffset
			dups++
			continue
		}
		if prev, ok := pending[pb.ProducerID]; ok {
			// A second batch of one producer in one write: it must follow the first.
			if pb.Epoch != prev.Epoch || pb.FirstSeq != producerstate.LastSequence(prev.LastSeq, 1) {
				return pc, fmt.Errorf("%w: producer %d's batch at offset %d does not follow its batch before it in the same write", ErrOutOfOrderSequence, pb.ProducerID, h.BaseOffset)
			}
		} else if err := l.producers.m.Check(pb); err != nil {
			return pc, err
		}
		if len(w.batches) > 1 { // a write of one batch (every producer's append) needs no map
			if pending == nil {
				pending = map[int64]producerstate.Batch{}
			}
			pending[pb.ProducerID] = pb
		}
		fresh++
	}
	if dups > 0 {
		if fresh > 0 {
			return pc, fmt.Errorf("%w: a write repeats %d batches the log holds and adds %d others", ErrOutOfOrderSequence, dups, fresh)
		}
		pc.duplicate = true
	}
	return pc, nil
}

// applyProducers gives the producer state the batches of w, just written at pos of seg and not
// yet published: data batches update their producer, markers complete their transaction, and an
// ABORT marker's transaction goes to seg's .txnindex. When that .txnindex write fails it undoes
// what it did (the state's changes by the batches before the marker, and the entries it wrote)
// and returns the error; only a write holding a marker can fail so, so the undo is kept for
// such writes only, and a write of data batches (every producer's append) keeps none. Callers
// hold appendMu.
func (l *Log) applyProducers(seg *segment.Segment, w *pendingWrite) error {
	markers := false
	for _, b := range w.batches {
		if h, err := recordbatch.ParseHeader(w.data[b.position:], 0); err == nil && h.ProducerID >= 0 && h.Attributes.Control() {
			markers = true
			break
		}
	}
	var undos []func()
	indexed := false
	for _, b := range w.batches {
		h, err := recordbatch.ParseHeader(w.data[b.position:], 0)
		if err != nil || h.ProducerID < 0 {
			continue
		}
		if !h.Attributes.Control() {
			if markers {
				undos = append(undos, l.producers.m.Update(producerBatchOf(&h)))
			} else {
				l.producers.m.Apply(producerBatchOf(&h))
			}
			continue
		}
		mk, err := parseMarker(w.data[b.position:b.position+int64(b.size)], &h)
		if err != nil {
			l.logger.Warn("control batch not read; its transaction stays open", "offset", h.BaseOffset, "err", err)
			continue
		}
		c, lso, u := l.producers.m.CompleteTxnUndoable(mk)
		undos = append(undos, u)
		if c.Aborted {
			if err := seg.AppendAbortedTxn(abortedTxnOf(c, lso)); err != nil {
				for i := len(undos) - 1; i >= 0; i-- {
					undos[i]()
				}
				if indexed {
					seg.TruncateTxnIndex(w.firstOffset)
				}
				return wrapIOErr("write the transaction index of "+seg.Path(segment.LogSuffix), err)
			}
			indexed = true
		}
	}
	return nil
}

// LastStableOffset returns the log's last stable offset (Kafka's LSO): the first offset of the
// oldest transaction not yet committed or aborted, or of one whose marker is at or past the high
// watermark, else the high watermark: for a log opened on its own the log end offset, or, in the
// folder of a replicated partition, the high watermark its checkpoint holds (see OpenLog). Records
// below it are decided; a ReadCommitted reader reads no further. A partition's is bounded by its
// live high watermark (Partition.LastStableOffset).
func (l *Log) LastStableOffset() int64 {
	hw := l.LogEndOffset()
	if lim := l.owner.retentionLimit(); lim >= 0 {
		hw = min(hw, lim)
	}
	return l.lastStableOffset(hw)
}

// lastStableOffset is the last stable offset below the high watermark hw (Kafka's
// UnifiedLog.lastStableOffset: the first unstable offset, or hw). hw must be the partition's
// high watermark: the state forgets the completed transactions whose marker is below it (Kafka's
// onHighWatermarkUpdated).
func (l *Log) lastStableOffset(hw int64) int64 {
	if fuo := l.producers.m.FirstUnstableOffset(hw); fuo >= 0 && fuo < hw {
		return fuo
	}
	return hw
}

// abortedTxns appends to dst the aborted transactions that may hold batches in [from, upTo):
// those whose marker is at or past from and whose first offset is below upTo, from the .txnindex
// of the segment holding from and of the later ones, until one records a last stable offset at
// or past upTo (Kafka's UnifiedLog.collectAbortedTransactions, TxnIndexSearchResult.isComplete).
func (l *Log) abortedTxns(dst []txnindex.AbortedTxn, from, upTo int64) ([]txnindex.AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := l.segments.find(from); i < len(l.segments); i++ {
		n := len(dst)
		var err error
		dst, err = l.segments[i].CollectAbortedTxns(dst, from, upTo)
		if err != nil {
			return dst, err
		}
		for _, a := range dst[n:] {
			if a.LastStableOffset >= upTo {
				return dst, nil
			}
		}
	}
	return dst, nil
}

// expireProducers forgets the producers silent for longer than producer.id.expiration.ms at now
// (Kafka's removeExpiredProducers, run with the retention check here).
func (l *Log) expireProducers(now time.Time) {
	if n := l.producers.m.Expire(now.UnixMilli(), l.producers.expiration.Milliseconds()); n > 0 {
		l.logger.Debug("producer ids expired", "count", n)
	}
}
