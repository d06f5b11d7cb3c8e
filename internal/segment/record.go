package segment

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Buffers are the pooled buffers of reads: read-ahead buffers (Scratch) and decoders of
// compressed batches. A log keeps one for its segments' reads and passes it to ReadRecord (and
// its Scratch buffers to Read); the zero value is ready to use. Safe concurrently.
type Buffers struct {
	scratch  sync.Pool // *[]byte read-ahead buffers, LocateChunk to start with
	decoders sync.Pool // *recordbatch.Decoder for ReadRecord's compressed batches
}

// Scratch returns a pooled read-ahead buffer (length 0, capacity at least LocateChunk at first),
// for Read; PutScratch gives it back.
func (b *Buffers) Scratch() *[]byte {
	if p, ok := b.scratch.Get().(*[]byte); ok {
		return p
	}
	p := make([]byte, 0, LocateChunk)
	return &p
}

// PutScratch returns a buffer Scratch gave.
func (b *Buffers) PutScratch(p *[]byte) { b.scratch.Put(p) }

// decoder returns a pooled decoder for compressed batches, whose decompressors and buffer are
// reused from read to read, bounded to maxDecompressed bytes.
func (b *Buffers) decoder(maxDecompressed int) *recordbatch.Decoder {
	if d, ok := b.decoders.Get().(*recordbatch.Decoder); ok {
		return d
	}
	return &recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: maxDecompressed}}
}

// RecordFunc receives the record ReadRecord found: its batch's header and the record's view,
// passed by value so that a read allocates nothing (a pointer handed to a function value escapes
// to the heap). v's bytes alias the segment's mapping or a buffer of the read, valid only during
// the call: copy what you keep.
type RecordFunc func(h recordbatch.Header, v recordbatch.RecordView)

// ReadRecord finds the first record at or after offset and below end (the readable end: the log
// end offset or the high watermark) in the segment, looking from the batch at pos (a position
// Lookup gave for offset, or 0), below limit (the Size loaded with gen, its Truncations), and
// hands it to set (see RecordFunc). leo is the log end offset: a batch claiming it is damaged.
// Control batches (transaction markers) are skipped. found is false when the segment holds no
// such record (offset lies in a gap after its last one); ErrNoRecord when none is below end.
//
// The batch's CRC and record framing are checked on its first read; the positions of every
// PositionStride-th record then go to the segment's PositionCache, and later reads of the batch
// check nothing more and step over at most PositionStride-1 records, and go straight to the
// batch, without reading a header on the way, when the last read from the same index position
// found it. Batches of one record, and compressed batches (decompressed whole with a decoder of
// bufs), are checked at every read. Where the file system's mappings share the file's pages the
// bytes are read in place through a read-only mapping (see the package documentation for the
// mapping rule), elsewhere with ReadAt into a buffer of bufs. A fault on a mapped page (a disk
// error, or the file cut outside this package) is the read's ErrCorrupt, not a crash.
//
// Errors wrap ErrCorrupt naming the file, the batch's position and offset, or are the file
// system's. Concurrency as for Read.
func (s *Segment) ReadRecord(offset, end, leo, pos, limit int64, gen uint64, bufs *Buffers, set RecordFunc) (found bool, err error) {
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
	buf := readBuf{bufs: bufs}
	defer buf.put()
	anchor := positionKey{seg: s, gen: gen, pos: pos}
	if e := s.posCache.anchored(anchor); e != nil && e.holds(offset) && e.h.BaseOffset < end &&
		e.key.pos+int64(e.h.Size()) <= limit {
		// The batch the last read from this index position found holds offset: no header on
		// the way need be read.
		found, err := s.recordFromMarks(m, &buf, e.key.pos, &e.h, &e.marks, offset, int32(max(offset-e.h.BaseOffset, 0)), end, set)
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
			return false, ErrNoRecord
		case h.Attributes.Control():
			// Transaction markers are no records of the caller's.
			offset = max(offset, h.NextOffset())
			pos += size
			continue
		case h.LastOffset() < offset:
			pos += size
			continue
		}
		found, err := s.recordInBatch(m, &buf, anchor, pos, &h, offset, end, set)
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

// recordInBatch hands to set the first record at or after offset of the batch at pos, whose
// header is h, when it holds one below end. anchor is where the read began (the offset index's
// position), under which the cache remembers the batch.
func (s *Segment) recordInBatch(m *readMapping, buf *readBuf, anchor positionKey, pos int64, h *recordbatch.Header, offset, end int64, set RecordFunc) (bool, error) {
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
			return s.recordFromMarks(m, buf, pos, h, &e.marks, offset, delta, end, set)
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
		dec := buf.bufs.decoder(s.cfg.Load().MaxDecompressedBytes)
		defer buf.bufs.decoders.Put(dec)
		if _, sec, err = dec.RecordsSection(b); err != nil {
			return false, s.corruptError(pos, offset, err)
		}
	}
	if !cacheable {
		return s.walkToRecord(pos, h, sec, 0, false, offset, delta, end, set)
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
	return s.walkToRecord(pos, h, sec[marks.pos[k]:], k*PositionStride, marks.deltas == nil, offset, delta, end, set)
}

// recordFromMarks is recordInBatch for a batch in the cache: from the last mark at or before
// delta, it reads the records up to the next mark, and when none of them is at or after delta
// (a gap), the record at that mark.
func (s *Segment) recordFromMarks(m *readMapping, buf *readBuf, pos int64, h *recordbatch.Header, marks *recordMarks, offset int64, delta int32, end int64, set RecordFunc) (bool, error) {
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
		found, err := s.walkToRecord(pos, h, b, k*PositionStride, marks.deltas == nil, offset, delta, end, set)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// markRecords checks the framing of every record of an uncompressed batch whose records section
// is sec, and returns the position of every PositionStride-th record, with the offset deltas
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
	n := (count + PositionStride - 1) / PositionStride
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
		if i%PositionStride == 0 {
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
		if i%PositionStride == 0 {
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

// walkToRecord hands to set the first record of b (records of the batch at pos, from the
// batch's record number idx on) whose offset delta is >= delta. In a dense batch (see
// recordMarks) that is record number delta, reached by the records' lengths alone, and its offset
// delta must be delta. found is false when b holds none; ErrNoRecord when that record is at or
// past end.
func (s *Segment) walkToRecord(pos int64, h *recordbatch.Header, b []byte, idx int, dense bool, offset int64, delta int32, end int64, set RecordFunc) (bool, error) {
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
			return false, ErrNoRecord
		}
		set(*h, v)
		return true, nil
	}
	return false, nil
}

// readBuf is a read's buffer for the bytes it reads with ReadAt, taken from its Buffers only when
// a read needs one: reads through a mapping take none.
type readBuf struct {
	bufs *Buffers
	b    *[]byte
}

// get returns the buffer, grown to hold n bytes.
func (rb *readBuf) get(n int) []byte {
	if rb.b == nil {
		rb.b = rb.bufs.Scratch()
	}
	if cap(*rb.b) < n {
		*rb.b = make([]byte, n)
	}
	return (*rb.b)[:n]
}

// put returns the buffer to the pool, if one was taken.
func (rb *readBuf) put() {
	if rb.b != nil {
		rb.bufs.scratch.Put(rb.b)
	}
}
