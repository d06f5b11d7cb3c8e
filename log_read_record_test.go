package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// positionsOf returns the record position cache of the log's store: its entries and bytes.
func positionsOf(l *Log) (entries int, bytes int64) {
	n, b, _ := l.caches.Positions.Stats()
	return n, b
}

// readEach reads every record of want with ReadRecord through one reused Record, in a shuffled
// order (seeded), and checks each against want.
func readEach(t *testing.T, l *Log, want []*Record) {
	t.Helper()
	var r Record
	order := rand.New(rand.NewPCG(7, 11)).Perm(len(want))
	for _, i := range order {
		w := want[i]
		require.NoError(t, l.ReadRecord(w.Offset, &r), "offset %d", w.Offset)
		requireSameRecords(t, []*Record{w}, []*Record{&r})
		require.Equal(t, "", r.Topic)
		require.Equal(t, int32(0), r.Partition)
	}
}

// markEntryBytes is what the cache counts for a dense batch of n records.
func markEntryBytes(n int) int64 {
	return segment.PositionEntryOverhead + 4*int64((n+segment.PositionStride-1)/segment.PositionStride)
}

func TestReadRecordEveryRecord(t *testing.T) {
	for _, per := range []int{1, 7, 8, 9, 15, 16, 17, 1000} {
		t.Run(fmt.Sprintf("batch=%d", per), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.SegmentBytes = 64 << 10 // several segments
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
				want := appendBatches(t, l, max(3000/per, 3), per)
				require.Greater(t, l.SegmentCount(), 1)
				readEach(t, l, want)
				// And again, every batch now in the cache (but single-record ones, which are not
				// kept).
				readEach(t, l, want)
				entries, bytes := positionsOf(l)
				if per == 1 {
					require.Equal(t, 0, entries)
					require.Equal(t, int64(0), bytes)
				} else {
					batches := len(want) / per
					require.Equal(t, batches, entries)
					require.Equal(t, int64(batches)*markEntryBytes(per), bytes)
				}
			})
		})
	}
}

func TestReadRecordAfterReopen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := baseConfig()
		cfg.SegmentBytes = 32 << 10
		l := openTestLog(t, fsy, dir, cfg, WithSync(SyncNever))
		want := appendBatches(t, l, 40, 17)
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg, WithSync(SyncNever))
		readEach(t, l, want)
	})
}

func TestReadRecordCompressed(t *testing.T) {
	for _, codec := range []Compression{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.SegmentBytes = 2 << 10 // the workload compresses well
				cfg.Compression = codec
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
				want := appendBatches(t, l, 30, 33)
				require.Greater(t, l.SegmentCount(), 1)
				readEach(t, l, want)
				entries, _ := positionsOf(l)
				require.Equal(t, 0, entries, "compressed batches keep no positions")
			})
		})
	}
}

// TestReadRecordNullsAndEmpties checks that null and empty keys, values and header values come
// back apart, through a Record reused from a record that had them all set.
func TestReadRecordNullsAndEmpties(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
		recs := []*Record{
			{Key: nil, Value: []byte("v0"), Timestamp: testEpoch},
			{Key: []byte{}, Value: nil, Timestamp: testEpoch.Add(time.Second)},
			{Key: []byte("k2"), Value: []byte{}, Headers: []Header{{Key: "a", Value: nil}, {Key: "", Value: []byte{}}}, Timestamp: testEpoch},
			{Key: []byte("k3"), Value: []byte("v3"), Headers: []Header{{Key: "a", Value: []byte("x")}, {Key: "b", Value: []byte("y")}, {Key: "a", Value: []byte("z")}}, Timestamp: testEpoch.Add(-time.Second)},
			{Key: []byte("k4"), Value: []byte("v4"), Timestamp: testEpoch},
		}
		require.NoError(t, l.Append(context.Background(), recs...))
		want := withOffsets(recs, 0)
		for i := range want {
			r := Record{Key: []byte("old key"), Value: []byte("old value"), Topic: "t", Partition: 3,
				Headers: []Header{{Key: "old", Value: []byte("old")}}}
			require.NoError(t, l.ReadRecord(int64(i), &r))
			requireSameRecords(t, want[i:i+1], []*Record{&r})
			require.Equal(t, "", r.Topic)
			require.Equal(t, int32(0), r.Partition)
		}
	})
}

