package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Tests of the staging group commit (log_stage.go). The first ones drive the stage by hand: a
// log under SyncAlways whose last fsync covered several appends (lastRound > 1) stages the
// appends that will wait for durability, as it does under contention, and awaitDurable (the
// group commit's leader) writes them out. The later ones run many SyncAlways appenders at once:
// under a filling disk, against readers, Syncs and Close, and counting the fsyncs they share.

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

// TestNoSpaceUnderContention: SyncAlways appenders contend (staging) while the disk fills
// now and then; after a power loss, exactly the acknowledged records are in the log, each once.
func TestNoSpaceUnderContention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		cfg := baseConfig()
		cfg.Sync = SyncAlways
		cfg.SegmentBytes = 32 << 10
		l := openTestLog(t, ffs, dir, cfg)
		ctx := context.Background()
		var mu sync.Mutex
		acked := map[int64]string{}
		failed := 0
		var wg sync.WaitGroup
		for w := range 10 {
			wg.Go(func() {
				for i := range 80 {
					if w == 0 && i%10 == 5 {
						ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Write, logSuffix), faultfs.Fault{Err: syscall.ENOSPC, Written: 50}))
					}
					r := rvRecord(w, i)
					err := l.Append(ctx, r)
					mu.Lock()
					if err != nil {
						if !errors.Is(err, ErrNoSpace) {
							t.Errorf("append: %v", err)
						}
						failed++
					} else {
						if k, ok := acked[r.Offset]; ok {
							t.Errorf("offset %d acked twice: %s %s", r.Offset, k, r.Key)
						}
						acked[r.Offset] = string(r.Key)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("%d acked, %d failed", len(acked), failed)
		require.Equal(t, int64(len(acked)), l.LogEndOffset())
		for _, mode := range powerLossModes {
			crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg)
			require.Equal(t, int64(len(acked)), crashed.LogEndOffset(), mode)
			var r Record
			for off, key := range acked {
				require.NoError(t, crashed.ReadRecord(off, &r))
				require.Equal(t, key, string(r.Key))
			}
			require.NoError(t, crashed.Close())
		}
	})
}

// rvRecord is a record whose key and value name its writer and sequence.
func rvRecord(w, i int) *Record {
	return &Record{Key: fmt.Appendf(nil, "w%02d-%06d", w, i), Value: fmt.Appendf(nil, "value-of-w%02d-%06d-padding-padding", w, i),
		Headers: []Header{{Key: "w", Value: fmt.Appendf(nil, "%d", w)}}}
}

// TestStagedAppendsStress: many SyncAlways appenders, readers at the log end, Syncs, and a
// Close at the end; every acknowledged append must be found, after reopen, at its offset.
func TestStagedAppendsStress(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := baseConfig()
		cfg.SegmentBytes = 16 << 10
		cfg.Sync = SyncAlways
		l := openTestLog(t, fsy, dir, cfg)
		ctx := context.Background()
		const writers, per = 12, 150
		type ack struct {
			off int64
			key string
		}
		acks := make(chan ack, writers*per)
		var wg sync.WaitGroup
		var stop atomic.Bool
		errs := make(chan error, 100)
		for w := range writers {
			wg.Go(func() {
				for i := range per {
					r := rvRecord(w, i)
					if err := l.Append(ctx, r); err != nil {
						errs <- fmt.Errorf("append w%d %d: %w", w, i, err)
						return
					}
					acks <- ack{r.Offset, string(r.Key)}
				}
			})
		}
		var rg sync.WaitGroup
		for g := range 3 {
			rg.Go(func() {
				var r Record
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for !stop.Load() {
					leo := l.LogEndOffset()
					if leo == 0 {
						continue
					}
					off := leo - 1 - rng.Int64N(min(leo, 20))
					if err := l.ReadRecord(off, &r); err != nil {
						errs <- fmt.Errorf("read %d (leo %d): %w", off, leo, err)
						return
					}
					if r.Offset != off {
						errs <- fmt.Errorf("read %d got %d", off, r.Offset)
						return
					}
				}
			})
		}
		rg.Go(func() {
			for !stop.Load() {
				if err := l.Sync(); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		stop.Store(true)
		rg.Wait()
		close(acks)
		requireNoErrs(t, errs)
		t.Logf("fsyncs %d for %d appends", l.gc.fsyncs.Load(), writers*per)
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		require.Equal(t, int64(writers*per), l.LogEndOffset())
		seen := map[int64]bool{}
		var r Record
		for a := range acks {
			require.False(t, seen[a.off], "offset %d acknowledged twice", a.off)
			seen[a.off] = true
			require.NoError(t, l.ReadRecord(a.off, &r))
			require.Equal(t, a.key, string(r.Key))
		}
	})
}

// TestStagedAppendsVsClose: Close while many SyncAlways appenders are staging must not
// deadlock, and every acknowledged append must survive the reopen.
func TestStagedAppendsVsClose(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			fsy := fsys.NewMemory()
			dir := "/log"
			cfg := baseConfig()
			cfg.SegmentBytes = 8 << 10
			cfg.Sync = SyncAlways
			l, err := OpenLog(dir, cfg, withFS(fsy), WithClock(fixedClock))
			require.NoError(t, err)
			ctx := context.Background()
			var mu sync.Mutex
			acked := map[int64]string{}
			var wg sync.WaitGroup
			var n atomic.Int64
			for w := range 16 {
				wg.Go(func() {
					for i := 0; ; i++ {
						r := rvRecord(w, i)
						if err := l.Append(ctx, r); err != nil {
							if !errors.Is(err, ErrClosed) {
								t.Errorf("append: %v", err)
							}
							return
						}
						n.Add(1)
						mu.Lock()
						if k, ok := acked[r.Offset]; ok {
							t.Errorf("offset %d acked for %s and %s", r.Offset, k, r.Key)
						}
						acked[r.Offset] = string(r.Key)
						mu.Unlock()
					}
				})
			}
			for n.Load() < int64(200+round*20) {
			}
			if round%2 == 0 {
				_, err := l.ApplyRetentionAt(testEpoch) // drains the stage
				require.NoError(t, err)
			}
			require.NoError(t, l.Close())
			wg.Wait()
			l, err = OpenLog(dir, cfg, withFS(fsy), WithClock(fixedClock))
			require.NoError(t, err)
			defer l.Close()
			var r Record
			for off, key := range acked {
				require.NoError(t, l.ReadRecord(off, &r), "offset %d", off)
				require.Equal(t, key, string(r.Key))
			}
		})
	}
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
		// Armed by the first append acknowledged at offset 40 or past it: well over 100 appends
		// are still to come then, so the next fsync fails with appends waiting on it.
		var armOnce sync.Once
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					r := workloadRecord(g*20 + i)
					err := l.Append(context.Background(), r)
					mu.Lock()
					if err == nil {
						acked = append(acked, r.Offset)
						if r.Offset >= 40 {
							armOnce.Do(func() { ffs.arm(1, 0) })
						}
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
