package group

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJoinTwoStepNewMemberInitialDelay(t *testing.T) {
	h := newHarness(t, Config{})
	req := func(client string) JoinRequest {
		r := joinReq("g", client)
		r.RequireKnownMemberID = true
		r.RebalanceTimeout = 10 * time.Second // bounds the initial delay's extensions
		return r
	}
	// twoStep joins a new dynamic member: the first JoinGroup is answered at once with its id.
	twoStep := func(client string) (*joinCall, string) {
		resp, err := h.join(req(client)).result()
		require.ErrorIs(t, err, ErrMemberIDRequired)
		require.True(t, strings.HasPrefix(resp.MemberID, client+"-"), resp.MemberID)
		require.Equal(t, JoinResponse{MemberID: resp.MemberID}, resp)
		return h.join(rejoin(req(client), resp.MemberID)), resp.MemberID
	}

	// The first step creates the group, Empty; the id is pending, not a member.
	resp, err := h.join(req("a")).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)
	require.Equal(t, Empty, h.state("g"))
	require.Empty(t, h.memberIDs("g"))
	a := h.join(rejoin(req("a"), resp.MemberID))
	idA := resp.MemberID
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.Equal(t, 1, h.awaitingJoin("g"))

	// Delay 3 s; a member joining within it extends it by 3 s, up to the rebalance timeout
	// (10 s): deadlines at 3, 6, 9 and 10 s.
	h.clock.Advance(2 * time.Second)
	b, idB := twoStep("b")
	h.clock.Advance(time.Second) // 3 s: extended to 6 s
	require.Equal(t, PreparingRebalance, h.state("g"))
	h.clock.Advance(2 * time.Second)
	c, idC := twoStep("c")
	h.clock.Advance(time.Second) // 6 s: extended to 9 s
	h.clock.Advance(2500 * time.Millisecond)
	d, idD := twoStep("d")
	h.clock.Advance(500 * time.Millisecond) // 9 s: extended to 10 s, the rebalance timeout
	h.clock.Advance(500 * time.Millisecond)
	e, idE := twoStep("e")
	h.clock.Advance(499 * time.Millisecond)
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.Equal(t, 5, h.awaitingJoin("g"))
	for _, jc := range []*joinCall{a, b, c, d, e} {
		jc.requireUnanswered()
	}
	h.clock.Advance(time.Millisecond) // 10 s: no more extension
	require.Equal(t, 10*time.Second, h.clock.elapsed())
	require.Equal(t, CompletingRebalance, h.state("g"))

	ids := []string{idA, idB, idC, idD, idE}
	sorted := slices.Sorted(slices.Values(ids))
	var members []JoinMember
	for _, id := range sorted {
		members = append(members, JoinMember{MemberID: id, Metadata: subscription("orders")})
	}
	// Generation 1; the first member is the leader and alone gets the members.
	require.Equal(t, JoinResponse{MemberID: idA, Generation: 1, ProtocolType: ConsumerProtocolType, Protocol: "range",
		Leader: idA, Members: members}, a.ok())
	for i, jc := range []*joinCall{b, c, d, e} {
		require.Equal(t, JoinResponse{MemberID: ids[i+1], Generation: 1, ProtocolType: ConsumerProtocolType,
			Protocol: "range", Leader: idA}, jc.ok())
	}

	// The followers' SyncGroups wait for the leader's, which distributes the assignment.
	assign := map[string][]byte{}
	for i, id := range sorted {
		assign[id] = assignmentFor(i)
	}
	var followers []*syncCall
	for _, id := range ids[1:] {
		sc := h.sync(SyncRequest{Group: "g", MemberID: id, Generation: 1, ProtocolType: ConsumerProtocolType, Protocol: "range"})
		require.True(t, h.waitingInSync("g", id))
		followers = append(followers, sc)
	}
	require.Equal(t, CompletingRebalance, h.state("g"))
	resp2, err := h.sync(SyncRequest{Group: "g", MemberID: idA, Generation: 1, Assignments: assign}).result()
	require.NoError(t, err)
	require.Equal(t, SyncResponse{ProtocolType: ConsumerProtocolType, Protocol: "range", Assignment: assign[idA]}, resp2)
	for i, sc := range followers {
		resp, err := sc.result()
		require.NoError(t, err)
		require.Equal(t, SyncResponse{ProtocolType: ConsumerProtocolType, Protocol: "range", Assignment: assign[ids[i+1]]}, resp)
	}
	desc := h.describe("g")
	require.Equal(t, Stable, desc.State)
	require.Equal(t, int32(1), desc.Generation)
	require.Equal(t, idA, desc.Leader)
	require.Equal(t, "range", desc.Protocol)
	for i, m := range desc.Members {
		require.Equal(t, sorted[i], m.MemberID)
		require.Equal(t, assign[m.MemberID], m.Assignment)
		require.Equal(t, subscription("orders"), m.Metadata)
		require.Equal(t, "/10.0.0.1", m.ClientHost)
		require.Equal(t, testSession, m.SessionTimeout)
		require.Equal(t, 10*time.Second, m.RebalanceTimeout)
	}
	// The leader's SyncGroup stored the group.
	recs := h.store.records()
	require.Len(t, recs, 1)
	require.Equal(t, groupKey("g"), recs[0].Key)
}

