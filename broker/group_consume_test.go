package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog/group"
)

// groupTestOpts are the kgo options of the group tests' members: the coordinator's smallest
// session timeout, and heartbeats often enough that a rebalance is noticed at once.
func groupTestOpts() []kgo.Opt {
	return []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

// ownership follows which member owns which partitions, by the members' kgo callbacks, and
// records any partition assigned to a member while another owned it.
type ownership struct {
	mu       sync.Mutex
	owned    map[string]map[string][]int32 // member -> topic -> partitions
	overlaps []string
	errs     []error
}

func newOwnership() *ownership { return &ownership{owned: map[string]map[string][]int32{}} }

func (o *ownership) assigned(member string, tps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for topic, ps := range tps {
		for _, p := range ps {
			for other, theirs := range o.owned {
				if other != member && slices.Contains(theirs[topic], p) {
					o.overlaps = append(o.overlaps, fmt.Sprintf("%s/%d assigned to %s while %s owns it", topic, p, member, other))
				}
			}
		}
	}
	if o.owned[member] == nil {
		o.owned[member] = map[string][]int32{}
	}
	for topic, ps := range tps {
		o.owned[member][topic] = append(o.owned[member][topic], ps...)
		slices.Sort(o.owned[member][topic])
	}
}

func (o *ownership) revoked(member string, tps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for topic, ps := range tps {
		o.owned[member][topic] = slices.DeleteFunc(o.owned[member][topic], func(p int32) bool { return slices.Contains(ps, p) })
		if len(o.owned[member][topic]) == 0 {
			delete(o.owned[member], topic)
		}
	}
}

func (o *ownership) failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, err)
}

// view returns each member's partitions of topic.
func (o *ownership) view(topic string) map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for m, tps := range o.owned {
		if len(tps[topic]) > 0 {
			out[m] = slices.Clone(tps[topic])
		}
	}
	return out
}

// groupMember is one kgo consumer of a test group, polling in its own goroutine.
type groupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	closed sync.Once
}

