package producerstate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// The errors of a check. Each is Kafka's error of the same name.
var (
	// ErrOutOfOrderSequence is Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER: a batch's first sequence does
	// not follow the last one the producer wrote to the partition.
	ErrOutOfOrderSequence = errors.New("commitlog: out of order sequence number")
	// ErrProducerFenced is Kafka's INVALID_PRODUCER_EPOCH / PRODUCER_FENCED: a batch or marker of
	// an epoch below the producer's current one; a newer instance of the producer fenced it.
	ErrProducerFenced = errors.New("commitlog: producer fenced by a newer epoch")
	// ErrInvalidTxnState is Kafka's INVALID_TXN_STATE: a non-transactional batch from a producer
	// with an open transaction, or a transactional call out of turn.
	ErrInvalidTxnState = errors.New("commitlog: invalid transaction state")
	// ErrCoordinatorFenced is Kafka's TRANSACTION_COORDINATOR_FENCED: a marker from a coordinator
	// epoch below the last one the partition saw for the producer.
	ErrCoordinatorFenced = errors.New("commitlog: transaction coordinator fenced")
)

// NumBatchesToRetain is how many of a producer's last batches the partition remembers for
// duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN, which is why a Kafka
// producer keeps at most five requests in flight).
const NumBatchesToRetain = 5

// NoSequence, NoProducerEpoch and NoOffset are Kafka's "none" values (RecordBatch.NO_SEQUENCE,
// NO_PRODUCER_EPOCH, and -1 for an absent offset).
const (
	NoSequence      int32 = -1
	NoProducerEpoch int16 = -1
	NoOffset        int64 = -1
)

// BatchMetadata is one remembered batch of a producer: its sequence range, its offsets, its max
// timestamp (ms). Kafka's BatchMetadata.
type BatchMetadata struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64
}

// Entry is a producer's state in one partition (Kafka's ProducerStateEntry).
type Entry struct {
	ProducerID int64
	Epoch      int16
	// Batches are the last batches written in Epoch, oldest first, at most NumBatchesToRetain.
	Batches          []BatchMetadata
	CoordinatorEpoch int32
	// LastTimestamp is the max timestamp (ms) of the producer's last batch or marker: its
	// expiration counts from it.
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the producer's open transaction, NoOffset
	// when none is open.
	CurrentTxnFirstOffset int64
}

// LastSeq returns the last sequence the producer wrote, NoSequence when none is remembered.
func (e *Entry) LastSeq() int32 {
	if len(e.Batches) == 0 {
		return NoSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// clone returns a copy of e that shares nothing with it.
func (e *Entry) clone() *Entry {
	c := *e
	c.Batches = slices.Clone(e.Batches)
	return &c
}

// Batch is a data batch as the producer state reads it: the header fields of a RecordBatch with
// its offsets assigned.
type Batch struct {
	ProducerID    int64
	Epoch         int16
	FirstSeq      int32 // the batch's BaseSequence
	LastSeq       int32 // BaseSequence + LastOffsetDelta, wrapping past math.MaxInt32
	FirstOffset   int64
	LastOffset    int64
	MaxTimestamp  int64
	Transactional bool
}

// Idempotent reports whether the batch carries a producer id, and so producer state.
func (b *Batch) Idempotent() bool { return b.ProducerID >= 0 }

// Marker is a transaction marker (a control batch holding one COMMIT or ABORT record) at Offset.
type Marker struct {
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	Offset           int64
	Timestamp        int64
}

// CompletedTxn is a transaction a marker ended: its producer, its first offset in the partition,
// the marker's offset (LastOffset), and whether it was aborted (Kafka's CompletedTxn).
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// Manager is a partition's producer state. The zero value is not ready: use NewManager.
type Manager struct {
	mu        sync.Mutex
	producers map[int64]*Entry
	// ongoing are the open transactions, by first offset; unreplicated the completed ones whose
	// marker the high watermark has not passed yet (Kafka's unreplicatedTxns).
	ongoing      []txnStart
	unreplicated []CompletedTxn
	// firstUndecided mirrors ongoing[0].firstOffset (NoOffset when none), readable without mu.
	firstUndecided atomic.Int64
	// mapEnd is the offset after the last batch the state covers (Kafka's lastMapOffset).
	mapEnd int64
}

type txnStart struct {
	firstOffset int64
	producerID  int64
}

// NewManager returns an empty state covering offsets below start.
func NewManager(start int64) *Manager {
	m := &Manager{producers: map[int64]*Entry{}, mapEnd: start}
	m.firstUndecided.Store(NoOffset)
	return m
}

// MapEndOffset returns the offset after the last batch the state has seen.
func (m *Manager) MapEndOffset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mapEnd
}

// Len returns the number of producers held.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.producers)
}

