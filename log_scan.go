package commitlog

import (
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// iterChunk is the read size of Scan once past its first batch: large enough that a system call
// brings many batches, small enough to stay in cache.
const iterChunk = 1 << 20

// Scan returns an iterator over the records from offset from up to the log end offset seen when
// the iteration starts, in offset order, skipping control batches: the zero-copy path for hot
// loops. Nothing is allocated or copied per record: the *Record yielded, and the bytes its Key,
// Value and Headers point to, belong to the iteration and are valid only until the loop body
// returns (the next step reuses them); copy what you keep, or use ReadRecords. Topic and
// Partition are left empty.
//
// The first read fetches one batch, so a loop that stops after a few records reads little; the
// following reads fetch 1 MiB at a time. Errors are yielded once, ending the iteration: those of
// ReadBatches (ErrOffsetOutOfRange when from is outside the log, ErrCorrupt naming the batch,
// ErrClosed), and ErrCorrupt for a batch whose records do not decode.
//
// The records yielded are all of one history of the log. A truncation (TruncateTo) while the
// iteration runs ends it quietly when it left the log end offset where the iteration had got to,
// and lets it go on when it cut only records not yielded yet. When it removed records already
// yielded, the iteration ends with ErrOffsetOutOfRange naming the offset the log was truncated
// to, rather than go on with records of another history at the offsets after them (Kafka's
// consumer, fetching at an offset its log truncated, gets OFFSET_OUT_OF_RANGE).
func (l *Log) Scan(from int64) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		l.scan(from, l.LogEndOffset(), yield)
	}
}

// scan yields the records of [from, end).
func (l *Log) scan(from, end int64, yield func(*Record, error) bool) {
	dec := recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: l.conf().readDecompressLimit()}}
	pooled := l.getReadBuf() // the iteration's records die with it, so the buffer is reused
	defer l.putReadBuf(pooled)
	buf := *pooled
	defer func() { *pooled = buf }()
	var rec Record
	lastTS := int64(math.MinInt64)
	var lastTime time.Time
	if start, leo := l.LogStartOffset(), l.LogEndOffset(); from < start || from > leo {
		yield(nil, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, from, l.dir, start, leo))
		return
	}
	chunk := 1         // the first read returns exactly one batch
	var histGen uint64 // the log's truncation count of the history the records yielded are of
	for next := from; next < end; chunk = iterChunk {
		b, logGen, err := l.readBatches(buf[:0], next, chunk)
		if err != nil {
			yield(nil, err)
			return
		}
		if next > from && logGen != histGen {
			// A truncation since the last read: the records yielded, [from, next), must be in the
			// history these batches are of.
			l.mu.RLock()
			to, cut := l.cutBelow(histGen, next)
			l.mu.RUnlock()
			if cut {
				yield(nil, fmt.Errorf("%w: log %s was truncated to %d under a scan from %d that had yielded records up to %d",
					ErrOffsetOutOfRange, l.dir, to, from, next-1))
				return
			}
		}
		histGen = logGen
		if len(b) == 0 {
			return // a gap up to the end (compaction), or a log cut meanwhile
		}
		buf = b
		for pos := 0; pos < len(b); {
			stop := false
			h, err := dec.EachRecord(b[pos:], func(h *recordbatch.Header, r *recordbatch.Record) bool {
				off := h.RecordOffset(r)
				if h.Attributes.Control() || off < next {
					return true
				}
				if off >= end {
					stop = true
					return false
				}
				// Field by field: a composite literal would clear and copy the whole struct.
				rec.Key, rec.Value, rec.Headers, rec.Offset = r.Key, r.Value, r.Headers, off
				if ts := h.RecordTimestamp(r); ts != lastTS {
					lastTime, lastTS = time.UnixMilli(ts), ts
				}
				rec.Timestamp = lastTime // every field is set again: the loop body may change them
				stop = !yield(&rec, nil)
				return !stop
			})
			if err != nil {
				yield(nil, fmt.Errorf("%w: batch at offset %d: %w", ErrCorrupt, next, err))
				return
			}
			if stop {
				return
			}
			pos += h.Size()
			next = max(next, h.NextOffset())
		}
	}
}