func TestJoinInitialDelaySingleMember(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: 5 * time.Second})
	jc := h.join(joinReq("g", "a"))
	h.clock.Advance(5*time.Second - time.Millisecond)
	jc.requireUnanswered()
	require.Equal(t, PreparingRebalance, h.state("g"))
	h.clock.Advance(time.Millisecond)
	resp := jc.ok()
	require.Equal(t, int32(1), resp.Generation)
	require.Equal(t, resp.MemberID, resp.Leader)
	require.Equal(t, []JoinMember{{MemberID: resp.MemberID, Metadata: subscription("orders")}}, resp.Members)
}

func TestJoinWaitingMembersCountAsAlive(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"), joinReq("g", "c"))
	leader := g1.leader
	var others []string
	for _, id := range g1.ids {
		if id != leader {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	fast, slow := others[0], others[1]
	client := func(id string) string {
		for c, mid := range g1.ids {
			if mid == id {
				return c
			}
		}
		return ""
	}

	// The leader and one follower rejoin; the other is slow to (its heartbeats keep it alive).
	jl := h.join(g1.request[client(leader)])
	jf := h.join(g1.request[client(fast)])
	require.Equal(t, 2, h.awaitingJoin("g"))
	// 30 s in the join phase: three session timeouts.
	h.keepAlive("g", 30*time.Second, 2*time.Second, slow)
	require.Equal(t, PreparingRebalance, h.state("g"))
	h.requireMembers("g", leader, fast, slow)
	require.True(t, h.waitingInJoin("g", leader))
	require.True(t, h.waitingInJoin("g", fast))
	jl.requireUnanswered()
	jf.requireUnanswered()

	js := h.join(g1.request[client(slow)])
	g2 := h.completeJoins(jl, jf, js)
	require.Equal(t, int32(2), g2.id)
	require.Equal(t, leader, g2.leader)

	// The sync phase: the followers' SyncGroups wait 25 s for the leader's (whose heartbeats keep
	// it alive); their sessions do not expire meanwhile.
	sf := h.sync(SyncRequest{Group: "g", MemberID: fast, Generation: 2})
	ss := h.sync(SyncRequest{Group: "g", MemberID: slow, Generation: 2})
	h.keepAlive("g", 25*time.Second, 2*time.Second, leader)
	require.Equal(t, CompletingRebalance, h.state("g"))
	h.requireMembers("g", leader, fast, slow)
	require.True(t, h.waitingInSync("g", fast))
	require.True(t, h.waitingInSync("g", slow))
	sf.requireUnanswered()
	ss.requireUnanswered()
	assign := map[string][]byte{leader: assignmentFor(0), fast: assignmentFor(1), slow: assignmentFor(2)}
	_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 2, Assignments: assign}).result()
	require.NoError(t, err)
	for id, sc := range map[string]*syncCall{fast: sf, slow: ss} {
		resp, err := sc.result()
		require.NoError(t, err)
		require.Equal(t, assign[id], resp.Assignment)
	}
	require.Equal(t, Stable, h.state("g"))

	// Their sessions start over when the assignment reaches them: a member silent from then on
	// is removed a session timeout later, not before.
	h.keepAlive("g", testSession-2*time.Millisecond, time.Second, leader, fast)
	h.clock.Advance(time.Millisecond)
	h.requireMembers("g", leader, fast, slow)
	h.clock.Advance(time.Millisecond)
	h.requireMembers("g", leader, fast)
	require.Equal(t, PreparingRebalance, h.state("g"))
}

