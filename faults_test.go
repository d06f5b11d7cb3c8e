package commitlog

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestSyncFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ffs := newFaultyFS(fsy)
		dir := t.TempDir()
		l := openTestLog(t, ffs, dir, baseConfig())
		want := appendBatches(t, l, 2, 10)

		ffs.arm(1, 0) // the next fsync of a .log fails with EIO, once
		err := l.Append(context.Background(), workloadRecords(20, 10)...)
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		// The batch reached the file before the fsync failed: it stays visible, unacknowledged,
		// at offsets 20-29, until a reopen's recovery decides.
		require.Equal(t, int64(30), l.LogEndOffset())

		// Every later write fails, without another fsync, until the log is reopened.
		syncs, writes := ffs.counts()
		ctx := context.Background()
		err = l.Append(ctx, workloadRecord(30))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		_, _, err = l.AppendAsLeader(ctx, encodeBatch(t, 0, workloadRecords(30, 1)))
		require.ErrorIs(t, err, ErrSync)
		_, err = l.AppendAsFollower(ctx, encodeBatch(t, 30, workloadRecords(30, 1)))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, l.TruncateTo(10), ErrSync)
		require.ErrorIs(t, l.Sync(), ErrSync)
		s2, w2 := ffs.counts()
		require.Equal(t, syncs, s2, "no fsync is retried")
		require.Equal(t, writes, w2, "nothing is written")
		require.Equal(t, int64(30), l.LogEndOffset())

		// Reads still work.
		got := readAllRecords(t, l)
		requireSameRecords(t, want, got[:20])
		off, err := l.OffsetForTime(want[5].Timestamp.UnixMilli())
		require.NoError(t, err)
		require.Equal(t, int64(5), off)

		// Close does not record a clean shutdown: the reopen recovers by scanning.
		require.NoError(t, l.Close())
		require.False(t, readTestState(t, fsy, dir).clean)
		l = openTestLog(t, ffs, dir, baseConfig())
		require.Equal(t, int64(30), l.LogEndOffset())
		more := workloadRecords(30, 1)
		require.NoError(t, l.Append(ctx, more...))
		require.Equal(t, int64(30), more[0].Offset)
		requireSameRecords(t, append(append(want, withOffsets(workloadRecords(20, 10), 20)...), withOffsets(more, 30)...),
			readAllRecords(t, l))
	})
}

func TestNoSpaceMidWrite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ffs := newFaultyFS(fsy)
		dir := t.TempDir()
		log0 := segPath(dir, 0, logSuffix)
		l := openTestLog(t, ffs, dir, baseConfig())
		want := appendBatches(t, l, 2, 10)
		size := fsFileSize(t, fsy, log0)
		ctx := context.Background()

		// Records appended by the log, then a producer's batch: each write puts 37 bytes in the
		// file and fails with ENOSPC.
		for _, attempt := range []func() error{
			func() error { return l.Append(ctx, workloadRecords(20, 10)...) },
			func() error {
				_, _, err := l.AppendAsLeader(ctx, encodeBatch(t, 0, workloadRecords(20, 10)))
				return err
			},
			func() error {
				_, err := l.AppendAsFollower(ctx, encodeBatch(t, 20, workloadRecords(20, 10)))
				return err
			},
		} {
			ffs.arm(0, 1)
			err := attempt()
			require.ErrorIs(t, err, ErrNoSpace)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Equal(t, int64(20), l.LogEndOffset())
			require.Equal(t, size, fsFileSize(t, fsy, log0), "the partial write is cut off")
			require.Equal(t, size, l.Size())
			requireSameRecords(t, want, readAllRecords(t, l))
		}

		// Space is back: the next append goes at the same offset.
		recs := workloadRecords(20, 10)
		require.NoError(t, l.Append(ctx, recs...))
		require.Equal(t, int64(20), recs[0].Offset)
		want = append(want, withOffsets(workloadRecords(20, 10), 20)...)
		require.NoError(t, l.Close())

		l = openTestLog(t, ffs, dir, baseConfig())
		require.Equal(t, int64(30), l.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, l))
	})
}

