package promcollector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// testEpoch is the tests' fixed clock.
var testEpoch = time.UnixMilli(1_700_000_000_000)

// records returns n records with one-byte keys and values at testEpoch: a batch of them is
// batchSize(n) bytes.
func records(n int) []*commitlog.Record {
	recs := make([]*commitlog.Record, n)
	for i := range recs {
		recs[i] = &commitlog.Record{Key: []byte{'a' + byte(i)}, Value: []byte{'0' + byte(i)}, Timestamp: testEpoch}
	}
	return recs
}

// batchSize is the stored size of a batch of n records(n): the 61-byte header, 9 bytes a record.
func batchSize(n int) int { return 61 + 9*n }

// TestCollectorStore: the metrics of a store after known appends, fetches, commits and a
// retention run, compared line by line with the exposition a scrape returns.
func TestCollectorStore(t *testing.T) {
	ctx := context.Background()
	s, err := commitlog.OpenInMemory(commitlog.WithClock(func() time.Time { return testEpoch }),
		commitlog.WithSync(commitlog.SyncAlways), commitlog.WithRetentionCheckInterval(-1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cfg := commitlog.LogConfig{SegmentBytes: 100, RetentionBytes: int64(batchSize(1))}
	tp, err := s.CreateTopic("orders", commitlog.TopicConfig{Partitions: 2, LogConfig: cfg})
	require.NoError(t, err)
	p0, err := tp.Partition(0)
	require.NoError(t, err)
	p1, err := tp.Partition(1)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, p0.Append(ctx, records(1)...)) // a segment each
	}
	require.NoError(t, p1.Append(ctx, records(4)...))
	n, err := tp.ApplyRetention()
	require.NoError(t, err)
	require.Equal(t, 2, n) // partition 0's two oldest segments
	b, err := p1.ReadBatches(nil, 0, 1<<20)
	require.NoError(t, err)
	require.Len(t, b, batchSize(4))

	r, err := tp.NewReader(commitlog.ReaderConfig{Name: "audit", Start: commitlog.AtOffset})
	require.NoError(t, err)
	require.NoError(t, r.Seek(1, 1))
	require.NoError(t, r.Commit(ctx))
	require.NoError(t, r.Close())
	require.NoError(t, s.SetGroupPositions(ctx, "billing", map[commitlog.TopicPartition]int64{{Topic: "orders", Partition: 1}: 3}))

	c := New(s)
	const want = `
# HELP kafka_log_log_logstartoffset The partition's log start offset: the first offset it holds (Kafka's Log LogStartOffset).
# TYPE kafka_log_log_logstartoffset gauge
kafka_log_log_logstartoffset{partition="0",topic="orders"} 2
kafka_log_log_logstartoffset{partition="1",topic="orders"} 0
# HELP kafka_log_log_logendoffset The partition's log end offset: the offset the next record gets (Kafka's Log LogEndOffset).
# TYPE kafka_log_log_logendoffset gauge
kafka_log_log_logendoffset{partition="0",topic="orders"} 3
kafka_log_log_logendoffset{partition="1",topic="orders"} 4
# HELP kafka_log_log_size Bytes of batches in the partition's segments (Kafka's Log Size).
# TYPE kafka_log_log_size gauge
kafka_log_log_size{partition="0",topic="orders"} 70
kafka_log_log_size{partition="1",topic="orders"} 97
# HELP kafka_log_log_numlogsegments Segments of the partition's log, the active one included (Kafka's Log NumLogSegments).
# TYPE kafka_log_log_numlogsegments gauge
kafka_log_log_numlogsegments{partition="0",topic="orders"} 1
kafka_log_log_numlogsegments{partition="1",topic="orders"} 1
# HELP kafka_topic_partition_current_offset The partition's high watermark: the offset below which consumers read (kafka-exporter's name).
# TYPE kafka_topic_partition_current_offset gauge
kafka_topic_partition_current_offset{partition="0",topic="orders"} 3
kafka_topic_partition_current_offset{partition="1",topic="orders"} 4
# HELP kafka_server_brokertopicmetrics_messagesin_total Records appended to the topic's logs (Kafka's BrokerTopicMetrics MessagesInPerSec count).
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 7
# HELP kafka_server_brokertopicmetrics_bytesin_total Bytes of batches appended to the topic's logs (Kafka's BrokerTopicMetrics BytesInPerSec count).
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 307
# HELP kafka_server_brokertopicmetrics_bytesout_total Bytes of batches fetched from the topic's partitions (Kafka's BrokerTopicMetrics BytesOutPerSec count).
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 97
# HELP kafka_server_brokertopicmetrics_totalproducerequests_total Appends written to the topic's logs (Kafka's BrokerTopicMetrics TotalProduceRequestsPerSec count).
# TYPE kafka_server_brokertopicmetrics_totalproducerequests_total counter
kafka_server_brokertopicmetrics_totalproducerequests_total{topic="orders"} 4
# HELP commitlog_topic_batches_in_total Record batches appended to the topic's logs.
# TYPE commitlog_topic_batches_in_total counter
commitlog_topic_batches_in_total{topic="orders"} 4
# HELP commitlog_log_retention_segments_deleted_total Segments deleted from the topic's logs by retention or a move of the log start offset (DeleteRecords, a follower's leader).
# TYPE commitlog_log_retention_segments_deleted_total counter
commitlog_log_retention_segments_deleted_total{topic="orders"} 2
# HELP commitlog_log_retention_bytes_deleted_total Bytes of the segments deleted from the topic's logs by retention or a move of the log start offset.
# TYPE commitlog_log_retention_bytes_deleted_total counter
commitlog_log_retention_bytes_deleted_total{topic="orders"} 140
# HELP kafka_server_replicamanager_partitioncount Partitions in the store (Kafka's ReplicaManager PartitionCount).
# TYPE kafka_server_replicamanager_partitioncount gauge
kafka_server_replicamanager_partitioncount 2
# HELP kafka_server_replicamanager_underreplicatedpartitions Leading partitions with a follower out of the in-sync replicas (Kafka's ReplicaManager UnderReplicatedPartitions).
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 0
# HELP kafka_consumergroup_lag Records between a consumer group's committed position and the high watermark (kafka-exporter's name).
# TYPE kafka_consumergroup_lag gauge
kafka_consumergroup_lag{consumergroup="billing",partition="1",topic="orders"} 1
# HELP kafka_consumergroup_current_offset A consumer group's committed position (kafka-exporter's name).
# TYPE kafka_consumergroup_current_offset gauge
kafka_consumergroup_current_offset{consumergroup="billing",partition="1",topic="orders"} 3
# HELP commitlog_reader_lag Records between a named reader's committed position and the high watermark.
# TYPE commitlog_reader_lag gauge
commitlog_reader_lag{partition="0",reader="audit",topic="orders"} 1
commitlog_reader_lag{partition="1",reader="audit",topic="orders"} 3
`
	names := []string{"kafka_log_log_logstartoffset", "kafka_log_log_logendoffset", "kafka_log_log_size",
		"kafka_log_log_numlogsegments", "kafka_topic_partition_current_offset",
		"kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_brokertopicmetrics_bytesin_total",
		"kafka_server_brokertopicmetrics_bytesout_total", "kafka_server_brokertopicmetrics_totalproducerequests_total",
		"commitlog_topic_batches_in_total", "commitlog_log_retention_segments_deleted_total",
		"commitlog_log_retention_bytes_deleted_total", "kafka_server_replicamanager_partitioncount",
		"kafka_server_replicamanager_underreplicatedpartitions", "kafka_consumergroup_lag",
		"kafka_consumergroup_current_offset", "commitlog_reader_lag"}
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), names...))

	// The flush latency histogram: one fdatasync a SyncAlways append (4), the latencies the
	// disk's; only the count is known.
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var flushes uint64
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "kafka_log_logflushstats_logflushrateandtimems" {
			found = true
			flushes = mf.GetMetric()[0].GetHistogram().GetSampleCount()
			require.Len(t, mf.GetMetric()[0].GetHistogram().GetBucket(), 16)
			require.Equal(t, 0.1, mf.GetMetric()[0].GetHistogram().GetBucket()[0].GetUpperBound())
			require.Equal(t, 10000.0, mf.GetMetric()[0].GetHistogram().GetBucket()[15].GetUpperBound())
		}
	}
	require.True(t, found)
	require.Equal(t, uint64(4), flushes)

	// A closed store: no figures, only the error.
	require.NoError(t, s.Close())
	mfs, err = reg.Gather()
	require.ErrorIs(t, err, commitlog.ErrClosed)
	require.Empty(t, mfs)
}