// Entry returns a copy of the producer's entry.
func (m *Manager) Entry(producerID int64) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.producers[producerID]
	if !ok {
		return Entry{}, false
	}
	return *e.clone(), true
}

// FindDuplicate returns the remembered batch of b's producer with b's epoch and sequence range,
// if there is one: b is a retry of it (Kafka's ProducerStateEntry.findDuplicateBatch).
func (m *Manager) FindDuplicate(b Batch) (BatchMetadata, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.producers[b.ProducerID]
	if !ok || e.Epoch != b.Epoch {
		return BatchMetadata{}, false
	}
	for _, bm := range e.Batches {
		if bm.FirstSeq == b.FirstSeq && bm.LastSeq == b.LastSeq {
			return bm, true
		}
	}
	return BatchMetadata{}, false
}

// Check applies Kafka's checks of a client's batch (see the package doc) against the state,
// changing nothing: nil, or an error wrapping ErrProducerFenced, ErrOutOfOrderSequence or
// ErrInvalidTxnState. Call FindDuplicate first: a duplicate fails the sequence check.
func (m *Manager) Check(b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked(b, m.producers[b.ProducerID])
}

func (m *Manager) checkLocked(b Batch, e *Entry) error {
	if e == nil {
		// Unknown producer: any epoch and any sequence (KIP-360).
		return nil
	}
	if b.Epoch < e.Epoch {
		return fmt.Errorf("%w: producer %d epoch %d, the partition has seen epoch %d", ErrProducerFenced, b.ProducerID, b.Epoch, e.Epoch)
	}
	if b.Epoch != e.Epoch {
		if b.FirstSeq != 0 && e.Epoch != NoProducerEpoch {
			return fmt.Errorf("%w: producer %d's new epoch %d starts at sequence %d, not 0", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq)
		}
	} else if last := e.LastSeq(); e.Epoch != NoProducerEpoch && !inSequence(last, b.FirstSeq) {
		// With no batch remembered in the epoch (the producer is known from a marker, or from a
		// snapshot entry without a batch), last is NoSequence and the batch must start at 0, as
		// in Kafka's checkSequence; only a producer without an epoch takes any sequence.
		return fmt.Errorf("%w: producer %d epoch %d: sequence %d after %d (expected %d)", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq, last, nextSeq(last))
	}
	if !b.Transactional && e.CurrentTxnFirstOffset != NoOffset {
		return fmt.Errorf("%w: producer %d wrote a non-transactional batch while its transaction from offset %d is open", ErrInvalidTxnState, b.ProducerID, e.CurrentTxnFirstOffset)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return next == nextSeq(last)
}

func nextSeq(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}

// LastSequence returns the last sequence of a batch that starts at first and holds
// lastOffsetDelta+1 records, wrapping past math.MaxInt32 as Kafka's sequences do.
func LastSequence(first int32, lastOffsetDelta int32) int32 {
	if first < 0 {
		return NoSequence
	}
	n := int64(first) + int64(lastOffsetDelta)
	if n > math.MaxInt32 {
		n -= math.MaxInt32 + 1
	}
	return int32(n)
}

// Update applies b, written at its offsets, to its producer's entry (unchecked: a follower's
// and the recovery's path; the leader calls Check first). It returns a function that undoes the
// change while nothing else changed the state since, for a write that failed after Update.
func (m *Manager) Update(b Batch) (undo func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, had := m.producers[b.ProducerID]
	prevEnd := m.mapEnd
	var prevCopy *Entry
	if had {
		prevCopy = prev.clone()
	}
	startedTxn := m.updateLocked(b)
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if had {
			m.producers[b.ProducerID] = prevCopy
		} else {
			delete(m.producers, b.ProducerID)
		}
		if startedTxn {
			m.removeOngoing(b.ProducerID)
		}
		m.mapEnd = prevEnd
	}
}