func TestJoinRemovedMemberAnsweredAtOnce(t *testing.T) {
	t.Run("left", func(t *testing.T) {
		h := newHarness(t, Config{})
		g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
		jc := h.join(g1.request["a"])
		require.True(t, h.waitingInJoin("g", g1.ids["a"]))
		errs, err := h.c.Leave("g", []LeavingMember{{MemberID: g1.ids["a"]}})
		require.NoError(t, err)
		require.Equal(t, []error{nil}, errs)
		_, err = jc.result()
		require.ErrorIs(t, err, ErrUnknownMemberID)
		h.requireMembers("g", g1.ids["b"])
		require.Equal(t, PreparingRebalance, h.state("g"))
		require.Equal(t, 0, h.awaitingJoin("g"))
		// The other member's rejoin completes the rebalance, with it as leader.
		resp := h.join(g1.request["b"]).ok()
		require.Equal(t, int32(2), resp.Generation)
		require.Equal(t, g1.ids["b"], resp.Leader)
	})
	t.Run("fenced by a static replacement", func(t *testing.T) {
		h := newHarness(t, Config{})
		g1 := h.form(joinReq("g", "d"), staticReq("g", "s", "inst-1"), joinReq("g", "e"))
		require.Equal(t, g1.ids["d"], g1.leader)
		// The leader rejoins, a rebalance; the static member rejoins with its member id and
		// waits for the third member.
		jd := h.join(g1.request["d"])
		old := h.join(g1.request["s"])
		require.True(t, h.waitingInJoin("g", g1.ids["s"]))
		// It restarts: its new incarnation joins with no member id and takes the instance id.
		jn := h.join(staticReq("g", "s", "inst-1"))
		_, err := old.result()
		require.ErrorIs(t, err, ErrFencedInstanceID)
		require.Equal(t, 2, h.awaitingJoin("g"))
		require.Equal(t, 3, len(h.memberIDs("g")))
		require.NotContains(t, h.memberIDs("g"), g1.ids["s"])
		jn.requireUnanswered()
		g2 := h.completeJoins(jd, jn, h.join(g1.request["e"]))
		require.Equal(t, int32(2), g2.id)
		require.NotEqual(t, g1.ids["s"], g2.ids["s"])
		require.True(t, strings.HasPrefix(g2.ids["s"], "inst-1-"), g2.ids["s"])
		h.requireMembers("g", g1.ids["d"], g2.ids["s"], g1.ids["e"])
		// The old incarnation is fenced.
		require.ErrorIs(t, h.heartbeat("g", g1.ids["s"], 2), ErrUnknownMemberID)
		require.ErrorIs(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: g1.ids["s"], InstanceID: "inst-1", Generation: 2}), ErrFencedInstanceID)
	})
	t.Run("new member past its join timeout", func(t *testing.T) {
		h := newHarness(t, Config{})
		long := func(r JoinRequest) JoinRequest { r.RebalanceTimeout = 10 * time.Minute; return r }
		g1 := h.form(long(joinReq("g", "a")), long(joinReq("g", "b")))
		ja := h.join(g1.request["a"])
		h.clock.Advance(time.Second)
		jn := h.join(long(joinReq("g", "n")))
		require.Equal(t, 2, h.awaitingJoin("g"))
		// A new member cannot heartbeat: it is removed after group.classic.new.member.join.timeout.ms.
		h.keepAlive("g", DefaultNewMemberJoinTimeout-time.Millisecond, 2*time.Second, g1.ids["b"])
		jn.requireUnanswered()
		require.Equal(t, 3, len(h.memberIDs("g")))
		h.clock.Advance(time.Millisecond)
		_, err := jn.result()
		require.ErrorIs(t, err, ErrUnknownMemberID)
		h.requireMembers("g", g1.ids["a"], g1.ids["b"])
		ja.requireUnanswered()
		require.True(t, h.waitingInJoin("g", g1.ids["a"]))
	})
}

