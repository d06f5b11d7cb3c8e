package commitlog

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// kvBatchSize is the stored size of a batch of n records with a one-byte key and value, all of
// one timestamp, uncompressed: the 61-byte header and 9 bytes a record (length, attributes,
// timestamp delta, offset delta, key length, key, value length, value, header count; each
// varint one byte).
func kvBatchSize(n int) int64 { return 61 + 9*int64(n) }

// kvRecords returns n records with one-byte keys and values, stamped at the test clock.
func kvRecords(n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = &Record{Key: []byte{'a' + byte(i%26)}, Value: []byte{'0' + byte(i%10)}, Timestamp: testEpoch}
	}
	return recs
}

// TestPartitionStatsTraffic: the append and fetch counters after known appends and reads, the
// offsets and sizes beside them, and the sums of Topic.Stats and Store.Stats.
func TestPartitionStatsTraffic(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncAlways), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: baseConfig()})
		require.NoError(t, err)
		p0, err := tp.Partition(0)
		require.NoError(t, err)
		require.NoError(t, p0.Append(ctx, kvRecords(3)...))
		require.NoError(t, p0.Append(ctx, kvRecords(2)...))

		b, err := p0.ReadBatches(nil, 0, 1<<20)
		require.NoError(t, err)
		require.Len(t, b, int(kvBatchSize(3)+kvBatchSize(2)))
		r, err := p0.ReadRange(3, 1<<20)
		require.NoError(t, err)
		require.Equal(t, kvBatchSize(2), r.Len())
		require.NoError(t, r.Close())
		empty, err := p0.ReadBatches(nil, 5, 1<<20) // at the log end offset: a fetch of nothing
		require.NoError(t, err)
		require.Empty(t, empty)
		_, err = p0.ReadBatches(nil, 9, 1<<20) // out of range: not counted
		require.ErrorIs(t, err, ErrOffsetOutOfRange)

		ps := p0.Stats()
		flushes := ps.Flushes
		ps.Flushes = FlushStats{}
		size := kvBatchSize(3) + kvBatchSize(2)
		require.Equal(t, PartitionStats{
			Topic: "orders", Partition: 0,
			LogStartOffset: 0, LogEndOffset: 5, HighWatermark: 5, LastStableOffset: 5,
			Size: size, Segments: 1,
			Leader: true, Replicas: 1, InSyncReplicas: 1,
			Appended: TrafficStats{Requests: 2, Batches: 2, Records: 5, Bytes: size},
			Fetched:  TrafficStats{Requests: 3, Batches: 3, Records: 7, Bytes: size + kvBatchSize(2)},
		}, ps)
		// SyncAlways: each of the two appends waited for its own fdatasync.
		require.Equal(t, int64(2), flushes.Count)
		require.Len(t, flushes.Buckets, 16)
		require.Equal(t, 100*time.Microsecond, flushes.Buckets[0].UpperBound)
		require.Equal(t, time.Millisecond, flushes.Buckets[3].UpperBound)
		require.Equal(t, 10*time.Second, flushes.Buckets[15].UpperBound)
		for i := 1; i < len(flushes.Buckets); i++ {
			require.LessOrEqual(t, flushes.Buckets[i-1].Count, flushes.Buckets[i].Count, "cumulative")
		}
		require.LessOrEqual(t, flushes.Buckets[15].Count, flushes.Count)
		require.LessOrEqual(t, flushes.Max, flushes.Total)

		ts := tp.Stats()
		require.Equal(t, "orders", ts.Topic)
		require.Len(t, ts.Partitions, 2)
		require.Equal(t, PartitionStats{Topic: "orders", Partition: 1, Leader: true, Replicas: 1, InSyncReplicas: 1,
			Segments: 1, Flushes: ts.Partitions[1].Flushes}, ts.Partitions[1])
		require.Equal(t, int64(0), ts.Partitions[1].Flushes.Count)
		require.Equal(t, size, ts.Size)
		require.Equal(t, 2, ts.Segments)
		require.Equal(t, ps.Appended, ts.Appended)
		require.Equal(t, ps.Fetched, ts.Fetched)
		require.Equal(t, int64(2), ts.Flushes.Count)

		// Topic.Append routes by key: records a..c go wherever the partitioner says, and the
		// sums count them all.
		require.NoError(t, tp.Append(ctx, kvRecords(3)...))
		st, err := s.Stats()
		require.NoError(t, err)
		require.Len(t, st.Topics, 1)
		require.Equal(t, int64(8), st.Appended.Records)
		require.Equal(t, 2, st.Partitions)
		require.Equal(t, st.Topics[0].Size, st.Size)
		require.Equal(t, st.Size, st.Topics[0].Partitions[0].Size+st.Topics[0].Partitions[1].Size)
		require.Equal(t, st.Appended.Bytes, st.Size)
	})
}

