package commitlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The store's transaction coordinator (Kafka's TransactionCoordinator with its
// TransactionStateManager and ProducerIdManager), and where its state lives.
//
// Its state is an internal log, not a state file: the folder __transaction_state-0, one
// partition of Kafka's internal topic, compacted, whose records are Kafka's own (key
// TxnMetadataKey version 0: the transactional.id; value TxnMetadataValue version 0: producer
// id and epoch, timeout, state, partitions, timestamps; both encoded with franz-go's kmsg). Why
// a log: every transition (a partition added, PrepareCommit, CompleteCommit, ...) is one append
// that shares the group commit's fsync with the appends around it, where a state file would be
// a write, an fsync, a rename and a directory fsync per transition; compaction keeps it to one
// record per transactional.id; and its bytes are the ones Kafka's tools read.
//
// The reader positions a transaction commits (Producer.CommitReaderPositions) go, as Kafka's
// TxnOffsetCommit does, into the internal log __consumer_offsets-0 as transactional batches of
// OffsetCommitKey (version 1: group = readerGroupPrefix and the reader name, topic, partition) and OffsetCommitValue
// (version 3) records; that log is one more partition of the transaction, and its marker decides
// them. They reach the reader's position file (commitlog-reader-<name>) when the transaction
// commits, before that log's COMMIT marker is written.
//
// Producer ids come in blocks of producerIDBlockSize (Kafka's ProducerIdManager); the end of the
// last block handed out is checkpointed in commitlog-producer-ids before any id of it is used.
//
// Commit: PrepareCommit, durable; the COMMIT markers to every data partition of the transaction;
// the reader positions to their files; the marker of __consumer_offsets-0; CompleteCommit. Abort
// likewise with ABORT markers and no positions. At open, a transaction found in PrepareCommit or
// PrepareAbort is completed, and one found Ongoing is aborted (its producer fenced by a new
// epoch), so that no partition keeps a transaction open across a restart.

// readerGroupPrefix begins the group field of the OffsetCommitKey of a reader position in a
// transaction, before the reader's name: __consumer_offsets-0 is compacted by key, and a consumer
// group of the reader's name must not share keys with it. Group ids with the prefix are refused
// (ErrInvalidGroupID).
const readerGroupPrefix = "\x00commitlog-reader\x00"

// Internal topic names, Kafka's: the coordinator's logs are their partition 0.
const (
	transactionStateTopic = "__transaction_state"
	consumerOffsetsTopic  = "__consumer_offsets"
)

// isInternalTopic reports whether name is one of the internal topics the store keeps for itself.
func isInternalTopic(name string) bool {
	return name == transactionStateTopic || name == consumerOffsetsTopic
}

// Transaction timeouts (Kafka's producer transaction.timeout.ms and broker
// transaction.max.timeout.ms and transaction.abort.timed.out.transaction.cleanup.interval.ms).
const (
	DefaultTransactionTimeout       = 60 * time.Second
	DefaultTransactionMaxTimeout    = 15 * time.Minute
	DefaultTransactionCheckInterval = 10 * time.Second
)

// producerIDBlockSize is how many producer ids one checkpoint reserves (Kafka's
// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const producerIDBlockSize = 1000

const producerIDsFileName = "commitlog-producer-ids"

// coordinatorEpoch is the epoch stamped on this store's markers: one coordinator, never moved.
const coordinatorEpoch int32 = 0

// txnMetadata is one transactional.id's state (Kafka's TransactionMetadata).
type txnMetadata struct {
	id string
	// mu serialises the transitions of this transactional.id; txnFields is guarded by it.
	mu sync.Mutex
	txnFields
}

// txnFields is what a transition of a transactional.id changes: each transition builds the next
// value, persists it, and only then installs it.
type txnFields struct {
	producerID int64
	epoch      int16
	timeout    time.Duration
	state      kmsg.TransactionState
	partitions map[topicPartition]struct{}
	start      time.Time // when the open transaction began
	// positions are the reader positions committed in the open transaction, by reader name,
	// topic and partition: what reaches the reader files when it commits.
	positions map[string]map[string]map[int32]int64
	// lastProducerID and lastEpoch are the producer id and epoch an InitProducerID that named
	// them (KIP-360) started from, so that its retry gets the same answer (Kafka's
	// lastProducerId and lastProducerEpoch); -1 when the last one named none, and after a
	// fencing. Memory only, as in Kafka: a restart forgets them.
	lastProducerID int64
	lastEpoch      int16
}

