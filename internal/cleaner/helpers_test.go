package cleaner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// rec is a record of a test batch: its offset delta, its absolute timestamp (ms), key and value.
type rec struct {
	delta int32
	ts    int64
	key   []byte
	val   []byte
}

func b(s string) []byte { return []byte(s) }

// header returns a batch header at base with no producer.
func header(base int64) recordbatch.Header {
	return recordbatch.Header{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// build encodes one batch of h with recs (offset deltas as given, so offsets may have gaps), its
// BaseTimestamp the first record's timestamp and its LastOffsetDelta the larger of
// h.LastOffsetDelta and the last record's delta, and returns a copy of its bytes.
func build(t testing.TB, h recordbatch.Header, recs ...rec) []byte {
	t.Helper()
	var bl recordbatch.Builder
	last := h.LastOffsetDelta
	var base, maxTS int64
	if len(recs) > 0 {
		base, maxTS = recs[0].ts, recs[0].ts
		last = max(last, recs[len(recs)-1].delta)
	}
	if !h.Attributes.LogAppendTime() {
		h.BaseTimestamp = base
	}
	bl.Reset(h)
	for _, r := range recs {
		maxTS = max(maxTS, r.ts)
		bl.AddRecord(recordbatch.Record{OffsetDelta: r.delta, TimestampDelta: r.ts - base, Key: r.key, Value: r.val})
	}
	if h.Attributes.LogAppendTime() {
		maxTS = h.MaxTimestamp
	}
	bl.SetHeaderFields(last, base, maxTS)
	out, err := bl.Finish()
	require.NoError(t, err)
	return append([]byte(nil), out...)
}

// decoded is a record as a test compares it: absolute offset and timestamp, key and value.
type decoded struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
}

// decodeAll decodes the batch at the start of p, CRC included, and returns its header and records.
func decodeAll(t testing.TB, p []byte) (recordbatch.Header, []decoded) {
	t.Helper()
	bt, err := recordbatch.Decode(p, recordbatch.Limits{})
	require.NoError(t, err)
	require.Equal(t, len(p), bt.Size(), "bytes after the batch")
	var out []decoded
	for r := range bt.Records() {
		out = append(out, decoded{Offset: bt.RecordOffset(&r), Timestamp: bt.RecordTimestamp(&r), Key: r.Key, Value: r.Value})
	}
	return bt.Header, out
}

// mapOf returns a map of 1 MiB holding the keys at their offsets, in order.
func mapOf(t testing.TB, kv ...any) *OffsetMap {
	t.Helper()
	m := NewOffsetMap(1 << 20)
	for i := 0; i < len(kv); i += 2 {
		require.True(t, m.Put([]byte(kv[i].(string)), int64(kv[i+1].(int))))
	}
	return m
}
