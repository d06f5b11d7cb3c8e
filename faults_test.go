package commitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// newFaultFS wraps fsy in a fault-injecting file system, with dir created before it: a
// directory the fault FS has not seen made is durable, as a store's directory made long ago is.
func newFaultFS(t *testing.T, fsy fsys.FS, dir string) *faultfs.FS {
	t.Helper()
	require.NoError(t, fsy.MkdirAll(dir, 0o755))
	ffs := faultfs.New(fsy, 1)
	t.Cleanup(func() { ffs.Release() })
	return ffs
}

// crashImage is what ffs's crash (or a crash now) leaves in mode.
func crashImage(t *testing.T, ffs *faultfs.FS, mode faultfs.Mode) fsys.FS {
	t.Helper()
	img, err := ffs.CrashImage(mode)
	require.NoError(t, err)
	return img
}

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

var powerLossModes = []faultfs.Mode{faultfs.PowerLossKeep, faultfs.PowerLossDrop, faultfs.PowerLossTorn, faultfs.PowerLoss}

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
		_, err = l.ApplyRetention(testEpoch)
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

// noSpaceBatchSize is the size of the batch the no-space tests append, and noSpaceWritten the
// bytes of it that reach the file before the disk is full.
const (
	noSpaceBatchSize = 200
	noSpaceWritten   = 37
)

// noSpaceRecord returns record i of a batch that encodes to exactly noSpaceBatchSize bytes on
// its own.
func noSpaceRecord(t *testing.T, i int) *Record {
	t.Helper()
	for n := range noSpaceBatchSize {
		r := &Record{Key: fmt.Appendf(nil, "k%06d", i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, n),
			Timestamp: testEpoch.Add(time.Duration(i) * time.Millisecond)}
		if len(encodeBatch(t, 0, []*Record{r})) == noSpaceBatchSize {
			return r
		}
	}
	t.Fatalf("no record encodes to a %d-byte batch", noSpaceBatchSize)
	return nil
}

// logMemState is the in-memory state of a log that a failed write must leave as it was.
type logMemState struct {
	leo, size, segments                             int64
	activeSize, next, maxTs, offMaxTs, rollTs, base int64
	sinceIndex                                      int
	offsetEntries                                   [][2]int64
	timeEntries                                     [][2]int64
}

func memState(l *Log) logMemState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.active().State()
	st := logMemState{segments: int64(len(l.segments)), activeSize: s.Size, next: s.NextOffset,
		maxTs: s.MaxTimestamp, offMaxTs: s.OffsetOfMaxTimestamp, rollTs: s.RollTimestamp,
		base: l.active().BaseOffset(), sinceIndex: s.BytesSinceIndex}
	st.offsetEntries = s.OffsetEntries
	st.timeEntries = s.TimeEntries
	st.leo = s.NextOffset
	for _, seg := range l.segments {
		st.size += seg.Size()
	}
	return st
}

