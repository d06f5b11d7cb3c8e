package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeKgo(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "events", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := b.client(t, kgo.DefaultProduceTopic("events"))
	const n = 1000
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "v%d", i)}, func(r *kgo.Record, err error) {
			require.NoError(t, err)
		})
	}
	require.NoError(t, prod.Flush(ctx))

	cons := b.client(t, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	require.Len(t, got, n)
}
