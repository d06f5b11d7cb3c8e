package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/producerstate"
)

// The transaction coordinator's protocol-level API: what a Kafka wire-protocol server hands its
// clients' InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit
// requests to, and what its Produce handler asks before it appends a transactional batch
// (VerifyTxnPartition, KIP-890 part 1). Each call is one request, answered with the errors Kafka's
// TransactionCoordinator (and, for TxnOffsetCommit, its GroupCoordinator) answers it with, as
// sentinels: ErrInvalidProducerIDMapping, ErrProducerFenced, ErrInvalidTxnState,
// ErrConcurrentTransactions, ErrInvalidTransactionTimeout, ErrUnknownTopic, and the group
// coordinator's. The state is the one the store's Producer uses (txn_coordinator.go): a Kafka
// client and a Producer of the same transactional id fence each other.
//
// Two differences from Kafka, both in the client's favour. EndTxn and InitProducerID write the
// markers before they return (Kafka's answer once PrepareCommit is durable and sends them after),
// so a ReadCommitted fetch sees a committed transaction once EndTxn returns. And InitProducerID
// completes or aborts the transaction an older instance left before it returns the new epoch,
// where Kafka answers CONCURRENT_TRANSACTIONS and lets the client retry.

// offsetsPartition is the partition AddOffsetsToTxn adds: every group's offsets live in
// __consumer_offsets-0.
var offsetsPartition = topicPartition{topic: consumerOffsetsTopic, partition: 0}

// UnknownPartitionsError is AddPartitionsToTxn's error when partitions it names do not exist:
// Kafka answers UNKNOWN_TOPIC_OR_PARTITION for these and OPERATION_NOT_ATTEMPTED for the
// others, and adds none. errors.Is(err, ErrUnknownTopic) matches it.
type UnknownPartitionsError struct {
	// Partitions are the unknown ones, ordered by topic, then partition.
	Partitions []TopicPartition
}

// Error names the unknown partitions.
func (e *UnknownPartitionsError) Error() string {
	var b strings.Builder
	for i, tp := range e.Partitions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s-%d", tp.Topic, tp.Partition)
	}
	return fmt.Sprintf("%v: %s; no partition added", ErrUnknownTopic, b.String())
}

// Unwrap returns ErrUnknownTopic.
func (e *UnknownPartitionsError) Unwrap() error { return ErrUnknownTopic }

