package group

import (
	"context"
	"fmt"
	"time"
)

// JoinRequest is a JoinGroup request (Kafka's JoinGroupRequest, version 5 and later fields).
type JoinRequest struct {
	// Group is the group id (group.id).
	Group string
	// MemberID is the member's id; "" for a member joining for the first time.
	MemberID string
	// InstanceID is the group.instance.id of a static member (KIP-345); "" for a dynamic one.
	InstanceID string
	// ClientID and ClientHost describe the member (DescribeGroups shows them); the client id
	// prefixes the member ids handed out.
	ClientID   string
	ClientHost string
	// SessionTimeout is session.timeout.ms: the member is removed when no heartbeat comes for
	// this long outside a rebalance. It must lie within the coordinator's bounds.
	SessionTimeout time.Duration
	// RebalanceTimeout is the longest the coordinator waits for the member to rejoin once a
	// rebalance starts: the consumer's max.poll.interval.ms. Zero means SessionTimeout (JoinGroup
	// version 0).
	RebalanceTimeout time.Duration
	// ProtocolType is the kind of group: ConsumerProtocolType for consumers.
	ProtocolType string
	// Protocols are the protocols (assignor names with metadata) the member supports, most
	// preferred first.
	Protocols []Protocol
	// RequireKnownMemberID asks, for a new dynamic member, the two-step join of KIP-394
	// (JoinGroup version 4 and later): the first JoinGroup returns ErrMemberIDRequired with the
	// member id, and the member joins again with it.
	RequireKnownMemberID bool
	// Reason says why the member joins (KIP-800), for the log.
	Reason string
}

// JoinMember is one member in the leader's JoinGroup response.
type JoinMember struct {
	MemberID   string
	InstanceID string
	// Metadata is the member's metadata of the chosen protocol.
	Metadata []byte
}

// JoinResponse is a JoinGroup response.
type JoinResponse struct {
	// MemberID is the member's id: the one given, or the one the coordinator made.
	MemberID string
	// Generation is the group's new generation id.
	Generation int32
	// ProtocolType and Protocol are the group's protocol type and chosen protocol.
	ProtocolType string
	Protocol     string
	// Leader is the leader's member id.
	Leader string
	// Members lists every member with its metadata, for the leader only (nil for the others):
	// the leader computes the assignment from it.
	Members []JoinMember
	// SkipAssignment tells a static leader that rejoined without a rebalance to send SyncGroup
	// without computing an assignment (KIP-814): the group keeps the assignment it has.
	SkipAssignment bool
}

type joinResult struct {
	resp JoinResponse
	err  error
}

// Join is Kafka's JoinGroup (GroupMetadataManager.classicGroupJoin). It blocks until the join
// phase completes: every known member has rejoined or the rebalance timeout passed (a join
// during the phase does not restart it; only group.initial.rebalance.delay.ms delays an empty
// group's first rebalance). It returns, besides ctx's error when ctx ends first (the member is
// then still waiting in the join, as a client whose request timed out):
//   - ErrInvalidGroupID, ErrInvalidSessionTimeout, ErrInconsistentGroupProtocol,
//     ErrGroupMaxSizeReached for a request the group cannot take;
//   - ErrMemberIDRequired, with resp.MemberID set, for a new dynamic member with
//     RequireKnownMemberID;
//   - ErrUnknownMemberID for a member id the group does not know, and for a member removed
//     while it waits (it left, was fenced or timed out): the waiting join is answered at once;
//   - ErrFencedInstanceID for a static member whose instance id another member took;
//   - ErrRebalanceInProgress is never returned by Join.
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) (JoinResponse, error) {
	if err := c.CheckGroupID(req.Group); err != nil {
		return JoinResponse{}, err
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return JoinResponse{}, fmt.Errorf("%w: %v not within [%v, %v]", ErrInvalidSessionTimeout,
			req.SessionTimeout, c.cfg.MinSessionTimeout, c.cfg.MaxSessionTimeout)
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout
	}
	g, err := c.lockGroup(req.Group, req.MemberID == "", fmt.Errorf("%w: group %s does not exist", ErrUnknownMemberID, req.Group))
	if err != nil {
		return JoinResponse{}, err
	}
	ch, resp, err := c.join(g, req)
	g.mu.Unlock()
	if ch == nil {
		return resp, err
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		return JoinResponse{}, ctx.Err()
	}
}

