// Package promcollector exports a commitlog store's figures (Store.Stats) as Prometheus metrics,
// named as the Prometheus JMX exporter's common Kafka rules name a Kafka broker's MBeans
// (kafka.log:type=Log,name=LogEndOffset,topic=T,partition=P becomes
// kafka_log_log_logendoffset{topic="T",partition="P"}; a *PerSec meter's Count becomes a
// counter ending in _total), and consumer lag as kafka-exporter names it
// (kafka_consumergroup_lag{consumergroup,topic,partition}), so that dashboards and alerts made for
// Kafka work unchanged. Figures Kafka has no metric for are named commitlog_*.
//
// The collector reads the store's figures at each scrape; it keeps no state of its own. Register
// it with a prometheus.Registry and serve that with promhttp:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(promcollector.New(store))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
//
// The root commitlog package does not import this one: a program that does not export metrics
// does not link the Prometheus client.
package promcollector

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/commitlog-go/commitlog"
)

// Source is what the collector reads: *commitlog.Store. Stats may return figures with an error
// (a named reader's positions file it could not read): the collector exports the figures and
// reports the error as an invalid metric, which promhttp's ContinueOnError logs and passes over.
type Source interface {
	Stats() (commitlog.StoreStats, error)
}

// Collector is a prometheus.Collector of a store's figures (see the package documentation for
// the names). Safe for concurrent use, as Registry.Gather wants.
type Collector struct {
	src Source

	// Per partition, labels topic and partition.
	logStartOffset, logEndOffset, size, numSegments *prometheus.Desc
	currentOffset, lsoLag                           *prometheus.Desc
	underReplicated, replicas, inSyncReplicas       *prometheus.Desc
	// Per topic, label topic.
	messagesIn, bytesIn, bytesOut, produceRequests, fetchRequests *prometheus.Desc
	batchesIn, batchesOut, messagesOut                            *prometheus.Desc
	retentionSegments, retentionBytes                             *prometheus.Desc
	// The store's.
	partitionCount, underReplicatedPartitions, isrShrinks, isrExpands *prometheus.Desc
	flushTime, flushMax                                               *prometheus.Desc
	cleanerMaxTime, cleanerRuns, cleanerRead, cleanerWritten          *prometheus.Desc
	cleanerRemoved, cleanerLastRun                                    *prometheus.Desc
	// Consumers, labels consumergroup (or reader), topic and partition.
	groupLag, groupOffset, readerLag, readerOffset *prometheus.Desc
	// errors is the invalid metric of a failed Stats.
	errors *prometheus.Desc
}

