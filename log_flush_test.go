package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// flushTestConfig rolls a segment for every batch: each batch is larger than a segment, which
// takes it whole only when empty. Batches of 10 records give segments at 0, 10, 20, ...
func flushTestConfig(sync SyncPolicy) LogConfig {
	cfg := baseConfig()
	cfg.SegmentBytes = 100
	cfg.Sync = sync
	return cfg
}

// flushWait bounds how long a test waits for the background flusher.
const flushWait, flushTick = 30 * time.Second, time.Millisecond

// stopTestFlusher stops l's flusher goroutine, so that flushes stay pending until the test runs
// them (or Close or Sync does).
func stopTestFlusher(l *Log) {
	l.flusher.stopAndWait()
	l.flusher.stop = nil
}

// recoveryPointOf returns l's recovery point in memory.
func recoveryPointOf(l *Log) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

func TestBackgroundFlushRecoveryPoint(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNever, SyncInterval(time.Hour)} {
		t.Run(policy.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				ffs := newFaultFS(t, fsy, dir)
				l := openTestLog(t, ffs, dir, flushTestConfig(policy))
				want := appendBatches(t, l, 3, 10)
				require.Equal(t, []int64{0, 10, 20}, segmentBases(l))

				// The rolls at 10 and 20 return before their flush; the flusher then syncs
				// segments 0 and 10 and checkpoints the recovery point at the last roll's base.
				require.Eventually(t, func() bool {
					st, ok := l.state.read()
					return ok && st.recoveryPoint == 20
				}, flushWait, flushTick)
				require.False(t, l.flushPending())
				require.Equal(t, int64(20), recoveryPointOf(l))
				require.Equal(t, logState{logStartOffset: 0, recoveryPoint: 20}, readTestState(t, ffs, dir))

				// A power loss now keeps the flushed segments whole; the active one's batch was
				// never synced and is lost, its empty file kept by the directory's fsync.
				img := crashImage(t, ffs, faultfs.PowerLossDrop)
				crashed := openTestLog(t, img, dir, flushTestConfig(policy))
				require.Equal(t, int64(20), crashed.LogEndOffset())
				requireSameRecords(t, want[:20], readAllRecords(t, crashed))
				require.NoError(t, crashed.Close())
			})
		})
	}
}

func TestCloseFlushesPendingSealedSegments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
		stopTestFlusher(l)
		want := appendBatches(t, l, 3, 10)
		require.True(t, l.flushPending())
		require.Equal(t, int64(0), readTestState(t, ffs, dir).recoveryPoint)

		require.NoError(t, l.Close())
		require.Equal(t, logState{logStartOffset: 0, recoveryPoint: 30, clean: true}, readTestState(t, ffs, dir))
		// Everything Close flushed survives a power loss.
		img := crashImage(t, ffs, faultfs.PowerLossDrop)
		crashed := openTestLog(t, img, dir, flushTestConfig(SyncNever))
		require.Equal(t, int64(30), crashed.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, crashed))
	})
}

func TestSyncFlushesPendingSealedSegments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
		stopTestFlusher(l)
		want := appendBatches(t, l, 3, 10)
		require.True(t, l.flushPending())

		// Sync covers every append so far, those in sealed segments whose flush is pending too.
		require.NoError(t, l.Sync())
		require.False(t, l.flushPending())
		require.Equal(t, logState{logStartOffset: 0, recoveryPoint: 20}, readTestState(t, ffs, dir))
		img := crashImage(t, ffs, faultfs.PowerLossDrop)
		crashed := openTestLog(t, img, dir, flushTestConfig(SyncNever))
		require.Equal(t, int64(30), crashed.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, crashed))
	})
}

