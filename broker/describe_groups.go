package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleDescribeGroups answers DescribeGroups (key 15) with the store's group coordinator
// (group.Coordinator.DescribeGroup, Kafka's GroupMetadataManager.describeGroups): each group's
// state, protocol type and members. As in Kafka, a Stable group also gives its chosen protocol
// and each member's metadata and assignment; in any other state the members come with their ids
// and client only. Version 4 adds each member's group.instance.id; version 3's
// include_authorized_operations is answered with every operation Kafka supports on a group, as
// Kafka answers without an authorizer.
//
// A group that does not exist is, before version 6, described as Dead with no error; from
// version 6 (KIP-1043) it is GROUP_ID_NOT_FOUND with an error message. Other error codes:
// COORDINATOR_NOT_AVAILABLE.
func handleDescribeGroups(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		d, err := c.srv.groups.DescribeGroup(id)
		switch {
		case errors.Is(err, group.ErrGroupIDNotFound) && r.version < 6:
			dg.State = group.Dead.String()
		case err != nil:
			dg.ErrorCode = c.groupErrorCode(err)
			msg := err.Error()
			dg.ErrorMessage = &msg
		default:
			dg.State = d.State.String()
			dg.ProtocolType = d.ProtocolType
			stable := d.State == group.Stable
			if stable {
				dg.Protocol = d.Protocol
			}
			for _, m := range d.Members {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
				if m.InstanceID != "" {
					iid := m.InstanceID
					dm.InstanceID = &iid
				}
				dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
				if stable {
					dm.ProtocolMetadata, dm.MemberAssignment = m.Metadata, m.Assignment
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		if req.IncludeAuthorizedOperations && r.version >= 3 && dg.ErrorCode == errNone {
			dg.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return reply{msg: resp}, nil
}
