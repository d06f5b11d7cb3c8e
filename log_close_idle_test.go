package commitlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// TestLogCloseIdleActiveSegment: closing a log whose active segment's files the file cache
// closed while idle syncs the .log file and the indexes trimmed at that close by name (opened
// read-only, synced, closed), without opening the segment's files again or mapping its indexes;
// what a power loss then leaves holds every record and the same offset index.
func TestLogCloseIdleActiveSegment(t *testing.T) {
	fsy := fsys.NewMemory()
	dir := "log"
	ffs := newFaultFS(t, fsy, dir)
	cfg := baseConfig()
	cfg.IndexIntervalBytes = 256
	l := openTestLog(t, ffs, dir, cfg, WithSync(SyncNever), WithMaxOpenFiles(cacheLimit))
	want := appendBatches(t, l, 10, 3)
	act := l.active()
	entries := act.State().OffsetEntries
	require.NotEmpty(t, entries)
	closed, err := act.CloseIdle()
	require.NoError(t, err)
	require.True(t, closed)

	from := len(ffs.Ops())
	require.NoError(t, l.Close())
	synced := map[string]int{}
	base := filepath.Base(act.Path(".log"))
	stem := strings.TrimSuffix(base, ".log")
	for _, op := range ffs.Ops()[from:] {
		name := filepath.Base(op.Path)
		if !strings.HasPrefix(name, stem+".") {
			continue
		}
		switch op.Kind {
		case faultfs.Map, faultfs.Truncate, faultfs.Allocate, faultfs.Write:
			t.Errorf("close: %s of %s", op.Kind, name)
		case faultfs.OpenFile:
			require.Equal(t, os.O_RDONLY, op.Flag, "close opens %s", name)
		case faultfs.Sync:
			synced[name]++
		}
	}
	require.Equal(t, map[string]int{stem + ".log": 1, stem + ".index": 1, stem + ".timeindex": 1}, synced)

	img := crashImage(t, ffs, faultfs.PowerLossDrop)
	l = openTestLog(t, img, dir, cfg, WithSync(SyncNever))
	require.Equal(t, entries, l.active().State().OffsetEntries)
	got, err := l.ReadRecords(0, 1<<20)
	require.NoError(t, err)
	requireSameRecords(t, want, got)
}
