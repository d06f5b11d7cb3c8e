package commitlog

import (
	"context"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The tests here drive the stage by hand: a log under SyncAlways whose last fsync covered
// several appends (lastRound > 1) stages the appends that will wait for durability, as it does
// under contention, and awaitDurable (the group commit's leader) writes them out.

// openStagingLog opens a SyncAlways log on fsy holding records 0..2 and set as if its last fsync
// had covered 16 appends.
func openStagingLog(t *testing.T, fsy fsys.FS, dir string, cfg LogConfig) *Log {
	t.Helper()
	cfg.Sync = SyncAlways
	l := openTestLog(t, fsy, dir, cfg)
	for i := range 3 {
		require.NoError(t, l.Append(context.Background(), workloadRecord(i)))
	}
	l.gc.lastRound.Store(16)
	return l
}

// stageAppend stages record i through the append path and returns its ticket.
func stageAppend(t *testing.T, l *Log, i int) writeTicket {
	t.Helper()
	tk, err := l.appendRecords(context.Background(), []*Record{workloadRecord(i)}, true)
	require.NoError(t, err)
	require.NotNil(t, tk.staged, "record %d was staged", i)
	return tk
}

func TestStagedAppendsWrittenByTheGroupCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openStagingLog(t, fsy, dir, baseConfig())
		log0 := segPath(dir, 0, logSuffix)
		size := l.Size()
		require.Equal(t, size, fsFileSize(t, fsy, log0))

		tickets := []writeTicket{stageAppend(t, l, 3), stageAppend(t, l, 4), stageAppend(t, l, 5)}
		require.Equal(t, []uint64{4, 5, 6}, []uint64{tickets[0].seq, tickets[1].seq, tickets[2].seq})
		require.Same(t, tickets[0].staged, tickets[2].staged, "one stage, one result")
		// Staged: offsets assigned, nothing in the file, nothing visible.
		require.Equal(t, int64(3), l.LogEndOffset())
		require.Equal(t, size, l.Size())
		require.Equal(t, size, fsFileSize(t, fsy, log0))
		requireSameRecords(t, withOffsets(workloadRecords(0, 3), 0), readAllRecords(t, l))

		// The first waiter leads the group commit: one write of the three, one fsync.
		require.NoError(t, l.awaitDurable(tickets[0]))
		require.Equal(t, int64(6), l.LogEndOffset())
		require.Equal(t, 2*size, l.Size(), "records of the workload encode to the same size")
		require.Equal(t, 2*size, fsFileSize(t, fsy, log0))
		require.Equal(t, uint64(6), l.gc.durableHint.Load())
		for _, tk := range tickets[1:] {
			require.NoError(t, l.awaitDurable(tk))
		}
		requireSameRecords(t, withOffsets(workloadRecords(0, 6), 0), readAllRecords(t, l))
		requireIndexesWithin(t, l)

		// The log goes on with direct and staged appends at the next offsets.
		l.gc.lastRound.Store(1)
		require.NoError(t, l.Append(context.Background(), workloadRecord(6)))
		l.gc.lastRound.Store(16)
		require.NoError(t, l.awaitDurable(stageAppend(t, l, 7)))
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, baseConfig())
		requireSameRecords(t, withOffsets(workloadRecords(0, 8), 0), readAllRecords(t, l))
	})
}

