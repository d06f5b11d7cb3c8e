package commitlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// StartPosition says where a reader begins in each partition that has no committed position.
type StartPosition int8

const (
	// Latest starts at the log end offset: only records appended from now on are read. It is
	// the zero value, as latest is Kafka's default auto.offset.reset.
	Latest StartPosition = iota
	// Earliest starts at the log start offset: the oldest record kept.
	Earliest
	// AtOffset starts at ReaderConfig.StartOffset.
	AtOffset
	// AtTime starts at the first record whose timestamp is >= ReaderConfig.StartTime.
	AtTime
)

// ResetPolicy says what a reader does when its position is out of range, below the log start
// offset (retention deleted the records) or above the log end offset (the log was truncated):
// Kafka's auto.offset.reset.
type ResetPolicy int8

const (
	// ResetNone returns ErrOffsetOutOfRange from Next, naming partition and position; the
	// reader stays there until Seek. It is the zero value: a reader never jumps unasked.
	ResetNone ResetPolicy = iota
	// ResetEarliest moves to the log start offset.
	ResetEarliest
	// ResetLatest moves to the log end offset.
	ResetLatest
)

// DefaultReaderMaxBytes is the bytes a reader fetches from one partition at a time (Kafka's
// max.partition.fetch.bytes).
const DefaultReaderMaxBytes = 1 << 20

// ReaderConfig configures a reader of one topic.
type ReaderConfig struct {
	// Name makes the reader named: its positions can be committed (Commit, AutoCommitInterval)
	// and a reader opened later with the same name resumes there. Names follow the topic-name
	// rule, at most 200 characters. Empty means an anonymous reader whose positions live only
	// in memory.
	Name string
	// Partitions lists the partitions to read; nil means all, in order.
	Partitions []int32
	// Start is where to begin in a partition without a committed position.
	Start StartPosition
	// StartOffset is the offset to begin at, with Start == AtOffset.
	StartOffset int64
	// StartTime is the time to begin at, with Start == AtTime.
	StartTime time.Time
	// Reset is what to do when a position falls out of range.
	Reset ResetPolicy
	// AutoCommitInterval, when positive, commits a named reader's positions this often in the
	// background and once more on Close (Kafka's auto.commit.interval.ms).
	AutoCommitInterval time.Duration
	// MaxBytes is how much to fetch from a partition at a time; 0 means DefaultReaderMaxBytes.
	MaxBytes int
}

// Reader reads one topic's records from its own positions, one per partition, without disturbing
// any other reader: reading never deletes, and any number of readers read at their own pace.
// Within a partition records come in offset order; across partitions the reader takes one
// record from each partition that has one in turn, so a busy partition does not starve a quiet
// one. Control batches (transaction markers) are skipped, their offsets passed over, as Kafka's
// consumers do. A Reader is safe for concurrent use, though one goroutine calling Next is the
// natural shape.
type Reader struct {
	topic *Topic
	cfg   ReaderConfig

	mu     sync.Mutex
	parts  []*readerPartition
	cursor int // the partition to try first
	closed bool
	done   chan struct{} // closed by Close
	moved  chan struct{} // closed and replaced by every seek, to wake a blocked Next

	commitMu sync.Mutex // serialises commits of this reader
	wg       sync.WaitGroup
	scratch  []byte
}

type readerPartition struct {
	p   *Partition
	pos int64     // offset of the next record to return
	buf []*Record // fetched, not yet returned; buf[0].Offset >= pos
}

// NewReader returns a reader of the topic configured by cfg. A named reader resumes at its
// committed positions; partitions without one begin at cfg.Start.
//
// Returns ErrInvalidReaderName for a bad name, ErrReaderExists when a live reader of the store
// has the name, ErrUnknownTopic for a partition the topic lacks, ErrCorrupt when the reader's
// committed positions cannot be read (Store.DeleteReader resets them), ErrClosed after Close.
func (t *Topic) NewReader(cfg ReaderConfig) (*Reader, error) {
	if cfg.Name != "" {
		if err := checkReaderName(cfg.Name); err != nil {
			return nil, err
		}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultReaderMaxBytes
	}
	ids := cfg.Partitions
	if ids == nil {
		for i := range t.PartitionCount() {
			ids = append(ids, i)
		}
	}
	r := &Reader{topic: t, cfg: cfg, done: make(chan struct{}), moved: make(chan struct{})}
	for _, id := range ids {
		p, err := t.Partition(id)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(r.parts, func(rp *readerPartition) bool { return rp.p == p }) {
			return nil, fmt.Errorf("%w: partition %d listed twice", ErrInvalidConfig, id)
		}
		r.parts = append(r.parts, &readerPartition{p: p})
	}

	s := t.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || t.isClosed() {
		return nil, ErrClosed
	}
	committed := map[int32]int64{}
	if cfg.Name != "" {
		if _, ok := s.readers[cfg.Name]; ok {
			return nil, fmt.Errorf("%w: %q", ErrReaderExists, cfg.Name)
		}
		all, err := s.readPositions(cfg.Name)
		if err != nil {
			return nil, err
		}
		committed = all[t.name]
	}
	for _, rp := range r.parts {
		if off, ok := committed[rp.p.id]; ok {
			rp.pos = off
			continue
		}
		off, err := r.startOffset(rp.p)
		if err != nil {
			return nil, err
		}
		rp.pos = off
	}
	if cfg.Name != "" {
		s.readers[cfg.Name] = r
	}
	if cfg.Name != "" && cfg.AutoCommitInterval > 0 {
		r.wg.Go(r.autoCommit)
	}
	return r, nil
}

