package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleHeartbeat answers Heartbeat (key 12) with the store's group coordinator
// (group.Coordinator.Heartbeat, Kafka's GroupMetadataManager.classicGroupHeartbeat): it keeps
// the member's session alive, and tells it with REBALANCE_IN_PROGRESS to rejoin while the group
// is in its join phase. Version 3 brings group.instance.id (KIP-345).
//
// Error codes: INVALID_GROUP_ID, UNKNOWN_MEMBER_ID (also for a group that does not exist),
// FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
func handleHeartbeat(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if err := c.srv.groups.CheckGroupID(req.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return reply{msg: resp}, nil
	}
	hr := group.HeartbeatRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.InstanceID != nil {
		hr.InstanceID = *req.InstanceID
	}
	resp.ErrorCode = c.groupErrorCode(c.srv.groups.Heartbeat(hr))
	return reply{msg: resp}, nil
}