func TestStageNotUsed(t *testing.T) {
	cases := []struct {
		name   string
		sync   SyncPolicy
		round  uint64
		append func(t *testing.T, l *Log) (writeTicket, error)
	}{
		{"a lone appender", SyncAlways, 1, func(t *testing.T, l *Log) (writeTicket, error) {
			return l.appendRecords(context.Background(), []*Record{workloadRecord(3)}, true)
		}},
		{"an append that does not wait (AcksNone)", SyncAlways, 16, func(t *testing.T, l *Log) (writeTicket, error) {
			return l.appendRecords(context.Background(), []*Record{workloadRecord(3)}, false)
		}},
		{"SyncNever", SyncNever, 16, func(t *testing.T, l *Log) (writeTicket, error) {
			return l.appendRecords(context.Background(), []*Record{workloadRecord(3)}, true)
		}},
		{"a follower's batch", SyncAlways, 16, func(t *testing.T, l *Log) (writeTicket, error) {
			_, err := l.AppendAsFollower(context.Background(), encodeBatch(t, 3, []*Record{workloadRecord(3)}))
			return writeTicket{}, err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.Sync = c.sync
				l := openTestLog(t, fsy, t.TempDir(), cfg)
				for i := range 3 {
					require.NoError(t, l.Append(context.Background(), workloadRecord(i)))
				}
				l.gc.lastRound.Store(c.round)
				tk, err := c.append(t, l)
				require.NoError(t, err)
				require.Nil(t, tk.staged)
				require.Equal(t, 0, l.gc.stage.writes)
				require.Equal(t, int64(4), l.LogEndOffset(), "visible once written")
			})
		})
	}
}

func TestStagedAppendsBeforeOtherChanges(t *testing.T) {
	// Close and a roll write the stage out first, and the staged appends are acknowledged;
	// TruncateTo past the visible end leaves them (TestTruncationFailsUnacknowledgedAppends has
	// a truncation that removes them).
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		t.Run("Close", func(t *testing.T) {
			dir := t.TempDir()
			l := openStagingLog(t, fsy, dir, baseConfig())
			tk := stageAppend(t, l, 3)
			require.NoError(t, l.Close())
			require.NoError(t, l.awaitDurable(tk), "Close flushed it")
			l = openTestLog(t, fsy, dir, baseConfig())
			requireSameRecords(t, withOffsets(workloadRecords(0, 4), 0), readAllRecords(t, l))
		})
		t.Run("TruncateTo", func(t *testing.T) {
			// Past the end readers see: nothing changes, the staged appends stay.
			l := openStagingLog(t, fsy, t.TempDir(), baseConfig())
			tk := stageAppend(t, l, 3)
			tk4 := stageAppend(t, l, 4)
			require.NoError(t, l.TruncateTo(4))
			require.NoError(t, l.awaitDurable(tk))
			require.NoError(t, l.awaitDurable(tk4))
			require.Equal(t, int64(5), l.LogEndOffset())
			requireSameRecords(t, withOffsets(workloadRecords(0, 5), 0), readAllRecords(t, l))
		})
		t.Run("roll", func(t *testing.T) {
			cfg := baseConfig()
			size := int64(len(encodeBatch(t, 0, workloadRecords(0, 1))))
			cfg.SegmentBytes = 5 * size // records 0..4 fit segment 0
			l := openStagingLog(t, fsy, t.TempDir(), cfg)
			tickets := []writeTicket{stageAppend(t, l, 3), stageAppend(t, l, 4)}
			// Record 5 does not fit with the stage: the stage goes to segment 0, then 5 rolls.
			tk, err := l.appendRecords(context.Background(), []*Record{workloadRecord(5)}, true)
			require.NoError(t, err)
			require.Nil(t, tk.staged)
			require.Equal(t, []int64{0, 5}, segmentBases(l))
			require.Equal(t, int64(6), l.LogEndOffset())
			for _, tk := range append(tickets, tk) {
				require.NoError(t, l.awaitDurable(tk))
			}
			requireSameRecords(t, withOffsets(workloadRecords(0, 6), 0), readAllRecords(t, l))
		})
	})
}