// txnCoordinator is the store's transaction coordinator. Safe for concurrent use.
type txnCoordinator struct {
	s *Store
	// openMu guards opened and the opening of the logs below (ensureOpen).
	openMu  sync.Mutex
	opened  bool
	log     *Log // __transaction_state-0
	offsets *Log // __consumer_offsets-0
	// stateID and offsetsID are the internal topics' IDs, kept in their folders'
	// partition.metadata as a topic's are (loadTopicIDs); set with the logs.
	stateID, offsetsID TopicID

	mu   sync.Mutex
	txns map[string]*txnMetadata
	// pids indexes txns by producer id (VerifyTxnPartition); changed with a txnMetadata's
	// producerID, under its mu and this one.
	pids    map[int64]*txnMetadata
	nextPID int64 // the next producer id to hand out
	pidEnd  int64 // the end of the block checkpointed

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	started  bool
}

// newCoordinator returns the store's coordinator with its logs not yet open: a store whose
// folder has no coordinator log opens them at its first NewProducer (ensureOpen), so that a store
// that never uses producers has no internal folders, files or descriptors.
func newCoordinator(s *Store) *txnCoordinator {
	return &txnCoordinator{s: s, txns: map[string]*txnMetadata{}, pids: map[int64]*txnMetadata{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// internalLogsExist reports whether the store's folder holds a coordinator log: then Open opens
// them at once, and recovers the transactions a crash interrupted.
func (c *txnCoordinator) internalLogsExist() bool {
	for _, t := range []string{transactionStateTopic, consumerOffsetsTopic} {
		if _, err := c.s.o.fs.Stat(filepath.Join(c.s.dir, partitionDirName(t, 0))); err == nil {
			return true
		}
	}
	return false
}

// ensureOpen opens the coordinator's logs and recovers the transactions they describe, once.
func (c *txnCoordinator) ensureOpen() error {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	if c.opened {
		return nil
	}
	o := c.s.o
	o.cleanerPoints = nil // the internal logs keep their cleaner points in memory
	var err error
	c.log, err = openLog(filepath.Join(c.s.dir, partitionDirName(transactionStateTopic, 0)),
		internalLogConfig(), o, false, false)
	if err != nil {
		return fmt.Errorf("commitlog: open the transaction state log: %w", err)
	}
	c.offsets, err = openLog(filepath.Join(c.s.dir, partitionDirName(consumerOffsetsTopic, 0)),
		internalLogConfig(), o, false, false)
	if err != nil {
		c.log.Close()
		return fmt.Errorf("commitlog: open the consumer offsets log: %w", err)
	}
	if err := c.loadTopicIDs(); err != nil {
		return errors.Join(err, c.log.Close(), c.offsets.Close())
	}
	if err := c.load(); err != nil {
		// What the failed load gathered goes: a later call loads again from the start.
		c.mu.Lock()
		c.txns, c.pids, c.nextPID, c.pidEnd = map[string]*txnMetadata{}, map[int64]*txnMetadata{}, 0, 0
		c.mu.Unlock()
		return errors.Join(err, c.log.Close(), c.offsets.Close())
	}
	c.opened = true
	return nil
}

// loadTopicIDs reads the internal topics' IDs from their folders' partition.metadata, as Open
// reads a topic's, and writes a new random ID where the file is missing (a folder made by a store
// older than topic IDs, or just now): the internal topics keep one ID across restarts, as Kafka's
// do. A file that cannot be read is an error naming it, and nothing is written.
func (c *txnCoordinator) loadTopicIDs() error {
	for _, in := range []struct {
		topic string
		id    *TopicID
	}{{transactionStateTopic, &c.stateID}, {consumerOffsetsTopic, &c.offsetsID}} {
		dirs := []string{filepath.Join(c.s.dir, partitionDirName(in.topic, 0))}
		had, err := readTopicIDs(c.s.o.fs, dirs)
		if err != nil {
			return fmt.Errorf("commitlog: internal topic %s: %w", in.topic, err)
		}
		id, ok := pickTopicID(had)
		if !ok {
			id = newTopicID()
			c.s.o.logger.Info("internal topic given a topic ID", "topic", in.topic, "topic_id", id.String())
		}
		if err := settleTopicID(c.s.o.fs, c.s.o.logger, in.topic, dirs, had, id); err != nil {
			return fmt.Errorf("commitlog: internal topic %s: %w", in.topic, err)
		}
		*in.id = id
	}
	return nil
}

// internalLogConfig is the configuration of the coordinator's logs: compacted, as Kafka's internal
// topics are (the last record of each transactional.id, and of each reader partition, survives),
// every append fsynced, segments of 100 MiB (Kafka's transaction.state.log.segment.bytes and
// offsets.topic.segment.bytes), and indexes preallocated to 1 MiB rather than 10: the logs are
// small.
func internalLogConfig() LogConfig {
	return LogConfig{CleanupPolicy: CleanupCompact, Sync: SyncAlways, SegmentBytes: 100 << 20, SegmentIndexBytes: 1 << 20}
}

// compactInternal cleans each of the coordinator's logs that is due (CompactionState.Due, by the
// same rules as the store's cleaner threads, which clean topics only), at every timeout check.
// A failure is logged; the next check tries again.
func (c *txnCoordinator) compactInternal(ctx context.Context) {
	if !c.isOpen() {
		return
	}
	for _, l := range []*Log{c.log, c.offsets} {
		if !l.CompactionState().Due {
			continue
		}
		if _, err := l.Compact(ctx); err != nil {
			c.s.o.logger.Warn("coordinator log not compacted; tried again at the next check", "log", l.Dir(), "err", err)
		}
	}
}

// isOpen reports whether ensureOpen has opened the logs.
func (c *txnCoordinator) isOpen() bool {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	return c.opened
}

// load reads the producer id checkpoint and replays the transaction state log, then finishes
// what a crash interrupted.
func (c *txnCoordinator) load() error {
	path := filepath.Join(c.s.dir, producerIDsFileName)
	b, err := checkpoint.Read(c.s.o.fs, path)
	if err == nil {
		n, perr := strconv.ParseInt(string(b), 10, 64)
		if perr != nil || n < 0 {
			err = fmt.Errorf("%w: %s holds %q", ErrCorrupt, path, b)
		} else {
			c.nextPID, c.pidEnd = n, n
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The ids in use are found below: in the state log and in every partition's producers.
		c.s.o.logger.Warn("producer id checkpoint unreadable; the next id follows the largest in use", "file", path, "err", err)
	}
	c.s.mu.RLock()
	for _, t := range c.s.topics {
		for _, p := range t.parts() {
			for _, ps := range p.log.Producers() {
				c.nextPID = max(c.nextPID, ps.ProducerID+1)
			}
		}
	}
	c.s.mu.RUnlock()
	for _, ps := range c.offsets.Producers() {
		c.nextPID = max(c.nextPID, ps.ProducerID+1)
	}
	for rec, err := range c.log.Scan(c.log.LogStartOffset()) {
		if err != nil {
			return fmt.Errorf("commitlog: read the transaction state log: %w", err)
		}
		var key kmsg.TxnMetadataKey
		if err := key.ReadFrom(rec.Key); err != nil {
			return fmt.Errorf("%w: transaction state record at %d: key: %w", ErrCorrupt, rec.Offset, err)
		}
		if rec.Value == nil {
			delete(c.txns, key.TransactionalID)
			continue
		}
		var val kmsg.TxnMetadataValue
		if err := val.ReadFrom(rec.Value); err != nil {
			return fmt.Errorf("%w: transaction state record at %d: value: %w", ErrCorrupt, rec.Offset, err)
		}
		m := &txnMetadata{id: key.TransactionalID, txnFields: txnFields{producerID: val.ProducerID, epoch: val.ProducerEpoch,
			timeout: time.Duration(val.TimeoutMillis) * time.Millisecond, state: val.State,
			partitions: map[topicPartition]struct{}{}, start: time.UnixMilli(val.StartTimestamp),
			lastProducerID: -1, lastEpoch: -1}}
		for _, t := range val.Topics {
			for _, p := range t.Partitions {
				m.partitions[topicPartition{topic: t.Topic, partition: p}] = struct{}{}
			}
		}
		c.txns[key.TransactionalID] = m
		// A lost checkpoint must not hand out an id in use.
		c.nextPID = max(c.nextPID, val.ProducerID+1)
	}
	c.mu.Lock() // VerifyTxnPartition reads the index without opening the logs
	for _, m := range c.txns {
		if m.producerID >= 0 {
			c.pids[m.producerID] = m
		}
	}
	c.mu.Unlock()
	ctx := context.Background()
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		m := c.txns[id]
		m.mu.Lock()
		var err error
		switch m.state {
		case kmsg.TransactionStatePrepareCommit:
			c.s.o.logger.Info("completing the commit of a transaction a restart interrupted", "transactional_id", id, "producer_id", m.producerID)
			err = c.complete(ctx, m, true, true)
		case kmsg.TransactionStatePrepareAbort:
			c.s.o.logger.Info("completing the abort of a transaction a restart interrupted", "transactional_id", id, "producer_id", m.producerID)
			err = c.complete(ctx, m, false, true)
		case kmsg.TransactionStateOngoing:
			c.s.o.logger.Info("aborting a transaction left open by a restart", "transactional_id", id, "producer_id", m.producerID)
			err = c.fenceAndAbort(ctx, m)
		}
		m.mu.Unlock()
		if err != nil {
			return fmt.Errorf("commitlog: recover transaction %q: %w", id, err)
		}
	}
	return nil
}

// start runs the timeout check every WithTransactionCheckInterval until close.
func (c *txnCoordinator) start() {
	c.started = true
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.s.o.txnCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.AbortTimedOut(context.Background())
				c.compactInternal(context.Background())
			}
		}
	}()
}