func TestJoinMemberDiedInJoinGetsSessionTimer(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"), joinReq("g", "c"))
	leader, dead, slow := g1.leader, g1.followers()[0], g1.followers()[1]

	jl := h.join(g1.request[g1.client(leader)])
	jd := h.join(g1.request[g1.client(dead)])
	// dead's client dies with its JoinGroup parked; slow rejoins 30 s later.
	h.keepAlive("g", 30*time.Second, 2*time.Second, slow)
	h.requireMembers("g", leader, dead, slow)
	g2 := h.completeJoins(jl, jd, h.join(g1.request[g1.client(slow)]))
	require.Equal(t, int32(2), g2.id)
	joined := h.clock.elapsed()

	// The others sync and heartbeat; dead never does. It is removed a session timeout after the
	// join completed, and the group rebalances.
	ss := h.sync(SyncRequest{Group: "g", MemberID: slow, Generation: 2})
	_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 2,
		Assignments: map[string][]byte{leader: assignmentFor(0), dead: assignmentFor(1), slow: assignmentFor(2)}}).result()
	require.NoError(t, err)
	_, err = ss.result()
	require.NoError(t, err)
	require.Equal(t, Stable, h.state("g"))
	h.keepAlive("g", testSession-time.Millisecond, time.Second, leader, slow)
	h.requireMembers("g", leader, dead, slow)
	require.Equal(t, Stable, h.state("g"))
	h.clock.Advance(time.Millisecond)
	require.Equal(t, joined+testSession, h.clock.elapsed())
	h.requireMembers("g", leader, slow)
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.ErrorIs(t, h.heartbeat("g", leader, 2), ErrRebalanceInProgress)
	require.ErrorIs(t, h.heartbeat("g", dead, 2), ErrUnknownMemberID)
}

func TestJoinPhaseCompletesWhenAllRejoin(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"), joinReq("g", "c"))
	start := h.clock.elapsed()
	f1, f2 := g1.followers()[0], g1.followers()[1]

	// A follower rejoining a Stable group with its metadata unchanged gets the generation it has.
	resp := h.join(g1.request[g1.client(f1)]).ok()
	require.Equal(t, JoinResponse{MemberID: f1, Generation: 1, ProtocolType: ConsumerProtocolType, Protocol: "range", Leader: g1.leader}, resp)
	require.Equal(t, Stable, h.state("g"))

	// The leader's rejoin starts a rebalance, which completes with the last member's rejoin,
	// without the clock moving.
	jl := h.join(g1.request[g1.client(g1.leader)])
	require.Equal(t, PreparingRebalance, h.state("g"))
	j1 := h.join(g1.request[g1.client(f1)])
	require.Equal(t, PreparingRebalance, h.state("g"))
	jl.requireUnanswered()
	j2 := h.join(g1.request[g1.client(f2)])
	require.Equal(t, CompletingRebalance, h.state("g"))
	g2 := h.completeJoins(jl, j1, j2)
	require.Equal(t, int32(2), g2.id)
	require.Equal(t, g1.leader, g2.leader)
	require.Equal(t, g1.ids, g2.ids)
	require.Equal(t, start, h.clock.elapsed())
	require.Len(t, g2.resps[g1.client(g1.leader)].Members, 3)
}

func TestJoinPhaseTimeoutRemovesDynamicKeepsStatic(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"), staticReq("g", "s", "inst-s"))
	a, b, s := g1.ids["a"], g1.ids["b"], g1.ids["s"]
	require.Equal(t, a, g1.leader)

	// Only a rejoins; b and s stay alive by their heartbeats but do not rejoin.
	ja := h.join(g1.request["a"])
	h.keepAlive("g", testRebalance-time.Millisecond, 2*time.Second, b, s)
	require.Equal(t, PreparingRebalance, h.state("g"))
	ja.requireUnanswered()
	h.clock.Advance(time.Millisecond)

	// At the rebalance timeout the dynamic member that did not rejoin is removed, the static
	// one stays (its session decides), and generation 2 begins.
	resp := ja.ok()
	require.Equal(t, int32(2), resp.Generation)
	require.Equal(t, a, resp.Leader)
	require.Equal(t, []JoinMember{{MemberID: a, Metadata: subscription("orders")}, {MemberID: s, InstanceID: "inst-s", Metadata: subscription("orders")}},
		sortJoinMembers(resp.Members))
	h.requireMembers("g", a, s)
	require.Equal(t, CompletingRebalance, h.state("g"))
	require.ErrorIs(t, h.heartbeat("g", b, 2), ErrUnknownMemberID)
	// s must rejoin: its generation is over. Its JoinGroup (same metadata) gets generation 2 at once.
	require.ErrorIs(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: s, InstanceID: "inst-s", Generation: 1}), ErrIllegalGeneration)
	resp = h.join(g1.request["s"]).ok()
	require.Equal(t, JoinResponse{MemberID: s, Generation: 2, ProtocolType: ConsumerProtocolType, Protocol: "range", Leader: a}, resp)
}

