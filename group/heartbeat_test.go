package group

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"), staticReq("g", "s", "inst-s"))
	a, s := g1.ids["a"], g1.ids["s"]
	// An Empty group: it has offsets but no members.
	require.NoError(t, h.c.CommitOffsets(context.Background(), CommitRequest{Group: "empty", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{"orders", 0}: {Offset: 1, LeaderEpoch: -1}}}))
	require.Equal(t, Empty, h.state("empty"))

	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want error // nil: no error
	}{
		{"stable", HeartbeatRequest{Group: "g", MemberID: a, Generation: 1}, nil},
		{"stable static", HeartbeatRequest{Group: "g", MemberID: s, InstanceID: "inst-s", Generation: 1}, nil},
		{"old generation", HeartbeatRequest{Group: "g", MemberID: a, Generation: 0}, ErrIllegalGeneration},
		{"later generation", HeartbeatRequest{Group: "g", MemberID: a, Generation: 2}, ErrIllegalGeneration},
		{"unknown member", HeartbeatRequest{Group: "g", MemberID: "a-unknown", Generation: 1}, ErrUnknownMemberID},
		{"empty member id", HeartbeatRequest{Group: "g", Generation: 1}, ErrUnknownMemberID},
		{"unknown group", HeartbeatRequest{Group: "nope", MemberID: a, Generation: 1}, ErrUnknownMemberID},
		{"empty group", HeartbeatRequest{Group: "empty", MemberID: a, Generation: 0}, ErrUnknownMemberID},
		{"empty group, no member id", HeartbeatRequest{Group: "empty", Generation: 0}, ErrUnknownMemberID},
		{"unknown instance", HeartbeatRequest{Group: "g", MemberID: s, InstanceID: "inst-x", Generation: 1}, ErrUnknownMemberID},
		{"instance of another member", HeartbeatRequest{Group: "g", MemberID: a, InstanceID: "inst-s", Generation: 1}, ErrFencedInstanceID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.c.Heartbeat(tc.req)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}

	// The join phase: ErrRebalanceInProgress, for the rejoined member too.
	ja := h.join(g1.request["a"])
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.ErrorIs(t, h.heartbeat("g", a, 1), ErrRebalanceInProgress)
	require.ErrorIs(t, h.heartbeat("g", g1.ids["b"], 1), ErrRebalanceInProgress)
	// The sync phase: members of the new generation heartbeat normally.
	h.join(g1.request["b"])
	h.join(g1.request["s"])
	g2 := h.completeJoins(ja)
	require.Equal(t, int32(2), g2.id)
	require.Equal(t, CompletingRebalance, h.state("g"))
	require.NoError(t, h.heartbeat("g", a, 2))
	require.ErrorIs(t, h.heartbeat("g", a, 1), ErrIllegalGeneration)
}

func TestHeartbeatSessionExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	a, b := g1.ids["a"], g1.ids["b"]

	// Each heartbeat restarts the session: b heartbeats at 9 s, then falls silent.
	h.clock.Advance(9 * time.Second)
	require.NoError(t, h.heartbeat("g", a, 1))
	require.NoError(t, h.heartbeat("g", b, 1))
	h.keepAlive("g", testSession-time.Millisecond, time.Second, a)
	h.requireMembers("g", a, b)
	require.Equal(t, Stable, h.state("g"))
	h.clock.Advance(time.Millisecond)
	h.requireMembers("g", a)
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.ErrorIs(t, h.heartbeat("g", b, 1), ErrUnknownMemberID)
	require.ErrorIs(t, h.heartbeat("g", a, 1), ErrRebalanceInProgress)

	// The survivor rejoins: generation 2 with it alone.
	resp := h.join(g1.request["a"]).ok()
	require.Equal(t, int32(2), resp.Generation)
	require.Equal(t, []JoinMember{{MemberID: a, Metadata: subscription("orders")}}, resp.Members)

	// The last member's session expires too: a rebalance to an Empty group, generation 3.
	h.clock.Advance(testSession)
	d := h.describe("g")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(3), d.Generation)
	require.Empty(t, d.Members)
	require.Equal(t, "", d.Leader)
}

// A heartbeat replaces the member's session timer: the timers pending stay as many.
func TestHeartbeatReplacesSessionTimer(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	h.keepAlive("g", testRebalance, time.Second, g1.ids["a"], g1.ids["b"]) // the sync phase's timer fires, with nothing to do
	pending := h.clock.Pending()
	require.Equal(t, 2, pending, "one session timer per member")
	for range 100 {
		h.clock.Advance(time.Second)
		for _, id := range g1.ids {
			require.NoError(t, h.heartbeat("g", id, 1))
		}
	}
	require.Equal(t, pending, h.clock.Pending())
	require.Equal(t, Stable, h.state("g"))
}
