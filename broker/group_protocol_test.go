package broker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the group tests expect, by Kafka's names.
const (
	codeNone                     int16 = 0
	codeUnknownTopicOrPartition  int16 = 3
	codeOffsetMetadataTooLarge   int16 = 12
	codeNotCoordinator           int16 = 16
	codeIllegalGeneration        int16 = 22
	codeInconsistentGroupProto   int16 = 23
	codeInvalidGroupID           int16 = 24
	codeUnknownMemberID          int16 = 25
	codeNonEmptyGroup            int16 = 68
	codeFencedInstanceID         int16 = 82
	codeGroupIDNotFound          int16 = 69
	codeMemberIDRequired         int16 = 79
	codeGroupSubscribedToTopic   int16 = 86
	groupAuthorizedOperationsAll int32 = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11 // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
)

func TestJoinSyncHeartbeatLeaveGroup(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "orders", 2)
	k := dialKafka(t, b.addr, "proto-client")

	// KIP-394: a new dynamic member gets its id and joins again with it.
	first := k.do(9, joinRequest("g", "", "orders")).(*kmsg.JoinGroupResponse)
	require.Equal(t, codeMemberIDRequired, first.ErrorCode)
	require.True(t, strings.HasPrefix(first.MemberID, "proto-client-"), first.MemberID)
	require.Equal(t, int32(-1), first.Generation)
	id := first.MemberID

	jresp := k.do(9, joinRequest("g", id, "orders")).(*kmsg.JoinGroupResponse)
	require.Equal(t, codeNone, jresp.ErrorCode)
	require.Equal(t, int32(1), jresp.Generation)
	require.Equal(t, "consumer", *jresp.ProtocolType)
	require.Equal(t, "range", *jresp.Protocol)
	require.Equal(t, id, jresp.LeaderID)
	require.Equal(t, id, jresp.MemberID)
	require.False(t, jresp.SkipAssignment)
	require.Len(t, jresp.Members, 1)
	require.Equal(t, id, jresp.Members[0].MemberID)
	require.Nil(t, jresp.Members[0].InstanceID)
	require.Equal(t, consumerMetadata("orders"), jresp.Members[0].ProtocolMetadata)

	// SyncGroup v5 checks the protocol named against the group's.
	sync := func(protocol string) *kmsg.SyncGroupResponse {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = "g", id, 1
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(protocol)
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, consumerAssignment(map[string][]int32{"orders": {0, 1}})
		req.GroupAssignment = append(req.GroupAssignment, a)
		return k.do(5, req).(*kmsg.SyncGroupResponse)
	}
	require.Equal(t, codeInconsistentGroupProto, sync("roundrobin").ErrorCode)
	sresp := sync("range")
	require.Equal(t, codeNone, sresp.ErrorCode)
	require.Equal(t, "consumer", *sresp.ProtocolType)
	require.Equal(t, "range", *sresp.Protocol)
	require.Equal(t, consumerAssignment(map[string][]int32{"orders": {0, 1}}), sresp.MemberAssignment)
	require.Equal(t, "Stable", groupState(t, b, "g"))

	heartbeat := func(group, member string, generation int32) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, member, generation
		return k.do(4, req).(*kmsg.HeartbeatResponse).ErrorCode
	}
	require.Equal(t, codeNone, heartbeat("g", id, 1))
	require.Equal(t, codeIllegalGeneration, heartbeat("g", id, 2))
	require.Equal(t, codeUnknownMemberID, heartbeat("g", "nobody", 1))
	require.Equal(t, codeUnknownMemberID, heartbeat("no-such-group", id, 1))
	require.Equal(t, codeInvalidGroupID, heartbeat("", id, 1))

	// DescribeGroups of a Stable group: protocol, member metadata and assignment.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{"g"}
	dreq.IncludeAuthorizedOperations = true
	dresp := k.do(5, dreq).(*kmsg.DescribeGroupsResponse)
	require.Len(t, dresp.Groups, 1)
	dg := dresp.Groups[0]
	require.Equal(t, codeNone, dg.ErrorCode)
	require.Equal(t, "g", dg.Group)
	require.Equal(t, "Stable", dg.State)
	require.Equal(t, "consumer", dg.ProtocolType)
	require.Equal(t, "range", dg.Protocol)
	require.Equal(t, groupAuthorizedOperationsAll, dg.AuthorizedOperations)
	require.Len(t, dg.Members, 1)
	require.Equal(t, id, dg.Members[0].MemberID)
	require.Equal(t, "proto-client", dg.Members[0].ClientID)
	require.Equal(t, "/127.0.0.1", dg.Members[0].ClientHost)
	require.Equal(t, consumerMetadata("orders"), dg.Members[0].ProtocolMetadata)
	require.Equal(t, consumerAssignment(map[string][]int32{"orders": {0, 1}}), dg.Members[0].MemberAssignment)
	dreq.IncludeAuthorizedOperations = false
	require.Equal(t, int32(math.MinInt32), k.do(5, dreq).(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations)

	// LeaveGroup v5: a batch, each member answered with its own error.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = "g"
	for _, m := range []string{id, "ghost"} {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID, lm.Reason = m, kmsg.StringPtr("test done")
		lreq.Members = append(lreq.Members, lm)
	}
	lresp := k.do(5, lreq).(*kmsg.LeaveGroupResponse)
	require.Equal(t, codeNone, lresp.ErrorCode)
	require.Len(t, lresp.Members, 2)
	require.Equal(t, id, lresp.Members[0].MemberID)
	require.Equal(t, codeNone, lresp.Members[0].ErrorCode)
	require.Equal(t, "ghost", lresp.Members[1].MemberID)
	require.Equal(t, codeUnknownMemberID, lresp.Members[1].ErrorCode)

	// Empty now: the protocol type stays, the members and protocol go.
	dg = k.do(5, dreq).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Equal(t, "Empty", dg.State)
	require.Equal(t, "consumer", dg.ProtocolType)
	require.Equal(t, "", dg.Protocol)
	require.Empty(t, dg.Members)
}

