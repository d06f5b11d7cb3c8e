package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// ReadOnlyReader reads one topic of a read-only open (ReadOnlyStore.NewReader) from its own
// positions, as Reader reads a topic of a store opened with Open: records in offset order within
// a partition, one from each partition that has one in turn, control batches skipped. Next waits
// at the end of every partition until the writer appends (seen at the store's next look, see
// WithPollInterval). Its positions live in memory only: a read-only open writes no file, so
// Commit returns ErrReadOnly; a named reader starts from the positions committed under its name
// through Open. Safe for concurrent use.
type ReadOnlyReader struct {
	s     *ReadOnlyStore
	topic string
	cfg   ReaderConfig

	mu     sync.Mutex
	parts  []*roReaderPart
	cursor int
	closed bool
	moved  chan struct{} // closed and replaced by Seek and Close, to wake a blocked Next
}

type roReaderPart struct {
	id   int32
	log  *roLog
	pos  int64     // the offset after the last record returned (or the position sought)
	next int64     // the offset to fetch from: past the batches whose records are in buf
	buf  []*Record // fetched, not yet returned
	// epochs are the leader epochs of buf's records; epoch is the leader epoch of the record
	// before pos (Kafka's FetchPosition.offsetEpoch): the batch's for a record returned, the
	// writer's epoch checkpoint's for a position chosen otherwise, UndefinedEpoch when unknown.
	epochs []int32
	epoch  int32
}

// NewReader returns a reader of topic with cfg (see ReaderConfig; AutoCommitInterval is not
// allowed, nothing being committable). A named reader starts, in each partition where its name
// committed a position, there, and elsewhere at cfg.Start. Errors: ErrUnknownTopic for an unknown
// topic or partition, ErrInvalidReaderName, ErrInvalidConfig for ReadCommitted (the transaction
// indexes are the writer's to rebuild) or an AutoCommitInterval, ErrOffsetOutOfRange from a start
// out of range under ResetNone, ErrClosed.
func (s *ReadOnlyStore) NewReader(topic string, cfg ReaderConfig) (*ReadOnlyReader, error) {
	if cfg.Isolation == ReadCommitted {
		return nil, fmt.Errorf("%w: ReadCommitted on a read-only open: the aborted transactions are known to the writer only", ErrInvalidConfig)
	}
	if cfg.AutoCommitInterval > 0 {
		return nil, fmt.Errorf("%w: AutoCommitInterval on a read-only open: %w", ErrInvalidConfig, ErrReadOnly)
	}
	t, err := s.topic(topic)
	if err != nil {
		return nil, err
	}
	var committed map[int32]int64
	if cfg.Name != "" {
		all, err := s.CommittedPositions(cfg.Name)
		if err != nil {
			return nil, err
		}
		committed = all[topic]
	}
	ids := cfg.Partitions
	if ids == nil {
		for id := range int32(len(t.parts)) {
			ids = append(ids, id)
		}
	}
	r := &ReadOnlyReader{s: s, topic: topic, cfg: cfg, moved: make(chan struct{})}
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.parts) {
			return nil, fmt.Errorf("%w: topic %q has no partition %d", ErrUnknownTopic, topic, id)
		}
		l := t.parts[id]
		pos, ok := committed[id]
		if !ok {
			if pos, err = r.startOffset(l); err != nil {
				return nil, err
			}
		}
		r.parts = append(r.parts, &roReaderPart{id: id, log: l, pos: pos, next: pos, epoch: l.epochAt(pos - 1)})
	}
	return r, nil
}

// startOffset returns where cfg.Start begins in l.
func (r *ReadOnlyReader) startOffset(l *roLog) (int64, error) {
	start, end := l.offsets()
	switch r.cfg.Start {
	case Earliest:
		return start, nil
	case AtOffset:
		return r.cfg.StartOffset, nil
	case AtTime:
		return l.offsetForTime(r.cfg.StartTime.UnixMilli())
	default:
		return end, nil
	}
}

