package commitlog

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// spareNames are the names of the three spare files, in the order a roll claims them.
var spareNames = []string{"next.index.spare", "next.timeindex.spare", "next.log.spare"}

// spareFilesIn returns the spare files present in dir, in spareNames order.
func spareFilesIn(t *testing.T, fsy fsys.FS, dir string) []string {
	t.Helper()
	names := fsListDir(t, fsy, dir)
	var out []string
	for _, n := range spareNames {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// awaitSpares waits until l's flusher has made the spare files, then stops the flusher, so that
// the next roll claims them and nothing makes new ones.
func awaitSpares(t *testing.T, l *Log, fsy fsys.FS) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.spareMu.Lock()
		defer l.spareMu.Unlock()
		return l.spareReady
	}, flushWait, flushTick)
	stopTestFlusher(l)
	require.Equal(t, spareNames, spareFilesIn(t, fsy, l.Dir()))
}

func TestRollClaimsSpareFiles(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNever, SyncInterval(time.Hour)} {
		t.Run(policy.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, flushTestConfig(policy))
				want := appendBatches(t, l, 1, 10)
				require.Empty(t, spareFilesIn(t, fsy, dir), "no spares before the first roll")
				want = append(want, appendBatches(t, l, 1, 10)...)
				require.Equal(t, []int64{0, 10}, segmentBases(l))

				awaitSpares(t, l, fsy)
				var spareLog os.FileInfo
				if fsy == fsys.OS() {
					var err error
					spareLog, err = os.Stat(filepath.Join(dir, "next.log.spare"))
					require.NoError(t, err)
				}
				want = append(want, appendBatches(t, l, 1, 10)...)
				require.Equal(t, []int64{0, 10, 20}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, dir), "the roll to 20 renamed all three")
				if spareLog != nil {
					got, err := os.Stat(filepath.Join(dir, "00000000000000000020.log"))
					require.NoError(t, err)
					require.True(t, os.SameFile(spareLog, got), "segment 20's .log is the spare's file")
				}
				requireSameRecords(t, want, readAllRecords(t, l))
				off, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + 25))
				require.NoError(t, err)
				require.Equal(t, int64(25), off, "the claimed time index serves the new segment")

				require.NoError(t, l.Close())
				l2 := openTestLog(t, fsy, dir, flushTestConfig(policy))
				require.Equal(t, []int64{0, 10, 20}, segmentBases(l2))
				requireSameRecords(t, want, readAllRecords(t, l2))
			})
		})
	}
}

func TestSpareFilesOnlyWithAFlusher(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncAlways))
		appendBatches(t, l, 4, 10)
		require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
		require.Empty(t, spareFilesIn(t, fsy, dir), "SyncAlways rolls create their own files")
	})
}

func TestCloseRemovesSpareFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		appendBatches(t, l, 2, 10)
		awaitSpares(t, l, fsy)
		require.NoError(t, l.Close())
		require.Empty(t, spareFilesIn(t, fsy, dir))
		require.Equal(t, []int64{0, 10}, logFileBases(t, fsy, dir))
	})
}

func TestOpenRemovesLeftoverSpareFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		want := appendBatches(t, l, 2, 10)
		require.NoError(t, l.Close())
		// As a crash after the flusher made spares leaves them (one with bytes that must not
		// be read as a segment).
		for _, n := range spareNames {
			f, err := fsy.OpenFile(filepath.Join(dir, n), os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("not a batch"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}

		l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		require.Empty(t, spareFilesIn(t, fsy, dir))
		require.Equal(t, []int64{0, 10}, segmentBases(l2))
		requireSameRecords(t, want, readAllRecords(t, l2))
	})
}

// renameFailFS fails the renames whose source is failFrom with EIO.
type renameFailFS struct {
	fsys.FS
	failFrom string
}

func (f *renameFailFS) Rename(oldpath, newpath string) error {
	if filepath.Base(oldpath) == f.failFrom {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
	}
	return f.FS.Rename(oldpath, newpath)
}

func TestRollWhenClaimingSpareFails(t *testing.T) {
	// Each rename in turn fails: the ones before it have moved spares to the segment's names
	// (an empty index), and the roll must still make a whole segment of its own.
	for _, failFrom := range spareNames {
		t.Run(failFrom, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				ffs := &renameFailFS{FS: fsy, failFrom: failFrom}
				l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
				want := appendBatches(t, l, 2, 10)
				awaitSpares(t, l, fsy)

				want = append(want, appendBatches(t, l, 2, 10)...)
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, dir), "the failed claim drops the spares")
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())

				l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l2))
				requireSameRecords(t, want, readAllRecords(t, l2))
			})
		})
	}
}