func TestJoinGroupOldVersions(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "orders", 1)
	k := dialKafka(t, b.addr, "old-client")
	coord, err := b.store.GroupCoordinator()
	require.NoError(t, err)

	// v0: no rebalance timeout (the session timeout is taken), no MEMBER_ID_REQUIRED.
	j0 := k.do(0, joinRequest("g0", "", "orders")).(*kmsg.JoinGroupResponse)
	require.Equal(t, codeNone, j0.ErrorCode)
	require.True(t, strings.HasPrefix(j0.MemberID, "old-client-"), j0.MemberID)
	require.Equal(t, int32(1), j0.Generation)
	require.Equal(t, "range", *j0.Protocol)
	require.Equal(t, j0.MemberID, j0.LeaderID)
	d, err := coord.DescribeGroup("g0")
	require.NoError(t, err)
	require.Len(t, d.Members, 1)
	require.Equal(t, 10*time.Second, d.Members[0].SessionTimeout)
	require.Equal(t, 10*time.Second, d.Members[0].RebalanceTimeout)

	// v3 keeps the rebalance timeout given, and still needs no member id first.
	j3 := k.do(3, joinRequest("g3", "", "orders")).(*kmsg.JoinGroupResponse)
	require.Equal(t, codeNone, j3.ErrorCode)
	d, err = coord.DescribeGroup("g3")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, d.Members[0].RebalanceTimeout)

	// SyncGroup v0 and Heartbeat v0 of the v0 member.
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation = "g0", j0.MemberID, j0.Generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = j0.MemberID, consumerAssignment(map[string][]int32{"orders": {0}})
	sreq.GroupAssignment = append(sreq.GroupAssignment, a)
	sresp := k.do(0, sreq).(*kmsg.SyncGroupResponse)
	require.Equal(t, codeNone, sresp.ErrorCode)
	require.Equal(t, consumerAssignment(map[string][]int32{"orders": {0}}), sresp.MemberAssignment)
	hreq := kmsg.NewPtrHeartbeatRequest()
	hreq.Group, hreq.MemberID, hreq.Generation = "g0", j0.MemberID, j0.Generation
	require.Equal(t, codeNone, k.do(0, hreq).(*kmsg.HeartbeatResponse).ErrorCode)

	// LeaveGroup v0-2 name one member and answer its error at the top level.
	leave := func(version int16, group, member string) *kmsg.LeaveGroupResponse {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = group
		if version < 3 {
			req.MemberID = member
		} else {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = member
			req.Members = append(req.Members, lm)
		}
		return k.do(version, req).(*kmsg.LeaveGroupResponse)
	}
	require.Equal(t, codeNone, leave(0, "g0", j0.MemberID).ErrorCode)
	require.Equal(t, "Empty", groupState(t, b, "g0"))
	require.Equal(t, codeUnknownMemberID, leave(0, "g0", j0.MemberID).ErrorCode)
	require.Equal(t, codeUnknownMemberID, leave(2, "no-such-group", "m").ErrorCode)
	// v3 and later: a group that does not exist leaves the top level NONE, the member unknown.
	l3 := leave(3, "no-such-group", "m")
	require.Equal(t, codeNone, l3.ErrorCode)
	require.Len(t, l3.Members, 1)
	require.Equal(t, codeUnknownMemberID, l3.Members[0].ErrorCode)
	require.Equal(t, codeInvalidGroupID, leave(4, "", "m").ErrorCode)
}