// Next returns the next record, waiting for one until ctx is done (ctx's error), the reader or
// the store is closed (ErrClosed). A position below the log start offset (retention deleted the
// records) or past the log end offset (the writer truncated the log) is moved as cfg.Reset says:
// ResetEarliest to the log start offset, ResetLatest to the log end offset, ResetNone returns
// ErrOffsetOutOfRange and stays. A position the writer's truncation passed, though the log has
// grown past it again, is found from the leader epochs (the batch's of the record before it,
// against the writer's leader-epoch-checkpoint, Kafka's OffsetsForLeaderEpoch, as Reader finds
// it): ResetEarliest and ResetLatest move to where the log diverged, ResetNone returns a
// *LogTruncatedError (ErrLogTruncated). ErrCorrupt for a batch that does not decode.
func (r *ReadOnlyReader) Next(ctx context.Context) (*Record, error) {
	for {
		changed := r.s.wait() // before looking: a change after the look wakes the wait below
		r.mu.Lock()
		if r.closed || r.s.isClosed() {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		moved := r.moved
		rec, err := r.pollLocked()
		r.mu.Unlock()
		if rec != nil || err != nil {
			return rec, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-moved:
		}
	}
}

// pollLocked returns a buffered record of the next partition in turn, fetching for partitions
// without one; nil when no partition has a record now.
func (r *ReadOnlyReader) pollLocked() (*Record, error) {
	for range 2 {
		for i := range r.parts {
			rp := r.parts[(r.cursor+i)%len(r.parts)]
			if len(rp.buf) == 0 {
				continue
			}
			rec := rp.buf[0]
			rp.buf[0] = nil
			rp.buf = rp.buf[1:]
			rp.epoch, rp.epochs = rp.epochs[0], rp.epochs[1:]
			rp.pos = rec.Offset + 1
			if len(rp.buf) == 0 {
				// Past the batch, as a Kafka consumer's position is: records a compaction
				// removed from its end, and control batches, are behind the reader.
				rp.pos = rp.next
			}
			r.cursor = (r.cursor + i + 1) % len(r.parts)
			return rec, nil
		}
		fetched := false
		for _, rp := range r.parts {
			n, err := r.fetch(rp)
			if err != nil {
				return nil, err
			}
			fetched = fetched || n
		}
		if !fetched {
			return nil, nil
		}
	}
	return nil, nil
}

// fetch reads rp's next batches into its buffer, applying the reset policy to a position out of
// range. Reports whether the buffer got records.
func (r *ReadOnlyReader) fetch(rp *roReaderPart) (bool, error) {
	maxBytes := r.cfg.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultReaderMaxBytes
	}
	for { // batches of control records only give no records: go on to the next ones
		if at, ok := rp.log.divergence(rp.epoch, rp.pos); ok && len(rp.buf) == 0 {
			// The writer truncated the log below the position (and may have written other
			// records there since): as Reader does, move to where it diverged.
			if r.cfg.Reset == ResetNone {
				return false, &LogTruncatedError{Topic: r.topic, Partition: rp.id, CommittedOffset: rp.pos, LeaderEpoch: rp.epoch, TruncatedOffset: at}
			}
			rp.pos, rp.next = at, at
			rp.epoch = rp.log.epochAt(at - 1)
		}
		start, end := rp.log.offsets()
		if rp.next < start || rp.next > end {
			switch r.cfg.Reset {
			case ResetEarliest:
				// Either side, as Reader and Kafka's consumer (auto.offset.reset=earliest on
				// OFFSET_OUT_OF_RANGE) do: a truncation the epochs can place was handled above.
				rp.next = start
			case ResetLatest:
				rp.next = end
			default:
				return false, fmt.Errorf("%w: topic %s partition %d: position %d, log holds [%d, %d)", ErrOffsetOutOfRange, r.topic, rp.id, rp.next, start, end)
			}
			rp.pos = rp.next
			rp.epoch = rp.log.epochAt(rp.pos - 1)
		}
		if rp.next == end {
			return false, nil
		}
		b, err := rp.log.read(rp.next, maxBytes)
		if errors.Is(err, ErrOffsetOutOfRange) {
			return false, nil // moved under us since offsets: the next look applies the policy
		}
		if err != nil {
			return false, err
		}
		if len(b) == 0 {
			return false, nil
		}
		from := rp.next
		type span struct {
			last  int64
			epoch int32
		}
		var spans []span
		for p := 0; p+recordbatch.HeaderSize <= len(b); {
			h, err := recordbatch.ParseHeader(b[p:], 0)
			if err != nil {
				break
			}
			rp.next = max(rp.next, h.NextOffset())
			spans = append(spans, span{h.LastOffset(), h.PartitionLeaderEpoch})
			p += h.Size()
		}
		n := len(rp.buf)
		rp.buf, err = DecodeRecords(rp.buf, b, from, rp.log.maxDecompressed)
		for _, rec := range rp.buf[n:] {
			rec.Topic, rec.Partition = r.topic, rp.id
			for len(spans) > 1 && spans[0].last < rec.Offset {
				spans = spans[1:]
			}
			epoch := UndefinedEpoch
			if len(spans) > 0 {
				epoch = spans[0].epoch
			}
			rp.epochs = append(rp.epochs, epoch)
		}
		if err != nil {
			return len(rp.buf) > 0, fmt.Errorf("topic %s partition %d: %w", r.topic, rp.id, err)
		}
		if len(rp.buf) > 0 {
			return true, nil
		}
		if rp.next == from {
			return false, nil // no whole batch past from: looked at again after the next change
		}
		rp.pos = rp.next // past the control batches
	}
}

// Seek moves the reader's position in partition to offset: the next record Next returns from it
// is the one at offset (or the first after it). ErrUnknownTopic for a partition the reader does
// not read, ErrClosed.
func (r *ReadOnlyReader) Seek(partition int32, offset int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	for _, rp := range r.parts {
		if rp.id == partition {
			rp.pos, rp.next, rp.buf, rp.epochs = offset, offset, nil, nil
			rp.epoch = rp.log.epochAt(offset - 1)
			close(r.moved)
			r.moved = make(chan struct{})
			return nil
		}
	}
	return fmt.Errorf("%w: the reader of topic %q does not read partition %d", ErrUnknownTopic, r.topic, partition)
}

// Positions returns the offset of the next record to return in each partition the reader reads.
func (r *ReadOnlyReader) Positions() map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]int64, len(r.parts))
	for _, rp := range r.parts {
		out[rp.id] = rp.pos
	}
	return out
}

// Partitions returns the partitions the reader reads, in order.
func (r *ReadOnlyReader) Partitions() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.positionsLocked()))
}

func (r *ReadOnlyReader) positionsLocked() map[int32]int64 {
	out := make(map[int32]int64, len(r.parts))
	for _, rp := range r.parts {
		out[rp.id] = rp.pos
	}
	return out
}

// Commit returns ErrReadOnly: a read-only open writes nothing, committed positions included
// (the writer's process owns the files they live in). A reader that must commit opens the store
// with Open, when no other process holds it.
func (r *ReadOnlyReader) Commit(ctx context.Context) error {
	return fmt.Errorf("%w: reader positions cannot be committed without opening the store with Open", ErrReadOnly)
}

// Close ends the reader: a blocked Next returns ErrClosed. Later calls return nil.
func (r *ReadOnlyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.moved)
		r.moved = make(chan struct{})
	}
	return nil
}
