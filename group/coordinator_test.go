package group

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The coordinator's tests run on a fakeClock: every timer fires in Advance, in the test's
// goroutine. Join and Sync block until their phase completes, so they run in goroutines (join,
// sync); those helpers return once the call is either answered or parked in the coordinator
// (blockCtx), and the waiting* helpers read the coordinator's own state to tell whether a
// request is still parked. Nothing sleeps and no result depends on the wall clock.

const (
	testSession   = 10 * time.Second
	testRebalance = 60 * time.Second
	// answerFailsafe only bounds how long a broken test waits for a goroutine to hand over an
	// answer the coordinator already gave; no result depends on it.
	answerFailsafe = 10 * time.Second
)

// memStorage is a Storage in memory: it records every appended record, or fails with err.
type memStorage struct {
	mu   sync.Mutex
	recs []StorageRecord
	err  error
}

func (s *memStorage) Append(_ context.Context, recs []StorageRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	for _, r := range recs {
		s.recs = append(s.recs, StorageRecord{Key: slices.Clone(r.Key), Value: cloneValue(r.Value)})
	}
	return nil
}

func (s *memStorage) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *memStorage) records() []StorageRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// cloneValue copies v, keeping nil (a tombstone) nil.
func cloneValue(v []byte) []byte {
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// blockCtx is a context that reports when its Done is first called. Join and Sync call
// ctx.Done only in the select where they wait for their phase to complete, after the request is
// registered in the group and the group's lock released: so Done being called means the request
// is parked in the coordinator.
type blockCtx struct {
	context.Context
	once    sync.Once
	blocked chan struct{}
}

func newBlockCtx() *blockCtx {
	return &blockCtx{Context: context.Background(), blocked: make(chan struct{})}
}

func (c *blockCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.blocked) })
	return c.Context.Done()
}

type harness struct {
	t     *testing.T
	clock *fakeClock
	store *memStorage
	c     *Coordinator
}

// newHarness returns a coordinator on a fake clock and an in-memory storage; cfg's Clock,
// Storage and Logger are set by it.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), store: &memStorage{}}
	cfg.Clock, cfg.Storage, cfg.Logger = h.clock, h.store, slog.New(slog.DiscardHandler)
	h.c = NewCoordinator(cfg)
	t.Cleanup(h.c.Close)
	return h
}

type joinCall struct {
	t   *testing.T
	req JoinRequest
	out chan joinResult
}

// join sends a JoinGroup in a goroutine and returns once it is answered or parked.
func (h *harness) join(req JoinRequest) *joinCall {
	ctx := newBlockCtx()
	jc := &joinCall{t: h.t, req: req, out: make(chan joinResult, 1)}
	go func() {
		resp, err := h.c.Join(ctx, req)
		jc.out <- joinResult{resp, err}
	}()
	select {
	case <-ctx.blocked:
	case r := <-jc.out:
		jc.out <- r
	}
	return jc
}

// result returns the JoinGroup's answer; the coordinator must have given it.
func (jc *joinCall) result() (JoinResponse, error) {
	jc.t.Helper()
	select {
	case r := <-jc.out:
		jc.out <- r
		return r.resp, r.err
	case <-time.After(answerFailsafe):
		jc.t.Fatalf("JoinGroup of %s/%s (client %s) was not answered", jc.req.Group, jc.req.MemberID, jc.req.ClientID)
		return JoinResponse{}, nil
	}
}

// ok returns the JoinGroup's response, which must not be an error.
func (jc *joinCall) ok() JoinResponse {
	jc.t.Helper()
	resp, err := jc.result()
	require.NoError(jc.t, err)
	return resp
}

// requireUnanswered fails if the goroutine has handed over an answer.
func (jc *joinCall) requireUnanswered() {
	jc.t.Helper()
	select {
	case r := <-jc.out:
		jc.t.Fatalf("JoinGroup of client %s answered: %+v, %v", jc.req.ClientID, r.resp, r.err)
	default:
	}
}

type syncCall struct {
	t   *testing.T
	req SyncRequest
	out chan syncResult
}