// TestPartitionStatsStagedAppends: appends written together (coalesced into shared batches, or
// staged by the group commit) count one request each, and the batches, records and bytes written.
func TestPartitionStatsStagedAppends(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncAlways), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 1, LogConfig: baseConfig()})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		const writers, each = 8, 25
		errs := make(chan error, writers)
		for range writers {
			go func() {
				var err error
				for range each {
					if err = p.Append(ctx, kvRecords(2)...); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range writers {
			require.NoError(t, <-errs)
		}
		ps := p.Stats()
		require.Equal(t, int64(2*writers*each), ps.LogEndOffset)
		// Concurrent calls are coalesced into shared batches (partition_append_queue.go): each
		// call is a request, and the batches and bytes are those the log holds.
		b, err := p.ReadBatches(nil, 0, math.MaxInt32)
		require.NoError(t, err)
		var batches int64
		for len(b) > 0 {
			n := recordbatch.SizeOf(b)
			require.Positive(t, n)
			b, batches = b[n:], batches+1
		}
		require.Equal(t, TrafficStats{Requests: writers * each, Batches: batches, Records: 2 * writers * each,
			Bytes: ps.Size}, ps.Appended)
		require.LessOrEqual(t, batches, int64(writers*each))
	})
}

// TestStatsRetention: the segments retention deletes, and their bytes, and those DeleteRecords
// deletes.
func TestStatsRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithClock(fixedClock), WithRetentionCheckInterval(-1))
		cfg := baseConfig()
		cfg.SegmentBytes = 100 // one 70-byte batch a segment
		cfg.RetentionBytes = 2 * kvBatchSize(1)
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: cfg})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		for range 5 {
			require.NoError(t, p.Append(ctx, kvRecords(1)...))
		}
		require.Equal(t, 5, p.Stats().Segments)
		n, err := tp.ApplyRetention()
		require.NoError(t, err)
		require.Equal(t, 3, n) // 350 bytes: the oldest three go, leaving 140
		ps := p.Stats()
		require.Equal(t, RetentionStats{SegmentsDeleted: 3, BytesDeleted: 3 * kvBatchSize(1)}, ps.Retention)
		require.Equal(t, int64(3), ps.LogStartOffset)
		require.Equal(t, 2*kvBatchSize(1), ps.Size)
		require.Equal(t, 2, ps.Segments)

		_, err = p.DeleteRecords(ctx, 4)
		require.NoError(t, err)
		ps = p.Stats()
		require.Equal(t, RetentionStats{SegmentsDeleted: 4, BytesDeleted: 4 * kvBatchSize(1)}, ps.Retention)
		require.Equal(t, int64(4), ps.LogStartOffset)
		st, err := s.Stats()
		require.NoError(t, err)
		require.Equal(t, ps.Retention, st.Retention)
	})
}

