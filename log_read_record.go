package commitlog

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// ReadRecord reads the record at offset into r: the first record at or after offset, so that an
// offset in a gap (compaction leaves gaps; transaction markers, which Kafka's consumers never
// see, are skipped) reads the next record. It is the read for a program that looks records up by
// offset one at a time; Scan and ReadRecords serve reads of many.
//
// Every field of r is set. r's Key, Value and Headers (with their values) are overwritten in
// place, their storage reused (appended to from length 0) and grown when short, so a loop that
// passes the same r allocates nothing once its buffers have grown: pass a Record whose bytes you
// no longer need. A null key or value sets the field to nil, and the next read allocates it
// again. A record without headers leaves r.Headers at length 0, keeping its storage. A header
// name is reused when it equals the name at the same place in r.Headers, and allocated
// otherwise. Topic is set to "" and Partition to 0 (Partition.ReadRecord sets them).
//
// Errors: ErrOffsetOutOfRange when offset is below the log start offset or past the log end
// offset; ErrNoRecordYet when offset is the log end offset, or no record lies at or after offset
// below it (where ReadRecords returns an empty slice: ReadRecord has no record to return; a tail
// reader waits and reads the offset again); ErrCorrupt naming the segment file, the batch's
// position and the offset when the batch does not check (CRC, framing) or decode; ErrClosed
// after Close. Reads run concurrently with each other and with appends, retention and
// truncation; appends never wait for them, and TruncateTo waits only for the reads using its
// segment's mapping at that moment (each a few microseconds). A read that a truncation of its
// segment overtakes reads again.
//
// The guarantee: a batch's CRC (and the framing of its records) is checked the first time this
// process reads it with ReadRecord; while its positions stay in the store's record position cache
// (see WithRecordPositionCache), later reads of its records check nothing more. A batch whose
// positions the cache dropped is checked again on its next read.
//
// Cost: the offset index (mapped) gives a position at most index.interval.bytes before the batch;
// the batch headers from there, and then the record, are read in place through a read-only
// mapping of the segment file where the file system shares mappings (mmap, the memory file
// system; under the commitlog_nommap build tag they are read with pread, one call per header and
// one for the records). The first read of a batch checks it, and keeps the position of every 4th
// record: later reads of any of its records step over at most 3 records, and go to the batch
// without reading a header on the way when the last read from the same index position found it.
// Batches of one record are checked at every read (less work than caching them), and so are
// compressed batches, which are decompressed whole at every read and keep no positions: read
// those with Scan or ReadRecords. Nothing is allocated once r's buffers have grown, but a batch's
// cache entry on its first read, header names that change, and what decompression may take.
//
// Kafka has no single-record fetch: a Fetch returns whole batches from an offset, and the
// consumer's client walks them to the record it wants (the broker does not check CRCs on fetch;
// consumers do). ReadRecord is that walk done here, with the batch checked once per process.
func (l *Log) ReadRecord(offset int64, r *Record) error {
	return l.readRecord(offset, -1, r)
}

// errNoRecord ends a search that found no record below the readable end.
var errNoRecord = errors.New("no record")

// readRecord is ReadRecord below hw (the partition's high watermark), or below the log end
// offset when hw < 0.
func (l *Log) readRecord(offset, hw int64, r *Record) error {
	for range maxReadRetries {
		retry, err := l.readRecordOnce(offset, hw, r)
		if !retry {
			return err
		}
	}
	return l.truncatedUnder(offset)
}

// readRecordOnce is one attempt of readRecord; retry says that a truncation of the segment read
// may have changed the bytes under it, and r and err are to be ignored.
func (l *Log) readRecordOnce(offset, hw int64, r *Record) (retry bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return false, ErrClosed
	}
	start, leo := l.logStartOffset, l.active().nextOffset
	end := leo
	if hw >= 0 {
		end = min(hw, leo)
	}
	if offset < start || offset > leo {
		l.mu.RUnlock()
		return false, fmt.Errorf("%w: offset %d, log %s has records in [%d, %d)", ErrOffsetOutOfRange, offset, l.dir, start, end)
	}
	if offset >= end {
		l.mu.RUnlock()
		return false, fmt.Errorf("%w: offset %d, log %s has records in [%d, %d)", ErrNoRecordYet, offset, l.dir, start, end)
	}
	s, gen, limit, pos, err := l.acquireLocked(offset)
	if err != nil {
		return false, err
	}
	for {
		found, err := l.recordIn(s, offset, end, leo, pos, limit, gen, r)
		changed := s.truncations.Load() != gen
		l.release(s)
		switch {
		case changed:
			return true, nil
		case errors.Is(err, errNoRecord):
			return false, fmt.Errorf("%w: no record at or after offset %d below %d in log %s", ErrNoRecordYet, offset, end, l.dir)
		case err != nil && l.isClosed():
			return false, ErrClosed
		case err != nil || found:
			return false, err
		}
		// offset lies in a gap after this segment's last record: the next segment holds the
		// following offsets.
		sp, err := l.nextSegment(s, end)
		if err != nil {
			return false, err
		}
		if sp.s == nil {
			if l.isClosed() {
				return false, ErrClosed
			}
			return false, fmt.Errorf("%w: no record at or after offset %d below %d in log %s", ErrNoRecordYet, offset, end, l.dir)
		}
		s, gen, limit, pos = sp.s, sp.gen, sp.limit, 0
	}
}