func TestGroupCommit(t *testing.T) {
	const goroutines, perGoroutine = 16, 25
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ffs := newFaultyFS(fsy)
		ffs.syncDelay = 2 * time.Millisecond // a disk's fsync latency, on both backends
		dir := t.TempDir()
		log0 := segPath(dir, 0, logSuffix)
		cfg := baseConfig()
		cfg.Sync = SyncAlways
		l := openTestLog(t, ffs, dir, cfg)

		// One goroutine: every append is one fsync.
		for i := range 10 {
			require.NoError(t, l.Append(context.Background(), workloadRecord(i)))
		}
		syncs, _ := ffs.counts()
		require.Equal(t, 10, syncs)

		// Each acknowledged append, and the durable size of the .log when it returned: the
		// largest file size seen at the start of an fsync that had succeeded by then. An
		// fdatasync makes durable every byte written before it was called, so an append whose
		// bytes end at or below that size was covered by an fsync that returned before it did.
		type ack struct {
			offset  int64
			durable int64
		}
		acks := make([][]ack, goroutines)
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := range perGoroutine {
					r := workloadRecord(1000 + g*perGoroutine + i)
					if err := l.Append(context.Background(), r); err != nil {
						errs <- err
						return
					}
					acks[g] = append(acks[g], ack{r.Offset, ffs.durableSize(log0)})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		after, _ := ffs.counts()
		groupSyncs := after - syncs
		appends := goroutines * perGoroutine
		t.Logf("%d appends, %d fsyncs", appends, groupSyncs)
		require.Less(t, groupSyncs, appends, "concurrent appends share fsyncs")
		require.Equal(t, int64(10+appends), l.LogEndOffset())

		// Where each batch ends in the file.
		all, err := l.ReadBatches(nil, 0, 1<<30)
		require.NoError(t, err)
		end := map[int64]int64{}
		for _, h := range batchHeaders(t, all) {
			require.Equal(t, h.BaseOffset, h.LastOffset(), "one record per append")
			end[h.BaseOffset] = h.pos + int64(h.Size())
		}
		require.Len(t, end, 10+appends)
		seen := map[int64]bool{}
		for _, as := range acks {
			require.Len(t, as, perGoroutine)
			for _, a := range as {
				require.False(t, seen[a.offset], "offset %d acknowledged twice", a.offset)
				seen[a.offset] = true
				require.LessOrEqual(t, end[a.offset], a.durable,
					"the append at offset %d returned before an fsync covered its bytes", a.offset)
			}
		}
	})
}

func TestGroupCommitSyncFailure(t *testing.T) {
	// An fsync fails while appends are queued behind it: each of them returns the failure, every
	// append acknowledged before was covered by a successful fsync, and none is acknowledged
	// after.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ffs := newFaultyFS(fsy)
		ffs.syncDelay = 2 * time.Millisecond
		dir := t.TempDir()
		l := openTestLog(t, ffs, dir, baseConfig())
		var wg sync.WaitGroup
		var mu sync.Mutex
		var acked []int64
		failed := 0
		wg.Go(func() {
			for l.LogEndOffset() < 40 {
				time.Sleep(100 * time.Microsecond)
			}
			ffs.arm(1, 0)
		})
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					r := workloadRecord(g*20 + i)
					err := l.Append(context.Background(), r)
					mu.Lock()
					if err == nil {
						acked = append(acked, r.Offset)
					} else {
						failed++
						if !errors.Is(err, ErrSync) || !errors.Is(err, syscall.EIO) {
							t.Errorf("append failed with %v, not ErrSync and EIO", err)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Equal(t, 160, failed+len(acked))
		require.Positive(t, failed)
		t.Logf("%d acknowledged, %d failed", len(acked), failed)

		durable := ffs.durableSize(segPath(dir, 0, logSuffix))
		all, err := l.ReadBatches(nil, 0, 1<<30)
		require.NoError(t, err)
		end := map[int64]int64{}
		for _, h := range batchHeaders(t, all) {
			end[h.BaseOffset] = h.pos + int64(h.Size())
		}
		for _, off := range acked {
			require.LessOrEqual(t, end[off], durable, "offset %d acknowledged without a successful fsync", off)
		}
		// After a reopen every acknowledged record is there.
		require.NoError(t, l.Close())
		l = openTestLog(t, ffs, dir, baseConfig())
		got := map[int64]*Record{}
		for _, r := range readAllRecords(t, l) {
			got[r.Offset] = r
		}
		for _, off := range acked {
			require.Contains(t, got, off)
		}
	})
}
