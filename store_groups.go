package commitlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The group coordinator's errors, Kafka's, re-exported from package group: every error of a
// GroupReader, Store group method or group.Coordinator that one of these describes wraps it.
var (
	// ErrIllegalGeneration (Kafka's ILLEGAL_GENERATION): a commit, heartbeat or sync from a
	// member of another generation than the group's: the member was left behind by a
	// rebalance, and its commit is refused so that it cannot move the group's positions.
	ErrIllegalGeneration = group.ErrIllegalGeneration
	// ErrRebalanceInProgress (REBALANCE_IN_PROGRESS): the group is between the join and the
	// sync of a rebalance; a commit may be tried again once the member has its new assignment.
	ErrRebalanceInProgress = group.ErrRebalanceInProgress
	// ErrUnknownMemberID (UNKNOWN_MEMBER_ID): the member is not in the group (it left, or was
	// removed after its session or rebalance timeout).
	ErrUnknownMemberID = group.ErrUnknownMemberID
	// ErrFencedInstanceID (FENCED_INSTANCE_ID): another member joined with this member's
	// group.instance.id (KIP-345).
	ErrFencedInstanceID = group.ErrFencedInstanceID
	// ErrInvalidSessionTimeout (INVALID_SESSION_TIMEOUT): the session timeout lies outside the
	// store's bounds (WithGroupSessionTimeouts).
	ErrInvalidSessionTimeout = group.ErrInvalidSessionTimeout
	// ErrInconsistentGroupProtocol (INCONSISTENT_GROUP_PROTOCOL): the member's assignors share
	// none with the group's members.
	ErrInconsistentGroupProtocol = group.ErrInconsistentGroupProtocol
	// ErrGroupMaxSizeReached (GROUP_MAX_SIZE_REACHED): the group is full (WithGroupMaxSize).
	ErrGroupMaxSizeReached = group.ErrGroupMaxSizeReached
	// ErrGroupIDNotFound (GROUP_ID_NOT_FOUND): no group of that id exists.
	ErrGroupIDNotFound = group.ErrGroupIDNotFound
	// ErrNonEmptyGroup (NON_EMPTY_GROUP): a group with members cannot be deleted (a commit from
	// outside a group with members gets ErrUnknownMemberID, as in Kafka).
	ErrNonEmptyGroup = group.ErrNonEmptyGroup
	// ErrInvalidGroupID (INVALID_GROUP_ID): the group id is empty, longer than 32,767 bytes, or
	// begins with the NUL-delimited prefix the store keeps readers' transactional positions under.
	ErrInvalidGroupID = group.ErrInvalidGroupID
)

// TopicPartition names one partition of one topic.
type TopicPartition = group.TopicPartition

// newGroupCoordinator returns the store's group coordinator, its state not yet loaded (see
// GroupCoordinator).
func (s *Store) newGroupCoordinator() *group.Coordinator {
	return group.NewCoordinator(group.Config{
		MinSessionTimeout:     s.o.groupMinSession,
		MaxSessionTimeout:     s.o.groupMaxSession,
		InitialRebalanceDelay: s.o.groupInitialDelay,
		MaxSize:               s.o.groupMaxSize,
		ReservedPrefix:        readerGroupPrefix,
		Storage:               groupStorage{s},
		Logger:                s.o.logger,
	})
}

// GroupCoordinator returns the store's consumer group coordinator, loading the groups and
// committed offsets kept in the internal log __consumer_offsets-0 (opened, and created, at the
// first call, or at Open when it exists). A Kafka protocol server hands its clients'
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch requests to it;
// in-process members use NewGroupReader. Returns ErrClosed after Close, and the error of opening
// the internal log.
func (s *Store) GroupCoordinator() (*group.Coordinator, error) {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	return s.groupCoordinatorLocked()
}

