package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

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

// TestReadRecordFileCacheAndRetention: reads through a small open-file cache while
// retention removes and appends roll.
func TestReadRecordFileCacheRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 4 << 10
		cfg.RetentionBytes = 64 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithMaxOpenFiles(6))
		ctx := context.Background()
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		wg.Go(func() {
			defer stop.Store(true)
			for i := range 3000 {
				if err := l.Append(ctx, workloadRecords(i*3, 3)...); err != nil {
					errs <- err
					return
				}
				if i%50 == 49 {
					if _, err := l.ApplyRetentionAt(testEpoch); err != nil {
						errs <- err
						return
					}
				}
			}
		})
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 3))
				var r Record
				for !stop.Load() {
					start, leo := l.LogStartOffset(), l.LogEndOffset()
					if leo <= start {
						continue
					}
					off := start + rng.Int64N(leo-start)
					err := l.ReadRecord(off, &r)
					if errors.Is(err, ErrOffsetOutOfRange) || errors.Is(err, ErrNoRecordYet) {
						continue // a truncation cut the log below off meanwhile
					}
					if err != nil {
						errs <- fmt.Errorf("read %d: %w", off, err)
						return
					}
					w := workloadRecord(int(off))
					if r.Offset != off || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) {
						errs <- fmt.Errorf("read %d: got %d %q", off, r.Offset, r.Key)
						return
					}
				}
			})
		}
		wg.Wait()
		requireNoErrs(t, errs)
	})
}
