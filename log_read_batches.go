package commitlog

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// ReadBatches appends to dst the whole batches that hold offset and the offsets after it, in
// order, up to maxBytes in total (the first batch is returned whole even when larger), and
// returns the extended slice. The batches are Kafka's bytes as stored: a broker can hand them to
// a fetch response unchanged. The first batch may start below offset (a batch is never split);
// batches never reach past the log end offset seen when the call began. The batches come from one
// segment, as a Kafka fetch's do: a read that reaches the end of a segment stops there, and the
// next read, from the offset after its last batch, goes on in the next segment. Every batch
// returned has a verified CRC.
//
// A truncation (TruncateTo) that cuts the segment while it is read does not show as damage: the
// read finds the offset again in the log as it now is, and returns its batches there, nothing at
// the new log end offset, or ErrOffsetOutOfRange past it. The batches returned are all of one
// history of the log, one that was current while the call ran.
//
// Reading at exactly the log end offset returns dst unchanged and no error. It returns
// ErrOffsetOutOfRange when offset < LogStartOffset or offset > LogEndOffset, ErrCorrupt (naming
// segment, position and offset) when the first batch it would return is corrupt, and ErrClosed
// after Close. Readers never block writers.
func (l *Log) ReadBatches(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	out, _, err := l.readBatches(dst, offset, maxBytes)
	return out, err
}

// maxReadRetries bounds the reads again of a read whose segment truncations keep overtaking:
// each needs a truncation of the segment, so more than a few means a log whose end moves back
// and forth faster than one batch can be read.
const maxReadRetries = 16

// readBatches is ReadBatches; logGen is the log's truncation count (truncGen) when the history
// the batches come from was current (see readSpot).
func (l *Log) readBatches(dst []byte, offset int64, maxBytes int) (out []byte, logGen uint64, err error) {
	buf := l.bufs.Scratch()
	defer l.bufs.PutScratch(buf)
	for range maxReadRetries {
		out, logGen, retry, err := l.readBatchesOnce(dst, offset, maxBytes, buf)
		if !retry {
			return out, logGen, err
		}
	}
	return dst, 0, l.truncatedUnder(offset)
}

// truncatedUnder is the error of a read that truncations of its segment overtook maxReadRetries
// times in a row.
func (l *Log) truncatedUnder(offset int64) error {
	return fmt.Errorf("%w: offset %d of %s: its segment was truncated under %d reads in a row", ErrOffsetOutOfRange, offset, l.dir, maxReadRetries)
}

// readBatchesOnce is one attempt of readBatches; retry says that a truncation of a segment read
// may have changed the bytes under it, and out and err are to be ignored.
func (l *Log) readBatchesOnce(dst []byte, offset int64, maxBytes int, buf *[]byte) (out []byte, logGen uint64, retry bool, err error) {
	sp, err := l.locate(offset)
	if err != nil || sp.s == nil {
		return dst, sp.logGen, false, err
	}
	for {
		out, found, err := sp.s.Read(dst, offset, sp.end, sp.pos, sp.limit, maxBytes, buf)
		// Whatever the read found (a short read, a header of other bytes, or batches whole),
		// bytes cut or written again since sp was taken may be in it.
		changed := sp.s.Truncations() != sp.gen
		l.release(sp.s)
		if changed {
			return dst, 0, true, nil
		}
		if err != nil {
			if l.isClosed() {
				return dst, 0, false, ErrClosed
			}
			return dst, 0, false, err
		}
		if found {
			return out, sp.logGen, false, nil
		}
		// offset lies in a gap after this segment's last batch (compaction leaves gaps): the
		// next segment holds the following offsets.
		if sp, err = l.nextSegment(sp.s, sp.end); err != nil || sp.s == nil {
			return dst, sp.logGen, false, err
		}
	}
}

// readSpot is where a read of an offset begins, all as of one moment under mu: the segment s
// holding the offset, acquired (the reader releases it), its truncation count gen, the position
// pos its offset index gives to scan from, its size limit, the log end offset end and the log's
// truncation count logGen. A segment's bytes below limit change only by a truncation of that
// segment, which counts in s.Truncations() before it cuts the file: a read that finds the count
// still gen after it read has read bytes of the history that was current at logGen. A read that
// finds it changed may have read cut or rewritten bytes, and locates the offset again; it never
// takes them for damage.
type readSpot struct {
	s          *segment.Segment
	gen        uint64
	pos, limit int64
	end        int64
	logGen     uint64
}

// locate returns the spot to read offset from (see readSpot). s is nil, with no error, when
// offset is the log end offset. ErrClosed after Close, ErrOffsetOutOfRange outside
// [LogStartOffset, LogEndOffset].
func (l *Log) locate(offset int64) (readSpot, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return readSpot{}, ErrClosed
	}
	start, end := l.logStartOffset, l.active().NextOffset()
	sp := readSpot{end: end, logGen: l.truncGen.Load()}
	if offset < start || offset > end {
		l.mu.RUnlock()
		return sp, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, l.dir, start, end)
	}
	if offset == end {
		l.mu.RUnlock()
		return sp, nil
	}
	s, gen, limit, pos, err := l.acquireLocked(offset)
	if err != nil {
		return readSpot{end: end}, err
	}
	sp.s, sp.gen, sp.limit, sp.pos = s, gen, limit, pos
	return sp, nil
}

