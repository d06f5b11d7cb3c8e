package commitlog

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// After a clean close a log whose active segment holds no more than index.interval.bytes opens
// with that segment's files closed (its indexes unopened, as Kafka's LazyIndex); the first read
// opens them, and reads, offset-for-time lookups and appends see exactly the log that was closed.
func TestLogCleanReopenLeavesSmallActiveSegmentClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "log")
		l := openTestLog(t, fsy, dir, LogConfig{})
		for i := range 3 {
			require.NoError(t, l.Append(context.Background(), workloadRecord(i)))
		}
		require.NoError(t, l.Close())

		for round, want := range []int64{3, 4, 5} { // each close adds a time index entry
			l = openTestLog(t, fsy, dir, LogConfig{})
			active := l.active()
			require.False(t, active.FilesOpen(), "round %d: the active segment's files opened by the load", round)
			require.Equal(t, want, l.LogEndOffset())
			off, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + want - 1))
			require.NoError(t, err)
			require.Equal(t, want-1, off)
			recs, err := l.ReadRecords(0, 1<<20)
			require.NoError(t, err)
			require.Len(t, recs, int(want))
			for i, r := range recs {
				require.Equal(t, int64(i), r.Offset)
				require.Equal(t, workloadRecord(i).Value, r.Value)
			}
			require.True(t, active.FilesOpen())
			require.NoError(t, l.Append(context.Background(), workloadRecord(int(want))))
			require.Equal(t, want+1, l.LogEndOffset())
			require.NoError(t, l.Close())
		}
	})
}
