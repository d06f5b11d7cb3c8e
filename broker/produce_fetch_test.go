package broker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// backends are the stores the behaviour tests run on: a file store and an in-memory one.
var backends = []struct {
	name string
	open func(t testing.TB) *commitlog.Store
}{
	{"file", func(t testing.TB) *commitlog.Store {
		s, err := commitlog.Open(t.TempDir(), commitlog.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"memory", func(t testing.TB) *commitlog.Store {
		s, err := commitlog.OpenInMemory(commitlog.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceSync produces recs to topic with cl and requires every one acknowledged, returning them
// with their offsets and partitions set.
func produceSync(t testing.TB, ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	res := cl.ProduceSync(ctx, recs...)
	require.NoError(t, res.FirstErr())
	out := make([]*kgo.Record, len(res))
	for i, r := range res {
		out[i] = r.Record
	}
	return out
}

// consumeN polls cl until n records arrived and returns them in arrival order.
func consumeN(t testing.TB, ctx context.Context, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(got), n)
		fs.EachError(func(topic string, p int32, err error) {
			require.NoError(t, err, "fetch of topic %s partition %d", topic, p)
		})
		got = append(got, fs.Records()...)
	}
	require.Len(t, got, n)
	return got
}

func TestProduceConsumeKgo(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := startBroker(t, be.open(t), Config{})
			b.createTopic(t, "events", 4)
			ctx := testContext(t)
			prod := b.client(t, kgo.DefaultProduceTopic("events"))
			const n = 1000
			recs := make([]*kgo.Record, n)
			for i := range recs {
				recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "v%d", i),
					Headers: []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}}}
			}
			acked := produceSync(t, ctx, prod, recs...)
			want := map[string]*kgo.Record{}
			next := map[int32]int64{}
			for _, r := range acked {
				// Offsets of one partition are handed out in order from 0.
				require.Equal(t, next[r.Partition], r.Offset, "partition %d", r.Partition)
				next[r.Partition]++
				want[string(r.Value)] = r
			}

			cons := b.client(t, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got := consumeN(t, ctx, cons, n)
			for _, r := range got {
				w := want[string(r.Value)]
				require.NotNil(t, w, "unexpected record %q", r.Value)
				require.Equal(t, w.Key, r.Key)
				require.Equal(t, w.Partition, r.Partition)
				require.Equal(t, w.Offset, r.Offset)
				require.Equal(t, w.Headers, r.Headers)
				require.Equal(t, w.Timestamp.UnixMilli(), r.Timestamp.UnixMilli())
				delete(want, string(r.Value))
			}
			require.Empty(t, want)
		})
	}
}

// TestProduceCompressionAndIdempotence produces with each codec kgo has, with idempotence on
// (kgo's default) and off, and reads the records back through the broker and straight from the
// store: the batches are stored as the client compressed them.
func TestProduceCompressionAndIdempotence(t *testing.T) {
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		want  commitlog.Compression
	}{
		{"none", kgo.NoCompression(), commitlog.CompressionNone},
		{"gzip", kgo.GzipCompression(), commitlog.CompressionGzip},
		{"snappy", kgo.SnappyCompression(), commitlog.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), commitlog.CompressionLZ4},
		{"zstd", kgo.ZstdCompression(), commitlog.CompressionZstd},
	}
	for _, idempotent := range []bool{true, false} {
		for _, c := range codecs {
			t.Run(fmt.Sprintf("%s/idempotent=%v", c.name, idempotent), func(t *testing.T) {
				b := startBroker(t, nil, Config{})
				b.createTopic(t, "t", 1)
				ctx := testContext(t)
				opts := []kgo.Opt{kgo.DefaultProduceTopic("t"), kgo.ProducerBatchCompression(c.codec)}
				if !idempotent {
					opts = append(opts, kgo.DisableIdempotentWrite())
				}
				prod := b.client(t, opts...)
				const n = 200
				recs := make([]*kgo.Record, n)
				for i := range recs {
					recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "value %03d with some repeated text repeated text", i)}
				}
				produceSync(t, ctx, prod, recs...)

				cons := b.client(t, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				got := consumeN(t, ctx, cons, n)
				for i, r := range got {
					require.Equal(t, int64(i), r.Offset)
					require.Equal(t, recs[i].Value, r.Value)
				}

				// The stored batches carry the client's codec and, with idempotence, its
				// producer id.
				topic, err := b.store.Topic("t")
				require.NoError(t, err)
				p, err := topic.Partition(0)
				require.NoError(t, err)
				batches, err := p.ReadBatches(nil, 0, 1<<20)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(batches), 61)
				attrs := int16(batches[21])<<8 | int16(batches[22])
				require.Equal(t, int16(c.want), attrs&0x7, "compression bits of the first batch")
				pid := int64(0)
				for _, x := range batches[43:51] {
					pid = pid<<8 | int64(x)
				}
				if idempotent {
					require.GreaterOrEqual(t, pid, int64(0), "producer id of an idempotent batch")
				} else {
					require.Equal(t, int64(-1), pid, "producer id of a plain batch")
				}
			})
		}
	}
}