// New returns a collector of src's figures, usually a *commitlog.Store.
func New(src Source) *Collector {
	part := []string{"topic", "partition"}
	topic := []string{"topic"}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{
		src:            src,
		logStartOffset: d("kafka_log_log_logstartoffset", "The partition's log start offset: the first offset it holds (Kafka's Log LogStartOffset).", part),
		logEndOffset:   d("kafka_log_log_logendoffset", "The partition's log end offset: the offset the next record gets (Kafka's Log LogEndOffset).", part),
		size:           d("kafka_log_log_size", "Bytes of batches in the partition's segments (Kafka's Log Size).", part),
		numSegments:    d("kafka_log_log_numlogsegments", "Segments of the partition's log, the active one included (Kafka's Log NumLogSegments).", part),
		currentOffset:  d("kafka_topic_partition_current_offset", "The partition's high watermark: the offset below which consumers read (kafka-exporter's name).", part),
		lsoLag:         d("kafka_cluster_partition_laststableoffsetlag", "High watermark minus last stable offset: the records open transactions hold from read_committed consumers (Kafka's Partition LastStableOffsetLag).", part),
		underReplicated: d("kafka_cluster_partition_underreplicated",
			"1 when the partition leads and some follower is out of the in-sync replicas (Kafka's Partition UnderReplicated).", part),
		replicas:       d("kafka_cluster_partition_replicascount", "Replicas of a leading partition, the leader included; 0 on a follower (Kafka's Partition ReplicasCount).", part),
		inSyncReplicas: d("kafka_cluster_partition_insyncreplicascount", "In-sync replicas of a leading partition, the leader included; 0 on a follower (Kafka's Partition InSyncReplicasCount).", part),

		messagesIn:        d("kafka_server_brokertopicmetrics_messagesin_total", "Records appended to the topic's logs (Kafka's BrokerTopicMetrics MessagesInPerSec count).", topic),
		bytesIn:           d("kafka_server_brokertopicmetrics_bytesin_total", "Bytes of batches appended to the topic's logs (Kafka's BrokerTopicMetrics BytesInPerSec count).", topic),
		bytesOut:          d("kafka_server_brokertopicmetrics_bytesout_total", "Bytes of batches fetched from the topic's partitions (Kafka's BrokerTopicMetrics BytesOutPerSec count).", topic),
		produceRequests:   d("kafka_server_brokertopicmetrics_totalproducerequests_total", "Appends written to the topic's logs (Kafka's BrokerTopicMetrics TotalProduceRequestsPerSec count).", topic),
		fetchRequests:     d("kafka_server_brokertopicmetrics_totalfetchrequests_total", "Fetches from the topic's partitions (Kafka's BrokerTopicMetrics TotalFetchRequestsPerSec count).", topic),
		batchesIn:         d("commitlog_topic_batches_in_total", "Record batches appended to the topic's logs.", topic),
		batchesOut:        d("commitlog_topic_batches_out_total", "Record batches fetched from the topic's partitions.", topic),
		messagesOut:       d("commitlog_topic_messages_out_total", "Records in the batches fetched from the topic's partitions.", topic),
		retentionSegments: d("commitlog_log_retention_segments_deleted_total", "Segments deleted from the topic's logs by retention or a move of the log start offset (DeleteRecords, a follower's leader).", topic),
		retentionBytes:    d("commitlog_log_retention_bytes_deleted_total", "Bytes of the segments deleted from the topic's logs by retention or a move of the log start offset.", topic),

		partitionCount:            d("kafka_server_replicamanager_partitioncount", "Partitions in the store (Kafka's ReplicaManager PartitionCount).", nil),
		underReplicatedPartitions: d("kafka_server_replicamanager_underreplicatedpartitions", "Leading partitions with a follower out of the in-sync replicas (Kafka's ReplicaManager UnderReplicatedPartitions).", nil),
		isrShrinks:                d("kafka_server_replicamanager_isrshrinks_total", "Followers that left the in-sync replicas (Kafka's ReplicaManager IsrShrinksPerSec count).", nil),
		isrExpands:                d("kafka_server_replicamanager_isrexpands_total", "Followers that joined the in-sync replicas (Kafka's ReplicaManager IsrExpandsPerSec count).", nil),
		flushTime:                 d("kafka_log_logflushstats_logflushrateandtimems", "Log flushes (fsyncs) and their latency in milliseconds (Kafka's LogFlushStats LogFlushRateAndTimeMs).", nil),
		flushMax:                  d("commitlog_log_flush_time_ms_max", "The longest log flush, in milliseconds.", nil),
		cleanerMaxTime:            d("kafka_log_logcleaner_max_clean_time_secs", "The longest last compaction of the store's logs, in seconds (Kafka's LogCleaner max-clean-time-secs).", nil),
		cleanerRuns:               d("commitlog_logcleaner_runs_total", "Compactions that cleaned a log.", nil),
		cleanerRead:               d("commitlog_logcleaner_bytes_read_total", "Bytes the compactions read.", nil),
		cleanerWritten:            d("commitlog_logcleaner_bytes_written_total", "Bytes of cleaned segments the compactions wrote.", nil),
		cleanerRemoved:            d("commitlog_logcleaner_records_removed_total", "Records the compactions removed.", nil),
		cleanerLastRun:            d("commitlog_logcleaner_last_run_timestamp_seconds", "When the last compaction started, in seconds since the Unix epoch; absent before the first.", nil),

		groupLag:     d("kafka_consumergroup_lag", "Records between a consumer group's committed position and the high watermark (kafka-exporter's name).", []string{"consumergroup", "topic", "partition"}),
		groupOffset:  d("kafka_consumergroup_current_offset", "A consumer group's committed position (kafka-exporter's name).", []string{"consumergroup", "topic", "partition"}),
		readerLag:    d("commitlog_reader_lag", "Records between a named reader's committed position and the high watermark.", []string{"reader", "topic", "partition"}),
		readerOffset: d("commitlog_reader_current_offset", "A named reader's committed position.", []string{"reader", "topic", "partition"}),

		errors: d("commitlog_stats_error", "The store's figures could not all be read.", nil),
	}
}