// startOffset returns where cfg.Start puts the reader in p.
func (r *Reader) startOffset(p *Partition) (int64, error) {
	switch r.cfg.Start {
	case Earliest:
		return p.LogStartOffset(), nil
	case AtOffset:
		return r.cfg.StartOffset, nil
	case AtTime:
		return p.OffsetForTime(r.cfg.StartTime)
	default:
		return p.HighWatermark(), nil
	}
}

// Name returns the reader's name, "" for an anonymous reader.
func (r *Reader) Name() string { return r.cfg.Name }

// Next returns the next record, blocking at the end of the log until one is appended, ctx is
// done (ctx's error) or the reader or its store is closed (ErrClosed). The record is the
// caller's to keep. Returns ErrOffsetOutOfRange (naming partition and position) when a position
// is out of range under ResetNone, and ErrCorrupt when the next batch cannot be read.
func (r *Reader) Next(ctx context.Context) (*Record, error) {
	for {
		// Take the wake-up channel before looking, so an append between the look and the wait
		// is never missed.
		wake := r.topic.appendedChan()
		rec, moved, err := r.poll()
		if rec != nil || err != nil {
			return rec, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.done:
			return nil, ErrClosed
		case <-wake:
		case <-moved: // a Seek from another goroutine: look again
		}
	}
}

// Records returns an iterator over the records Next returns: it yields each record with a nil
// error, and stops after yielding the first error (ctx's when it ends).
func (r *Reader) Records(ctx context.Context) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for {
			rec, err := r.Next(ctx)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// poll returns a buffered record, fetching from the partitions in turn when none is buffered;
// nil, nil when every partition is at its high watermark. moved is closed by the next seek.
func (r *Reader) poll() (rec *Record, moved <-chan struct{}, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err = r.pollLocked()
	return rec, r.moved, err
}

func (r *Reader) pollLocked() (*Record, error) {
	if r.stopped() {
		return nil, ErrClosed
	}
	n := len(r.parts)
	for i := range n {
		idx := (r.cursor + i) % n
		rp := r.parts[idx]
		if len(rp.buf) == 0 {
			if err := r.fetch(rp); err != nil {
				return nil, err
			}
		}
		if len(rp.buf) > 0 {
			rec := rp.buf[0]
			rp.buf[0] = nil
			rp.buf = rp.buf[1:]
			rp.pos = rec.Offset + 1
			r.cursor = (idx + 1) % n
			return rec, nil
		}
	}
	return nil, nil
}

// fetch reads the next records of rp into its buffer, applying the reset policy when its
// position is out of range. Callers hold mu.
func (r *Reader) fetch(rp *readerPartition) error {
	for attempt := 0; ; attempt++ {
		if rp.pos == rp.p.HighWatermark() {
			return nil
		}
		var err error
		r.scratch, err = rp.p.ReadBatches(r.scratch[:0], rp.pos, r.cfg.MaxBytes)
		if errors.Is(err, ErrOffsetOutOfRange) && attempt == 0 && r.cfg.Reset != ResetNone {
			from := rp.pos
			if r.cfg.Reset == ResetEarliest {
				rp.pos = rp.p.LogStartOffset()
			} else {
				rp.pos = rp.p.HighWatermark()
			}
			rp.p.log.logger.Info("reader position out of range; reset", "reader", r.cfg.Name,
				"topic", rp.p.Topic(), "partition", rp.p.id, "from", from, "to", rp.pos)
			continue
		}
		if err != nil {
			return fmt.Errorf("topic %s partition %d position %d: %w", rp.p.Topic(), rp.p.id, rp.pos, err)
		}
		recs, err := decodeChecked(rp.buf[:0], r.scratch, rp.pos, rp.p.log.cfg.readDecompressLimit(), 0)
		if err != nil {
			return fmt.Errorf("topic %s partition %d position %d: %w", rp.p.Topic(), rp.p.id, rp.pos, err)
		}
		for _, rec := range recs {
			rec.Topic, rec.Partition = rp.p.Topic(), rp.p.id
		}
		rp.buf = recs
		if len(recs) == 0 && len(r.scratch) > 0 {
			// Only control records: pass over their offsets.
			rp.pos = lastNextOffset(r.scratch)
			continue
		}
		return nil
	}
}

// lastNextOffset returns the offset after the last of the back-to-back batches in b.
func lastNextOffset(b []byte) int64 {
	var next int64
	for len(b) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(b, 0)
		if err != nil || h.Size() > len(b) {
			break
		}
		next = h.NextOffset()
		b = b[h.Size():]
	}
	return next
}