// acquireLocked acquires the segment holding offset and returns it with its truncation count, its
// size and the position its offset index gives to scan from for offset, all as of one moment.
// Callers hold mu read-locked, with offset in [LogStartOffset, LogEndOffset); acquireLocked
// unlocks it (a segment whose files the cache closed is opened after that). On error the segment
// is released.
func (l *Log) acquireLocked(offset int64) (s *segment.Segment, gen uint64, limit, pos int64, err error) {
	s = l.segments[l.segments.find(offset)]
	s.Acquire()
	// Truncation counts under mu, before it cuts the file and changes the size: the count is
	// loaded with the size it goes with.
	gen, limit = s.Truncations(), s.Size()
	ready := s.FilesReady()
	if ready {
		pos = s.Lookup(offset)
	}
	l.mu.RUnlock()
	if !ready {
		if pos, err = l.openAndLookup(s, offset); err != nil {
			l.release(s)
			return nil, 0, 0, 0, err
		}
	}
	return s, gen, limit, pos, nil
}

// nextSegment returns the spot at the start of the segment after s (see readSpot), acquired, or
// one whose s is nil when no segment holds offsets below end (or the log closed meanwhile). The
// caller has released s.
func (l *Log) nextSegment(s *segment.Segment, end int64) (readSpot, error) {
	l.mu.RLock()
	sp := readSpot{end: end, logGen: l.truncGen.Load()}
	next := l.segments.after(s.BaseOffset())
	if next == nil || next.BaseOffset() >= end || l.closed {
		l.mu.RUnlock()
		return sp, nil
	}
	next.Acquire()
	sp.s, sp.gen, sp.limit = next, next.Truncations(), next.Size()
	ready := next.FilesReady()
	l.mu.RUnlock()
	if !ready {
		if err := l.openForRead(next); err != nil {
			l.release(next)
			return readSpot{end: end}, err
		}
	}
	return sp, nil
}

// openForRead opens the files of s, which the caller has acquired, when the file cache closed
// them. It runs outside mu: the writer's publication and other reads never wait for that I/O.
func (l *Log) openForRead(s *segment.Segment) error {
	if err := s.OpenFiles(); err != nil {
		if errors.Is(err, ErrClosed) || l.isClosed() {
			return ErrClosed
		}
		return fmt.Errorf("commitlog: open segment %s: %w", s.Path(segment.LogSuffix), err)
	}
	return nil
}

