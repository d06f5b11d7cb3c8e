package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// logLoader opens and recovers the segments of a log's folder when the log opens: Kafka's
// LogLoader, which UnifiedLog runs before the log exists and whose LoadedLogOffsets (log start
// offset, recovery point, log end) the log is then built from. It holds no Log: it reads the
// folder and the state file, opens the segments, cuts a torn tail, finishes deletions a crash
// interrupted, rewrites what a failed sync may have left in the page cache only, and returns
// what it recovered (loadedLog) for openLog to install. It runs before the log is shared: its
// callers hold none of the Log's locks, and it takes none of them (the state file takes its own).
type logLoader struct {
	fs     fsys.FS
	dir    string
	logger *slog.Logger
	sync   syncPolicy
	segCfg *segment.Config // the Log's, which the segments keep
	caches segment.Caches
	state  *stateFile // the Log's
	// folderSyncedLater leaves out the folder fsync after the first segment of an empty folder
	// is created: the caller fsyncs the folder before it relies on it (options.newFolderSyncedLater).
	folderSyncedLater bool

	// entries is the folder's listing as listSegments read it: the producer state's load finds
	// its snapshots in it rather than listing the folder again (the loader deletes no snapshot).
	entries []fs.DirEntry

	// loadedLog is what load has recovered so far: the segments it opened (closed by run if
	// recovery fails), then the log start offset and recovery point.
	loadedLog
}

// loadedLog is a recovered log as the loader returns it, for openLog to install in the Log:
// Kafka's LoadedLogOffsets with the segments (Kafka's LogSegments) they describe.
type loadedLog struct {
	segments       segmentList   // ordered by base offset; the last is the active segment
	entries        []fs.DirEntry // the folder's listing at load (logLoader.entries)
	logStartOffset int64
	recoveryPoint  int64 // the recovered log end offset, as load checkpoints it
}

// run recovers the folder (load, then rewriteAfterFailedSync from rewriteFrom) and returns the
// recovered log. On an error it closes every segment it opened and returns none. Called once, by
// openLog.
func (ld *logLoader) run(rewriteFrom int64) (loadedLog, error) {
	err := ld.load()
	if err == nil {
		err = ld.rewriteAfterFailedSync(rewriteFrom)
	}
	if err != nil {
		for _, s := range ld.segments {
			s.Close()
		}
		return loadedLog{}, err
	}
	ld.loadedLog.entries = ld.entries
	return ld.loadedLog, nil
}

// active returns the last segment opened so far, the active segment once load has returned.
func (ld *logLoader) active() *segment.Segment { return ld.segments[len(ld.segments)-1] }