func TestDescribeGroupsNotFound(t *testing.T) {
	b := startGroupBroker(t)
	k := dialKafka(t, b.addr, "c")
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"missing", ""}

	// Before v6 a group that does not exist is described as Dead, with no error.
	v5 := k.do(5, req).(*kmsg.DescribeGroupsResponse)
	require.Len(t, v5.Groups, 2)
	for i, g := range v5.Groups {
		require.Equal(t, req.Groups[i], g.Group)
		require.Equal(t, codeNone, g.ErrorCode)
		require.Equal(t, "Dead", g.State)
		require.Empty(t, g.Members)
	}
	// v6 (KIP-1043): GROUP_ID_NOT_FOUND with a message.
	v6 := k.do(6, req).(*kmsg.DescribeGroupsResponse)
	require.Len(t, v6.Groups, 2)
	for i, g := range v6.Groups {
		require.Equal(t, req.Groups[i], g.Group)
		require.Equal(t, codeGroupIDNotFound, g.ErrorCode)
		require.NotNil(t, g.ErrorMessage)
		require.Contains(t, *g.ErrorMessage, "group id not found")
	}
}

func TestListGroupsFilters(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "orders", 1)
	k := dialKafka(t, b.addr, "c")
	joinAlone(t, k, "g-stable", map[string][]int32{"orders": {0}}, "orders")
	// A commit from outside any membership (generation -1) makes a simple group: Empty, with
	// no protocol type.
	creq := kmsg.NewPtrOffsetCommitRequest()
	creq.Group, creq.Generation = "g-simple", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "orders"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 0
	ct.Partitions = append(ct.Partitions, cp)
	creq.Topics = append(creq.Topics, ct)
	require.Equal(t, codeNone, k.do(9, creq).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)

	type listed struct{ group, protocolType, state, groupType string }
	list := func(version int16, states, types []string) []listed {
		req := kmsg.NewPtrListGroupsRequest()
		req.StatesFilter, req.TypesFilter = states, types
		resp := k.do(version, req).(*kmsg.ListGroupsResponse)
		require.Equal(t, codeNone, resp.ErrorCode)
		out := []listed{}
		for _, g := range resp.Groups {
			out = append(out, listed{g.Group, g.ProtocolType, g.GroupState, g.GroupType})
		}
		return out
	}
	both := []listed{{"g-simple", "", "Empty", "classic"}, {"g-stable", "consumer", "Stable", "classic"}}
	require.Equal(t, both, list(5, nil, nil))
	require.Equal(t, []listed{{"g-simple", "", "", ""}, {"g-stable", "consumer", "", ""}}, list(3, nil, nil))
	require.Equal(t, []listed{{"g-simple", "", "", ""}, {"g-stable", "consumer", "", ""}}, list(0, nil, nil))
	// States are matched without regard to case or surrounding spaces (Kafka lower-cases and
	// trims them).
	require.Equal(t, []listed{{"g-stable", "consumer", "Stable", ""}}, list(4, []string{"  stable "}, nil))
	require.Equal(t, both, list(5, []string{"EMPTY", "Stable"}, nil))
	require.Equal(t, []listed{}, list(5, []string{"PreparingRebalance"}, nil))
	// Every group here is a classic group: the KIP-848 type "consumer" lists none.
	require.Equal(t, []listed{}, list(5, nil, []string{"consumer"}))
	require.Equal(t, both, list(5, nil, []string{"Classic"}))
	require.Equal(t, both[:1], list(5, []string{"empty"}, []string{"share", "classic"}))
}