// InitProducerID is Kafka's InitProducerId (TransactionCoordinator.handleInitProducerId, with
// KIP-360's producer id and epoch). It returns the producer id and epoch to write with.
//
// Without a transactionalID it returns a new producer id at epoch 0 for an idempotent producer;
// timeout, producerID and producerEpoch are not looked at (Kafka's null transactional id).
//
// With one (any string of 1 to 32,767 bytes, as Kafka's): the first call makes the id's producer
// id at epoch 0; each later one bumps the epoch, fencing every older instance (their calls get
// ErrProducerFenced), after completing a transaction the older instance prepared or aborting one
// it left open, so the new epoch starts with no transaction; an epoch at its maximum takes a new
// producer id. timeout is the transaction timeout (transaction.timeout.ms): a transaction open
// longer is aborted and its producer fenced. producerID and producerEpoch are -1, or the pair the
// caller holds (KIP-360: a producer bumping its own epoch after an error): it must be the id's
// current pair, or the pair a previous call that named one started from, whose answer is then
// given again unchanged (a retry); a pair for an id with no producer yet is taken as -1.
//
// Errors: ErrInvalidTransactionTimeout (INVALID_TRANSACTION_TIMEOUT) for a timeout below 1 ms
// or above WithTransactionMaxTimeout; ErrProducerFenced (PRODUCER_FENCED) for a pair that is
// neither; ErrInvalidConfig for an id longer than 32,767 bytes, or a pair with one of them -1
// (Kafka's INVALID_REQUEST); ErrClosed after Close; ctx's error; and the error of writing the
// coordinator's log or a marker (Kafka's answer would be COORDINATOR_NOT_AVAILABLE or
// CONCURRENT_TRANSACTIONS; the client retries either). On an error the id and epoch are -1.
func (s *Store) InitProducerID(ctx context.Context, transactionalID string, timeout time.Duration, producerID int64, producerEpoch int16) (int64, int16, error) {
	if err := s.txnRequest(ctx); err != nil {
		return -1, -1, err
	}
	if transactionalID == "" {
		pid, err := s.txn.allocateProducerID()
		if err != nil {
			return -1, -1, err
		}
		return pid, 0, nil
	}
	if len(transactionalID) > math.MaxInt16 {
		return -1, -1, fmt.Errorf("%w: transactional id of %d bytes (at most %d)", ErrInvalidConfig, len(transactionalID), math.MaxInt16)
	}
	if timeout < time.Millisecond || timeout > s.o.transactionTimeout {
		return -1, -1, fmt.Errorf("%w: transaction.timeout.ms %d outside [1, %d] (transaction.max.timeout.ms)", ErrInvalidTransactionTimeout,
			timeout.Milliseconds(), s.o.transactionTimeout.Milliseconds())
	}
	none := producerID == -1 && producerEpoch == -1
	if !none && (producerID < 0 || producerEpoch < 0) {
		return -1, -1, fmt.Errorf("%w: producer id %d with epoch %d: both -1, or neither", ErrInvalidConfig, producerID, producerEpoch)
	}
	pid, epoch, err := s.txn.initProducer(ctx, transactionalID, timeout, producerID, producerEpoch)
	if err != nil {
		return -1, -1, err
	}
	return pid, epoch, nil
}

// AddPartitionsToTxn is Kafka's AddPartitionsToTxn (TransactionCoordinator.
// handleAddPartitionsToTransaction): the partitions, by topic, join the producer's transaction,
// which becomes Ongoing (it starts now, for its timeout, when it was not), durably, before the
// producer writes to them; partitions already in it change nothing. The producer must call it
// before its first transactional batch to a partition (VerifyTxnPartition checks that).
//
// Errors: an *UnknownPartitionsError, matching ErrUnknownTopic (UNKNOWN_TOPIC_OR_PARTITION),
// naming the partitions of topics the store does not hold (the internal topics among them) or
// beyond their topic's count, when there is one, and none is added; ErrInvalidProducerIDMapping
// (INVALID_PRODUCER_ID_MAPPING) for a transactional id the store does not know, or another
// producer id than its; ErrProducerFenced (PRODUCER_FENCED) for another epoch;
// ErrConcurrentTransactions (CONCURRENT_TRANSACTIONS) while its last transaction is being
// completed; ErrClosed, ctx's error, and the error of writing the coordinator's log.
func (s *Store) AddPartitionsToTxn(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, partitions map[string][]int32) error {
	if err := s.txnRequest(ctx); err != nil {
		return err
	}
	var tps []topicPartition
	unknown := &UnknownPartitionsError{}
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		for _, p := range partitions[topic] {
			tp := TopicPartition{Topic: topic, Partition: p}
			if err := s.checkDataPartition(tp); err != nil {
				if !errors.Is(err, ErrUnknownTopic) {
					return err
				}
				unknown.Partitions = append(unknown.Partitions, tp)
				continue
			}
			tps = append(tps, topicPartition{topic: topic, partition: p})
		}
	}
	if len(unknown.Partitions) > 0 {
		slices.SortFunc(unknown.Partitions, compareTP)
		unknown.Partitions = slices.Compact(unknown.Partitions)
		return unknown
	}
	return s.txn.addPartitionsRequest(ctx, transactionalID, producerID, producerEpoch, tps)
}