// planFlushOfThree stops l's flusher, appends four batches (segments 0, 10, 20 and 30), takes
// flushMu and plans the flush of the three sealed segments, as the flusher would; the caller
// unlocks flushMu. It returns the records appended and the plan.
func planFlushOfThree(t *testing.T, l *Log) ([]*Record, sealedFlush) {
	t.Helper()
	stopTestFlusher(l)
	want := appendBatches(t, l, 4, 10)
	require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
	l.flusher.flushMu.Lock()
	f, err := l.planFlush()
	require.NoError(t, err)
	require.Equal(t, int64(30), f.target)
	require.Len(t, f.paths, 3*(len(flushedSuffixes)+1)) // and each roll's producer snapshot
	return want, f
}

func TestFlushRacingTruncation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		// A flush has listed segments 0 to 20 when a truncation cuts segment 10 back to empty
		// and removes the later ones.
		want, f := planFlushOfThree(t, l)
		require.NoError(t, l.TruncateTo(15))
		require.Equal(t, int64(10), l.LogEndOffset())
		require.NoError(t, l.flusher.syncFlush(l, f, nil), "files the truncation removed have nothing to flush")
		advanced, retry := l.finishFlush(f)
		l.flusher.flushMu.Unlock()
		require.False(t, advanced, "the recovery point must not pass bytes the truncation replaced")
		require.True(t, retry, "segment 0 still waits for its flush")
		require.Equal(t, int64(0), recoveryPointOf(l))

		// The retry flushes segment 0 only: the recovery point reaches the truncated segment's
		// base, whose data the truncation synced.
		retry, err := l.flusher.flushSealed(l, true, nil)
		require.NoError(t, err)
		require.False(t, retry)
		require.Equal(t, int64(10), recoveryPointOf(l))
		require.Equal(t, logState{logStartOffset: 0, recoveryPoint: 10}, readTestState(t, fsy, dir))

		more := appendBatches(t, l, 2, 10)
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		requireSameRecords(t, append(slices.Clone(want[:10]), more...), readAllRecords(t, l))
	})
}

func TestFlushRacingRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := flushTestConfig(SyncNever)
		cfg.RetentionDuration = time.Hour
		cfg.FileDeleteDelay = -1 // deleted at once
		l := openTestLog(t, fsy, dir, cfg)
		// A flush has listed segments 0 to 20 when retention deletes segments 0 and 10 (their
		// records are older than an hour at testEpoch+1h+25ms) and checkpoints the log start
		// offset.
		want, f := planFlushOfThree(t, l)
		n, err := l.ApplyRetentionAt(testEpoch.Add(time.Hour + 25*time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, int64(20), l.LogStartOffset())
		require.False(t, fsExists(t, fsy, segPath(dir, 0, logSuffix)))
		require.NoError(t, l.flusher.syncFlush(l, f, nil), "files retention deleted have nothing to flush")
		advanced, retry := l.finishFlush(f)
		l.flusher.flushMu.Unlock()
		require.True(t, advanced)
		require.False(t, retry)
		require.Equal(t, int64(30), recoveryPointOf(l))

		// The checkpoint keeps the log start offset retention wrote.
		l.checkpointRecoveryPoint()
		require.Equal(t, logState{logStartOffset: 20, recoveryPoint: 30}, readTestState(t, fsy, dir))
		requireSameRecords(t, want[20:], readAllRecords(t, l))
	})
}

