package commitlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// syncFailedFileName marks a log whose writes failed in a way that leaves the disk's contents
// unknown, most often a failed fsync. Linux marks the pages of a failed fsync clean without
// writing them and keeps them in the page cache: a reopen in the same boot reads those bytes back
// whole, recovery keeps them, and the next fsync, with no dirty page left, would not write them,
// so appends acknowledged after them would be lost to a power loss along with them. The marker
// makes the next open write those bytes again before it trusts them.
const syncFailedFileName = "commitlog-sync-failed"

// markSyncFailed records the failure durably; best effort, as the disk may be failing.
func (l *Log) markSyncFailed(cause error) {
	path := filepath.Join(l.dir, syncFailedFileName)
	if err := checkpoint.Write(l.fs, path, []byte(cause.Error())); err != nil {
		l.logger.Error("sync failure not recorded; a reopen in this boot may trust unsynced bytes", "file", path, "err", err)
	}
}

// rewriteAfterFailedSync, when the marker is present, writes every byte of the segments that may
// hold data past the recovery point from (those a failed fsync may have left only in the page
// cache) back to their files and fsyncs them, then removes the marker. Rewriting the same bytes
// makes their pages dirty again, so the fsync writes them for real. Called by logLoader.run after load.
func (ld *logLoader) rewriteAfterFailedSync(from int64) error {
	marker := filepath.Join(ld.dir, syncFailedFileName)
	if _, err := ld.fs.Stat(marker); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("commitlog: %s: %w", marker, err)
	}
	buf := make([]byte, 1<<20)
	for _, s := range ld.segments {
		if s.NextOffset() <= from && s != ld.active() {
			continue
		}
		if err := rewriteFile(ld.fs, s.Path(segment.LogSuffix), buf); err != nil {
			return fmt.Errorf("commitlog: rewrite %s after a failed sync: %w", s.Path(segment.LogSuffix), err)
		}
		ld.logger.Warn("rewrote segment written before a failed sync", "segment", s.Path(segment.LogSuffix))
	}
	if err := ld.fs.Remove(marker); err != nil {
		return fmt.Errorf("commitlog: remove %s: %w", marker, err)
	}
	return ld.fs.SyncDir(ld.dir)
}

// rewriteFile writes each chunk of name back where it was read from, then fsyncs the file.
func rewriteFile(fsy fsys.FS, name string, buf []byte) error {
	f, err := fsy.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			if _, werr := f.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return err
		}
	}
	return f.Sync()
}