// close stops the timeout check, waiting for a check under way, and closes the coordinator's
// logs.
func (c *txnCoordinator) close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	if c.started {
		<-c.done
	}
	c.openMu.Lock()
	defer c.openMu.Unlock()
	if !c.opened {
		return nil
	}
	c.opened = false
	return errors.Join(c.log.Close(), c.offsets.Close())
}

// AbortTimedOut aborts the transactions open longer than their timeout at the store's clock, as
// Kafka's coordinator does every transaction.abort.timed.out.transaction.cleanup.interval.ms:
// each one's producer epoch is bumped, which fences the producer (its next call returns
// ErrProducerFenced), and ABORT markers end it in every partition it touched. It returns how
// many it aborted.
func (c *txnCoordinator) AbortTimedOut(ctx context.Context) int {
	if !c.isOpen() {
		return 0
	}
	now := c.s.o.now()
	c.mu.Lock()
	ms := slices.Collect(maps.Values(c.txns))
	c.mu.Unlock()
	n := 0
	for _, m := range ms {
		m.mu.Lock()
		switch {
		case m.state == kmsg.TransactionStateOngoing && now.Sub(m.start) > m.timeout:
			c.s.o.logger.Info("aborting a transaction past its timeout", "transactional_id", m.id, "producer_id", m.producerID,
				"epoch", m.epoch, "timeout", m.timeout)
			if err := c.fenceAndAbort(ctx, m); err != nil {
				c.s.o.logger.Warn("timed-out transaction not aborted; tried again at the next check", "transactional_id", m.id, "err", err)
			} else {
				n++
			}
		case m.state == kmsg.TransactionStatePrepareCommit || m.state == kmsg.TransactionStatePrepareAbort:
			// A commit or abort whose markers failed: finish it.
			if err := c.complete(ctx, m, m.state == kmsg.TransactionStatePrepareCommit, true); err != nil {
				c.s.o.logger.Warn("transaction not completed; tried again at the next check", "transactional_id", m.id, "err", err)
			}
		}
		m.mu.Unlock()
	}
	return n
}