// AddOffsetsToTxn is Kafka's AddOffsetsToTxn: the group's offsets partition, here
// __consumer_offsets-0 for every group, joins the producer's transaction as AddPartitionsToTxn
// adds a partition, so that TxnOffsetCommit may then write the group's offsets in it.
//
// Errors: ErrInvalidGroupID (INVALID_GROUP_ID) for an empty group id, one longer than 32,767
// bytes, or one with the store's reserved prefix; the others as for AddPartitionsToTxn.
func (s *Store) AddOffsetsToTxn(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, groupID string) error {
	if err := s.txnRequest(ctx); err != nil {
		return err
	}
	if err := s.groups.CheckGroupID(groupID); err != nil {
		return err
	}
	return s.txn.addPartitionsRequest(ctx, transactionalID, producerID, producerEpoch, []topicPartition{offsetsPartition})
}

// EndTxn is Kafka's EndTxn (TransactionCoordinator.handleEndTransaction): commit (commit set) or
// abort the producer's Ongoing transaction. The decision is made durable (PrepareCommit or
// PrepareAbort), then the markers go to every partition of the transaction and the groups'
// offsets it committed (TxnOffsetCommit) become theirs, or are dropped, before it returns. When
// a marker cannot be written once the decision is durable, EndTxn still returns nil, as Kafka
// answers once the decision is durable: the failure is logged, and the store writes the
// markers at its next transaction check (WithTransactionCheckInterval), the next EndTxn with
// the same decision, the next InitProducerID, or the next Open; until then the producer's calls
// get ErrConcurrentTransactions.
//
// A transaction with nothing added (Empty) ends with nothing to do, and so does a repeated call
// with the decision already carried out (CompleteCommit and commit, CompleteAbort and abort: a
// retry). The other decision after a completed one (commit after an abort, abort after a commit)
// is ErrInvalidTxnState (INVALID_TXN_STATE), as is the other decision while one is being
// completed (PrepareCommit, PrepareAbort); the same decision then completes it now, and returns
// ErrConcurrentTransactions (CONCURRENT_TRANSACTIONS) if that fails.
//
// Errors, besides: ErrInvalidProducerIDMapping (INVALID_PRODUCER_ID_MAPPING) for an unknown
// transactional id or another producer id than its; ErrProducerFenced (PRODUCER_FENCED) for
// another epoch (a newer instance, or the store's abort of a timed-out transaction, bumped it);
// ErrClosed, ctx's error, and the error of writing the decision.
func (s *Store) EndTxn(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, commit bool) error {
	if err := s.txnRequest(ctx); err != nil {
		return err
	}
	m, err := s.txn.lookup(transactionalID)
	if err != nil {
		return err
	}
	return s.txn.endTxnRequest(ctx, m, producerID, producerEpoch, commit)
}

// TxnOffsetCommitRequest is Kafka's TxnOffsetCommitRequest: a consumer group's offsets committed
// in a producer's transaction (consume-transform-produce; KIP-98, KIP-447).
type TxnOffsetCommitRequest struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// GroupID is the consumer group whose offsets these are.
	GroupID string
	// GenerationID, MemberID and GroupInstanceID are the group member's (KIP-447): with
	// GenerationID >= 0 or a MemberID, the member must be in the group's current generation
	// (ErrIllegalGeneration, ErrUnknownMemberID, ErrFencedInstanceID otherwise), which fences a
	// zombie that the group has moved on from. GenerationID -1 and no MemberID skip the check,
	// as for a client older than KIP-447.
	GenerationID    int32
	MemberID        string
	GroupInstanceID string
	// Offsets are the positions to commit (the offset of the next record to read, the leader
	// epoch of the record before it or -1, the committer's metadata); CommitTime is set by the
	// store.
	Offsets map[TopicPartition]group.OffsetAndMetadata
}