func sortJoinMembers(ms []JoinMember) []JoinMember {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(x, y JoinMember) int { return strings.Compare(x.MemberID, y.MemberID) })
	return out
}

func TestJoinDuringPhaseDoesNotRestartTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	a, b := g1.ids["a"], g1.ids["b"]
	ja := h.join(g1.request["a"]) // the rebalance timeout, 60 s, runs from here
	h.keepAlive("g", 30*time.Second, 2*time.Second, b)

	// A new member with a longer rebalance timeout joins halfway.
	nreq := joinReq("g", "n")
	nreq.RebalanceTimeout = 2 * testRebalance
	jn := h.join(nreq)
	require.Equal(t, 2, h.awaitingJoin("g"))
	h.keepAlive("g", 30*time.Second-time.Millisecond, 2*time.Second, b)
	require.Equal(t, PreparingRebalance, h.state("g"))
	ja.requireUnanswered()
	jn.requireUnanswered()

	// The phase ends at the original deadline.
	h.clock.Advance(time.Millisecond)
	g2 := h.completeJoins(ja, jn)
	require.Equal(t, int32(2), g2.id)
	h.requireMembers("g", a, g2.ids["n"])
	require.NotContains(t, h.memberIDs("g"), b)
}

// ---- static membership (KIP-345) ----

func TestStaticRejoinWhileStableKeepsGenerationAndAssignment(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2"))
	s1, s2 := g1.ids["c1"], g1.ids["c2"]
	require.Equal(t, s1, g1.leader)
	records := len(h.store.records())

	// i2 restarts: it joins with no member id and the same metadata.
	resp := h.join(staticReq("g", "c2", "i2")).ok()
	n2 := resp.MemberID
	require.NotEqual(t, s2, n2)
	require.True(t, strings.HasPrefix(n2, "i2-"), n2)
	require.Equal(t, JoinResponse{MemberID: n2, Generation: 1, ProtocolType: ConsumerProtocolType, Protocol: "range", Leader: s1}, resp)
	require.Equal(t, Stable, h.state("g"))
	require.Equal(t, int32(1), h.generation("g"))
	h.requireMembers("g", s1, n2)

	// Its SyncGroup gets its previous assignment back.
	sresp, err := h.sync(SyncRequest{Group: "g", MemberID: n2, InstanceID: "i2", Generation: 1}).result()
	require.NoError(t, err)
	require.Equal(t, g1.assign[s2], sresp.Assignment)
	// The old member id is fenced.
	require.ErrorIs(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1}), ErrFencedInstanceID)
	_, err = h.sync(SyncRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1}).result()
	require.ErrorIs(t, err, ErrFencedInstanceID)
	require.NoError(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: n2, InstanceID: "i2", Generation: 1}))
	// The new member id was stored.
	recs := h.store.records()
	require.Len(t, recs, records+1)
	v := decodeGroupValue(t, recs[len(recs)-1].Value)
	require.Equal(t, int32(1), v.Generation)
	require.Len(t, v.Members, 2)
	for _, m := range v.Members {
		require.Contains(t, []string{s1, n2}, m.MemberID)
		if m.MemberID == n2 {
			require.Equal(t, "i2", *m.InstanceID)
			require.Equal(t, g1.assign[s2], m.Assignment)
		}
	}

	// The leader restarts: it is told to skip the assignment (KIP-814) and gets the members.
	resp = h.join(staticReq("g", "c1", "i1")).ok()
	n1 := resp.MemberID
	require.Equal(t, JoinResponse{MemberID: n1, Generation: 1, ProtocolType: ConsumerProtocolType, Protocol: "range", Leader: n1,
		SkipAssignment: true, Members: sortJoinMembers([]JoinMember{
			{MemberID: n1, InstanceID: "i1", Metadata: subscription("orders")},
			{MemberID: n2, InstanceID: "i2", Metadata: subscription("orders")},
		})}, resp)
	require.Equal(t, Stable, h.state("g"))
	sresp, err = h.sync(SyncRequest{Group: "g", MemberID: n1, InstanceID: "i1", Generation: 1}).result()
	require.NoError(t, err)
	require.Equal(t, g1.assign[s1], sresp.Assignment)
}