// TestFlushRacingTruncationAndRetention runs the real flusher against rolls, truncations and
// retention on the appending goroutine, then checks the recovery point and the records, before
// and after a reopen.
func TestFlushRacingTruncationAndRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := flushTestConfig(SyncNever)
		cfg.RetentionDuration = time.Hour
		cfg.FileDeleteDelay = -1
		l := openTestLog(t, fsy, dir, cfg)
		var model []*Record // the records from the log start offset on
		for round := range 20 {
			model = append(model, appendBatches(t, l, 3, 10)...)
			if round%3 == 2 {
				// Inside the second-to-last batch: both last batches go.
				require.NoError(t, l.TruncateTo(l.LogEndOffset()-15))
				model = model[:l.LogEndOffset()-l.LogStartOffset()]
			}
			if round%4 == 3 {
				// Workload record i is timestamped testEpoch+i ms, and appended at offset i
				// (truncations re-append at the offsets they cut), so this deletes the segments
				// wholly below the last 20 offsets.
				start := l.LogStartOffset()
				cutoff := testEpoch.Add(time.Hour + time.Duration(l.LogEndOffset()-20)*time.Millisecond)
				_, err := l.ApplyRetentionAt(cutoff)
				require.NoError(t, err)
				model = model[l.LogStartOffset()-start:]
			}
		}
		require.NoError(t, l.Sync())
		require.False(t, l.flushPending())
		st := readTestState(t, fsy, dir)
		require.Equal(t, logState{logStartOffset: l.LogStartOffset(), recoveryPoint: l.active().BaseOffset()}, st)
		requireSameRecords(t, model, readAllRecords(t, l))
		start, end := l.LogStartOffset(), l.LogEndOffset()
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		require.Equal(t, start, l.LogStartOffset())
		require.Equal(t, end, l.LogEndOffset())
		requireSameRecords(t, model, readAllRecords(t, l))
	})
}

func TestBackgroundFlushFailureFailsLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
		// Under SyncNever the only fsync of a .log before Close is the flusher's.
		ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Sync, logSuffix), faultfs.Fault{Err: syscall.EIO}))
		want := appendBatches(t, l, 2, 10) // the roll at 10 hands segment 0 to the flusher

		require.Eventually(t, func() bool { return l.checkWritable() != nil }, flushWait, flushTick)
		err := l.Append(context.Background(), workloadRecord(20))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		require.ErrorIs(t, l.Sync(), ErrSync)
		require.True(t, fsExists(t, ffs, filepath.Join(dir, syncFailedFileName)))
		require.Equal(t, int64(0), recoveryPointOf(l))
		require.Equal(t, int64(0), readTestState(t, ffs, dir).recoveryPoint)
		requireSameRecords(t, want, readAllRecords(t, l))

		// Close records no clean shutdown; the reopen rewrites the segments past the recovery
		// point and takes writes again.
		require.NoError(t, l.Close())
		require.False(t, readTestState(t, ffs, dir).clean)
		l = openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
		requireSameRecords(t, want, readAllRecords(t, l))
		require.False(t, fsExists(t, ffs, filepath.Join(dir, syncFailedFileName)))
		require.NoError(t, l.Append(context.Background(), workloadRecord(20)))
	})
}

// TestSyncAlwaysRollKeepsAcknowledged: under SyncAlways the group commit's fsync covers the
// active segment only, so a roll must sync the old segment's last writes before it switches:
// appends from several goroutines, with a roll every few batches, then a power loss that keeps
// only what fsyncs covered, must leave every acknowledged record in place.
func TestSyncAlwaysRollKeepsAcknowledged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		cfg := baseConfig()
		cfg.SegmentBytes = 1500 // a roll every few batches
		l := openTestLog(t, ffs, dir, cfg)

		const writers, appends = 4, 25
		var mu sync.Mutex
		acked := map[int64]*Record{}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range appends {
					recs := workloadRecords(1000*w+10*i, 1+i%3)
					if err := l.Append(context.Background(), recs...); err != nil {
						t.Errorf("append: %v", err)
						return
					}
					mu.Lock()
					for _, r := range withOffsets(recs, recs[0].Offset) {
						acked[r.Offset] = r
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Greater(t, l.SegmentCount(), 10)

		for _, mode := range []faultfs.Mode{faultfs.PowerLossDrop, faultfs.PowerLossTorn} {
			crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg)
			require.Equal(t, int64(len(acked)), crashed.LogEndOffset(), "%s", mode)
			got := readAllRecords(t, crashed)
			want := make([]*Record, len(acked))
			for off, r := range acked {
				want[off] = r
			}
			requireSameRecords(t, want, got)
			require.NoError(t, crashed.Close())
		}
	})
}

