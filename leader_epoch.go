package commitlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// leaderEpochFileName is the file, in the partition folder, that lists the first offset each
// leader epoch wrote: Kafka's leader-epoch-checkpoint, in Kafka's text format, so that a folder
// moves between this library and a broker with its epochs intact:
//
//	0                 version
//	2                 number of entries
//	0 0               epoch, start offset
//	3 150
const leaderEpochFileName = "leader-epoch-checkpoint"

// UndefinedEpoch is the leader epoch of a batch written by no leader (a producer's batch before a
// leader stamps it) and the answer to an epoch question that has none: Kafka's -1.
const UndefinedEpoch int32 = -1

// epochEntry says that the leader of epoch wrote its first batch at startOffset.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// epochCache is the content of Kafka's LeaderEpochFileCache: the epochs in increasing order, each
// with the offset where it started, start offsets increasing too. A follower compares it with its
// leader's to find where their logs diverge. leaderEpochFile adds the file.
type epochCache struct {
	entries []epochEntry
}

// latest returns the newest entry, ok false when there is none.
func (c *epochCache) latest() (e epochEntry, ok bool) {
	if len(c.entries) == 0 {
		return epochEntry{epoch: UndefinedEpoch, startOffset: -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at offset and reports whether that changed the cache. Only an
// epoch newer than the latest is recorded (a leader's later batches in the same epoch change
// nothing); entries starting at or after offset are dropped first, as Kafka does, since their
// offsets are being rewritten. A batch of an older epoch at offset drops the newer entries that
// start at or after offset (epochs begun at the log end without a batch: a replica that led
// without writing and then follows a leader whose older epoch runs on), so that the cache says
// what the batches do, as Kafka's LeaderEpochFileCache drops the entries a new one makes
// non-monotonic; newer entries below offset stay, and the batch is not recorded.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if e, ok := c.latest(); ok && epoch <= e.epoch {
		if e.startOffset < offset {
			return false
		}
		n := len(c.entries)
		for n > 0 && c.entries[n-1].startOffset >= offset && c.entries[n-1].epoch > epoch {
			n--
		}
		if n == len(c.entries) {
			return false
		}
		c.entries = c.entries[:n]
		if e, ok := c.latest(); ok && e.epoch >= epoch {
			return true
		}
		c.entries = append(c.entries, epochEntry{epoch: epoch, startOffset: offset})
		return true
	}
	c.truncateFromEnd(offset)
	c.entries = append(c.entries, epochEntry{epoch: epoch, startOffset: offset})
	return true
}

// endOffsetFor answers Kafka's OffsetsForLeaderEpoch for epoch on a log ending at leo: the
// largest epoch at most epoch that the cache knows, and the offset where the epoch after it
// starts (leo for the latest epoch). (UndefinedEpoch, -1) when epoch is newer than any known or
// undefined.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	if epoch == UndefinedEpoch {
		return UndefinedEpoch, -1
	}
	if e, ok := c.latest(); ok && e.epoch == epoch {
		return epoch, leo
	}
	hi := -1 // first entry with a higher epoch
	for i, e := range c.entries {
		if e.epoch > epoch {
			hi = i
			break
		}
	}
	if hi < 0 {
		return UndefinedEpoch, -1
	}
	if hi == 0 {
		return epoch, c.entries[0].startOffset
	}
	return c.entries[hi-1].epoch, c.entries[hi].startOffset
}

// truncateFromEnd removes the entries that start at or after offset: the log was cut there.
func (c *epochCache) truncateFromEnd(offset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].startOffset >= offset {
		n--
	}
	changed := n < len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart forgets what lies below offset, the new log start offset: entries wholly
// below it go, and the one that holds offset now starts there.
func (c *epochCache) truncateFromStart(offset int64) bool {
	keep := 0 // index of the last entry starting at or below offset
	for i, e := range c.entries {
		if e.startOffset <= offset {
			keep = i
		}
	}
	if len(c.entries) == 0 || c.entries[keep].startOffset > offset {
		return false
	}
	changed := keep > 0 || c.entries[keep].startOffset != offset
	c.entries = append(c.entries[:0], c.entries[keep:]...)
	c.entries[0].startOffset = offset
	return changed
}

// encode writes the cache in Kafka's leader-epoch-checkpoint format.
func (c *epochCache) encode() []byte {
	b := fmt.Appendf(nil, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		b = fmt.Appendf(b, "%d %d\n", e.epoch, e.startOffset)
	}
	return b
}

// maxEpochEntries bounds the entries a leader-epoch-checkpoint may declare: one per leader
// change, so far more than any partition sees; a larger count is corruption, refused before
// anything is allocated for it.
const maxEpochEntries = 1 << 20