// gapBatch builds a batch at base whose records have the given offset deltas, as compaction
// leaves them, with lastDelta as its last offset delta.
func gapBatch(t *testing.T, base int64, lastDelta int32, deltas ...int32) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, len(deltas))
	for i, d := range deltas {
		recs[i] = recordbatch.Record{OffsetDelta: d, TimestampDelta: int64(d),
			Key: fmt.Appendf(nil, "k%d", base+int64(d)), Value: fmt.Appendf(nil, "v%d", base+int64(d))}
	}
	b, err := recordbatch.Encode(nil, recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 0,
		LastOffsetDelta: lastDelta, BaseTimestamp: testEpoch.UnixMilli(), MaxTimestamp: testEpoch.UnixMilli() + int64(lastDelta),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	require.NoError(t, err)
	return b
}

// TestReadRecordGaps reads offsets in the gaps compaction leaves, inside batches (before a
// position mark and after it), after a batch's last record and between batches, and offsets of
// transaction markers: each reads the next record.
func TestReadRecordGaps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
		ctx := context.Background()
		// Batch at 0: 20 records with every third offset, then nothing up to delta 70.
		var deltas []int32
		for d := int32(0); d < 60; d += 3 {
			deltas = append(deltas, d)
		}
		_, err := l.AppendAsFollower(ctx, gapBatch(t, 0, 70, deltas...))
		require.NoError(t, err)
		_, err = l.AppendAsFollower(ctx, stControlBatch(t, 71, 5)) // a marker at 71
		require.NoError(t, err)
		_, err = l.AppendAsFollower(ctx, gapBatch(t, 80, 4, 2, 4)) // 82, 84
		require.NoError(t, err)
		require.Equal(t, int64(85), l.LogEndOffset())

		next := func(off int64) int64 {
			switch {
			case off <= 57:
				return (off + 2) / 3 * 3
			case off <= 82:
				return 82
			default:
				return 84
			}
		}
		var r Record
		for pass := range 2 { // the second from the cache
			for off := int64(0); off < 85; off++ {
				require.NoError(t, l.ReadRecord(off, &r), "pass %d offset %d", pass, off)
				want := next(off)
				require.Equal(t, want, r.Offset, "pass %d offset %d", pass, off)
				require.Equal(t, fmt.Sprintf("k%d", want), string(r.Key))
				require.Equal(t, fmt.Sprintf("v%d", want), string(r.Value))
				require.Equal(t, testEpoch.UnixMilli()+want-want/80*80, r.Timestamp.UnixMilli())
			}
		}
		entries, bytes := positionsOf(l)
		require.Equal(t, 2, entries)
		// Batches with gaps keep offset deltas beside positions: 8 bytes a mark.
		marks := int64((20+segment.PositionStride-1)/segment.PositionStride + 1)
		require.Equal(t, 2*segment.PositionEntryOverhead+8*marks, bytes)
	})
}

func TestReadRecordControlAtEnd(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
		ctx := context.Background()
		_, err := l.AppendAsFollower(ctx, gapBatch(t, 0, 1, 0, 1))
		require.NoError(t, err)
		_, err = l.AppendAsFollower(ctx, stControlBatch(t, 2, 5))
		require.NoError(t, err)
		var r Record
		err = l.ReadRecord(2, &r)
		require.ErrorIs(t, err, ErrNoRecordYet)
		require.NotErrorIs(t, err, ErrOffsetOutOfRange)
		require.Contains(t, err.Error(), "no record at or after offset 2 below 3")
	})
}

func TestReadRecordErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := baseConfig()
		cfg.SegmentBytes = 8 << 10
		cfg.RetentionBytes = 20 << 10
		l := openTestLog(t, fsy, dir, cfg, WithSync(SyncNever))
		want := appendBatches(t, l, 40, 10)
		n, err := l.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Positive(t, n)
		start, end := l.LogStartOffset(), l.LogEndOffset()
		require.Positive(t, start)
		require.Equal(t, int64(400), end)

		var r Record
		for _, tc := range []struct {
			off  int64
			want error
		}{
			{-1, ErrOffsetOutOfRange},
			{0, ErrOffsetOutOfRange},
			{start - 1, ErrOffsetOutOfRange},
			{end, ErrNoRecordYet}, // a tail reader's next offset: nothing yet
			{end + 1, ErrOffsetOutOfRange},
		} {
			err := l.ReadRecord(tc.off, &r)
			require.ErrorIs(t, err, tc.want, "offset %d", tc.off)
			other := ErrNoRecordYet
			if tc.want == ErrNoRecordYet {
				other = ErrOffsetOutOfRange
			}
			require.NotErrorIs(t, err, other, "offset %d", tc.off)
			require.Contains(t, err.Error(), fmt.Sprintf("has records in [%d, %d)", start, end))
		}
		for _, off := range []int64{start, end - 1} {
			require.NoError(t, l.ReadRecord(off, &r))
			requireSameRecords(t, want[off:off+1], []*Record{&r})
		}
		require.NoError(t, l.Close())
		require.ErrorIs(t, l.ReadRecord(start, &r), ErrClosed)
	})
}

// TestReadRecordCorrupt damages one byte of a record's value in a batch: its first read reports
// ErrCorrupt naming the segment file and the batch's position, and the batches around it read.
func TestReadRecordCorrupt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig(), WithSync(SyncNever))
		want := appendBatches(t, l, 3, 20)
		require.NoError(t, l.Close())
		b := fsReadFile(t, fsy, segPath(dir, 0, logSuffix))
		hs := batchHeaders(t, b)
		require.Len(t, hs, 3)
		bad := hs[1].pos + int64(hs[1].Size()) - 10 // in the last record of the middle batch
		fsPatch(t, fsy, segPath(dir, 0, logSuffix), bad, []byte{b[bad] ^ 0xff})

		l = openTestLog(t, fsy, dir, baseConfig(), WithSync(SyncNever))
		var r Record
		for _, off := range []int64{20, 25, 39} {
			err := l.ReadRecord(off, &r)
			require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
			require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset %d)", segPath(dir, 0, logSuffix), hs[1].pos, off))
		}
		readEach(t, l, append(want[:20:20], want[40:]...))
		entries, _ := positionsOf(l)
		require.Equal(t, 2, entries, "the corrupt batch is not kept")
	})
}

// TestReadRecordAfterTruncation reads records (so their batches are cached), truncates the log
// and appends other records at the same offsets and positions: reads return the new records.
func TestReadRecordAfterTruncation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 16 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
		old := appendBatches(t, l, 30, 20)
		require.Greater(t, l.SegmentCount(), 2)
		readEach(t, l, old)
		before, _ := positionsOf(l)
		require.Equal(t, 30, before)

		require.NoError(t, l.TruncateTo(100))
		require.Equal(t, int64(100), l.LogEndOffset())
		entries, _ := positionsOf(l)
		require.Less(t, entries, 5, "the kept segment's and the removed segments' entries are gone")

		// Same offsets, same sizes, other bytes: the workload of offset i+7 at offset i.
		ctx := context.Background()
		var fresh []*Record
		for range 25 {
			first := l.LogEndOffset()
			recs := workloadRecords(int(first)+7, 20)
			require.NoError(t, l.Append(ctx, recs...))
			fresh = append(fresh, withOffsets(recs, first)...)
		}
		readEach(t, l, append(old[:100:100], fresh...))
		require.NoError(t, l.TruncateTo(0))
		var r Record
		require.ErrorIs(t, l.ReadRecord(0, &r), ErrNoRecordYet, "an empty log's end offset")
		require.ErrorIs(t, l.ReadRecord(1, &r), ErrOffsetOutOfRange)
		entries, _ = positionsOf(l)
		require.Equal(t, 0, entries)
	})
}