// TestRecoveryEndsAtTearPastRecoveryPoint: under SyncNever a sealed segment past the recovery
// point may have been torn by a power loss (its flush had not run); recovery ends the log at the
// tear and deletes the later segments, as Kafka's does. Under SyncAlways the same bytes are
// corruption of a flushed segment: kept, reads of the bad batch get ErrCorrupt.
func TestRecoveryEndsAtTearPastRecoveryPoint(t *testing.T) {
	for _, tc := range []struct {
		policy  SyncPolicy
		wantEnd int64
		bases   []int64
	}{
		{SyncNever, 15, []int64{0, 10}},
		{SyncInterval(time.Hour), 15, []int64{0, 10}},
		{SyncAlways, 40, []int64{0, 10, 20, 30}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				cfg := flushTestConfig(SyncNever)
				l := openTestLog(t, fsy, dir, cfg)
				// Segment 10 holds two batches, 10-14 and 15-19: the second is appended under a
				// segment size that takes it.
				want := append(appendBatches(t, l, 1, 10), appendBatches(t, l, 1, 5)...)
				require.NoError(t, l.Close())
				cfg.SegmentBytes = 1 << 20
				l = openTestLog(t, fsy, dir, cfg)
				want = append(want, appendBatches(t, l, 1, 5)...)
				require.NoError(t, l.Close())
				cfg.SegmentBytes = 100
				l = openTestLog(t, fsy, dir, cfg)
				want = append(want, appendBatches(t, l, 2, 10)...)
				require.NoError(t, l.Close())
				require.Equal(t, []int64{0, 10, 20, 30}, logFileBases(t, fsy, dir))

				// A crash with the recovery point at 10 and the second batch of segment 10 torn.
				writeTestState(t, fsy, dir, logState{logStartOffset: 0, recoveryPoint: 10})
				seg10 := segPath(dir, 10, logSuffix)
				fsTruncate(t, fsy, seg10, fsFileSize(t, fsy, seg10)-7)

				cfg.Sync = tc.policy
				l = openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tc.wantEnd, l.LogEndOffset())
				require.Equal(t, tc.bases, logFileBases(t, fsy, dir))
				if tc.policy != SyncAlways {
					requireSameRecords(t, want[:15], readAllRecords(t, l))
					more := workloadRecords(15, 1)
					require.NoError(t, l.Append(context.Background(), more...))
					require.Equal(t, int64(15), more[0].Offset)
					return
				}
				_, err := l.ReadRecords(15, 1<<20)
				require.ErrorIs(t, err, ErrCorrupt)
			})
		})
	}
}

// TestSyncNeverPowerLossLeavesPrefix: a power loss while sealed segments wait for their
// background flush leaves a log that opens, reads without error and holds a prefix of what was
// appended, at least what the flushes covered; appends continue at its end.
func TestSyncNeverPowerLossLeavesPrefix(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			inner := fsys.NewMemory()
			require.NoError(t, inner.MkdirAll(dir, 0o755))
			ffs := faultfs.New(inner, seed)
			defer ffs.Release()
			l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
			want := appendBatches(t, l, 2, 10)
			require.NoError(t, l.Sync()) // segment 0 flushed; the recovery point is 10
			stopTestFlusher(l)
			want = append(want, appendBatches(t, l, 3, 10)...)
			// The directory's entries of segments 20 to 40 become durable, their bytes do not.
			require.NoError(t, ffs.SyncDir(dir))

			for _, mode := range []faultfs.Mode{faultfs.PowerLossDrop, faultfs.PowerLossTorn, faultfs.PowerLoss} {
				crashed := openTestLog(t, crashImage(t, ffs, mode), dir, flushTestConfig(SyncNever))
				end := crashed.LogEndOffset()
				require.GreaterOrEqual(t, end, int64(10), "%s", mode)
				requireSameRecords(t, want[:end], readAllRecords(t, crashed))
				more := workloadRecords(int(end), 1)
				require.NoError(t, crashed.Append(context.Background(), more...))
				require.Equal(t, end, more[0].Offset)
				require.NoError(t, crashed.Close())
			}
		})
	}
}

