package group

import (
	"context"
	"fmt"
	"maps"
)

// CommitRequest is an OffsetCommit request (Kafka's OffsetCommitRequest).
type CommitRequest struct {
	Group string
	// MemberID, InstanceID and Generation identify the committing member of the current
	// generation. Generation -1 with an empty MemberID commits from outside the group's
	// membership (a consumer that assigns its partitions itself, or an admin), which Kafka
	// accepts only while the group is Empty.
	MemberID   string
	InstanceID string
	Generation int32
	// Offsets are the positions to commit; their CommitTime is set by the coordinator.
	Offsets map[TopicPartition]OffsetAndMetadata
}

// CommitOffsets is Kafka's OffsetCommit (GroupMetadataManager.commitOffset with
// ClassicGroup.validateOffsetCommit): the offsets are stored, then become the group's. It is
// refused, nothing stored, with ErrIllegalGeneration when the member's generation is not the
// group's (so a member left behind by a rebalance, a zombie, cannot move the group's positions)
// or the group does not exist and Generation >= 0; ErrRebalanceInProgress in the sync phase
// (the member must finish the rebalance first: its partitions may be about to move);
// ErrUnknownMemberID for a member the group does not know, or a commit with no member id to a
// group with members; ErrFencedInstanceID; ErrCoordinatorNotAvailable when the storage fails.
// In the join phase a member of the current generation may commit (it is finishing its
// partitions before it rejoins).
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) error {
	if err := c.CheckGroupID(req.Group); err != nil {
		return err
	}
	g, err := c.lockGroup(req.Group, req.Generation < 0,
		fmt.Errorf("%w: group %s does not exist, and generation %d is not -1", ErrIllegalGeneration, req.Group, req.Generation))
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := c.validateOffsetCommit(g, req); err != nil {
		return err
	}
	now := c.clock.Now()
	offsets := make(map[TopicPartition]OffsetAndMetadata, len(req.Offsets))
	for tp, o := range req.Offsets {
		o.CommitTime = now
		offsets[tp] = o
	}
	if c.cfg.Storage != nil {
		recs := make([]StorageRecord, 0, len(offsets))
		for _, tp := range sortedPartitions(offsets) {
			recs = append(recs, StorageRecord{Key: offsetKey(g.id, tp), Value: offsetValue(offsets[tp])})
		}
		if err := c.cfg.Storage.Append(ctx, recs); err != nil {
			return fmt.Errorf("%w: group %s: commit not stored: %w", ErrCoordinatorNotAvailable, g.id, err)
		}
	}
	seq := c.seq.Add(1)
	for tp, o := range offsets {
		g.offsets[tp], g.offsetSeq[tp] = o, seq
	}
	return nil
}

func (c *Coordinator) validateOffsetCommit(g *group, req CommitRequest) error {
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.generation {
			return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, req.Generation)
		}
	} else if g.state != Empty {
		return fmt.Errorf("%w: group %s has members; a commit needs a member id and generation", ErrUnknownMemberID, g.id)
	}
	if g.state == CompletingRebalance {
		return fmt.Errorf("%w: group %s", ErrRebalanceInProgress, g.id)
	}
	return nil
}

// FetchOffsets is Kafka's OffsetFetch: the group's committed offsets of the partitions given,
// or of every partition it has one for when partitions is nil. A partition without one is left
// out of the map (Kafka's response says offset -1 with no error); a group that does not exist
// has none (not an error, as Kafka's OffsetMetadataManager.fetchOffsets answers).
func (c *Coordinator) FetchOffsets(group string, partitions []TopicPartition) (map[TopicPartition]OffsetAndMetadata, error) {
	g, err := c.lockGroup(group, false, nil)
	if err != nil {
		return nil, err
	}
	out := map[TopicPartition]OffsetAndMetadata{}
	if g == nil {
		return out, nil
	}
	defer g.mu.Unlock()
	if partitions == nil {
		maps.Copy(out, g.offsets)
		return out, nil
	}
	for _, tp := range partitions {
		if o, ok := g.offsets[tp]; ok {
			out[tp] = o
		}
	}
	return out, nil
}

