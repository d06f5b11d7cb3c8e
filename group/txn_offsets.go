package group

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Transactional offset commits (Kafka's TxnOffsetCommit, KIP-98, with KIP-447's member checks):
// a producer's transaction commits a group's offsets by writing them to the storage as part of
// the transaction (CommitTxnOffsets, whose write the caller does: a transactional batch of the
// producer), and they stay pending, invisible to FetchOffsets, until the transaction's marker:
// CompleteTxnOffsets with commit makes them the group's committed offsets, with abort drops them
// (Kafka's GroupMetadata.pendingTransactionalOffsetCommits, OffsetMetadataManager's
// pendingTransactionalOffsets).
//
// Which offset wins when a transaction's offset meets one committed otherwise is Kafka's rule
// (OffsetMetadataManager.replayEndTransactionMarker): at the commit, the pending offset replaces
// the group's only when its record is the later one in the storage. A tombstone of a partition's
// offset (DeleteOffsets, DeleteTopicOffsets, DeleteGroup, expiry) drops the pending offsets
// committed before it, and DeleteGroup and DeleteOffsets write a tombstone for a partition that
// only a transaction holds. So the state is always that of the last record of each key that is
// not of an aborted or open transaction, live as after Replay, and after a compaction of the
// storage, which keeps the last record of each key and drops aborted transactions' records.
// The order of records is Coordinator.seq: a group's appends happen under its lock, in the
// storage's order, and Replay counts the records in that order.

// txnOffset is an offset committed in a producer's open transaction, with the seq of its record.
type txnOffset struct {
	OffsetAndMetadata
	seq uint64
}

// TxnCommitRequest is a TxnOffsetCommit request as the group coordinator sees it (Kafka's
// TxnOffsetCommitRequest, without the transactional id, which the transaction coordinator
// checks).
type TxnCommitRequest struct {
	Group string
	// MemberID, InstanceID and Generation identify the committing member (KIP-447): with
	// Generation >= 0 or a member id, the member must be one of the group's current
	// generation. Generation -1 with no member id commits without those checks, as Kafka takes a
	// TxnOffsetCommit of a client older than KIP-447.
	MemberID   string
	InstanceID string
	Generation int32
	// ProducerID is the transaction's producer: its marker decides the offsets.
	ProducerID int64
	// Offsets are the positions to commit; their CommitTime is set by the coordinator.
	Offsets map[TopicPartition]OffsetAndMetadata
}

// CommitTxnOffsets is the group coordinator's part of Kafka's TxnOffsetCommit
// (GroupCoordinator.commitTransactionalOffsets): the request is validated as Kafka's
// ClassicGroup.validateOffsetCommit validates a transactional commit, write is handed the
// offsets' records (OffsetCommitKey version 1 and OffsetCommitValue version 3, ordered by topic
// and partition) to store them durably as the producer's transactional batch, and once it
// returns nil the offsets are pending for req.ProducerID until CompleteTxnOffsets. write runs
// under the group's lock, so the group's other records are not appended meanwhile.
//
// Errors: ErrInvalidGroupID; ErrIllegalGeneration when the group does not exist and Generation
// >= 0, or Generation is not the group's; ErrUnknownMemberID, ErrFencedInstanceID as for
// CommitOffsets (but a commit with no member id is taken from a group with members, and one in
// CompletingRebalance is not refused, as Kafka's are not for a transactional commit);
// ErrCoordinatorNotAvailable once closed; and write's error, wrapped, nothing pending.
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, req TxnCommitRequest, write func(ctx context.Context, recs []StorageRecord) error) error {
	if err := c.CheckGroupID(req.Group); err != nil {
		return err
	}
	g, err := c.lockGroup(req.Group, req.Generation < 0,
		fmt.Errorf("%w: group %s does not exist, and generation %d is not -1", ErrIllegalGeneration, req.Group, req.Generation))
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.validateTxnOffsetCommit(req); err != nil {
		return err
	}
	if len(req.Offsets) == 0 {
		return nil
	}
	now := c.clock.Now()
	offsets := make(map[TopicPartition]OffsetAndMetadata, len(req.Offsets))
	for tp, o := range req.Offsets {
		o.CommitTime = now
		offsets[tp] = o
	}
	recs := make([]StorageRecord, 0, len(offsets))
	for _, tp := range sortedPartitions(offsets) {
		recs = append(recs, StorageRecord{Key: offsetKey(g.id, tp), Value: offsetValue(offsets[tp])})
	}
	if err := write(ctx, recs); err != nil {
		return fmt.Errorf("group %s: transactional commit of producer %d not stored: %w", g.id, req.ProducerID, err)
	}
	seq := c.seq.Add(1)
	for tp, o := range offsets {
		g.addTxnOffset(req.ProducerID, tp, txnOffset{o, seq})
	}
	c.mu.Lock()
	c.addTxnGroupLocked(req.ProducerID, g.id)
	c.mu.Unlock()
	return nil
}

// validateTxnOffsetCommit is Kafka's ClassicGroup.validateOffsetCommit with isTransactional.
func (g *group) validateTxnOffsetCommit(req TxnCommitRequest) error {
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
	}
	return nil
}