// TestReadRecordCacheBound fills a cache bounded at three batches' entries: it holds three, the
// most recently read (the clock's order when each batch is read once), at exactly their bytes,
// and every read stays right.
func TestReadRecordCacheBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		const per = 100
		entry := markEntryBytes(per)
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever), WithRecordPositionCache(3*entry))
		want := appendBatches(t, l, 6, per)
		var r Record
		for i := range 6 {
			require.NoError(t, l.ReadRecord(int64(i*per+5), &r))
			requireSameRecords(t, want[i*per+5:i*per+6], []*Record{&r})
			entries, bytes := positionsOf(l)
			require.Equal(t, min(i+1, 3), entries)
			require.Equal(t, int64(min(i+1, 3))*entry, bytes)
		}
		c := l.caches.Positions
		_, _, evicted := c.Stats()
		require.Equal(t, 3, evicted)
		// Batches 3, 4 and 5 are kept.
		for _, i := range []int{3, 4, 5} {
			require.True(t, c.Holds(l.segments[0], batchPos(t, l, int64(i*per))), "batch %d", i)
		}
		readEach(t, l, want)
		entries, bytes := positionsOf(l)
		require.Equal(t, 3, entries)
		require.Equal(t, 3*entry, bytes)
	})
}

func TestReadRecordCacheOff(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever), WithRecordPositionCache(-1))
		want := appendBatches(t, l, 5, 40)
		readEach(t, l, want)
		entries, bytes := positionsOf(l)
		require.Equal(t, 0, entries)
		require.Equal(t, int64(0), bytes)
	})
}

// batchPos returns the position of the batch holding offset in the first segment.
func batchPos(t *testing.T, l *Log, offset int64) int64 {
	t.Helper()
	for _, h := range batchHeaders(t, fsReadFile(t, l.fs, segPath(l.dir, 0, logSuffix))) {
		if h.BaseOffset <= offset && offset <= h.LastOffset() {
			return h.pos
		}
	}
	t.Fatalf("no batch holds offset %d", offset)
	return 0
}

// TestReadRecordCacheInvalidation checks that a segment's entries go when retention removes it,
// when the file cache closes it for idleness, and when the log closes.
func TestReadRecordCacheInvalidation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 8 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithMaxOpenFiles(-1))
		want := appendBatches(t, l, 20, 20)
		readEach(t, l, want)
		entries, _ := positionsOf(l)
		require.Equal(t, 20, entries)
		segs := l.SegmentCount()
		perSeg := 20 / segs
		require.NoError(t, l.advanceLogStartOffset(l.segments[2].BaseOffset()))
		entries, _ = positionsOf(l)
		require.Equal(t, 20-2*perSeg, entries, "%d segments", segs)

		// Closed for idleness: its entries go; read again, they come back.
		s := l.segments[0]
		closed, err := s.CloseIdle()
		require.True(t, closed)
		require.NoError(t, err)
		entries, _ = positionsOf(l)
		require.Equal(t, 20-3*perSeg, entries)
		readEach(t, l, want[l.LogStartOffset():])
		entries, _ = positionsOf(l)
		require.Equal(t, 20-2*perSeg, entries)

		require.NoError(t, l.Close())
		entries, bytes := positionsOf(l)
		require.Equal(t, 0, entries)
		require.Equal(t, int64(0), bytes)
	})
}

