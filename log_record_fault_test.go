package commitlog

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestReadRecordFileCutOutside(t *testing.T) {
	// Something other than the log cuts the segment file under its mapping: reading a record
	// whose pages are gone is an error of that read (a fault of the mapping, or a short pread
	// under commitlog_nommap), not a crash, and the log's own records before are unharmed.
	dir := t.TempDir()
	cfg := baseConfig()
	cfg.Sync = SyncNever
	l := openTestLog(t, fsys.OS(), dir, cfg)
	for i := range 20 {
		require.NoError(t, l.Append(context.Background(), workloadRecords(i*100, 100)...))
	}
	var r Record
	require.NoError(t, l.ReadRecord(5, &r))
	require.Equal(t, int64(5), r.Offset)
	require.Equal(t, workloadRecord(5).Value, r.Value)

	require.NoError(t, os.Truncate(segPath(dir, 0, logSuffix), 0))
	err := l.ReadRecord(1950, &r)
	require.ErrorContains(t, err, segPath(dir, 0, logSuffix))
	require.NotErrorIs(t, err, ErrOffsetOutOfRange)
}