// stopped reports whether the reader can no longer read: it was closed, or its topic was (the
// store closed, or the topic was deleted). Callers hold mu.
func (r *Reader) stopped() bool { return r.closed || r.topic.isClosed() }

// part returns the reader's state for partition id. Callers hold mu.
func (r *Reader) part(id int32) (*readerPartition, error) {
	for _, rp := range r.parts {
		if rp.p.id == id {
			return rp, nil
		}
	}
	return nil, fmt.Errorf("%w: reader does not read partition %d of topic %s", ErrUnknownTopic, id, r.topic.name)
}

// Seek moves the reader's position in partition to offset; the next record from that partition
// is the first at or after offset. The position is checked when next read: out of range, the
// reset policy applies. Returns ErrUnknownTopic for a partition the reader does not read,
// ErrClosed after Close.
func (r *Reader) Seek(partition int32, offset int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		return ErrClosed
	}
	rp, err := r.part(partition)
	if err != nil {
		return err
	}
	rp.pos, rp.buf = offset, rp.buf[:0]
	r.wakeMoved()
	return nil
}

// wakeMoved wakes a Next blocked in another goroutine after a seek. Callers hold mu.
func (r *Reader) wakeMoved() {
	close(r.moved)
	r.moved = make(chan struct{})
}

// seekAll moves every partition's position to where at says.
func (r *Reader) seekAll(at func(*Partition) (int64, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		return ErrClosed
	}
	defer r.wakeMoved()
	for _, rp := range r.parts {
		off, err := at(rp.p)
		if err != nil {
			return err
		}
		rp.pos, rp.buf = off, rp.buf[:0]
	}
	return nil
}

// SeekToTime moves every partition's position to its first record whose timestamp is >= t (the
// log end offset when none is), to replay from a point in time. ErrClosed after Close.
func (r *Reader) SeekToTime(t time.Time) error {
	return r.seekAll(func(p *Partition) (int64, error) { return p.OffsetForTime(t) })
}

// SeekToEarliest moves every partition's position to its log start offset.
func (r *Reader) SeekToEarliest() error {
	return r.seekAll(func(p *Partition) (int64, error) { return p.LogStartOffset(), nil })
}

// SeekToLatest moves every partition's position to its high watermark: only records appended
// from now on are read.
func (r *Reader) SeekToLatest() error {
	return r.seekAll(func(p *Partition) (int64, error) { return p.HighWatermark(), nil })
}

// Position returns the offset of the next record the reader returns from partition.
// ErrUnknownTopic for a partition the reader does not read, ErrClosed after Close.
func (r *Reader) Position(partition int32) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		return 0, ErrClosed
	}
	rp, err := r.part(partition)
	if err != nil {
		return 0, err
	}
	return rp.pos, nil
}

// Positions returns the reader's position in each partition it reads.
func (r *Reader) Positions() map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[int32]int64, len(r.parts))
	for _, rp := range r.parts {
		m[rp.p.id] = rp.pos
	}
	return m
}

// Lag returns, per partition read, how many offsets lie between the reader's position and the
// high watermark (0 when caught up; negative never).
func (r *Reader) Lag() map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[int32]int64, len(r.parts))
	for _, rp := range r.parts {
		m[rp.p.id] = max(rp.p.HighWatermark()-rp.pos, 0)
	}
	return m
}

// Close stops the reader: a blocked Next returns ErrClosed, later calls return ErrClosed. A
// named reader with AutoCommitInterval commits its positions one last time. The name becomes
// free for a new reader. Later calls return nil.
func (r *Reader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	r.mu.Unlock()
	r.wg.Wait()
	var err error
	if r.cfg.Name != "" && r.cfg.AutoCommitInterval > 0 {
		err = r.commit()
	}
	if r.cfg.Name != "" {
		s := r.topic.store
		s.mu.Lock()
		if s.readers[r.cfg.Name] == r {
			delete(s.readers, r.cfg.Name)
		}
		s.mu.Unlock()
	}
	return err
}
