package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// A full disk is an error of the append that met it, never of the log: the append returns
// ErrNoSpace, nothing of it is written, and once space returns the next append succeeds without
// a reopen. These tests fill the disk at each step that needs space: the .log write
// (TestNoSpaceMidWrite), the growth of an index, the creation of a rolled segment's files and the
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
	// index to its first size, mapping it, reserving its first pages, or (under
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

// growthOf matches the Truncate that grows a new index file whose name ends with suffix to its
// first size, a page (or baseConfig's SegmentIndexBytes when smaller) rounded down to whole
// entries of entrySize bytes (the trims at seal and close cut it to the entries in use, below).
func growthOf(suffix string, entrySize int64) faultfs.Match {
	// A new index's file starts at a page (internal/index's first step) and doubles from there.
	size := min(4096, int64(baseConfig().SegmentIndexBytes)) / entrySize * entrySize
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
				// The segment's index starts at a page (internal/index's first step), which is
				// reserved with it; the growth past it needs space.
				fit := 4096/entrySize - spare + 2
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

// noSpaceBatchSize is the size of the batch the no-space tests append, and noSpaceWritten the
// bytes of it that reach the file before the disk is full.
const (
	noSpaceBatchSize = 200
	noSpaceWritten   = 37
)

// noSpaceRecord returns record i of a batch that encodes to exactly noSpaceBatchSize bytes on
// its own.
func noSpaceRecord(t *testing.T, i int) *Record {
	t.Helper()
	for n := range noSpaceBatchSize {
		r := &Record{Key: fmt.Appendf(nil, "k%06d", i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, n),
			Timestamp: testEpoch.Add(time.Duration(i) * time.Millisecond)}
		if len(encodeBatch(t, 0, []*Record{r})) == noSpaceBatchSize {
			return r
		}
	}
	t.Fatalf("no record encodes to a %d-byte batch", noSpaceBatchSize)
	return nil
}

// logMemState is the in-memory state of a log that a failed write must leave as it was.
type logMemState struct {
	leo, size, segments                             int64
	activeSize, next, maxTs, offMaxTs, rollTs, base int64
	sinceIndex                                      int
	offsetEntries                                   [][2]int64
	timeEntries                                     [][2]int64
}

func memState(l *Log) logMemState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.active().State()
	st := logMemState{segments: int64(len(l.segments)), activeSize: s.Size, next: s.NextOffset,
		maxTs: s.MaxTimestamp, offMaxTs: s.OffsetOfMaxTimestamp, rollTs: s.RollTimestamp,
		base: l.active().BaseOffset(), sinceIndex: s.BytesSinceIndex}
	st.offsetEntries = s.OffsetEntries
	st.timeEntries = s.TimeEntries
	st.leo = s.NextOffset
	for _, seg := range l.segments {
		st.size += seg.Size()
	}
	return st
}