// load opens the segments found in the directory and recovers them. Called once, by run.
func (ld *logLoader) load() error {
	st, haveState := ld.state.read()
	bases, retiring, err := ld.listSegments()
	if err != nil {
		return err
	}

	// Which segments may hold bytes that were never known to be flushed: after a clean close
	// none; after a crash every segment that can hold offsets at or past the recovery point;
	// without state (a folder from a Kafka broker, or damaged state) the last one only, trusting
	// the broker's flushed sealed segments as Kafka trusts its own recovery checkpoint.
	unclean := !haveState || !st.clean
	scanFrom := int64(1<<63 - 1)
	switch {
	case haveState && !st.clean:
		scanFrom = st.recoveryPoint
	case !haveState && len(bases) > 0:
		scanFrom = bases[len(bases)-1]
	}

	// The recovery rule. Truncation at open is allowed only for a torn tail in the unflushed
	// region: after an unclean shutdown, a bad batch whose first offset (the previous valid
	// batch's last offset + 1) is at or past the recovery point, in the active segment, or in a
	// sealed segment of a log that flushes its rolled segments in the background (see below).
	// After a clean shutdown nothing is cut (Kafka runs no recovery then: LogLoader finds the
	// log end from batch headers, LogSegment.readNextOffset), and below the recovery point
	// nothing is cut either: those bytes were fsynced. Everything else that is bad stays in
	// place byte for byte, is logged, reads as ErrCorrupt and is listed by verify.
	var keptActive *segment.Segment // an active segment whose framing broke below the recovery point
	var keptActiveNext int64
	for i, base := range bases {
		last := i == len(bases)-1
		s, err := segment.Open(ld.fs, ld.dir, base, ld.segCfg, ld.caches, !last)
		if err != nil {
			return err
		}
		ld.segments = append(ld.segments, s)
		fileSize := s.Size()
		// After a crash the active segment is always rescanned whole: its preallocated indexes
		// hold entries only up to the crash, followed by zeros, which is no corruption.
		full := unclean && (last || bases[i+1] > scanFrom)
		// Past the recovery point, a sealed segment of a log that flushes rolled segments in
		// the background (see log_flush.go) may have reached the disk only in part before a
		// power loss: a bad batch there is a torn write, not corruption. Under SyncAlways a roll
		// flushes the old segment before the next one exists, so a bad batch in a sealed
		// segment is corruption whatever the state says.
		tearable := full && (last || (haveState && !ld.sync.rollSyncs()))
		cutFrom := segment.NoCut
		if tearable {
			cutFrom = scanFrom
		}
		rep, err := s.Load(full, cutFrom)
		if err != nil {
			return fmt.Errorf("commitlog: load %s: %w", s.Path(segment.LogSuffix), err)
		}
		if rep.Rebuilt != nil {
			ld.logger.Warn("index rebuilt from the log", "segment", s.Path(segment.LogSuffix), "reason", rep.Rebuilt)
		}
		if rep.TxnIndexReset != nil {
			ld.logger.Warn("corrupt transaction index emptied; its aborted transactions must be rebuilt from the log",
				"segment", s.Path(segment.LogSuffix), "reason", rep.TxnIndexReset)
		}
		for _, c := range rep.Corrupt {
			ld.logger.Error("corrupt batch left in place; reads of it return ErrCorrupt",
				"segment", s.Path(segment.LogSuffix), "position", c.Pos, "offset", c.BaseOffset, "err", c.Cause)
		}
		if !last && len(rep.Corrupt) > 0 {
			// The timestamps of a corrupt batch are unknown: OffsetForTime must not skip the
			// segment because of a largest timestamp taken from the others (time retention
			// still goes by those). Its offsets run up to the next segment's base: a corrupt
			// batch's header may claim any of them.
			s.MarkTimesUnknown(bases[i+1])
		}
		if !last && tearable && rep.BadPos < 0 && s.Size() == 0 && s.BaseOffset() >= scanFrom {
			// An empty sealed segment past the recovery point is a torn write too: a roll
			// replaces an empty segment rather than seal it, so its bytes never reached the disk.
			rep.BadPos, rep.BadOffset, rep.Cut, rep.Cause = 0, s.BaseOffset(), true, errors.New("empty sealed segment")
		}
		if rep.BadPos < 0 {
			continue
		}
		if rep.Cut {
			if !last {
				// The log ends there, as Kafka's recovery ends it, and the later segments,
				// written after the tear, go. A segment that lost whole batches at its end reads
				// as one that ends short of the next, as a follower's does before a gap in its
				// leader's offsets: it is kept.
				if err := ld.cutAtTear(s, rep, fileSize, bases[i+1:]); err != nil {
					return fmt.Errorf("commitlog: recover %s: %w", s.Path(segment.LogSuffix), err)
				}
				break
			}
			ld.logger.Warn("truncating a torn tail written after the recovery point of an unclean shutdown",
				"segment", s.Path(segment.LogSuffix), "bytes", fileSize-rep.BadPos, "offset", rep.BadOffset,
				"position", rep.BadPos, "recovery_point", scanFrom, "err", rep.Cause)
			if err := s.DiscardFrom(rep.BadPos); err != nil {
				return fmt.Errorf("commitlog: truncate %s: %w", s.Path(segment.LogSuffix), err)
			}
			if err := s.Sync(); err != nil {
				return fmt.Errorf("commitlog: sync %s: %w", s.Path(segment.LogSuffix), err)
			}
			continue
		}
		// Broken framing where nothing may be cut: the rest of the segment cannot be read, and
		// every byte of it stays. Reads from the bad batch on return ErrCorrupt; the batches
		// before it stay readable.
		ld.logger.Error("unreadable batch left in place; the rest of the segment reads as ErrCorrupt",
			"segment", s.Path(segment.LogSuffix), "position", rep.BadPos, "offset", rep.BadOffset,
			"bytes", fileSize-rep.BadPos, "err", rep.Cause)
		s.SetSize(fileSize)
		if !last {
			s.MarkTimesUnknown(bases[i+1])
			continue
		}
		// The active segment: appends after its kept bytes would be unreachable behind them, and
		// a later recovery could take them for a torn tail. It is sealed and the log goes on in a
		// new active segment. Its base offset must not reuse an offset the kept bytes may hold
		// below the recovery point, those bytes having been flushed and acknowledged: so it is
		// past the last offset read from the segment (valid batches, and corrupt ones' headers)
		// and at least the recovery point when that lies in this segment (after a clean shutdown
		// the recovery point is the log end offset at Close, so the log resumes exactly where it
		// ended). Offsets past the recovery point in bytes that cannot be parsed are unknowable;
		// a segment's base offset is always above the segment's own.
		next := max(s.NextOffset(), s.BaseOffset()+1)
		if haveState && st.recoveryPoint >= s.BaseOffset() {
			next = max(next, st.recoveryPoint)
		}
		keptActive, keptActiveNext = s, next
	}

	if keptActive != nil {
		if err := keptActive.Seal(); err != nil {
			return fmt.Errorf("commitlog: seal %s: %w", keptActive.Path(segment.LogSuffix), err)
		}
		// The timestamps of the unreadable bytes are unknown (see the sealed case above).
		keptActive.MarkTimesUnknown(keptActiveNext)
		s, err := segment.Create(ld.fs, ld.dir, keptActiveNext, ld.segCfg, ld.caches, false)
		if err != nil {
			return err
		}
		ld.segments = append(ld.segments, s)
		if err := ld.fs.SyncDir(ld.dir); err != nil {
			return err
		}
		ld.logger.Warn("log continues in a new segment after the unreadable one",
			"segment", s.Path(segment.LogSuffix), "base_offset", keptActiveNext)
	}
	if len(ld.segments) == 0 {
		// An empty log, or one whose every segment was deleted by retention: numbering resumes
		// at the checkpointed log start offset, never at 0 again.
		s, err := segment.Create(ld.fs, ld.dir, st.logStartOffset, ld.segCfg, ld.caches, false)
		if err != nil {
			return err
		}
		ld.segments = append(ld.segments, s)
		if !ld.folderSyncedLater {
			if err := ld.fs.SyncDir(ld.dir); err != nil {
				return err
			}
		}
	}
	for i := 1; i < len(ld.segments); i++ {
		if prev := ld.segments[i-1]; prev.NextOffset() > ld.segments[i].BaseOffset() {
			return fmt.Errorf("%w: segment %s ends at offset %d, past the next segment's base offset %d",
				ErrCorrupt, prev.Path(segment.LogSuffix), prev.NextOffset()-1, ld.segments[i].BaseOffset())
		}
	}
	// Segments wholly below the checkpointed log start offset are what retention was deleting
	// when the process stopped (it checkpoints the start offset first): finish the deletion.
	for len(ld.segments) > 1 && ld.segments[1].BaseOffset() <= st.logStartOffset {
		s := ld.segments[0]
		ld.logger.Info("removing segment below the log start offset", "segment", s.Path(segment.LogSuffix), "log_start_offset", st.logStartOffset)
		if err := s.Remove(); err != nil {
			return err
		}
		ld.segments = ld.segments[1:]
	}
	if haveState && !retiring && ld.active().NextOffset() < st.recoveryPoint {
		// Every offset below the recovery point was flushed, and the cuts above never go below
		// it: the file that held them is gone. Said before the checkpoint below replaces the
		// recovery point, the evidence. Not while segments renamed *.deleted were there: a
		// truncation or retention stopped before its checkpoint leaves the same picture. A
		// TruncateTo within the active segment that stopped between its cut and its
		// checkpoint does too, without a trace: the message names it.
		ld.logger.Error("the log ends below its recovery point: flushed offsets are in no segment (a segment file is missing, or a TruncateTo stopped before its checkpoint)",
			"dir", ld.dir, "log_end_offset", ld.active().NextOffset(), "recovery_point", st.recoveryPoint)
	}
	ld.logStartOffset = max(st.logStartOffset, ld.segments[0].BaseOffset())
	ld.recoveryPoint = ld.active().NextOffset()
	// From here on a crash must not pass for a clean shutdown.
	return ld.state.note(logState{logStartOffset: ld.logStartOffset, recoveryPoint: ld.recoveryPoint})
}

