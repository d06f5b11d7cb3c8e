package commitlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// openReadOnly opens the environment's store read-only, on the same file system as its writer;
// closed at the end of the test.
func (e *storeEnv) openReadOnly(t *testing.T, opts ...Option) *ReadOnlyStore {
	t.Helper()
	ro, err := OpenReadOnly(e.dir, append([]Option{withFS(e.FS())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ro.Close() })
	return ro
}

// nextN reads n records from r, failing after a generous wait for any of them.
func nextN(t *testing.T, r *ReadOnlyReader, n int) []*Record {
	t.Helper()
	var out []*Record
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rec, err := r.Next(ctx)
		cancel()
		require.NoError(t, err)
		out = append(out, rec)
	}
	return out
}

func valuesOf(recs []*Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%d:%s", r.Partition, r.Offset, r.Value))
	}
	return out
}

func appendValues(t *testing.T, tp *Topic, partition int32, from, to int) {
	t.Helper()
	p, err := tp.Partition(partition)
	require.NoError(t, err)
	for i := from; i < to; i++ {
		require.NoError(t, p.Append(context.Background(), &Record{Value: fmt.Appendf(nil, "v%d", i)}))
	}
}

// TestReadOnlyFollowsWriter: a read-only open of a store another holder writes sees its topics,
// its appends as they come (a reader waiting at the end wakes), its rolls, and retention's
// deletions (a reader behind them moves to the log start offset under ResetEarliest).
func TestReadOnlyFollowsWriter(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithRetentionCheckInterval(-1))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 200, RetentionBytes: 300}})
		require.NoError(t, err)
		appendValues(t, tp, 0, 0, 3)

		ro := env.openReadOnly(t, WithPollInterval(5*time.Millisecond))
		live, err := ro.WriterLive()
		require.NoError(t, err)
		require.True(t, live)
		require.Equal(t, []string{"events"}, ro.Topics())
		n, err := ro.PartitionCount("events")
		require.NoError(t, err)
		require.Equal(t, int32(2), n)
		start, end, err := ro.Offsets("events", 0)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 3}, [2]int64{start, end})

		r, err := ro.NewReader("events", ReaderConfig{Start: Earliest, Reset: ResetEarliest})
		require.NoError(t, err)
		defer r.Close()
		require.Equal(t, []string{"0:0:v0", "0:1:v1", "0:2:v2"}, valuesOf(nextN(t, r, 3)))

		// Appends after the open, rolling segments (200 bytes hold about two records).
		appendValues(t, tp, 1, 100, 102)
		appendValues(t, tp, 0, 3, 8)
		p0, _ := tp.Partition(0)
		require.Greater(t, p0.SegmentCount(), 2)
		got := valuesOf(nextN(t, r, 7))
		require.ElementsMatch(t, []string{"1:0:v100", "1:1:v101", "0:3:v3", "0:4:v4", "0:5:v5", "0:6:v6", "0:7:v7"}, got)
		require.Equal(t, map[int32]int64{0: 8, 1: 2}, r.Positions())

		// Retention deletes partition 0's older segments while a second reader stands at 0.
		behind, err := ro.NewReader("events", ReaderConfig{Start: Earliest, Reset: ResetEarliest, Partitions: []int32{0}})
		require.NoError(t, err)
		defer behind.Close()
		deleted, err := s.ApplyRetention()
		require.NoError(t, err)
		require.Positive(t, deleted)
		logStart := p0.LogStartOffset()
		require.Positive(t, logStart)
		require.NoError(t, ro.Refresh())
		start, end, err = ro.Offsets("events", 0)
		require.NoError(t, err)
		require.Equal(t, [2]int64{logStart, 8}, [2]int64{start, end})
		rec := nextN(t, behind, 1)[0]
		require.Equal(t, logStart, rec.Offset)
		require.Equal(t, fmt.Sprintf("v%d", logStart), string(rec.Value))

		// Under ResetNone the reader behind says so and stays.
		strict, err := ro.NewReader("events", ReaderConfig{Start: AtOffset, StartOffset: 0, Partitions: []int32{0}})
		require.NoError(t, err)
		defer strict.Close()
		_, err = strict.Next(context.Background())
		require.ErrorIs(t, err, ErrOffsetOutOfRange)

		// A topic created after the open appears at the next look.
		_, err = s.CreateTopic("later", TopicConfig{})
		require.NoError(t, err)
		require.NoError(t, ro.Refresh())
		require.Equal(t, []string{"events", "later"}, ro.Topics())

		require.NoError(t, s.Close())
		live, err = ro.WriterLive()
		require.NoError(t, err)
		require.False(t, live)
	})
}

