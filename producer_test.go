package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// openTxnStore opens a store in dir on fsy with the given options and a topic "in" and "out" of
// parts partitions each; the store is closed at the end of the test.
func openTxnStore(t *testing.T, fsy fsys.FS, dir string, parts int32, opts ...Option) *Store {
	t.Helper()
	s, err := Open(dir, append([]Option{withFS(fsy)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	for _, name := range []string{"in", "out"} {
		if _, err := s.Topic(name); err == nil {
			continue
		}
		_, err := s.CreateTopic(name, TopicConfig{Partitions: parts, LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)
	}
	return s
}

// readAll reads every record of topic's partition p visible under isolation, from the start.
func readAll(t *testing.T, s *Store, topic string, p int32, iso IsolationLevel) []*Record {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	r, err := tp.NewReader(ReaderConfig{Partitions: []int32{p}, Start: Earliest, Isolation: iso})
	require.NoError(t, err)
	defer r.Close()
	var out []*Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		rec, err := r.Next(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return out
		}
		out = append(out, rec)
	}
}

func values(recs []*Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func TestIdempotentProducerAppends(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		p, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		pid, epoch := p.ID()
		require.Equal(t, int64(0), pid)
		require.Equal(t, int16(0), epoch)
		for i := range 3 {
			recs := []*Record{{Value: []byte(fmt.Sprint("a", i))}, {Value: []byte(fmt.Sprint("b", i))}}
			require.NoError(t, p.Append(ctx, "out", recs...))
			require.Equal(t, int64(2*i), recs[0].Offset)
			require.Equal(t, int64(2*i+1), recs[1].Offset)
		}
		part, err := stMust(s.Topic("out")).Partition(0)
		require.NoError(t, err)
		require.Equal(t, []ProducerState{{ProducerID: 0, ProducerEpoch: 0, LastSequence: 5, LastOffset: 5,
			LastTimestamp: part.Producers()[0].LastTimestamp, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}}, part.Producers())
		q, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		qid, _ := q.ID()
		require.Equal(t, int64(1), qid)
	})
}

func TestTransactionCommitAndAbort(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.ErrorIs(t, p.Append(ctx, "out", &Record{Value: []byte("x")}), ErrInvalidTxnState)

		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("c1")}, &Record{Value: []byte("c2")}))
		part, err := stMust(s.Topic("out")).Partition(0)
		require.NoError(t, err)
		require.Equal(t, int64(0), part.LastStableOffset())
		require.Equal(t, int64(2), part.HighWatermark())
		require.Empty(t, readAll(t, s, "out", 0, ReadCommitted))
		require.NoError(t, p.Commit(ctx))
		// c1 c2 at 0 and 1, the COMMIT marker at 2.
		require.Equal(t, int64(3), part.LastStableOffset())

		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("a1")}))
		require.NoError(t, p.Abort(ctx))
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("c3")}))
		require.NoError(t, p.Commit(ctx))

		require.Equal(t, []string{"c1", "c2", "c3"}, values(readAll(t, s, "out", 0, ReadCommitted)))
		require.Equal(t, []string{"c1", "c2", "a1", "c3"}, values(readAll(t, s, "out", 0, ReadUncommitted)))
		require.Equal(t, int64(7), part.LastStableOffset())
	})
}

func TestTransactionFencing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		old, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, old.Begin())
		require.NoError(t, old.Append(ctx, "out", &Record{Value: []byte("zombie")}))

		cur, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		oldID, oldEpoch := old.ID()
		curID, curEpoch := cur.ID()
		require.Equal(t, oldID, curID)
		// The older instance's open transaction was aborted with a bumped epoch, then the new
		// instance's InitProducerId bumped it once more.
		require.Equal(t, oldEpoch+2, curEpoch)

		require.ErrorIs(t, old.Append(ctx, "out", &Record{Value: []byte("late")}), ErrProducerFenced)
		require.ErrorIs(t, old.Commit(ctx), ErrProducerFenced)
		require.NoError(t, cur.Begin())
		require.NoError(t, cur.Append(ctx, "out", &Record{Value: []byte("fresh")}))
		require.NoError(t, cur.Commit(ctx))
		require.Equal(t, []string{"fresh"}, values(readAll(t, s, "out", 0, ReadCommitted)))
	})
}

