package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// The broker's throughput through a real client: kgo over loopback against Serve, in one
// process (client and broker share the cores). One op is one record of a 16-byte key and a
// 100-byte value (SetBytes counts those 116 bytes). kgo keeps its defaults (acks=all, 10 ms
// linger, 1 MB batches, idempotence where the broker serves InitProducerID) but for compression,
// off. The bench module's -workloads=kafka measures the same against kfake and a discard server,
// each in its own process; see BENCHMARKS.md (k).

const (
	benchKeySize   = 16
	benchValueSize = 100
)

// openBenchStore opens a file store in a temporary folder with opts, closed after the broker
// stops.
func openBenchStore(b *testing.B, opts ...commitlog.Option) *commitlog.Store {
	b.Helper()
	s, err := commitlog.Open(b.TempDir(), append([]commitlog.Option{commitlog.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	return s
}

// benchValue is the value of every record: 100 random bytes (incompressible).
func benchValue() []byte {
	v := make([]byte, benchValueSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

// BenchmarkProduce produces b.N records with one kgo client and waits for every promise, under
// the store's default durability (SyncAlways, group commit) and under SyncNever, to topics of 1
// and 4 partitions (records are spread by their keys' hash).
func BenchmarkProduce(b *testing.B) {
	policies := []struct {
		name string
		opts []commitlog.Option
	}{
		{"always", nil},
		{"never", []commitlog.Option{commitlog.WithSync(commitlog.SyncNever)}},
	}
	for _, sp := range policies {
		for _, parts := range []int32{1, 4} {
			b.Run(fmt.Sprintf("sync=%s/partitions=%d", sp.name, parts), func(b *testing.B) {
				br := startBroker(b, openBenchStore(b, sp.opts...), Config{})
				br.createTopic(b, "bench", parts)
				cl := br.client(b, kgo.DefaultProduceTopic("bench"), kgo.ProducerBatchCompression(kgo.NoCompression()))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				value := benchValue()
				// One record first, so that metadata is loaded before the clock starts.
				require.NoError(b, cl.ProduceSync(ctx, &kgo.Record{Key: make([]byte, benchKeySize), Value: value}).FirstErr())

				keys := make([]byte, b.N*benchKeySize)
				var (
					done     atomic.Int64
					allDone  = make(chan struct{})
					errOnce  sync.Once
					firstErr error
				)
				promise := func(_ *kgo.Record, err error) {
					if err != nil {
						errOnce.Do(func() { firstErr = err })
					}
					if done.Add(1) == int64(b.N) {
						close(allDone)
					}
				}
				b.SetBytes(benchKeySize + benchValueSize)
				b.ResetTimer()
				for i := range b.N {
					key := keys[i*benchKeySize : (i+1)*benchKeySize]
					binary.BigEndian.PutUint64(key, uint64(i))
					cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, promise)
				}
				select {
				case <-allDone:
				case <-ctx.Done():
					b.Fatalf("%d of %d records acknowledged: %v", done.Load(), b.N, ctx.Err())
				}
				b.StopTimer()
				require.NoError(b, firstErr)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
				end := int64(0)
				for p := range parts {
					pt, err := br.store.Topic("bench")
					require.NoError(b, err)
					part, err := pt.Partition(p)
					require.NoError(b, err)
					end += part.LogEndOffset()
				}
				require.Equal(b, int64(b.N)+1, end, "records in the topic after b.N+1 acknowledged")
			})
		}
	}
}

// BenchmarkFetch consumes b.N records from the earliest offsets of a topic of 1 and 4
// partitions with a new kgo consumer, checking that every partition's offsets follow each other.
// The topic is filled through the store (not timed; SyncNever: the fetch path does not depend on
// the policy).
func BenchmarkFetch(b *testing.B) {
	for _, parts := range []int32{1, 4} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			br := startBroker(b, openBenchStore(b, commitlog.WithSync(commitlog.SyncNever)), Config{})
			br.createTopic(b, "bench", parts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			t, err := br.store.Topic("bench")
			require.NoError(b, err)
			value := benchValue()
			const batch = 1000
			recs := make([]*commitlog.Record, 0, batch)
			for i := 0; i < b.N; i += batch {
				recs = recs[:0]
				for j := i; j < min(i+batch, b.N); j++ {
					key := make([]byte, benchKeySize)
					binary.BigEndian.PutUint64(key, uint64(j))
					recs = append(recs, &commitlog.Record{Key: key, Value: value})
				}
				require.NoError(b, t.Append(ctx, recs...))
			}

			b.SetBytes(benchKeySize + benchValueSize)
			b.ResetTimer()
			cl := br.client(b, kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			next := make([]int64, parts)
			got := 0
			for got < b.N {
				fs := cl.PollFetches(ctx)
				require.NoError(b, fs.Err())
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset != next[r.Partition] {
						b.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
					}
					next[r.Partition]++
					got++
				})
			}
			b.StopTimer()
			require.Equal(b, b.N, got)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