// Apply applies b as Update does, without keeping what an undo needs: for a batch whose write
// cannot fail after it (a write of data batches only) and for the recovery's replay.
func (m *Manager) Apply(b Batch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updateLocked(b)
}

// updateLocked applies b and reports whether it opened a transaction.
func (m *Manager) updateLocked(b Batch) bool {
	m.mapEnd = max(m.mapEnd, b.LastOffset+1)
	e, ok := m.producers[b.ProducerID]
	if !ok {
		e = &Entry{ProducerID: b.ProducerID, Epoch: b.Epoch, CoordinatorEpoch: -1, CurrentTxnFirstOffset: NoOffset}
		m.producers[b.ProducerID] = e
	}
	if e.Epoch != b.Epoch {
		e.Epoch = b.Epoch
		e.Batches = e.Batches[:0]
	}
	if b.FirstSeq != NoSequence {
		if len(e.Batches) == NumBatchesToRetain {
			copy(e.Batches, e.Batches[1:])
			e.Batches = e.Batches[:NumBatchesToRetain-1]
		}
		e.Batches = append(e.Batches, BatchMetadata{FirstSeq: b.FirstSeq, LastSeq: b.LastSeq,
			FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Timestamp: b.MaxTimestamp})
	}
	e.LastTimestamp = b.MaxTimestamp
	if b.Transactional && e.CurrentTxnFirstOffset == NoOffset {
		e.CurrentTxnFirstOffset = b.FirstOffset
		m.addOngoing(b.FirstOffset, b.ProducerID)
		return true
	}
	return false
}