func TestOffsetCommitAndFetch(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "t", 3)
	k := dialKafka(t, b.addr, "c")

	type part struct {
		partition int32
		offset    int64
		epoch     int32
		meta      *string
	}
	commit := func(version int16, group, member string, generation int32, topics map[string][]part) map[string]map[int32]int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, generation
		req.RetentionTimeMillis = 1000 // v2-v4; ignored
		for topic, ps := range topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range ps {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.offset, p.epoch, p.meta
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := k.do(version, req).(*kmsg.OffsetCommitResponse)
		out := map[string]map[int32]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = map[int32]int16{}
			for _, rp := range rt.Partitions {
				out[rt.Topic][rp.Partition] = rp.ErrorCode
			}
		}
		return out
	}

	// An admin commit (generation -1, no member) to a group that does not exist creates it.
	got := commit(9, "simple", "", -1, map[string][]part{
		"t":       {{0, 5, 3, kmsg.StringPtr("m")}, {1, 7, -1, kmsg.StringPtr(strings.Repeat("x", 4097))}, {9, 1, -1, nil}},
		"missing": {{0, 1, -1, nil}},
	})
	require.Equal(t, map[string]map[int32]int16{
		"t":       {0: codeNone, 1: codeOffsetMetadataTooLarge, 9: codeUnknownTopicOrPartition},
		"missing": {0: codeUnknownTopicOrPartition},
	}, got)
	// 4096 UTF-16 units is the limit: "é" is one unit, "𝄞" two.
	require.Equal(t, map[string]map[int32]int16{"t": {1: codeNone}},
		commit(9, "simple", "", -1, map[string][]part{"t": {{1, 7, -1, kmsg.StringPtr(strings.Repeat("é", 4096))}}}))
	require.Equal(t, map[string]map[int32]int16{"t": {1: codeOffsetMetadataTooLarge}},
		commit(9, "simple", "", -1, map[string][]part{"t": {{1, 8, -1, kmsg.StringPtr(strings.Repeat("𝄞", 2049))}}}))
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeInvalidGroupID}},
		commit(9, "", "", -1, map[string][]part{"t": {{0, 1, -1, nil}}}))

	// OffsetFetch v8+: several groups; a group that never committed answers -1, epoch -1, empty
	// metadata, with no error (not GROUP_ID_NOT_FOUND), for each partition asked.
	type fetched struct {
		offset int64
		epoch  int32
		meta   string
		code   int16
	}
	fetchV9 := func(groups map[string][]int32) map[string]map[int32]fetched {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		for g, ps := range groups {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			if ps != nil {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = "t", ps
				rg.Topics = append(rg.Topics, rt)
			}
			req.Groups = append(req.Groups, rg)
		}
		resp := k.do(9, req).(*kmsg.OffsetFetchResponse)
		out := map[string]map[int32]fetched{}
		for _, g := range resp.Groups {
			require.Equal(t, codeNone, g.ErrorCode, g.Group)
			out[g.Group] = map[int32]fetched{}
			for _, rt := range g.Topics {
				require.Equal(t, "t", rt.Topic)
				for _, p := range rt.Partitions {
					out[g.Group][p.Partition] = fetched{p.Offset, p.LeaderEpoch, *p.Metadata, p.ErrorCode}
				}
			}
		}
		return out
	}
	require.Equal(t, map[string]map[int32]fetched{
		"simple": {0: {5, 3, "m", 0}, 1: {7, -1, strings.Repeat("é", 4096), 0}, 2: {-1, -1, "", 0}},
		"never":  {0: {-1, -1, "", 0}, 1: {-1, -1, "", 0}},
	}, fetchV9(map[string][]int32{"simple": {0, 1, 2}, "never": {0, 1}}))
	// A null topic list is every committed partition; none for a group that never committed.
	require.Equal(t, map[string]map[int32]fetched{
		"simple": {0: {5, 3, "m", 0}, 1: {7, -1, strings.Repeat("é", 4096), 0}},
		"never":  {},
	}, fetchV9(map[string][]int32{"simple": nil, "never": nil}))

	// v1 to v7: one group. v1 has neither leader epoch nor null topics; v5 brings the epoch.
	fetchOld := func(version int16, group string, ps []int32) *kmsg.OffsetFetchResponse {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		if ps != nil {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "t", ps
			req.Topics = append(req.Topics, rt)
		}
		return k.do(version, req).(*kmsg.OffsetFetchResponse)
	}
	v1 := fetchOld(1, "simple", []int32{0, 2})
	require.Len(t, v1.Topics, 1)
	require.Len(t, v1.Topics[0].Partitions, 2)
	p0, p2 := v1.Topics[0].Partitions[0], v1.Topics[0].Partitions[1]
	require.Equal(t, [4]any{int32(0), int64(5), "m", codeNone}, [4]any{p0.Partition, p0.Offset, *p0.Metadata, p0.ErrorCode})
	require.Equal(t, [4]any{int32(2), int64(-1), "", codeNone}, [4]any{p2.Partition, p2.Offset, *p2.Metadata, p2.ErrorCode})
	never := fetchOld(3, "never", []int32{0})
	require.Equal(t, codeNone, never.ErrorCode)
	require.Equal(t, int64(-1), never.Topics[0].Partitions[0].Offset)
	require.Equal(t, codeNone, never.Topics[0].Partitions[0].ErrorCode)
	all4 := fetchOld(4, "simple", nil)
	require.Equal(t, codeNone, all4.ErrorCode)
	require.Len(t, all4.Topics, 1)
	require.Equal(t, []int32{0, 1}, []int32{all4.Topics[0].Partitions[0].Partition, all4.Topics[0].Partitions[1].Partition})
	v5 := fetchOld(5, "simple", []int32{0})
	require.Equal(t, int32(3), v5.Topics[0].Partitions[0].LeaderEpoch)

	// OffsetCommit v2 (retention time, no leader epoch): the epoch committed is -1.
	require.Equal(t, map[string]map[int32]int16{"t": {2: codeNone}},
		commit(2, "simple", "", -1, map[string][]part{"t": {{2, 11, 7, nil}}}))
	require.Equal(t, map[int32]fetched{2: {11, -1, "", 0}}, fetchV9(map[string][]int32{"simple": {2}})["simple"])

	// A group with a member: commits need the member and its generation.
	id, gen := joinAlone(t, k, "live", map[string][]int32{"t": {0, 1, 2}}, "t")
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeIllegalGeneration, 1: codeIllegalGeneration}},
		commit(9, "live", id, gen+1, map[string][]part{"t": {{0, 1, -1, nil}, {1, 1, -1, nil}}}))
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeUnknownMemberID}},
		commit(9, "live", "stranger", gen, map[string][]part{"t": {{0, 1, -1, nil}}}))
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeUnknownMemberID}},
		commit(9, "live", "", -1, map[string][]part{"t": {{0, 1, -1, nil}}}))
	require.Equal(t, map[int32]fetched{0: {-1, -1, "", 0}}, fetchV9(map[string][]int32{"live": {0}})["live"])
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeNone, 1: codeNone}},
		commit(3, "live", id, gen, map[string][]part{"t": {{0, 42, -1, nil}, {1, 43, -1, kmsg.StringPtr("meta")}}}))
	require.Equal(t, map[int32]fetched{0: {42, -1, "", 0}, 1: {43, -1, "meta", 0}},
		fetchV9(map[string][]int32{"live": {0, 1}})["live"])
}

