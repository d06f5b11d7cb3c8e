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
	"github.com/commitlog-go/commitlog/internal/txnindex"
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
	// AtTime starts at the first record whose timestamp is >= ReaderConfig.StartTime, or at
	// the high watermark when no record is that recent (see Reader.SeekToTime).
	AtTime
)

// ResetPolicy says what a reader does when its position is out of range, below the log start
// offset (retention deleted the records) or above the log end offset (the log was truncated):
// Kafka's auto.offset.reset.
//
// It also says what a reader does when the log diverged below its position: the log was
// truncated past the position and may since hold other records there (see Reader). Under
// ResetEarliest and ResetLatest the reader moves to the divergence point and reads the log's
// new history from there, as Kafka's consumer with an auto.offset.reset policy seeks to the
// divergent offset (KIP-320); under ResetNone Next returns ErrLogTruncated.
type ResetPolicy int8

const (
	// ResetNone returns ErrOffsetOutOfRange from Next, naming partition and position, and
	// ErrLogTruncated (a *LogTruncatedError) when the log diverged below the position; the
	// reader stays there until Seek. It is the zero value: a reader never jumps unasked.
	ResetNone ResetPolicy = iota
	// ResetEarliest moves to the log start offset; after a divergence, to the divergence point.
	ResetEarliest
	// ResetLatest moves to the log end offset; after a divergence, to the divergence point.
	ResetLatest
)

// IsolationLevel says which records of transactions a reader sees: Kafka's isolation.level.
type IsolationLevel int8

const (
	// ReadUncommitted reads every record up to the high watermark, those of open and aborted
	// transactions included. It is the zero value, as read_uncommitted is Kafka's default.
	ReadUncommitted IsolationLevel = iota
	// ReadCommitted reads only up to the last stable offset (Partition.LastStableOffset) and
	// skips the batches of aborted transactions, as Kafka's read_committed consumer does: it
	// never returns a record of a transaction that is open or was aborted.
	ReadCommitted
)

// String returns Kafka's name of the level: read_uncommitted or read_committed.
func (il IsolationLevel) String() string {
	switch il {
	case ReadUncommitted:
		return "read_uncommitted"
	case ReadCommitted:
		return "read_committed"
	}
	return fmt.Sprintf("IsolationLevel(%d)", int8(il))
}

// DefaultReaderMaxBytes is the bytes a reader fetches from one partition at a time (Kafka's
// max.partition.fetch.bytes).
const DefaultReaderMaxBytes = 1 << 20

// ReaderConfig configures a reader of one topic.
type ReaderConfig struct {
	// Name makes the reader named: its positions can be committed (Commit, AutoCommitInterval)
	// and a reader opened later with the same name resumes there. Names follow the topic-name
	// rule, at most 200 characters. Empty means an anonymous reader whose positions live only
	// in memory. A name is open on at most one Reader per topic, on any number of topics.
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
	// background and once more on Close (Kafka's enable.auto.commit with
	// auto.commit.interval.ms). As Kafka's auto-commit, which runs in poll, a background commit
	// covers the records returned before the last one: the last record handed out (by Next,
	// Records or Scan) counts as processed once the reader is asked for the next, so a crash
	// while the loop body handles a record reads that record again (at least once). Close
	// commits past every record returned, as a Kafka consumer's close does.
	AutoCommitInterval time.Duration
	// SyncCommits makes every commit durable before it returns: the positions file and the
	// store's directory are fsynced. Without it (the default) a commit is a rename of a
	// temporary file, which survives the process being killed but may be lost to a power loss
	// (see Commit), and waits for no disk flush.
	SyncCommits bool
	// MaxBytes is how much to fetch from a partition at a time; 0 means DefaultReaderMaxBytes.
	MaxBytes int
	// Isolation is ReadUncommitted (the default) or ReadCommitted. Under ReadCommitted the
	// reader's end in each partition is its last stable offset rather than its high watermark:
	// Latest, ResetLatest, SeekToLatest and Lag use it.
	Isolation IsolationLevel
}