// CheckMarker applies Kafka's checks of a transaction marker from the coordinator, changing
// nothing: ErrProducerFenced for an older producer epoch, ErrCoordinatorFenced for an older
// coordinator epoch.
func (m *Manager) CheckMarker(mk Marker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.producers[mk.ProducerID]
	if !ok {
		return nil
	}
	if mk.Epoch < e.Epoch {
		return fmt.Errorf("%w: marker of producer %d epoch %d, the partition has seen epoch %d", ErrProducerFenced, mk.ProducerID, mk.Epoch, e.Epoch)
	}
	if mk.CoordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, the partition has seen %d", ErrCoordinatorFenced, mk.ProducerID, mk.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// CompleteTxn applies a marker written at mk.Offset (unchecked; call CheckMarker first on the
// leader): the producer's open transaction, if any, ends there. It returns the completed
// transaction (a marker with no open transaction completes an empty one that starts at the
// marker, as Kafka's appendEndTxnMarker does) and the last stable offset to record with it in
// the transaction index: the first offset of the next open transaction, else the marker's offset
// plus one (Kafka's lastStableOffset(completedTxn)).
func (m *Manager) CompleteTxn(mk Marker) (CompletedTxn, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.completeTxnLocked(mk)
}

func (m *Manager) completeTxnLocked(mk Marker) (CompletedTxn, int64) {
	m.mapEnd = max(m.mapEnd, mk.Offset+1)
	e, ok := m.producers[mk.ProducerID]
	if !ok {
		e = &Entry{ProducerID: mk.ProducerID, Epoch: mk.Epoch, CurrentTxnFirstOffset: NoOffset}
		m.producers[mk.ProducerID] = e
	}
	if mk.Epoch != e.Epoch {
		e.Epoch = mk.Epoch
		e.Batches = e.Batches[:0]
	}
	first := e.CurrentTxnFirstOffset
	if first == NoOffset {
		first = mk.Offset
	} else {
		m.removeOngoing(mk.ProducerID)
	}
	e.CurrentTxnFirstOffset = NoOffset
	e.CoordinatorEpoch = mk.CoordinatorEpoch
	e.LastTimestamp = mk.Timestamp
	c := CompletedTxn{ProducerID: mk.ProducerID, FirstOffset: first, LastOffset: mk.Offset, Aborted: !mk.Commit}
	lso := mk.Offset + 1
	if len(m.ongoing) > 0 {
		lso = m.ongoing[0].firstOffset
	}
	m.unreplicated = append(m.unreplicated, c)
	return c, lso
}

func (m *Manager) addOngoing(first, pid int64) {
	i, _ := slices.BinarySearchFunc(m.ongoing, first, func(t txnStart, off int64) int {
		switch {
		case t.firstOffset < off:
			return -1
		case t.firstOffset > off:
			return 1
		}
		return 0
	})
	m.ongoing = slices.Insert(m.ongoing, i, txnStart{firstOffset: first, producerID: pid})
	m.firstUndecided.Store(m.ongoing[0].firstOffset)
}

func (m *Manager) removeOngoing(pid int64) {
	m.ongoing = slices.DeleteFunc(m.ongoing, func(t txnStart) bool { return t.producerID == pid })
	if len(m.ongoing) == 0 {
		m.firstUndecided.Store(NoOffset)
	} else {
		m.firstUndecided.Store(m.ongoing[0].firstOffset)
	}
}

// FirstUndecidedOffset returns the first offset of the oldest open transaction, NoOffset when
// none is open (Kafka's firstUndecidedOffset). It takes no lock.
func (m *Manager) FirstUndecidedOffset() int64 { return m.firstUndecided.Load() }

// FirstUnstableOffset returns the first offset that is not yet stable below a high watermark
// hw: the oldest open transaction's first offset, or of a completed one whose marker is at or
// past hw (Kafka's firstUnstableOffset); NoOffset when every offset below hw is stable.
// Completed transactions whose marker is below hw are forgotten (Kafka's
// onHighWatermarkUpdated).
func (m *Manager) FirstUnstableOffset(hw int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.unreplicated) > 0 {
		m.unreplicated = slices.DeleteFunc(m.unreplicated, func(c CompletedTxn) bool { return c.LastOffset < hw })
	}
	// The open transactions are read under the same lock as the completed ones: read before
	// it, a Reset or Load in between would pair an old open transaction with the new state.
	first := NoOffset
	if len(m.ongoing) > 0 {
		first = m.ongoing[0].firstOffset
	}
	for _, c := range m.unreplicated {
		if first == NoOffset || c.FirstOffset < first {
			first = c.FirstOffset
		}
	}
	return first
}

// OngoingTxns returns the open transactions' producers and first offsets, oldest first.
func (m *Manager) OngoingTxns() (producerIDs, firstOffsets []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.ongoing {
		producerIDs = append(producerIDs, t.producerID)
		firstOffsets = append(firstOffsets, t.firstOffset)
	}
	return producerIDs, firstOffsets
}

// Expire removes the producers with no open transaction whose last timestamp is at least
// expirationMs before nowMs (Kafka's removeExpiredProducers with producer.id.expiration.ms), and
// returns how many it removed.
func (m *Manager) Expire(nowMs, expirationMs int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for pid, e := range m.producers {
		if expired(e, nowMs, expirationMs) {
			delete(m.producers, pid)
			n++
		}
	}
	return n
}

