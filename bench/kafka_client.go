package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The client side of the Kafka workloads (k): one kgo client in the bench's own process drives
// each server over loopback. Records are those of the other workloads: a 16-byte key holding the
// record's number and a 100-byte value cut from the seeded random slab.

// newKafkaClient returns a kgo client of the server at addr with kgo's defaults (acks=all,
// idempotence, 10 ms linger, 1 MB batches, 5 requests in flight with a producer id and 1
// without) but for compression, which is
// off: the values are random and do not compress, and snappy (kgo's default) would only spend
// client CPU that the server on the same machine then lacks.
func newKafkaClient(addr string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
}

// createKafkaTopic creates topic with partitions partitions through cl (CreateTopics, replication
// factor 1).
func createKafkaTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics: %d topics answered", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("CreateTopics %s: %w", topic, err)
	}
	return nil
}

// endOffsets returns the sum of the latest offsets of topic's partitions (ListOffsets).
func endOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions int32) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("ListOffsets: %w", err)
	}
	var sum int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("ListOffsets %s/%d: %w", topic, p.Partition, err)
			}
			sum += p.Offset
		}
	}
	return sum, nil
}

// produced is what produceRecords measured.
type produced struct {
	elapsed time.Duration
	// latencies holds each record's time from its Produce call (rate 0) or from its scheduled
	// time (rate > 0) to its promise, in ns, sorted.
	latencies []int64
	// lags holds, with a rate, how late each record's Produce call was against its due time, in
	// ns, sorted: the client's own delays (a descheduled or blocked producer), which the
	// latencies include.
	lags []int64
}

// produceRecords produces records first to first+n-1 through cl (which has a default produce
// topic) and waits for every promise. With rate 0 they are produced as fast as Produce takes
// them (it blocks once kgo buffers 50,000 records); with a rate, record first+j is due j/rate
// seconds after the start and its latency is counted from then, so a producer that falls behind
// its schedule is charged for it (no coordinated omission).
func produceRecords(ctx context.Context, cl *kgo.Client, gen *Gen, first int64, n int, rate float64) (produced, error) {
	keys := make([]byte, n*keySize)
	starts := make([]int64, n)
	var lags []int64
	if rate > 0 {
		lags = make([]int64, n)
	}
	lats := make([]int64, n)
	var (
		completed atomic.Int64
		allDone   = make(chan struct{})
		errOnce   sync.Once
		firstErr  error
	)
	base := time.Now()
	promise := func(r *kgo.Record, err error) {
		j := int64(binary.BigEndian.Uint64(r.Key)) - first
		lats[j] = int64(time.Since(base)) - starts[j]
		if err != nil {
			errOnce.Do(func() { firstErr = fmt.Errorf("record %d: %w", first+j, err) })
		}
		if completed.Add(1) == int64(n) {
			close(allDone)
		}
	}
	for j := range n {
		if rate > 0 {
			due := time.Duration(float64(j) / rate * 1e9)
			if d := due - time.Since(base); d > 0 {
				time.Sleep(d)
			}
			starts[j] = int64(due)
			lags[j] = max(0, int64(time.Since(base)-due))
		} else {
			starts[j] = int64(time.Since(base))
		}
		i := first + int64(j)
		cl.Produce(ctx, &kgo.Record{Key: PutKey(keys[j*keySize:], i), Value: gen.Value(i)}, promise)
	}
	select {
	case <-allDone:
	case <-ctx.Done():
		return produced{}, fmt.Errorf("%d of %d records acknowledged: %w", completed.Load(), n, ctx.Err())
	}
	out := produced{elapsed: time.Since(base), latencies: lats, lags: lags}
	// Every promise ran (the last one closed allDone after the others' counts): firstErr is
	// settled.
	if firstErr != nil {
		return out, firstErr
	}
	slices.Sort(lats)
	slices.Sort(lags)
	return out, nil
}

// requestTimes is a kgo hook that keeps the round trip of every Produce request (from its
// write to the end of its response's read, kgo's BrokerE2E.DurationE2E): the server's answer
// time plus loopback, and with several requests in flight the wait behind the earlier ones.
type requestTimes struct {
	mu    sync.Mutex
	times []int64 // ns
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (h *requestTimes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 0 || e2e.WriteErr != nil || e2e.ReadErr != nil {
		return
	}
	h.mu.Lock()
	h.times = append(h.times, int64(e2e.DurationE2E()))
	h.mu.Unlock()
}

// reset forgets the requests so far.
func (h *requestTimes) reset() {
	h.mu.Lock()
	h.times = h.times[:0]
	h.mu.Unlock()
}

// sorted returns the round trips since the last reset, sorted.
func (h *requestTimes) sorted() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.times)
	slices.Sort(out)
	return out
}

// percentile returns the q-quantile (0 < q <= 1) of sorted values, in ms.
func percentile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / 1e6
}

// consumeRecords reads n records of topic from its earliest offsets with a new consumer of the
// server at addr, and checks that each record's value is the one of the number in its key. The
// time runs from the client's creation to the n-th record.
func consumeRecords(ctx context.Context, addr, topic string, gen *Gen, n int64) (time.Duration, error) {
	start := time.Now()
	cl, err := newKafkaClient(addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var got int64
	var bad error
	for got < n && bad == nil {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, fmt.Errorf("fetch %s/%d: %w (%d of %d records read)", errs[0].Topic, errs[0].Partition, errs[0].Err, got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			if len(r.Key) != keySize {
				bad = fmt.Errorf("record at %d of partition %d has a key of %d bytes", r.Offset, r.Partition, len(r.Key))
				return
			}
			if err := gen.Check(int64(binary.BigEndian.Uint64(r.Key)), r.Key, r.Value); err != nil {
				bad = err
			}
			got++
		})
	}
	if bad != nil {
		return 0, bad
	}
	if got != n {
		return 0, fmt.Errorf("read %d records, want %d", got, n)
	}
	return time.Since(start), nil
}