// fixedSource returns fixed figures and error.
type fixedSource struct {
	st  commitlog.StoreStats
	err error
}

func (f fixedSource) Stats() (commitlog.StoreStats, error) { return f.st, f.err }

// TestCollectorFixedFigures: the store-wide metrics from known figures: the flush histogram in
// milliseconds, the cleaner's, replication's; and an error of Stats as an invalid metric after
// the figures it returned.
func TestCollectorFixedFigures(t *testing.T) {
	buckets := make([]commitlog.HistogramBucket, 3)
	for i, b := range []struct {
		d time.Duration
		n int64
	}{{100 * time.Microsecond, 1}, {time.Millisecond, 3}, {10 * time.Millisecond, 4}} {
		buckets[i] = commitlog.HistogramBucket{UpperBound: b.d, Count: b.n}
	}
	st := commitlog.StoreStats{
		Topics: []commitlog.TopicStats{{Topic: "t", Partitions: []commitlog.PartitionStats{{
			Topic: "t", Partition: 3, LogEndOffset: 10, HighWatermark: 8, LastStableOffset: 6,
			Leader: true, Replicas: 3, InSyncReplicas: 2, UnderReplicated: true}},
			Fetched: commitlog.TrafficStats{Requests: 5, Batches: 6, Records: 7, Bytes: 800}}},
		Partitions: 1, UnderReplicatedPartitions: 1, ISRShrinks: 2, ISRExpands: 1,
		Flushes: commitlog.FlushStats{Count: 5, Total: 25 * time.Millisecond, Max: 20 * time.Millisecond, Buckets: buckets},
		Cleaner: commitlog.CleanerStats{Runs: 2, BytesRead: 4096, BytesWritten: 1024, RecordsRemoved: 9,
			LastRun: time.Unix(1_700_000_000, 500_000_000), LastDuration: 1500 * time.Millisecond},
	}
	c := New(fixedSource{st: st})
	const want = `
# HELP kafka_cluster_partition_laststableoffsetlag High watermark minus last stable offset: the records open transactions hold from read_committed consumers (Kafka's Partition LastStableOffsetLag).
# TYPE kafka_cluster_partition_laststableoffsetlag gauge
kafka_cluster_partition_laststableoffsetlag{partition="3",topic="t"} 2
# HELP kafka_cluster_partition_underreplicated 1 when the partition leads and some follower is out of the in-sync replicas (Kafka's Partition UnderReplicated).
# TYPE kafka_cluster_partition_underreplicated gauge
kafka_cluster_partition_underreplicated{partition="3",topic="t"} 1
# HELP kafka_cluster_partition_replicascount Replicas of a leading partition, the leader included; 0 on a follower (Kafka's Partition ReplicasCount).
# TYPE kafka_cluster_partition_replicascount gauge
kafka_cluster_partition_replicascount{partition="3",topic="t"} 3
# HELP kafka_cluster_partition_insyncreplicascount In-sync replicas of a leading partition, the leader included; 0 on a follower (Kafka's Partition InSyncReplicasCount).
# TYPE kafka_cluster_partition_insyncreplicascount gauge
kafka_cluster_partition_insyncreplicascount{partition="3",topic="t"} 2
# HELP kafka_server_brokertopicmetrics_totalfetchrequests_total Fetches from the topic's partitions (Kafka's BrokerTopicMetrics TotalFetchRequestsPerSec count).
# TYPE kafka_server_brokertopicmetrics_totalfetchrequests_total counter
kafka_server_brokertopicmetrics_totalfetchrequests_total{topic="t"} 5
# HELP commitlog_topic_batches_out_total Record batches fetched from the topic's partitions.
# TYPE commitlog_topic_batches_out_total counter
commitlog_topic_batches_out_total{topic="t"} 6
# HELP commitlog_topic_messages_out_total Records in the batches fetched from the topic's partitions.
# TYPE commitlog_topic_messages_out_total counter
commitlog_topic_messages_out_total{topic="t"} 7
# HELP kafka_server_replicamanager_isrshrinks_total Followers that left the in-sync replicas (Kafka's ReplicaManager IsrShrinksPerSec count).
# TYPE kafka_server_replicamanager_isrshrinks_total counter
kafka_server_replicamanager_isrshrinks_total 2
# HELP kafka_server_replicamanager_isrexpands_total Followers that joined the in-sync replicas (Kafka's ReplicaManager IsrExpandsPerSec count).
# TYPE kafka_server_replicamanager_isrexpands_total counter
kafka_server_replicamanager_isrexpands_total 1
# HELP kafka_server_replicamanager_underreplicatedpartitions Leading partitions with a follower out of the in-sync replicas (Kafka's ReplicaManager UnderReplicatedPartitions).
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 1
# HELP kafka_log_logflushstats_logflushrateandtimems Log flushes (fsyncs) and their latency in milliseconds (Kafka's LogFlushStats LogFlushRateAndTimeMs).
# TYPE kafka_log_logflushstats_logflushrateandtimems histogram
kafka_log_logflushstats_logflushrateandtimems_bucket{le="0.1"} 1
kafka_log_logflushstats_logflushrateandtimems_bucket{le="1"} 3
kafka_log_logflushstats_logflushrateandtimems_bucket{le="10"} 4
kafka_log_logflushstats_logflushrateandtimems_bucket{le="+Inf"} 5
kafka_log_logflushstats_logflushrateandtimems_sum 25
kafka_log_logflushstats_logflushrateandtimems_count 5
# HELP commitlog_log_flush_time_ms_max The longest log flush, in milliseconds.
# TYPE commitlog_log_flush_time_ms_max gauge
commitlog_log_flush_time_ms_max 20
# HELP kafka_log_logcleaner_max_clean_time_secs The longest last compaction of the store's logs, in seconds (Kafka's LogCleaner max-clean-time-secs).
# TYPE kafka_log_logcleaner_max_clean_time_secs gauge
kafka_log_logcleaner_max_clean_time_secs 1.5
# HELP commitlog_logcleaner_runs_total Compactions that cleaned a log.
# TYPE commitlog_logcleaner_runs_total counter
commitlog_logcleaner_runs_total 2
# HELP commitlog_logcleaner_bytes_read_total Bytes the compactions read.
# TYPE commitlog_logcleaner_bytes_read_total counter
commitlog_logcleaner_bytes_read_total 4096
# HELP commitlog_logcleaner_bytes_written_total Bytes of cleaned segments the compactions wrote.
# TYPE commitlog_logcleaner_bytes_written_total counter
commitlog_logcleaner_bytes_written_total 1024
# HELP commitlog_logcleaner_records_removed_total Records the compactions removed.
# TYPE commitlog_logcleaner_records_removed_total counter
commitlog_logcleaner_records_removed_total 9
# HELP commitlog_logcleaner_last_run_timestamp_seconds When the last compaction started, in seconds since the Unix epoch; absent before the first.
# TYPE commitlog_logcleaner_last_run_timestamp_seconds gauge
commitlog_logcleaner_last_run_timestamp_seconds 1.7000000005e+09
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kafka_cluster_partition_laststableoffsetlag", "kafka_cluster_partition_underreplicated",
		"kafka_cluster_partition_replicascount", "kafka_cluster_partition_insyncreplicascount",
		"kafka_server_brokertopicmetrics_totalfetchrequests_total", "commitlog_topic_batches_out_total",
		"commitlog_topic_messages_out_total", "kafka_server_replicamanager_isrshrinks_total",
		"kafka_server_replicamanager_isrexpands_total", "kafka_server_replicamanager_underreplicatedpartitions",
		"kafka_log_logflushstats_logflushrateandtimems", "commitlog_log_flush_time_ms_max",
		"kafka_log_logcleaner_max_clean_time_secs", "commitlog_logcleaner_runs_total",
		"commitlog_logcleaner_bytes_read_total", "commitlog_logcleaner_bytes_written_total",
		"commitlog_logcleaner_records_removed_total", "commitlog_logcleaner_last_run_timestamp_seconds"))

	// Before any clean, no last-run time.
	st.Cleaner = commitlog.CleanerStats{}
	require.Equal(t, 0, testutil.CollectAndCount(New(fixedSource{st: st}), "commitlog_logcleaner_last_run_timestamp_seconds"))

	// Figures with an error: all of them, then the error.
	failing := New(fixedSource{st: st, err: fmt.Errorf("reader %q: %w", "audit", commitlog.ErrCorrupt)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(failing)
	mfs, err := reg.Gather()
	require.ErrorIs(t, err, commitlog.ErrCorrupt)
	require.ErrorContains(t, err, `reader "audit"`)
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	require.True(t, got["kafka_log_log_logendoffset"])
	require.True(t, got["kafka_log_logflushstats_logflushrateandtimems"])
}