// TxnOffsetCommit is Kafka's TxnOffsetCommit for a consumer group: the offsets are written to
// __consumer_offsets-0 as a transactional batch of the producer (OffsetCommitKey version 1 with
// the group id, OffsetCommitValue version 3 with the leader epoch, metadata and commit time), and
// stay pending, unseen by GroupCoordinator().FetchOffsets, until the transaction ends: EndTxn
// with commit makes them the group's committed offsets (each unless the group committed that
// partition again after it, Kafka's rule), with abort drops them. The transaction must hold the
// offsets partition (AddOffsetsToTxn first).
//
// It returns an error per partition of the request, nil for those committed: ErrUnknownTopic
// (UNKNOWN_TOPIC_OR_PARTITION) for a partition the store does not hold, which is left out. An
// error for the whole request, with no map: ErrInvalidGroupID (INVALID_GROUP_ID);
// ErrInvalidProducerIDMapping (INVALID_PRODUCER_ID_MAPPING) for an unknown transactional id or
// another producer id than its; ErrProducerFenced (PRODUCER_FENCED) for another epoch;
// ErrInvalidTxnState (INVALID_TXN_STATE, as Kafka's KIP-890 verification answers) when the
// transaction is not Ongoing with the offsets partition added; ErrConcurrentTransactions
// (CONCURRENT_TRANSACTIONS) while it is being completed; the group coordinator's
// ErrIllegalGeneration (ILLEGAL_GENERATION; also for a group that does not exist and
// GenerationID >= 0), ErrUnknownMemberID (UNKNOWN_MEMBER_ID), ErrFencedInstanceID
// (FENCED_INSTANCE_ID); ErrClosed, ctx's error, and the error of the write. Nothing is written
// on any of them.
func (s *Store) TxnOffsetCommit(ctx context.Context, req TxnOffsetCommitRequest) (map[TopicPartition]error, error) {
	if err := s.txnRequest(ctx); err != nil {
		return nil, err
	}
	gc, err := s.GroupCoordinator()
	if err != nil {
		return nil, err
	}
	if err := gc.CheckGroupID(req.GroupID); err != nil {
		return nil, err
	}
	errs := make(map[TopicPartition]error, len(req.Offsets))
	offsets := make(map[TopicPartition]group.OffsetAndMetadata, len(req.Offsets))
	for tp, o := range req.Offsets {
		if err := s.checkDataPartition(tp); err != nil {
			errs[tp] = err
			continue
		}
		offsets[tp] = o
	}
	if len(offsets) == 0 {
		return errs, nil
	}
	m, err := s.txn.lookup(req.TransactionalID)
	if err != nil {
		return nil, err
	}
	if err := s.txn.txnOffsetCommit(ctx, gc, m, req, offsets); err != nil {
		return nil, err
	}
	for tp := range offsets {
		errs[tp] = nil
	}
	return errs, nil
}

// VerifyTxnPartition reports whether a transactional batch of the producer for the partition may
// be appended: the producer's transaction is Ongoing with the partition added (Kafka's KIP-890
// part 1 verification, which its Produce path makes before appending, so that a batch sent
// after its transaction ended, or to a partition never added, cannot leave a transaction open
// in the partition that no marker will end). It looks the transactional id up by producer id,
// and writes nothing.
//
// Errors: ErrInvalidTxnState (INVALID_TXN_STATE; Kafka's Produce answers it) when the partition
// is not in the producer's Ongoing transaction; ErrInvalidProducerIDMapping
// (INVALID_PRODUCER_ID_MAPPING) for a producer id no transactional id holds;
// ErrProducerFenced (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH on Produce) for another epoch;
// ErrConcurrentTransactions while the transaction is being completed (Kafka's Produce answers
// NOT_ENOUGH_REPLICAS then, which every client retries); ErrClosed.
//
// The check and the append are not one step: a batch checked while the transaction is Ongoing
// and appended after its EndTxn wrote the partition's marker still opens a transaction there
// (Kafka closes that gap with a verification guard kept in the partition's producer state). A
// client appends no batch while it ends its transaction (it waits for its batches first).
func (s *Store) VerifyTxnPartition(producerID int64, producerEpoch int16, topic string, partition int32) error {
	if s.isClosed() {
		return ErrClosed
	}
	c := s.txn
	c.mu.Lock()
	m := c.pids[producerID]
	c.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%w: no transactional id holds producer %d", ErrInvalidProducerIDMapping, producerID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkProducerLocked(m, producerID, producerEpoch); err != nil {
		return err
	}
	switch m.state {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return fmt.Errorf("%w: transactional id %q is in state %s", ErrConcurrentTransactions, m.id, m.state)
	case kmsg.TransactionStateOngoing:
		if _, ok := m.partitions[topicPartition{topic: topic, partition: partition}]; ok {
			return nil
		}
	}
	return fmt.Errorf("%w: topic %s partition %d is not in the transaction of transactional id %q (state %s); AddPartitionsToTxn first",
		ErrInvalidTxnState, topic, partition, m.id, m.state)
}