func TestNoSpaceMidWrite(t *testing.T) {
	// Each way of appending, on a segment with room and on one that rolls first; the disk
	// fills after 37 bytes of the 200-byte batch, once, then has space again.
	appendKinds := []struct {
		name string
		do   func(t *testing.T, l *Log, recs []*Record) error
	}{
		{"Append", func(t *testing.T, l *Log, recs []*Record) error { return l.Append(context.Background(), recs...) }},
		{"AppendAsLeader", func(t *testing.T, l *Log, recs []*Record) error {
			_, _, err := l.AppendAsLeader(context.Background(), encodeBatch(t, 0, recs))
			return err
		}},
		{"AppendAsFollower", func(t *testing.T, l *Log, recs []*Record) error {
			_, err := l.AppendAsFollower(context.Background(), encodeBatch(t, l.LogEndOffset(), recs))
			return err
		}},
	}
	for _, kind := range appendKinds {
		for _, roll := range []bool{false, true} {
			name := kind.name
			if roll {
				name += "/at a roll"
			}
			t.Run(name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					dir := t.TempDir()
					ffs := newFaultFS(t, fsy, dir)
					cfg := baseConfig()
					cfg.IndexIntervalBytes = 300 // index entries come and go with the batches
					if roll {
						cfg.SegmentBytes = 5 * noSpaceBatchSize
					}
					l := openTestLog(t, ffs, dir, cfg)
					var want []*Record
					for i := range 5 {
						r := noSpaceRecord(t, i)
						require.NoError(t, kind.do(t, l, []*Record{r}))
						want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
					}
					require.Equal(t, int64(5), l.LogEndOffset())
					require.Equal(t, int64(5*noSpaceBatchSize), l.Size())
					before := memState(l)
					require.Equal(t, int64(1), before.segments)
					log0 := segPath(dir, 0, logSuffix)
					fileSize := fsFileSize(t, fsy, log0)

					ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Write, logSuffix),
						faultfs.Fault{Err: syscall.ENOSPC, Written: noSpaceWritten}))
					n := len(ffs.Ops())
					err := kind.do(t, l, []*Record{noSpaceRecord(t, 5)})
					require.ErrorIs(t, err, ErrNoSpace)
					require.ErrorIs(t, err, syscall.ENOSPC)
					require.NotErrorIs(t, err, ErrSync)

					// The write that failed was the whole batch; what it left is cut off.
					var failedWrite *faultfs.Op
					for _, op := range ffs.Ops()[n:] {
						if op.Kind == faultfs.Write && op.Injected {
							failedWrite = &op
						}
					}
					require.NotNil(t, failedWrite)
					require.Equal(t, noSpaceBatchSize, failedWrite.Len)
					after := memState(l)
					if roll {
						// The roll before the write sealed segment 0 and began an empty one at 5.
						require.Equal(t, segPath(dir, 5, logSuffix), failedWrite.Path)
						require.Equal(t, int64(0), fsFileSize(t, fsy, segPath(dir, 5, logSuffix)))
						require.Equal(t, logMemState{leo: 5, size: before.size, segments: 2, next: 5, base: 5,
							maxTs: -1, offMaxTs: -1, rollTs: -1}, after)
					} else {
						require.Equal(t, log0, failedWrite.Path)
						require.Equal(t, before, after, "the in-memory state is as before the call")
					}
					require.Equal(t, fileSize, fsFileSize(t, fsy, log0))
					requireSameRecords(t, want, readAllRecords(t, l))
					requireIndexesWithin(t, l)

					// Space is back: the next appends go at the same offset.
					for i := 5; i < 8; i++ {
						require.NoError(t, kind.do(t, l, []*Record{noSpaceRecord(t, i)}))
						want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
					}
					requireSameRecords(t, want, readAllRecords(t, l))

					// A power loss keeps every acknowledged record, and no ErrCorrupt lies
					// between them.
					for _, mode := range powerLossModes {
						crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg)
						require.Equal(t, int64(8), crashed.LogEndOffset(), "%s", mode)
						requireSameRecords(t, want, readAllRecords(t, crashed))
						require.NoError(t, crashed.Close())
					}
					require.NoError(t, l.Close())
					l = openTestLog(t, ffs, dir, cfg)
					require.Equal(t, int64(8), l.LogEndOffset())
					requireSameRecords(t, want, readAllRecords(t, l))
				})
			})
		}
	}
}

func TestNoSpaceCleanupFails(t *testing.T) {
	// The disk fills mid-write and the truncation that would cut the partial batch off fails
	// too: the file's end is unknown, so the log refuses writes until reopened, and the reopen
	// cuts the partial batch as a torn tail.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		l := openTestLog(t, ffs, dir, baseConfig())
		var want []*Record
		for i := range 3 {
			require.NoError(t, l.Append(context.Background(), noSpaceRecord(t, i)))
			want = append(want, withOffsets([]*Record{noSpaceRecord(t, i)}, int64(i))...)
		}
		fault := map[faultfs.Kind]faultfs.Fault{
			faultfs.Write:    {Err: syscall.ENOSPC, Written: noSpaceWritten},
			faultfs.Truncate: {Err: syscall.EIO},
		}
		ffs.Inject(func(op faultfs.Op) *faultfs.Fault {
			if f, ok := fault[op.Kind]; ok && strings.HasSuffix(op.Path, logSuffix) {
				delete(fault, op.Kind)
				return &f
			}
			return nil
		})
		err := l.Append(context.Background(), noSpaceRecord(t, 3))
		require.ErrorIs(t, err, ErrNoSpace)
		require.Empty(t, fault, "both faults were injected")
		log0 := segPath(dir, 0, logSuffix)
		require.Equal(t, int64(3*noSpaceBatchSize+noSpaceWritten), fsFileSize(t, fsy, log0))

		err = l.Append(context.Background(), noSpaceRecord(t, 3))
		require.ErrorIs(t, err, ErrSync)
		require.ErrorIs(t, err, syscall.EIO)
		require.Equal(t, int64(3), l.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, l))
		require.NoError(t, l.Close())

		l = openTestLog(t, ffs, dir, baseConfig())
		require.Equal(t, int64(3), l.LogEndOffset())
		require.Equal(t, int64(3*noSpaceBatchSize), fsFileSize(t, fsy, log0))
		require.NoError(t, l.Append(context.Background(), noSpaceRecord(t, 3)))
		want = append(want, withOffsets([]*Record{noSpaceRecord(t, 3)}, 3)...)
		requireSameRecords(t, want, readAllRecords(t, l))
	})
}
