package commitlog

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// timedLog appends, one record per batch or several, records whose timestamps rise, tie and
// fall, over several segments, and returns each record's timestamp by offset.
func timedLog(t *testing.T, l *Log) []int64 {
	t.Helper()
	pattern := [][]int64{
		{10}, {20, 20}, {20}, {15, 30}, {5}, {30}, {40, 35, 45}, {45}, {44}, {60}, {50, 55},
		{60}, {70, 10}, {10}, {80}, {75}, {79, 81}, {100}, {90}, {90, 99, 101}, {200}, {150},
	}
	var ts []int64
	for _, call := range pattern {
		var recs []*Record
		for _, m := range call {
			r := workloadRecord(len(ts) + len(recs))
			r.Timestamp = testEpoch.Add(time.Duration(m) * time.Millisecond)
			recs = append(recs, r)
		}
		require.NoError(t, l.Append(context.Background(), recs...))
		ts = append(ts, call...)
	}
	return ts
}

// bruteForceOffsetForTime is the first offset, in offset order, whose timestamp is >= ts, or
// -1.
func bruteForceOffsetForTime(ts []int64, t int64) int64 {
	for off, v := range ts {
		if v >= t {
			return int64(off)
		}
	}
	return -1
}

// requireOffsetForTime checks an OffsetForTime answer: want, or -1 with ErrNoOffsetForTime.
func requireOffsetForTime(t *testing.T, want, got int64, err error, msgAndArgs ...any) {
	t.Helper()
	if want < 0 {
		require.ErrorIs(t, err, ErrNoOffsetForTime, msgAndArgs...)
	} else {
		require.NoError(t, err, msgAndArgs...)
	}
	require.Equal(t, want, got, msgAndArgs...)
}

func TestOffsetForTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 1000 // about 5 small batches per segment
		cfg.IndexIntervalBytes = 1
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		ts := timedLog(t, l)
		require.Greater(t, l.SegmentCount(), 3)
		end := l.LogEndOffset()
		require.Equal(t, int64(len(ts)), end)

		// A few answers worked out by hand from the pattern.
		hand := []struct {
			ms   int64
			want int64
		}{
			{math.MinInt64, 0}, {0, 0}, {10, 0}, {11, 1}, {20, 1}, {21, 5}, {30, 5},
			{31, 8}, {45, 10}, {46, 13}, {61, 17}, {101, 28}, {102, 29}, {150, 29}, {151, 29},
			{200, 29}, {201, -1}, {math.MaxInt64, -1},
		}
		check := func() {
			t.Helper()
			for _, h := range hand {
				got, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + h.ms))
				if h.ms == math.MinInt64 || h.ms == math.MaxInt64 {
					got, err = l.OffsetForTime(time.UnixMilli(h.ms))
				}
				requireOffsetForTime(t, h.want, got, err, "ts %d", h.ms)
			}
			for ms := int64(-2); ms <= 202; ms++ {
				got, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + ms))
				requireOffsetForTime(t, bruteForceOffsetForTime(ts, ms), got, err, "ts %d", ms)
			}
		}
		check()
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		check()
	})
}

// TestOffsetForTimeOverACorruptBatchNamesItsOffset: OffsetForTime reaching a corrupt batch kept
// in place returns ErrCorrupt naming the batch's file, position and first offset, as a read of it
// does, not the offset the search started from. threeSegmentLog, records at testEpoch + offset
// ms; the CRC of the batch [40,50) at position b of segment 30 is flipped after the clean close.
func TestOffsetForTimeOverACorruptBatchNamesItsOffset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg, _, b := threeSegmentLog(t, fsy, dir)
		logFile := segPath(dir, 30, logSuffix)
		flipByte(t, fsy, logFile, b+17)
		l := openTestLog(t, fsy, dir, cfg)
		_, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + 45))
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset 40)", logFile, b))
	})
}

// TestOffsetForTimeNotFound: for a time past every record's timestamp, and in an empty log,
// Log.OffsetForTime and Partition.OffsetForTime return -1 and ErrNoOffsetForTime, as Kafka's
// ListOffsets answers offset -1 and timestamp -1; a time at or before a record finds it. A
// Reader starting AtTime, or seeking with SeekToTime, past every record is positioned at the
// high watermark, to read what is appended next.
func TestOffsetForTimeNotFound(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "events", TopicConfig{})
		p := stMust(tp.Partition(0))

		off, err := p.OffsetForTime(stEpoch)
		require.ErrorIs(t, err, ErrNoOffsetForTime, "empty log")
		require.Equal(t, int64(-1), off)
		off, err = p.log.OffsetForTime(stEpoch)
		require.ErrorIs(t, err, ErrNoOffsetForTime, "empty log")
		require.Equal(t, int64(-1), off)

		// Timestamps stEpoch, +1 s, +2 s at offsets 0, 1, 2.
		require.NoError(t, tp.Append(ctx, stRecs("a", "b", "c")...))
		for _, tc := range []struct {
			at   time.Time
			want int64 // -1: ErrNoOffsetForTime
		}{
			{stEpoch.Add(-time.Hour), 0},
			{stEpoch, 0},
			{stEpoch.Add(time.Millisecond), 1},
			{stEpoch.Add(2 * time.Second), 2},
			{stEpoch.Add(2*time.Second + time.Millisecond), -1},
			{stEpoch.Add(time.Hour), -1},
		} {
			for name, find := range map[string]func(time.Time) (int64, error){"events-0": p.log.OffsetForTime, "topic events partition 0": p.OffsetForTime} {
				off, err := find(tc.at)
				require.Equal(t, tc.want, off, "%s %s", name, tc.at)
				if tc.want < 0 {
					require.ErrorIs(t, err, ErrNoOffsetForTime, "%s %s", name, tc.at)
					require.ErrorContains(t, err, name)
				} else {
					require.NoError(t, err, "%s %s", name, tc.at)
				}
			}
		}

		past := stEpoch.Add(time.Hour)
		r := stReader(t, tp, ReaderConfig{Start: AtTime, StartTime: past})
		require.Equal(t, map[int32]int64{0: 3}, r.Positions())
		r2 := stReader(t, tp, ReaderConfig{Start: Earliest})
		require.NoError(t, r2.SeekToTime(past))
		require.Equal(t, map[int32]int64{0: 3}, r2.Positions())
		require.NoError(t, r2.SeekToTime(stEpoch.Add(time.Second)))
		require.Equal(t, map[int32]int64{0: 1}, r2.Positions())

		require.NoError(t, tp.Append(ctx, &Record{Value: []byte("d"), Timestamp: past.Add(time.Hour)}))
		require.Equal(t, []stSeen{{0, 3, "d"}}, stSeenOf(stNextN(t, r, 1)))
	})
}