// startMember starts a member of groupID consuming topic, recording what it consumes in c and
// its partitions in o. Its revocations commit what it polled, as kgo's default does.
func startMember(t *testing.T, b *testBroker, name, groupID, topic string, c *consumed, o *ownership, opts ...kgo.Opt) *groupMember {
	t.Helper()
	all := append(groupTestOpts(),
		kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.ClientID(name),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, tps map[string][]int32) { o.assigned(name, tps) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, tps map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				o.failed(fmt.Errorf("%s: commit on revoke: %w", name, err))
			}
			o.revoked(name, tps)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
			o.failed(fmt.Errorf("%s lost %v", name, tps))
			o.revoked(name, tps)
		}),
	)
	cl, err := kgo.NewClient(append(append(all, kgo.SeedBrokers(b.addr)), opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{name: name, cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			// Records polled are recorded even when the poll ends: the member's commits count
			// them consumed.
			fs.EachRecord(func(r *kgo.Record) { c.add(name, r) })
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				o.failed(fmt.Errorf("%s: fetch %s/%d: %w", name, topic, p, err))
			})
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close stops the member's polling and closes its client, which leaves the group after
// revoking (and committing) its partitions.
func (m *groupMember) close() {
	m.closed.Do(func() {
		m.cancel()
		<-m.done
		m.cl.Close()
	})
}

// memberID is the member id the coordinator gave m.
func (m *groupMember) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// awaitBalanced waits until the members' callbacks show topic's partitions each owned by
// exactly one of members, and the coordinator's group is Stable with just these members, each
// assigned what its callbacks show.
func awaitBalanced(t *testing.T, b *testBroker, groupID, topic string, partitions int32, o *ownership, members ...*groupMember) map[string][]int32 {
	t.Helper()
	coord, err := b.store.GroupCoordinator()
	require.NoError(t, err)
	var view map[string][]int32
	balanced := func() bool {
		view = o.view(topic)
		var all []int32
		for _, m := range members {
			all = append(all, view[m.name]...)
		}
		slices.Sort(all)
		want := make([]int32, partitions)
		for i := range want {
			want[i] = int32(i)
		}
		if !slices.Equal(all, want) || len(view) != len(members) {
			return false
		}
		d, err := coord.DescribeGroup(groupID)
		if err != nil || d.State != group.Stable || len(d.Members) != len(members) {
			return false
		}
		for _, m := range members {
			i := slices.IndexFunc(d.Members, func(dm group.DescribedMember) bool { return dm.MemberID == m.memberID() })
			if i < 0 {
				return false
			}
			a, err := group.DecodeAssignment(d.Members[i].Assignment)
			if err != nil || !slices.Equal(a[topic], view[m.name]) {
				return false
			}
		}
		return true
	}
	require.Eventually(t, balanced, 30*time.Second, 10*time.Millisecond, "group %s not balanced: %v", groupID, view)
	return view
}

// TestConsumerGroupRebalances runs a group of kgo consumers over a 6-partition topic with each
// balancer: 3 members, a 4th joining, one leaving. At each step the partitions are owned by
// exactly one member each, every record is consumed exactly once across the members, and the
// offsets committed at the end are exactly the log end offsets.
func TestConsumerGroupRebalances(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
		sizes    map[int][]int // members -> sorted partition counts
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer(), map[int][]int{3: {2, 2, 2}, 4: {1, 1, 2, 2}}},
		{"range", kgo.RangeBalancer(), map[int][]int{3: {2, 2, 2}, 4: {1, 1, 2, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const topic, groupID, partitions, perPartition = "events", "readers", 6, 50
			b := startGroupBroker(t)
			b.createTopic(t, topic, partitions)
			prod := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			c, o := newConsumed(), newOwnership()
			start := func(name string) *groupMember {
				return startMember(t, b, name, groupID, topic, c, o, kgo.Balancers(tc.balancer))
			}
			sizes := func(view map[string][]int32) []int {
				var out []int
				for _, ps := range view {
					out = append(out, len(ps))
				}
				slices.Sort(out)
				return out
			}

			m1, m2, m3 := start("m1"), start("m2"), start("m3")
			view := awaitBalanced(t, b, groupID, topic, partitions, o, m1, m2, m3)
			require.Equal(t, tc.sizes[3], sizes(view))
			var values []string
			phase := produceSpread(t, prod, topic, partitions, perPartition, "a")
			c.await(t, phase, 30*time.Second)
			values = append(values, phase...)

			m4 := start("m4")
			view = awaitBalanced(t, b, groupID, topic, partitions, o, m1, m2, m3, m4)
			require.Equal(t, tc.sizes[4], sizes(view))
			phase = produceSpread(t, prod, topic, partitions, perPartition, "b")
			c.await(t, phase, 30*time.Second)
			values = append(values, phase...)

			m2.close()
			view = awaitBalanced(t, b, groupID, topic, partitions, o, m1, m3, m4)
			require.Equal(t, tc.sizes[3], sizes(view))
			require.NotContains(t, view, "m2")
			phase = produceSpread(t, prod, topic, partitions, perPartition, "c")
			c.await(t, phase, 30*time.Second)
			values = append(values, phase...)

			for _, m := range []*groupMember{m1, m3, m4} {
				m.close()
			}
			o.mu.Lock()
			require.Empty(t, o.overlaps)
			require.Empty(t, o.errs)
			o.mu.Unlock()
			counts := c.snapshot()
			require.Len(t, counts, len(values))
			for _, v := range values {
				require.Equal(t, 1, counts[v], "record %s consumed %d times", v, counts[v])
			}

			// Every member left, committing what it read: the group is Empty, its offsets
			// are the partitions' ends.
			adm := kadm.NewClient(b.client(t))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			gs, err := adm.DescribeGroups(ctx, groupID)
			require.NoError(t, err)
			require.Equal(t, "Empty", gs[groupID].State)
			require.Equal(t, "consumer", gs[groupID].ProtocolType)
			require.Empty(t, gs[groupID].Members)
			offs, err := adm.FetchOffsets(ctx, groupID)
			require.NoError(t, err)
			require.NoError(t, offs.Error())
			got := map[int32]int64{}
			offs.Each(func(r kadm.OffsetResponse) {
				require.Equal(t, topic, r.Topic)
				got[r.Partition] = r.At
			})
			want := map[int32]int64{}
			for p := range int32(partitions) {
				want[p] = 3 * perPartition
			}
			require.Equal(t, want, got)
		})
	}
}