// decodeEpochCache parses Kafka's leader-epoch-checkpoint format. Epochs and start offsets must
// both increase; anything else is ErrCorrupt.
func decodeEpochCache(b []byte) (epochCache, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > maxEpochEntries+2 {
			return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint over %d lines", ErrCorrupt, maxEpochEntries+2)
		}
	}
	if err := sc.Err(); err != nil {
		return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint: %w", ErrCorrupt, err)
	}
	if len(lines) < 2 || lines[0] != "0" {
		return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint: version line %q, want 0", ErrCorrupt, first(lines))
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint: count %q for %d entries", ErrCorrupt, lines[1], len(lines)-2)
	}
	c := epochCache{entries: make([]epochEntry, 0, n)}
	for i, l := range lines[2:] {
		e, ok := parseEpochEntry(l)
		if !ok {
			return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint entry %d: %q", ErrCorrupt, i, l)
		}
		if p, ok := c.latest(); ok && (e.epoch <= p.epoch || e.startOffset < p.startOffset) {
			return epochCache{}, fmt.Errorf("%w: leader-epoch-checkpoint entry %d (%d %d) does not follow (%d %d)",
				ErrCorrupt, i, e.epoch, e.startOffset, p.epoch, p.startOffset)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

// parseEpochEntry parses one "epoch startOffset" line: exactly two decimal numbers, neither
// negative, separated by one space, as Kafka writes them (fmt.Sscanf would take "1 2x" or
// "1 2 3" for (1, 2)).
func parseEpochEntry(l string) (epochEntry, bool) {
	a, b, ok := strings.Cut(l, " ")
	if !ok {
		return epochEntry{}, false
	}
	epoch, err1 := strconv.ParseInt(a, 10, 32)
	start, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
		return epochEntry{}, false
	}
	return epochEntry{epoch: int32(epoch), startOffset: start}, true
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// load reads the partition's leader-epoch-checkpoint and brings it in line with the
// recovered log: entries past the log end offset (their batches did not survive) go, one
// starting at it stays (an epoch begun before its first append), the
// first entry starts no lower than the log start offset, and, after a crash, epochs of batches
// written since the recovery point (from scanFrom on) that the file missed are added from their
// headers. A missing file is an empty cache (a log that no leader stamped); an unreadable one is
// logged and rebuilt from every batch's header, as Kafka rebuilds it. With newEpoch (a log no
// replication drives, opened after an unclean shutdown) a new local epoch starts at the log end
// offset, above every epoch the file held; see leaderEpochFile.startAbove (openLog then stamps
// the latest epoch on the log's appends). The recovered log starts at start and ends at leo;
// readRange is its ReadRange, through which the headers are read. Called once, by openLog, once
// the loader's segments are installed and before the log is shared: its caller holds none of the
// Log's locks, which ReadRange takes itself.
func (f *leaderEpochFile) load(scanFrom, start, leo int64, newEpoch bool, readRange func(offset int64, maxBytes int) (*BatchRange, error)) error {
	rebuild, err := f.read()
	if err != nil {
		return err
	}
	if rebuild {
		scanFrom = 0
	}
	top, _ := f.latest() // before the cut: the highest epoch the last run recorded
	// An entry starting exactly at the log end offset is an epoch begun with nothing appended
	// yet (a leader's, or the local epoch a truncation started): it stays, or the next appends
	// would be stamped with the epoch before it, and a reader positioned past the cut in that
	// older epoch would find no divergence once the log is refilled. Entries past the log end
	// offset lost their batches.
	changed := f.trim(start, leo+1)
	// Headers only: recovery has just checked these batches, and a whole segment written since
	// the last flush (up to segment.bytes) is read again only for its 61-byte headers.
	for off := max(scanFrom, start); off < leo; {
		r, err := readRange(off, math.MaxInt32)
		if err != nil {
			// A corrupt batch in a sealed segment stays in place (see load): its epoch is lost,
			// as Kafka loses it; the batches after it still count.
			f.logger.Warn("leader epochs not rebuilt past an unreadable batch", "offset", off, "err", err)
			break
		}
		if r.Len() == 0 {
			r.Close()
			break
		}
		// The range holds whole batches: the walk ends at its end.
		_ = r.s.WalkHeaders(r.pos, r.pos+r.size, off, func(_ int64, h *recordbatch.Header) bool {
			if h.LastOffset() >= off {
				changed = f.assign(h.PartitionLeaderEpoch, h.BaseOffset) || changed
			}
			return true
		})
		off = max(off, r.NextOffset())
		r.Close()
	}
	if newEpoch {
		if e, _ := f.latest(); e.epoch > top.epoch {
			top = e
		}
		_, started := f.startAbove(top.epoch, leo) // the new epoch is the latest: openLog stamps it
		changed = started || changed
	}
	if changed {
		return f.write()
	}
	return nil
}

// readWholeFile returns the contents of a small file, refusing one larger than limit bytes
// before reading it.
func readWholeFile(fsy fsys.FS, name string, limit int64) ([]byte, error) {
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrCorrupt, name, size, limit)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// latestEpoch returns the newest leader epoch the log holds batches or a start of, or
// UndefinedEpoch.
func (l *Log) latestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, _ := l.epochs.latest()
	return e.epoch
}

// endOffsetForEpoch answers Kafka's OffsetsForLeaderEpoch from this log: see
// epochCache.endOffsetFor.
func (l *Log) endOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.active().NextOffset())
}

