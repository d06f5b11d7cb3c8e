package commitlog

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestTruncateTo(t *testing.T) {
	// Four segments of three batches of 10 records: [0,30) [30,60) [60,90) [90,120).
	tests := []struct {
		name     string
		offset   int64
		leo      int64
		segments []int64
		err      error
	}{
		{"inside a batch of the active segment", 105, 100, []int64{0, 30, 60, 90}, nil},
		{"at a batch boundary of the active segment", 110, 110, []int64{0, 30, 60, 90}, nil},
		{"at the active segment's base", 90, 90, []int64{0, 30, 60, 90}, nil},
		{"at a sealed segment's base", 60, 60, []int64{0, 30, 60}, nil},
		{"inside a batch of a sealed segment", 45, 40, []int64{0, 30}, nil},
		{"inside the first batch", 3, 0, []int64{0}, nil},
		{"to zero", 0, 0, []int64{0}, nil},
		{"at the log end offset changes nothing", 120, 120, []int64{0, 30, 60, 90}, nil},
		{"past the log end offset changes nothing", 1000, 120, []int64{0, 30, 60, 90}, nil},
		{"below the log start offset", -1, 120, []int64{0, 30, 60, 90}, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
				appendBatches(t, probe, 1, 10)
				b := probe.Size()
				require.NoError(t, probe.Close())

				cfg := baseConfig()
				cfg.SegmentBytes = 3 * b
				cfg.IndexIntervalBytes = 1
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				want := appendBatches(t, l, 12, 10)
				require.Equal(t, []int64{0, 30, 60, 90}, segmentBases(l))

				err := l.TruncateTo(tt.offset)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, tt.leo, l.LogEndOffset())
				require.Equal(t, tt.segments, segmentBases(l))
				require.Equal(t, tt.segments, logFileBases(t, fsy, dir))
				for _, name := range fsListDir(t, fsy, dir) {
					for _, suf := range []string{indexSuffix, timeIndexSuffix} {
						if base, ok := parseSegmentName(name, suf); ok {
							require.Contains(t, tt.segments, base, "index file %s of a removed segment", name)
						}
					}
				}
				last := tt.segments[len(tt.segments)-1]
				require.Equal(t, (tt.leo-last)/10*b, fsFileSize(t, fsy, segPath(dir, last, logSuffix)))
				require.Equal(t, tt.leo/10*b, l.Size())
				requireIndexesWithin(t, l)
				requireSameRecords(t, want[:tt.leo], readAllRecords(t, l))
				_, err = l.ReadBatches(nil, tt.leo+1, 1<<20)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)

				// Appending continues at the new log end offset, and a reopen keeps all of it.
				more := workloadRecords(500, 10)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, tt.leo, more[0].Offset)
				want = append(want[:tt.leo:tt.leo], withOffsets(workloadRecords(500, 10), tt.leo)...)
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tt.leo+10, l.LogEndOffset())
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
			})
		})
	}
}

func TestTruncateToCrashRecovery(t *testing.T) {
	// A crash after a truncation (the log killed while open) must not bring the removed records
	// back, nor lose the ones appended after it.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 4000
		cfg.IndexIntervalBytes = 1
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		want := appendBatches(t, l, 12, 10)
		require.Greater(t, l.SegmentCount(), 2)
		require.NoError(t, l.TruncateTo(25))
		require.Equal(t, int64(20), l.LogEndOffset())
		more := appendBatches(t, l, 2, 10)
		want = append(want[:20:20], more...)
		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, fsy, dir, crash)
		require.NoError(t, l.Close())

		l = openTestLog(t, fsy, crash, cfg)
		require.Equal(t, int64(40), l.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, l))
	})
}

// TestTruncateToLowersHighWatermarkOfOldStateFile: a log opened on its own whose state checkpoint
// holds an earlier version's replication lines (see TestRetentionStopsAtHighWatermarkOfOldStateFile)
// keeps their high watermark within the log when TruncateTo cuts below it, as when the log kept
// the high watermark itself: the state written after holds the cut, so that the partition never
// reopens readable past it, over records appended after the cut.
func TestTruncateToLowersHighWatermarkOfOldStateFile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir() + "/log"
		l := openTestLog(t, fsy, dir, baseConfig())
		for i := 0; i < 30; i += 10 {
			require.NoError(t, l.Append(ctx, workloadRecords(i, 10)...))
		}
		require.NoError(t, l.Close())
		addOldReplicationLines(t, fsy, dir, 20, 1)

		l = openTestLog(t, fsy, dir, baseConfig())
		require.NoError(t, l.TruncateTo(10))
		require.Equal(t, int64(10), l.LogEndOffset())
		require.NoError(t, l.Append(ctx, workloadRecords(10, 20)...))
		require.NoError(t, l.Close())
		b, err := checkpoint.Read(fsy, filepath.Join(dir, stateFileName))
		require.NoError(t, err)
		require.Equal(t, "log-start-offset 0\nrecovery-point 30\nclean-shutdown 1\nhigh-watermark 10\nleader-epoch 1\n", string(b))
	})
}
