package commitlog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// Statistics: the figures an operator watches, as plain structs (Partition.Stats, Topic.Stats,
// Store.Stats), from which a metrics collector (the metrics/prometheus package) makes Kafka's
// broker metrics. Offsets and sizes are read at the call; the activity figures are monotonic
// counters kept by the log where the work happens (one atomic add per figure, no lock and no
// allocation on the append and fetch paths): rates are the collector's business.

// TrafficStats counts the data through one path of a partition since its log was opened:
// monotonic counters, as Kafka's BrokerTopicMetrics count (MessagesInPerSec, BytesInPerSec,
// BytesOutPerSec, TotalProduceRequestsPerSec, TotalFetchRequestsPerSec), without the rates.
type TrafficStats struct {
	// Requests counts the calls that moved data: appends written (concurrent appends written
	// together by the group commit count one each), fetches that returned batches or none.
	Requests int64
	// Batches, Records and Bytes count the RecordBatch v2 batches, the records in them (their
	// header's RecordCount) and the batches' bytes as stored.
	Batches int64
	Records int64
	Bytes   int64
}

// add sums o into t.
func (t *TrafficStats) add(o TrafficStats) {
	t.Requests += o.Requests
	t.Batches += o.Batches
	t.Records += o.Records
	t.Bytes += o.Bytes
}

// FlushStats counts a log's fsyncs and their latency (Kafka's LogFlushStats
// LogFlushRateAndTimeMs): the fdatasync of the active segment that appends wait for (the group
// commit, Sync) and each flush of sealed segments after a roll (their files and the directory, as
// one). Monotonic since the log was opened.
type FlushStats struct {
	Count int64
	// Total is the time all of them took, Max the longest.
	Total time.Duration
	Max   time.Duration
	// Buckets is the latency histogram, cumulative as Prometheus' are: Buckets[i].Count flushes
	// took at most Buckets[i].UpperBound. Those longer than the last bound count in Count only.
	Buckets []HistogramBucket
}

// HistogramBucket is one bucket of a cumulative latency histogram.
type HistogramBucket struct {
	UpperBound time.Duration
	Count      int64
}

// add sums o into f: counts and buckets add up, Max is the larger.
func (f *FlushStats) add(o FlushStats) {
	f.Count += o.Count
	f.Total += o.Total
	f.Max = max(f.Max, o.Max)
	if f.Buckets == nil {
		f.Buckets = make([]HistogramBucket, len(o.Buckets))
		for i, b := range o.Buckets {
			f.Buckets[i].UpperBound = b.UpperBound
		}
	}
	for i := range min(len(f.Buckets), len(o.Buckets)) {
		f.Buckets[i].Count += o.Buckets[i].Count
	}
}

// RetentionStats counts what left a log at its start since it was opened: the segments deleted,
// and their bytes, by retention (retention.ms, retention.bytes) or because the log start offset
// passed them (DeleteRecords, a follower following its leader's start), as Kafka's
// UnifiedLog.deleteOldSegments deletes for all three.
type RetentionStats struct {
	SegmentsDeleted int64
	BytesDeleted    int64
}

// CleanerStats counts a log's compactions since it was opened, by the store's cleaner threads or
// Compact (Kafka's LogCleaner metrics): the runs that cleaned anything, the bytes they read and
// wrote, the records they removed.
type CleanerStats struct {
	Runs           int64
	BytesRead      int64
	BytesWritten   int64
	RecordsRemoved int64
	// LastRun is when the last run started, by the log's clock (WithClock's, else time.Now);
	// zero when none ran. LastDuration is how long it took. In a topic's or the store's sum,
	// LastRun is the latest of its logs' and LastDuration the longest of their last runs (Kafka's
	// max-clean-time-secs).
	LastRun      time.Time
	LastDuration time.Duration
}

