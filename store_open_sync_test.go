package commitlog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// killedStore returns what a SIGKILL leaves of closeSyncStore's store (one topic of two
// partitions, three records each, SyncNever), closed, reopened and a fourth record appended to each: every byte written, nothing closed. A fault file
// system over it takes those files for durable, as a reopen after the kill finds them.
func killedStore(t *testing.T, fsy fsys.FS, dir string) fsys.FS {
	t.Helper()
	ffs := newFaultFS(t, fsy, dir)
	require.NoError(t, closeSyncStore(t, ffs, dir).Close())
	// Reopened, the partitions are in the store's checkpoints: the open after the kill finds
	// their recovery points, starts new leader epochs and replays the record appended since.
	s, err := Open(dir, withFS(ffs), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog))
	require.NoError(t, err)
	tp, err := s.Topic("events")
	require.NoError(t, err)
	for p := range int32(2) {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("d")}))
	}
	// Never closed: the process is killed.
	return crashImage(t, ffs, faultfs.ProcessKill)
}

// trackAll has ffs look at every file under dir, so that its crash images hold the files it
// found there (durable, as files a crash found are) and not only those it saw written. It
// returns the number of operations that took.
func trackAll(t *testing.T, ffs *faultfs.FS, dir string) int {
	t.Helper()
	ents, err := ffs.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			trackAll(t, ffs, p)
			continue
		}
		f, err := ffs.OpenFile(p, os.O_RDONLY, 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	return len(ffs.Ops())
}

// requireRecovered opens the store in dir on fsy and checks that both partitions hold their
// four records and that no temporary epoch checkpoint is left; it returns each partition's
// latest leader epoch.
func requireRecovered(t *testing.T, fsy fsys.FS, dir, what string) [2]int32 {
	t.Helper()
	re, err := Open(dir, withFS(fsy), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog))
	require.NoError(t, err, what)
	defer func() { require.NoError(t, re.Close(), what) }()
	tp, err := re.Topic("events")
	require.NoError(t, err, what)
	var epochs [2]int32
	for p := range int32(2) {
		part, err := tp.Partition(p)
		require.NoError(t, err, what)
		require.Equal(t, int64(4), part.LogEndOffset(), "%s partition %d", what, p)
		recs, err := part.ReadRecords(0, 1<<20)
		require.NoError(t, err, what)
		require.Len(t, recs, 4, what)
		require.Equal(t, []byte("d"), recs[3].Value, what)
		epochs[p] = part.log.latestEpoch()
		_, err = fsy.Lstat(filepath.Join(part.log.Dir(), leaderEpochFileName+checkpoint.TempSuffix))
		require.True(t, errors.Is(err, fs.ErrNotExist), "%s: temporary epoch checkpoint left: %v", what, err)
	}
	return epochs
}

// Store.Open after a kill, on a file system that syncs in one call: the partitions' recovery
// writes (producer snapshot, leader epoch checkpoint) are synced by no fsync of their own; a first
// syncfs makes them durable, the epoch checkpoints are renamed into place, a second syncfs makes
// the renames durable, and only then are the store's checkpoints written.
func TestStoreOpenAfterKillSyncsRecoveryWritesAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		ffs := newFaultFS(t, killedStore(t, fsy, dir), dir)
		tracked := trackAll(t, ffs, dir)
		s, err := Open(dir, withFS(ffs), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		ops := ffs.Ops()[tracked:]
		require.NoError(t, s.Close())

		var syncFS []int
		var renames []string
		for i, op := range ops {
			switch {
			case op.Kind == faultfs.SyncFS:
				syncFS = append(syncFS, i)
			case (op.Kind == faultfs.Sync || op.Kind == faultfs.SyncDir) && strings.Contains(op.Path, "events-"):
				t.Errorf("a partition's file synced on its own: %s", op)
			case op.Kind == faultfs.Rename && strings.HasSuffix(op.Path, leaderEpochFileName+checkpoint.TempSuffix):
				renames = append(renames, op.Path)
				require.Len(t, syncFS, 1, "epoch checkpoint renamed outside the two syncs: %s", op)
			case op.Kind == faultfs.Rename && strings.HasPrefix(filepath.Base(op.Path), recoveryPointCheckpointName):
				require.Len(t, syncFS, 2, "store checkpoint written before the syncs: %s", op)
			}
		}
		require.Len(t, syncFS, 2, faultfs.FormatOps(ops))
		require.ElementsMatch(t, []string{
			filepath.Join(dir, "events-0", leaderEpochFileName+checkpoint.TempSuffix),
			filepath.Join(dir, "events-1", leaderEpochFileName+checkpoint.TempSuffix),
		}, renames)
	})
}

// A crash (kill or power loss) at every operation of Store.Open after a kill leaves files the
// next Open recovers from: every record is there, no temporary epoch checkpoint is left, and each
// partition's latest leader epoch is one above the epoch the complete open started once that is
// durable (the next open is unclean again), or, when the crash came before, either that or the
// same epoch started again (nobody saw the store that crashed in its Open).
func TestStoreOpenAfterKillCrashPoints(t *testing.T) {
	opts := func(fsy fsys.FS) []Option {
		return []Option{withFS(fsy), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog), withParallelLogs(1)}
	}
	killed := func(t *testing.T) (fsys.FS, string) {
		dir := filepath.Join(t.TempDir(), "store")
		return killedStore(t, fsys.NewMemory(), dir), dir
	}

	// The counting run: the whole open, its operations and the epochs it starts.
	img, dir := killed(t)
	counting := newFaultFS(t, img, dir)
	tracked := trackAll(t, counting, dir)
	s, err := Open(dir, opts(counting)...)
	require.NoError(t, err)
	ops := counting.Ops()[tracked:]
	tp, err := s.Topic("events")
	require.NoError(t, err)
	var started [2]int32
	for p := range int32(2) {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		started[p] = part.log.latestEpoch()
	}
	require.NoError(t, s.Close())
	lastSyncFS := -1
	for i, op := range ops {
		if op.Kind == faultfs.SyncFS {
			lastSyncFS = i
		}
	}
	require.NotEqual(t, -1, lastSyncFS)

	for point := range len(ops) {
		img, dir := killed(t)
		ffs := newFaultFS(t, img, dir)
		require.Equal(t, tracked, trackAll(t, ffs, dir))
		ffs.Inject(faultfs.CrashAt(tracked + point))
		if s, err := Open(dir, opts(ffs)...); err == nil {
			// The crash hit an operation whose failure Open lets pass (a look for a file it
			// does without); its Close fails on the crashed file system.
			_ = s.Close()
		}
		for _, mode := range append([]faultfs.Mode{faultfs.ProcessKill}, powerLossModes...) {
			what := ops[point].String() + " " + mode.String()
			epochs := requireRecovered(t, crashImage(t, ffs, mode), dir, what)
			for p := range 2 {
				if point > lastSyncFS {
					// The started epoch is durable: the next open, unclean again, starts one above.
					require.Equal(t, started[p]+1, epochs[p], "%s partition %d", what, p)
				} else {
					require.Contains(t, []int32{started[p], started[p] + 1}, epochs[p], "%s partition %d", what, p)
				}
			}
		}
	}
}