func TestTransactionReaderPositions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		s := openTxnStore(t, fsy, dir, 1)
		in := stMust(s.Topic("in"))
		require.NoError(t, in.Append(ctx, &Record{Value: []byte("i0")}, &Record{Value: []byte("i1")}))
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "etl"})
		require.NoError(t, err)

		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("o0")}))
		require.NoError(t, p.CommitReaderPositions(ctx, "etl-reader", "in", map[int32]int64{0: 1}))
		got, err := s.CommittedPositions("etl-reader")
		require.NoError(t, err)
		require.Empty(t, got)
		require.NoError(t, p.Abort(ctx))
		got, err = s.CommittedPositions("etl-reader")
		require.NoError(t, err)
		require.Empty(t, got)

		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("o0")}))
		require.NoError(t, p.CommitReaderPositions(ctx, "etl-reader", "in", map[int32]int64{0: 1}))
		require.NoError(t, p.Commit(ctx))
		got, err = s.CommittedPositions("etl-reader")
		require.NoError(t, err)
		require.Equal(t, map[string]map[int32]int64{"in": {0: 1}}, got)
	})
}

func TestTransactionRecoveredAtOpen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		s, err := Open(dir, withFS(fsy))
		require.NoError(t, err)
		_, err = s.CreateTopic("out", TopicConfig{Partitions: 1, LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("open")}))
		require.NoError(t, s.Close())

		s, err = Open(dir, withFS(fsy))
		require.NoError(t, err)
		defer s.Close()
		part, err := stMust(s.Topic("out")).Partition(0)
		require.NoError(t, err)
		// The open transaction was aborted at open: its ABORT marker is at 1.
		require.Equal(t, int64(2), part.LogEndOffset())
		require.Equal(t, int64(2), part.LastStableOffset())
		require.Empty(t, readAll(t, s, "out", 0, ReadCommitted))
		require.ErrorIs(t, p.Append(ctx, "out", &Record{}), ErrClosed)
	})
}

// A producer's call is split by the topic's partitioner into one batch per partition, in
// ascending partition order, each with the producer's sequence in that partition; a topic of one
// partition takes the call whole.
func TestProducerAppendRoutesByPartition(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 3)
		out := stMust(s.Topic("out"))
		out.SetPartitioner(ManualPartitioner())
		p, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		rec := func(part int32, v string) *Record { return &Record{Partition: part, Value: []byte(v)} }
		first := []*Record{rec(2, "a"), rec(0, "b"), rec(2, "c"), rec(1, "d"), rec(0, "e")}
		require.NoError(t, p.Append(ctx, "out", first...))
		second := []*Record{rec(0, "f"), rec(2, "g")}
		require.NoError(t, p.Append(ctx, "out", second...))
		type at struct {
			Partition int32
			Offset    int64
		}
		var got []at
		for _, r := range append(first, second...) {
			got = append(got, at{r.Partition, r.Offset})
		}
		require.Equal(t, []at{{2, 0}, {0, 0}, {2, 1}, {1, 0}, {0, 1}, {0, 2}, {2, 2}}, got)
		for id, want := range map[int32][]string{0: {"b", "e", "f"}, 1: {"d"}, 2: {"a", "c", "g"}} {
			require.Equal(t, want, values(readAll(t, s, "out", id, ReadUncommitted)), "partition %d", id)
			part, err := out.Partition(id)
			require.NoError(t, err)
			ps := part.Producers()
			require.Len(t, ps, 1)
			// Sequences count per partition from 0: the last is the partition's record count - 1.
			require.Equal(t, int32(len(want)-1), ps[0].LastSequence, "partition %d", id)
			require.Equal(t, int64(len(want)-1), ps[0].LastOffset, "partition %d", id)
		}

		one, err := s.CreateTopic("one", TopicConfig{Partitions: 1, LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)
		recs := []*Record{{Key: []byte("k1"), Value: []byte("x")}, {Key: []byte("k2"), Value: []byte("y")}}
		require.NoError(t, p.Append(ctx, "one", recs...))
		require.Equal(t, []int64{0, 1}, []int64{recs[0].Offset, recs[1].Offset})
		part, err := one.Partition(0)
		require.NoError(t, err)
		require.Equal(t, int32(1), part.Producers()[0].LastSequence)
		require.Equal(t, []string{"x", "y"}, values(readAll(t, s, "one", 0, ReadUncommitted)))
	})
}