// openAndLookup opens s's files (see openForRead) and returns the offset index's position to scan
// from for offset, looked up under mu, where the active segment's index grows and truncation
// rebuilds a segment's indexes.
func (l *Log) openAndLookup(s *segment.Segment, offset int64) (int64, error) {
	if err := l.openForRead(s); err != nil {
		return 0, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	return s.Lookup(offset), nil
}

// segmentList is a log's segments, ordered by base offset; the last is the active segment.
type segmentList []*segment.Segment

// find returns the index of the segment whose range holds offset: the last one whose base offset
// is <= offset (0 when none is).
func (sl segmentList) find(offset int64) int {
	i := sort.Search(len(sl), func(i int) bool { return sl[i].BaseOffset() > offset })
	return max(i-1, 0)
}

// after returns the first segment whose base offset is above base, or nil.
func (sl segmentList) after(base int64) *segment.Segment {
	i := sort.Search(len(sl), func(i int) bool { return sl[i].BaseOffset() > base })
	if i == len(sl) {
		return nil
	}
	return sl[i]
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// ReadRecords returns the records from offset on, decoded from the batches ReadBatches(nil,
// offset, maxBytes) returns, until their keys and values total maxBytes: at least one record when
// offset is below the log end offset (unless the batches there hold only control records), none
// at the log end offset. ReadRecords(offset, 1) returns one record. The records are the caller's.
// Errors as for ReadBatches.
//
// Cost: a read of a few records (maxBytes up to 4 KiB) takes ReadRecord's path first, the offset
// index and the record position cache, and allocates only the record (its struct, one buffer of
// its bytes, its headers); it reads the batches as below only when the record at offset alone
// holds fewer than maxBytes of key and value, or no record lies at offset. A larger read decodes the batches once into one slab of
// records: uncompressed batches' keys, values and header values are not copied but point into
// the buffer the batches were read into, which the records own, so that a record kept alive keeps
// that read's bytes alive (up to maxBytes, or a copy the size of the batches when they fill less
// than half the buffer). That is three allocations a read, not three a batch or a record, but
// about 270 bytes of new memory a record of 116 bytes of key and value (the slab, the bytes, the
// slice of pointers), and with a small live heap a garbage collection about every 1 MiB read:
// as for Reader.Records, that, not the decode, is what a drain with ReadRecords costs over Scan,
// which reuses one record and its buffer.
func (l *Log) ReadRecords(offset int64, maxBytes int) ([]*Record, error) {
	return l.readRecords(offset, maxBytes, -1, l.ReadBatches, "", 0)
}

// singleReadMaxBytes is the largest maxBytes for which ReadRecords looks up its first record
// with ReadRecord's path before it reads whole batches.
const singleReadMaxBytes = 4 << 10

// readRecords is ReadRecords below hw (the log end offset when hw < 0), reading batches with read
// (ReadBatches, or the partition's, bounded by its high watermark), and setting topic and
// partition on the records.
func (l *Log) readRecords(offset int64, maxBytes int, hw int64, read func(dst []byte, offset int64, maxBytes int) ([]byte, error), topic string, partition int32) ([]*Record, error) {
	if maxBytes <= singleReadMaxBytes {
		one := new(ownedRecord)
		err := l.readRecord(offset, hw, func(h recordbatch.Header, v recordbatch.RecordView) { one.set(&h, &v) })
		// Anything else is answered by the batches' read, whose errors and empty results
		// ReadRecords promises: no record, an error, a record of fewer bytes than asked for,
		// or one past offset (offset in a control batch, where the batches' read returns none,
		// or in a gap).
		if err == nil && one.rec.Offset == offset && len(one.rec.Key)+len(one.rec.Value) >= maxBytes {
			one.rec.Topic, one.rec.Partition = topic, partition
			one.ptr[0] = &one.rec
			return one.ptr[:], nil
		}
	}
	pooled := l.getReadBuf()
	if cap(*pooled) == 0 {
		*pooled = make([]byte, 0, min(max(maxBytes, 64<<10), iterChunk))
	}
	b, err := read((*pooled)[:0], offset, maxBytes)
	if err != nil {
		*pooled = b
		l.putReadBuf(pooled)
		return nil, err
	}
	// The records alias the bytes they are decoded from: a well-filled buffer is theirs, a
	// small read's bytes are copied out so that its records do not keep the whole buffer.
	if len(b) >= cap(b)/2 {
		*pooled = nil
	} else {
		*pooled = b
		b = slices.Clone(b)
	}
	l.putReadBuf(pooled)
	dec := ownedDecode{topic: topic, partition: partition, maxDecompressed: l.conf().readDecompressLimit(), maxBytes: maxBytes}
	recs, err := dec.decode(b, offset)
	if len(recs) == 0 {
		return nil, err
	}
	out := make([]*Record, len(recs))
	for i := range recs {
		out[i] = &recs[i]
	}
	return out, err
}

// getReadBuf returns a pooled buffer for batches that are decoded and copied out before it goes
// back (putReadBuf): a read of one record does not allocate its whole batch.
func (l *Log) getReadBuf() *[]byte {
	if b, ok := l.readBufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// maxPooledReadBuf bounds the buffers kept for reuse: a rare huge read does not pin its memory.
const maxPooledReadBuf = 8 << 20

func (l *Log) putReadBuf(b *[]byte) {
	if *b != nil && cap(*b) <= maxPooledReadBuf {
		*b = (*b)[:0]
		l.readBufs.Put(b)
	}
}

// eachBatch calls fn with each batch of the log from the one holding offset from up to the log
// end offset, in order, its header parsed, reading DefaultReaderMaxBytes at a time: the walk of a
// whole log's batches (the coordinators' loads and read-backs of their internal logs). The batch
// bytes are valid only during the call. It stops at fn's first error and returns it; ErrCorrupt
// when a read hands back bytes that hold no whole batch; ReadBatches' errors.
func (l *Log) eachBatch(from int64, fn func(h recordbatch.Header, batch []byte) error) error {
	var buf []byte
	for off := from; off < l.LogEndOffset(); {
		var err error
		buf, err = l.ReadBatches(buf[:0], off, DefaultReaderMaxBytes)
		if err != nil {
			return fmt.Errorf("%s at %d: %w", l.Dir(), off, err)
		}
		if len(buf) == 0 {
			return nil
		}
		start := off
		for rest := buf; len(rest) >= recordbatch.HeaderSize; {
			h, err := recordbatch.ParseHeader(rest, 0)
			if err != nil || h.Size() > len(rest) {
				break
			}
			batch := rest[:h.Size()]
			rest = rest[h.Size():]
			off = h.NextOffset()
			if err := fn(h, batch); err != nil {
				return err
			}
		}
		if off == start {
			// ReadBatches hands back whole, checked batches: none taken means bytes no batch
			// header describes, which reading again would not change.
			return fmt.Errorf("%w: %s at %d holds no whole batch", ErrCorrupt, l.Dir(), off)
		}
	}
	return nil
}