// TestReopenThenRollSyncKeepsRecords: the first append after an open rolls (the active segment
// is full), and Sync acknowledges it. Open set the recovery point to the log end offset, which is
// the roll's base, so no flush of sealed segments is pending; the directory entry of the new
// segment's files must still be made durable by Sync, or a power loss loses acknowledged records.
func TestReopenThenRollSyncKeepsRecords(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNever, SyncInterval(time.Hour)} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			ffs := newFaultFS(t, fsys.NewMemory(), dir)
			l := openTestLog(t, ffs, dir, flushTestConfig(policy))
			want := appendBatches(t, l, 1, 10)
			require.NoError(t, l.Close())

			l = openTestLog(t, ffs, dir, flushTestConfig(policy))
			want = append(want, appendBatches(t, l, 1, 10)...)
			require.Equal(t, []int64{0, 10}, segmentBases(l))
			require.NoError(t, l.Sync())
			stopTestFlusher(l)

			for _, mode := range powerLossModes {
				crashed := openTestLog(t, crashImage(t, ffs, mode), dir, flushTestConfig(policy))
				require.Equal(t, int64(20), crashed.LogEndOffset(), "%s: Sync acknowledged offsets 10-19", mode)
				requireSameRecords(t, want, readAllRecords(t, crashed))
				require.NoError(t, crashed.Close())
			}
		})
	}
}

// TestTruncateThenRollSyncKeepsRecords: a truncation lowers the recovery point to the new log end
// offset, and the next append rolls right there (its batch does not fit the cut segment). As
// after an open, no flush of sealed segments is pending, and Sync must still make the new
// segment's directory entries durable.
func TestTruncateThenRollSyncKeepsRecords(t *testing.T) {
	cfg := baseConfig()
	cfg.Sync = SyncNever
	cfg.SegmentBytes = 700 // three one-record batches
	dir := t.TempDir()
	ffs := newFaultFS(t, fsys.NewMemory(), dir)
	l := openTestLog(t, ffs, dir, cfg, WithLogger(quietLog))
	want := appendBatches(t, l, 9, 1)
	require.NoError(t, l.Sync())
	stopTestFlusher(l)
	require.Equal(t, int64(6), recoveryPointOf(l))
	require.NoError(t, l.TruncateTo(5))
	require.Equal(t, int64(5), recoveryPointOf(l))
	readyTestSpares(t, l, ffs)
	want = append(want[:5], appendBatches(t, l, 1, 2)...)
	require.Equal(t, []int64{0, 3, 5}, segmentBases(l), "the two-record batch rolled at 5, claiming the spares")
	require.Empty(t, spareFilesIn(t, ffs, dir))
	require.NoError(t, l.Sync())

	for _, mode := range powerLossModes {
		crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg, WithLogger(quietLog))
		require.Equal(t, int64(7), crashed.LogEndOffset(), "%s: Sync acknowledged offsets 5 and 6", mode)
		requireSameRecords(t, want, readAllRecords(t, crashed))
		require.NoError(t, crashed.Close())
	}
}

func TestCloseWhileIntervalSyncRuns(t *testing.T) {
	// Under SyncInterval the flusher calls Sync on its own; a Close that took the write locks
	// first and then waited for the flusher would wait for ever on a Sync blocked on them.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		for i := range 200 {
			cfg := baseConfig()
			cfg.Sync = SyncInterval(time.Microsecond)
			l, err := OpenLog(t.TempDir(), cfg, withFS(fsy), WithClock(fixedClock))
			require.NoError(t, err)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for j := 0; ; j++ {
					if err := l.Append(context.Background(), workloadRecord(j)); err != nil {
						return
					}
				}
			}()
			time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err, "iteration %d", i)
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: Close did not return", i)
			}
			<-done
		}
	})
}
