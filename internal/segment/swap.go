package segment

import (
	"errors"
	"fmt"
	"os"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The suffixes compaction puts after a segment's file names (after ".log", ".index",
// ".timeindex"), Kafka's LogFileUtils.CLEANED_FILE_SUFFIX and SWAP_FILE_SUFFIX.
//
// Kafka's swap protocol (LogCleaner.cleanSegments, LocalLog.replaceSegments): the cleaner writes
// the segment that replaces a group of segments as "<base>.log.cleaned" with its two indexes
// (base: the group's first base offset), seals and fsyncs it, renames its files "*.swap", puts it
// in the log's list in place of the group, renames the group's files "*.deleted" (deleted later),
// then renames the ".swap" files to their final names. A crash leaves at most one of these steps
// half done; the log's loader finishes or undoes it (the root package's LogLoader).
const (
	// CleanedSuffix marks the files of a segment a compaction is writing: incomplete, deleted
	// at load.
	CleanedSuffix = ".cleaned"
	// SwapSuffix marks the files of a compacted segment, complete and durable, that replaces the
	// segments whose base offsets lie in [its base offset, its next offset): at load the swap is
	// completed.
	SwapSuffix = ".swap"
)

// CreateCleaned creates the files of an empty, writable segment at baseOffset in dir named with
// CleanedSuffix ("<base>.log.cleaned", ".index.cleaned", ".timeindex.cleaned"; the txn index,
// ".txnindex.cleaned", once AppendAbortedTxn gives it an entry), for a compaction to write (Kafka's
// LogCleaner.createNewCleanedSegment); stale files of those names, a crashed compaction's, are
// removed or truncated first. It is written as the active segment is
// (ReserveIndexes, WriteAt, IndexBatch, SetSize), then sealed and made durable (Seal, which syncs
// the .log file and trims, syncs and remaps the indexes read-only exactly as a roll does), then
// renamed (SetSuffix). It joins caches.Files pinned, even once sealed: the cache never closes its
// files until Unpin. The caller syncs the directory. On failure no segment is made and the files
// at its names are removed. Errors: the file system's (syscall.ENOSPC from a full disk).
func CreateCleaned(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches) (*Segment, error) {
	return create(fsy, dir, baseOffset, cfg, caches, false, CleanedSuffix)
}

// OpenSwap opens the .log file of a segment a compaction left as "<base>.log.swap" (with, if they
// are there, "<base>.index.swap", "<base>.timeindex.swap" and "<base>.txnindex.swap"), sealed, for the loader to complete
// the swap (Kafka's LogLoader opens it with LogSegment.open and SWAP_FILE_SUFFIX). Load then
// finds its next offset as it does for any sealed segment, rebuilding a missing or damaged index
// under the ".swap" names; SetSuffix("") renames the files into place. Errors: the file system's
// (fs.ErrNotExist for a missing .log.swap file).
func OpenSwap(fsy fsys.FS, dir string, baseOffset int64, cfg *Config, caches Caches) (*Segment, error) {
	return open(fsy, dir, baseOffset, cfg, caches, true, SwapSuffix)
}

// SetSuffix renames the segment's files from their names of now to those with suffix after their
// kind's ("" for the log's final names, CleanedSuffix, SwapSuffix), in the order .log, .index,
// .timeindex, .txnindex (when it exists), as Kafka's LogSegment.changeFileSuffixes does. Open files stay open and
// valid; a later OpenFiles (after the file cache closed them for idleness), Retire, Remove and
// Path go by the new names. A missing index file is no error (as Kafka's AbstractIndex.renameTo),
// a missing .log file is. On a failed rename the files already renamed are renamed back and the
// suffix stays; the error is the rename's (joined with any failure to rename back). No fsync of
// the directory: the caller syncs it where the protocol needs the renames durable (after the
// ".swap" renames, before the replaced segments are retired; at the end).
//
// Errors: ErrClosed when the segment was closed for good; an error for a retired segment (Retire
// owns its names) or a suffix other than the three above. Serialised with the file cache, reads
// opening the files and Retire (it holds openMu); the caller serialises it with the writer's
// methods.
func (s *Segment) SetSuffix(suffix string) error {
	switch suffix {
	case "", CleanedSuffix, SwapSuffix:
	default:
		return fmt.Errorf("segment %s: suffix %q is none of \"\", %q, %q", s.Path(LogSuffix), suffix, CleanedSuffix, SwapSuffix)
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.dead {
		return ErrClosed
	}
	if s.retired.Load() {
		return fmt.Errorf("segment %s: retired: its files' names are Retire's", s.Path(LogSuffix))
	}
	old := s.Suffix()
	if old == suffix {
		return nil
	}
	var renamed []string
	for _, kind := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		err := s.fs.Rename(s.pathWith(kind, old), s.pathWith(kind, suffix))
		if err == nil {
			renamed = append(renamed, kind)
			continue
		}
		if kind != LogSuffix && errors.Is(err, os.ErrNotExist) {
			continue
		}
		return s.undoRenames(renamed, old, suffix, err)
	}
	// Last, as Kafka renames the txn index after the other three; a missing file is no error.
	if err := s.txn.Rename(s.pathWith(TxnIndexSuffix, suffix)); err != nil {
		return s.undoRenames(renamed, old, suffix, err)
	}
	s.setSuffix(suffix)
	return nil
}

// undoRenames renames back the files of the kinds renamed (from suffix to old) after a failed
// rename err, and returns err joined with any failure to do so.
func (s *Segment) undoRenames(renamed []string, old, suffix string, err error) error {
	errs := []error{err}
	for _, k := range renamed {
		if rerr := s.fs.Rename(s.pathWith(k, suffix), s.pathWith(k, old)); rerr != nil {
			errs = append(errs, rerr)
		}
	}
	return errors.Join(errs...)
}