func TestReadRecordAllocs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
		want := appendBatches(t, l, 4, 100)
		var r Record
		offs := []int64{0, 57, 399, 123, 250, 8, 9, 301}
		for _, off := range offs { // buffers grown, batches cached
			require.NoError(t, l.ReadRecord(off, &r))
		}
		i := 0
		allocs := testing.AllocsPerRun(200, func() {
			off := offs[i%len(offs)]
			i++
			if err := l.ReadRecord(off, &r); err != nil || r.Offset != off {
				t.Fatalf("read %d: %v, offset %d", off, err, r.Offset)
			}
		})
		require.Equal(t, float64(0), allocs)
		requireSameRecords(t, want[offs[(i-1)%len(offs)]:][:1], []*Record{&r})
	})
}

// TestReadRecordConcurrent reads random offsets from several goroutines while one appends and
// another applies retention: every read returns the record appended at its offset, or
// ErrOffsetOutOfRange for an offset retention removed meanwhile.
func TestReadRecordConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 16 << 10
		cfg.RetentionBytes = 64 << 10
		cfg.FileDeleteDelay = -1
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithRecordPositionCache(8<<10), WithMaxOpenFiles(12))
		ctx := context.Background()
		appendBatches(t, l, 10, 20)

		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		wg.Go(func() {
			defer stop.Store(true)
			for i := range 150 {
				first := int(l.LogEndOffset())
				if err := l.Append(ctx, workloadRecords(first, 1+i%40)...); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			// Until the appends end, and then until retention has removed a segment: the
			// appender may finish before this goroutine first finds the log over its retention.
			for !stop.Load() || (l.LogStartOffset() == 0 && len(errs) == 0) {
				if _, err := l.ApplyRetentionAt(testEpoch); err != nil {
					errs <- err
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		})
		for g := range 3 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 3))
				var r Record
				for n := 0; !stop.Load() || n < 200; n++ {
					start, end := l.LogStartOffset(), l.LogEndOffset()
					off := start + rng.Int64N(end-start)
					err := l.ReadRecord(off, &r)
					if errors.Is(err, ErrOffsetOutOfRange) && off < l.LogStartOffset() {
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("read %d: %w", off, err)
						return
					}
					w := withOffsets([]*Record{workloadRecord(int(off))}, off)[0]
					if r.Offset != off || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) ||
						len(r.Headers) != 2 || string(r.Headers[0].Value) != string(w.Headers[0].Value) {
						errs <- fmt.Errorf("read %d: got record %d key %q", off, r.Offset, r.Key)
						return
					}
				}
			})
		}
		wg.Wait()
		requireNoErrs(t, errs)
		require.Positive(t, l.LogStartOffset(), "retention ran")
		_, bytes := positionsOf(l)
		require.LessOrEqual(t, bytes, int64(8<<10))
	})
}

// TestReadRecordConcurrentTruncation reads while the log is truncated and appended again with
// other records at the same offsets: a read returns the record of either generation at its
// offset, ErrOffsetOutOfRange or ErrNoRecordYet while the offset is cut, never a mix or another
// offset's record.
func TestReadRecordConcurrentTruncation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 32 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
		ctx := context.Background()
		// Generation g writes the workload of offset i+g*1000 at offset i.
		fill := func(g int) error {
			for l.LogEndOffset() < 600 {
				first := int(l.LogEndOffset())
				if err := l.Append(ctx, workloadRecords(first+g*1000, 20)...); err != nil {
					return err
				}
			}
			return nil
		}
		require.NoError(t, fill(0))

		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		wg.Go(func() {
			defer stop.Store(true)
			for g := 1; g <= 20; g++ {
				if err := l.TruncateTo(int64(100 + g*20)); err != nil {
					errs <- err
					return
				}
				if err := fill(g); err != nil {
					errs <- err
					return
				}
			}
		})
		for g := range 3 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 5))
				var r Record
				for n := 0; !stop.Load() || n < 100; n++ {
					off := rng.Int64N(600)
					err := l.ReadRecord(off, &r)
					if errors.Is(err, ErrOffsetOutOfRange) || errors.Is(err, ErrNoRecordYet) {
						continue // past the end, or at it, while the offset is cut
					}
					if err != nil {
						errs <- fmt.Errorf("read %d: %w", off, err)
						return
					}
					ok := false
					for gen := 0; gen <= 20 && !ok; gen++ {
						w := workloadRecord(int(off) + gen*1000)
						ok = string(r.Key) == string(w.Key) && string(r.Value) == string(w.Value) &&
							string(r.Headers[0].Value) == string(w.Headers[0].Value)
					}
					if r.Offset != off || !ok {
						errs <- fmt.Errorf("read %d: got record %d key %q", off, r.Offset, r.Key)
						return
					}
				}
			})
		}
		wg.Wait()
		requireNoErrs(t, errs)
	})
}

func TestPartitionReadRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
		p1, err := tp.Partition(1)
		require.NoError(t, err)
		recs := workloadRecords(0, 30)
		require.NoError(t, p1.Append(ctx, recs...))
		want := withOffsets(recs, 0)
		var r Record
		for i := range want {
			require.NoError(t, p1.ReadRecord(int64(i), &r))
			requireSameRecords(t, want[i:i+1], []*Record{&r})
			require.Equal(t, "orders", r.Topic)
			require.Equal(t, int32(1), r.Partition)
		}
		require.ErrorIs(t, p1.ReadRecord(30, &r), ErrNoRecordYet)
		require.ErrorIs(t, p1.ReadRecord(31, &r), ErrOffsetOutOfRange)
		require.ErrorIs(t, p1.ReadRecord(-1, &r), ErrOffsetOutOfRange)
	})
}

// TestPartitionReadRecordHighWatermark reads a leader whose follower has fetched nothing: its
// records are above the high watermark, not readable, until the follower has them.
func TestPartitionReadRecordHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		_, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1"}}))
		require.NoError(t, leader.AppendAcks(ctx, AcksLeader, workloadRecords(0, 10)...))
		require.Equal(t, int64(10), leader.LogEndOffset())
		require.Equal(t, int64(0), leader.HighWatermark())
		var r Record
		err := leader.ReadRecord(0, &r)
		require.ErrorIs(t, err, ErrNoRecordYet, "written, not committed: nothing yet")
		require.Contains(t, err.Error(), "has records in [0, 0)")

		_, follower := repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
		repFollow(t, follower, 1, newRepLink(leader.Replica(), nil), "f1")
		require.Eventually(t, func() bool { return leader.HighWatermark() == 10 }, repWait, repTick)
		for i := range 10 {
			require.NoError(t, leader.ReadRecord(int64(i), &r))
			require.Equal(t, int64(i), r.Offset)
			require.NoError(t, follower.ReadRecord(int64(i), &r))
			requireSameRecords(t, withOffsets(workloadRecords(i, 1), int64(i)), []*Record{&r})
			require.Equal(t, repTopic, r.Topic)
		}
	})
}

// TestReadRecordPastMapping reads records appended after the active segment was mapped: too few
// bytes for a new mapping, they are read with ReadAt, batches that straddle the mapping's end
// included.
func TestReadRecordPastMapping(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
		want := appendBatches(t, l, 10, 50)
		var r Record
		require.NoError(t, l.ReadRecord(3, &r))
		s := l.active()
		mapped := s.Size()
		want = append(want, appendBatches(t, l, 5, 50)...)
		readEach(t, l, want)
		if m := s.MappedSize(); s.SharesMappings() {
			require.NotEqual(t, int64(-1), m)
			require.Equal(t, mapped, m, "grown by less than remapStep: not mapped again")
			require.Less(t, mapped, s.Size())
		} else {
			require.Equal(t, int64(-1), m)
		}
	})
}