// allocateProducerID returns a new producer id, checkpointing a new block when the current one
// is used up.
func (c *txnCoordinator) allocateProducerID() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nextPID >= c.pidEnd {
		end := c.nextPID + producerIDBlockSize
		if err := checkpoint.Write(c.s.o.fs, filepath.Join(c.s.dir, producerIDsFileName), []byte(strconv.FormatInt(end, 10))); err != nil {
			return 0, wrapIOErr("checkpoint producer ids", err)
		}
		c.pidEnd = end
	}
	id := c.nextPID
	c.nextPID++
	return id, nil
}

// initProducer is Kafka's InitProducerId for a transactional.id: the first call makes its
// producer id at epoch 0; each later one bumps the epoch, which fences every older instance,
// after finishing or aborting the transaction the older instance left (a prepared one is
// completed, an open one aborted). An epoch at its maximum takes a new producer id.
//
// expPID and expEpoch, when not -1, are the producer id and epoch the caller holds (KIP-360: a
// producer that bumps its own epoch to recover from an error): they must be m's current ones, or
// those a previous such call started from, whose answer is then given again unchanged (a retry
// of it); otherwise ErrProducerFenced and nothing changes (Kafka's
// prepareInitProducerIdTransit). A transactional id with no producer yet takes any.
func (c *txnCoordinator) initProducer(ctx context.Context, id string, timeout time.Duration, expPID int64, expEpoch int16) (int64, int16, error) {
	c.mu.Lock()
	m, ok := c.txns[id]
	if !ok {
		m = &txnMetadata{id: id, txnFields: txnFields{producerID: -1, epoch: -1, partitions: map[topicPartition]struct{}{},
			lastProducerID: -1, lastEpoch: -1}}
		c.txns[id] = m
	}
	c.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	expected := expPID >= 0
	if expected && m.producerID >= 0 {
		switch {
		case expPID == m.producerID && expEpoch == m.epoch:
			// The current producer: its epoch is bumped below.
		case m.lastEpoch >= 0 && expPID == m.lastProducerID && expEpoch == m.lastEpoch:
			return m.producerID, m.epoch, nil
		default:
			return 0, 0, fmt.Errorf("%w: transactional id %q: producer %d epoch %d, the coordinator has producer %d epoch %d",
				ErrProducerFenced, id, expPID, expEpoch, m.producerID, m.epoch)
		}
	}
	switch m.state {
	case kmsg.TransactionStatePrepareCommit:
		if err := c.complete(ctx, m, true, true); err != nil {
			return 0, 0, err
		}
	case kmsg.TransactionStatePrepareAbort:
		if err := c.complete(ctx, m, false, true); err != nil {
			return 0, 0, err
		}
	case kmsg.TransactionStateOngoing:
		if err := c.fenceAndAbort(ctx, m); err != nil {
			return 0, 0, err
		}
	}
	next := m.txnFields
	next.timeout = timeout
	if m.producerID < 0 || m.epoch >= math.MaxInt16-1 {
		pid, err := c.allocateProducerID()
		if err != nil {
			return 0, 0, err
		}
		next.producerID, next.epoch = pid, 0
	} else {
		next.epoch = m.epoch + 1
	}
	next.state = kmsg.TransactionStateEmpty
	next.partitions = map[topicPartition]struct{}{}
	next.positions = nil
	next.lastProducerID, next.lastEpoch = -1, -1
	if expected {
		next.lastProducerID, next.lastEpoch = expPID, expEpoch
	}
	if err := c.persist(ctx, m.id, &next, true); err != nil {
		return 0, 0, err
	}
	c.setFieldsLocked(m, next)
	return m.producerID, m.epoch, nil
}