// sync sends a SyncGroup in a goroutine and returns once it is answered or parked.
func (h *harness) sync(req SyncRequest) *syncCall {
	ctx := newBlockCtx()
	sc := &syncCall{t: h.t, req: req, out: make(chan syncResult, 1)}
	go func() {
		resp, err := h.c.Sync(ctx, req)
		sc.out <- syncResult{resp, err}
	}()
	select {
	case <-ctx.blocked:
	case r := <-sc.out:
		sc.out <- r
	}
	return sc
}

func (sc *syncCall) result() (SyncResponse, error) {
	sc.t.Helper()
	select {
	case r := <-sc.out:
		sc.out <- r
		return r.resp, r.err
	case <-time.After(answerFailsafe):
		sc.t.Fatalf("SyncGroup of %s/%s was not answered", sc.req.Group, sc.req.MemberID)
		return SyncResponse{}, nil
	}
}

func (sc *syncCall) requireUnanswered() {
	sc.t.Helper()
	select {
	case r := <-sc.out:
		sc.t.Fatalf("SyncGroup of %s answered: %+v, %v", sc.req.MemberID, r.resp, r.err)
	default:
	}
}

// inspect runs f on the group's state under its lock.
func (h *harness) inspect(groupID string, f func(g *group)) {
	h.t.Helper()
	h.c.mu.Lock()
	g := h.c.groups[groupID]
	h.c.mu.Unlock()
	require.NotNil(h.t, g, "group %s", groupID)
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// awaitingJoin returns the number of members with a JoinGroup parked.
func (h *harness) awaitingJoin(groupID string) (n int) {
	h.t.Helper()
	h.inspect(groupID, func(g *group) {
		for _, m := range g.members {
			if m.joinCh != nil {
				n++
			}
		}
		require.Equal(h.t, n, g.awaitingJoin, "awaitingJoin counter")
	})
	return n
}

// waitingInJoin reports whether memberID is a member with a JoinGroup parked.
func (h *harness) waitingInJoin(groupID, memberID string) (ok bool) {
	h.t.Helper()
	h.inspect(groupID, func(g *group) { ok = g.members[memberID] != nil && g.members[memberID].joinCh != nil })
	return ok
}

// waitingInSync reports whether memberID is a member with a SyncGroup parked.
func (h *harness) waitingInSync(groupID, memberID string) (ok bool) {
	h.t.Helper()
	h.inspect(groupID, func(g *group) { ok = g.members[memberID] != nil && g.members[memberID].syncCh != nil })
	return ok
}

func (h *harness) describe(groupID string) Description {
	h.t.Helper()
	d, err := h.c.DescribeGroup(groupID)
	require.NoError(h.t, err)
	return d
}

func (h *harness) state(groupID string) State { h.t.Helper(); return h.describe(groupID).State }

func (h *harness) memberIDs(groupID string) []string {
	h.t.Helper()
	var ids []string
	for _, m := range h.describe(groupID).Members {
		ids = append(ids, m.MemberID)
	}
	return ids
}

func (h *harness) generation(groupID string) (gen int32) {
	h.t.Helper()
	h.inspect(groupID, func(g *group) { gen = g.generation })
	return gen
}

func (h *harness) heartbeat(groupID, memberID string, gen int32) error {
	return h.c.Heartbeat(HeartbeatRequest{Group: groupID, MemberID: memberID, Generation: gen})
}

// keepAlive advances the clock by d in steps of step, each of ids heartbeating at the group's
// current generation after each step (as a client's heartbeat thread does; errors ignored).
func (h *harness) keepAlive(groupID string, d, step time.Duration, ids ...string) {
	h.t.Helper()
	for d > 0 {
		s := min(step, d)
		h.clock.Advance(s)
		d -= s
		gen := h.generation(groupID)
		for _, id := range ids {
			h.heartbeat(groupID, id, gen)
		}
	}
}

func subscription(topics ...string) []byte {
	return EncodeSubscription(Subscription{Topics: topics, Generation: -1})
}

func rangeProtocols(topics ...string) []Protocol {
	return []Protocol{{Name: "range", Metadata: subscription(topics...)}}
}

// joinReq is a new dynamic consumer's JoinGroup: session 10 s, rebalance timeout 60 s, the range
// assignor over topics (default "orders").
func joinReq(groupID, client string, topics ...string) JoinRequest {
	if len(topics) == 0 {
		topics = []string{"orders"}
	}
	return JoinRequest{Group: groupID, ClientID: client, ClientHost: "/10.0.0.1", SessionTimeout: testSession,
		RebalanceTimeout: testRebalance, ProtocolType: ConsumerProtocolType, Protocols: rangeProtocols(topics...)}
}

// staticReq is joinReq of a static member.
func staticReq(groupID, client, instance string, topics ...string) JoinRequest {
	r := joinReq(groupID, client, topics...)
	r.InstanceID = instance
	return r
}

// rejoin is req again with the member id given.
func rejoin(req JoinRequest, memberID string) JoinRequest {
	req.MemberID = memberID
	return req
}

// gen is one generation as its members saw it.
type gen struct {
	id      int32
	leader  string                  // member id
	ids     map[string]string       // client id -> member id
	resps   map[string]JoinResponse // client id -> JoinGroup response
	assign  map[string][]byte       // member id -> assignment, once synced
	request map[string]JoinRequest  // client id -> the JoinGroup sent (with the member id)
}

// completeJoins waits for the join phase the calls are in to complete, advancing the clock a
// second at a time, and returns the generation.
func (h *harness) completeJoins(calls ...*joinCall) gen {
	h.t.Helper()
	groupID := calls[0].req.Group
	for i := 0; h.state(groupID) == PreparingRebalance; i++ {
		require.Less(h.t, i, 1000, "join phase never completed")
		h.clock.Advance(time.Second)
	}
	g := gen{ids: map[string]string{}, resps: map[string]JoinResponse{}, request: map[string]JoinRequest{}}
	for i, jc := range calls {
		resp := jc.ok()
		if i == 0 {
			g.id, g.leader = resp.Generation, resp.Leader
		}
		require.Equal(h.t, g.id, resp.Generation)
		require.Equal(h.t, g.leader, resp.Leader)
		g.ids[jc.req.ClientID] = resp.MemberID
		g.resps[jc.req.ClientID] = resp
		g.request[jc.req.ClientID] = rejoin(jc.req, resp.MemberID)
	}
	return g
}

// joinAll sends the JoinGroups and completes the join phase.
func (h *harness) joinAll(reqs ...JoinRequest) gen {
	h.t.Helper()
	calls := make([]*joinCall, len(reqs))
	for i, r := range reqs {
		calls[i] = h.join(r)
	}
	return h.completeJoins(calls...)
}

// assignmentFor is the assignment the tests' leaders give the i-th member (by member id).
func assignmentFor(i int) []byte {
	return EncodeAssignment(map[string][]int32{"orders": {int32(i)}}, nil)
}

// syncAll sends every member's SyncGroup, the leader's last with an assignment, and checks that
// each gets its own; the group is then Stable.
func (h *harness) syncAll(groupID string, g *gen) {
	h.t.Helper()
	g.assign = map[string][]byte{}
	for i, id := range slices.Sorted(maps.Values(g.ids)) {
		g.assign[id] = assignmentFor(i)
	}
	calls := map[string]*syncCall{}
	for _, id := range slices.Sorted(maps.Values(g.ids)) {
		if id != g.leader {
			calls[id] = h.sync(SyncRequest{Group: groupID, MemberID: id, InstanceID: g.instance(id), Generation: g.id})
		}
	}
	calls[g.leader] = h.sync(SyncRequest{Group: groupID, MemberID: g.leader, InstanceID: g.instance(g.leader),
		Generation: g.id, ProtocolType: ConsumerProtocolType, Protocol: "range", Assignments: g.assign})
	for id, sc := range calls {
		resp, err := sc.result()
		require.NoError(h.t, err)
		require.Equal(h.t, SyncResponse{ProtocolType: ConsumerProtocolType, Protocol: "range", Assignment: g.assign[id]}, resp)
	}
	require.Equal(h.t, Stable, h.state(groupID))
}

func (g gen) instance(memberID string) string {
	for client, id := range g.ids {
		if id == memberID {
			return g.request[client].InstanceID
		}
	}
	return ""
}

// form makes a Stable group of the new members reqs.
func (h *harness) form(reqs ...JoinRequest) gen {
	h.t.Helper()
	g := h.joinAll(reqs...)
	h.syncAll(reqs[0].Group, &g)
	return g
}

// requireMembers checks the group's member ids.
func (h *harness) requireMembers(groupID string, ids ...string) {
	h.t.Helper()
	require.Equal(h.t, slices.Sorted(slices.Values(ids)), h.memberIDs(groupID))
}

// client returns the client id of memberID.
func (g gen) client(memberID string) string {
	for c, id := range g.ids {
		if id == memberID {
			return c
		}
	}
	return ""
}

// followers returns the member ids other than the leader's, sorted.
func (g gen) followers() []string {
	var out []string
	for _, id := range g.ids {
		if id != g.leader {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

var errDiskFull = errors.New("disk full")

func TestCloseAnswersWaitingJoins(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	// "h": a new member and a rejoining one wait in the join phase of the second rebalance.
	g1 := h.joinAll(joinReq("h", "a"), joinReq("h", "b"))
	jl := h.join(joinReq("h", "c"))
	jb := h.join(g1.request["b"])
	require.Equal(t, PreparingRebalance, h.state("h"))
	require.Equal(t, 2, h.awaitingJoin("h"))
	// "g": a new member waits in the initial delay, a pending one has its member id.
	ja := h.join(joinReq("g", "a"))
	req := joinReq("g", "p")
	req.RequireKnownMemberID = true
	_, err := h.join(req).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)

	h.c.Close()
	for _, jc := range []*joinCall{ja, jl, jb} {
		_, err := jc.result()
		require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	}
	require.Zero(t, h.clock.Pending(), "Close stops every timer")
	h.clock.Advance(time.Hour)

	_, err = h.c.Join(ctx, joinReq("g", "x"))
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	_, err = h.c.Sync(ctx, SyncRequest{Group: "h", MemberID: g1.leader, Generation: 1})
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	require.ErrorIs(t, h.heartbeat("h", g1.leader, 1), ErrCoordinatorNotAvailable)
	require.ErrorIs(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(1)}), ErrCoordinatorNotAvailable)
	_, err = h.c.Leave("h", []LeavingMember{{MemberID: g1.leader}})
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	_, err = h.c.FetchOffsets("g", nil)
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	h.c.Close()
}

func TestCloseAnswersWaitingSyncs(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
	sf := h.sync(SyncRequest{Group: "g", MemberID: g1.followers()[0], Generation: 1})
	require.True(t, h.waitingInSync("g", g1.followers()[0]))
	h.c.Close()
	_, err := sf.result()
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
}

func TestDeleteGroup(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	g1 := h.form(joinReq("g", "a"))
	require.NoError(t, h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders1: off(1), orders0: off(2), audit0: off(3)}))
	require.ErrorIs(t, h.c.DeleteGroup(ctx, "g"), ErrNonEmptyGroup)
	h.join(joinReq("g", "b"))
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.ErrorIs(t, h.c.DeleteGroup(ctx, "g"), ErrNonEmptyGroup)
	_, err := h.c.Leave("g", []LeavingMember{{MemberID: g1.ids["a"]}})
	require.NoError(t, err)
	h.completeJoins(h.join(rejoin(joinReq("g", "b"), h.memberIDs("g")[0])))
	_, err = h.c.Leave("g", []LeavingMember{{MemberID: h.memberIDs("g")[0]}})
	require.NoError(t, err)
	require.Equal(t, Empty, h.state("g"))

	// A storage failure deletes nothing.
	h.store.fail(errDiskFull)
	require.ErrorIs(t, h.c.DeleteGroup(ctx, "g"), errDiskFull)
	require.Equal(t, Empty, h.state("g"))
	h.store.fail(nil)

	before := len(h.store.records())
	require.NoError(t, h.c.DeleteGroup(ctx, "g"))
	// The offsets' tombstones, then the group's.
	require.Equal(t, []StorageRecord{{Key: offsetKey("g", audit0)}, {Key: offsetKey("g", orders0)}, {Key: offsetKey("g", orders1)}, {Key: groupKey("g")}},
		h.store.records()[before:])
	_, err = h.c.DescribeGroup("g")
	require.ErrorIs(t, err, ErrGroupIDNotFound)
	got, err := h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, h.c.ListGroups())
	require.ErrorIs(t, h.c.DeleteGroup(ctx, "g"), ErrGroupIDNotFound)
	require.ErrorIs(t, h.c.DeleteGroup(ctx, "nope"), ErrGroupIDNotFound)

	// The id can be used again: a new group, from generation 0.
	g := h.form(joinReq("g", "c"))
	require.Equal(t, int32(1), g.id)
}