// cutAtTear ends the log at a torn batch found at rep.BadPos in s, a sealed segment, whose first
// offset is at or past the recovery point: s is cut there and becomes the active segment, and the
// files of the segments after it (base offsets later, not opened) are deleted.
func (ld *logLoader) cutAtTear(s *segment.Segment, rep segment.LoadReport, fileSize int64, later []int64) error {
	ld.logger.Warn("torn batch in a segment written after the recovery point of an unclean shutdown; the log ends there",
		"segment", s.Path(segment.LogSuffix), "bytes", fileSize-rep.BadPos, "offset", rep.BadOffset, "position", rep.BadPos,
		"segments_deleted", later, "err", rep.Cause)
	if err := s.Truncate(rep.BadPos); err != nil {
		return err
	}
	for _, base := range later {
		for _, suf := range segmentSuffixes {
			name := filepath.Join(ld.dir, segment.Name(base)+suf)
			if err := ld.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return ld.fs.SyncDir(ld.dir)
}

// listSegments returns the base offsets of the .log files in the directory, in order, after
// deleting the temporary files a crash left of the state files ("commitlog-*.tmp",
// checkpoint.CleanTempIn) and index files that have no .log (Kafka deletes such orphans too), and
// whether segment files renamed *.deleted were there (deleted too).
func (ld *logLoader) listSegments() (bases []int64, retiring bool, err error) {
	entries, err := ld.fs.ReadDir(ld.dir)
	if err != nil {
		return nil, false, fmt.Errorf("commitlog: list %s: %w", ld.dir, err)
	}
	if err := checkpoint.CleanTempIn(ld.fs, ld.dir, "commitlog-", entries); err != nil {
		return nil, false, err
	}
	if swapped, err := ld.finishSwaps(entries); err != nil {
		return nil, false, err
	} else if swapped {
		if entries, err = ld.fs.ReadDir(ld.dir); err != nil {
			return nil, false, fmt.Errorf("commitlog: list %s: %w", ld.dir, err)
		}
	}
	ld.entries = entries
	logs := map[int64]bool{}
	for _, e := range entries {
		if base, ok := segment.ParseName(e.Name(), segment.LogSuffix); ok && !e.IsDir() {
			logs[base] = true
			bases = append(bases, base)
		}
	}
	for _, e := range entries {
		if isSpareName(e.Name()) && !e.IsDir() {
			// Made ahead for a roll that never came (log_spare.go).
			if err := ld.fs.Remove(filepath.Join(ld.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, false, err
			}
			continue
		}
		// Files of segments deleted before the process stopped: their delete delay is over.
		if stem, ok := strings.CutSuffix(e.Name(), segment.DeletedSuffix); ok && !e.IsDir() {
			stem = trimRetirementNumber(stem)
			for _, suf := range segmentSuffixes {
				if _, ok := segment.ParseName(stem, suf); ok {
					retiring = true
					if err := ld.fs.Remove(filepath.Join(ld.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
						return nil, false, err
					}
				}
			}
			continue
		}
		for _, suf := range segmentSuffixes[1:] {
			if base, ok := segment.ParseName(e.Name(), suf); ok && !logs[base] {
				p := filepath.Join(ld.dir, e.Name())
				ld.logger.Warn("removing index without a log file", "file", p)
				if err := ld.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, false, err
				}
			}
		}
	}
	slices.Sort(bases)
	return bases, retiring, nil
}

// finishSwaps finishes or undoes what a compaction's swap (see log_compact.go) left, as Kafka's
// LogLoader does (removeTempFilesAndCollectSwapFiles, then the swap's completion): files of a
// cleaned segment ("*.cleaned") were never committed and are deleted; a "<base>.log.swap" is a
// cleaned segment complete and durable, which replaces the segments whose base offsets lie in
// [base, its next offset): those are deleted (their .txnindex files too: the cleaned segment's
// holds their entries) and the swap's files renamed into place (an index missing under the swap's
// name is rebuilt by the load that follows; a missing "*.txnindex.swap" is a segment without
// aborted transactions); an index "*.swap" (.index, .timeindex, .txnindex) without its .log is
// deleted. It reports whether it changed the directory.
func (ld *logLoader) finishSwaps(entries []fs.DirEntry) (changed bool, err error) {
	kinds := segmentSuffixes[:]
	regular := map[int64]bool{}
	swaps := map[int64]bool{}
	var remove []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		if base, ok := segment.ParseName(name, segment.LogSuffix); ok {
			regular[base] = true
		}
		for _, kind := range kinds {
			if _, ok := segment.ParseName(name, kind+segment.CleanedSuffix); ok {
				remove = append(remove, name)
			}
			if base, ok := segment.ParseName(name, kind+segment.SwapSuffix); ok && kind == segment.LogSuffix {
				swaps[base] = true
			}
		}
	}
	for _, e := range entries {
		for _, kind := range kinds[1:] {
			if base, ok := segment.ParseName(e.Name(), kind+segment.SwapSuffix); ok && !swaps[base] {
				remove = append(remove, e.Name())
			}
		}
	}
	for _, name := range remove {
		ld.logger.Info("removing file of an unfinished compaction", "file", filepath.Join(ld.dir, name))
		if err := ld.fs.Remove(filepath.Join(ld.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
	}
	changed = len(remove) > 0
	for _, base := range slices.Sorted(maps.Keys(swaps)) {
		s, err := segment.OpenSwap(ld.fs, ld.dir, base, ld.segCfg, segment.Caches{})
		if err != nil {
			return changed, fmt.Errorf("commitlog: open %s: %w", segPathOf(ld.dir, base, segment.LogSuffix+segment.SwapSuffix), err)
		}
		rep, err := s.Load(true, segment.NoCut)
		if err != nil {
			return changed, errors.Join(fmt.Errorf("commitlog: load %s: %w", s.Path(segment.LogSuffix), err), s.Close())
		}
		if rep.TxnIndexReset != nil {
			ld.logger.Warn("corrupt transaction index emptied; its aborted transactions must be rebuilt from the log",
				"segment", s.Path(segment.LogSuffix), "reason", rep.TxnIndexReset)
		}
		next := max(s.NextOffset(), base+1) // an empty swap still replaces the segment at its base
		var replaced []int64
		for old := range regular {
			if old >= base && old < next {
				replaced = append(replaced, old)
			}
		}
		slices.Sort(replaced)
		for _, old := range replaced {
			for _, kind := range kinds {
				if err := ld.fs.Remove(segPathOf(ld.dir, old, kind)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return true, errors.Join(err, s.Close())
				}
			}
			delete(regular, old)
		}
		err = s.SetSuffix("")
		err = errors.Join(err, s.Close())
		if err != nil {
			return true, fmt.Errorf("commitlog: complete the swap of %s: %w", segPathOf(ld.dir, base, segment.LogSuffix), err)
		}
		regular[base] = true
		changed = true
		ld.logger.Info("completed interrupted compaction swap", "base_offset", base, "next_offset", s.NextOffset(), "replaced", replaced)
	}
	if changed {
		return true, ld.fs.SyncDir(ld.dir)
	}
	return false, nil
}

// segmentSuffixes are the kinds of a segment's files, .log first: the loader deletes, renames and
// finishes the swaps of all of them alike (the .txnindex exists only for a segment with an
// aborted transaction; a missing one is never an error).
var segmentSuffixes = [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix}

// segPathOf is the path of the segment file at base of dir with suffix.
func segPathOf(dir string, base int64, suffix string) string {
	return filepath.Join(dir, segment.Name(base)+suffix)
}