// Reader reads one topic's records from its own positions, one per partition, without disturbing
// any other reader: reading never deletes, and any number of readers read at their own pace.
// Within a partition records come in offset order; across partitions the reader takes one
// record from each partition that has one in turn, so a busy partition does not starve a quiet
// one. Control batches (transaction markers) are skipped, their offsets passed over, as Kafka's
// consumers do. A Reader is safe for concurrent use, though one goroutine calling Next is the
// natural shape.
//
// Records and Next hand out records the caller owns, valid for as long as it keeps them; Scan
// hands out records valid for one loop turn, and reads at about Partition.Scan's rate (the
// lock and checks of each record apart). The owned records cost about 260 bytes of new memory
// each, and with them the garbage collections that reclaim it, which makes Records several times
// slower than Scan in a process with a small heap: see Records for the figures and why.
type Reader struct {
	topic *Topic
	cfg   ReaderConfig
	// positions is the store that keeps the committed positions and the names of live readers,
	// as the topic was given it (see readerStore).
	positions readerStore

	mu     sync.Mutex
	parts  []*readerPartition
	cursor int // the partition to try first
	closed bool
	done   chan struct{} // closed by Close
	moved  chan struct{} // closed and replaced by every seek, to wake a blocked Next

	commitMu sync.Mutex // serialises commits of this reader
	wg       sync.WaitGroup
	// scratch is the buffer fetches read batches into. A fetch that fills at least half of it
	// gives it to the records it decodes (they alias it) and the next fetch makes another; a
	// smaller one copies its batches out and keeps it.
	scratch []byte
	// scanDec is the decoder of Scan's fetches, kept from one chunk (see scanChunk) to the next
	// with its decompressors and buffer, one for all partitions: the records of compressed
	// batches are copied out of its buffer.
	scanDec *recordbatch.Decoder
	// inFlight is the record last handed out while the caller has not asked for the next one
	// (it is processing it); its rp is nil when there is none. The background auto-commit
	// commits the position before it (see Reader.commit), as Kafka's auto-commit, made in poll,
	// covers only the records of the polls before; Commit and Close commit past it.
	inFlight inFlightRecord
}

// inFlightRecord is the record a Reader handed out last, by its partition's positions.
type inFlightRecord struct {
	rp     *readerPartition
	before committedPosition // rp's position (and epoch) before the record
	after  int64             // rp's position after it: the record is still in flight while rp is there
}

// handOut moves rp's position past rec, handed out with the leader epoch epoch, and notes rec as
// the record in flight (see inFlight). Callers hold mu.
func (r *Reader) handOut(rp *readerPartition, rec *Record, epoch int32) {
	r.inFlight = inFlightRecord{rp: rp, before: committedPosition{offset: rp.pos, leaderEpoch: rp.epoch}, after: rec.Offset + 1}
	rp.pos, rp.epoch = rec.Offset+1, epoch
}

type readerPartition struct {
	p   *Partition
	pos int64 // offset of the next record to return
	// epoch is the leader epoch of the record before pos, the last consumed (Kafka's
	// FetchPosition.offsetEpoch): the batch's, for a record read; the log's epoch cache's, for
	// a position the log chose (a start, SeekToEarliest/Latest/Time, a reset); UndefinedEpoch
	// after Seek or a committed position without one, which are not validated.
	epoch int32
	// validate says that pos must be checked against the log's epochs before the next read: it
	// was resumed from a commit, or the log was truncated since the last check (truncGen).
	validate bool
	truncGen uint64
	// recs are the records of the last fetch, one slab the records returned point into;
	// recs[next:] are not returned yet, recs[next].Offset >= pos. epochs[i] is the leader
	// epoch of recs[i].
	recs   []Record
	next   int
	epochs []int32
	// borrowed says that recs came from a fetch of Scan, into spareRecs and spareData, which
	// the next fetch of Scan reuses: Next returns copies of such records.
	borrowed  bool
	spareRecs []Record
	spareData []byte
	// raw are the batches of the last read of Scan (in spareData) not decoded yet: those after
	// the records in recs, from pos on once recs are all returned.
	raw []byte
}

// buffered reports whether rp holds fetched records not returned yet.
func (rp *readerPartition) buffered() bool { return rp.next < len(rp.recs) }