// descs returns every metric description of c.
func (c *Collector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.logStartOffset, c.logEndOffset, c.size, c.numSegments, c.currentOffset, c.lsoLag,
		c.underReplicated, c.replicas, c.inSyncReplicas,
		c.messagesIn, c.bytesIn, c.bytesOut, c.produceRequests, c.fetchRequests, c.batchesIn, c.batchesOut,
		c.messagesOut, c.retentionSegments, c.retentionBytes,
		c.partitionCount, c.underReplicatedPartitions, c.isrShrinks, c.isrExpands, c.flushTime, c.flushMax,
		c.cleanerMaxTime, c.cleanerRuns, c.cleanerRead, c.cleanerWritten, c.cleanerRemoved, c.cleanerLastRun,
		c.groupLag, c.groupOffset, c.readerLag, c.readerOffset, c.errors}
}

// Describe sends the descriptions of every metric the collector may export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// Collect reads the store's figures and sends them as metrics. A Stats error is sent as an
// invalid metric, after the figures it returned.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.src.Stats()
	if err != nil {
		defer func() { ch <- prometheus.NewInvalidMetric(c.errors, err) }()
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, ts := range st.Topics {
		for _, ps := range ts.Partitions {
			l := []string{ps.Topic, strconv.Itoa(int(ps.Partition))}
			gauge(c.logStartOffset, float64(ps.LogStartOffset), l...)
			gauge(c.logEndOffset, float64(ps.LogEndOffset), l...)
			gauge(c.size, float64(ps.Size), l...)
			gauge(c.numSegments, float64(ps.Segments), l...)
			gauge(c.currentOffset, float64(ps.HighWatermark), l...)
			gauge(c.lsoLag, float64(ps.HighWatermark-ps.LastStableOffset), l...)
			gauge(c.underReplicated, bool01(ps.UnderReplicated), l...)
			gauge(c.replicas, float64(ps.Replicas), l...)
			gauge(c.inSyncReplicas, float64(ps.InSyncReplicas), l...)
		}
		t := ts.Topic
		counter(c.messagesIn, ts.Appended.Records, t)
		counter(c.bytesIn, ts.Appended.Bytes, t)
		counter(c.bytesOut, ts.Fetched.Bytes, t)
		counter(c.produceRequests, ts.Appended.Requests, t)
		counter(c.fetchRequests, ts.Fetched.Requests, t)
		counter(c.batchesIn, ts.Appended.Batches, t)
		counter(c.batchesOut, ts.Fetched.Batches, t)
		counter(c.messagesOut, ts.Fetched.Records, t)
		counter(c.retentionSegments, ts.Retention.SegmentsDeleted, t)
		counter(c.retentionBytes, ts.Retention.BytesDeleted, t)
	}
	if errors.Is(err, commitlog.ErrClosed) {
		return // nothing read
	}
	gauge(c.partitionCount, float64(st.Partitions))
	gauge(c.underReplicatedPartitions, float64(st.UnderReplicatedPartitions))
	counter(c.isrShrinks, st.ISRShrinks)
	counter(c.isrExpands, st.ISRExpands)
	buckets := make(map[float64]uint64, len(st.Flushes.Buckets))
	for _, b := range st.Flushes.Buckets {
		buckets[ms(b.UpperBound)] = uint64(b.Count)
	}
	ch <- prometheus.MustNewConstHistogram(c.flushTime, uint64(st.Flushes.Count), ms(st.Flushes.Total), buckets)
	gauge(c.flushMax, ms(st.Flushes.Max))
	gauge(c.cleanerMaxTime, st.Cleaner.LastDuration.Seconds())
	counter(c.cleanerRuns, st.Cleaner.Runs)
	counter(c.cleanerRead, st.Cleaner.BytesRead)
	counter(c.cleanerWritten, st.Cleaner.BytesWritten)
	counter(c.cleanerRemoved, st.Cleaner.RecordsRemoved)
	if !st.Cleaner.LastRun.IsZero() {
		gauge(c.cleanerLastRun, float64(st.Cleaner.LastRun.UnixNano())/1e9)
	}
	for _, g := range st.Groups {
		l := []string{g.Name, g.Topic, strconv.Itoa(int(g.Partition))}
		gauge(c.groupLag, float64(g.Lag), l...)
		gauge(c.groupOffset, float64(g.Offset), l...)
	}
	for _, r := range st.Readers {
		l := []string{r.Name, r.Topic, strconv.Itoa(int(r.Partition))}
		gauge(c.readerLag, float64(r.Lag), l...)
		gauge(c.readerOffset, float64(r.Offset), l...)
	}
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bool01 returns 1 for true, 0 for false.
func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
