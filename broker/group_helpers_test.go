package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// openGroupStore opens a file store in dir for the group tests: no initial rebalance delay (a
// negative WithGroupInitialRebalanceDelay; zero keeps Kafka's 3 s), so that a group's first
// rebalance completes as soon as its members joined.
func openGroupStore(t testing.TB, dir string) *commitlog.Store {
	t.Helper()
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)),
		commitlog.WithGroupInitialRebalanceDelay(-1))
	require.NoError(t, err)
	return s
}

// startGroupBroker serves a new group store (openGroupStore) until the test ends.
func startGroupBroker(t testing.TB) *testBroker {
	t.Helper()
	s := openGroupStore(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return startBroker(t, s, Config{})
}

// kconn is a test's own Kafka connection: each request is sent at exactly the version given,
// encoded and its response decoded by kmsg, one at a time. It pins versions that a kgo client
// would negotiate, and shows error codes that kgo would retry.
type kconn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

// dialKafka connects to addr as client clientID; the connection is closed when the test ends.
func dialKafka(t testing.TB, addr, clientID string) *kconn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &kconn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// do sends req at version and returns its response; a connection error fails the test.
func (k *kconn) do(version int16, req kmsg.Request) kmsg.Response {
	k.t.Helper()
	resp, err := k.try(version, req)
	require.NoError(k.t, err)
	return resp
}

// try sends req at version and returns its response or the connection's error.
func (k *kconn) try(version int16, req kmsg.Request) (kmsg.Response, error) {
	req.SetVersion(version)
	k.corr++
	if err := k.nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return nil, err
	}
	if _, err := k.nc.Write(k.f.AppendRequest(nil, req, k.corr)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(k.nc, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(k.nc, body); err != nil {
		return nil, err
	}
	rd := kbin.Reader{Src: body}
	require.Equal(k.t, k.corr, rd.Int32(), "correlation id")
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if resp.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, err
	}
	return resp, nil
}

// consumerMetadata is a consumer's JoinGroup protocol metadata subscribing to topics.
func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// consumerAssignment is a consumer's SyncGroup assignment.
func consumerAssignment(assigned map[string][]int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for topic, ps := range assigned {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, ps
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// joinRequest is a JoinGroup of a "consumer" member with the range protocol, subscribing to
// topics.
func joinRequest(groupID, memberID string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID = groupID, memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 30_000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMetadata(topics...)
	req.Protocols = append(req.Protocols, p)
	return req
}

// joinAlone joins groupID as its only member (JoinGroup v9: MEMBER_ID_REQUIRED, then the join
// with the id) and syncs with assignment (SyncGroup v5); the group is then Stable. It returns
// the member id and generation.
func joinAlone(t testing.TB, k *kconn, groupID string, assignment map[string][]int32, topics ...string) (string, int32) {
	t.Helper()
	first := k.do(9, joinRequest(groupID, "", topics...)).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(79), first.ErrorCode, "MEMBER_ID_REQUIRED")
	jresp := k.do(9, joinRequest(groupID, first.MemberID, topics...)).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), jresp.ErrorCode)
	require.Equal(t, first.MemberID, jresp.LeaderID)
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation = groupID, jresp.MemberID, jresp.Generation
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jresp.MemberID, consumerAssignment(assignment)
	sreq.GroupAssignment = append(sreq.GroupAssignment, sa)
	sresp := k.do(5, sreq).(*kmsg.SyncGroupResponse)
	require.Equal(t, int16(0), sresp.ErrorCode)
	return jresp.MemberID, jresp.Generation
}

// groupState returns the state of groupID in b's coordinator, "" when there is no such group.
func groupState(t testing.TB, b *testBroker, groupID string) string {
	t.Helper()
	c, err := b.store.GroupCoordinator()
	require.NoError(t, err)
	d, err := c.DescribeGroup(groupID)
	if err != nil {
		return ""
	}
	return d.State.String()
}

// produceSpread produces n records to each of the partitions of topic, values prefix-p-i, and
// waits for them; it returns the values.
func produceSpread(t testing.TB, cl *kgo.Client, topic string, partitions int32, n int, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var values []string
	var rs []*kgo.Record
	for p := range partitions {
		for i := range n {
			v := fmt.Sprintf("%s-%d-%d", prefix, p, i)
			values = append(values, v)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
	return values
}

// consumed records what a group's members consumed: how many times each value, by whom.
type consumed struct {
	mu     sync.Mutex
	counts map[string]int
	by     map[string]string
	cond   chan struct{} // closed and replaced at each record
}

func newConsumed() *consumed {
	return &consumed{counts: map[string]int{}, by: map[string]string{}, cond: make(chan struct{})}
}

func (c *consumed) add(member string, r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := string(r.Value)
	c.counts[v]++
	c.by[v] = member
	close(c.cond)
	c.cond = make(chan struct{})
}

// await waits until every value in values was consumed at least once, failing the test after
// timeout.
func (c *consumed) await(t testing.TB, values []string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		missing := 0
		for _, v := range values {
			if c.counts[v] == 0 {
				missing++
			}
		}
		ch := c.cond
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%d of %d records not consumed within %s", missing, len(values), timeout)
		}
	}
}

// snapshot returns a copy of the counts.
func (c *consumed) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}