// drop forgets the records fetched and not returned, and the batches of Scan's read not decoded
// yet. The slab stays with the records returned from it, which are the caller's.
func (rp *readerPartition) drop() {
	rp.release()
	rp.raw = nil
}

// release lets go of the slab of records decoded, all returned: the next fetch decodes rp.raw,
// or reads.
func (rp *readerPartition) release() {
	rp.recs, rp.next, rp.epochs, rp.borrowed = nil, 0, rp.epochs[:0], false
}

// NewReader returns a reader of the topic configured by cfg. A named reader resumes at its
// committed positions; partitions without one begin at cfg.Start.
//
// One name may be open on several topics at once, one Reader per topic, as a Kafka consumer
// group reads several topics under one group id: the positions of all its topics share the
// name's file, and each Reader's commits change only its own topic's (see Commit).
//
// Returns ErrInvalidReaderName for a bad name, ErrReaderExists when a live reader of the topic
// has the name, or a live reader of the store has a name differing from it only in case, or
// committed positions are kept under such a name (their files would collide on
// case-insensitive file systems, as topic folders would; see ErrTopicExists), ErrInvalidConfig for a Start or Reset outside their constants,
// ErrUnknownTopic for a partition the topic lacks, ErrCorrupt when the reader's
// committed positions cannot be read (Store.DeleteReader resets them), ErrClosed after Close.
func (t *Topic) NewReader(cfg ReaderConfig) (*Reader, error) {
	if cfg.Name != "" {
		if err := checkReaderName(cfg.Name); err != nil {
			return nil, err
		}
	}
	if cfg.Start < Latest || cfg.Start > AtTime {
		return nil, fmt.Errorf("%w: ReaderConfig.Start = %d (Latest, Earliest, AtOffset or AtTime)", ErrInvalidConfig, cfg.Start)
	}
	if cfg.Reset < ResetNone || cfg.Reset > ResetLatest {
		return nil, fmt.Errorf("%w: ReaderConfig.Reset = %d (ResetNone, ResetEarliest or ResetLatest)", ErrInvalidConfig, cfg.Reset)
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
	r := &Reader{topic: t, cfg: cfg, positions: t.positions, done: make(chan struct{}), moved: make(chan struct{})}
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

	err := t.positions.openReader(cfg.Name, r, t, func(committed map[int32]committedPosition) error {
		for _, rp := range r.parts {
			rp.truncGen = rp.p.log.truncGen.Load()
			if c, ok := committed[rp.p.id]; ok {
				// Kafka's consumer validates a committed position that carries an epoch before
				// it fetches from it (KIP-320); one without (an old file) is taken as it is.
				rp.pos, rp.epoch, rp.validate = c.offset, c.leaderEpoch, c.leaderEpoch != UndefinedEpoch
				continue
			}
			off, err := r.startOffset(rp.p)
			if err != nil {
				return err
			}
			rp.setPosition(off)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
		return offsetForTimeOrEnd(p, r.cfg.StartTime)
	default:
		return r.end(p), nil
	}
}

// end returns where the reader's records end in p: the high watermark, or under ReadCommitted
// the last stable offset.
func (r *Reader) end(p *Partition) int64 {
	if r.cfg.Isolation == ReadCommitted {
		return p.LastStableOffset()
	}
	return p.HighWatermark()
}

// setPosition moves rp to off, a position the log chose, with the epoch the log gives the record
// before it. Callers hold mu (or own rp).
func (rp *readerPartition) setPosition(off int64) {
	rp.pos, rp.epoch, rp.validate = off, rp.p.log.epochOf(off-1), false
	rp.drop()
}

// Name returns the reader's name, "" for an anonymous reader.
func (r *Reader) Name() string { return r.cfg.Name }

// Next returns the next record, blocking at the end of the log until one is appended, ctx is
// done (ctx's error) or the reader or its store is closed (ErrClosed). The record is the
// caller's to keep. Returns ErrOffsetOutOfRange (naming partition and position) when a position
// is out of range under ResetNone, a *LogTruncatedError (ErrLogTruncated) when the log diverged
// below a position under ResetNone (see validate), and ErrCorrupt when the next batch cannot be
// read.
func (r *Reader) Next(ctx context.Context) (*Record, error) {
	return r.next(ctx, false)
}

// next is Next; with borrow, Scan's (see pollMode).
func (r *Reader) next(ctx context.Context, borrow bool) (*Record, error) {
	// A record buffered or fetched at once needs no wake-up channel.
	if rec, _, err := r.pollMode(borrow); rec != nil || err != nil {
		return rec, err
	}
	for {
		// Take the wake-up channel before looking again, so an append between the look and
		// the wait is never missed.
		wake := r.topic.appendedChan()
		rec, moved, err := r.pollMode(borrow)
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
//
// Cost: each fetch (up to MaxBytes from one partition) is decoded once into one slab of
// Records, and the records' keys, values and header values point into the fetch's buffer rather
// than being copied (but for compressed batches, copied out of the decompression buffer), so
// that a fetch allocates a slab, its buffer and its headers, whatever its number of records, and
// a record is taken from the slab under the reader's lock with a few checks. What remains is that
// every record is the caller's, and valid after the next fetch: the slab (128 bytes a Record) and
// the buffer (the record's bytes as stored) are new memory for each fetch, about 260 bytes a
// record of 116 bytes of key and value (BenchmarkReaderDrainInterleaved's B/record), which the
// garbage collector must then reclaim. A collection runs each time the heap grows by GOGC
// percent of the live heap (at least 4 MB): with a small live heap that is about once a 1 MiB
// fetch (85 collections a million such records), and those collections, not the decode, are most
// of what Records costs over Scan: drained from the file store by a process of a few MB, Records
// reads at about 0.25 to 0.35 times Partition.Scan's rate under GOGC=100, 0.4 times under
// GOGC=400, 0.5 times with the collector off (GOGC=off with a GOMEMLIMIT), the rest being the
// writing of 260 new bytes a record. A larger live heap, GOGC or GOMEMLIMIT spaces collections
// out; Scan, which reuses its slab and buffer, allocates nothing. A record kept alive keeps its
// whole fetch (slab and buffer) alive.
func (r *Reader) Records(ctx context.Context) iter.Seq2[*Record, error] {
	return r.records(ctx, false)
}

// Scan returns an iterator over the records Next would return, blocking and ending as Records
// does (it yields each record with a nil error, and stops after yielding the first error, ctx's
// when it ends), moving the reader's positions as Next does: the zero-copy reader for hot loops,
// as Log.Scan is the log's. The *Record yielded, and the bytes its Key, Value and Headers point
// to, are valid only until the loop body returns: a later fetch of the partition in Scan reuses
// them. Copy what you keep, or use Records.
//
// Each partition keeps the buffer and the Record slab of its last fetch in Scan for the next
// one, so that, once they have grown, a drain allocates nothing per record or per fetch (but for
// compressed batches and headers, which are copied out at each fetch). A fetch (up to MaxBytes)
// is decoded scanChunk (256) records at a time, never splitting a batch, so that the slab stays
// in the CPU's cache between its decode and the loop body's reads, as Log.Scan's one record
// does; each record is then taken under the reader's lock with a few checks, which keeps
// positions, Seek, Commit and Close from other goroutines exact at every record. Records fetched
// in Scan and returned by Next (or Records) are copied first, so mixing the two is safe; two
// goroutines scanning one reader at once are not: one's fetch may reuse the bytes of the record
// the other holds.
func (r *Reader) Scan(ctx context.Context) iter.Seq2[*Record, error] {
	return r.records(ctx, true)
}

// records is Records, or with borrow Scan: each record taken by take when it can, by next
// otherwise.
func (r *Reader) records(ctx context.Context, borrow bool) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for {
			r.mu.Lock()
			rec := r.take(borrow)
			r.mu.Unlock()
			var err error
			if rec == nil {
				rec, err = r.next(ctx, borrow)
			}
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// take returns the next record of the partition in turn when pollLocked would return it with
// nothing to check, fetch, copy or release: it is buffered and not the partition's last, the
// position needs no validation, the log was not truncated since the fetch, and with !borrow the
// records are not Scan's. Otherwise nil, and next does the rest. It is the loop of a drain, a
// few loads and stores under mu. Callers hold mu.
func (r *Reader) take(borrow bool) *Record {
	r.inFlight.rp = nil // the caller is done with the last record
	if r.closed || r.cursor >= len(r.parts) {
		return nil
	}
	rp := r.parts[r.cursor]
	i := rp.next
	if i >= len(rp.recs)-1 || i >= len(rp.epochs) || rp.validate || (rp.borrowed && !borrow) ||
		rp.truncGen != rp.p.log.truncGen.Load() || r.topic.isClosed() {
		return nil
	}
	rec := &rp.recs[i]
	r.handOut(rp, rec, rp.epochs[i])
	rp.next = i + 1
	if r.cursor++; r.cursor == len(r.parts) {
		r.cursor = 0
	}
	return rec
}

// poll returns a buffered record, fetching from the partitions in turn when none is buffered;
// nil, nil when every partition is at its high watermark. moved is closed by the next seek. The
// record is the caller's.
func (r *Reader) poll() (rec *Record, moved <-chan struct{}, err error) {
	return r.pollMode(false)
}

// pollMode is poll; with borrow (Scan), fetches reuse the buffers of the last fetch of Scan,
// and the record is valid until the next call.
func (r *Reader) pollMode(borrow bool) (rec *Record, moved <-chan struct{}, err error) {
	r.mu.Lock()
	rec, err = r.pollLocked(borrow)
	moved = r.moved
	r.mu.Unlock()
	return rec, moved, err
}

func (r *Reader) pollLocked(borrow bool) (*Record, error) {
	r.inFlight.rp = nil // the caller is done with the last record
	if r.stopped() {
		return nil, ErrClosed
	}
	n := len(r.parts)
	for i, idx := 0, r.cursor; i < n; i++ {
		rp := r.parts[idx]
		// A record buffered, its position checked and the log not truncated since: nothing to
		// validate or fetch (the common case of a drain, a handful of loads under mu).
		if !rp.buffered() || rp.validate || rp.truncGen != rp.p.log.truncGen.Load() {
			if err := r.ready(rp, borrow); err != nil {
				return nil, err
			}
		}
		if idx++; idx == n {
			idx = 0
		}
		if rp.buffered() {
			rec := &rp.recs[rp.next]
			r.handOut(rp, rec, rp.epochs[rp.next])
			rp.next++
			if rp.borrowed && !borrow {
				rec = cloneRecord(rec) // its slab is Scan's, to be reused
			}
			if !rp.buffered() {
				rp.release()
			}
			r.cursor = idx
			return rec, nil
		}
	}
	return nil, nil
}

// ready validates rp's position and fetches its next records when none is buffered, again
// until no truncation of the log overtook the fetch. Callers hold mu.
func (r *Reader) ready(rp *readerPartition, borrow bool) error {
	for {
		if err := r.validate(rp); err != nil {
			return err
		}
		if !rp.buffered() {
			if err := r.fetch(rp, borrow); err != nil {
				return err
			}
		}
		// A truncation while fetching may have left records of either history: look again
		// (validate drops them).
		if rp.truncGen == rp.p.log.truncGen.Load() {
			return nil
		}
	}
}

// scanChunk is how many records a fetch of Scan decodes at a time (a batch is never split): the
// rest of its batches wait undecoded in the partition's buffer, so that the slab the records are
// decoded into (about 130 bytes a record) is read back from the CPU's cache rather than from
// memory, as Log.Scan's one record is.
const scanChunk = 256

// fetch reads the next records of rp into its buffer, applying the reset policy when its
// position is out of range; with borrow (Scan), into rp's spare buffer and slab, decoding
// scanChunk records at a time: the batches read and not decoded yet wait in rp.raw, and are
// decoded before the next read. Callers hold mu.
func (r *Reader) fetch(rp *readerPartition, borrow bool) error {
	for attempt := 0; ; attempt++ {
		var b []byte
		handed := false
		if borrow && len(rp.raw) > 0 {
			b, rp.raw = rp.raw, nil // batches of the last read of Scan, read from rp.pos on
		} else {
			rp.raw = nil // Next reads anew, into its own buffer
			var err error
			if b, handed, err = r.read(rp, borrow); err != nil {
				if errors.Is(err, ErrOffsetOutOfRange) && attempt == 0 && r.cfg.Reset != ResetNone {
					from := rp.pos
					if r.cfg.Reset == ResetEarliest {
						rp.setPosition(rp.p.LogStartOffset())
					} else {
						rp.setPosition(r.end(rp.p))
					}
					rp.p.log.logger.Info("reader position out of range; reset", "reader", r.cfg.Name,
						"topic", rp.p.Topic(), "partition", rp.p.id, "from", from, "to", rp.pos)
					continue
				}
				return fmt.Errorf("topic %s partition %d position %d: %w", rp.p.Topic(), rp.p.id, rp.pos, err)
			}
		}
		dec := ownedDecode{topic: rp.p.Topic(), partition: rp.p.id,
			maxDecompressed: rp.p.log.conf().readDecompressLimit(), epochs: &rp.epochs}
		if borrow {
			if r.scanDec == nil {
				r.scanDec = new(recordbatch.Decoder)
			}
			dec.reuse, dec.chunk, dec.dec = rp.spareRecs, scanChunk, r.scanDec
		}
		rp.epochs = rp.epochs[:0]
		recs, err := dec.decode(b, rp.pos)
		if err != nil {
			rp.epochs = rp.epochs[:0]
			return fmt.Errorf("topic %s partition %d position %d: %w", rp.p.Topic(), rp.p.id, rp.pos, err)
		}
		if borrow && dec.used < len(b) {
			rp.raw = b[dec.used:]
		}
		if len(recs) == 0 {
			if len(b) > 0 {
				// Only control records (or, under ReadCommitted, aborted batches): pass over
				// their offsets.
				rp.pos, rp.epoch = lastNextOffset(b[:dec.used])
				continue
			}
			return nil
		}
		if handed {
			r.scratch = nil
		}
		if borrow {
			rp.spareRecs = recs
		}
		rp.recs, rp.next, rp.borrowed = recs, 0, borrow
		return nil
	}
}

// read reads rp's batches from its position, up to MaxBytes below its end (the high watermark,
// or under ReadCommitted the last stable offset, aborted batches emptied): with borrow (Scan),
// into rp's spare buffer, grown by the reads to what they need (a partition tailed a record at a
// time keeps a small one); otherwise into the reader's, made MaxBytes at once. The records decoded
// from the batches alias them: handed says that the batches fill at least half of the reader's
// buffer, which the records then take; a smaller read's batches are copied out, so that a
// tailing reader's records do not hold MaxBytes each. No batches and no error at the end.
// Callers hold mu.
func (r *Reader) read(rp *readerPartition, borrow bool) (b []byte, handed bool, err error) {
	end := r.end(rp.p)
	if rp.pos == end || (r.cfg.Isolation == ReadCommitted && rp.pos > end && rp.pos <= rp.p.HighWatermark()) {
		return nil, false, nil
	}
	dst := &rp.spareData
	if !borrow {
		if dst = &r.scratch; *dst == nil {
			*dst = make([]byte, 0, r.cfg.MaxBytes)
		}
	}
	b, err = rp.p.ReadBatches((*dst)[:0], rp.pos, r.cfg.MaxBytes)
	if cap(b) > cap(*dst) {
		*dst = b[:0] // grown for a batch larger than MaxBytes
	}
	if err == nil && r.cfg.Isolation == ReadCommitted {
		b, err = r.committedOnly(rp, b, end)
	}
	if err != nil || borrow {
		return b, false, err
	}
	if len(b) >= cap(b)/2 {
		return b, true, nil
	}
	return slices.Clone(b), false, nil
}

// lastNextOffset returns the offset after the last of the back-to-back batches in b, and that
// batch's leader epoch.
func lastNextOffset(b []byte) (int64, int32) {
	var next int64
	epoch := UndefinedEpoch
	for len(b) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(b, 0)
		if err != nil || h.Size() > len(b) {
			break
		}
		next, epoch = h.NextOffset(), h.PartitionLeaderEpoch
		b = b[h.Size():]
	}
	return next, epoch
}

// validate checks rp's position against the log's leader epochs when it must (resumed from a
// commit, or the log was truncated since the last check), as Kafka's consumer validates its
// position with OffsetsForLeaderEpoch (KIP-320): the log's end offset for the epoch of the last
// record consumed (the start of the next higher epoch, or the log end offset for the latest)
// must not lie below the position. Below it, the log diverged there: the records the reader
// passed from that offset on were truncated, and others may have been appended at their offsets.
// Under ResetEarliest and ResetLatest the reader then moves to the divergence point, as Kafka's
// consumer with a reset policy seeks to the divergent offset; under ResetNone it stays, and
// validate returns a *LogTruncatedError, again at every Next until Seek, as Kafka's consumer
// throws LogTruncationException. Records fetched before a truncation are dropped: they may be of
// the old history. Callers hold mu.
//
// An epoch the log does not know and newer than all it knows (every record of it was cut, and
// the log has not yet been given a newer epoch) has, in Kafka, no end offset; here the log end
// offset stands for it: the cut removed the epoch's first record, so the log diverged at or
// above where the log now ends, and the log's later epochs will all be newer than it.
func (r *Reader) validate(rp *readerPartition) error {
	if g := rp.p.log.truncGen.Load(); g != rp.truncGen {
		rp.truncGen, rp.validate = g, true
		rp.drop()
	}
	if !rp.validate {
		return nil
	}
	if rp.epoch == UndefinedEpoch {
		rp.validate = false
		return nil
	}
	epoch, end := rp.p.log.endOffsetForEpoch(rp.epoch)
	if epoch == UndefinedEpoch || end < 0 {
		epoch, end = rp.epoch, rp.p.LogEndOffset()
	}
	if end >= rp.pos {
		rp.validate = false
		return nil
	}
	from := rp.pos
	if r.cfg.Reset == ResetNone {
		return &LogTruncatedError{Topic: rp.p.Topic(), Partition: rp.p.id, CommittedOffset: from,
			TruncatedOffset: end, LeaderEpoch: rp.epoch}
	}
	rp.pos, rp.epoch, rp.validate = end, epoch, false
	rp.drop()
	rp.p.log.logger.Info("reader position past a truncation; reset to the divergence point", "reader", r.cfg.Name,
		"topic", rp.p.Topic(), "partition", rp.p.id, "from", from, "leader_epoch", epoch, "to", end)
	return nil
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
	// Kafka's seek(partition, offset) carries no epoch, and skips validation.
	rp.pos, rp.epoch, rp.validate = offset, UndefinedEpoch, false
	rp.drop()
	rp.truncGen = rp.p.log.truncGen.Load()
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
		rp.setPosition(off)
		rp.truncGen = rp.p.log.truncGen.Load()
	}
	return nil
}

// SeekToTime moves every partition's position to its first record whose timestamp is >= t, to
// replay from a point in time. A partition with no such record (Partition.OffsetForTime returns
// ErrNoOffsetForTime; Kafka's offsetsForTimes returns null for it, and where to seek is the
// consumer's choice) is positioned at its high watermark: the reader reads the records appended
// from now on, which are the first at or after t once the clocks agree. ErrClosed after Close.
func (r *Reader) SeekToTime(t time.Time) error {
	return r.seekAll(func(p *Partition) (int64, error) { return offsetForTimeOrEnd(p, t) })
}

// offsetForTimeOrEnd is p.OffsetForTime(t), or p's high watermark when no record below it is
// that recent: where AtTime and SeekToTime put a reader.
func offsetForTimeOrEnd(p *Partition, t time.Time) (int64, error) {
	off, err := p.OffsetForTime(t)
	if errors.Is(err, ErrNoOffsetForTime) {
		return p.HighWatermark(), nil
	}
	return off, err
}

// SeekToEarliest moves every partition's position to its log start offset.
func (r *Reader) SeekToEarliest() error {
	return r.seekAll(func(p *Partition) (int64, error) { return p.LogStartOffset(), nil })
}

// SeekToLatest moves every partition's position to its high watermark (under ReadCommitted, its
// last stable offset): only records appended from now on are read.
func (r *Reader) SeekToLatest() error {
	return r.seekAll(func(p *Partition) (int64, error) { return r.end(p), nil })
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

// Lag returns, per partition read, how many offsets are left to read: from the reader's
// position, or the log start offset when retention (or DeleteRecords) has deleted the records
// at the position, to the high watermark, or under ReadCommitted the last stable offset (0 when
// caught up; negative never).
//
// Kafka's kafka-consumer-groups.sh shows LAG = LOG-END-OFFSET − CURRENT-OFFSET, the committed
// offset, and so counts deleted records while a group sits below the log start offset; its
// consumer cannot fetch from such a position (OFFSET_OUT_OF_RANGE) and first resets it by
// auto.offset.reset, after which its records-lag metric counts from the new position. Lag
// counts what the reader can still read, what the reset to the earliest offset leaves:
// high watermark − log start offset. Positions still returns the position itself.
func (r *Reader) Lag() map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[int32]int64, len(r.parts))
	for _, rp := range r.parts {
		m[rp.p.id] = max(r.end(rp.p)-max(rp.pos, rp.p.LogStartOffset()), 0)
	}
	return m
}

// Close stops the reader: a blocked Next returns ErrClosed, later calls return ErrClosed. A
// named reader with AutoCommitInterval commits its positions one last time, durably (fsynced). The name becomes
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
		// A deleted topic's positions are gone with it: nothing to commit.
		// Synced whatever SyncCommits says: it is the last, and a clean close is durable.
		if err = r.commit(true, false); errors.Is(err, errTopicDeleted) {
			err = nil
		}
	}
	if r.cfg.Name != "" {
		r.positions.closeReader(r.cfg.Name, r)
	}
	return err
}

// committedOnly cuts b, the batches read from rp's position, to those wholly below the last
// stable offset lso, and turns the batches of aborted transactions into empty ones in place, as
// Kafka's read_committed consumer drops them with the fetch response's aborted transactions: a
// transactional batch is aborted when its producer has an aborted transaction whose first offset
// is at or below the batch and whose ABORT marker is after it. An aborted batch keeps its header
// (its offsets are passed over) with its record count set to zero, so the decode returns nothing
// of it.
func (r *Reader) committedOnly(rp *readerPartition, b []byte, lso int64) ([]byte, error) {
	b = b[:belowOffset(b, lso)]
	if len(b) == 0 {
		return b, nil
	}
	aborted, err := rp.p.log.abortedTxns(nil, rp.pos, lso)
	if err != nil || len(aborted) == 0 {
		return b, err
	}
	out := b[:0]
	for rest := b; len(rest) >= recordbatch.HeaderSize; {
		h, err := recordbatch.ParseHeader(rest, 0)
		if err == nil && h.Size() > len(rest) {
			err = recordbatch.ErrShort
		}
		if err != nil {
			// ReadBatches hands out whole, checked batches: this is no torn read.
			return b, fmt.Errorf("%w: batch at offset %d: %w", ErrCorrupt, rp.pos, err)
		}
		batch := rest[:h.Size()]
		rest = rest[h.Size():]
		if h.Attributes.Transactional() && !h.Attributes.Control() && isAborted(aborted, h.ProducerID, h.BaseOffset) {
			// Dropped; if it is the last, its offsets must still be passed over: keep its
			// header only, as an empty control batch the decode skips.
			if len(rest) < recordbatch.HeaderSize {
				out = append(out, emptyControlHeader(&h)...)
			}
			continue
		}
		out = append(out, batch...)
	}
	return out, nil
}

// isAborted reports whether a batch of producer pid at offset belongs to one of the aborted
// transactions.
func isAborted(aborted []txnindex.AbortedTxn, pid, offset int64) bool {
	for _, a := range aborted {
		if a.ProducerID == pid && a.FirstOffset <= offset && offset < a.LastOffset {
			return true
		}
	}
	return false
}

// emptyControlHeader returns a batch of no records spanning h's offsets, marked control so that
// every decode passes over it: what stands in for a dropped last batch, so that the reader's
// position moves past it.
func emptyControlHeader(h *recordbatch.Header) []byte {
	e := *h
	e.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
	e.RecordCount = 0
	e.BatchLength = recordbatch.HeaderSize - 12
	b := make([]byte, recordbatch.HeaderSize)
	recordbatch.PutHeader(b, &e)
	return b
}