// setFieldsLocked installs next as m's fields, keeping the index of producer ids up to date.
// Callers hold m.mu.
func (c *txnCoordinator) setFieldsLocked(m *txnMetadata, next txnFields) {
	if next.producerID != m.producerID {
		c.mu.Lock()
		if c.pids[m.producerID] == m {
			delete(c.pids, m.producerID)
		}
		c.pids[next.producerID] = m
		c.mu.Unlock()
	}
	m.txnFields = next
}

// checkEpochLocked returns ErrProducerFenced unless pid and epoch are m's current ones.
func checkEpochLocked(m *txnMetadata, pid int64, epoch int16) error {
	if m.producerID != pid || m.epoch != epoch {
		return fmt.Errorf("%w: transactional id %q: producer %d epoch %d, the coordinator has producer %d epoch %d",
			ErrProducerFenced, m.id, pid, epoch, m.producerID, m.epoch)
	}
	return nil
}

// addPartitions is Kafka's AddPartitionsToTxn: the transaction of m becomes Ongoing with tps
// among its partitions, durably, before the producer writes to them (so a restart knows every
// partition that may hold its records).
func (c *txnCoordinator) addPartitions(ctx context.Context, m *txnMetadata, pid int64, epoch int16, tps []topicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkEpochLocked(m, pid, epoch); err != nil {
		return err
	}
	switch m.state {
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort, kmsg.TransactionStateOngoing:
	default:
		return fmt.Errorf("%w: transactional id %q is in state %s", ErrInvalidTxnState, m.id, m.state)
	}
	return c.addPartitionsLocked(ctx, m, tps)
}

