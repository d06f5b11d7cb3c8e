package commitlog

import (
	"strings"
	"testing"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// TestLogCloseKeepsCurrentSnapshot: a clean close writes the producer snapshot at the log end
// offset; a close after a clean reopen with nothing appended finds that snapshot durable and of
// the same state and writes none, as Kafka's takeSnapshot takes none unless the log end offset
// moved past the latest snapshot's; after an append the next close writes one again. Every
// reopen reads the producer state back whole.
func TestLogCloseKeepsCurrentSnapshot(t *testing.T) {
	fsy := fsys.NewMemory()
	dir := "log"
	ffs := newFaultFS(t, fsy, dir)
	cfg := baseConfig()
	open := func() *Log { return openTestLog(t, ffs, dir, cfg, WithSync(SyncNever)) }
	snapshotWrites := func(from int) []string {
		var names []string
		for _, op := range ffs.Ops()[from:] {
			if op.Kind == faultfs.OpenFile && strings.HasSuffix(op.Path, ".snapshot.tmp") {
				names = append(names, op.Path[len(dir)+1:])
			}
		}
		return names
	}
	l := open()
	mustAppendRaw(t, l, pidBatch(t, 7, 0, 0, false, workloadRecords(0, 5)))
	want := l.Producers()
	require.Len(t, want, 1)
	from := len(ffs.Ops())
	require.NoError(t, l.Close())
	require.Equal(t, []string{"00000000000000000005.snapshot.tmp"}, snapshotWrites(from))

	for range 2 {
		l = open()
		require.Equal(t, want, l.Producers())
		from = len(ffs.Ops())
		require.NoError(t, l.Close())
		require.Empty(t, snapshotWrites(from), "the snapshot at offset 5 is current")
	}

	l = open()
	mustAppendRaw(t, l, pidBatch(t, 7, 0, 5, false, workloadRecords(5, 5)))
	want = l.Producers()
	from = len(ffs.Ops())
	require.NoError(t, l.Close())
	require.Equal(t, []string{"00000000000000000010.snapshot.tmp"}, snapshotWrites(from))
	l = open()
	require.Equal(t, want, l.Producers())
	require.Equal(t, int64(9), want[0].LastOffset)
}