// DeleteOffsets is Kafka's OffsetDelete: the group's committed offsets of the partitions are
// removed (tombstones stored first), with the offsets open transactions committed there, which
// their commit then no longer brings back. It returns a per-partition error: ErrGroupSubscribedToTopic
// for a partition of a topic the group's members subscribe to (a consumer group that is not
// Empty). The error is ErrGroupIDNotFound when the group does not exist.
func (c *Coordinator) DeleteOffsets(ctx context.Context, group string, partitions []TopicPartition) (map[TopicPartition]error, error) {
	g, err := c.lockGroup(group, false, fmt.Errorf("%w: %s", ErrGroupIDNotFound, group))
	if err != nil {
		return nil, err
	}
	defer g.mu.Unlock()
	subscribed := g.subscribedTopics()
	errs := map[TopicPartition]error{}
	var del []TopicPartition
	for _, tp := range partitions {
		if _, ok := subscribed[tp.Topic]; ok {
			errs[tp] = fmt.Errorf("%w: group %s topic %s", ErrGroupSubscribedToTopic, g.id, tp.Topic)
			continue
		}
		errs[tp] = nil
		if g.hasOffset(tp) {
			del = append(del, tp)
		}
	}
	if c.cfg.Storage != nil && len(del) > 0 {
		if err := c.cfg.Storage.Append(ctx, offsetTombstones(g.id, del)); err != nil {
			return nil, fmt.Errorf("%w: group %s: delete not stored: %w", ErrCoordinatorNotAvailable, g.id, err)
		}
	}
	for _, tp := range del {
		g.removeOffset(tp)
	}
	return errs, nil
}

// subscribedTopics returns the topics a consumer group's members subscribe to (Kafka's
// ClassicGroup.computeSubscribedTopics): none for an Empty group; for a group of another
// protocol type, or a member whose metadata does not decode, every topic the group has
// offsets for (Kafka's "unknown subscription": everything counts as subscribed; Kafka refuses
// the OffsetDelete of a group of another protocol type that has members whole, with
// NON_EMPTY_GROUP, where here each partition with an offset gets ErrGroupSubscribedToTopic).
func (g *group) subscribedTopics() map[string]struct{} {
	out := map[string]struct{}{}
	if g.state == Empty || len(g.members) == 0 {
		return out
	}
	all := func() map[string]struct{} {
		for tp := range g.offsets {
			out[tp.Topic] = struct{}{}
		}
		return out
	}
	if g.protocolType != ConsumerProtocolType || g.protocol == "" {
		return all()
	}
	for _, m := range g.members {
		s, err := DecodeSubscription(m.id, m.instanceID, m.metadataFor(g.protocol))
		if err != nil {
			return all()
		}
		for _, t := range s.Topics {
			out[t] = struct{}{}
		}
	}
	return out
}

// DeleteTopicOffsets removes every group's committed offsets of topic (tombstones stored first),
// and those open transactions hold, as Kafka's coordinator does when a topic is deleted
// (GroupMetadataManager.onPartitionsDeleted).
func (c *Coordinator) DeleteTopicOffsets(ctx context.Context, topic string) error {
	gs := c.allGroups()
	for _, g := range gs {
		g.mu.Lock()
		del := g.offsetKeys(func(tp TopicPartition) bool { return tp.Topic == topic })
		var err error
		if len(del) > 0 && c.cfg.Storage != nil {
			err = c.cfg.Storage.Append(ctx, offsetTombstones(g.id, del))
		}
		if err == nil {
			for _, tp := range del {
				g.removeOffset(tp)
			}
		}
		g.mu.Unlock()
		if err != nil {
			return fmt.Errorf("group %s: offsets of deleted topic %s: %w", g.id, topic, err)
		}
	}
	return nil
}

func sliceSet(tps []TopicPartition) map[TopicPartition]struct{} {
	m := make(map[TopicPartition]struct{}, len(tps))
	for _, tp := range tps {
		m[tp] = struct{}{}
	}
	return m
}
