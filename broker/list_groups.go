package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicGroupType is the group type (KIP-848's GroupType) of every group the coordinator holds:
// Kafka's classic protocol, whatever the group's protocol type ("consumer", "connect", ...).
const classicGroupType = "classic"

// handleListGroups answers ListGroups (key 16) with the store's group coordinator
// (group.Coordinator.ListGroups, Kafka's GroupMetadataManager.listGroups): every group with
// members or committed offsets, with its protocol type, its state from version 4 (KIP-518) and
// its type from version 5 (KIP-848). The states filter (v4+) is matched without regard to case or
// surrounding spaces, as Kafka matches it; the types filter (v5+) likewise, and only "classic"
// matches, the type of every group here ("consumer" is KIP-848's group type, not a protocol
// type). Error codes: none but NONE; a closed coordinator lists no groups.
func handleListGroups(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, classicGroupType) {
		return reply{msg: resp}, nil
	}
	for _, g := range c.srv.groups.ListGroups() {
		state := g.State.String()
		if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, state) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Group, g.ProtocolType, state, classicGroupType
		resp.Groups = append(resp.Groups, lg)
	}
	return reply{msg: resp}, nil
}

// containsFold reports whether one of list is s, without regard to case or surrounding spaces.
func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(strings.TrimSpace(l), s) {
			return true
		}
	}
	return false
}