// addPartitionsLocked adds tps to m's transaction, which is Empty, complete or Ongoing: it
// becomes Ongoing with them, durably (a transaction that was not Ongoing starts now, with tps
// alone). Callers hold m.mu and have checked the producer.
func (c *txnCoordinator) addPartitionsLocked(ctx context.Context, m *txnMetadata, tps []topicPartition) error {
	missing := false
	for _, tp := range tps {
		if _, ok := m.partitions[tp]; !ok || m.state != kmsg.TransactionStateOngoing {
			missing = true
			break
		}
	}
	if !missing {
		return nil
	}
	next := m.txnFields
	next.partitions = maps.Clone(m.partitions)
	if m.state != kmsg.TransactionStateOngoing {
		next.partitions = map[topicPartition]struct{}{}
		next.start = c.s.o.now()
		next.positions = nil
	}
	for _, tp := range tps {
		next.partitions[tp] = struct{}{}
	}
	next.state = kmsg.TransactionStateOngoing
	if err := c.persist(ctx, m.id, &next, true); err != nil {
		return err
	}
	m.txnFields = next
	return nil
}

// addPositions records reader positions committed in m's open transaction, for its commit.
func (c *txnCoordinator) addPositions(m *txnMetadata, reader, topic string, positions map[int32]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.positions == nil {
		m.positions = map[string]map[string]map[int32]int64{}
	}
	if m.positions[reader] == nil {
		m.positions[reader] = map[string]map[int32]int64{}
	}
	if m.positions[reader][topic] == nil {
		m.positions[reader][topic] = map[int32]int64{}
	}
	maps.Copy(m.positions[reader][topic], positions)
}