func TestStageWriteNoSpace(t *testing.T) {
	// The disk fills during the stage's write: every staged append gets ErrNoSpace, nothing of
	// them stays, and the log goes on at the same offsets.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openStagingLog(t, ffs, dir, baseConfig())
		log0 := segPath(dir, 0, logSuffix)
		size := fsFileSize(t, fsy, log0)
		tickets := []writeTicket{stageAppend(t, l, 3), stageAppend(t, l, 4)}
		ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Write, logSuffix), faultfs.Fault{Err: syscall.ENOSPC, Written: 37}))
		for _, tk := range tickets {
			err := l.awaitDurable(tk)
			require.ErrorIs(t, err, ErrNoSpace)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.NotErrorIs(t, err, ErrSync)
		}
		require.Equal(t, size, fsFileSize(t, fsy, log0), "the partial write is cut off")
		require.Equal(t, int64(3), l.LogEndOffset())
		requireSameRecords(t, withOffsets(workloadRecords(0, 3), 0), readAllRecords(t, l))

		// Space is back: records 5 and 6 take offsets 3 and 4, staged or not.
		require.NoError(t, l.awaitDurable(stageAppend(t, l, 5)))
		l.gc.lastRound.Store(1)
		require.NoError(t, l.Append(context.Background(), workloadRecord(6)))
		want := withOffsets(append(workloadRecords(0, 3), workloadRecord(5), workloadRecord(6)), 0)
		requireSameRecords(t, want, readAllRecords(t, l))
		for _, mode := range powerLossModes {
			crashed := openTestLog(t, crashImage(t, ffs, mode), dir, baseConfig())
			requireSameRecords(t, want, readAllRecords(t, crashed))
			require.NoError(t, crashed.Close())
		}
	})
}

func TestTruncateToLogEndKeepsStagedAppend(t *testing.T) {
	// TruncateTo at the log end offset readers see changes nothing, not even the appends still
	// staged: they are written and acknowledged.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openStagingLog(t, fsy, t.TempDir(), baseConfig())
		tk := stageAppend(t, l, 3)
		require.Equal(t, int64(3), l.LogEndOffset())
		require.NoError(t, l.TruncateTo(3))
		require.Equal(t, 1, l.gc.stage.writes, "still staged")
		require.NoError(t, l.awaitDurable(tk))
		require.Equal(t, int64(4), l.LogEndOffset())
		requireSameRecords(t, withOffsets(workloadRecords(0, 4), 0), readAllRecords(t, l))
	})
}

func TestTruncationFailsUnacknowledgedAppends(t *testing.T) {
	// Appends a truncation removed before they were durable return ErrTruncated, staged or
	// written; one durable before the truncation ran was acknowledged whatever came after.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openStagingLog(t, fsy, t.TempDir(), baseConfig())
		l.gc.lastRound.Store(1)
		written, err := l.appendRecords(context.Background(), []*Record{workloadRecord(3)}, true)
		require.NoError(t, err)
		require.Nil(t, written.staged)
		l.gc.lastRound.Store(16)
		staged := stageAppend(t, l, 4)
		require.Equal(t, int64(4), l.LogEndOffset())

		require.NoError(t, l.TruncateTo(2))
		require.Equal(t, int64(2), l.LogEndOffset())
		for _, tk := range []writeTicket{written, staged} {
			err := l.awaitDurable(tk)
			require.ErrorIs(t, err, ErrTruncated)
		}
		// Offset 1 was durable before the truncation: its append stays acknowledged.
		require.NoError(t, l.awaitDurable(writeTicket{seq: 2, gen: staged.gen, last: 1}))
		requireSameRecords(t, withOffsets(workloadRecords(0, 2), 0), readAllRecords(t, l))
	})
}

func TestStageDroppedAfterFailedFsync(t *testing.T) {
	// Once an fsync failed the log writes nothing more: appends staged before the failure fail
	// with it, unwritten and unpublished.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ffs := newFaultyFS(fsy)
		l := openStagingLog(t, ffs, t.TempDir(), baseConfig())
		l.gc.lastRound.Store(1)
		written, err := l.appendRecords(context.Background(), []*Record{workloadRecord(3)}, true)
		require.NoError(t, err)
		l.gc.lastRound.Store(16)
		staged := stageAppend(t, l, 4)
		size := l.Size()
		ffs.arm(1, 0)
		_, err = l.fsyncTo(written.seq) // the leader's fsync fails: the log has failed
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, l.Append(context.Background(), workloadRecord(9)), ErrSync)
		require.ErrorIs(t, l.awaitDurable(staged), ErrSync)
		require.Equal(t, int64(4), l.LogEndOffset())
		require.Equal(t, size, l.Size())
		require.Equal(t, 0, l.gc.stage.writes)
	})
}