// add sums o into c (see LastRun for the times).
func (c *CleanerStats) add(o CleanerStats) {
	c.Runs += o.Runs
	c.BytesRead += o.BytesRead
	c.BytesWritten += o.BytesWritten
	c.RecordsRemoved += o.RecordsRemoved
	if o.LastRun.After(c.LastRun) {
		c.LastRun = o.LastRun
	}
	c.LastDuration = max(c.LastDuration, o.LastDuration)
}

// PartitionStats is one partition's figures (Partition.Stats): its log's offsets and size, read
// at the call, its replication state, and its activity counters since the store opened it.
type PartitionStats struct {
	Topic     string
	Partition int32
	// LogStartOffset, LogEndOffset, HighWatermark and LastStableOffset are Kafka's offsets of
	// the same names (see Partition).
	LogStartOffset   int64
	LogEndOffset     int64
	HighWatermark    int64
	LastStableOffset int64
	// Size is the bytes of batches in the log's segments (Kafka's Log Size), Segments their
	// count, the active one included (NumLogSegments).
	Size     int64
	Segments int
	// Leader says that the partition leads (a partition that is not replicated leads itself).
	// On a leader, Replicas counts the replicas (the leader and its followers, Kafka's
	// ReplicasCount) and InSyncReplicas those in the ISR, the leader included
	// (InSyncReplicasCount); UnderReplicated says that some follower is not in the ISR (Kafka's
	// UnderReplicated). A follower reports 0, 0 and false, as a Kafka follower does.
	Leader          bool
	Replicas        int
	InSyncReplicas  int
	UnderReplicated bool
	// ISRShrinks and ISRExpands count the followers that left and joined the ISR while the
	// partition led (Kafka's ReplicaManager IsrShrinksPerSec and IsrExpandsPerSec).
	ISRShrinks int64
	ISRExpands int64
	// Appended counts every batch written to the log: a leader's appends and a follower's copies
	// of its leader's batches. Fetched counts the batches read by the partition's fetch paths:
	// ReadBatches (readers, ReadRecords), ReadRange and ReadRangeBelow (a broker's fetch), and a
	// follower's Fetch from this leader (Kafka's BytesOutPerSec counts those too). Scan and
	// ReadRecord are not counted.
	Appended TrafficStats
	Fetched  TrafficStats
	// Flushes are the log's fsyncs and their latency.
	Flushes   FlushStats
	Retention RetentionStats
	Cleaner   CleanerStats
}

// TopicStats is one topic's figures (Topic.Stats): its partitions' in partition order, and their
// sums.
type TopicStats struct {
	Topic      string
	Partitions []PartitionStats
	// The sums over Partitions.
	Size                      int64
	Segments                  int
	UnderReplicatedPartitions int
	ISRShrinks                int64
	ISRExpands                int64
	Appended                  TrafficStats
	Fetched                   TrafficStats
	Flushes                   FlushStats
	Retention                 RetentionStats
	Cleaner                   CleanerStats
}

// ConsumerLag is a consumer's committed position in one partition, with its lag: a named
// reader's (Store.CommittedPositions) or a consumer group's.
type ConsumerLag struct {
	// Name is the reader's name or the group's id.
	Name      string
	Topic     string
	Partition int32
	// Offset is the committed position, the offset of the next record to read.
	Offset int64
	// HighWatermark is the partition's high watermark; Lag the records between the position and
	// it, the position taken at the log start offset when retention or DeleteRecords deleted the
	// records below it (those will never be read); 0 when caught up or past it.
	HighWatermark int64
	Lag           int64
}

// StoreStats is the store's figures (Store.Stats): its topics', ordered by name, their sums, and
// the lag of its named readers and consumer groups.
type StoreStats struct {
	Topics []TopicStats
	// The sums over Topics; UnderReplicatedPartitions is Kafka's ReplicaManager
	// UnderReplicatedPartitions.
	Size                      int64
	Segments                  int
	Partitions                int
	UnderReplicatedPartitions int
	ISRShrinks                int64
	ISRExpands                int64
	Appended                  TrafficStats
	Fetched                   TrafficStats
	Flushes                   FlushStats
	Retention                 RetentionStats
	Cleaner                   CleanerStats
	// Readers are the committed positions of the named readers, by reader name, topic and
	// partition; Groups those of the consumer groups loaded from __consumer_offsets, by group id,
	// topic and partition (none before the store has a group coordinator). Positions in topics
	// the store no longer holds are left out.
	Readers []ConsumerLag
	Groups  []ConsumerLag
}