// Kafka rebalances a Stable group on a static member's restart only when the group's chosen
// protocol would change (KIP-345): a restart with another subscription keeps the generation and
// the member's assignment, and the leader, told of the new metadata (KIP-814), decides whether to
// rejoin. A restart whose protocols exclude the chosen one rebalances.
func TestStaticRejoinRebalancesOnlyWhenTheProtocolChanges(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2"))
	resp := h.join(staticReq("g", "c2", "i2", "orders", "payments")).ok()
	require.Equal(t, Stable, h.state("g"))
	require.Equal(t, int32(1), resp.Generation)
	n2 := resp.MemberID
	sresp, err := h.sync(SyncRequest{Group: "g", MemberID: n2, InstanceID: "i2", Generation: 1}).result()
	require.NoError(t, err)
	require.Equal(t, g1.assign[g1.ids["c2"]], sresp.Assignment)

	other := staticReq("g", "c2", "i2")
	other.Protocols = []Protocol{{Name: "roundrobin", Metadata: subscription("orders")}, {Name: "range", Metadata: subscription("orders")}}
	jn := h.join(other)
	require.Equal(t, Stable, h.state("g"), "range is still every member's, and c1 votes for it: no change")
	_ = jn.ok()
	both := staticReq("g", "c1", "i1")
	both.Protocols = other.Protocols
	h.join(both).requireUnanswered()
	require.Equal(t, PreparingRebalance, h.state("g"), "both members now prefer roundrobin: the chosen protocol changes")
}

// A static member's rejoin while Stable is stored; when that fails the old member id stays the
// instance's and the JoinGroup gets ErrCoordinatorNotAvailable.
func TestStaticRejoinStorageFailureKeepsOldMember(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2"))
	s1, s2 := g1.ids["c1"], g1.ids["c2"]
	h.store.fail(errDiskFull)
	_, err := h.join(staticReq("g", "c2", "i2")).result()
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	require.ErrorIs(t, err, errDiskFull)
	h.store.fail(nil)

	h.requireMembers("g", s1, s2)
	require.Equal(t, Stable, h.state("g"))
	require.NoError(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1}))
	resp, err := h.sync(SyncRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1}).result()
	require.NoError(t, err)
	require.Equal(t, g1.assign[s2], resp.Assignment)
	// Its session runs: silent, it is removed a session timeout after the failed rejoin.
	h.keepAlive("g", testSession, time.Second, s1)
	h.requireMembers("g", s1)
}

// A pending member (given its id by MEMBER_ID_REQUIRED) that finds the group full is no longer
// pending (Kafka's classicGroupJoin removes it): a rebalance does not wait for it.
func TestJoinGroupFullDropsPendingMember(t *testing.T) {
	h := newHarness(t, Config{MaxSize: 2})
	g1 := h.form(joinReq("g", "a"))
	formed := h.clock.elapsed()
	creq := joinReq("g", "c")
	creq.RequireKnownMemberID = true
	resp, err := h.join(creq).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)
	jd := h.join(joinReq("g", "d")) // a second member: a rebalance, which waits for c too
	require.Equal(t, PreparingRebalance, h.state("g"))
	_, err = h.join(rejoin(creq, resp.MemberID)).result()
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)

	// a rejoins: every member has, and c is not waited for.
	g2 := h.completeJoins(h.join(g1.request["a"]), jd)
	require.Equal(t, int32(2), g2.id)
	require.Equal(t, formed, h.clock.elapsed())
}
