package commitlog

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestEmptyLogResumesAtCheckpointedStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		require.NoError(t, fsy.MkdirAll(dir, 0o755))
		writeTestState(t, fsy, dir, logState{logStartOffset: 100, recoveryPoint: 100, clean: true})
		l := openTestLog(t, fsy, dir, baseConfig())
		require.Equal(t, int64(100), l.LogStartOffset())
		require.Equal(t, int64(100), l.LogEndOffset())
		require.Equal(t, []int64{100}, logFileBases(t, fsy, dir))
		recs := workloadRecords(0, 3)
		require.NoError(t, l.Append(context.Background(), recs...))
		require.Equal(t, int64(100), recs[0].Offset)
		for _, off := range []int64{0, 99} {
			_, err := l.ReadBatches(nil, off, 1<<20)
			require.ErrorIs(t, err, ErrOffsetOutOfRange)
		}
		requireSameRecords(t, withOffsets(workloadRecords(0, 3), 100), readAllRecords(t, l))
		require.ErrorIs(t, l.TruncateTo(99), ErrOffsetOutOfRange)
		require.Equal(t, int64(103), l.LogEndOffset())
	})
}

func TestDirectoryLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		want := appendBatches(t, l, 3, 10)
		before := fsSnapshot(t, fsy, dir)

		for range 2 {
			l2, err := OpenLog(dir, baseConfig(), withFS(fsy))
			require.ErrorIs(t, err, ErrLocked)
			require.Nil(t, l2)
		}
		require.Equal(t, before, fsSnapshot(t, fsy, dir), "a refused open changes nothing")
		// The first log still works.
		more := workloadRecords(30, 1)
		require.NoError(t, l.Append(context.Background(), more...))
		require.Equal(t, int64(30), more[0].Offset)
		want = append(want, withOffsets(workloadRecords(30, 1), 30)...)

		require.NoError(t, l.Close())
		l2 := openTestLog(t, fsy, dir, baseConfig())
		requireSameRecords(t, want, readAllRecords(t, l2))
		_, err := OpenLog(dir, baseConfig(), withFS(fsy))
		require.ErrorIs(t, err, ErrLocked)
	})
}

// openFDs counts this process's open file descriptors; -1 where the system does not list them.
func openFDs(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestFailedOpenLeavesNothingOpen(t *testing.T) {
	// A log whose segments overlap: segment 0 ends at offset 9, past the base offset 5 of the
	// next. The open fails after it took the lock, opened both segments and mapped their
	// indexes.
	overlapping := func(t *testing.T, fsy fsys.FS) string {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		appendBatches(t, l, 1, 10)
		require.NoError(t, l.Close())
		fsWriteFile(t, fsy, segPath(dir, 5, logSuffix), encodeBatch(t, 5, workloadRecords(5, 2)))
		return dir
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, fsy fsys.FS) string
		cfg   LogConfig
		err   error
	}{
		{"invalid config", func(t *testing.T, fsy fsys.FS) string { return t.TempDir() },
			LogConfig{SegmentBytes: 10}, ErrInvalidConfig},
		{"the directory is a file", func(t *testing.T, fsy fsys.FS) string {
			parent := t.TempDir()
			require.NoError(t, fsy.MkdirAll(parent, 0o755))
			p := filepath.Join(parent, "file")
			fsWriteFile(t, fsy, p, []byte("not a directory"))
			return p
		}, baseConfig(), nil},
		{"overlapping segments", overlapping, baseConfig(), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := tt.setup(t, fsy)
				runtime.GC() // finalizers of earlier tests' files
				fds := openFDs(t)
				l, err := OpenLog(dir, tt.cfg, withFS(fsy))
				require.Error(t, err)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				}
				require.Nil(t, l)
				require.Equal(t, fds, openFDs(t), "descriptors left open by a failed open")
				// No lock is left behind: the lock file can be taken.
				if fi, serr := fsy.Stat(dir); serr == nil && fi.IsDir() {
					u, err := fsy.Lock(filepath.Join(dir, lockFileName))
					require.NoError(t, err)
					require.NoError(t, u.Close())
				}
			})
		})
	}
}

func TestClosedLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, l, 2, 10)
		raw := encodeBatch(t, 0, workloadRecords(0, 1))
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "a second Close returns nil")

		ctx := context.Background()
		require.ErrorIs(t, l.Append(ctx, workloadRecord(1)), ErrClosed)
		_, _, err := l.AppendAsLeader(ctx, slices.Clone(raw))
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.AppendAsFollower(ctx, encodeBatch(t, 20, workloadRecords(20, 1)))
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.ReadBatches(nil, 0, 1<<20)
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.ReadRecords(0, 1<<20)
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.OffsetForTime(time.UnixMilli(0))
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, l.TruncateTo(5), ErrClosed)
		require.ErrorIs(t, l.Sync(), ErrClosed)
		require.NoError(t, l.Close())
		// The read-only accessors still answer.
		require.Equal(t, int64(20), l.LogEndOffset())
		require.Equal(t, int64(0), l.LogStartOffset())
	})
}

// closeOnReadFS closes a log at the first read of a .log file after it is armed: a Close that
// lands while a read is inside a segment file.
type closeOnReadFS struct {
	fsys.FS
	mu    sync.Mutex
	close func()
}

func (f *closeOnReadFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return file, err
	}
	return &closeOnReadFile{File: file, fs: f}, nil
}

type closeOnReadFile struct {
	fsys.File
	fs *closeOnReadFS
}

func (f *closeOnReadFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	c := f.fs.close
	f.fs.close = nil
	f.fs.mu.Unlock()
	if c != nil {
		c()
	}
	return f.File.ReadAt(p, off)
}

// TestReadsRacingCloseAreErrClosed: a Close that closes the segment files while a read is
// inside one makes the read return ErrClosed, as its doc says, not the file's "already closed"
// read error.
func TestReadsRacingCloseAreErrClosed(t *testing.T) {
	reads := map[string]func(l *Log) error{
		"ReadRange": func(l *Log) error {
			r, err := l.ReadRange(5, 1<<20)
			if err == nil {
				r.Close()
			}
			return err
		},
		"ReadBatches": func(l *Log) error { _, err := l.ReadBatches(nil, 5, 1<<20); return err },
		"ReadRecords": func(l *Log) error { _, err := l.ReadRecords(5, 1<<20); return err },
		"Scan": func(l *Log) error {
			for _, err := range l.Scan(5) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"OffsetForTime": func(l *Log) error { _, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + 5)); return err },
		"ReadRecord":    func(l *Log) error { var r Record; return l.ReadRecord(5, &r) },
	}
	for _, name := range slices.Sorted(maps.Keys(reads)) {
		t.Run(name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfs := &closeOnReadFS{FS: fsy}
				l := openTestLog(t, cfs, t.TempDir(), baseConfig(), WithSync(SyncNever))
				appendBatches(t, l, 3, 10)
				closed := false
				cfs.mu.Lock()
				cfs.close = func() { closed = true; require.NoError(t, l.Close()) }
				cfs.mu.Unlock()
				err := reads[name](l)
				require.True(t, closed, "the read read no .log file")
				require.ErrorIs(t, err, ErrClosed)
			})
		})
	}
}
