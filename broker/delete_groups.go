package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteGroups answers DeleteGroups (key 42) with the store's group coordinator
// (group.Coordinator.DeleteGroup, Kafka's GroupCoordinatorShard.deleteGroups): each group that
// has no members is deleted with its committed offsets, their tombstones stored first.
//
// Error codes, per group: GROUP_ID_NOT_FOUND (also for the empty group id, which no group has,
// as in Kafka), NON_EMPTY_GROUP, COORDINATOR_NOT_AVAILABLE (the coordinator is closed), and the
// code of the store's error when the tombstones could not be stored.
func handleDeleteGroups(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		dg.ErrorCode = c.groupErrorCode(c.srv.groups.DeleteGroup(ctx, id))
		resp.Groups = append(resp.Groups, dg)
	}
	return reply{msg: resp}, nil
}