// TestStatsCleaner: a compaction's figures, and a Compact that finds nothing to clean counts no
// run.
func TestStatsCleaner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		s := openCompactStore(t, fsy, t.TempDir(), clock)
		tp, err := s.CreateTopic("table", TopicConfig{Partitions: 1, LogConfig: compactConfig()})
		require.NoError(t, err)
		fillTopic(t, tp, clock, 100, 7)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		require.Equal(t, CleanerStats{}, p.Stats().Cleaner)

		at := clock.Advance(time.Minute)
		res, err := tp.Compact(context.Background())
		require.NoError(t, err)
		require.Positive(t, res.RecordsRemoved)
		got := p.Stats().Cleaner
		require.Positive(t, got.LastDuration)
		got.LastDuration = 0
		require.Equal(t, CleanerStats{Runs: 1, BytesRead: res.BytesRead, BytesWritten: res.BytesWritten,
			RecordsRemoved: res.RecordsRemoved, LastRun: time.Unix(0, at.UnixNano())}, got)

		clock.Advance(time.Minute)
		again, err := tp.Compact(context.Background())
		require.NoError(t, err)
		require.Zero(t, again.Passes)
		require.Equal(t, int64(1), p.Stats().Cleaner.Runs)
		st, err := s.Stats()
		require.NoError(t, err)
		require.Equal(t, int64(1), st.Cleaner.Runs)
		require.True(t, st.Cleaner.LastRun.Equal(at))
	})
}

// TestStatsReplication: a follower that stops fetching leaves the ISR (a shrink, the partition
// under-replicated), and joins again when it catches up (an expand); its fetches count.
func TestStatsReplication(t *testing.T) {
	ctx := context.Background()
	clock := newRepClock()
	s, err := Open(t.TempDir(), WithClock(clock.Now), WithRetentionCheckInterval(-1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 1, LogConfig: baseConfig()})
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	rep := p.Replica()
	require.NoError(t, rep.BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1"}, LagTimeMax: 10 * time.Second}))
	require.NoError(t, p.AppendAcks(ctx, AcksLeader, kvRecords(4)...))

	ps := p.Stats()
	require.Equal(t, int64(4), ps.LogEndOffset)
	require.Equal(t, int64(0), ps.HighWatermark)
	require.True(t, ps.Leader)
	require.Equal(t, 2, ps.Replicas)
	require.Equal(t, 2, ps.InSyncReplicas)
	require.False(t, ps.UnderReplicated)

	clock.Advance(11 * time.Second)
	require.Equal(t, []string{}, nonNil(rep.ISR()))
	ps = p.Stats()
	require.Equal(t, 1, ps.InSyncReplicas)
	require.True(t, ps.UnderReplicated)
	require.Equal(t, int64(1), ps.ISRShrinks)
	require.Equal(t, int64(0), ps.ISRExpands)
	st, err := s.Stats()
	require.NoError(t, err)
	require.Equal(t, 1, st.UnderReplicatedPartitions)

	resp, err := rep.Fetch(ctx, FetchRequest{ReplicaID: "f1", LeaderEpoch: 1, Offset: 0})
	require.NoError(t, err)
	require.Len(t, resp.Batches, int(kvBatchSize(4)))
	_, err = rep.Fetch(ctx, FetchRequest{ReplicaID: "f1", LeaderEpoch: 1, Offset: 4})
	require.NoError(t, err)
	ps = p.Stats()
	require.Equal(t, []string{"f1"}, rep.ISR())
	require.Equal(t, 2, ps.InSyncReplicas)
	require.False(t, ps.UnderReplicated)
	require.Equal(t, int64(1), ps.ISRShrinks)
	require.Equal(t, int64(1), ps.ISRExpands)
	require.Equal(t, int64(4), ps.HighWatermark)
	require.Equal(t, TrafficStats{Requests: 2, Batches: 1, Records: 4, Bytes: kvBatchSize(4)}, ps.Fetched)

	require.NoError(t, rep.BecomeFollower(2))
	ps = p.Stats()
	require.False(t, ps.Leader)
	require.Zero(t, ps.Replicas)
	require.False(t, ps.UnderReplicated)
}

// nonNil returns s, or an empty slice for nil.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestStoreStatsLag: the lag of named readers' and groups' committed positions: to the high
// watermark, not counting records retention deleted below the log start offset, none for
// positions in topics the store no longer holds.
func TestStoreStatsLag(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithClock(fixedClock), WithRetentionCheckInterval(-1))
		tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: baseConfig()})
		require.NoError(t, err)
		_, err = s.CreateTopic("gone", TopicConfig{Partitions: 1, LogConfig: baseConfig()})
		require.NoError(t, err)
		for id, n := range []int{6, 3} {
			p, err := tp.Partition(int32(id))
			require.NoError(t, err)
			require.NoError(t, p.Append(ctx, kvRecords(n)...))
		}

		r, err := tp.NewReader(ReaderConfig{Name: "audit", Start: AtOffset, StartOffset: 0})
		require.NoError(t, err)
		require.NoError(t, r.Seek(0, 2))
		require.NoError(t, r.Seek(1, 3))
		require.NoError(t, r.Commit(ctx))
		require.NoError(t, r.Close())

		require.NoError(t, s.SetGroupPositions(ctx, "billing", map[TopicPartition]int64{
			{Topic: "orders", Partition: 0}: 1, {Topic: "gone", Partition: 0}: 0}))
		require.NoError(t, s.DeleteTopic("gone"))
		p0, err := tp.Partition(0)
		require.NoError(t, err)
		_, err = p0.DeleteRecords(ctx, 4)
		require.NoError(t, err)

		st, err := s.Stats()
		require.NoError(t, err)
		require.Equal(t, []ConsumerLag{
			{Name: "audit", Topic: "orders", Partition: 0, Offset: 2, HighWatermark: 6, Lag: 2},
			{Name: "audit", Topic: "orders", Partition: 1, Offset: 3, HighWatermark: 3, Lag: 0},
		}, st.Readers)
		require.Equal(t, []ConsumerLag{
			{Name: "billing", Topic: "orders", Partition: 0, Offset: 1, HighWatermark: 6, Lag: 2},
		}, st.Groups)
		require.Equal(t, []string{"orders"}, topicNames(st.Topics))

		require.NoError(t, s.Close())
		_, err = s.Stats()
		require.ErrorIs(t, err, ErrClosed)
	})
}

