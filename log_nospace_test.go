package commitlog

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// A full disk is an error of the append that met it, never of the log: the append returns
// ErrNoSpace, nothing of it is written, and once space returns the next append succeeds without
// a reopen. These tests fill the disk at each step that needs space: the .log write
// (faults_test.go), the growth of an index; log_nospace_linux_test.go fills a real size-limited tmpfs.

func TestNoSpaceIndexGrowth(t *testing.T) {
	// Every batch gets an index entry; the index reserves disk space a chunk at a time ahead of
	// its entries. From the segment's creation on, the disk is full for that index: the appends
	// whose entries fit the space reserved go through, and the first one that needs more returns
	// ErrNoSpace with nothing written. Space back, the next append takes its entry.
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		t.Run(suffix, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				ffs := newFaultFS(t, fsy, dir)
				cfg := LogConfig{SegmentIndexBytes: 1 << 20, IndexIntervalBytes: 1, Sync: SyncNever}
				l := openTestLog(t, ffs, dir, cfg)
				stopTestFlusher(l)
				var want []*Record
				ctx := context.Background()
				ffs.Inject(faultfs.Always(faultfs.Is(faultfs.Allocate, suffix), faultfs.Fault{Err: syscall.ENOSPC}))
				// The space reserved with the segment holds this many entries' appends: the first
				// batch has no entry, and the time index keeps a slot for the roll's.
				entrySize, spare := 8, 1
				if suffix == timeIndexSuffix {
					entrySize, spare = 12, 2
				}
				fit := 64<<10/entrySize - spare + 2
				for len(want) < fit {
					require.NoError(t, l.Append(ctx, workloadRecord(len(want))), "append %d", len(want))
					want = append(want, withOffsets([]*Record{workloadRecord(len(want))}, int64(len(want)))...)
				}
				st, ops := memState(l), len(ffs.Ops())
				err := l.Append(ctx, workloadRecord(len(want)))
				require.ErrorIs(t, err, ErrNoSpace)
				require.ErrorIs(t, err, syscall.ENOSPC)
				require.NotErrorIs(t, err, ErrSync)
				require.Equal(t, st, memState(l), "the in-memory state is as before the call")
				for _, op := range ffs.Ops()[ops:] {
					require.False(t, op.Kind == faultfs.Write && strings.HasSuffix(op.Path, logSuffix),
						"the .log is not written: %s", op)
				}
				ffs.Inject(nil)
				for range 3 {
					require.NoError(t, l.Append(ctx, workloadRecord(len(want))))
					want = append(want, withOffsets([]*Record{workloadRecord(len(want))}, int64(len(want)))...)
				}
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
				require.NoError(t, l.Close())
				l = openTestLog(t, ffs, dir, cfg)
				require.Equal(t, int64(len(want)), l.LogEndOffset())
				requireSameRecords(t, want, readAllRecords(t, l))
			})
		})
	}
}
