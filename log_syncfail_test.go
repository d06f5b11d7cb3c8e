package commitlog

import (
	"context"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// writesSince returns the operations from n on that change files: none may run once a log
// has failed.
func writesSince(ffs *faultfs.FS, n int) []faultfs.Op {
	var out []faultfs.Op
	for _, op := range ffs.Ops()[n:] {
		switch op.Kind {
		case faultfs.Write, faultfs.Truncate, faultfs.Sync, faultfs.MapSync, faultfs.Rename, faultfs.Remove, faultfs.SyncDir:
			out = append(out, op)
		}
	}
	return out
}

func TestSyncFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, baseConfig())
		want := appendBatches(t, l, 2, 10)
		failed := withOffsets(workloadRecords(20, 10), 20)
		ctx := context.Background()

		// The next fsync of a .log fails with EIO, once; like Linux, the fault FS drops the
		// batch's bytes from what any later fsync writes.
		ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Sync, logSuffix), faultfs.Fault{Err: syscall.EIO}))
		err := l.Append(ctx, workloadRecords(20, 10)...)
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		// The batch reached the file before the fsync failed: it stays visible, unacknowledged,
		// at offsets 20-29, until a reopen's recovery decides.
		require.Equal(t, int64(30), l.LogEndOffset())

		// Every later write fails, without another write or fsync, until the log is reopened.
		n := len(ffs.Ops())
		err = l.Append(ctx, workloadRecord(30))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		_, _, err = l.AppendAsLeader(ctx, encodeBatch(t, 0, workloadRecords(30, 1)))
		require.ErrorIs(t, err, ErrSync)
		_, err = l.AppendAsFollower(ctx, encodeBatch(t, 30, workloadRecords(30, 1)))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, l.TruncateTo(10), ErrSync)
		require.ErrorIs(t, l.Sync(), ErrSync)
		_, err = l.ApplyRetentionAt(testEpoch)
		require.ErrorIs(t, err, ErrSync)
		require.Empty(t, writesSince(ffs, n), "nothing is written or synced")
		require.Equal(t, int64(30), l.LogEndOffset())

		// Reads still work.
		got := readAllRecords(t, l)
		requireSameRecords(t, append(slices.Clone(want), failed...), got)
		off, err := l.OffsetForTime(want[5].Timestamp)
		require.NoError(t, err)
		require.Equal(t, int64(5), off)

		// A power loss now: the failed batch's bytes never reached the disk, so the log ends at
		// the last durable batch whatever happened to the unsynced bytes; a killed process
		// leaves the page cache, which holds the batch whole.
		for _, mode := range append(slices.Clone(powerLossModes), faultfs.ProcessKill) {
			img := crashImage(t, ffs, mode)
			crashed := openTestLog(t, img, dir, baseConfig())
			expect := want
			if mode == faultfs.ProcessKill {
				expect = append(slices.Clone(want), failed...)
			}
			require.Equal(t, int64(len(expect)), crashed.LogEndOffset(), "%s", mode)
			requireSameRecords(t, expect, readAllRecords(t, crashed))
			require.NoError(t, crashed.Close())
		}

		// Close does not record a clean shutdown: the reopen recovers by scanning, and finds
		// the failed batch whole in the page cache.
		require.NoError(t, l.Close())
		require.False(t, readTestState(t, ffs, dir).clean)
		l = openTestLog(t, ffs, dir, baseConfig())
		require.Equal(t, int64(30), l.LogEndOffset())
		// A power loss after the reopen: the log ends at the last durable batch or holds the
		// failed one whole, never half of it.
		for _, mode := range powerLossModes {
			crashed := openTestLog(t, crashImage(t, ffs, mode), dir, baseConfig())
			switch crashed.LogEndOffset() {
			case 20:
				requireSameRecords(t, want, readAllRecords(t, crashed))
			case 30:
				requireSameRecords(t, append(slices.Clone(want), failed...), readAllRecords(t, crashed))
			default:
				t.Fatalf("%s: log end offset %d after a power loss, want 20 or 30", mode, crashed.LogEndOffset())
			}
			require.NoError(t, crashed.Close())
		}
		more := workloadRecords(30, 1)
		require.NoError(t, l.Append(ctx, more...))
		require.Equal(t, int64(30), more[0].Offset)
		requireSameRecords(t, append(append(slices.Clone(want), failed...), withOffsets(more, 30)...),
			readAllRecords(t, l))
	})
}

func TestSyncFailureReopenPowerLoss(t *testing.T) {
	// fsyncgate: after a failed fsync Linux marks the batch's pages clean without writing them,
	// but keeps them in the page cache, so a reopen in the same boot reads the batch back whole.
	// The reopen must write those bytes again before it appends after them: otherwise the next
	// fsync, finding no dirty page, leaves them unwritten, and a power loss takes the appends
	// acknowledged after the reopen with them.
	dir := "/d"
	ffs := newFaultFS(t, fsys.NewMemory(), dir)
	l := openTestLog(t, ffs, dir, baseConfig())
	want := appendBatches(t, l, 2, 10)
	ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Sync, logSuffix), faultfs.Fault{Err: syscall.EIO}))
	require.ErrorIs(t, l.Append(context.Background(), workloadRecords(20, 10)...), ErrSync)
	require.NoError(t, l.Close())

	l = openTestLog(t, ffs, dir, baseConfig())
	require.Equal(t, int64(30), l.LogEndOffset())
	more := workloadRecords(30, 5)
	require.NoError(t, l.Append(context.Background(), more...))
	want = append(append(want, withOffsets(workloadRecords(20, 10), 20)...), withOffsets(more, 30)...)
	for _, mode := range powerLossModes {
		crashed := openTestLog(t, crashImage(t, ffs, mode), dir, baseConfig())
		require.Equal(t, int64(35), crashed.LogEndOffset(), "%s: offsets 30-34 were acknowledged", mode)
		requireSameRecords(t, want, readAllRecords(t, crashed))
		require.NoError(t, crashed.Close())
	}
}
