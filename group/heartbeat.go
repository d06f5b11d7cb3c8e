package group

import "fmt"

// HeartbeatRequest is a Heartbeat request (Kafka's HeartbeatRequest).
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID string
	Generation int32
}

// Heartbeat is Kafka's Heartbeat (GroupMetadataManager.classicGroupHeartbeat): it keeps the
// member's session alive. Returns nil in the sync phase and when Stable; ErrRebalanceInProgress
// in the join phase (the session is kept alive all the same: the member must rejoin);
// ErrUnknownMemberID for a member the group does not know or an empty group;
// ErrFencedInstanceID; ErrIllegalGeneration for another generation than the group's.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) error {
	g, err := c.lockGroup(req.Group, false, fmt.Errorf("%w: group %s does not exist", ErrUnknownMemberID, req.Group))
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, req.Generation)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return fmt.Errorf("%w: group %s is empty", ErrUnknownMemberID, g.id)
	case PreparingRebalance:
		c.scheduleSession(g, m, m.sessionTimeout)
		return fmt.Errorf("%w: group %s", ErrRebalanceInProgress, g.id)
	}
	c.scheduleSession(g, m, m.sessionTimeout)
	return nil
}