func TestOffsetDeleteAndDeleteGroups(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "t", 2)
	b.createTopic(t, "u", 1)
	k := dialKafka(t, b.addr, "c")
	id, gen := joinAlone(t, k, "del", map[string][]int32{"t": {0, 1}}, "t")
	creq := kmsg.NewPtrOffsetCommitRequest()
	creq.Group, creq.MemberID, creq.Generation = "del", id, gen
	for _, topic := range []string{"t", "u"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 10
		rt.Partitions = append(rt.Partitions, rp)
		creq.Topics = append(creq.Topics, rt)
	}
	cresp := k.do(9, creq).(*kmsg.OffsetCommitResponse)
	require.Equal(t, codeNone, cresp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, codeNone, cresp.Topics[1].Partitions[0].ErrorCode)

	offsetDelete := func(group string, tps map[string][]int32) (int16, map[string]map[int32]int16) {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, topic := range []string{"t", "u", "nope"} {
			if ps, ok := tps[topic]; ok {
				rt := kmsg.NewOffsetDeleteRequestTopic()
				rt.Topic = topic
				for _, p := range ps {
					rp := kmsg.NewOffsetDeleteRequestTopicPartition()
					rp.Partition = p
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
		}
		resp := k.do(0, req).(*kmsg.OffsetDeleteResponse)
		out := map[string]map[int32]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = map[int32]int16{}
			for _, rp := range rt.Partitions {
				out[rt.Topic][rp.Partition] = rp.ErrorCode
			}
		}
		return resp.ErrorCode, out
	}
	committed := func(topic string) int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "del"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		return k.do(7, req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].Offset
	}

	// The member subscribes to t: its offsets stay; u's go; a partition the store lacks is
	// UNKNOWN_TOPIC_OR_PARTITION.
	code, got := offsetDelete("del", map[string][]int32{"t": {0}, "u": {0}, "nope": {0}})
	require.Equal(t, codeNone, code)
	require.Equal(t, map[string]map[int32]int16{
		"t": {0: codeGroupSubscribedToTopic}, "u": {0: codeNone}, "nope": {0: codeUnknownTopicOrPartition},
	}, got)
	require.Equal(t, int64(10), committed("t"))
	require.Equal(t, int64(-1), committed("u"))
	code, _ = offsetDelete("ghost", map[string][]int32{"t": {0}})
	require.Equal(t, codeGroupIDNotFound, code)
	code, _ = offsetDelete("", map[string][]int32{"t": {0}})
	require.Equal(t, codeInvalidGroupID, code)

	deleteGroups := func(groups ...string) []int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = groups
		resp := k.do(2, req).(*kmsg.DeleteGroupsResponse)
		var codes []int16
		for i, g := range resp.Groups {
			require.Equal(t, groups[i], g.Group)
			codes = append(codes, g.ErrorCode)
		}
		return codes
	}
	require.Equal(t, []int16{codeNonEmptyGroup, codeGroupIDNotFound, codeGroupIDNotFound}, deleteGroups("del", "ghost", ""))

	// Once the member left, the group subscribes to nothing: t's offset can be deleted too.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group, lreq.MemberID = "del", id
	require.Equal(t, codeNone, k.do(1, lreq).(*kmsg.LeaveGroupResponse).ErrorCode)
	code, got = offsetDelete("del", map[string][]int32{"t": {0, 1}})
	require.Equal(t, codeNone, code)
	require.Equal(t, map[string]map[int32]int16{"t": {0: codeNone, 1: codeNone}}, got)
	require.Equal(t, int64(-1), committed("t"))

	require.Equal(t, []int16{codeNone}, deleteGroups("del"))
	require.Equal(t, "", groupState(t, b, "del"))
	lg := k.do(5, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	require.Empty(t, lg.Groups)
	require.Equal(t, []int16{codeGroupIDNotFound}, deleteGroups("del"))
}

