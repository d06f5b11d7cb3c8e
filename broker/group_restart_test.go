package broker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// restartingBroker is a broker whose store can be closed and opened again from its directory,
// served anew on another port. Its clients dial it through dial, which follows it.
type restartingBroker struct {
	t     *testing.T
	dir   string
	store *commitlog.Store

	mu sync.Mutex
	b  *testBroker
}

func startRestartingBroker(t *testing.T) *restartingBroker {
	r := &restartingBroker{t: t, dir: t.TempDir()}
	r.start()
	return r
}

func (r *restartingBroker) start() {
	s := openGroupStore(r.t, r.dir)
	r.t.Cleanup(func() { s.Close() })
	b := startBroker(r.t, s, Config{})
	r.mu.Lock()
	r.store, r.b = s, b
	r.mu.Unlock()
}

// restart ends Serve, closes the store, opens it again and serves it on a new listener.
func (r *restartingBroker) restart() {
	r.b.stop()
	require.NoError(r.t, r.store.Close())
	r.start()
}

func (r *restartingBroker) broker() *testBroker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b
}

// dial connects to the broker serving now, whatever address the client asks for.
func (r *restartingBroker) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, r.broker().addr)
}

// opts are a client's options to reach the broker across restarts.
func (r *restartingBroker) opts() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(r.broker().addr), kgo.Dialer(r.dial)}
}

// A group consumes while the broker restarts: every record produced before and after is
// consumed.
func TestConsumerGroupAcrossRestart(t *testing.T) {
	const topic, groupID, partitions, perPartition = "stream", "survivors", 4, 50
	r := startRestartingBroker(t)
	r.broker().createTopic(t, topic, partitions)
	prod, err := kgo.NewClient(append(r.opts(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	defer prod.Close()
	c, o := newConsumed(), newOwnership()
	m1 := startMember(t, r.broker(), "m1", groupID, topic, c, o, r.opts()...)
	m2 := startMember(t, r.broker(), "m2", groupID, topic, c, o, r.opts()...)
	defer m1.close()
	defer m2.close()
	awaitBalanced(t, r.broker(), groupID, topic, partitions, o, m1, m2)

	before := produceSpread(t, prod, topic, partitions, perPartition, "before")
	c.await(t, before, 30*time.Second)

	r.restart()
	after := produceSpread(t, prod, topic, partitions, perPartition, "after")
	c.await(t, append(before, after...), 60*time.Second)
	counts := c.snapshot()
	dups := 0
	for _, n := range counts {
		dups += n - 1
	}
	t.Logf("%d records consumed, %d of them again after the restart", len(counts), dups)
	require.Len(t, counts, 2*partitions*perPartition)

	// The group lives on in the reopened store, with both members.
	awaitBalanced(t, r.broker(), groupID, topic, partitions, o, m1, m2)
}

// Committed offsets survive a restart, and a new member of the group resumes from them.
func TestConsumerGroupResumesFromCommitted(t *testing.T) {
	const topic, groupID, partitions, perPartition = "jobs", "resumers", 3, 10
	r := startRestartingBroker(t)
	r.broker().createTopic(t, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := r.broker().client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSpread(t, prod, topic, partitions, perPartition, "job")

	admCl, err := kgo.NewClient(r.opts()...)
	require.NoError(t, err)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	commit := kadm.Offsets{}
	want := map[int32]int64{0: 4, 1: 5, 2: 6}
	for p, off := range want {
		commit.AddOffset(topic, p, off, -1)
	}
	resps, err := adm.CommitOffsets(ctx, groupID, commit)
	require.NoError(t, err)
	require.NoError(t, resps.Error())

	r.restart()
	fetched, err := adm.FetchOffsets(ctx, groupID)
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	require.Equal(t, map[string]map[int32]int64{topic: want}, offsetsAt(fetched))

	// A member of the group reads each partition from its committed offset to its end: the
	// records below the committed offsets, which a partition's reading would have met first,
	// are never consumed.
	c, o := newConsumed(), newOwnership()
	m := startMember(t, r.broker(), "resumer", groupID, topic, c, o, r.opts()...)
	var rest []string
	for p, off := range want {
		for i := off; i < perPartition; i++ {
			rest = append(rest, fmt.Sprintf("job-%d-%d", p, i))
		}
	}
	c.await(t, rest, 30*time.Second)
	m.close()
	counts := c.snapshot()
	require.Len(t, counts, len(rest))
	for _, v := range rest {
		require.Equal(t, 1, counts[v], v)
	}

	// Closing, the member committed the ends.
	fetched, err = adm.FetchOffsets(ctx, groupID)
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{topic: {0: perPartition, 1: perPartition, 2: perPartition}}, offsetsAt(fetched))
}
