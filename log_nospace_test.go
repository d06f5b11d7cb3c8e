package commitlog

import (
	"context"
	"os"
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
// (faults_test.go), the growth of an index, the creation of a rolled segment's files and the
// claim of spares; log_nospace_linux_test.go fills a real size-limited tmpfs.

// requireNoSpaceAppend appends record i to l with the fault rule r armed, requires ErrNoSpace
// (not ErrSync) and the log's in-memory state unchanged, then disarms the rule.
func requireNoSpaceAppend(t *testing.T, ffs *faultfs.FS, l *Log, i int, r faultfs.Rule) {
	t.Helper()
	before := memState(l)
	n := len(ffs.Ops())
	ffs.Inject(r)
	err := l.Append(context.Background(), noSpaceRecord(t, i))
	ffs.Inject(nil)
	injected := false
	for _, op := range ffs.Ops()[n:] {
		injected = injected || op.Injected
	}
	require.True(t, injected, "the fault was injected:\n%s", faultfs.FormatOps(ffs.Ops()[n:]))
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NotErrorIs(t, err, ErrSync)
	require.Equal(t, before, memState(l), "the in-memory state is as before the call")
}

func TestNoSpaceAtRoll(t *testing.T) {
	// The disk fills while a roll makes the next segment: creating one of its files, growing an
	// index to its preallocated size, mapping it, reserving its first pages, or (under
	// SyncNever, with spares ready) claiming the spares.
	enospc := faultfs.Fault{Err: syscall.ENOSPC}
	// Rules are made per run: Once keeps state.
	once := func(m faultfs.Match) func() faultfs.Rule {
		return func() faultfs.Rule { return faultfs.Once(m, enospc) }
	}
	// A full disk fails the claim of the spares and the creation that follows it alike.
	full := func(ms ...faultfs.Match) func() faultfs.Rule {
		return func() faultfs.Rule {
			return faultfs.Always(func(op faultfs.Op) bool {
				for _, m := range ms {
					if m(op) {
						return true
					}
				}
				return false
			}, enospc)
		}
	}
	cases := []struct {
		name string
		sync SyncPolicy
		rule func() faultfs.Rule
	}{
		{"create .log", SyncAlways, once(createOf(logSuffix))},
		{"create .index", SyncAlways, once(createOf(indexSuffix))},
		{"create .timeindex", SyncAlways, once(createOf(timeIndexSuffix))},
		{"preallocate .index", SyncAlways, once(growthOf(indexSuffix, 8))},
		{"preallocate .timeindex", SyncAlways, once(growthOf(timeIndexSuffix, 12))},
		{"map .index", SyncAlways, once(faultfs.Is(faultfs.Map, indexSuffix))},
		{"reserve .index", SyncAlways, once(faultfs.Is(faultfs.Allocate, indexSuffix))},
		{"reserve .timeindex", SyncAlways, once(faultfs.Is(faultfs.Allocate, timeIndexSuffix))},
		{"claim spare .index", SyncNever, full(renameOf(spareName(indexSuffix)), createOf(""))},
		{"claim spare .log", SyncNever, full(renameOf(spareName(logSuffix)), createOf(""))},
		{"reserve spare .index", SyncNever, once(faultfs.Is(faultfs.Allocate, indexSuffix))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				ffs := newFaultFS(t, fsy, dir)
				cfg := baseConfig()
				cfg.SegmentBytes = 3 * noSpaceBatchSize
				cfg.Sync = c.sync
				l := openTestLog(t, ffs, dir, cfg)
				var want []*Record
				appendOne := func(i int) {
					require.NoError(t, l.Append(context.Background(), noSpaceRecord(t, i)))
					want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
				}
				// Two rolls first: the flusher prepares spares after the first.
				for i := range 7 {
					appendOne(i)
				}
				if c.sync == SyncNever {
					awaitSpares(t, l, ffs) // and the flusher stops: the roll claims them
				}
				for i := 7; i < 9; i++ {
					appendOne(i)
				}
				require.Equal(t, []int64{0, 3, 6}, segmentBases(l))

				// Offset 9 rolls; the roll fails for lack of space.
				requireNoSpaceAppend(t, ffs, l, 9, c.rule())
				require.Equal(t, int64(9), l.LogEndOffset())
				require.Equal(t, []int64{0, 3, 6}, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))

				// Space is back: the roll and the append go through, and the log goes on.
				for i := 9; i < 14; i++ {
					appendOne(i)
				}
				require.Equal(t, []int64{0, 3, 6, 9, 12}, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
				require.NoError(t, l.Close())
				l = openTestLog(t, ffs, dir, cfg)
				require.Equal(t, int64(14), l.LogEndOffset())
				requireSameRecords(t, want, readAllRecords(t, l))
			})
		})
	}
}

// createOf matches the creation of a file whose name ends with suffix.
func createOf(suffix string) faultfs.Match {
	return func(op faultfs.Op) bool {
		return op.Kind == faultfs.OpenFile && op.Flag&os.O_CREATE != 0 && strings.HasSuffix(op.Path, suffix)
	}
}

// growthOf matches the Truncate that grows an index file whose name ends with suffix to its
// preallocated size, baseConfig's SegmentIndexBytes rounded down to whole entries of
// entrySize bytes (the trims at seal and close cut it to the entries in use, far below).
func growthOf(suffix string, entrySize int64) faultfs.Match {
	size := int64(baseConfig().SegmentIndexBytes) / entrySize * entrySize
	return func(op faultfs.Op) bool {
		return op.Kind == faultfs.Truncate && op.Offset == size && strings.HasSuffix(op.Path, suffix)
	}
}

// renameOf matches a rename of a file whose name ends with suffix.
func renameOf(suffix string) faultfs.Match {
	return func(op faultfs.Op) bool { return op.Kind == faultfs.Rename && strings.HasSuffix(op.Path, suffix) }
}

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