// txnRequest is the start of every transaction request: ctx's error, ErrClosed, and the
// coordinator's logs opened (created at the first).
func (s *Store) txnRequest(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return ErrClosed
	}
	return s.txn.ensureOpen()
}

// checkDataPartition returns ErrUnknownTopic unless the store holds tp (the internal topics are
// no data partitions).
func (s *Store) checkDataPartition(tp TopicPartition) error {
	if isInternalTopic(tp.Topic) {
		return fmt.Errorf("%w: %s is an internal topic", ErrUnknownTopic, tp.Topic)
	}
	t, err := s.Topic(tp.Topic)
	if err != nil {
		return err
	}
	_, err = t.Partition(tp.Partition)
	return err
}

// lookup returns the state of a transactional id, ErrInvalidProducerIDMapping for one the
// coordinator does not know (Kafka's answer to every request but InitProducerId).
func (c *txnCoordinator) lookup(id string) (*txnMetadata, error) {
	c.mu.Lock()
	m := c.txns[id]
	c.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("%w: transactional id %q is unknown (InitProducerID first)", ErrInvalidProducerIDMapping, id)
	}
	return m, nil
}

// checkProducerLocked is the check of a transaction request's producer, Kafka's:
// ErrInvalidProducerIDMapping for another producer id than m's, ErrProducerFenced for another
// epoch. Callers hold m.mu.
func checkProducerLocked(m *txnMetadata, pid int64, epoch int16) error {
	if m.producerID < 0 || m.producerID != pid {
		return fmt.Errorf("%w: transactional id %q has producer %d, not %d", ErrInvalidProducerIDMapping, m.id, m.producerID, pid)
	}
	if m.epoch != epoch {
		return fmt.Errorf("%w: transactional id %q: producer %d epoch %d, the coordinator has epoch %d",
			ErrProducerFenced, m.id, pid, epoch, m.epoch)
	}
	return nil
}