// recordIn reads into r the first record at or after offset and below end in segment s, looking
// from the batch at pos, below limit (the segment's size when gen was its truncation count). leo
// is the log end offset: a batch claiming it is damaged. found is false when s holds no such
// record; errNoRecord when none is below end.
func (l *Log) recordIn(s *segment, offset, end, leo, pos, limit int64, gen uint64, r *Record) (found bool, err error) {
	m := s.mapping(limit)
	if m != nil {
		defer m.release()
		// A mapped page that cannot be read (a disk error, or the file cut by something other
		// than this log) faults; with SetPanicOnFault the fault is a panic of this goroutine,
		// turned here into the read's error, rather than a crash of the process.
		defer func() {
			if p := recover(); p != nil {
				fault, ok := p.(interface{ Addr() uintptr })
				if !ok || !m.holds(fault.Addr()) {
					panic(p) // a bug of this package (a nil dereference too has an address)
				}
				found, err = false, s.readError(pos, offset, fmt.Errorf("fault reading the mapped segment at address %#x (a disk error, or the file cut outside this log)", fault.Addr()))
			}
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	buf := readBuf{l: l}
	defer buf.put()
	anchor := positionKey{seg: s, gen: gen, pos: pos}
	if e := s.posCache.anchored(anchor); e != nil && e.holds(offset) && e.h.BaseOffset < end &&
		e.key.pos+int64(e.h.Size()) <= limit {
		// The batch the last read from this index position found holds offset: no header on
		// the way need be read.
		found, err := l.recordFromMarks(s, m, &buf, e.key.pos, &e.h, &e.marks, offset, int32(max(offset-e.h.BaseOffset, 0)), end, r)
		if err != nil || found {
			return found, err
		}
		// offset lies after the batch's last record: the walk below goes on past it.
	}
	maxBatch := s.maxBatchSize()
	for pos < limit {
		if limit-pos < recordbatch.HeaderSize {
			return false, s.corruptError(pos, offset, recordbatch.ErrShort)
		}
		hb, err := s.bytesAt(m, &buf, pos, recordbatch.HeaderSize)
		if err != nil {
			return false, s.readError(pos, offset, err)
		}
		h, err := recordbatch.ParseHeader(hb, maxBatch)
		if err != nil {
			return false, s.corruptError(pos, offset, err)
		}
		size := int64(h.Size())
		switch {
		case size > limit-pos:
			return false, s.corruptError(pos, offset, recordbatch.ErrShort)
		case h.BaseOffset >= leo:
			// As in ReadBatches: every batch below limit was published before leo was read.
			return false, s.corruptError(pos, offset, fmt.Errorf("%w: base offset %d at or past the log end offset %d",
				recordbatch.ErrCorrupt, h.BaseOffset, leo))
		case h.BaseOffset >= end:
			return false, errNoRecord
		case h.Attributes.Control():
			// Transaction markers are no records of the caller's.
			offset = max(offset, h.NextOffset())
			pos += size
			continue
		case h.LastOffset() < offset:
			pos += size
			continue
		}
		found, err := l.recordInBatch(s, m, &buf, anchor, pos, &h, offset, end, r)
		if err != nil || found {
			return found, err
		}
		// offset lies after the batch's last record (compaction removed the records up to its
		// last offset).
		offset = h.NextOffset()
		pos += size
	}
	return false, nil
}

// recordInBatch reads into r the first record at or after offset of the batch at pos, whose
// header is h, when it holds one below end. anchor is where the read began (the offset index's
// position), under which the cache remembers the batch.
func (l *Log) recordInBatch(s *segment, m *readMapping, buf *readBuf, anchor positionKey, pos int64, h *recordbatch.Header, offset, end int64, r *Record) (bool, error) {
	delta := int32(max(offset-h.BaseOffset, 0)) // offset <= h.LastOffset()
	size := h.Size()
	cache := s.posCache
	uncompressed := h.Attributes.Codec() == recordbatch.CodecNone
	cacheable := uncompressed && h.RecordCount >= 2 && cache != nil && cache.limit > 0
	key := positionKey{seg: s, gen: anchor.gen, pos: pos}
	if cacheable {
		if e := cache.get(key); e != nil && e.matches(h) {
			if e.holds(offset) {
				cache.setAnchor(anchor, e)
			}
			return l.recordFromMarks(s, m, buf, pos, h, &e.marks, offset, delta, end, r)
		}
	}

	b, err := s.bytesAt(m, buf, pos, size)
	if err != nil {
		return false, s.readError(pos, offset, err)
	}
	if _, err := recordbatch.Check(b, s.maxBatchSize()); err != nil {
		return false, s.corruptError(pos, offset, err)
	}
	sec := b[recordbatch.HeaderSize:]
	if !uncompressed {
		dec := l.getDecoder()
		defer l.decoders.Put(dec)
		if _, sec, err = dec.RecordsSection(b); err != nil {
			return false, s.corruptError(pos, offset, err)
		}
	}
	if !cacheable {
		return walkToRecord(s, pos, h, sec, 0, false, offset, delta, end, r)
	}
	marks, err := markRecords(h, sec)
	if err != nil {
		return false, s.corruptError(pos, offset, err)
	}
	e := &positionEntry{key: key, h: *h, marks: marks}
	cache.put(e)
	if e.holds(offset) {
		cache.setAnchor(anchor, e)
	}
	k := marks.mark(delta)
	return walkToRecord(s, pos, h, sec[marks.pos[k]:], k*positionStride, marks.deltas == nil, offset, delta, end, r)
}

// recordFromMarks is recordInBatch for a batch in the cache: from the last mark at or before
// delta, it reads the records up to the next mark, and when none of them is at or after delta
// (a gap), the record at that mark.
func (l *Log) recordFromMarks(s *segment, m *readMapping, buf *readBuf, pos int64, h *recordbatch.Header, marks *recordMarks, offset int64, delta int32, end int64, r *Record) (bool, error) {
	sec := pos + recordbatch.HeaderSize
	secLen := h.Size() - recordbatch.HeaderSize
	for k := marks.mark(delta); k < len(marks.pos); k++ {
		from, to := int(marks.pos[k]), secLen
		if k+1 < len(marks.pos) {
			to = int(marks.pos[k+1])
		}
		b, err := s.bytesAt(m, buf, sec+int64(from), to-from)
		if err != nil {
			return false, s.readError(pos, offset, err)
		}
		found, err := walkToRecord(s, pos, h, b, k*positionStride, marks.deltas == nil, offset, delta, end, r)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// markRecords checks the framing of every record of an uncompressed batch whose records section
// is sec, and returns the position of every positionStride-th record, with the offset deltas
// when the batch has gaps. In a dense batch (LastOffsetDelta+1 records: record i must have
// offset delta i) it reads the records' lengths only: RecordCount records must fill the section
// exactly, and a read checks the offset delta of the record it returns (walkToRecord). In a
// batch with gaps it also checks that offset deltas increase up to LastOffsetDelta, as Decode
// does, since reads find records by them.
func markRecords(h *recordbatch.Header, sec []byte) (recordMarks, error) {
	count := int(h.RecordCount)
	// A record takes at least 7 bytes: the count is bounded by the bytes before it sizes anything.
	if count == 0 || count > len(sec)/7 {
		return recordMarks{}, fmt.Errorf("%w: record count %d in %d bytes of records", recordbatch.ErrCorrupt, count, len(sec))
	}
	n := (count + positionStride - 1) / positionStride
	marks := recordMarks{pos: make([]uint32, 0, n)}
	dense := int64(h.LastOffsetDelta) == int64(count)-1
	if !dense {
		marks.deltas = make([]int32, 0, n)
	}
	prev := int32(-1)
	p := 0
	for i := range count {
		if p == len(sec) {
			return recordMarks{}, fmt.Errorf("%w: record count %d, only %d records present", recordbatch.ErrCorrupt, count, i)
		}
		if i%positionStride == 0 {
			marks.pos = append(marks.pos, uint32(p))
		}
		if dense {
			n, err := recordbatch.SkipRecord(sec[p:], i)
			if err != nil {
				return recordMarks{}, err
			}
			p += n
			continue
		}
		d, n, err := recordbatch.PeekRecord(sec[p:], i)
		if err != nil {
			return recordMarks{}, err
		}
		if d <= prev || d > h.LastOffsetDelta {
			return recordMarks{}, fmt.Errorf("%w: record %d: offset delta %d after %d, last offset delta %d", recordbatch.ErrCorrupt, i, d, prev, h.LastOffsetDelta)
		}
		if i%positionStride == 0 {
			marks.deltas = append(marks.deltas, d)
		}
		prev = d
		p += n
	}
	if p != len(sec) {
		return recordMarks{}, fmt.Errorf("%w: %d bytes after the last of %d records", recordbatch.ErrCorrupt, len(sec)-p, count)
	}
	return marks, nil
}

// walkToRecord reads into r the first record of b (records of the batch at pos, from the
// batch's record number idx on) whose offset delta is >= delta. In a dense batch (see
// recordMarks) that is record number delta, reached by the records' lengths alone, and its offset
// delta must be delta. found is false when b holds none; errNoRecord when that record is at or
// past end.
func walkToRecord(s *segment, pos int64, h *recordbatch.Header, b []byte, idx int, dense bool, offset int64, delta int32, end int64, r *Record) (bool, error) {
	p := 0
	if dense {
		for ; idx < int(delta) && p < len(b); idx++ {
			n, err := recordbatch.SkipRecord(b[p:], idx)
			if err != nil {
				return false, s.corruptError(pos, offset, err)
			}
			p += n
		}
		if p >= len(b) {
			return false, nil
		}
	}
	for ; p < len(b); idx++ {
		d, n, err := recordbatch.PeekRecord(b[p:], idx)
		if err != nil {
			return false, s.corruptError(pos, offset, err)
		}
		if d < delta && !dense {
			p += n
			continue
		}
		var v recordbatch.RecordView
		if _, err := recordbatch.ParseRecordView(b[p:], idx, &v); err != nil {
			return false, s.corruptError(pos, offset, err)
		}
		if dense && v.OffsetDelta != delta {
			return false, s.corruptError(pos, offset, fmt.Errorf("%w: record %d has offset delta %d in a batch of %d records whose last offset delta is %d",
				recordbatch.ErrCorrupt, idx, v.OffsetDelta, h.RecordCount, h.LastOffsetDelta))
		}
		if h.BaseOffset+int64(v.OffsetDelta) >= end {
			return false, errNoRecord
		}
		setRecord(r, h, &v)
		return true, nil
	}
	return false, nil
}

// setRecord copies the record v of the batch h into r, reusing r's storage (see ReadRecord).
func setRecord(r *Record, h *recordbatch.Header, v *recordbatch.RecordView) {
	r.Offset = h.BaseOffset + int64(v.OffsetDelta)
	ts := h.BaseTimestamp + v.TimestampDelta
	if h.Attributes.LogAppendTime() {
		ts = h.MaxTimestamp // Kafka hands every record of a LogAppendTime batch its max timestamp
	}
	r.Timestamp = time.UnixMilli(ts)
	r.Topic, r.Partition = "", 0
	r.Key = reuseBytes(r.Key, v.Key)
	r.Value = reuseBytes(r.Value, v.Value)
	n := v.HeaderCount
	hs := r.Headers
	if cap(hs) < n {
		// Grown over the whole capacity, so that the old headers' storage is reused below.
		hs = append(hs[:cap(hs)], make([]Header, n-cap(hs))...)
	}
	hs = hs[:n]
	w := v.Headers()
	for i := range hs {
		key, value, _ := w.Next() // ParseRecordView checked all n
		hd := &hs[i]
		if hd.Key != string(key) { // compared without a conversion
			hd.Key = string(key)
		}
		hd.Value = reuseBytes(hd.Value, value)
	}
	r.Headers = hs
}

// reuseBytes returns a copy of src in dst's storage: nil for a nil src (a null field), an empty
// non-nil slice for an empty one.
func reuseBytes(dst, src []byte) []byte {
	if src == nil {
		return nil
	}
	if dst == nil {
		dst = make([]byte, 0, len(src))
	}
	return append(dst[:0], src...)
}

// readBuf is a read's buffer for the bytes it reads with ReadAt, taken from the log's pool only
// when a read needs one: reads through a mapping take none.
type readBuf struct {
	l *Log
	b *[]byte
}

// get returns the buffer, grown to hold n bytes.
func (rb *readBuf) get(n int) []byte {
	if rb.b == nil {
		rb.b = rb.l.getScratch()
	}
	if cap(*rb.b) < n {
		*rb.b = make([]byte, n)
	}
	return (*rb.b)[:n]
}

// put returns the buffer to the pool, if one was taken.
func (rb *readBuf) put() {
	if rb.b != nil {
		rb.l.scratch.Put(rb.b)
	}
}

// getDecoder returns a pooled decoder for compressed batches: its decompressors and buffer are
// reused from read to read.
func (l *Log) getDecoder() *recordbatch.Decoder {
	if d, ok := l.decoders.Get().(*recordbatch.Decoder); ok {
		return d
	}
	return &recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: l.cfg.readDecompressLimit()}}
}
