package mirror

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// TestPushOutage stops the cluster (kfake, persisting to a directory) while Push ships, keeps
// appending to the local log during the outage, and starts the cluster again on the same port
// from its directory: Push resumes by itself, and the cluster ends with every record exactly
// once, in order. Once the outage is shorter than the transaction timeout (kgo waits and goes on
// with the open transaction), once longer (the commit's outcome stays unknown, the session ends,
// InitProducerId fails while the cluster is away, and a later session resumes from the positions
// the cluster committed).
func TestPushOutage(t *testing.T) {
	for _, tc := range []struct {
		name           string
		outage, txnMax time.Duration
	}{
		{"short", time.Second, 0},
		{"past the transaction timeout", 3 * time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := pushStore(t, "")
			pushCreate(t, store, "metrics", 4, commitlog.CleanupDelete)
			want := pushAppend(t, store, "metrics", 0, 2000, 0)

			addr, port := pushFreeAddr(t)
			dataDir := t.TempDir()
			start := func() *kfake.Cluster {
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dataDir))
				require.NoError(t, err)
				return c
			}
			c := start()
			p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "outage",
				MaxTransactionRecords: 50, TransactionTimeout: tc.txnMax,
				RetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond,
				Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			run := pushRunning(t, p)
			run.waitFor(p, func(st PushState) bool { return st.Transactions >= 5 })

			c.Close() // in the middle of the stream: 8,000 records at 50 a transaction
			// The local log takes appends while the cluster is away.
			pushMerge(want, pushAppend(t, store, "metrics", 2000, 500, 0))
			time.Sleep(tc.outage) // the outage lasts a while; nothing is asserted on time
			shippedDuring := p.State().Records

			c = start()
			defer c.Close()
			run.waitShipped(p, 4)
			require.NoError(t, run.stop())
			st := p.State()
			t.Logf("records shipped before the cluster came back: %d; retries: %d; last error: %v",
				shippedDuring, st.Retries, st.LastError)

			got := pushConsume(t, addr, "metrics", pushCounts(want))
			for part, w := range want {
				pushRequireEqual(t, fmt.Sprintf("metrics[%d]", part), w, got[part])
			}
		})
	}
}

// TestPushRefused makes the cluster refuse the mirror's requests for a while (kfake's faults):
// produce requests answered REQUEST_TIMED_OUT after the records were appended, TxnOffsetCommit
// answered REQUEST_TIMED_OUT after the offsets were staged, EndTxn and AddOffsetsToTxn refused
// by a coordinator not available, InitProducerId while the coordinator loads. Each failed
// transaction is aborted and shipped again from the positions committed on the cluster: the
// cluster ends with every record exactly once, in order.
func TestPushRefused(t *testing.T) {
	store := pushStore(t, "")
	pushCreate(t, store, "metrics", 4, commitlog.CleanupDelete)
	want := pushAppend(t, store, "metrics", 0, 1000, 0)

	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "refused",
		MaxTransactionRecords: 50, RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
		ClientOptions: []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}})
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitFor(p, func(st PushState) bool { return st.Transactions >= 3 })

	faults := c.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 5},
		kfake.Fault{Keys: []kmsg.Key{kmsg.TxnOffsetCommit}, Err: kerr.RequestTimedOut, Count: 3},
		kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.CoordinatorNotAvailable, TopLevel: true, Count: 3},
		kfake.Fault{Keys: []kmsg.Key{kmsg.AddOffsetsToTxn}, Err: kerr.NotCoordinator, TopLevel: true, Count: 3},
		kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, TopLevel: true, Count: 3},
	)
	defer faults.Remove()
	pushMerge(want, pushAppend(t, store, "metrics", 1000, 500, 0))
	run.waitShipped(p, 4)
	require.NoError(t, run.stop())
	st := p.State()
	require.Positive(t, st.Retries, "a refused TxnOffsetCommit fails its transaction")
	t.Logf("retries: %d; last error: %v", st.Retries, st.LastError)

	got := pushConsume(t, addr, "metrics", pushCounts(want))
	for part, w := range want {
		pushRequireEqual(t, fmt.Sprintf("metrics[%d]", part), w, got[part])
	}
}
