package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleJoinGroup answers JoinGroup (key 11) with the store's group coordinator
// (group.Coordinator.Join, Kafka's GroupMetadataManager.classicGroupJoin). The request waits, as
// Kafka's DelayedJoin, until the join phase completes: every known member has rejoined, or the
// rebalance timeout passed. Serve's end cuts the wait short with NOT_COORDINATOR, as Kafka's
// coordinator answers the joins it holds when it unloads its groups.
//
// Version 0 has no rebalance timeout: the session timeout is taken, as Kafka does. From version
// 4 on, a new dynamic member gets MEMBER_ID_REQUIRED with its member id and joins again with it
// (KIP-394); version 5 brings static members (group.instance.id, KIP-345), version 7 the
// protocol type and name in the response, version 9 skip_assignment (KIP-814): a static leader
// that rejoins a stable group without changes is told not to assign again. Before version 9
// such a leader is answered as a follower (no members, another leader id), so that it takes its
// assignment from SyncGroup rather than computing one, as Kafka answers it.
//
// Error codes: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL,
// GROUP_MAX_SIZE_REACHED, MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// COORDINATOR_NOT_AVAILABLE (the group could not be stored), NOT_COORDINATOR (Serve ended).
func handleJoinGroup(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	jr := group.JoinRequest{
		Group:                req.Group,
		MemberID:             req.MemberID,
		ClientID:             r.clientID,
		ClientHost:           c.clientHost(),
		SessionTimeout:       millis(req.SessionTimeoutMillis),
		RebalanceTimeout:     millis(req.RebalanceTimeoutMillis),
		ProtocolType:         req.ProtocolType,
		RequireKnownMemberID: r.version >= 4,
	}
	if r.version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if req.InstanceID != nil {
		jr.InstanceID = *req.InstanceID
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	jr.Protocols = make([]group.Protocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}

	wctx, cancel := c.groupWait(ctx)
	jresp, err := c.srv.groups.Join(wctx, jr)
	cancel()
	resp.MemberID = req.MemberID
	if err != nil {
		resp.ErrorCode = c.groupWaitCode(err)
		if jresp.MemberID != "" { // MEMBER_ID_REQUIRED carries the id to join with
			resp.MemberID = jresp.MemberID
		}
		return reply{msg: resp}, nil
	}
	resp.MemberID = jresp.MemberID
	resp.Generation = jresp.Generation
	resp.ProtocolType = &jresp.ProtocolType
	resp.Protocol = &jresp.Protocol
	resp.LeaderID = jresp.Leader
	resp.SkipAssignment = jresp.SkipAssignment
	for _, m := range jresp.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.MemberID
		if m.InstanceID != "" {
			id := m.InstanceID
			rm.InstanceID = &id
		}
		rm.ProtocolMetadata = m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	if jresp.SkipAssignment && r.version < 9 {
		// The client cannot be told to skip the assignment: it must not see itself as leader.
		// Kafka names the leader the member replaced; the coordinator has already handed the
		// leadership to the new member id, so no leader id is named.
		resp.SkipAssignment = false
		resp.Members = nil
		resp.LeaderID = ""
	}
	return reply{msg: resp}, nil
}
