package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleLeaveGroup answers LeaveGroup (key 13) with the store's group coordinator
// (group.Coordinator.Leave, Kafka's GroupMetadataManager.classicGroupLeave): each member named
// leaves at once and the group rebalances without waiting for its session timeout. Versions 0
// to 2 name one member by member id and answer its error at the top level, as Kafka's
// LeaveGroupResponse does for them; version 3 and later name a batch of members, each by member
// id or by group.instance.id (KIP-345), and answer each member's error with it (the top-level
// error stays NONE for a group that does not exist: every member is UNKNOWN_MEMBER_ID, as in
// Kafka). Version 5 brings each member's reason (KIP-800), which the coordinator logs.
//
// Error codes: INVALID_GROUP_ID, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// COORDINATOR_NOT_AVAILABLE.
func handleLeaveGroup(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if err := c.srv.groups.CheckGroupID(req.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return reply{msg: resp}, nil
	}
	var leaving []group.LeavingMember
	if r.version < 3 {
		leaving = []group.LeavingMember{{MemberID: req.MemberID}}
	} else {
		leaving = make([]group.LeavingMember, 0, len(req.Members))
		for _, m := range req.Members {
			lm := group.LeavingMember{MemberID: m.MemberID}
			if m.InstanceID != nil {
				lm.InstanceID = *m.InstanceID
			}
			if m.Reason != nil {
				lm.Reason = *m.Reason
			}
			leaving = append(leaving, lm)
		}
	}
	errs, err := c.srv.groups.Leave(req.Group, leaving)
	switch {
	case errors.Is(err, group.ErrUnknownMemberID):
		// The group does not exist: each member is unknown.
		errs = make([]error, len(leaving))
		for i := range errs {
			errs[i] = err
		}
	case err != nil:
		resp.ErrorCode = c.groupErrorCode(err)
		return reply{msg: resp}, nil
	}
	if r.version < 3 {
		resp.ErrorCode = c.groupErrorCode(errs[0])
		return reply{msg: resp}, nil
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = lm.MemberID
		rm.InstanceID = req.Members[i].InstanceID
		rm.ErrorCode = c.groupErrorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return reply{msg: resp}, nil
}