// startLeaderEpoch makes epoch the one stamped on every batch the log assigns offsets to from now
// on, and records (durably, before it returns) that epoch starts at the log end offset, as a
// Kafka broker does when it becomes leader: a follower asking for the end of the previous epoch
// then gets this offset even before the new leader appends anything. An epoch not newer than the
// latest only sets the stamp.
func (l *Log) startLeaderEpoch(epoch int32) error {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.Lock()
	l.leaderEpoch = epoch
	changed := false
	if e, ok := l.epochs.latest(); !ok || epoch > e.epoch {
		changed = l.epochs.assign(epoch, l.active().NextOffset())
	}
	l.mu.Unlock()
	if changed {
		if err := l.epochs.write(); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// trimEpochs brings the epoch cache in line with a log cut at end or started at start, and
// checkpoints it when that changed anything. Callers hold appendMu.
func (l *Log) trimEpochs(start, end int64) error {
	return l.trimEpochsAfterCut(start, end, false)
}

// trimEpochsAfterCut is trimEpochs for a log cut at end by a truncation; with newEpoch it also
// starts a new local leader epoch at end (see leaderEpochFile.startAbove). Callers hold appendMu.
func (l *Log) trimEpochsAfterCut(start, end int64, newEpoch bool) error {
	l.mu.Lock()
	latest, _ := l.epochs.latest()
	top := max(latest.epoch, l.leaderEpoch) // the highest epoch the log stamped or holds a start of
	changed := l.epochs.trim(start, end)
	if newEpoch {
		// A new local epoch above top at end, the log end offset, stamped on the batches
		// appended from now on (see leaderEpochFile.startAbove).
		next, started := l.epochs.startAbove(top, end)
		if next != UndefinedEpoch {
			l.leaderEpoch = next
		}
		changed = started || changed
	}
	l.mu.Unlock()
	if !changed {
		return nil
	}
	return l.epochs.write()
}

// epochOf returns the leader epoch of the batch holding offset, by the epoch cache:
// UndefinedEpoch when offset is outside [log start offset, log end offset) or the cache knows
// no epoch starting at or below it.
func (l *Log) epochOf(offset int64) int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if offset < l.logStartOffset || offset >= l.active().NextOffset() {
		return UndefinedEpoch
	}
	return l.epochs.epochAt(offset)
}

// leaderEpochFile is a log's leader epochs and their leader-epoch-checkpoint file: Kafka's
// LeaderEpochFileCache, the cache (epochCache) with the file it is checkpointed to. The log
// changes it under appendMu and mu together, so either guards a read, and writes the file under
// appendMu.
type leaderEpochFile struct {
	epochCache
	fs     fsys.FS
	path   string
	logger *slog.Logger
	// deferSync makes write leave the new checkpoint unsynced under its temporary name, pending
	// set, for Store.Open to sync with every other log's in one file-system sync and then rename
	// into place (finishPending): see openSyncedLater in options.go.
	deferSync bool
	pending   bool
	// noTemp says that the folder's listing at open held no temporary checkpoint: read has none
	// to remove.
	noTemp bool
}

// read loads the cache from the file, and removes a temporary file a crash left. A missing file
// is an empty cache (a log that no leader stamped); an unreadable one is logged, and rebuild says
// that the caller must rebuild the cache from every batch's header, as Kafka rebuilds it.
func (f *leaderEpochFile) read() (rebuild bool, err error) {
	b, err := readWholeFile(f.fs, f.path, 16<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("commitlog: read %s: %w", f.path, err)
	default:
		c, derr := decodeEpochCache(b)
		if derr != nil {
			f.logger.Warn("leader epoch checkpoint unreadable; rebuilding it from the batches", "file", f.path, "err", derr)
			rebuild = true
		} else {
			f.epochCache = c
		}
	}
	if !f.noTemp {
		f.fs.Remove(f.path + checkpoint.TempSuffix)
	}
	return rebuild, nil
}

// write checkpoints the cache atomically (temp file, fsync, rename, directory fsync). With
// deferSync set it only writes the temporary file, unsynced, and leaves it pending.
func (f *leaderEpochFile) write() error {
	if f.deferSync {
		if err := checkpoint.WriteRawTemp(f.fs, f.path, f.encode()); err != nil {
			return fmt.Errorf("commitlog: write %s: %w", f.path, err)
		}
		f.pending = true
		return nil
	}
	f.pending = false // the temporary file is written again and renamed below
	if err := checkpoint.WriteRaw(f.fs, f.path, f.encode()); err != nil {
		return fmt.Errorf("commitlog: write %s: %w", f.path, err)
	}
	return nil
}

// finishPending renames the checkpoint a deferred write left under its temporary name into place,
// once the caller has made that file durable (fsys.SyncFileSystem); the caller makes the rename
// durable in turn before it relies on it. A no-op when nothing is pending.
func (f *leaderEpochFile) finishPending() error {
	if !f.pending {
		return nil
	}
	if err := checkpoint.CommitTemp(f.fs, f.path); err != nil {
		return fmt.Errorf("commitlog: write %s: %w", f.path, err)
	}
	f.pending = false
	return nil
}

// trim drops the entries past a log end offset of end and moves the first to start no lower than
// a log start offset of start, and reports whether that changed anything.
func (f *leaderEpochFile) trim(start, end int64) bool {
	changed := f.truncateFromEnd(end)
	return f.truncateFromStart(start) || changed
}

// startAbove starts a new leader epoch, one above top (the highest the log ever had), at offset,
// the log end offset, and returns it, UndefinedEpoch when top is the largest epoch, with whether
// the cache changed.
//
// A log that no replication drives rewrites its history without a leader change: TruncateTo,
// and a restart after an unclean shutdown whose log may end below what readers saw (a power
// loss under SyncInterval or SyncNever keeps less than the page cache held). Kafka detects a
// rewritten history only through leader epochs (KIP-101 for followers, KIP-320 for consumers),
// and in Kafka every such rewrite comes with a new epoch: a partition's history changes only
// when a new leader is elected, and a broker that restarts as a partition's only replica is
// elected again, with a new epoch. So the log does what that election would do: a new epoch
// begins where the old history was cut. A reader whose position was taken in the old epoch
// past that point then finds the end offset of its epoch below its position (see
// Reader.validate), however many records of the new epoch have been appended since; without
// the new epoch a refilled log would look, by its epochs, exactly like the old one. The new
// epoch is above every epoch the log ever stamped, not only the surviving ones, so that a reader
// that saw records of an epoch the cut removed cannot mistake the new epoch for it.
func (f *leaderEpochFile) startAbove(top int32, offset int64) (int32, bool) {
	if top == math.MaxInt32 {
		f.logger.Warn("leader epoch at its largest value; no new epoch started for the truncation", "offset", offset)
		return UndefinedEpoch, false
	}
	next := max(top, UndefinedEpoch) + 1
	changed := f.assign(next, offset)
	f.logger.Info("new leader epoch after the log was cut", "leader_epoch", next, "start_offset", offset)
	return next, changed
}

// epochAt returns the epoch of the last entry starting at or below offset, UndefinedEpoch when
// none does.
func (f *leaderEpochFile) epochAt(offset int64) int32 {
	epoch := UndefinedEpoch
	for _, e := range f.entries {
		if e.startOffset > offset {
			break
		}
		epoch = e.epoch
	}
	return epoch
}

// writeFirstEpoch records, with write (checkpoint.WriteRaw, or WriteRawSyncDirLater for a caller
// that syncs the folder itself), that the epoch the log stamps starts at its log end offset, when
// the log knows no epoch yet: what Kafka's LeaderEpochFileCache.assign writes when a new
// partition's replica becomes leader. The cache changes only once the file is written; an error
// (ErrNoSpace for a full disk) leaves the log as it was and writable, for a caller that discards
// the new log.
func (l *Log) writeFirstEpoch(write func(fsy fsys.FS, name string, data []byte) error) error {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	_, known := l.epochs.latest()
	next := epochCache{entries: []epochEntry{{epoch: max(l.leaderEpoch, 0), startOffset: l.active().NextOffset()}}}
	l.mu.RUnlock()
	if known {
		return nil
	}
	if err := write(l.fs, l.epochs.path, next.encode()); err != nil {
		return wrapIOErr("write "+l.epochs.path, err)
	}
	l.mu.Lock()
	l.epochs.entries = next.entries
	l.mu.Unlock()
	return nil
}