// addPartitionsRequest is AddPartitionsToTxn and AddOffsetsToTxn past their arguments' checks.
func (c *txnCoordinator) addPartitionsRequest(ctx context.Context, id string, pid int64, epoch int16, tps []topicPartition) error {
	m, err := c.lookup(id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkProducerLocked(m, pid, epoch); err != nil {
		return err
	}
	if m.state == kmsg.TransactionStatePrepareCommit || m.state == kmsg.TransactionStatePrepareAbort {
		return fmt.Errorf("%w: transactional id %q is in state %s", ErrConcurrentTransactions, m.id, m.state)
	}
	return c.addPartitionsLocked(ctx, m, tps)
}

// endTxnRequest is EndTxn past the lookup of the transactional id.
func (c *txnCoordinator) endTxnRequest(ctx context.Context, m *txnMetadata, pid int64, epoch int16, commit bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkProducerLocked(m, pid, epoch); err != nil {
		return err
	}
	decision := "abort"
	if commit {
		decision = "commit"
	}
	switch m.state {
	case kmsg.TransactionStateOngoing:
	case kmsg.TransactionStateEmpty:
		return nil
	case kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		if (m.state == kmsg.TransactionStateCompleteCommit) == commit {
			return nil // a retry of the call that completed it
		}
		return fmt.Errorf("%w: %s after the transaction of transactional id %q ended in %s", ErrInvalidTxnState, decision, m.id, m.state)
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		if (m.state == kmsg.TransactionStatePrepareCommit) != commit {
			return fmt.Errorf("%w: %s while the transaction of transactional id %q is in %s", ErrInvalidTxnState, decision, m.id, m.state)
		}
		if err := c.complete(ctx, m, commit, false); err != nil {
			return fmt.Errorf("%w: transactional id %q: the %s is decided, its markers not yet written: %v", ErrConcurrentTransactions, m.id, decision, err)
		}
		return nil
	default:
		return fmt.Errorf("%w: transactional id %q is in state %s", ErrInvalidTxnState, m.id, m.state)
	}
	next := m.txnFields
	next.state = kmsg.TransactionStatePrepareAbort
	if commit {
		next.state = kmsg.TransactionStatePrepareCommit
	}
	if err := c.persist(ctx, m.id, &next, true); err != nil {
		return err
	}
	m.txnFields = next
	if err := c.complete(ctx, m, commit, false); err != nil {
		c.s.o.logger.Warn("transaction decided, its markers not all written; they are written at the next check",
			"transactional_id", m.id, "producer_id", m.producerID, "commit", commit, "err", err)
	}
	return nil
}

// txnOffsetCommit is TxnOffsetCommit past its arguments' checks: under m's lock, so that the
// transaction cannot end between the check of its state and the write of the offsets.
func (c *txnCoordinator) txnOffsetCommit(ctx context.Context, gc *group.Coordinator, m *txnMetadata, req TxnOffsetCommitRequest,
	offsets map[TopicPartition]group.OffsetAndMetadata) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkProducerLocked(m, req.ProducerID, req.ProducerEpoch); err != nil {
		return err
	}
	switch m.state {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return fmt.Errorf("%w: transactional id %q is in state %s", ErrConcurrentTransactions, m.id, m.state)
	case kmsg.TransactionStateOngoing:
		if _, ok := m.partitions[offsetsPartition]; ok {
			break
		}
		fallthrough
	default:
		return fmt.Errorf("%w: the transaction of transactional id %q (state %s) does not hold %s-0; AddOffsetsToTxn first",
			ErrInvalidTxnState, m.id, m.state, consumerOffsetsTopic)
	}
	return gc.CommitTxnOffsets(ctx, group.TxnCommitRequest{Group: req.GroupID, MemberID: req.MemberID, InstanceID: req.GroupInstanceID,
		Generation: req.GenerationID, ProducerID: m.producerID, Offsets: offsets},
		func(ctx context.Context, recs []group.StorageRecord) error {
			rs := make([]*Record, len(recs))
			for i, r := range recs {
				rs[i] = &Record{Key: r.Key, Value: r.Value}
			}
			prod := &producerFields{producerID: m.producerID, producerEpoch: m.epoch,
				baseSequence: nextSequence(c.offsets, m.producerID, m.epoch), transactional: true}
			t, err := c.offsets.appendProducerRecords(ctx, rs, true, prod)
			if err != nil {
				return err
			}
			return c.offsets.awaitDurable(t)
		})
}

// nextSequence is the sequence producer pid's next batch at epoch takes in l: after its last
// one in that epoch, else 0 (Kafka's coordinator writes its offsets batches unchecked; here they
// pass the log's producer checks as any producer's do). The caller keeps other writers of pid's
// batches to l out (the transactional id's lock).
func nextSequence(l *Log, pid int64, epoch int16) int32 {
	e, ok := l.producers.m.Entry(pid)
	if !ok || e.Epoch != epoch {
		return 0
	}
	last := e.LastSeq()
	if last == producerstate.NoSequence {
		return 0
	}
	return producerstate.LastSequence(last, 1)
}