// TestReadRecordDenseMismatch writes straight into the segment a batch whose CRC is right but
// whose last record claims an offset delta the batch's header has no room for (appends refuse
// such a batch; a copied folder may hold one): reading that offset is ErrCorrupt, reading the
// others is not.
func TestReadRecordDenseMismatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig(), WithSync(SyncNever))
		want := appendBatches(t, l, 1, 5)
		require.NoError(t, l.Close())

		b := gapBatch(t, 5, 2, 0, 1, 2) // offsets 5, 6, 7
		// The last record: length, attributes, timestamp delta 2 (zigzag 4), offset delta 2
		// (zigzag 4), made 3 (zigzag 6).
		sec := b[recordbatch.HeaderSize:]
		p := 0
		for range 2 {
			n, err := recordbatch.SkipRecord(sec[p:], 0)
			require.NoError(t, err)
			p += n
		}
		require.Equal(t, byte(4), sec[p+3])
		sec[p+3] = 6
		binary.BigEndian.PutUint32(b[17:], recordbatch.ComputeCRC(b))
		_, err := recordbatch.Check(b, 0)
		require.NoError(t, err)
		name := segPath(dir, 0, logSuffix)
		size := fsFileSize(t, fsy, name)
		fsPatch(t, fsy, name, size, b)

		l = openTestLog(t, fsy, dir, baseConfig(), WithSync(SyncNever))
		require.Equal(t, int64(8), l.LogEndOffset())
		var r Record
		for _, off := range []int64{5, 6} {
			require.NoError(t, l.ReadRecord(off, &r))
			require.Equal(t, off, r.Offset)
			require.Equal(t, fmt.Sprintf("v%d", off), string(r.Value))
		}
		err = l.ReadRecord(7, &r)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset 7)", name, size))
		readEach(t, l, want)
	})
}

// TestReadRecordClose closes the log under concurrent reads: each read returns a record or
// ErrClosed, and none touches a mapping after it is gone (the last read using it unmaps it).
func TestReadRecordClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 16 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
		want := appendBatches(t, l, 20, 30)
		var started sync.WaitGroup
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := range 4 {
			started.Add(1)
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				var r Record
				for n := 0; ; n++ {
					if n == 50 {
						started.Done()
					}
					off := rng.Int64N(int64(len(want)))
					err := l.ReadRecord(off, &r)
					if errors.Is(err, ErrClosed) {
						if n < 50 {
							started.Done()
						}
						return
					}
					if err != nil || r.Offset != off || string(r.Value) != string(want[off].Value) {
						errs <- fmt.Errorf("read %d: %v, got offset %d", off, err, r.Offset)
						if n < 50 {
							started.Done()
						}
						return
					}
				}
			})
		}
		started.Wait()
		require.NoError(t, l.Close())
		wg.Wait()
		requireNoErrs(t, errs)
		for _, s := range l.segments {
			require.Equal(t, int64(-1), s.MappedSize(), "segment %d still holds a mapping", s.BaseOffset())
		}
	})
}

