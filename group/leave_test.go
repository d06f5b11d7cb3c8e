package group

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLeaveUnknownMember(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))

	errs, err := h.c.Leave("g", []LeavingMember{{MemberID: "a-unknown"}, {InstanceID: "inst-x"}, {MemberID: g1.ids["b"], InstanceID: "inst-x"}})
	require.NoError(t, err)
	require.Len(t, errs, 3)
	for _, e := range errs {
		require.ErrorIs(t, e, ErrUnknownMemberID)
	}
	require.Equal(t, Stable, h.state("g"))
	require.Len(t, h.memberIDs("g"), 2)

	// One known and one unknown member: the known one leaves.
	errs, err = h.c.Leave("g", []LeavingMember{{MemberID: g1.ids["b"], Reason: "shutting down"}, {MemberID: "a-unknown"}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], ErrUnknownMemberID)
	h.requireMembers("g", g1.ids["a"])
	require.Equal(t, PreparingRebalance, h.state("g"))

	_, err = h.c.Leave("nope", []LeavingMember{{MemberID: g1.ids["a"]}})
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

func TestLeaveLastMemberEmptiesGroup(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"))
	errs, err := h.c.Leave("g", []LeavingMember{{MemberID: g1.ids["a"]}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)

	// The rebalance completes at once, with no member: Empty, generation 2.
	d := h.describe("g")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(2), d.Generation)
	require.Empty(t, d.Members)
	require.Equal(t, "", d.Leader)
	require.Equal(t, "", d.Protocol)
	require.ErrorIs(t, h.heartbeat("g", g1.ids["a"], 1), ErrUnknownMemberID)

	// The Empty generation is stored.
	recs := h.store.records()
	last := recs[len(recs)-1]
	require.Equal(t, groupKey("g"), last.Key)
	v := decodeGroupValue(t, last.Value)
	require.Equal(t, int32(2), v.Generation)
	require.Empty(t, v.Members)
	require.Nil(t, v.Leader)
	require.Nil(t, v.Protocol)
	require.Equal(t, h.clock.Now().UnixMilli(), v.CurrentStateTimestamp)
}

func TestLeavePendingMember(t *testing.T) {
	h := newHarness(t, Config{})
	req := joinReq("g", "a")
	req.RequireKnownMemberID = true
	resp, err := h.join(req).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)
	errs, err := h.c.Leave("g", []LeavingMember{{MemberID: resp.MemberID}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	_, err = h.join(rejoin(req, resp.MemberID)).result()
	require.ErrorIs(t, err, ErrUnknownMemberID)
	d := h.describe("g")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(0), d.Generation)

	// A pending member leaving the first rebalance does not cut its initial delay short.
	ja := h.join(joinReq("g", "a"))
	resp, err = h.join(req).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)
	h.clock.Advance(DefaultInitialRebalanceDelay - time.Millisecond)
	_, err = h.c.Leave("g", []LeavingMember{{MemberID: resp.MemberID}})
	require.NoError(t, err)
	require.Equal(t, PreparingRebalance, h.state("g"))
	// A rebalance of a Stable group that waits for a pending member completes when it leaves.
	h.clock.Advance(time.Millisecond)
	g1 := h.completeJoins(ja)
	h.syncAll("g", &g1)
	resp, err = h.join(req).result()
	require.ErrorIs(t, err, ErrMemberIDRequired)
	jl := h.join(g1.request["a"])
	require.Equal(t, PreparingRebalance, h.state("g"))
	jl.requireUnanswered()
	_, err = h.c.Leave("g", []LeavingMember{{MemberID: resp.MemberID}})
	require.NoError(t, err)
	require.Equal(t, int32(2), jl.ok().Generation)
}

func TestStaticLeaveByInstanceIDRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2"))
	s1, s2 := g1.ids["c1"], g1.ids["c2"]

	// An instance id with another member id is fenced; nothing changes.
	errs, err := h.c.Leave("g", []LeavingMember{{MemberID: s2, InstanceID: "i1"}})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], ErrFencedInstanceID)
	require.Equal(t, Stable, h.state("g"))

	// By instance id alone, as the admin client's removeMembersFromConsumerGroup sends it.
	errs, err = h.c.Leave("g", []LeavingMember{{InstanceID: "i2"}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	h.requireMembers("g", s1)
	require.Equal(t, PreparingRebalance, h.state("g"))
	require.ErrorIs(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: s1, InstanceID: "i1", Generation: 1}), ErrRebalanceInProgress)
	require.ErrorIs(t, h.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: s2, InstanceID: "i2", Generation: 1}), ErrUnknownMemberID)

	resp := h.join(g1.request["c1"]).ok()
	require.Equal(t, int32(2), resp.Generation)
	require.Equal(t, []JoinMember{{MemberID: s1, InstanceID: "i1", Metadata: subscription("orders")}}, resp.Members)
}

// A member leaving during an empty group's first rebalance does not cut the initial delay
// short (Kafka's classicGroupLeave completes the join phase only through maybeCompleteJoinPhase,
// which waits for the delay): more members may still come.
func TestLeaveDuringInitialDelayKeepsDelay(t *testing.T) {
	h := newHarness(t, Config{})
	ja := h.join(joinReq("g", "a"))
	h.clock.Advance(time.Second)
	jb := h.join(joinReq("g", "b"))
	ids := h.memberIDs("g")
	require.Len(t, ids, 2)
	var b string
	for _, id := range ids {
		if strings.HasPrefix(id, "b-") {
			b = id
		}
	}
	errs, err := h.c.Leave("g", []LeavingMember{{MemberID: b}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	_, err = jb.result()
	require.ErrorIs(t, err, ErrUnknownMemberID)
	require.Equal(t, PreparingRebalance, h.state("g"))

	// c joins within the delay and is part of generation 1.
	h.clock.Advance(time.Second)
	jc := h.join(joinReq("g", "c"))
	g1 := h.completeJoins(ja, jc)
	require.Equal(t, int32(1), g1.id)
	require.Len(t, g1.resps["a"].Members, 2)
}