// join runs a JoinGroup under g.mu: a channel to wait on, or the answer.
func (c *Coordinator) join(g *group, req JoinRequest) (chan joinResult, JoinResponse, error) {
	_, known := g.members[req.MemberID]
	_, pending := g.pending[req.MemberID]
	newMember := req.MemberID == "" || pending
	// Kafka's acceptJoiningMember counts, in the join phase, the members that have rejoined, so
	// that new members may take the places of members yet to rejoin (which are then refused);
	// here the members have them, and a new member is refused while the group holds MaxSize.
	if c.cfg.MaxSize > 0 && newMember && !known && len(g.members) >= c.cfg.MaxSize &&
		!(req.InstanceID != "" && g.static[req.InstanceID] != "") {
		if pending {
			// Kafka drops it, so that the join phase does not wait for it.
			c.removePending(g, g.pending[req.MemberID])
		}
		return nil, JoinResponse{}, fmt.Errorf("%w: group %s has %d members", ErrGroupMaxSizeReached, g.id, len(g.members))
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return nil, JoinResponse{}, fmt.Errorf("%w: group %s: protocol type %q", ErrInconsistentGroupProtocol, g.id, req.ProtocolType)
	}
	if req.MemberID == "" {
		return c.joinUnknownMember(g, req)
	}
	return c.joinExistingMember(g, req)
}

// joinUnknownMember is Kafka's classicGroupJoinNewMember and its static counterpart.
func (c *Coordinator) joinUnknownMember(g *group, req JoinRequest) (chan joinResult, JoinResponse, error) {
	if req.InstanceID != "" {
		if old, ok := g.static[req.InstanceID]; ok {
			return c.replaceStaticMember(g, g.members[old], req)
		}
		m := c.newMember(req, newMemberID(req.InstanceID))
		return c.addMemberAndRebalance(g, m, req.Reason)
	}
	prefix := req.ClientID
	id := newMemberID(prefix)
	if req.RequireKnownMemberID {
		m := c.newMember(req, id)
		g.pending[id] = m
		c.scheduleSession(g, m, req.SessionTimeout)
		return nil, JoinResponse{MemberID: id}, fmt.Errorf("%w: group %s: member %s", ErrMemberIDRequired, g.id, id)
	}
	return c.addMemberAndRebalance(g, c.newMember(req, id), req.Reason)
}

func (c *Coordinator) newMember(req JoinRequest, id string) *member {
	return &member{id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		sessionTimeout: req.SessionTimeout, rebalanceTimeout: req.RebalanceTimeout, protocolType: req.ProtocolType,
		protocols: req.Protocols, isNew: true}
}

// addMemberAndRebalance is Kafka's addMemberThenRebalanceOrCompleteJoin: the new member waits
// in the join, under the new-member join timeout rather than its session timeout (it cannot
// heartbeat yet).
func (c *Coordinator) addMemberAndRebalance(g *group, m *member, reason string) (chan joinResult, JoinResponse, error) {
	ch := make(chan joinResult, 1)
	m.joinCh = ch
	delete(g.pending, m.id)
	g.add(m)
	if g.state == PreparingRebalance && g.prevState == Empty {
		g.newMemberAdded = true
	}
	c.scheduleSession(g, m, c.cfg.NewMemberJoinTimeout)
	c.logger.Info("member joins group", "group", g.id, "member", m.id, "instance", m.instanceID, "reason", reason)
	c.rebalanceOrCompleteJoin(g, "adding member "+m.id)
	return ch, JoinResponse{}, nil
}

// rebalanceOrCompleteJoin starts a rebalance from Empty, CompletingRebalance or Stable, or, in
// the join phase, completes it if every member is in (Kafka's maybePrepareRebalanceOrCompleteJoin;
// a rebalance that started from Empty waits for its initial delay instead).
func (c *Coordinator) rebalanceOrCompleteJoin(g *group, reason string) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		c.prepareRebalance(g, reason)
	case PreparingRebalance:
		if g.hasAllMembersJoined() && g.prevState != Empty {
			c.completeJoinPhase(g)
		}
	}
}

// joinExistingMember is Kafka's classicGroupJoinExistingMember.
func (c *Coordinator) joinExistingMember(g *group, req JoinRequest) (chan joinResult, JoinResponse, error) {
	if pm, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != "" {
			// Pending ids are handed to dynamic members only.
			return nil, JoinResponse{}, fmt.Errorf("%w: group %s member %s", ErrUnknownMemberID, g.id, req.MemberID)
		}
		m := c.newMember(req, pm.id)
		if pm.timer != nil {
			pm.timer.Stop()
		}
		return c.addMemberAndRebalance(g, m, req.Reason)
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return nil, JoinResponse{}, err
	}
	m := g.members[req.MemberID]
	if m.instanceID != req.InstanceID {
		// A static member joining by member id without its instance id (a dynamic member
		// naming an instance id failed validateMember). Kafka's validateMember lets it join;
		// here it is fenced.
		return nil, JoinResponse{}, fmt.Errorf("%w: group %s member %s", ErrFencedInstanceID, g.id, req.MemberID)
	}
	switch g.state {
	case PreparingRebalance:
		return c.updateMemberAndRebalance(g, m, req)
	case CompletingRebalance:
		if m.matchesProtocols(req.Protocols) {
			// The member's join response was lost: send the generation again.
			return nil, c.currentJoinResponse(g, m, false), nil
		}
		return c.updateMemberAndRebalance(g, m, req)
	case Stable:
		if m.id == g.leader || !m.matchesProtocols(req.Protocols) {
			// The leader rejoins to have the assignment computed again (its subscription or the
			// topics changed); another member, when its protocols changed.
			return c.updateMemberAndRebalance(g, m, req)
		}
		return nil, c.currentJoinResponse(g, m, false), nil
	}
	return nil, JoinResponse{}, fmt.Errorf("%w: group %s is %s", ErrUnknownMemberID, g.id, g.state)
}