// TestReadRecordDifferential builds follower logs of random batches (gaps inside and
// between batches, control batches, compressed batches, LogAppendTime) over small segments, and
// checks every ReadRecord against the model: the first data record at or after the offset.
func TestReadRecordDifferential(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				rng := rand.New(rand.NewPCG(seed, 17))
				cfg := baseConfig()
				cfg.SegmentBytes = 2 << 10
				cfg.IndexIntervalBytes = 200
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithMaxOpenFiles(4))
				ctx := context.Background()
				type rec struct {
					off int64
					key string
					ts  int64
				}
				var model []rec
				next := int64(0)
				for range 60 {
					next += int64(rng.IntN(3)) * int64(rng.IntN(20)) // gap between batches
					if rng.IntN(8) == 0 {
						_, err := l.AppendAsFollower(ctx, stControlBatch(t, next, 5))
						require.NoError(t, err)
						next++
						continue
					}
					lastDelta := int32(rng.IntN(30))
					var deltas []int32
					for d := int32(0); d <= lastDelta; d++ {
						if rng.IntN(3) != 0 || d == 0 {
							deltas = append(deltas, d)
						}
					}
					var attrs recordbatch.Attributes
					if rng.IntN(4) == 0 {
						attrs = attrs.WithCodec(recordbatch.Codec(1 + rng.IntN(4)))
					}
					lat := rng.IntN(5) == 0
					if lat {
						attrs |= recordbatch.AttrLogAppendTime
					}
					recs := make([]recordbatch.Record, len(deltas))
					for i, d := range deltas {
						recs[i] = recordbatch.Record{OffsetDelta: d, TimestampDelta: int64(d),
							Key: fmt.Appendf(nil, "k%d", next+int64(d)), Value: fmt.Appendf(nil, "v%d-%d", next+int64(d), seed)}
					}
					maxTS := testEpoch.UnixMilli() + int64(lastDelta) + 1000
					b, err := recordbatch.Encode(nil, recordbatch.Header{BaseOffset: next, PartitionLeaderEpoch: 0, Attributes: attrs,
						LastOffsetDelta: lastDelta, BaseTimestamp: testEpoch.UnixMilli(), MaxTimestamp: maxTS,
						ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
					require.NoError(t, err)
					_, err = l.AppendAsFollower(ctx, b)
					require.NoError(t, err)
					for _, d := range deltas {
						ts := testEpoch.UnixMilli() + int64(d)
						if lat {
							ts = maxTS
						}
						model = append(model, rec{next + int64(d), fmt.Sprintf("k%d", next+int64(d)), ts})
					}
					next += int64(lastDelta) + 1
				}
				leo := l.LogEndOffset()
				var r Record
				for pass := range 3 {
					offs := rng.Perm(int(leo))
					for _, o := range offs {
						off := int64(o)
						i := sort.Search(len(model), func(i int) bool { return model[i].off >= off })
						err := l.ReadRecord(off, &r)
						if i == len(model) {
							// Only a gap (control batches, compaction) lies between off and the end.
							require.True(t, errors.Is(err, ErrNoRecordYet), "pass %d off %d: %v", pass, off, err)
							continue
						}
						require.NoError(t, err, "pass %d off %d", pass, off)
						require.Equal(t, model[i].off, r.Offset, "pass %d off %d", pass, off)
						require.Equal(t, model[i].key, string(r.Key), "pass %d off %d", pass, off)
						require.Equal(t, model[i].ts, r.Timestamp.UnixMilli(), "pass %d off %d", pass, off)
					}
				}
			})
		})
	}
}

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

// TestReadRecordFileCacheAndRetention: reads through a small open-file cache while
// retention removes and appends roll.
func TestReadRecordFileCacheRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 4 << 10
		cfg.RetentionBytes = 64 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithMaxOpenFiles(6))
		ctx := context.Background()
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		wg.Go(func() {
			defer stop.Store(true)
			for i := range 3000 {
				if err := l.Append(ctx, workloadRecords(i*3, 3)...); err != nil {
					errs <- err
					return
				}
				if i%50 == 49 {
					if _, err := l.ApplyRetentionAt(testEpoch); err != nil {
						errs <- err
						return
					}
				}
			}
		})
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 3))
				var r Record
				for !stop.Load() {
					start, leo := l.LogStartOffset(), l.LogEndOffset()
					if leo <= start {
						continue
					}
					off := start + rng.Int64N(leo-start)
					err := l.ReadRecord(off, &r)
					if errors.Is(err, ErrOffsetOutOfRange) || errors.Is(err, ErrNoRecordYet) {
						continue // a truncation cut the log below off meanwhile
					}
					if err != nil {
						errs <- fmt.Errorf("read %d: %w", off, err)
						return
					}
					w := workloadRecord(int(off))
					if r.Offset != off || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) {
						errs <- fmt.Errorf("read %d: got %d %q", off, r.Offset, r.Key)
						return
					}
				}
			})
		}
		wg.Wait()
		requireNoErrs(t, errs)
	})
}
