package group

import (
	"fmt"
)

// LeavingMember names one member of a LeaveGroup: by member id, or a static member by instance
// id (the member id may then be empty, as the admin client's removeMembersFromConsumerGroup
// sends it; KIP-345).
type LeavingMember struct {
	MemberID   string
	InstanceID string
	Reason     string
}

// Leave is Kafka's LeaveGroup (GroupMetadataManager.classicGroupLeave): each member is removed
// at once, a JoinGroup it has waiting is answered with ErrUnknownMemberID, and the group
// rebalances without waiting for its session timeout. It returns one error per member, nil for
// a member removed: ErrUnknownMemberID for one the group does not know, ErrFencedInstanceID for
// an instance id that another member id holds. The error is ErrUnknownMemberID when the group
// does not exist.
func (c *Coordinator) Leave(group string, members []LeavingMember) ([]error, error) {
	g, err := c.lockGroup(group, false, fmt.Errorf("%w: group %s does not exist", ErrUnknownMemberID, group))
	if err != nil {
		return nil, err
	}
	defer g.mu.Unlock()
	errs := make([]error, len(members))
	for i, lm := range members {
		if lm.InstanceID != "" {
			id, ok := g.static[lm.InstanceID]
			switch {
			case !ok:
				errs[i] = fmt.Errorf("%w: group %s instance %s", ErrUnknownMemberID, g.id, lm.InstanceID)
			case lm.MemberID != "" && lm.MemberID != id:
				errs[i] = fmt.Errorf("%w: group %s instance %s is member %s", ErrFencedInstanceID, g.id, lm.InstanceID, id)
			default:
				c.logger.Info("static member leaves group", "group", g.id, "member", id, "instance", lm.InstanceID, "reason", lm.Reason)
				c.removeLeavingMember(g, g.members[id])
			}
			continue
		}
		if pm, ok := g.pending[lm.MemberID]; ok {
			c.removePending(g, pm)
			continue
		}
		m, ok := g.members[lm.MemberID]
		if !ok {
			errs[i] = fmt.Errorf("%w: group %s member %q", ErrUnknownMemberID, g.id, lm.MemberID)
			continue
		}
		c.logger.Info("member leaves group", "group", g.id, "member", m.id, "reason", lm.Reason)
		c.removeLeavingMember(g, m)
	}
	return errs, nil
}

// removePending drops a pending member (Kafka's LeaveGroup of it); the join phase completes if
// it waited only for it, unless it is an empty group's first (waiting for its initial delay).
func (c *Coordinator) removePending(g *group, pm *member) {
	g.remove(pm)
	if g.state == PreparingRebalance && g.prevState != Empty && g.hasAllMembersJoined() {
		c.completeJoinPhase(g)
	}
}

// removeLeavingMember is removeMemberAndUpdate for a member that leaves, as Kafka's
// classicGroupLeave: in the join phase, the phase completes if every remaining member has
// joined, except in an empty group's first rebalance, which waits for its initial delay (more
// members may still come), as it does when a member joins (rebalanceOrCompleteJoin).
func (c *Coordinator) removeLeavingMember(g *group, m *member) {
	g.completeJoin(m, joinResult{err: fmt.Errorf("%w: group %s member %s left the group", ErrUnknownMemberID, g.id, m.id)})
	g.remove(m)
	c.rebalanceOrCompleteJoin(g, "member "+m.id+" left the group")
}