// currentJoinResponse is the join response of the current generation for m.
func (c *Coordinator) currentJoinResponse(g *group, m *member, skipAssignment bool) JoinResponse {
	r := JoinResponse{MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
		Leader: g.leader, SkipAssignment: skipAssignment}
	if m.id == g.leader {
		r.Members = g.memberSummaries()
	}
	return r
}

// updateMemberAndRebalance is Kafka's updateMemberThenRebalanceOrCompleteJoin: m's protocols and
// timeouts are updated and it waits in the join.
func (c *Coordinator) updateMemberAndRebalance(g *group, m *member, req JoinRequest) (chan joinResult, JoinResponse, error) {
	ch := make(chan joinResult, 1)
	if m.joinCh != nil {
		// A second JoinGroup while the first waits: the first is answered as a retry would be
		// (Kafka replaces the callback; the old request's client has given up on it).
		m.joinCh <- joinResult{err: fmt.Errorf("%w: group %s member %s joined again", ErrUnknownMemberID, g.id, m.id)}
		g.awaitingJoin--
	}
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = req.Protocols, req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.joinCh = ch
	g.awaitingJoin++
	c.rebalanceOrCompleteJoin(g, "member "+m.id+" rejoins: "+req.Reason)
	return ch, JoinResponse{}, nil
}

// replaceStaticMember is Kafka's classicGroupJoinExistingStaticMember: a static member that
// joins again with no member id (it restarted) takes over its instance id under a new member id;
// the old member id is fenced (its waiting requests get ErrFencedInstanceID). In a Stable group
// whose protocols it still matches, it gets the current generation and its assignment back
// without a rebalance (KIP-345); a rejoining leader is told to skip the assignment (KIP-814).
// Kafka rebalances only when the protocol the group would select changes; here a change of the
// member's metadata of the group's protocol (its subscription) rebalances too, so that the
// leader assigns what the member now subscribes to.
func (c *Coordinator) replaceStaticMember(g *group, old *member, req JoinRequest) (chan joinResult, JoinResponse, error) {
	newID := newMemberID(req.InstanceID)
	fenced := fmt.Errorf("%w: group %s instance %s rejoined as %s", ErrFencedInstanceID, g.id, req.InstanceID, newID)
	g.completeJoin(old, joinResult{err: fenced})
	if old.syncCh != nil {
		old.syncCh <- syncResult{err: fenced}
		old.syncCh = nil
	}
	if old.timer != nil {
		old.timer.Stop()
	}
	m := &member{id: newID, instanceID: old.instanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		sessionTimeout: req.SessionTimeout, rebalanceTimeout: req.RebalanceTimeout, protocolType: req.ProtocolType,
		protocols: req.Protocols, assignment: old.assignment}
	delete(g.members, old.id)
	delete(g.pendingSync, old.id)
	g.members[newID] = m
	g.static[m.instanceID] = newID
	if g.leader == old.id {
		g.leader = newID
	}
	c.logger.Info("static member rejoins under a new member id", "group", g.id, "instance", m.instanceID, "old", old.id, "new", newID)
	switch g.state {
	case Stable:
		// Kafka rebalances only when the member's protocols would change the group's chosen
		// protocol; its subscription, owned partitions and generation inside the metadata do
		// not matter (KIP-345: a restarted static member keeps its assignment).
		if req.ProtocolType != g.protocolType || g.selectProtocol() != g.protocol {
			return c.updateMemberAndRebalance(g, m, req)
		}
		if err := c.storeGroup(g); err != nil {
			// Undo: the old member id stays the instance's.
			delete(g.members, newID)
			g.members[old.id] = old
			g.static[m.instanceID] = old.id
			if g.leader == newID {
				g.leader = old.id
			}
			c.scheduleSession(g, old, old.sessionTimeout)
			return nil, JoinResponse{}, fmt.Errorf("%w: group %s: %w", ErrCoordinatorNotAvailable, g.id, err)
		}
		c.scheduleSession(g, m, m.sessionTimeout)
		return nil, c.currentJoinResponse(g, m, m.id == g.leader), nil
	case CompletingRebalance:
		// The leader may already hold the old member id in its assignment: rebalance again.
		return c.updateMemberAndRebalance(g, m, req)
	default: // PreparingRebalance
		c.scheduleSession(g, m, m.sessionTimeout)
		return c.updateMemberAndRebalance(g, m, req)
	}
}