// A JoinGroup the coordinator holds is answered NOT_COORDINATOR when Serve ends, and Serve
// returns without waiting for the rebalance timeout.
func TestJoinGroupAnsweredWhenServeEnds(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "t", 1)
	a := dialKafka(t, b.addr, "a")
	joinAlone(t, a, "g", map[string][]int32{"t": {0}}, "t")

	// A second member joins: the join phase waits for the first to rejoin, which it does not.
	c := dialKafka(t, b.addr, "c")
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.try(3, joinRequest("g", "", "t"))
		done <- result{resp, err}
	}()
	coord, err := b.store.GroupCoordinator()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := coord.DescribeGroup("g")
		return err == nil && d.State.String() == "PreparingRebalance" && len(d.Members) == 2
	}, 30*time.Second, 5*time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("the join was answered before the rebalance completed: %v %v", r.resp, r.err)
	default:
	}

	b.stop() // fails the test if Serve does not return within 30 s
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, codeNotCoordinator, r.resp.(*kmsg.JoinGroupResponse).ErrorCode)
}

// Static members (KIP-345): a restarted static member rejoins under a new member id without a
// rebalance; a leader is told to skip the assignment from JoinGroup v9 (KIP-814), and answered
// as a follower before; the old member id is fenced.
func TestStaticMembership(t *testing.T) {
	b := startGroupBroker(t)
	b.createTopic(t, "t", 2)
	k := dialKafka(t, b.addr, "static-client")
	staticJoin := func(version int16, memberID string) *kmsg.JoinGroupResponse {
		req := joinRequest("g", memberID, "t")
		req.InstanceID = kmsg.StringPtr("inst-1")
		return k.do(version, req).(*kmsg.JoinGroupResponse)
	}
	// A static member needs no member id round trip.
	j := staticJoin(9, "")
	require.Equal(t, codeNone, j.ErrorCode)
	require.True(t, strings.HasPrefix(j.MemberID, "inst-1-"), j.MemberID)
	require.Equal(t, j.MemberID, j.LeaderID)
	require.Len(t, j.Members, 1)
	require.Equal(t, "inst-1", *j.Members[0].InstanceID)
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation, sreq.InstanceID = "g", j.MemberID, j.Generation, kmsg.StringPtr("inst-1")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = j.MemberID, consumerAssignment(map[string][]int32{"t": {0, 1}})
	sreq.GroupAssignment = append(sreq.GroupAssignment, a)
	require.Equal(t, codeNone, k.do(3, sreq).(*kmsg.SyncGroupResponse).ErrorCode)

	// The client restarts: it joins with no member id. v9: the same generation, told to skip
	// the assignment.
	j9 := staticJoin(9, "")
	require.Equal(t, codeNone, j9.ErrorCode)
	require.NotEqual(t, j.MemberID, j9.MemberID)
	require.Equal(t, j.Generation, j9.Generation)
	require.True(t, j9.SkipAssignment)
	require.Equal(t, j9.MemberID, j9.LeaderID)
	require.Len(t, j9.Members, 1)
	// The old member id is fenced.
	hreq := kmsg.NewPtrHeartbeatRequest()
	hreq.Group, hreq.MemberID, hreq.Generation, hreq.InstanceID = "g", j.MemberID, j.Generation, kmsg.StringPtr("inst-1")
	require.Equal(t, codeFencedInstanceID, k.do(4, hreq).(*kmsg.HeartbeatResponse).ErrorCode)

	// v8 has no skip_assignment: the rejoined leader is answered as a follower.
	j8 := staticJoin(8, "")
	require.Equal(t, codeNone, j8.ErrorCode)
	require.Equal(t, j.Generation, j8.Generation)
	require.False(t, j8.SkipAssignment)
	require.NotEqual(t, j8.MemberID, j8.LeaderID)
	require.Empty(t, j8.Members)
	// Its SyncGroup gets the assignment the group kept.
	sreq.MemberID, sreq.GroupAssignment = j8.MemberID, nil
	sresp := k.do(5, sreq).(*kmsg.SyncGroupResponse)
	require.Equal(t, codeNone, sresp.ErrorCode)
	require.Equal(t, consumerAssignment(map[string][]int32{"t": {0, 1}}), sresp.MemberAssignment)

	// DescribeGroups v4+ names the instance; LeaveGroup v3+ by instance id alone.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{"g"}
	dg := k.do(4, dreq).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Equal(t, "Stable", dg.State)
	require.Len(t, dg.Members, 1)
	require.Equal(t, j8.MemberID, dg.Members[0].MemberID)
	require.Equal(t, "inst-1", *dg.Members[0].InstanceID)
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = kmsg.StringPtr("inst-1")
	lreq.Members = append(lreq.Members, lm)
	lresp := k.do(3, lreq).(*kmsg.LeaveGroupResponse)
	require.Equal(t, codeNone, lresp.ErrorCode)
	require.Equal(t, "", lresp.Members[0].MemberID)
	require.Equal(t, "inst-1", *lresp.Members[0].InstanceID)
	require.Equal(t, codeNone, lresp.Members[0].ErrorCode)
	require.Equal(t, "Empty", groupState(t, b, "g"))
}