func expired(e *Entry, nowMs, expirationMs int64) bool {
	return e.CurrentTxnFirstOffset == NoOffset && nowMs-e.LastTimestamp >= expirationMs
}

// Entries returns a copy of every producer's entry, ordered by producer id.
func (m *Manager) Entries() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.producers))
	for _, e := range m.producers {
		out = append(out, *e.clone())
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}

// Reset empties the state, which then covers offsets below start (Kafka's
// truncateFullyAndStartAt, and the first step of a reload from a snapshot).
func (m *Manager) Reset(start int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.producers = map[int64]*Entry{}
	m.ongoing, m.unreplicated = nil, nil
	m.firstUndecided.Store(NoOffset)
	m.mapEnd = start
}

// Load replaces the state by a snapshot's entries taken at offset end, leaving out the producers
// expired at nowMs (Kafka's loadFromSnapshot); open transactions are restored from the entries'
// CurrentTxnFirstOffset.
func (m *Manager) Load(entries []Entry, end, nowMs, expirationMs int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.producers = make(map[int64]*Entry, len(entries))
	m.ongoing, m.unreplicated = nil, nil
	m.firstUndecided.Store(NoOffset)
	m.mapEnd = end
	for i := range entries {
		e := entries[i].clone()
		if expired(e, nowMs, expirationMs) {
			continue
		}
		m.producers[e.ProducerID] = e
		if e.CurrentTxnFirstOffset != NoOffset {
			m.addOngoing(e.CurrentTxnFirstOffset, e.ProducerID)
		}
	}
}

// TruncateHead drops what the state holds of offsets below logStart: producers whose last batch
// is below it (Kafka's evictUnretainedProducers when the log start offset moves; a producer with
// an open transaction is kept) and completed transactions.
func (m *Manager) TruncateHead(logStart int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for pid, e := range m.producers {
		if e.CurrentTxnFirstOffset != NoOffset {
			continue
		}
		last := NoOffset
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1].LastOffset
		}
		if last < logStart {
			delete(m.producers, pid)
		}
	}
	m.unreplicated = slices.DeleteFunc(m.unreplicated, func(c CompletedTxn) bool { return c.LastOffset < logStart })
	m.mapEnd = max(m.mapEnd, logStart)
}

// undoCompleteLocked returns the function that undoes c, the CompleteTxn of mk, given the
// producer's entry (nil if none) and the map end offset before it; callers hold mu.
func (m *Manager) undoCompleteLocked(mk Marker, prev *Entry, prevEnd int64, c CompletedTxn) func() {
	wasOngoing := prev != nil && prev.CurrentTxnFirstOffset != NoOffset
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if prev != nil {
			m.producers[mk.ProducerID] = prev
		} else {
			delete(m.producers, mk.ProducerID)
		}
		if wasOngoing {
			m.removeOngoing(mk.ProducerID)
			m.addOngoing(prev.CurrentTxnFirstOffset, mk.ProducerID)
		}
		// Remove c itself, not whatever lies past the length the list had: a reader's
		// FirstUnstableOffset may have dropped older completed transactions since.
		if i := slices.Index(m.unreplicated, c); i >= 0 {
			m.unreplicated = slices.Delete(m.unreplicated, i, i+1)
		}
		m.mapEnd = prevEnd
	}
}

// CompleteTxnUndoable is CompleteTxn that also returns a function undoing it, while nothing else
// changed the state since: for a write that fails after the state took its marker. Readers
// (FirstUnstableOffset, which forgets completed transactions) may run in between.
func (m *Manager) CompleteTxnUndoable(mk Marker) (CompletedTxn, int64, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var prev *Entry
	if e, ok := m.producers[mk.ProducerID]; ok {
		prev = e.clone()
	}
	prevEnd := m.mapEnd
	c, lso := m.completeTxnLocked(mk)
	return c, lso, m.undoCompleteLocked(mk, prev, prevEnd, c)
}