// endTxn is Kafka's EndTxn: it commits (commit set) or aborts the open transaction of m. A
// producer that began no transaction, or wrote nothing in it, ends it with nothing to write.
func (c *txnCoordinator) endTxn(ctx context.Context, m *txnMetadata, pid int64, epoch int16, commit bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkEpochLocked(m, pid, epoch); err != nil {
		return err
	}
	switch m.state {
	case kmsg.TransactionStateOngoing:
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		return nil // nothing was added to the transaction
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		// A retry after a failure of the markers: finish what was decided.
		if (m.state == kmsg.TransactionStatePrepareCommit) != commit {
			return fmt.Errorf("%w: transactional id %q is in state %s", ErrInvalidTxnState, m.id, m.state)
		}
		return c.complete(ctx, m, commit, false)
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
	return c.complete(ctx, m, commit, false)
}

// fenceAndAbort bumps the epoch of m's producer (fencing the instance that left the transaction
// open) and aborts its transaction with the new epoch (Kafka's PrepareEpochFence).
func (c *txnCoordinator) fenceAndAbort(ctx context.Context, m *txnMetadata) error {
	next := m.txnFields
	next.state = kmsg.TransactionStatePrepareAbort
	// Always bumped, so the fenced instance's epoch is refused everywhere; initProducer (epochs
	// from MaxInt16-1 on) then takes a new producer id.
	if m.epoch < math.MaxInt16 {
		next.epoch = m.epoch + 1
	}
	// A retry of the InitProducerID that made the fenced epoch must not get the new one.
	next.lastProducerID, next.lastEpoch = -1, -1
	if err := c.persist(ctx, m.id, &next, true); err != nil {
		return err
	}
	m.txnFields = next
	return c.complete(ctx, m, false, false)
}

// complete writes the markers of m's prepared transaction to every partition it touched, the
// committed reader positions to their files before the __consumer_offsets-0 marker, the groups'
// transactional offsets to the group coordinator after it, and then CompleteCommit or
// CompleteAbort. recovering says that m's positions are not in memory (a restart): they are
// read back from __consumer_offsets-0. Callers hold m.mu.
func (c *txnCoordinator) complete(ctx context.Context, m *txnMetadata, commit, recovering bool) error {
	var offsetsLog bool
	for _, tp := range slices.SortedFunc(maps.Keys(m.partitions), compareTopicPartitions) {
		if tp.topic == consumerOffsetsTopic {
			offsetsLog = true
			continue
		}
		if err := c.writeMarker(ctx, tp, m, commit); err != nil {
			return err
		}
	}
	if offsetsLog {
		if commit {
			positions := m.positions
			if recovering || positions == nil {
				var err error
				if positions, err = c.pendingPositions(m.producerID); err != nil {
					return err
				}
			}
			if err := c.applyPositions(positions); err != nil {
				return err
			}
		}
		if _, err := c.offsets.AppendMarker(ctx, m.producerID, m.epoch, commit, coordinatorEpoch); err != nil {
			return fmt.Errorf("commitlog: marker to %s-0: %w", consumerOffsetsTopic, err)
		}
		// The groups' offsets of the transaction (TxnOffsetCommit) are decided at the marker, as
		// Kafka's are and as replayGroups decides them: none pending when the groups are not
		// loaded (they are loaded from the log, marker included).
		c.s.groups.CompleteTxnOffsets(m.producerID, commit)
	}
	next := m.txnFields
	next.state = kmsg.TransactionStateCompleteAbort
	if commit {
		next.state = kmsg.TransactionStateCompleteCommit
	}
	next.partitions, next.positions = map[topicPartition]struct{}{}, nil
	// Not awaited: were it lost, the open would complete the prepared transaction again, and
	// markers and positions written twice are the same.
	if err := c.persist(ctx, m.id, &next, false); err != nil {
		return err
	}
	m.txnFields = next
	return nil
}

// writeMarker writes the marker of m's transaction to partition tp. A partition whose topic was
// deleted since has nothing to end.
func (c *txnCoordinator) writeMarker(ctx context.Context, tp topicPartition, m *txnMetadata, commit bool) error {
	t, err := c.s.Topic(tp.topic)
	if errors.Is(err, ErrUnknownTopic) {
		return nil
	}
	if err != nil {
		return err
	}
	p, err := t.Partition(tp.partition)
	if err != nil {
		return nil
	}
	if _, err := p.AppendMarker(ctx, m.producerID, m.epoch, commit, coordinatorEpoch); err != nil {
		return fmt.Errorf("commitlog: transaction marker to topic %s partition %d: %w", tp.topic, tp.partition, err)
	}
	return nil
}

// persist appends m's state as a TxnMetadataValue record keyed by its transactional.id to the
// transaction state log, waiting for it to be durable when await is set.
func (c *txnCoordinator) persist(ctx context.Context, id string, m *txnFields, await bool) error {
	key := (&kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}).AppendTo(nil)
	val := kmsg.TxnMetadataValue{Version: 0, ProducerID: m.producerID, ProducerEpoch: m.epoch,
		TimeoutMillis: int32(min(m.timeout.Milliseconds(), math.MaxInt32)), State: m.state,
		LastUpdateTimestamp: c.s.o.now().UnixMilli(), StartTimestamp: m.start.UnixMilli()}
	byTopic := map[string][]int32{}
	for tp := range m.partitions {
		byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		ps := byTopic[t]
		slices.Sort(ps)
		val.Topics = append(val.Topics, kmsg.TxnMetadataValueTopic{Topic: t, Partitions: ps})
	}
	rec := &Record{Key: key, Value: val.AppendTo(nil)}
	t, err := c.log.appendRecords(ctx, []*Record{rec}, await)
	if err != nil {
		return fmt.Errorf("commitlog: write the state of transactional id %q: %w", id, err)
	}
	if await {
		return c.log.awaitDurable(t)
	}
	return nil
}