// TestConsumeFromLatestAndTimestamp starts consumers at the end and at a timestamp.
func TestConsumeFromLatestAndTimestamp(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "t", 1)
	ctx := testContext(t)
	prod := b.client(t, kgo.DefaultProduceTopic("t"))
	base := time.UnixMilli(1_700_000_000_000)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "old %d", i), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	produceSync(t, ctx, prod, recs...)

	// From the timestamp of record 6: records 6 to 9.
	atTime := b.client(t, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(base.Add(6*time.Second).UnixMilli())))
	got := consumeN(t, ctx, atTime, 4)
	for i, r := range got {
		require.Equal(t, int64(6+i), r.Offset)
		require.Equal(t, fmt.Sprintf("old %d", 6+i), string(r.Value))
		require.Equal(t, base.Add(time.Duration(6+i)*time.Second).UnixMilli(), r.Timestamp.UnixMilli())
	}

	// From the end: only what is produced after the consumer has its position, which it has
	// once a fetch was answered.
	fetched := &fetchAnswered{ch: make(chan struct{})}
	latest := b.client(t, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(fetched))
	select {
	case <-fetched.ch:
	case <-ctx.Done():
		t.Fatal("no fetch answered")
	}
	produceSync(t, ctx, prod, &kgo.Record{Value: []byte("new")})
	got = consumeN(t, ctx, latest, 1)
	require.Equal(t, "new", string(got[0].Value))
	require.Equal(t, int64(10), got[0].Offset)
}

// fetchAnswered is a kgo hook that closes ch when the first Fetch response was read.
type fetchAnswered struct {
	once sync.Once
	ch   chan struct{}
}

func (h *fetchAnswered) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.once.Do(func() { close(h.ch) })
	}
}

// TestProduceCompressedPastMaxMessageBytes: max.message.bytes bounds a batch as sent, after
// compression (Kafka's LogValidator): a 2 MB value that zstd makes small is taken and read back
// whole, and a batch over the limit as sent is MESSAGE_TOO_LARGE.
func TestProduceCompressedPastMaxMessageBytes(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "big", 1)
	ctx := testContext(t)
	value := bytes.Repeat([]byte("a"), 2_000_000)
	prod := b.client(t, kgo.DefaultProduceTopic("big"), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(16<<20), kgo.MaxBufferedBytes(64<<20))
	acked := produceSync(t, ctx, prod, &kgo.Record{Value: value})
	require.Equal(t, int64(0), acked[0].Offset)

	cons := b.client(t, kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeN(t, ctx, cons, 1)
	require.Equal(t, value, got[0].Value)

	random := make([]byte, 1_100_000) // incompressible: over 1 MiB as sent
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	_, err := prod.ProduceSync(ctx, &kgo.Record{Value: random}).First()
	require.ErrorIs(t, err, kerr.MessageTooLarge)
}

// TestProduceAcksZeroErrorClosesConnection: a Produce with acks=0 that fails is not answered
// (the producer reads no answer) but closes the connection, as Kafka's
// KafkaApis.handleProduceRequest does, so that the producer notices; a good one keeps it open.
func TestProduceAcksZeroErrorClosesConnection(t *testing.T) {
	logs := &logBuffer{}
	b := startBroker(t, nil, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	b.createTopic(t, "t", 1)
	nc := b.dial(t)
	produce := func(partition int32, corr int32) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 0, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, testBatch("v")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		_, err := nc.Write(requestFrame(req, 7, corr))
		require.NoError(t, err)
	}
	produce(0, 1) // taken, no answer: the next request on the connection is answered
	resp := roundTrip(t, nc, kmsg.NewPtrApiVersionsRequest(), 3, 2).(*kmsg.ApiVersionsResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, int64(1), storePartition(t, b.store, "t", 0).LogEndOffset())

	produce(9, 3) // no partition 9: the connection closes
	requireClosedByServer(t, nc)
	logs.waitFor(t, "kafka connection closed", "acks=0 produce to topic t partition 9 failed with error code 3")
}
