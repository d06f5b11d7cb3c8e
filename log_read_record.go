package commitlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
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
	return l.readRecord(offset, -1, func(h recordbatch.Header, v recordbatch.RecordView) { setRecord(r, &h, &v) })
}

// readRecord is ReadRecord below hw (the partition's high watermark), or below the log end
// offset when hw < 0, handing the record found to set (which may be called again, by a read
// again after a truncation, the last call being the record read).
func (l *Log) readRecord(offset, hw int64, set segment.RecordFunc) error {
	for range maxReadRetries {
		retry, err := l.readRecordOnce(offset, hw, set)
		if !retry {
			return err
		}
	}
	return l.truncatedUnder(offset)
}

// readRecordOnce is one attempt of readRecord; retry says that a truncation of the segment read
// may have changed the bytes under it, and r and err are to be ignored.
func (l *Log) readRecordOnce(offset, hw int64, set segment.RecordFunc) (retry bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return false, ErrClosed
	}
	start, leo := l.logStartOffset, l.active().NextOffset()
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
		found, err := s.ReadRecord(offset, end, leo, pos, limit, gen, &l.bufs, set)
		changed := s.Truncations() != gen
		l.release(s)
		switch {
		case changed:
			return true, nil
		case errors.Is(err, segment.ErrNoRecord):
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