// groupCoordinatorLocked is GroupCoordinator without the check of Close, for callers holding
// s.mu.
func (s *Store) groupCoordinatorLocked() (*group.Coordinator, error) {
	s.groupsMu.Lock()
	defer s.groupsMu.Unlock()
	if s.groupsLoaded {
		return s.groups, nil
	}
	if err := s.txn.ensureOpen(); err != nil {
		return nil, err
	}
	n, err := replayGroups(s.txn.offsets, coordinatorReplay(s.groups), s.o.logger.Warn)
	if err != nil {
		return nil, fmt.Errorf("commitlog: load the consumer groups: %w", err)
	}
	s.groups.Start()
	s.groupsLoaded = true
	if n > 0 {
		s.o.logger.Info("consumer groups loaded", "records", n, "groups", len(s.groups.ListGroups()))
	}
	return s.groups, nil
}

// groupReplay is what replayGroups hands the records of __consumer_offsets-0 to: the group
// coordinator's Replay, ReplayTxnOffset and ReplayTxnMarker. A nil txnOffset or marker skips
// those records.
type groupReplay struct {
	// offset takes the key and value of a record of a non-transactional batch.
	offset func(key, value []byte) error
	// txnOffset takes the key and value of a group's offset commit in producer pid's
	// transactional batch (TxnOffsetCommit).
	txnOffset func(pid int64, key, value []byte) error
	// marker takes producer pid's COMMIT (commit set) or ABORT marker.
	marker func(pid int64, commit bool)
}

// coordinatorReplay is the replay of the store's group coordinator.
func coordinatorReplay(c *group.Coordinator) groupReplay {
	return groupReplay{offset: c.Replay, txnOffset: c.ReplayTxnOffset, marker: c.ReplayTxnMarker}
}

// replayGroups hands r every record of l, from its log start offset in offset order, and returns
// how many records it took: the records of non-transactional batches (the groups' own records)
// to r.offset; the records of transactional batches that are groups' offsets (TxnOffsetCommit)
// to r.txnOffset, and every transaction marker to r.marker, so that a transaction's offsets
// become the group's at its COMMIT marker, as Kafka's GroupMetadataManager loads them, and an
// aborted or still open one's never. The records of transactions keyed under readerGroupPrefix
// are readers' positions (see txnCoordinator), no group's, and are passed over. A record r
// refuses is logged with warn and skipped: a group then resumes from an earlier commit of the
// partition, or from its reset policy, reading again rather than losing records.
func replayGroups(l *Log, r groupReplay, warn func(string, ...any)) (int, error) {
	n := 0
	var recs []*Record
	var key kmsg.OffsetCommitKey
	err := l.eachBatch(l.LogStartOffset(), func(h recordbatch.Header, batch []byte) error {
		txn := h.Attributes.Transactional()
		if h.Attributes.Control() {
			if !txn || r.marker == nil || h.ProducerID < 0 {
				return nil
			}
			mk, err := parseMarker(batch, &h)
			if err != nil {
				// As the producer state takes it: the transaction stays open.
				warn("consumer offsets control batch not read", "offset", h.BaseOffset, "err", err)
				return nil
			}
			r.marker(mk.ProducerID, mk.Commit)
			return nil
		}
		if txn && r.txnOffset == nil {
			return nil
		}
		var err error
		if recs, err = DecodeRecords(recs[:0], batch, 0, 0); err != nil {
			return fmt.Errorf("%s: %w", l.Dir(), err)
		}
		for _, rec := range recs {
			if txn {
				if key.ReadFrom(rec.Key) == nil && strings.HasPrefix(key.Group, readerGroupPrefix) {
					continue // a reader's position
				}
				err = r.txnOffset(h.ProducerID, rec.Key, rec.Value)
			} else {
				err = r.offset(rec.Key, rec.Value)
			}
			if err != nil {
				warn("consumer offsets record skipped", "offset", rec.Offset, "err", err)
				continue
			}
			n++
		}
		return nil
	})
	return n, err
}

// groupStorage stores the group coordinator's records in __consumer_offsets-0.
type groupStorage struct{ s *Store }

