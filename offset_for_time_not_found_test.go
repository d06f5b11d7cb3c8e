package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
