package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
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
// The flusher also makes a spare producer snapshot file, "next.snapshot.spare", which the roll
// that claims the segment's spares writes its snapshot into and renames to "<base>.snapshot"
// (writeSnapshot).
//
// Spare files hold no data and are never synced: a crash can leave them, or lose them, or lose a
// rename, and nothing acknowledged depends on them. Open deletes any it finds (listSegments);
// Kafka's log loader acts only on the suffixes it knows, and leaves "*.spare" files alone.

// spareFiles are the spare files of a log's next segment, in the log's directory: the flusher
// makes them (prepare), a roll claims them (claim), Close removes them (remove). The Log holds
// one by value and gives it its file system, directory and logger at open; it holds nothing else
// of the log.
type spareFiles struct {
	fs     fsys.FS
	dir    string
	logger *slog.Logger
	// mu orders the spares' making with a roll's claiming them; ready says all three exist.
	mu    sync.Mutex
	ready bool
	// snapshot says that the roll that claimed the spares may write its producer snapshot into
	// the spare snapshot file (takeSnapshot), which prepare made with the three.
	snapshot bool
	// off turns spares off, for benchmarks that time a roll without them; set before the first
	// roll.
	off bool
}

// spareSuffixes are the suffixes of a segment's files, in the order a roll renames the spares.
// The .log goes last: while it is missing, a crash leaves at most index files without a .log,
// which open deletes as orphans.
var spareSuffixes = [...]string{segment.IndexSuffix, segment.TimeIndexSuffix, segment.LogSuffix}

// spareName is the name of the spare file for suffix, such as "next.log.spare".
func spareName(suffix string) string { return "next" + suffix + ".spare" }

// snapshotSpareName is the spare file a roll writes its producer snapshot into before renaming it
// to "<base>.snapshot" (writeSnapshot): a roll then creates no file at all.
var snapshotSpareName = spareName(producerstate.SnapshotSuffix)

// isSpareName reports whether name is one of a spare's files.
func isSpareName(name string) bool {
	for _, suf := range spareSuffixes {
		if name == spareName(suf) {
			return true
		}
	}
	return name == snapshotSpareName
}

// prepare creates the spare files unless they are ready, truncating any that a failed attempt
// left. Only the flusher goroutine calls it, on its wake and between the files it flushes, so no
// two preparations overlap; a roll claims spares only once ready is set. A failure is logged and
// leaves no spare: the next roll creates its files itself.
func (sp *spareFiles) prepare() {
	if sp.off {
		return
	}
	sp.mu.Lock()
	ready := sp.ready
	sp.mu.Unlock()
	if ready {
		return
	}
	for _, name := range spareFileNames() {
		p := filepath.Join(sp.dir, name)
		f, err := sp.fs.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			sp.logger.Warn("creating a spare segment file failed; the next roll creates its own", "file", p, "err", err)
			sp.dropFiles()
			return
		}
	}
	sp.mu.Lock()
	sp.ready = true
	sp.mu.Unlock()
}

// claim renames the spare files to the names of the segment at base and reports whether all
// three now stand there, empty. When a rename fails it reports false, and segment.Create creates
// (and truncates) whichever files it needs as it does without spares. Callers hold the log's
// writers' lock, as roll does.
func (sp *spareFiles) claim(base int64) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.ready {
		return false
	}
	sp.ready = false
	stem := filepath.Join(sp.dir, segment.Name(base))
	for _, suf := range spareSuffixes {
		if err := sp.fs.Rename(filepath.Join(sp.dir, spareName(suf)), stem+suf); err != nil {
			sp.logger.Warn("claiming a spare segment file failed; the roll creates its own", "base_offset", base, "err", err)
			sp.dropFiles()
			return false
		}
	}
	// The snapshot's spare goes to a name of this roll's own, under mu: a prepare after this claim
	// (ready is false now) makes a new spare and never truncates the file the roll writes.
	if err := sp.fs.Rename(filepath.Join(sp.dir, snapshotSpareName), claimedSnapshotPath(stem)); err != nil {
		sp.logger.Warn("claiming the spare snapshot file failed; the roll creates its own", "base_offset", base, "err", err)
		return true
	}
	sp.snapshot = true
	return true
}

// claimedSnapshotPath is where a roll's claim puts the spare snapshot file for the segment whose
// files are at stem: "<base>.snapshot.tmp", the temporary name writeSnapshot uses, which open
// deletes as a leftover (removeSnapshots).
func claimedSnapshotPath(stem string) string { return stem + producerstate.SnapshotSuffix + ".tmp" }

// takeSnapshot returns the path of the spare snapshot file that the last claim, of the segment at
// base, renamed for its roll's producer snapshot, and whether there is one; it is the caller's
// from then on (renamed into place, or deleted as a leftover by the next open). Callers hold the
// log's writers' lock.
func (sp *spareFiles) takeSnapshot(base int64) (string, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	ok := sp.snapshot
	sp.snapshot = false
	return claimedSnapshotPath(filepath.Join(sp.dir, segment.Name(base))), ok
}

// spareFileNames are the names of the spare files prepare makes: the segment's three and the
// producer snapshot's.
func spareFileNames() []string {
	names := make([]string, 0, len(spareSuffixes)+1)
	for _, suf := range spareSuffixes {
		names = append(names, spareName(suf))
	}
	return append(names, snapshotSpareName)
}

// remove deletes the spare files, for Close.
func (sp *spareFiles) remove() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.ready {
		return nil
	}
	sp.ready = false
	return sp.dropFiles()
}

// dropFiles deletes whichever spare files exist, after a failure part-way or for Close; files a
// failed removal leaves are deleted by the next open. Callers hold mu or, in prepare, are the only
// goroutine that makes spares while none is ready.
func (sp *spareFiles) dropFiles() error {
	var errs []error
	sp.snapshot = false
	for _, name := range spareFileNames() {
		if err := sp.fs.Remove(filepath.Join(sp.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove spare segment file: %w", err))
		}
	}
	return errors.Join(errs...)
}