// Append appends recs as one batch to __consumer_offsets-0, fsynced (the log is SyncAlways).
func (gs groupStorage) Append(ctx context.Context, recs []group.StorageRecord) error {
	if err := gs.s.txn.ensureOpen(); err != nil {
		return err
	}
	rs := make([]*Record, len(recs))
	for i, r := range recs {
		rs[i] = &Record{Key: r.Key, Value: r.Value}
	}
	return gs.s.txn.offsets.Append(ctx, rs...)
}

// ListGroups returns the store's consumer groups, ordered by id (Kafka's ListGroups): those with
// members, and Empty ones (with committed positions, or emptied and not yet expired or deleted);
// with states given, those in one of them.
// Returns ErrClosed after Close.
func (s *Store) ListGroups(states ...group.State) ([]group.ListedGroup, error) {
	c, err := s.GroupCoordinator()
	if err != nil {
		return nil, err
	}
	return c.ListGroups(states...), nil
}

// GroupDescription describes a consumer group: Kafka's DescribeGroups with the group's
// committed positions and lag (what kafka-consumer-groups.sh --describe prints).
type GroupDescription struct {
	Group string
	// State is Empty, PreparingRebalance, CompletingRebalance or Stable.
	State group.State
	// Protocol is the assignor the group chose ("" while none); Generation the generation id.
	Protocol   string
	Generation int32
	// Leader is the leader's member id.
	Leader string
	// Members are ordered by member id.
	Members []GroupMemberDescription
	// Positions are the group's committed positions, by topic and partition, with lag.
	Positions []GroupPosition
}

// GroupMemberDescription is one member of a group.
type GroupMemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Topics is the member's subscription, Assignment its partitions (ordered by topic, then
	// partition); both empty when the member's metadata is not the consumer protocol's.
	Topics     []string
	Assignment []TopicPartition
}

// GroupPosition is a group's committed position in one partition.
type GroupPosition struct {
	Topic     string
	Partition int32
	// Offset is the committed position: the offset of the next record to read. LeaderEpoch is
	// the leader epoch of the record before it, UndefinedEpoch when unknown.
	Offset      int64
	LeaderEpoch int32
	// Metadata is the committer's string (Kafka's OffsetAndMetadata.metadata).
	Metadata   string
	CommitTime time.Time
	// HighWatermark is the partition's high watermark, and Lag how far the position lies
	// below it (0 when caught up or above it); both -1 for a topic the store no longer holds.
	HighWatermark int64
	Lag           int64
}

