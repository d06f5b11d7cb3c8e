package commitlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Header is a record header: a name (Key string) and a value (Value []byte). Names may repeat
// within a record and their order is kept, as in Kafka. A nil Value is a null header value.
// It is the codec's own type, so records are encoded without copying their headers.
type Header = recordbatch.RecordHeader

// Record is one event in a partition's log. Field names follow franz-go's kgo.Record.
type Record struct {
	// Key picks the partition; records with equal keys stay in order in one partition. A nil
	// Key is a null key (length -1 on disk); an empty non-nil Key is a key of length 0.
	Key []byte
	// Value is the payload; nil is a null value (a tombstone under compaction).
	Value []byte
	// Headers are carried as given, repeated names and order included.
	Headers []Header
	// Timestamp is the record's time, stored in milliseconds since the Unix epoch. On append a
	// zero Timestamp is set to the append time; under LogAppendTime it is always overwritten.
	Timestamp time.Time
	// Topic is the topic's name, set on append and on read.
	Topic string
	// Partition is the partition number, set on append and on read.
	Partition int32
	// Offset is the record's position in its partition, assigned at append, starting at 0;
	// never reused.
	Offset int64
}

// DecodeRecords decodes the RecordBatch v2 batches in batches (back to back, as ReadBatches
// returns them) and appends their records to dst, skipping records whose offset is below from
// and control batches (transaction markers, which Kafka's consumers never see). The records are
// the caller's: their keys, values and headers are copied out of batches, into one buffer per
// batch (so a record kept alive keeps its batch's bytes alive, no more). maxDecompressed bounds
// the decompressed size of one batch (0 means Kafka's default max.message.bytes).
//
// Returns ErrCorrupt (wrapping the codec's reason, with the batch's byte position) for a batch
// that does not decode; the records decoded before it are in the returned slice. Control batches
// and batches wholly below from are CRC-checked, not decoded.
func DecodeRecords(dst []*Record, batches []byte, from int64, maxDecompressed int) ([]*Record, error) {
	// The caller's bytes get the CRC check the log's reads give theirs; then the same one-pass
	// decoder serves both.
	end := 0
	var bad error
	for end < len(batches) {
		h, err := recordbatch.Check(batches[end:], 0)
		if err != nil {
			bad = fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, end, err)
			break
		}
		end += h.Size()
	}
	dst, err := decodeChecked(dst, batches[:end], from, maxDecompressed, 0)
	if err != nil {
		return dst, err
	}
	return dst, bad
}

// take copies p to the end of buf and returns the copy, capacity-limited so that appending to
// one field cannot overwrite the next, and the extended buf. A nil p stays nil (a null field).
func take(buf, p []byte) ([]byte, []byte) {
	if p == nil {
		return nil, buf
	}
	buf = append(buf, p...)
	return buf[len(buf)-len(p) : len(buf) : len(buf)], buf
}

// decodeChecked is DecodeRecords for batches the log's read has just CRC-checked (ReadBatches
// output): one pass over each batch (recordbatch.Decoder.EachRecord) instead of Decode's CRC
// check and two parses, the same ownership (a records slab, a byte buffer and a header slab per
// batch). With maxBytes > 0 it stops once the records taken hold that many bytes of keys and
// values, after at least one record, so that a read of one record copies one.
func decodeChecked(dst []*Record, batches []byte, from int64, maxDecompressed, maxBytes int) ([]*Record, error) {
	dec := recordbatch.Decoder{Limits: recordbatch.Limits{MaxBatchSize: -1, MaxDecompressedSize: maxDecompressed}}
	taken := 0
	for pos := 0; pos < len(batches); {
		h, err := recordbatch.ParseHeader(batches[pos:], 0)
		if err != nil || h.Size() > len(batches)-pos {
			return dst, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, pos, errors.Join(err, recordbatch.ErrShort))
		}
		if h.Attributes.Control() || h.LastOffset() < from {
			pos += h.Size()
			continue
		}
		var (
			buf  []byte
			slab []Record
			hdrs []Header
			full bool
		)
		_, err = dec.EachRecord(batches[pos:], func(h *recordbatch.Header, r *recordbatch.Record) bool {
			off := h.RecordOffset(r)
			if off < from {
				return true
			}
			if buf == nil {
				// Sized once a batch: the records section bounds every key, value and header
				// value in it.
				buf = make([]byte, 0, h.Size())
				slab = make([]Record, 0, min(int(h.RecordCount), h.Size()/6)) // a record takes 6 bytes at least
			}
			slab = append(slab, Record{Offset: off, Timestamp: time.UnixMilli(h.RecordTimestamp(r))})
			rec := &slab[len(slab)-1]
			rec.Key, buf = take(buf, r.Key)
			rec.Value, buf = take(buf, r.Value)
			if len(r.Headers) > 0 {
				start := len(hdrs)
				for _, hd := range r.Headers {
					var v []byte
					v, buf = take(buf, hd.Value)
					hdrs = append(hdrs, Header{Key: hd.Key, Value: v})
				}
				rec.Headers = hdrs[start:len(hdrs):len(hdrs)]
			}
			dst = append(dst, rec)
			taken += len(r.Key) + len(r.Value)
			full = maxBytes > 0 && taken >= maxBytes
			return !full
		})
		if err != nil {
			return dst, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, pos, err)
		}
		if full {
			return dst, nil
		}
		pos += h.Size()
	}
	return dst, nil
}
