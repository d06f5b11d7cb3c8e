package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSyncPhaseTimeout(t *testing.T) {
	t.Run("follower never syncs", func(t *testing.T) {
		h := newHarness(t, Config{})
		g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
		leader, follower := g1.leader, g1.followers()[0]
		_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 1,
			Assignments: map[string][]byte{leader: assignmentFor(0), follower: assignmentFor(1)}}).result()
		require.NoError(t, err)
		require.Equal(t, Stable, h.state("g"))

		// Both heartbeat; the follower never sends its SyncGroup.
		h.keepAlive("g", testRebalance-time.Millisecond, 2*time.Second, leader, follower)
		h.requireMembers("g", leader, follower)
		h.clock.Advance(time.Millisecond)
		h.requireMembers("g", leader)
		require.Equal(t, PreparingRebalance, h.state("g"))
		require.ErrorIs(t, h.heartbeat("g", leader, 1), ErrRebalanceInProgress)
		require.ErrorIs(t, h.heartbeat("g", follower, 1), ErrUnknownMemberID)
		resp := h.join(g1.request[g1.client(leader)]).ok()
		require.Equal(t, int32(2), resp.Generation)
		require.Equal(t, []JoinMember{{MemberID: leader, Metadata: subscription("orders")}}, resp.Members)
	})
	t.Run("leader never syncs", func(t *testing.T) {
		h := newHarness(t, Config{})
		g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
		leader, follower := g1.leader, g1.followers()[0]
		sf := h.sync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
		h.keepAlive("g", testRebalance-time.Millisecond, 2*time.Second, leader)
		sf.requireUnanswered()
		require.Equal(t, CompletingRebalance, h.state("g"))
		h.clock.Advance(time.Millisecond)

		// The leader is removed; the follower's SyncGroup is sent back to join.
		_, err := sf.result()
		require.ErrorIs(t, err, ErrRebalanceInProgress)
		h.requireMembers("g", follower)
		d := h.describe("g")
		require.Equal(t, PreparingRebalance, d.State)
		require.Equal(t, follower, d.Leader)
		resp := h.join(g1.request[g1.client(follower)]).ok()
		require.Equal(t, int32(2), resp.Generation)
		require.Equal(t, follower, resp.Leader)
	})
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
	leader := g1.leader
	for _, tc := range []struct {
		name string
		req  SyncRequest
		want error
	}{
		{"unknown group", SyncRequest{Group: "nope", MemberID: leader, Generation: 1}, ErrUnknownMemberID},
		{"unknown member", SyncRequest{Group: "g", MemberID: "x", Generation: 1}, ErrUnknownMemberID},
		{"unknown instance", SyncRequest{Group: "g", MemberID: leader, InstanceID: "i", Generation: 1}, ErrUnknownMemberID},
		{"old generation", SyncRequest{Group: "g", MemberID: leader, Generation: 0}, ErrIllegalGeneration},
		{"later generation", SyncRequest{Group: "g", MemberID: leader, Generation: 2}, ErrIllegalGeneration},
		{"other protocol type", SyncRequest{Group: "g", MemberID: leader, Generation: 1, ProtocolType: "connect"}, ErrInconsistentGroupProtocol},
		{"other protocol", SyncRequest{Group: "g", MemberID: leader, Generation: 1, Protocol: "roundrobin"}, ErrInconsistentGroupProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.sync(tc.req).result()
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, CompletingRebalance, h.state("g"))
		})
	}
	// In the join phase (a new member joined): sent back to join.
	h.join(joinReq("g", "c"))
	require.Equal(t, PreparingRebalance, h.state("g"))
	_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 1}).result()
	require.ErrorIs(t, err, ErrRebalanceInProgress)
}

func TestSyncStableReturnsAssignment(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	for _, id := range g1.ids {
		resp, err := h.sync(SyncRequest{Group: "g", MemberID: id, Generation: 1}).result()
		require.NoError(t, err)
		require.Equal(t, SyncResponse{ProtocolType: ConsumerProtocolType, Protocol: "range", Assignment: g1.assign[id]}, resp)
	}
}

// A member left out of the leader's assignment gets an empty one.
func TestSyncMemberLeftOutGetsEmptyAssignment(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
	leader, follower := g1.leader, g1.followers()[0]
	sf := h.sync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
	_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 1, Assignments: map[string][]byte{leader: assignmentFor(0)}}).result()
	require.NoError(t, err)
	resp, err := sf.result()
	require.NoError(t, err)
	require.Empty(t, resp.Assignment)
	got, err := DecodeAssignment(resp.Assignment)
	require.NoError(t, err)
	require.Empty(t, got)
}

// A storage failure at the leader's SyncGroup answers the waiting SyncGroups with
// ErrCoordinatorNotAvailable and the group rebalances.
func TestSyncStorageFailure(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
	leader, follower := g1.leader, g1.followers()[0]
	sf := h.sync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
	h.store.fail(errDiskFull)
	_, err := h.sync(SyncRequest{Group: "g", MemberID: leader, Generation: 1,
		Assignments: map[string][]byte{leader: assignmentFor(0), follower: assignmentFor(1)}}).result()
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	require.ErrorIs(t, err, errDiskFull)
	_, err = sf.result()
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	d := h.describe("g")
	require.Equal(t, PreparingRebalance, d.State)
	for _, m := range d.Members {
		require.Empty(t, m.Assignment)
	}
}

// A member whose SyncGroup waited gets a session timer when the SyncGroup is answered, with an
// error too (Kafka's propagateAssignment): its session's expiry was ignored while it waited,
// and nothing else would ever remove it if it then died.
func TestSyncAnsweredWithErrorRestartsSession(t *testing.T) {
	h := newHarness(t, Config{})
	r1, r2 := staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2")
	r1.SessionTimeout = testSession + time.Second
	g1 := h.joinAll(r1, r2)
	s1, s2 := g1.ids["c1"], g1.ids["c2"]
	require.Equal(t, s1, g1.leader)
	joined := h.clock.elapsed()

	// s2 syncs and waits through its session timeout; then the leader's session expires, the
	// group rebalances and s2's SyncGroup is answered with ErrRebalanceInProgress.
	ss := h.sync(SyncRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1})
	h.clock.Advance(testSession)
	h.requireMembers("g", s1, s2)
	h.clock.Advance(time.Second)
	_, err := ss.result()
	require.ErrorIs(t, err, ErrRebalanceInProgress)
	h.requireMembers("g", s2)
	require.Equal(t, PreparingRebalance, h.state("g"))

	// s2's client is gone. Its session, restarted when its SyncGroup was answered, removes it;
	// the group is then Empty.
	h.clock.Advance(testSession - time.Millisecond)
	h.requireMembers("g", s2)
	h.clock.Advance(time.Millisecond)
	require.Equal(t, joined+r1.SessionTimeout+testSession, h.clock.elapsed())
	d := h.describe("g")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(2), d.Generation)
	require.Empty(t, d.Members)
}