// TestReadOnlyNeverBlocksWriter: a read-only open takes no lock a writer waits for: a store is
// opened with Open while a read-only open of it is live, and two writers still exclude each
// other.
func TestReadOnlyNeverBlocksWriter(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		_, err := s.CreateTopic("t", TopicConfig{})
		require.NoError(t, err)
		require.NoError(t, s.Close())

		ro := env.openReadOnly(t, WithPollInterval(time.Millisecond))
		for range 5 {
			live, err := ro.WriterLive()
			require.NoError(t, err)
			require.False(t, live)
			w, err := env.open()
			require.NoError(t, err)
			_, err = env.open()
			require.ErrorIs(t, err, ErrLocked)
			live, err = ro.WriterLive()
			require.NoError(t, err)
			require.True(t, live)
			require.NoError(t, w.Close())
		}
	})
}

// TestReadOnlyRefusesWrites: a read-only reader commits nothing (ErrReadOnly), refuses what
// would need the writer's state, and a named one starts where its name committed through Open.
func TestReadOnlyRefusesWrites(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp, err := s.CreateTopic("t", TopicConfig{})
		require.NoError(t, err)
		appendValues(t, tp, 0, 0, 5)
		w, err := tp.NewReader(ReaderConfig{Name: "audit", Start: Earliest})
		require.NoError(t, err)
		nextReader(t, w, 2)
		require.NoError(t, w.Commit(context.Background()))
		require.NoError(t, w.Close())

		ro := env.openReadOnly(t)
		r, err := ro.NewReader("t", ReaderConfig{Name: "audit", Start: Earliest})
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 2}, r.Positions())
		require.Equal(t, []string{"0:2:v2"}, valuesOf(nextN(t, r, 1)))
		require.ErrorIs(t, r.Commit(context.Background()), ErrReadOnly)
		names, err := ro.Readers()
		require.NoError(t, err)
		require.Equal(t, []string{"audit"}, names)
		n, size, err := ro.Segments("t", 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, p0Size(t, tp), size)
		pos, err := ro.CommittedPositions("audit")
		require.NoError(t, err)
		require.Equal(t, map[string]map[int32]int64{"t": {0: 2}}, pos)

		_, err = ro.NewReader("t", ReaderConfig{Isolation: ReadCommitted})
		require.ErrorIs(t, err, ErrInvalidConfig)
		_, err = ro.NewReader("t", ReaderConfig{Name: "audit", AutoCommitInterval: time.Second})
		require.ErrorIs(t, err, ErrReadOnly)
		_, err = ro.NewReader("missing", ReaderConfig{})
		require.ErrorIs(t, err, ErrUnknownTopic)
		_, err = ro.NewReader("t", ReaderConfig{Partitions: []int32{1}})
		require.ErrorIs(t, err, ErrUnknownTopic)
	})
}

// nextReader reads n records from a Reader of the writable store.
func nextReader(t *testing.T, r *Reader, n int) {
	t.Helper()
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := r.Next(ctx)
		cancel()
		require.NoError(t, err)
	}
}