func TestListGroups(t *testing.T) {
	h := newHarness(t, Config{})
	h.form(joinReq("stable", "a"))
	h.join(joinReq("joining", "a"))
	require.NoError(t, h.commit("empty", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(1)}))
	require.Equal(t, []ListedGroup{
		{Group: "empty", State: Empty},
		{Group: "joining", ProtocolType: ConsumerProtocolType, State: PreparingRebalance},
		{Group: "stable", ProtocolType: ConsumerProtocolType, State: Stable},
	}, h.c.ListGroups())
	require.Equal(t, []ListedGroup{{Group: "stable", ProtocolType: ConsumerProtocolType, State: Stable}}, h.c.ListGroups(Stable))
	require.Equal(t, []ListedGroup{{Group: "empty", State: Empty}, {Group: "stable", ProtocolType: ConsumerProtocolType, State: Stable}},
		h.c.ListGroups(Stable, Empty))
	require.Empty(t, h.c.ListGroups(Dead))
}

func TestJoinRequestErrors(t *testing.T) {
	h := newHarness(t, Config{MaxSize: 2})
	g1 := h.form(joinReq("g", "a"), staticReq("g", "b", "inst-b"))
	short := joinReq("g", "x")
	short.SessionTimeout = DefaultMinSessionTimeout - time.Millisecond
	long := joinReq("g", "x")
	long.SessionTimeout = DefaultMaxSessionTimeout + time.Millisecond
	otherType := joinReq("g", "x")
	otherType.ProtocolType = "connect"
	otherProto := joinReq("g", "x")
	otherProto.Protocols = []Protocol{{Name: "roundrobin", Metadata: subscription("orders")}}
	noGroup := joinReq("", "x")
	for _, tc := range []struct {
		name string
		req  JoinRequest
		want error
	}{
		{"empty group id", noGroup, ErrInvalidGroupID},
		{"session timeout too short", short, ErrInvalidSessionTimeout},
		{"session timeout too long", long, ErrInvalidSessionTimeout},
		{"other protocol type", rejoin(otherType, g1.ids["a"]), ErrInconsistentGroupProtocol},
		{"no common protocol", rejoin(otherProto, g1.ids["a"]), ErrInconsistentGroupProtocol},
		{"group full", joinReq("g", "x"), ErrGroupMaxSizeReached},
		{"unknown member id", rejoin(joinReq("g", "x"), "x-1"), ErrUnknownMemberID},
		{"member id of a group that does not exist", rejoin(joinReq("nope", "x"), "x-1"), ErrUnknownMemberID},
		{"unknown instance with a member id", rejoin(staticReq("g", "a", "inst"), g1.ids["a"]), ErrUnknownMemberID},
		{"instance of another member", rejoin(staticReq("g", "a", "inst-b"), g1.ids["a"]), ErrFencedInstanceID},
		// Kafka takes this one: a static member's JoinGroup by member id without its instance id.
		{"static member by member id without its instance id", rejoin(joinReq("g", "b"), g1.ids["b"]), ErrFencedInstanceID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.join(tc.req).result()
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, Stable, h.state("g"))
		})
	}
	_, err := h.c.DescribeGroup("nope")
	require.ErrorIs(t, err, ErrGroupIDNotFound)
}
