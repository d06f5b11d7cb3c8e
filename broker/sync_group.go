package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleSyncGroup answers SyncGroup (key 14) with the store's group coordinator
// (group.Coordinator.Sync, Kafka's GroupMetadataManager.classicGroupSync): the leader brings
// every member's assignment, and each member's request waits, in the sync phase, until the
// leader's assignment is stored; a member of a stable group gets its assignment at once. Serve's
// end cuts the wait short with NOT_COORDINATOR. When the leader lists a member twice, the last
// assignment counts, as in Kafka. Version 3 brings group.instance.id (KIP-345), version 5 the
// protocol type and name, checked against the group's and answered back.
//
// Error codes: INVALID_GROUP_ID, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
// INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (the assignment
// could not be stored), NOT_COORDINATOR (Serve ended).
func handleSyncGroup(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if err := c.srv.groups.CheckGroupID(req.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return reply{msg: resp}, nil
	}
	sr := group.SyncRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.InstanceID != nil {
		sr.InstanceID = *req.InstanceID
	}
	if req.ProtocolType != nil {
		sr.ProtocolType = *req.ProtocolType
	}
	if req.Protocol != nil {
		sr.Protocol = *req.Protocol
	}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}

	wctx, cancel := c.groupWait(ctx)
	sresp, err := c.srv.groups.Sync(wctx, sr)
	cancel()
	if err != nil {
		resp.ErrorCode = c.groupWaitCode(err)
		return reply{msg: resp}, nil
	}
	resp.ProtocolType = &sresp.ProtocolType
	resp.Protocol = &sresp.Protocol
	resp.MemberAssignment = sresp.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return reply{msg: resp}, nil
}
