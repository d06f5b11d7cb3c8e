package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// BenchmarkPush measures Push's throughput to kfake (in this process, storing what it gets):
// b.N records of a 16-byte key, a 100-byte value and one header, over 8 partitions of a local
// store on disk, appended before the timer starts; the timer runs from Run's start (connecting,
// fencing, loading the positions) until the cluster has committed every record. It reports
// records/s; MB/s counts keys, values and headers.
func BenchmarkPush(b *testing.B) {
	store := pushStore(b, "")
	pushCreate(b, store, "bench", 8, commitlog.CleanupDelete)
	topic, err := store.Topic("bench")
	require.NoError(b, err)
	value := make([]byte, 100)
	for p := range int32(8) {
		part, err := topic.Partition(p)
		require.NoError(b, err)
		n := b.N / 8
		if int(p) < b.N%8 {
			n++
		}
		recs := make([]*commitlog.Record, n)
		for i := range recs {
			recs[i] = &commitlog.Record{Key: fmt.Appendf(nil, "key-%012d", i), Value: value,
				Headers: []commitlog.Header{{Key: "h", Value: []byte("v")}}, Timestamp: time.Now()}
		}
		for c := range slices.Chunk(recs, 4096) {
			require.NoError(b, part.Append(context.Background(), c...))
		}
	}
	c := pushKfake(b)
	p, err := NewPusher(store, Cluster{Brokers: c.ListenAddrs()}, PushConfig{Name: "bench",
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	b.SetBytes(16 + 100 + 2)
	b.ResetTimer()
	run := pushRunning(b, p)
	run.waitShipped(p, 8)
	b.StopTimer()
	require.NoError(b, run.stop())
	st := p.State()
	require.EqualValues(b, b.N, st.Records)
	b.ReportMetric(float64(st.Records)/b.Elapsed().Seconds(), "records/s")
}