func TestNoSpaceMidWrite(t *testing.T) {
	// Each way of appending, on a segment with room and on one that rolls first; the disk
	// fills after 37 bytes of the 200-byte batch, once, then has space again.
	appendKinds := []struct {
		name string
		do   func(t *testing.T, l *Log, recs []*Record) error
	}{
		{"Append", func(t *testing.T, l *Log, recs []*Record) error { return l.Append(context.Background(), recs...) }},
		{"AppendAsLeader", func(t *testing.T, l *Log, recs []*Record) error {
			_, _, err := l.AppendAsLeader(context.Background(), encodeBatch(t, 0, recs))
			return err
		}},
		{"AppendAsFollower", func(t *testing.T, l *Log, recs []*Record) error {
			_, err := l.AppendAsFollower(context.Background(), encodeBatch(t, l.LogEndOffset(), recs))
			return err
		}},
	}
	for _, kind := range appendKinds {
		for _, roll := range []bool{false, true} {
			name := kind.name
			if roll {
				name += "/at a roll"
			}
			t.Run(name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					dir := t.TempDir()
					ffs := newFaultFS(t, fsy, dir)
					cfg := baseConfig()
					cfg.IndexIntervalBytes = 300 // index entries come and go with the batches
					if roll {
						cfg.SegmentBytes = 5 * noSpaceBatchSize
					}
					l := openTestLog(t, ffs, dir, cfg)
					var want []*Record
					for i := range 5 {
						r := noSpaceRecord(t, i)
						require.NoError(t, kind.do(t, l, []*Record{r}))
						want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
					}
					require.Equal(t, int64(5), l.LogEndOffset())
					require.Equal(t, int64(5*noSpaceBatchSize), l.Size())
					before := memState(l)
					require.Equal(t, int64(1), before.segments)
					log0 := segPath(dir, 0, logSuffix)
					fileSize := fsFileSize(t, fsy, log0)

					ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Write, logSuffix),
						faultfs.Fault{Err: syscall.ENOSPC, Written: noSpaceWritten}))
					n := len(ffs.Ops())
					err := kind.do(t, l, []*Record{noSpaceRecord(t, 5)})
					require.ErrorIs(t, err, ErrNoSpace)
					require.ErrorIs(t, err, syscall.ENOSPC)
					require.NotErrorIs(t, err, ErrSync)

					// The write that failed was the whole batch; what it left is cut off.
					var failedWrite *faultfs.Op
					for _, op := range ffs.Ops()[n:] {
						if op.Kind == faultfs.Write && op.Injected {
							failedWrite = &op
						}
					}
					require.NotNil(t, failedWrite)
					require.Equal(t, noSpaceBatchSize, failedWrite.Len)
					after := memState(l)
					if roll {
						// The roll before the write sealed segment 0 and began an empty one at 5.
						require.Equal(t, segPath(dir, 5, logSuffix), failedWrite.Path)
						require.Equal(t, int64(0), fsFileSize(t, fsy, segPath(dir, 5, logSuffix)))
						require.Equal(t, logMemState{leo: 5, size: before.size, segments: 2, next: 5, base: 5,
							maxTs: -1, offMaxTs: -1, rollTs: -1}, after)
					} else {
						require.Equal(t, log0, failedWrite.Path)
						require.Equal(t, before, after, "the in-memory state is as before the call")
					}
					require.Equal(t, fileSize, fsFileSize(t, fsy, log0))
					requireSameRecords(t, want, readAllRecords(t, l))
					requireIndexesWithin(t, l)

					// Space is back: the next appends go at the same offset.
					for i := 5; i < 8; i++ {
						require.NoError(t, kind.do(t, l, []*Record{noSpaceRecord(t, i)}))
						want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
					}
					requireSameRecords(t, want, readAllRecords(t, l))

					// A power loss keeps every acknowledged record, and no ErrCorrupt lies
					// between them.
					for _, mode := range powerLossModes {
						crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg)
						require.Equal(t, int64(8), crashed.LogEndOffset(), "%s", mode)
						requireSameRecords(t, want, readAllRecords(t, crashed))
						require.NoError(t, crashed.Close())
					}
					require.NoError(t, l.Close())
					l = openTestLog(t, ffs, dir, cfg)
					require.Equal(t, int64(8), l.LogEndOffset())
					requireSameRecords(t, want, readAllRecords(t, l))
				})
			})
		}
	}
}

func TestNoSpaceCleanupFails(t *testing.T) {
	// The disk fills mid-write and the truncation that would cut the partial batch off fails
	// too: the file's end is unknown, so the log refuses writes until reopened, and the reopen
	// cuts the partial batch as a torn tail.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, baseConfig())
		var want []*Record
		for i := range 3 {
			require.NoError(t, l.Append(context.Background(), noSpaceRecord(t, i)))
			want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
		}
		fault := map[faultfs.Kind]faultfs.Fault{
			faultfs.Write:    {Err: syscall.ENOSPC, Written: noSpaceWritten},
			faultfs.Truncate: {Err: syscall.EIO},
		}
		ffs.Inject(func(op faultfs.Op) *faultfs.Fault {
			if f, ok := fault[op.Kind]; ok && strings.HasSuffix(op.Path, logSuffix) {
				delete(fault, op.Kind)
				return &f
			}
			return nil
		})
		err := l.Append(context.Background(), noSpaceRecord(t, 3))
		require.ErrorIs(t, err, ErrNoSpace)
		require.Empty(t, fault, "both faults were injected")
		log0 := segPath(dir, 0, logSuffix)
		require.Equal(t, int64(3*noSpaceBatchSize+noSpaceWritten), fsFileSize(t, fsy, log0))

		err = l.Append(context.Background(), noSpaceRecord(t, 3))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		require.Equal(t, int64(3), l.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, l))
		require.NoError(t, l.Close())

		l = openTestLog(t, ffs, dir, baseConfig())
		require.Equal(t, int64(3), l.LogEndOffset())
		require.Equal(t, int64(3*noSpaceBatchSize), fsFileSize(t, fsy, log0))
		require.NoError(t, l.Append(context.Background(), noSpaceRecord(t, 3)))
		want = append(want, withOffsets([]*Record{noSpaceRecord(t, 3)}, 3)...)
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
		requireNoErrs(t, errs)
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