// DescribeGroup returns a group's state, members with their assignments, and its committed
// positions with their lag. Returns ErrGroupIDNotFound for a group that does not exist, ErrClosed
// after Close.
func (s *Store) DescribeGroup(id string) (GroupDescription, error) {
	c, err := s.GroupCoordinator()
	if err != nil {
		return GroupDescription{}, err
	}
	d, err := c.DescribeGroup(id)
	if err != nil {
		return GroupDescription{}, err
	}
	out := GroupDescription{Group: d.Group, State: d.State, Protocol: d.Protocol, Generation: d.Generation, Leader: d.Leader}
	for _, m := range d.Members {
		md := GroupMemberDescription{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if d.ProtocolType == group.ConsumerProtocolType {
			if sub, err := group.DecodeSubscription(m.MemberID, m.InstanceID, m.Metadata); err == nil {
				md.Topics = sub.Topics
			}
			if a, err := group.DecodeAssignment(m.Assignment); err == nil {
				md.Assignment = flattenAssignment(a)
			}
		}
		out.Members = append(out.Members, md)
	}
	offsets, err := c.FetchOffsets(id, nil)
	if err != nil {
		return GroupDescription{}, err
	}
	for tp, o := range offsets {
		gp := GroupPosition{Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTime: o.CommitTime, HighWatermark: -1, Lag: -1}
		if t, err := s.Topic(tp.Topic); err == nil {
			if p, err := t.Partition(tp.Partition); err == nil {
				gp.HighWatermark = p.HighWatermark()
				gp.Lag = max(gp.HighWatermark-o.Offset, 0)
			}
		}
		out.Positions = append(out.Positions, gp)
	}
	slices.SortFunc(out.Positions, func(a, b GroupPosition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// flattenAssignment returns the partitions of a, ordered by topic, then partition.
func flattenAssignment(a map[string][]int32) []TopicPartition {
	var out []TopicPartition
	for t, ps := range a {
		for _, p := range ps {
			out = append(out, TopicPartition{Topic: t, Partition: p})
		}
	}
	slices.SortFunc(out, compareTP)
	return out
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// DeleteGroup deletes a group that has no members, with its committed positions (Kafka's
// DeleteGroups). Returns ErrGroupIDNotFound, ErrNonEmptyGroup while it has members, ErrClosed
// after Close.
func (s *Store) DeleteGroup(ctx context.Context, id string) error {
	c, err := s.GroupCoordinator()
	if err != nil {
		return err
	}
	return c.DeleteGroup(ctx, id)
}

// SetGroupPositions commits positions for a group that has no members (creating it if it does
// not exist), as kafka-consumer-groups.sh --reset-offsets does: Kafka's OffsetCommit with
// generation -1. positions gives each partition's next offset to read. Returns ErrUnknownTopic
// for a partition the store does not hold, ErrInvalidGroupID, ErrUnknownMemberID while the group
// has members (Kafka refuses such commits then), ErrClosed after Close.
func (s *Store) SetGroupPositions(ctx context.Context, id string, positions map[TopicPartition]int64) error {
	if err := s.groups.CheckGroupID(id); err != nil {
		return err
	}
	offsets := make(map[TopicPartition]group.OffsetAndMetadata, len(positions))
	for tp, off := range positions {
		t, err := s.Topic(tp.Topic)
		if err != nil {
			return err
		}
		p, err := t.Partition(tp.Partition)
		if err != nil {
			return err
		}
		offsets[tp] = group.OffsetAndMetadata{Offset: off, LeaderEpoch: p.log.epochOf(off - 1)}
	}
	c, err := s.GroupCoordinator()
	if err != nil {
		return err
	}
	return c.CommitOffsets(ctx, group.CommitRequest{Group: id, Generation: -1, Offsets: offsets})
}

// removeGroupTopic removes every group's committed positions of a deleted topic, as Kafka does,
// so that a topic created again under the name is read from each group's reset policy. A store
// without groups (no internal log) has none to remove. Callers hold s.mu.
func (s *Store) removeGroupTopic(topic string) error {
	s.groupsMu.Lock()
	loaded := s.groupsLoaded
	s.groupsMu.Unlock()
	if !loaded {
		return nil
	}
	c, err := s.groupCoordinatorLocked()
	if err != nil {
		return err
	}
	return c.DeleteTopicOffsets(context.Background(), topic)
}

// ExpireGroupOffsets is ExpireGroupOffsetsAt at the time of the store's clock: what the
// background retention check runs.
func (s *Store) ExpireGroupOffsets(ctx context.Context) (int, error) {
	return s.ExpireGroupOffsetsAt(ctx, s.o.now())
}

// ExpireGroupOffsetsAt removes the groups' committed positions that have outlived the offsets
// retention (WithGroupOffsetsRetention, Kafka's offsets.retention.minutes) at now, by Kafka's
// rules (see group.Coordinator.ExpireOffsets), and returns how many. A store whose groups were
// never used has none: nothing is opened. ErrClosed after Close.
func (s *Store) ExpireGroupOffsetsAt(ctx context.Context, now time.Time) (int, error) {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	s.groupsMu.Lock()
	loaded := s.groupsLoaded
	s.groupsMu.Unlock()
	if !loaded {
		return 0, nil
	}
	retention := s.o.offsetsRetention
	if retention <= 0 {
		retention = group.DefaultOffsetsRetention
	}
	return s.groups.ExpireOffsets(ctx, now, retention)
}
