package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/commitlog-go/commitlog/group"
)

// The member's background goroutine: Kafka's ConsumerCoordinator with its heartbeat thread. It
// joins, syncs, heartbeats, and hands Next the changes of the member's partitions as events.

// errRejoin says that the member must join again now.
var errRejoin = errors.New("rejoin")

// run joins the group and keeps the member in it until ctx ends (Close).
func (gr *GroupReader) run(ctx context.Context) {
	defer close(gr.bgDone)
	for ctx.Err() == nil {
		err := gr.rebalance(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			if gr.heartbeatUntilRebalance(ctx) != nil {
				return
			}
		case errors.Is(err, errRejoin):
		case isFatalGroupError(err):
			gr.fail(err)
			return
		default:
			gr.s.o.logger.Info("group join failed; trying again", "group", gr.cfg.Group, "err", err)
			if !sleepCtx(ctx, groupRetryBackoff) {
				return
			}
		}
	}
}

// isFatalGroupError reports whether err ends the member: the group cannot take it as
// configured, or another member took its instance id.
func isFatalGroupError(err error) bool {
	for _, e := range []error{ErrFencedInstanceID, ErrInvalidSessionTimeout, ErrInconsistentGroupProtocol,
		ErrGroupMaxSizeReached, ErrInvalidGroupID, group.ErrCoordinatorNotAvailable, ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// fail ends the member with err: its partitions are lost, and Next returns err (ErrClosed when
// the store closed).
func (gr *GroupReader) fail(err error) {
	if errors.Is(err, group.ErrCoordinatorNotAvailable) {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.loseLocked(err.Error())
	gr.err = fmt.Errorf("commitlog: group %s: %w", gr.cfg.Group, err)
	close(gr.wake)
	gr.wake = make(chan struct{})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// subscription returns the topics the member subscribes to now: cfg.Topics, or the store's
// topics TopicPattern matches.
func (gr *GroupReader) subscription() []string {
	if gr.cfg.TopicPattern == nil {
		return slices.Sorted(slices.Values(gr.cfg.Topics))
	}
	var out []string
	for _, t := range gr.s.Topics() {
		if gr.cfg.TopicPattern.MatchString(t) {
			out = append(out, t)
		}
	}
	return out
}

// rebalance takes the member through one JoinGroup and SyncGroup and hands Next the resulting
// change of its partitions. Under the eager protocol every partition is revoked first; under the
// cooperative one the member joins with the partitions it owns and keeps reading them, and
// when the new assignment takes some away it revokes them and returns errRejoin, for the
// follow-up rebalance that gives them to their new owner (KIP-429).
func (gr *GroupReader) rebalance(ctx context.Context) error {
	if gr.eager {
		gr.mu.Lock()
		owned := slices.SortedFunc(maps.Keys(gr.assigned), compareTP)
		var ack chan struct{}
		if len(owned) > 0 {
			ack = make(chan struct{})
			clear(gr.assigned)
			gr.postLocked(groupEvent{kind: eventRevoked, parts: owned, ack: ack})
		}
		gr.mu.Unlock()
		if ack != nil {
			if err := gr.awaitAck(ctx, ack); err != nil {
				return err
			}
		}
	}
	topics := gr.subscription()
	gr.mu.Lock()
	sub := group.Subscription{Topics: topics, Generation: gr.generation}
	for _, tp := range slices.SortedFunc(maps.Keys(gr.assigned), compareTP) {
		if n := len(sub.Owned); n > 0 && sub.Owned[n-1].Topic == tp.Topic {
			sub.Owned[n-1].Partitions = append(sub.Owned[n-1].Partitions, tp.Partition)
		} else {
			sub.Owned = append(sub.Owned, group.TopicPartitions{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
	}
	memberID := gr.memberID
	gr.subscribed = topics
	gr.mu.Unlock()
	protocols := make([]group.Protocol, 0, len(gr.cfg.Assignors))
	for _, a := range gr.cfg.Assignors {
		s := sub
		if a.Protocol() == group.Cooperative {
			// Kafka's CooperativeStickyAssignor sends its generation in the user data too.
			s.UserData = group.GenerationUserData(sub.Generation)
		}
		protocols = append(protocols, group.Protocol{Name: a.Name(), Metadata: group.EncodeSubscription(s)})
	}
	req := group.JoinRequest{Group: gr.cfg.Group, MemberID: memberID, InstanceID: gr.cfg.InstanceID, ClientID: gr.cfg.ClientID,
		SessionTimeout: gr.cfg.SessionTimeout, RebalanceTimeout: gr.cfg.MaxPollInterval, ProtocolType: group.ConsumerProtocolType,
		Protocols: protocols, RequireKnownMemberID: true}
	resp, err := gr.coord.Join(ctx, req)
	if errors.Is(err, group.ErrMemberIDRequired) {
		gr.mu.Lock()
		gr.memberID = resp.MemberID
		gr.mu.Unlock()
		req.MemberID = resp.MemberID
		resp, err = gr.coord.Join(ctx, req)
	}
	if err != nil {
		return gr.joinFailed(err)
	}
	gr.mu.Lock()
	gr.memberID, gr.generation, gr.protocol = resp.MemberID, resp.Generation, resp.Protocol
	gr.mu.Unlock()
	var assignments map[string][]byte
	if resp.Leader == resp.MemberID {
		if resp.SkipAssignment {
			// A static leader that restarted into a Stable group (KIP-814): the group keeps
			// its assignment; the leader watches the topics of the members' subscriptions
			// from now on, as it would have after assigning.
			gr.watchMetadata(gr.decodeSubscriptions(resp.Members))
		} else if assignments, err = gr.assign(resp); err != nil {
			return err
		}
	}
	sresp, err := gr.coord.Sync(ctx, group.SyncRequest{Group: gr.cfg.Group, MemberID: resp.MemberID, InstanceID: gr.cfg.InstanceID,
		Generation: resp.Generation, ProtocolType: resp.ProtocolType, Protocol: resp.Protocol, Assignments: assignments})
	if err != nil {
		return gr.joinFailed(err)
	}
	assignment, err := group.DecodeAssignment(sresp.Assignment)
	if err != nil {
		// A leader (another client) sent bytes that are not an assignment: join again.
		gr.s.o.logger.Warn("group assignment does not decode", "group", gr.cfg.Group, "err", err)
		return errRejoin
	}
	return gr.apply(ctx, resp.Generation, flattenAssignment(assignment))
}

// joinFailed handles an error of JoinGroup or SyncGroup: a member the group no longer knows
// loses its partitions and joins anew; a rebalance that began meanwhile is joined again.
func (gr *GroupReader) joinFailed(err error) error {
	switch {
	case errors.Is(err, ErrUnknownMemberID):
		gr.mu.Lock()
		gr.loseLocked("unknown member id: " + err.Error())
		gr.memberID = ""
		gr.mu.Unlock()
		return errRejoin
	case errors.Is(err, ErrIllegalGeneration):
		gr.mu.Lock()
		gr.loseLocked("illegal generation: " + err.Error())
		gr.mu.Unlock()
		return errRejoin
	case errors.Is(err, ErrRebalanceInProgress):
		return errRejoin
	}
	return err
}

// apply hands Next the member's new assignment of generation: the partitions it no longer has
// are revoked (cooperative protocol: then another rebalance follows), the new ones assigned.
func (gr *GroupReader) apply(ctx context.Context, generation int32, assignment []TopicPartition) error {
	gr.mu.Lock()
	next := map[TopicPartition]struct{}{}
	for _, tp := range assignment {
		next[tp] = struct{}{}
	}
	var revoked, added []TopicPartition
	for tp := range gr.assigned {
		if _, ok := next[tp]; !ok {
			revoked = append(revoked, tp)
		}
	}
	for _, tp := range assignment {
		if _, ok := gr.assigned[tp]; !ok {
			added = append(added, tp)
		}
	}
	slices.SortFunc(revoked, compareTP)
	gr.assigned = next
	var ack chan struct{}
	if len(revoked) > 0 {
		ack = make(chan struct{})
		gr.postLocked(groupEvent{kind: eventRevoked, parts: revoked, ack: ack})
	}
	if len(added) > 0 {
		gr.postLocked(groupEvent{kind: eventAssigned, parts: added})
	}
	gr.s.o.logger.Info("group member assigned", "group", gr.cfg.Group, "member", gr.memberID, "generation", generation,
		"partitions", len(assignment), "added", len(added), "revoked", len(revoked))
	gr.mu.Unlock()
	if ack == nil {
		return nil
	}
	if err := gr.awaitAck(ctx, ack); err != nil {
		return err
	}
	return errRejoin
}

// assign computes the group's assignment as its leader, with the assignor the group chose, from
// the members' subscriptions and the store's partition counts, and remembers those counts: a
// change of them (a topic created, deleted or given partitions) makes the leader rejoin.
func (gr *GroupReader) assign(resp group.JoinResponse) (map[string][]byte, error) {
	a := gr.assignors[resp.Protocol]
	if a == nil {
		return nil, fmt.Errorf("%w: the group chose assignor %q, which this member does not have", ErrInconsistentGroupProtocol, resp.Protocol)
	}
	subs := gr.decodeSubscriptions(resp.Members)
	counts := gr.watchMetadata(subs)
	out := make(map[string][]byte, len(subs))
	for id, parts := range a.Assign(counts, subs) {
		out[id] = group.EncodeAssignment(parts, nil)
	}
	return out, nil
}

// decodeSubscriptions decodes the members' subscriptions of a leader's JoinGroup response. A
// member whose metadata does not decode subscribes to nothing: Kafka's leader fails the
// rebalance, here the member gets no partitions rather than stalling the group.
func (gr *GroupReader) decodeSubscriptions(members []group.JoinMember) []group.Subscription {
	subs := make([]group.Subscription, 0, len(members))
	for _, m := range members {
		s, err := group.DecodeSubscription(m.MemberID, m.InstanceID, m.Metadata)
		if err != nil {
			gr.s.o.logger.Warn("group member's subscription does not decode", "group", gr.cfg.Group, "member", m.MemberID, "err", err)
			s = group.Subscription{MemberID: m.MemberID, InstanceID: m.InstanceID, Generation: -1}
		}
		subs = append(subs, s)
	}
	return subs
}

// watchMetadata returns the partition counts of the topics of subs and remembers them: a change
// of them makes the leader rejoin (metadataChanged). A subscribed topic the store does not hold
// is remembered with 0 partitions, so that its creation makes the leader rejoin and assign it.
func (gr *GroupReader) watchMetadata(subs []group.Subscription) map[string]int32 {
	counts := gr.partitionCounts(subs)
	watched := maps.Clone(counts)
	for _, s := range subs {
		for _, t := range s.Topics {
			if _, ok := watched[t]; !ok {
				watched[t] = 0
			}
		}
	}
	gr.mu.Lock()
	gr.metadata = watched
	gr.mu.Unlock()
	return counts
}

// partitionCounts returns the partition count of every topic of subs that the store holds.
func (gr *GroupReader) partitionCounts(subs []group.Subscription) map[string]int32 {
	counts := map[string]int32{}
	for _, s := range subs {
		for _, t := range s.Topics {
			if _, ok := counts[t]; ok {
				continue
			}
			if tp, err := gr.s.Topic(t); err == nil {
				counts[t] = tp.PartitionCount()
			}
		}
	}
	return counts
}

// metadataChanged reports whether the member must rejoin for a change of the store's topics: a
// pattern subscription matches other topics, or, for the leader, a topic it assigned changed
// its partition count, went away, or (subscribed to before it existed) was created.
func (gr *GroupReader) metadataChanged() bool {
	topics := gr.subscription()
	gr.mu.Lock()
	subscribed, metadata := gr.subscribed, gr.metadata
	gr.mu.Unlock()
	if !slices.Equal(topics, subscribed) {
		return true
	}
	for t, n := range metadata {
		var now int32
		if tp, err := gr.s.Topic(t); err == nil {
			now = tp.PartitionCount()
		}
		if now != n {
			return true
		}
	}
	return false
}

// awaitAck waits until Next has revoked partitions (ack closed), heartbeating meanwhile so that
// the member's session stays alive; ErrUnknownMemberID or ErrIllegalGeneration from a heartbeat
// means the group went on without the member: its partitions are lost.
func (gr *GroupReader) awaitAck(ctx context.Context, ack chan struct{}) error {
	t := time.NewTicker(gr.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ack:
			return nil
		case <-t.C:
			if err := gr.heartbeat(); err != nil && !errors.Is(err, ErrRebalanceInProgress) {
				return gr.joinFailed(err)
			}
		}
	}
}

// heartbeat sends one heartbeat of the member's generation.
func (gr *GroupReader) heartbeat() error {
	gr.mu.Lock()
	req := group.HeartbeatRequest{Group: gr.cfg.Group, MemberID: gr.memberID, InstanceID: gr.cfg.InstanceID, Generation: gr.generation}
	gr.mu.Unlock()
	return gr.coord.Heartbeat(req)
}

// heartbeatUntilRebalance heartbeats every HeartbeatInterval (and when nudged) until the member
// must rejoin: a rebalance began, the member was removed or left behind (its partitions lost),
// the topics changed, or the program did not call Next within MaxPollInterval (the member
// leaves, and waits for the next Next). It returns an error only when the member ends.
func (gr *GroupReader) heartbeatUntilRebalance(ctx context.Context) error {
	t := time.NewTicker(gr.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-gr.nudge:
		}
		if resumed := gr.checkPollInterval(); resumed != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-resumed:
				return nil
			}
		}
		if gr.takeRejoin() || gr.metadataChanged() {
			return nil
		}
		err := gr.heartbeat()
		switch {
		case err == nil:
			continue
		case errors.Is(err, ErrRebalanceInProgress):
			return nil
		case isFatalGroupError(err):
			gr.fail(err)
			return err
		}
		if gr.joinFailed(err) != nil {
			return nil
		}
	}
}

// checkPollInterval makes the member leave the group when the program has not called Next for
// MaxPollInterval, as Kafka's heartbeat thread does ("consumer poll timeout has expired"): its
// partitions are lost, and the returned channel is closed by the next call of Next. A static
// member does not leave: it stops heartbeating, and its session timeout decides. nil when the
// member polls in time.
func (gr *GroupReader) checkPollInterval() chan struct{} {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if gr.inNext || time.Since(gr.lastPoll) < gr.cfg.MaxPollInterval {
		return nil
	}
	id := gr.memberID
	gr.s.o.logger.Warn("group member leaves: Next was not called within MaxPollInterval", "group", gr.cfg.Group,
		"member", id, "max_poll_interval", gr.cfg.MaxPollInterval)
	gr.loseLocked("max poll interval exceeded")
	if gr.cfg.InstanceID == "" && id != "" {
		gr.coord.Leave(gr.cfg.Group, []group.LeavingMember{{MemberID: id, Reason: "consumer poll timeout has expired"}})
		gr.memberID = ""
	}
	gr.pollExpired = true
	gr.resumed = make(chan struct{})
	return gr.resumed
}

// takeRejoin reports, and clears, a rejoin Next asked for.
func (gr *GroupReader) takeRejoin() bool {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	r := gr.rejoin
	gr.rejoin = false
	return r
}
