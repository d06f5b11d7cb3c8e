package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// load opens the segments found in the directory and recovers them. Called once, by openLog.
func (l *Log) load() error {
	st, haveState := l.state.read()
	if err := checkpoint.CleanTemp(l.fs, l.dir, "commitlog-"); err != nil {
		return err
	}
	bases, retiring, err := l.listSegments()
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
		s, err := segment.Open(l.fs, l.dir, base, &l.segCfg, l.caches, !last)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
		fileSize := s.Size()
		// After a crash the active segment is always rescanned whole: its preallocated indexes
		// hold entries only up to the crash, followed by zeros, which is no corruption.
		full := unclean && (last || bases[i+1] > scanFrom)
		// Past the recovery point, a sealed segment of a log that flushes rolled segments in
		// the background (see log_flush.go) may have reached the disk only in part before a
		// power loss: a bad batch there is a torn write, not corruption. Under SyncAlways a roll
		// flushes the old segment before the next one exists, so a bad batch in a sealed
		// segment is corruption whatever the state says.
		tearable := full && (last || (haveState && !l.sync.rollSyncs()))
		cutFrom := segment.NoCut
		if tearable {
			cutFrom = scanFrom
		}
		rep, err := s.Load(full, cutFrom)
		if err != nil {
			return fmt.Errorf("commitlog: load %s: %w", s.Path(segment.LogSuffix), err)
		}
		if rep.Rebuilt != nil {
			l.logger.Warn("index rebuilt from the log", "segment", s.Path(segment.LogSuffix), "reason", rep.Rebuilt)
		}
		for _, c := range rep.Corrupt {
			l.logger.Error("corrupt batch left in place; reads of it return ErrCorrupt",
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
				if err := l.cutAtTear(s, rep, fileSize, bases[i+1:]); err != nil {
					return fmt.Errorf("commitlog: recover %s: %w", s.Path(segment.LogSuffix), err)
				}
				break
			}
			l.logger.Warn("truncating a torn tail written after the recovery point of an unclean shutdown",
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
		l.logger.Error("unreadable batch left in place; the rest of the segment reads as ErrCorrupt",
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
		s, err := segment.Create(l.fs, l.dir, keptActiveNext, &l.segCfg, l.caches, false)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		l.logger.Warn("log continues in a new segment after the unreadable one",
			"segment", s.Path(segment.LogSuffix), "base_offset", keptActiveNext)
	}
	if len(l.segments) == 0 {
		// An empty log, or one whose every segment was deleted by retention: numbering resumes
		// at the checkpointed log start offset, never at 0 again.
		s, err := segment.Create(l.fs, l.dir, st.logStartOffset, &l.segCfg, l.caches, false)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	for i := 1; i < len(l.segments); i++ {
		if prev := l.segments[i-1]; prev.NextOffset() > l.segments[i].BaseOffset() {
			return fmt.Errorf("%w: segment %s ends at offset %d, past the next segment's base offset %d",
				ErrCorrupt, prev.Path(segment.LogSuffix), prev.NextOffset()-1, l.segments[i].BaseOffset())
		}
	}
	// Segments wholly below the checkpointed log start offset are what retention was deleting
	// when the process stopped (it checkpoints the start offset first): finish the deletion.
	for len(l.segments) > 1 && l.segments[1].BaseOffset() <= st.logStartOffset {
		s := l.segments[0]
		l.logger.Info("removing segment below the log start offset", "segment", s.Path(segment.LogSuffix), "log_start_offset", st.logStartOffset)
		if err := s.Remove(); err != nil {
			return err
		}
		l.segments = l.segments[1:]
	}
	if haveState && !retiring && l.active().NextOffset() < st.recoveryPoint {
		// Every offset below the recovery point was flushed, and the cuts above never go below
		// it: the file that held them is gone. Said before the checkpoint below replaces the
		// recovery point, the evidence. Not while segments renamed *.deleted were there: a
		// truncation or retention stopped before its checkpoint leaves the same picture. A
		// TruncateTo within the active segment that stopped between its cut and its
		// checkpoint does too, without a trace: the message names it.
		l.logger.Error("the log ends below its recovery point: flushed offsets are in no segment (a segment file is missing, or a TruncateTo stopped before its checkpoint)",
			"dir", l.dir, "log_end_offset", l.active().NextOffset(), "recovery_point", st.recoveryPoint)
	}
	l.logStartOffset = max(st.logStartOffset, l.segments[0].BaseOffset())
	l.recoveryPoint = l.active().NextOffset()
	l.flushTarget = l.recoveryPoint
	// From here on a crash must not pass for a clean shutdown.
	return l.state.write(logState{logStartOffset: l.logStartOffset, recoveryPoint: l.recoveryPoint})
}

// cutAtTear ends the log at a torn batch found at rep.BadPos in s, a sealed segment, whose first
// offset is at or past the recovery point: s is cut there and becomes the active segment, and the
// files of the segments after it (base offsets later, not opened) are deleted.
func (l *Log) cutAtTear(s *segment.Segment, rep segment.LoadReport, fileSize int64, later []int64) error {
	l.logger.Warn("torn batch in a segment written after the recovery point of an unclean shutdown; the log ends there",
		"segment", s.Path(segment.LogSuffix), "bytes", fileSize-rep.BadPos, "offset", rep.BadOffset, "position", rep.BadPos,
		"segments_deleted", later, "err", rep.Cause)
	if err := s.Truncate(rep.BadPos); err != nil {
		return err
	}
	for _, base := range later {
		for _, suf := range [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			name := filepath.Join(l.dir, segment.Name(base)+suf)
			if err := l.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return l.fs.SyncDir(l.dir)
}

// listSegments returns the base offsets of the .log files in the directory, in order, after
// deleting index files that have no .log (Kafka deletes such orphans too), and whether segment
// files renamed *.deleted were there (deleted too).
func (l *Log) listSegments() (bases []int64, retiring bool, err error) {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, false, fmt.Errorf("commitlog: list %s: %w", l.dir, err)
	}
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
			if err := l.fs.Remove(filepath.Join(l.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, false, err
			}
			continue
		}
		// Files of segments deleted before the process stopped: their delete delay is over.
		if stem, ok := strings.CutSuffix(e.Name(), segment.DeletedSuffix); ok && !e.IsDir() {
			stem = trimRetirementNumber(stem)
			for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
				if _, ok := segment.ParseName(stem, suf); ok {
					retiring = true
					if err := l.fs.Remove(filepath.Join(l.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
						return nil, false, err
					}
				}
			}
			continue
		}
		for _, suf := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			if base, ok := segment.ParseName(e.Name(), suf); ok && !logs[base] {
				p := filepath.Join(l.dir, e.Name())
				l.logger.Warn("removing index without a log file", "file", p)
				if err := l.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, false, err
				}
			}
		}
	}
	slices.Sort(bases)
	return bases, retiring, nil
}