// TestReadOnlyTornTailIsNotYetWritten: bytes past the last whole batch of the active segment (a
// write not finished: a header whose length runs past the end, or a whole batch whose CRC does
// not check) are not records yet and no error; once the writer's bytes are whole they are read.
func TestReadOnlyTornTailIsNotYetWritten(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp, err := s.CreateTopic("t", TopicConfig{})
		require.NoError(t, err)
		appendValues(t, tp, 0, 0, 3)
		require.NoError(t, s.Close())
		path := env.path("t-0", segment.Name(0)+segment.LogSuffix)
		whole := fsReadFile(t, env.FS(), path)
		last := whole[len(whole)-len(whole)/3:] // the last of three equal batches
		require.Len(t, whole, 3*len(last))

		for _, tc := range []struct {
			name string
			tail []byte
		}{
			{"header past the end", last[:len(last)-1]},
			{"bad crc", append(append([]byte{}, last[:len(last)-1]...), last[len(last)-1]^0xff)},
			{"zeros", make([]byte, 100)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				fsWriteFile(t, env.FS(), path, append(append([]byte{}, whole[:2*len(last)]...), tc.tail...))
				ro := env.openReadOnly(t, WithPollInterval(-1))
				start, end, err := ro.Offsets("t", 0)
				require.NoError(t, err)
				require.Equal(t, [2]int64{0, 2}, [2]int64{start, end})
				r, err := ro.NewReader("t", ReaderConfig{Start: Earliest})
				require.NoError(t, err)
				require.Equal(t, []string{"0:0:v0", "0:1:v1"}, valuesOf(nextN(t, r, 2)))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				_, err = r.Next(ctx)
				cancel()
				require.ErrorIs(t, err, context.DeadlineExceeded)

				// The writer finishes the batch.
				fsWriteFile(t, env.FS(), path, whole)
				require.NoError(t, ro.Refresh())
				require.Equal(t, []string{"0:2:v2"}, valuesOf(nextN(t, r, 1)))
			})
		}
	})
}

// TestReadOnlyWritesNothing: a read-only open over a store, reading every record, changes no byte
// and adds no file: no lock file, state, index or checkpoint, even where the writer stopped
// without a clean shutdown (its lock file removed, so none is there to find).
func TestReadOnlyWritesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp, err := s.CreateTopic("t", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 300}})
		require.NoError(t, err)
		appendValues(t, tp, 0, 0, 10)
		appendValues(t, tp, 1, 0, 4)
		require.NoError(t, s.Close())
		require.NoError(t, env.FS().Remove(env.path(lockFileName)))
		// An index that is unusable: the read-only open does not read it, the writer rebuilds it.
		fsWriteFile(t, env.FS(), env.path("t-0", segment.Name(0)+segment.IndexSuffix), []byte{1, 2, 3})
		before := env.tree(t)

		ro := env.openReadOnly(t)
		r, err := ro.NewReader("t", ReaderConfig{Start: Earliest})
		require.NoError(t, err)
		require.Len(t, nextN(t, r, 14), 14)
		require.ErrorIs(t, r.Commit(context.Background()), ErrReadOnly)
		live, err := ro.WriterLive()
		require.NoError(t, err)
		require.False(t, live)
		require.NoError(t, ro.Refresh())
		require.NoError(t, ro.Close())
		require.Equal(t, before, env.tree(t))
	})
}