// flushBucketCount is the number of flush latency buckets: 100µs to 10s, in steps of 1, 2.5, 5.
const flushBucketCount = 16

// flushBucketBound returns the upper bound of flush latency bucket i: 100µs, 250µs, 500µs, 1ms,
// ..., 5s, 10s.
func flushBucketBound(i int) time.Duration {
	d := 100 * time.Microsecond
	for range i / 3 {
		d *= 10
	}
	switch i % 3 {
	case 1:
		return d * 5 / 2
	case 2:
		return d * 5
	}
	return d
}

// flushCounters is a log's fsync count and latency histogram.
type flushCounters struct {
	count, total, max atomic.Int64 // total and max in nanoseconds
	buckets           [flushBucketCount]atomic.Int64
}

// observe counts one flush that took d.
func (f *flushCounters) observe(d time.Duration) {
	f.count.Add(1)
	f.total.Add(int64(d))
	for cur := f.max.Load(); int64(d) > cur && !f.max.CompareAndSwap(cur, int64(d)); cur = f.max.Load() {
	}
	for i := range flushBucketCount {
		if d <= flushBucketBound(i) {
			f.buckets[i].Add(1)
			return
		}
	}
}

// snapshot returns the counters as FlushStats, buckets made cumulative.
func (f *flushCounters) snapshot() FlushStats {
	out := FlushStats{Count: f.count.Load(), Total: time.Duration(f.total.Load()), Max: time.Duration(f.max.Load()),
		Buckets: make([]HistogramBucket, flushBucketCount)}
	var sum int64
	for i := range flushBucketCount {
		sum += f.buckets[i].Load()
		out.Buckets[i] = HistogramBucket{UpperBound: flushBucketBound(i), Count: sum}
	}
	return out
}

// trafficCounters are the counters behind a TrafficStats.
type trafficCounters struct {
	requests, batches, records, bytes atomic.Int64
}

func (t *trafficCounters) add(requests, batches, records, bytes int64) {
	t.requests.Add(requests)
	t.batches.Add(batches)
	t.records.Add(records)
	t.bytes.Add(bytes)
}

func (t *trafficCounters) snapshot() TrafficStats {
	return TrafficStats{Requests: t.requests.Load(), Batches: t.batches.Load(), Records: t.records.Load(), Bytes: t.bytes.Load()}
}

// logStats are a log's activity counters, which the Log owns and its partition adds to (fetches,
// ISR changes). Every figure is an atomic counter, added to where the work happens.
type logStats struct {
	appended, fetched          trafficCounters
	flushes                    flushCounters
	isrShrinks, isrExpands     atomic.Int64
	segmentsDeleted            atomic.Int64
	bytesDeleted               atomic.Int64
	cleanerRuns                atomic.Int64
	cleanerRead, cleanerWrote  atomic.Int64
	cleanerRemoved             atomic.Int64
	cleanerLast, cleanerLastNs atomic.Int64 // the last run's start (Unix ns by the log's clock) and duration
}

// countFetch counts a fetch that returned the back-to-back batches b, as the log's reads return
// them (whole, checked): the walk reads each header's length and record count only. A length that
// does not fit what is left ends the walk; the bytes count whole.
func (s *logStats) countFetch(b []byte) {
	var batches, records int64
	for n := int64(0); int64(len(b))-n >= recordbatch.HeaderSize; {
		size := recordbatch.SizeOf(b[n:])
		if size < recordbatch.HeaderSize || size > int64(len(b))-n {
			break
		}
		batches++
		records += int64(recordbatch.RecordCountOf(b[n:]))
		n += size
	}
	s.fetched.add(1, batches, records, int64(len(b)))
}

