package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// Spare segment files. Creating a file is the slowest step of a roll, and it sits on the append
// path: every append behind the roll waits for it. On ext4 without a journal (as on the machine
// BENCHMARKS.md was measured on) a creation costs 0.3-0.8 ms once the file system has freed many
// inodes in the last minutes, since the inode allocator skips every recently freed inode one by
// one (recently_deleted in fs/ext4/ialloc.c); a roll makes three files.
//
// So under SyncNever and SyncInterval, after a log's first roll, its flusher goroutine creates the
// next segment's three files ahead of time, empty, under spare names, and the next roll renames
// them to the new segment's names (a rename allocates no inode) before opening them as it would
// open new files. A rename replaces a stale file of the same name, as the creation's O_TRUNC and
// removals did. Without spares ready (the first roll, a roll that outran the flusher, SyncAlways,
// a failed rename) the roll creates the files itself.
//
// Spare files hold no data and are never synced: a crash can leave them, or lose them, or lose a
// rename, and nothing acknowledged depends on them. Open deletes any it finds (listSegments);
// Kafka's log loader acts only on the suffixes it knows, and leaves "*.spare" files alone.

// spareSuffixes are the suffixes of a segment's files, in the order a roll renames the spares.
// The .log goes last: while it is missing, a crash leaves at most index files without a .log,
// which open deletes as orphans.
var spareSuffixes = [...]string{segment.IndexSuffix, segment.TimeIndexSuffix, segment.LogSuffix}

// spareName is the name of the spare file for suffix, such as "next.log.spare".
func spareName(suffix string) string { return "next" + suffix + ".spare" }

// isSpareName reports whether name is one of a spare's files.
func isSpareName(name string) bool {
	for _, suf := range spareSuffixes {
		if name == spareName(suf) {
			return true
		}
	}
	return false
}

// prepareSpare creates the spare files unless they are ready (spareReady), truncating any that
// a failed attempt left. Only the flusher goroutine calls it, on its wake and between the files
// it flushes, so no two preparations overlap; a roll claims spares only once spareReady is set.
// A failure is logged and leaves no spare: the next roll creates its files itself.
func (l *Log) prepareSpare() {
	if l.noSpares {
		return
	}
	l.spareMu.Lock()
	ready := l.spareReady
	l.spareMu.Unlock()
	if ready {
		return
	}
	for _, suf := range spareSuffixes {
		p := filepath.Join(l.dir, spareName(suf))
		f, err := l.fs.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			l.logger.Warn("creating a spare segment file failed; the next roll creates its own", "file", p, "err", err)
			l.dropSpareFiles()
			return
		}
	}
	l.spareMu.Lock()
	l.spareReady = true
	l.spareMu.Unlock()
}

// claimSpare renames the spare files to the names of the segment at base and reports whether
// all three now stand there, empty. When a rename fails it reports false, and segment.Create
// creates (and truncates) whichever files it needs as it does without spares. Callers hold the
// writers' lock, as roll does.
func (l *Log) claimSpare(base int64) bool {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	if !l.spareReady {
		return false
	}
	l.spareReady = false
	stem := filepath.Join(l.dir, segment.Name(base))
	for _, suf := range spareSuffixes {
		if err := l.fs.Rename(filepath.Join(l.dir, spareName(suf)), stem+suf); err != nil {
			l.logger.Warn("claiming a spare segment file failed; the roll creates its own", "base_offset", base, "err", err)
			l.dropSpareFiles()
			return false
		}
	}
	return true
}

// removeSpare deletes the spare files, for Close.
func (l *Log) removeSpare() error {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	if !l.spareReady {
		return nil
	}
	l.spareReady = false
	return l.dropSpareFiles()
}

// dropSpareFiles deletes whichever spare files exist, after a failure part-way or for Close; files
// a failed removal leaves are deleted by the next open. Callers hold spareMu or, in prepareSpare,
// are the only goroutine that makes spares while none is ready.
func (l *Log) dropSpareFiles() error {
	var errs []error
	for _, suf := range spareSuffixes {
		if err := l.fs.Remove(filepath.Join(l.dir, spareName(suf))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove spare segment file: %w", err))
		}
	}
	return errors.Join(errs...)
}
