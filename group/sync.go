package group

import (
	"context"
	"fmt"
)

// SyncRequest is a SyncGroup request (Kafka's SyncGroupRequest).
type SyncRequest struct {
	Group      string
	MemberID   string
	InstanceID string
	Generation int32
	// ProtocolType and Protocol, when not empty, must be the group's (SyncGroup version 5).
	ProtocolType string
	Protocol     string
	// Assignments is the leader's assignment of every member; other members send none. A member
	// the leader leaves out gets an empty assignment.
	Assignments map[string][]byte
}

// SyncResponse is a SyncGroup response: the member's assignment.
type SyncResponse struct {
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

type syncResult struct {
	resp SyncResponse
	err  error
}

// Sync is Kafka's SyncGroup (GroupMetadataManager.classicGroupSync). In the sync phase it blocks
// until the leader's assignment arrives and is stored; the group is then Stable. It returns,
// besides ctx's error: ErrUnknownMemberID for a member the group does not know (or an empty
// group), ErrFencedInstanceID, ErrIllegalGeneration for another generation than the group's,
// ErrInconsistentGroupProtocol for another protocol, ErrRebalanceInProgress in the join phase or
// when a new rebalance starts while it waits, ErrCoordinatorNotAvailable when the assignment
// could not be stored.
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) (SyncResponse, error) {
	g, err := c.lockGroup(req.Group, false, fmt.Errorf("%w: group %s does not exist", ErrUnknownMemberID, req.Group))
	if err != nil {
		return SyncResponse{}, err
	}
	ch, resp, err := c.sync(ctx, g, req)
	g.mu.Unlock()
	if ch == nil {
		return resp, err
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		return SyncResponse{}, ctx.Err()
	}
}

func (c *Coordinator) sync(ctx context.Context, g *group, req SyncRequest) (chan syncResult, SyncResponse, error) {
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return nil, SyncResponse{}, err
	}
	if req.Generation != g.generation {
		return nil, SyncResponse{}, fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, req.Generation)
	}
	if (req.ProtocolType != "" && req.ProtocolType != g.protocolType) || (req.Protocol != "" && req.Protocol != g.protocol) {
		return nil, SyncResponse{}, fmt.Errorf("%w: group %s uses %s/%s", ErrInconsistentGroupProtocol, g.id, g.protocolType, g.protocol)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return nil, SyncResponse{}, fmt.Errorf("%w: group %s is empty", ErrUnknownMemberID, g.id)
	case PreparingRebalance:
		return nil, SyncResponse{}, fmt.Errorf("%w: group %s", ErrRebalanceInProgress, g.id)
	case Stable:
		delete(g.pendingSync, m.id)
		c.scheduleSession(g, m, m.sessionTimeout)
		return nil, SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}, nil
	}
	// CompletingRebalance.
	ch := make(chan syncResult, 1)
	if m.syncCh != nil {
		m.syncCh <- syncResult{err: fmt.Errorf("%w: group %s member %s synced again", ErrRebalanceInProgress, g.id, m.id)}
	}
	m.syncCh = ch
	delete(g.pendingSync, m.id)
	if m.id != g.leader {
		return ch, SyncResponse{}, nil
	}
	for id, mm := range g.members {
		mm.assignment = req.Assignments[id]
	}
	if err := c.storeGroup(g); err != nil {
		c.logger.Error("group assignment not stored; rebalancing", "group", g.id, "generation", g.generation, "err", err)
		c.resetAssignments(g, fmt.Errorf("%w: group %s: %w", ErrCoordinatorNotAvailable, g.id, err))
		c.prepareRebalance(g, "the assignment could not be stored")
		return ch, SyncResponse{}, nil
	}
	// Kafka's setAndPropagateAssignment: each waiting member gets its assignment, and its
	// session timer starts over (its expiry was ignored while it waited).
	for _, mm := range g.members {
		if mm.syncCh != nil {
			mm.syncCh <- syncResult{resp: SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: mm.assignment}}
			mm.syncCh = nil
			c.scheduleSession(g, mm, mm.sessionTimeout)
		}
	}
	g.transition(Stable, c.clock.Now())
	c.logger.Info("group stable", "group", g.id, "generation", g.generation, "members", len(g.members))
	return ch, SyncResponse{}, nil
}