// deleted counts the segments gone that left the log at its start.
func (s *logStats) deleted(gone []*segment.Segment) {
	var bytes int64
	for _, seg := range gone {
		bytes += seg.Size()
	}
	s.segmentsDeleted.Add(int64(len(gone)))
	s.bytesDeleted.Add(bytes)
}

// cleaned counts a compaction that started at start (the log's clock) and took d, unless it
// cleaned nothing.
func (s *logStats) cleaned(r CompactionResult, start time.Time, d time.Duration) {
	if r.Passes == 0 {
		return
	}
	s.cleanerRuns.Add(1)
	s.cleanerRead.Add(r.BytesRead)
	s.cleanerWrote.Add(r.BytesWritten)
	s.cleanerRemoved.Add(r.RecordsRemoved)
	s.cleanerLast.Store(start.UnixNano())
	s.cleanerLastNs.Store(int64(d))
}

// cleanerSnapshot returns the cleaner counters as CleanerStats.
func (s *logStats) cleanerSnapshot() CleanerStats {
	c := CleanerStats{Runs: s.cleanerRuns.Load(), BytesRead: s.cleanerRead.Load(), BytesWritten: s.cleanerWrote.Load(),
		RecordsRemoved: s.cleanerRemoved.Load(), LastDuration: time.Duration(s.cleanerLastNs.Load())}
	if c.Runs > 0 {
		c.LastRun = time.Unix(0, s.cleanerLast.Load())
	}
	return c
}

// Stats returns the partition's figures: offsets, size and replication state as of the call
// (each read on its own, so that two of them may come from either side of a concurrent append),
// and the activity counters since the store opened the partition. It takes the log's and the
// partition's locks briefly and walks the segment list; it never waits for I/O.
func (p *Partition) Stats() PartitionStats {
	l := p.log
	ps := PartitionStats{Topic: p.topicName, Partition: p.id}
	l.mu.RLock()
	ps.LogStartOffset, ps.LogEndOffset, ps.Segments = l.logStartOffset, l.active().NextOffset(), len(l.segments)
	for _, s := range l.segments {
		ps.Size += s.Size()
	}
	l.mu.RUnlock()
	ps.HighWatermark = p.HighWatermark()
	ps.LastStableOffset = p.LastStableOffset()
	p.mu.Lock()
	if !p.follower {
		ps.Leader = true
		ps.Replicas, ps.InSyncReplicas = 1+len(p.replicas), 1
		for _, r := range p.replicas {
			if r.inSync {
				ps.InSyncReplicas++
			}
		}
		ps.UnderReplicated = ps.InSyncReplicas < ps.Replicas
	}
	p.mu.Unlock()
	st := &l.stats
	ps.ISRShrinks, ps.ISRExpands = st.isrShrinks.Load(), st.isrExpands.Load()
	ps.Appended, ps.Fetched = st.appended.snapshot(), st.fetched.snapshot()
	ps.Flushes = st.flushes.snapshot()
	ps.Retention = RetentionStats{SegmentsDeleted: st.segmentsDeleted.Load(), BytesDeleted: st.bytesDeleted.Load()}
	ps.Cleaner = st.cleanerSnapshot()
	return ps
}

// Stats returns the figures of the topic's partitions (see Partition.Stats), in partition order,
// with their sums.
func (t *Topic) Stats() TopicStats {
	parts := t.parts()
	ts := TopicStats{Topic: t.name, Partitions: make([]PartitionStats, len(parts))}
	for i, p := range parts {
		ps := p.Stats()
		ts.Partitions[i] = ps
		ts.Size += ps.Size
		ts.Segments += ps.Segments
		if ps.UnderReplicated {
			ts.UnderReplicatedPartitions++
		}
		ts.ISRShrinks += ps.ISRShrinks
		ts.ISRExpands += ps.ISRExpands
		ts.Appended.add(ps.Appended)
		ts.Fetched.add(ps.Fetched)
		ts.Flushes.add(ps.Flushes)
		ts.Retention.SegmentsDeleted += ps.Retention.SegmentsDeleted
		ts.Retention.BytesDeleted += ps.Retention.BytesDeleted
		ts.Cleaner.add(ps.Cleaner)
	}
	return ts
}