// TestOpenReadOnlyMissingDir: a missing directory is an error, and is not created.
func TestOpenReadOnlyMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	_, err := OpenReadOnly(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestReadOnlyReadsCompactedLog: after a clean, the sealed segments hold the latest record of
// each key (some are empty) at their own offsets; a read-only reader returns exactly those, a
// read at a removed offset returns the next record, and its position ends at the log end offset.
func TestReadOnlyReadsCompactedLog(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithCleanerThreads(0))
		tp, err := s.CreateTopic("users", TopicConfig{LogConfig: LogConfig{SegmentBytes: 1024, CleanupPolicy: CleanupCompact}})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		for i := range 40 {
			require.NoError(t, p.Append(context.Background(), &Record{Key: fmt.Appendf(nil, "k%d", i%4), Value: fmt.Appendf(nil, "v%03d", i)}))
		}
		_, err = tp.Compact(context.Background())
		require.NoError(t, err)
		want := []string{}
		w, err := tp.NewReader(ReaderConfig{Start: Earliest})
		require.NoError(t, err)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			rec, err := w.Next(ctx)
			cancel()
			if err != nil {
				break
			}
			want = append(want, fmt.Sprintf("0:%d:%s", rec.Offset, rec.Value))
		}
		require.NoError(t, w.Close())
		require.Less(t, len(want), 40)

		ro := env.openReadOnly(t)
		r, err := ro.NewReader("users", ReaderConfig{Start: Earliest})
		require.NoError(t, err)
		require.Equal(t, want, valuesOf(nextN(t, r, len(want))))
		require.Equal(t, map[int32]int64{0: 40}, r.Positions())

		at, err := ro.NewReader("users", ReaderConfig{Start: AtOffset, StartOffset: 1})
		require.NoError(t, err)
		first := nextN(t, at, 1)[0]
		require.Equal(t, want[0], fmt.Sprintf("0:%d:%s", first.Offset, first.Value))
	})
}

func p0Size(t *testing.T, tp *Topic) int64 {
	t.Helper()
	p, err := tp.Partition(0)
	require.NoError(t, err)
	return p.Size()
}

// TestReadOnlyFollowsDeleteRecordsAndTruncation: a log start offset advanced by DeleteRecords
// (within a segment) and a truncation by the writer are seen at the next look: a reader below
// the start moves to it, a reader past the new end moves back to it (ResetEarliest), and the
// records the writer appends after the truncation are read at their offsets.
func TestReadOnlyFollowsDeleteRecordsAndTruncation(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp, err := s.CreateTopic("t", TopicConfig{})
		require.NoError(t, err)
		appendValues(t, tp, 0, 0, 10)
		p, err := tp.Partition(0)
		require.NoError(t, err)

		ro := env.openReadOnly(t, WithPollInterval(-1))
		low, err := ro.NewReader("t", ReaderConfig{Start: Earliest, Reset: ResetEarliest})
		require.NoError(t, err)
		high, err := ro.NewReader("t", ReaderConfig{Start: AtOffset, StartOffset: 9, Reset: ResetEarliest})
		require.NoError(t, err)
		strict, err := ro.NewReader("t", ReaderConfig{Start: AtOffset, StartOffset: 9})
		require.NoError(t, err)

		_, err = p.DeleteRecords(context.Background(), 4)
		require.NoError(t, err)
		require.NoError(t, p.TruncateTo(7))
		require.NoError(t, ro.Refresh())
		start, end, err := ro.Offsets("t", 0)
		require.NoError(t, err)
		require.Equal(t, [2]int64{4, 7}, [2]int64{start, end})
		require.Equal(t, []string{"0:4:v4", "0:5:v5", "0:6:v6"}, valuesOf(nextN(t, low, 3)))

		appendValues(t, tp, 0, 100, 103)
		require.NoError(t, ro.Refresh())
		require.Equal(t, []string{"0:7:v100", "0:8:v101", "0:9:v102"}, valuesOf(nextN(t, low, 3)))
		// high stood at 9, past the end of 7 the truncation left: it moved to 7, where the log
		// diverged.
		require.Equal(t, []string{"0:7:v100", "0:8:v101", "0:9:v102"}, valuesOf(nextN(t, high, 3)))
		// Under ResetNone the reader says where the log diverged, and stays.
		_, err = strict.Next(context.Background())
		var trunc *LogTruncatedError
		require.ErrorAs(t, err, &trunc)
		require.Equal(t, int64(7), trunc.TruncatedOffset)
		require.Equal(t, int64(9), trunc.CommittedOffset)
		require.Equal(t, map[int32]int64{0: 9}, strict.Positions())
	})
}
