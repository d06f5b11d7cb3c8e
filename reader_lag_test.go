package commitlog

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReaderLagAfterRetention: once retention has deleted the segments below a reader's
// position, Lag counts what is left to read, high watermark − log start offset, never the
// records deleted; Positions still says where the reader stands. Reading on (ResetEarliest
// moves to the log start offset) brings it down one record at a time.
func TestReaderLagAfterRetention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset ResetPolicy
	}{{"reset-none", ResetNone}, {"reset-earliest", ResetEarliest}} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1))
				// One 70-byte batch per segment; retention keeps the newest 280 bytes, 4 segments.
				tp := stCreate(t, s, "events", TopicConfig{LogConfig: LogConfig{SegmentBytes: 100, RetentionBytes: 280, RetentionDuration: -1}})
				for i := range 10 {
					require.NoError(t, tp.Append(ctx, stRecs("v"+strconv.Itoa(i))...))
				}
				p := stMust(tp.Partition(0))
				r := stReader(t, tp, ReaderConfig{Start: Earliest, Reset: tc.reset})
				stNextN(t, r, 2)
				require.Equal(t, map[int32]int64{0: 8}, r.Lag())

				n, err := s.ApplyRetention()
				require.NoError(t, err)
				require.Equal(t, 6, n)
				require.Equal(t, int64(6), p.LogStartOffset())
				require.Equal(t, int64(10), p.HighWatermark())
				require.Equal(t, map[int32]int64{0: 2}, r.Positions())
				require.Equal(t, map[int32]int64{0: 4}, r.Lag())

				if tc.reset == ResetNone {
					_, err := r.Next(ctx)
					require.ErrorIs(t, err, ErrOffsetOutOfRange)
					require.Equal(t, map[int32]int64{0: 4}, r.Lag())
					return
				}
				require.Equal(t, []stSeen{{0, 6, "v6"}}, stSeenOf(stNextN(t, r, 1)))
				require.Equal(t, map[int32]int64{0: 3}, r.Lag())
			})
		})
	}
}