// topicNames returns the names of ts, in order.
func topicNames(ts []TopicStats) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Topic
	}
	return out
}

// TestFlushBucketBounds: the histogram's bounds run 100µs to 10s in steps of 1, 2.5 and 5, and
// an observation counts in the first bucket that holds it.
func TestFlushBucketBounds(t *testing.T) {
	var want []string
	for i := range flushBucketCount {
		want = append(want, flushBucketBound(i).String())
	}
	require.Equal(t, []string{"100µs", "250µs", "500µs", "1ms", "2.5ms", "5ms", "10ms", "25ms", "50ms", "100ms",
		"250ms", "500ms", "1s", "2.5s", "5s", "10s"}, want)

	var f flushCounters
	for _, d := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 101 * time.Microsecond, 3 * time.Millisecond, 11 * time.Second} {
		f.observe(d)
	}
	got := f.snapshot()
	require.Equal(t, int64(5), got.Count)
	require.Equal(t, 50*time.Microsecond+201*time.Microsecond+3*time.Millisecond+11*time.Second, got.Total)
	require.Equal(t, 11*time.Second, got.Max)
	counts := make([]string, len(got.Buckets))
	for i, b := range got.Buckets {
		counts[i] = fmt.Sprint(b.Count)
	}
	require.Equal(t, []string{"2", "3", "3", "3", "3", "4", "4", "4", "4", "4", "4", "4", "4", "4", "4", "4"}, counts)
}

// BenchmarkCountFetch: the fetch counters' walk over what a fetch returns, 1 MiB of 70-byte
// batches (one small record each), the worst case for a walk by batch.
func BenchmarkCountFetch(b *testing.B) {
	one := kvBatchSize(1)
	var buf []byte
	for i := int64(0); int64(len(buf))+one <= 1<<20; i++ {
		enc, err := recordbatch.Encode(nil, recordbatch.Header{BaseOffset: i, BaseTimestamp: testEpoch.UnixMilli(),
			MaxTimestamp: testEpoch.UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]recordbatch.Record{{Key: []byte("k"), Value: []byte("v")}})
		require.NoError(b, err)
		buf = append(buf, enc...)
	}
	var s logStats
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		s.countFetch(buf)
	}
	b.ReportMetric(float64(s.fetched.batches.Load())/float64(b.N), "batches/op")
}
