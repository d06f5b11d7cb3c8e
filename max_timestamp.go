package commitlog

import (
	"fmt"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// MaxTimestamp returns the offset and the timestamp (ms since the Unix epoch) of the record of
// the largest timestamp in the partition, as Kafka's ListOffsets answers MAX_TIMESTAMP (-3,
// KIP-734): since Kafka 3.8 (KAFKA-16310) the offset of that record itself, not the last offset
// of its batch; of several records of that timestamp, the first. Under LogAppendTime every
// record of a batch has the batch's timestamp, so it is the batch's first record. Records below
// the log start offset do not count; control records (transaction markers) do, as in Kafka.
// When that record is not below the high watermark it is not committed yet, and, as Kafka's
// ListOffsets filters its answer by the last fetchable offset, there is no answer: offset and
// timestamp are -1, as for an empty log.
//
// The segments' largest timestamps, which the log keeps (the time index's largest entry), pick
// the segment, and one batch is read there; only a segment that the log start offset cuts
// (DeleteRecords, a follower's leader) is read from the log start offset on. Returns ErrClosed
// after the store closed, ErrCorrupt when a batch it reads cannot be read.
func (p *Partition) MaxTimestamp() (offset, timestampMs int64, err error) {
	return p.log.maxTimestamp(p.HighWatermark())
}

// maxTimestamp is MaxTimestamp for a log whose records below limit are readable.
func (l *Log) maxTimestamp(limit int64) (offset, ts int64, err error) {
	for range maxReadRetries {
		off, ts, retry, err := l.maxTimestampOnce()
		if err != nil {
			return -1, -1, err
		}
		if retry {
			continue
		}
		if off < 0 || off >= limit {
			return -1, -1, nil
		}
		return off, ts, nil
	}
	return -1, -1, fmt.Errorf("%w: the search for the largest timestamp in %s was overtaken by %d truncations in a row", ErrOffsetOutOfRange, l.dir, maxReadRetries)
}

// maxTimestampOnce is one attempt of maxTimestamp over the whole log; retry says that a
// truncation or a clean changed the segments meanwhile.
func (l *Log) maxTimestampOnce() (off, ts int64, retry bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return -1, -1, false, ErrClosed
	}
	gen := l.truncGen.Load()
	start, end := l.logStartOffset, l.active().NextOffset()
	// cut is the segment the log start offset cuts, whose kept largest timestamp may be one of
	// the records gone; best the segment of the largest kept timestamp of the others, the first
	// on a tie (Kafka's maxBy over the segments).
	type span struct{ base, next, ts, off int64 }
	cut, best := span{ts: -1}, span{ts: -1}
	for i := l.segments.find(start); i < len(l.segments); i++ {
		s := l.segments[i]
		sp := span{base: s.BaseOffset(), next: end, ts: s.MaxTimestamp(), off: s.OffsetOfMaxTimestamp()}
		if i+1 < len(l.segments) {
			sp.next = l.segments[i+1].BaseOffset()
		}
		switch {
		case sp.base < start:
			cut = sp
		case sp.ts > best.ts:
			best = sp
		}
	}
	l.mu.RUnlock()

	off, ts = -1, -1
	if cut.ts >= 0 {
		// The kept records of the cut segment are read; its first is the log start offset.
		if ts, off, err = l.maxTimestampIn(start, start, cut.next, -1); err != nil {
			return -1, -1, false, err
		}
	}
	if best.ts > ts {
		// The batch that holds the segment's largest timestamp, read from its last offset.
		bts, boff, err := l.maxTimestampIn(best.off, best.base, best.next, best.ts)
		if err == nil && bts != best.ts {
			// Not where the segment says (a batch whose largest timestamp its records do not
			// reach): the whole segment is read.
			bts, boff, err = l.maxTimestampIn(best.base, best.base, best.next, -1)
		}
		if err != nil {
			return -1, -1, false, err
		}
		if bts > ts {
			ts, off = bts, boff
		}
	}
	return off, ts, l.truncGen.Load() != gen, nil
}

// maxTimestampIn reads the batches from the one holding offset at on, up to offset to, and
// returns the largest timestamp of their records at offsets [from, to) with the offset of the
// first record that has it (-1, -1 when none). With want >= 0 it stops at the first record of
// timestamp want and reads only batches whose largest timestamp is want.
func (l *Log) maxTimestampIn(at, from, to, want int64) (ts, off int64, err error) {
	ts, off = -1, -1
	dec := recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: l.conf().readDecompressLimit()}}
	buf := l.getReadBuf()
	defer l.putReadBuf(buf)
	for pos := at; pos < to; {
		b, err := l.ReadBatches((*buf)[:0], pos, 64<<10)
		*buf = b
		if err != nil {
			return -1, -1, err
		}
		if len(b) == 0 {
			return ts, off, nil
		}
		for p := 0; p < len(b); {
			h, err := recordbatch.ParseHeader(b[p:], 0)
			if err != nil || h.Size() > len(b)-p {
				return -1, -1, fmt.Errorf("%w: %s: batch at offset %d: %w", ErrCorrupt, l.dir, pos, errorsJoinShort(err))
			}
			batch := b[p : p+h.Size()]
			p += h.Size()
			pos = h.LastOffset() + 1
			if h.BaseOffset >= to {
				return ts, off, nil
			}
			if h.MaxTimestamp <= ts || (want >= 0 && h.MaxTimestamp != want) {
				continue // no record of it beats the one found (or is the one wanted)
			}
			if _, err := dec.EachRecord(batch, func(h *recordbatch.Header, r *recordbatch.Record) bool {
				o := h.RecordOffset(r)
				if o < from || o >= to {
					return true
				}
				if t := h.RecordTimestamp(r); t > ts {
					ts, off = t, o
				}
				return want < 0 || ts != want
			}); err != nil {
				return -1, -1, fmt.Errorf("%w: %s: batch at offset %d: %w", ErrCorrupt, l.dir, h.BaseOffset, err)
			}
			if want >= 0 && ts == want {
				return ts, off, nil
			}
		}
	}
	return ts, off, nil
}

// errorsJoinShort is a header parse's error, or recordbatch.ErrShort for a batch cut short.
func errorsJoinShort(err error) error {
	if err != nil {
		return err
	}
	return recordbatch.ErrShort
}