// TestGroupAdminWithKadm lists, describes and deletes groups and offsets with kadm, against a
// live kgo member.
func TestGroupAdminWithKadm(t *testing.T) {
	const topic = "ledger"
	b := startGroupBroker(t)
	b.createTopic(t, topic, 3)
	b.createTopic(t, "other", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(b.client(t))

	// An admin commit makes a group with offsets and no members.
	committed := kadm.Offsets{}
	committed.AddOffset(topic, 0, 3, -1)
	committed.AddOffset(topic, 1, 5, -1)
	committed.AddOffset("other", 0, 7, -1)
	resps, err := adm.CommitOffsets(ctx, "admin-group", committed)
	require.NoError(t, err)
	require.NoError(t, resps.Error())
	fetched, err := adm.FetchOffsets(ctx, "admin-group")
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	require.Equal(t, map[string]map[int32]int64{topic: {0: 3, 1: 5}, "other": {0: 7}}, offsetsAt(fetched))
	// A group that never committed: kadm sees no offsets, and no error.
	never, err := adm.FetchOffsets(ctx, "never-committed")
	require.NoError(t, err)
	require.NoError(t, never.Error())
	require.Empty(t, offsetsAt(never))

	// A live member of another group.
	c, o := newConsumed(), newOwnership()
	m := startMember(t, b, "solo", "live-group", topic, c, o)
	awaitBalanced(t, b, "live-group", topic, 3, o, m)

	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Equal(t, []kadm.ListedGroup{
		{Coordinator: 0, Group: "admin-group", GroupType: "classic", ProtocolType: "", State: "Empty"},
		{Coordinator: 0, Group: "live-group", GroupType: "classic", ProtocolType: "consumer", State: "Stable"},
	}, listed.Sorted())
	stable, err := adm.ListGroups(ctx, "Stable")
	require.NoError(t, err)
	require.Equal(t, []string{"live-group"}, stable.Groups())

	described, err := adm.DescribeGroups(ctx, "live-group", "admin-group", "missing")
	require.NoError(t, err)
	live := described["live-group"]
	require.NoError(t, live.Err)
	require.Equal(t, "Stable", live.State)
	require.Equal(t, "consumer", live.ProtocolType)
	require.Equal(t, "cooperative-sticky", live.Protocol)
	require.Len(t, live.Members, 1)
	require.Equal(t, m.memberID(), live.Members[0].MemberID)
	require.Equal(t, "solo", live.Members[0].ClientID)
	require.Equal(t, "/127.0.0.1", live.Members[0].ClientHost)
	assigned, ok := live.Members[0].Assigned.AsConsumer()
	require.True(t, ok)
	require.Len(t, assigned.Topics, 1)
	require.Equal(t, topic, assigned.Topics[0].Topic)
	require.Equal(t, []int32{0, 1, 2}, assigned.Topics[0].Partitions)
	require.Equal(t, "Empty", described["admin-group"].State)
	require.NoError(t, described["admin-group"].Err)
	require.ErrorIs(t, described["missing"].Err, kerr.GroupIDNotFound)

	// OffsetDelete: the topic the live group reads cannot lose its offsets; the admin group's
	// can.
	del, err := adm.DeleteOffsets(ctx, "admin-group", kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	require.NoError(t, del.Error())
	fetched, err = adm.FetchOffsets(ctx, "admin-group")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{topic: {1: 5}, "other": {0: 7}}, offsetsAt(fetched))
	m.close()
	require.Equal(t, "Empty", groupState(t, b, "live-group"))

	deleted, err := adm.DeleteGroups(ctx, "admin-group", "live-group", "missing")
	require.NoError(t, err)
	require.NoError(t, deleted["admin-group"].Err)
	require.NoError(t, deleted["live-group"].Err)
	require.ErrorIs(t, deleted["missing"].Err, kerr.GroupIDNotFound)
	listed, err = adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Empty(t, listed)
	fetched, err = adm.FetchOffsets(ctx, "admin-group")
	require.NoError(t, err)
	require.Empty(t, offsetsAt(fetched))
}

// offsetsAt returns the committed offsets of os by topic and partition.
func offsetsAt(os kadm.OffsetResponses) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	os.Each(func(r kadm.OffsetResponse) {
		if out[r.Topic] == nil {
			out[r.Topic] = map[int32]int64{}
		}
		out[r.Topic][r.Partition] = r.At
	})
	return out
}