// appendOffsets writes the reader positions of one call of Producer.CommitReaderPositions to
// __consumer_offsets-0 as a transactional batch of the producer (Kafka's TxnOffsetCommit), with
// the sequence seq; its marker decides them.
func (c *txnCoordinator) appendOffsets(ctx context.Context, prod *producerFields, reader, topic string, positions map[int32]int64) error {
	now := c.s.o.now().UnixMilli()
	recs := make([]*Record, 0, len(positions))
	for _, p := range slices.Sorted(maps.Keys(positions)) {
		key := (&kmsg.OffsetCommitKey{Version: 1, Group: readerGroupPrefix + reader, Topic: topic, Partition: p}).AppendTo(nil)
		val := (&kmsg.OffsetCommitValue{Version: 3, Offset: positions[p], LeaderEpoch: -1, CommitTimestamp: now}).AppendTo(nil)
		recs = append(recs, &Record{Key: key, Value: val})
	}
	t, err := c.offsets.appendProducerRecords(ctx, recs, true, prod)
	if err != nil {
		return err
	}
	return c.offsets.awaitDurable(t)
}

// pendingPositions reads back from __consumer_offsets-0 the reader positions of producer pid's
// open transaction there: the records keyed under readerGroupPrefix of its batches from the
// first offset of that transaction on (the others are groups' offsets). None when it has no open
// transaction in that log (its marker was written, and the positions with it).
func (c *txnCoordinator) pendingPositions(pid int64) (map[string]map[string]map[int32]int64, error) {
	e, ok := c.offsets.producers.m.Entry(pid)
	if !ok || e.CurrentTxnFirstOffset < 0 {
		return nil, nil
	}
	out := map[string]map[string]map[int32]int64{}
	err := c.offsets.eachBatch(e.CurrentTxnFirstOffset, func(h recordbatch.Header, b []byte) error {
		if h.ProducerID != pid || h.Attributes.Control() || !h.Attributes.Transactional() {
			return nil
		}
		batch, err := recordbatch.Decode(b, recordbatch.Limits{MaxBatchSize: len(b), MaxDecompressedSize: c.offsets.conf().readDecompressLimit()})
		if err != nil {
			return fmt.Errorf("commitlog: the consumer offsets log at %d: %w", h.BaseOffset, err)
		}
		for r := range batch.Records() {
			var k kmsg.OffsetCommitKey
			var v kmsg.OffsetCommitValue
			if err := k.ReadFrom(r.Key); err != nil {
				return fmt.Errorf("%w: offset commit key at %d: %w", ErrCorrupt, h.BaseOffset, err)
			}
			// A group's offset (TxnOffsetCommit) is the group coordinator's, decided at the marker.
			reader, ok := strings.CutPrefix(k.Group, readerGroupPrefix)
			if !ok {
				continue
			}
			if err := v.ReadFrom(r.Value); err != nil {
				return fmt.Errorf("%w: offset commit value at %d: %w", ErrCorrupt, h.BaseOffset, err)
			}
			if out[reader] == nil {
				out[reader] = map[string]map[int32]int64{}
			}
			if out[reader][k.Topic] == nil {
				out[reader][k.Topic] = map[int32]int64{}
			}
			out[reader][k.Topic][k.Partition] = v.Offset
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commitlog: read back transactional reader positions: %w", err)
	}
	return out, nil
}

// applyPositions writes committed reader positions to the readers' position files, each with the
// leader epoch of the record before it as the log knows it.
func (c *txnCoordinator) applyPositions(positions map[string]map[string]map[int32]int64) error {
	for _, reader := range slices.Sorted(maps.Keys(positions)) {
		for _, topic := range slices.Sorted(maps.Keys(positions[reader])) {
			t, err := c.s.Topic(topic)
			if errors.Is(err, ErrUnknownTopic) {
				continue
			}
			if err != nil {
				return err
			}
			ps := positions[reader][topic]
			err = c.s.commitPositions(reader, t, true, func(mine map[int32]committedPosition) {
				for p, off := range ps {
					epoch := UndefinedEpoch
					if part, err := t.Partition(p); err == nil {
						epoch = part.log.epochOf(off - 1)
					}
					mine[p] = committedPosition{offset: off, leaderEpoch: epoch}
				}
			})
			if err != nil {
				return fmt.Errorf("commitlog: commit the positions of reader %q in topic %s: %w", reader, topic, err)
			}
		}
	}
	return nil
}

func compareTopicPartitions(a, b topicPartition) int {
	if a.topic != b.topic {
		if a.topic < b.topic {
			return -1
		}
		return 1
	}
	return int(a.partition) - int(b.partition)
}
