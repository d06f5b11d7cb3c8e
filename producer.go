package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/producerstate"
)

// ProducerConfig configures a producer (NewProducer). The zero value is an idempotent producer.
type ProducerConfig struct {
	// TransactionalID makes the producer transactional (Kafka's transactional.id): its appends go
	// in transactions (Begin, Commit, Abort), and a new producer with the same id fences every
	// older one, finishing or aborting the transaction the older one left. Names follow the
	// topic-name rule. Empty: an idempotent producer without transactions.
	TransactionalID string
	// TransactionTimeout is how long a transaction may stay open before the store aborts it
	// (Kafka's transaction.timeout.ms); 0 means DefaultTransactionTimeout, 60 s. At most the
	// store's WithTransactionMaxTimeout (15 min by default), else ErrInvalidConfig.
	TransactionTimeout time.Duration
}

// Producer appends records to a store's topics with Kafka's idempotence, and, given a
// TransactionalID, in transactions: Kafka's KafkaProducer with enable.idempotence (always on
// here) and acks=all.
//
// Every batch carries the producer's id and epoch and a sequence number per partition, so a
// partition writes a batch once: a batch it already holds (a retry) is answered with the
// original offsets, a gap is ErrOutOfOrderSequence, an older epoch ErrProducerFenced. When an
// append fails in a way that leaves unknown whether the partition took it (any error, here), an
// idempotent producer bumps its epoch before its next append, as Kafka's does (KIP-360), so
// that a sequence is never reused for other records; a transactional producer must Abort.
//
// A transactional producer: Begin, Append to any partitions of any topics of the store,
// CommitReaderPositions to make a named reader's positions part of the transaction
// (consume-transform-produce), then Commit or Abort. Until Commit, ReadCommitted readers see
// none of its records; after Abort, never. A Producer is safe for concurrent use; its calls are
// serialised.
type Producer struct {
	s   *Store
	cfg ProducerConfig
	txn *txnMetadata // the coordinator's state of TransactionalID; nil for an idempotent producer

	mu         sync.Mutex
	producerID int64
	epoch      int16
	// seqs is the next sequence per partition in the current epoch.
	seqs map[topicPartition]int32
	// inTxn says Begin was called and neither Commit nor Abort since; added the partitions
	// added to the coordinator's transaction.
	inTxn bool
	added map[topicPartition]bool
	// failed is the error of an append in the open transaction: it can only be aborted.
	failed error
	// fatal is set once the producer is fenced: every later call returns it.
	fatal  error
	closed bool
}

// NewProducer returns a producer of the store (Kafka's InitProducerId): a new producer id at
// epoch 0 for an idempotent producer; for a transactional one, the id its TransactionalID holds
// with its epoch bumped (a first use makes one at epoch 0), fencing every older producer of that
// id after completing a transaction it had prepared and aborting one it left open.
//
// ErrInvalidTopicName for a TransactionalID that breaks the naming rule, ErrInvalidConfig for a
// timeout out of range, ErrClosed after Close, ctx's error when it is done first.
func (s *Store) NewProducer(ctx context.Context, cfg ProducerConfig) (*Producer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	if cfg.TransactionTimeout == 0 {
		cfg.TransactionTimeout = DefaultTransactionTimeout
	}
	if cfg.TransactionTimeout < time.Millisecond || cfg.TransactionTimeout > s.o.transactionTimeout {
		return nil, fmt.Errorf("%w: transaction.timeout.ms %d outside [1, %d] (transaction.max.timeout.ms)", ErrInvalidConfig,
			cfg.TransactionTimeout.Milliseconds(), s.o.transactionTimeout.Milliseconds())
	}
	if err := s.txn.ensureOpen(); err != nil {
		return nil, err
	}
	p := &Producer{s: s, cfg: cfg, seqs: map[topicPartition]int32{}, added: map[topicPartition]bool{}}
	if cfg.TransactionalID == "" {
		pid, err := s.txn.allocateProducerID()
		if err != nil {
			return nil, err
		}
		p.producerID = pid
		return p, nil
	}
	if why := validName(cfg.TransactionalID); why != "" {
		return nil, fmt.Errorf("%w: transactional id %q: %s", ErrInvalidTopicName, cfg.TransactionalID, why)
	}
	pid, epoch, err := s.txn.initProducer(ctx, cfg.TransactionalID, cfg.TransactionTimeout, -1, -1)
	if err != nil {
		return nil, err
	}
	p.producerID, p.epoch = pid, epoch
	s.txn.mu.Lock()
	p.txn = s.txn.txns[cfg.TransactionalID]
	s.txn.mu.Unlock()
	return p, nil
}

// ID returns the producer id and epoch the producer writes with now.
func (p *Producer) ID() (producerID int64, epoch int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producerID, p.epoch
}

// check returns the error that stops every call: ErrClosed, or the fencing.
func (p *Producer) check() error {
	switch {
	case p.closed:
		return ErrClosed
	case p.fatal != nil:
		return p.fatal
	}
	return nil
}