// CompleteTxnOffsets ends producerID's transaction in the groups it committed offsets to, once
// its marker is stored: with commit, each pending offset becomes the group's committed one,
// unless the group's was committed by a later record; without, they are dropped (Kafka's
// GroupMetadataManager.handleTxnCompletion). A producer with none pending changes nothing.
func (c *Coordinator) CompleteTxnOffsets(producerID int64, commit bool) {
	c.mu.Lock()
	ids := c.txnGroups[producerID]
	delete(c.txnGroups, producerID)
	c.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		g, err := c.lockGroup(id, false, nil)
		if err != nil || g == nil {
			continue // deleted meanwhile (its tombstones dropped the offsets), or closed
		}
		g.completeTxnOffsets(producerID, commit)
		g.mu.Unlock()
	}
}

// HasPendingTxnOffsets reports whether an open transaction committed an offset of group's
// partition tp: a Kafka OffsetFetch with require_stable (KIP-447) answers UNSTABLE_OFFSET_COMMIT
// for such a partition, so that a consumer does not start from an offset about to move.
func (c *Coordinator) HasPendingTxnOffsets(group string, tp TopicPartition) bool {
	g, err := c.lockGroup(group, false, nil)
	if err != nil || g == nil {
		return false
	}
	defer g.mu.Unlock()
	return g.hasTxnOffset(tp)
}

// ReplayTxnOffset applies an offset record of producerID's transactional batch, in the storage's
// order with Replay and ReplayTxnMarker: the offset is pending until the producer's marker (a
// tombstone drops the producer's pending offset of the partition). Before Start, as Replay.
// Returns ErrBadRecord for a record that is not an offset record or does not decode.
func (c *Coordinator) ReplayTxnOffset(producerID int64, key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 && v != 1 {
		return fmt.Errorf("%w: key version %d in a transaction (only offset commits are)", ErrBadRecord, v)
	}
	id, tp, o, err := parseOffsetRecord(key, value)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if o == nil {
		if g != nil {
			g.dropTxnOffset(producerID, tp)
		}
		return nil
	}
	if g == nil {
		// As CommitTxnOffsets made it.
		g = newGroup(id, c.clock.Now())
		c.groups[id] = g
	}
	g.addTxnOffset(producerID, tp, txnOffset{*o, c.seq.Add(1)})
	c.addTxnGroupLocked(producerID, id)
	return nil
}

// ReplayTxnMarker applies producerID's COMMIT (commit set) or ABORT marker, in the storage's
// order with Replay and ReplayTxnOffset: CompleteTxnOffsets for the replay. Before Start.
func (c *Coordinator) ReplayTxnMarker(producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.txnGroups[producerID] {
		if g := c.groups[id]; g != nil {
			g.completeTxnOffsets(producerID, commit)
		}
	}
	delete(c.txnGroups, producerID)
}

func (c *Coordinator) addTxnGroupLocked(producerID int64, id string) {
	if c.txnGroups[producerID] == nil {
		c.txnGroups[producerID] = map[string]struct{}{}
	}
	c.txnGroups[producerID][id] = struct{}{}
}

func (g *group) addTxnOffset(producerID int64, tp TopicPartition, o txnOffset) {
	if g.txnOffsets[producerID] == nil {
		g.txnOffsets[producerID] = map[TopicPartition]txnOffset{}
	}
	g.txnOffsets[producerID][tp] = o
}

func (g *group) dropTxnOffset(producerID int64, tp TopicPartition) {
	if p := g.txnOffsets[producerID]; p != nil {
		delete(p, tp)
		if len(p) == 0 {
			delete(g.txnOffsets, producerID)
		}
	}
}

// completeTxnOffsets is CompleteTxnOffsets in g. Callers hold g.mu (or Coordinator.mu, replaying).
func (g *group) completeTxnOffsets(producerID int64, commit bool) {
	pending := g.txnOffsets[producerID]
	delete(g.txnOffsets, producerID)
	if !commit {
		return
	}
	for tp, o := range pending {
		if _, ok := g.offsets[tp]; ok && g.offsetSeq[tp] > o.seq {
			continue // committed by a later record, which stays (Kafka keeps the most recent)
		}
		g.offsets[tp], g.offsetSeq[tp] = o.OffsetAndMetadata, o.seq
	}
}

// hasTxnOffset reports whether an open transaction committed an offset of tp.
func (g *group) hasTxnOffset(tp TopicPartition) bool {
	for _, p := range g.txnOffsets {
		if _, ok := p[tp]; ok {
			return true
		}
	}
	return false
}

// hasOffset reports whether the group has a committed offset of tp, or an open transaction one.
func (g *group) hasOffset(tp TopicPartition) bool {
	_, ok := g.offsets[tp]
	return ok || g.hasTxnOffset(tp)
}

// offsetKeys returns the partitions, among those keep takes, with a committed offset or one of
// an open transaction: those a tombstone must be written for to delete them.
func (g *group) offsetKeys(keep func(TopicPartition) bool) []TopicPartition {
	set := map[TopicPartition]struct{}{}
	for tp := range g.offsets {
		if keep(tp) {
			set[tp] = struct{}{}
		}
	}
	for _, p := range g.txnOffsets {
		for tp := range p {
			if keep(tp) {
				set[tp] = struct{}{}
			}
		}
	}
	return slices.Collect(maps.Keys(set))
}

// removeOffset applies a tombstone of tp: the committed offset goes, and so do the offsets open
// transactions committed before it (Kafka's OffsetMetadataManager.replay of a tombstone).
func (g *group) removeOffset(tp TopicPartition) {
	delete(g.offsets, tp)
	delete(g.offsetSeq, tp)
	for pid := range g.txnOffsets {
		g.dropTxnOffset(pid, tp)
	}
}