// Stats returns the figures of every topic (see Topic.Stats), ordered by name, their sums, and
// the lag of the named readers' committed positions and of the consumer groups'. It reads each
// named reader's positions file; a file it cannot read leaves that reader out, and Stats returns
// the rest with an error naming it (ErrCorrupt for a damaged file). The internal logs
// (__consumer_offsets, __transaction_state) are not among the topics. ErrClosed, and no figures,
// after Close.
func (s *Store) Stats() (StoreStats, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return StoreStats{}, ErrClosed
	}
	topics := make([]*Topic, 0, len(s.topics))
	for _, t := range s.topics {
		topics = append(topics, t)
	}
	s.mu.RUnlock()
	slices.SortFunc(topics, func(a, b *Topic) int { return cmp.Compare(a.name, b.name) })

	var out StoreStats
	parts := map[string][]PartitionStats{}
	for _, t := range topics {
		ts := t.Stats()
		out.Topics = append(out.Topics, ts)
		parts[ts.Topic] = ts.Partitions
		out.Size += ts.Size
		out.Segments += ts.Segments
		out.Partitions += len(ts.Partitions)
		out.UnderReplicatedPartitions += ts.UnderReplicatedPartitions
		out.ISRShrinks += ts.ISRShrinks
		out.ISRExpands += ts.ISRExpands
		out.Appended.add(ts.Appended)
		out.Fetched.add(ts.Fetched)
		out.Flushes.add(ts.Flushes)
		out.Retention.SegmentsDeleted += ts.Retention.SegmentsDeleted
		out.Retention.BytesDeleted += ts.Retention.BytesDeleted
		out.Cleaner.add(ts.Cleaner)
	}
	if out.Flushes.Buckets == nil {
		out.Flushes = (&flushCounters{}).snapshot()
	}
	lag := func(name, topic string, partition int32, offset int64) (ConsumerLag, bool) {
		ps := parts[topic]
		if partition < 0 || int(partition) >= len(ps) {
			return ConsumerLag{}, false
		}
		p := ps[partition]
		return ConsumerLag{Name: name, Topic: topic, Partition: partition, Offset: offset, HighWatermark: p.HighWatermark,
			Lag: max(p.HighWatermark-max(offset, p.LogStartOffset), 0)}, true
	}

	var errs []error
	names, err := s.Readers()
	if err != nil {
		errs = append(errs, fmt.Errorf("named readers: %w", err))
	}
	for _, name := range names {
		pos, err := s.readCommitted(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("reader %q: %w", name, err))
			continue
		}
		for topic, byPart := range pos {
			for part, cp := range byPart {
				if c, ok := lag(name, topic, part, cp.offset); ok {
					out.Readers = append(out.Readers, c)
				}
			}
		}
	}
	s.groupsMu.Lock()
	loaded := s.groupsLoaded
	s.groupsMu.Unlock()
	if loaded {
		for _, g := range s.groups.ListGroups() {
			offsets, err := s.groups.FetchOffsets(g.Group, nil)
			if err != nil {
				errs = append(errs, fmt.Errorf("group %q: %w", g.Group, err))
				continue
			}
			for tp, o := range offsets {
				if c, ok := lag(g.Group, tp.Topic, tp.Partition, o.Offset); ok {
					out.Groups = append(out.Groups, c)
				}
			}
		}
	}
	byName := func(a, b ConsumerLag) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	}
	slices.SortFunc(out.Readers, byName)
	slices.SortFunc(out.Groups, byName)
	return out, errors.Join(errs...)
}

// countRange counts the fetch of range r, as read with err, and returns both.
func (p *Partition) countRange(r *BatchRange, err error) (*BatchRange, error) {
	if err == nil {
		p.log.stats.fetched.add(1, r.batches, r.records, r.size)
	}
	return r, err
}