// Append appends recs to topic, routed to partitions by the topic's partitioner as Topic.Append
// routes them, one batch per partition, each with the producer's id, epoch and next sequence
// there, and returns once every batch is acknowledged by all in-sync replicas (acks=all). It
// sets each record's Topic, Partition, Offset and Timestamp. A transactional producer must have
// called Begin: the records are part of the transaction.
//
// Errors as for Topic.Append, and: ErrInvalidTxnState for a transactional producer outside a
// transaction; ErrProducerFenced once a newer producer of the TransactionalID exists or the
// transaction timed out (the producer is then done: Close it); ErrOutOfOrderSequence should a
// partition have lost its sequence state. After an error an idempotent producer starts a new
// epoch; a transactional one can only Abort.
func (p *Producer) Append(ctx context.Context, topic string, recs ...*Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.check(); err != nil {
		return err
	}
	if p.txn != nil && !p.inTxn {
		return fmt.Errorf("%w: Append outside a transaction (call Begin)", ErrInvalidTxnState)
	}
	if p.failed != nil {
		return fmt.Errorf("%w: an append of this transaction failed; Abort it: %w", ErrInvalidTxnState, p.failed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := p.s.Topic(topic)
	if err != nil {
		return err
	}
	if err := t.checkRecords(recs); err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	var one [1]partitionRecords // the usual single group, kept off the heap
	groups, err := t.route(one[:0], recs)
	if err != nil {
		return err
	}
	if p.txn != nil {
		var tps []topicPartition
		for _, g := range groups {
			if tp := (topicPartition{topic: topic, partition: g.id}); !p.added[tp] {
				tps = append(tps, tp)
			}
		}
		if len(tps) > 0 {
			if err := p.s.txn.addPartitions(ctx, p.txn, p.producerID, p.epoch, tps); err != nil {
				return p.failedWith(err)
			}
			for _, tp := range tps {
				p.added[tp] = true
			}
		}
	}
	var errs []error
	for _, pg := range groups {
		id, g := pg.id, pg.recs
		part := t.parts()[id]
		tp := topicPartition{topic: topic, partition: id}
		prod := &producerFields{producerID: p.producerID, producerEpoch: p.epoch, baseSequence: p.seqs[tp], transactional: p.txn != nil}
		if err := part.appendProducer(ctx, prod, g); err != nil {
			errs = append(errs, fmt.Errorf("topic %s partition %d: %w", topic, id, err))
			continue
		}
		p.seqs[tp] = producerstate.LastSequence(prod.baseSequence, int32(len(g)))
	}
	if err := errors.Join(errs...); err != nil {
		return p.failedWith(err)
	}
	return nil
}

// failedWith records what an append's failure means for the producer and returns err: fenced,
// the producer is done; else a transactional producer must abort, and an idempotent one starts
// a new epoch, since a partition may or may not hold what failed (KIP-360's epoch bump).
func (p *Producer) failedWith(err error) error {
	if errors.Is(err, ErrProducerFenced) {
		p.fatal = err
		return err
	}
	if p.txn != nil {
		p.failed = err
		return err
	}
	p.bumpEpoch()
	return err
}

// bumpEpoch starts the idempotent producer's next epoch, its sequences from 0; past the largest
// epoch it takes a new producer id.
func (p *Producer) bumpEpoch() {
	clear(p.seqs)
	if p.epoch < math.MaxInt16-1 {
		p.epoch++
		return
	}
	if pid, err := p.s.txn.allocateProducerID(); err == nil {
		p.producerID, p.epoch = pid, 0
	}
}

// Begin starts a transaction (Kafka's beginTransaction): the appends and reader positions until
// Commit or Abort are its. ErrInvalidTxnState for an idempotent producer or inside a
// transaction; ErrProducerFenced once fenced; ErrClosed after Close.
func (p *Producer) Begin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.check(); err != nil {
		return err
	}
	if p.txn == nil {
		return fmt.Errorf("%w: a producer without a TransactionalID has no transactions", ErrInvalidTxnState)
	}
	if p.inTxn {
		return fmt.Errorf("%w: a transaction is open already", ErrInvalidTxnState)
	}
	p.inTxn, p.failed = true, nil
	clear(p.added)
	return nil
}

// CommitReaderPositions makes the named reader's positions in topic (the offset of the next
// record to read, by partition) part of the open transaction, as Kafka's sendOffsetsToTransaction
// does for a consumer group: they reach the reader's committed positions (Store.
// CommittedPositions, and a reader opened with that name) when the transaction commits, and
// never if it aborts. Consume-transform-produce is then exactly once: the records written and the
// positions read advance together.
//
// ErrInvalidReaderName for a bad name, ErrUnknownTopic for a topic or partition the store lacks,
// ErrInvalidConfig for a negative offset, ErrInvalidTxnState outside a transaction, and the
// errors of Append.
func (p *Producer) CommitReaderPositions(ctx context.Context, reader, topic string, positions map[int32]int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.check(); err != nil {
		return err
	}
	if p.txn == nil || !p.inTxn {
		return fmt.Errorf("%w: CommitReaderPositions outside a transaction", ErrInvalidTxnState)
	}
	if p.failed != nil {
		return fmt.Errorf("%w: an append of this transaction failed; Abort it: %w", ErrInvalidTxnState, p.failed)
	}
	if err := checkReaderName(reader); err != nil {
		return err
	}
	t, err := p.s.Topic(topic)
	if err != nil {
		return err
	}
	for id, off := range positions {
		if _, err := t.Partition(id); err != nil {
			return err
		}
		if off < 0 {
			return fmt.Errorf("%w: position %d of partition %d", ErrInvalidConfig, off, id)
		}
	}
	if len(positions) == 0 {
		return nil
	}
	tp := topicPartition{topic: consumerOffsetsTopic, partition: 0}
	if !p.added[tp] {
		if err := p.s.txn.addPartitions(ctx, p.txn, p.producerID, p.epoch, []topicPartition{tp}); err != nil {
			return p.failedWith(err)
		}
		p.added[tp] = true
	}
	prod := &producerFields{producerID: p.producerID, producerEpoch: p.epoch, baseSequence: p.seqs[tp], transactional: true}
	if err := p.s.txn.appendOffsets(ctx, prod, reader, topic, positions); err != nil {
		return p.failedWith(err)
	}
	p.seqs[tp] = producerstate.LastSequence(prod.baseSequence, int32(len(positions)))
	p.s.txn.addPositions(p.txn, reader, topic, positions)
	return nil
}

// Commit commits the open transaction (Kafka's commitTransaction): the coordinator records the
// decision durably (PrepareCommit), writes a COMMIT marker to every partition the transaction
// wrote to, commits the reader positions it holds, and returns once all of that is done. A
// failure after the decision (a marker that could not be written) returns the error; the
// decision stands and the store completes it (at its next timeout check, or its next open), and
// Commit may be called again to complete it now.
//
// ErrInvalidTxnState with no transaction open or after a failed append (Abort instead);
// ErrProducerFenced once fenced (the transaction was aborted by the coordinator, or a newer
// producer of the id took over).
func (p *Producer) Commit(ctx context.Context) error { return p.end(ctx, true) }

// Abort aborts the open transaction (Kafka's abortTransaction): ABORT markers go to every
// partition it wrote to, after which ReadCommitted readers skip its records, and its reader
// positions are dropped. Errors as for Commit, except that Abort is the way out of a failed
// append.
func (p *Producer) Abort(ctx context.Context) error { return p.end(ctx, false) }

func (p *Producer) end(ctx context.Context, commit bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.check(); err != nil {
		return err
	}
	if p.txn == nil || !p.inTxn {
		return fmt.Errorf("%w: no transaction is open", ErrInvalidTxnState)
	}
	if commit && p.failed != nil {
		return fmt.Errorf("%w: an append of this transaction failed; Abort it: %w", ErrInvalidTxnState, p.failed)
	}
	if err := p.s.txn.endTxn(ctx, p.txn, p.producerID, p.epoch, commit); err != nil {
		if errors.Is(err, ErrProducerFenced) {
			p.fatal = err
		}
		return err
	}
	p.inTxn, p.failed = false, nil
	clear(p.added)
	return nil
}

// Close releases the producer. An open transaction is left to the coordinator, which aborts it
// when it times out or when a new producer of the same TransactionalID starts (Kafka's close
// does not abort either). Later calls return ErrClosed; Close itself returns nil again.
func (p *Producer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

// partitionRecords is the records of one call that go to partition id, in call order.
type partitionRecords struct {
	id   int32
	recs []*Record
}

// route appends to dst the records of recs grouped by the partition the topic's partitioner
// picks, one group per partition in ascending order, each in call order. A topic of one
// partition whose partitioner hashes keys (which can only pick 0) gets recs itself as its one
// group, without a copy.
func (t *Topic) route(dst []partitionRecords, recs []*Record) ([]partitionRecords, error) {
	part := *t.partitioner.Load()
	n := t.PartitionCount()
	if n == 1 && hashesKeys(part) {
		return append(dst, partitionRecords{id: 0, recs: recs}), nil
	}
	out := map[int32][]*Record{}
	for _, r := range recs {
		p := part.Partition(r, n)
		if p < 0 || p >= n {
			return nil, fmt.Errorf("%w: partitioner chose partition %d of topic %s, which has %d", ErrUnknownTopic, p, t.name, n)
		}
		out[p] = append(out[p], r)
	}
	for _, id := range slices.Sorted(maps.Keys(out)) {
		dst = append(dst, partitionRecords{id: id, recs: out[id]})
	}
	return dst, nil
}

// AbortTimedOutTransactions aborts now every transaction open longer than its producer's
// TransactionTimeout at the store's clock (WithClock), as the store does by itself every
// WithTransactionCheckInterval; each such producer is fenced (ErrProducerFenced). It returns how
// many it aborted; one whose markers could not be written is logged, not counted, and tried again
// at the next check. 0 before the store's first NewProducer (no coordinator log is open).
func (s *Store) AbortTimedOutTransactions(ctx context.Context) int { return s.txn.AbortTimedOut(ctx) }
