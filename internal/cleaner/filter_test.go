package cleaner

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

func keepAll(*recordbatch.Header) bool { return true }

func TestFilterBatch(t *testing.T) {
	producer := func(base int64) recordbatch.Header {
		h := header(base)
		h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.PartitionLeaderEpoch = 7, 3, 40, 5
		return h
	}
	type want struct {
		res  Result
		recs []decoded // nil with res.Kept: compare header only
		// header fields of the output
		baseTimestamp   int64
		lastOffsetDelta int32
		horizonBit      bool
	}
	cases := []struct {
		name  string
		batch []byte
		rules Rules
		want  want
	}{
		{
			name:  "all kept: the batch unchanged",
			batch: build(t, header(10), rec{0, 1000, b("a"), b("1")}, rec{1, 1001, b("b"), b("2")}),
			rules: Rules{Map: mapOf(t, "a", 10, "b", 11)},
			want: want{
				res:           Result{Kept: true, Original: true, RecordsRead: 2, RecordsKept: 2, LastOffset: 11, MaxTimestamp: 1001, DeleteHorizon: -1},
				recs:          []decoded{{10, 1000, b("a"), b("1")}, {11, 1001, b("b"), b("2")}},
				baseTimestamp: 1000, lastOffsetDelta: 1,
			},
		},
		{
			name:  "superseded records removed",
			batch: build(t, header(0), rec{0, 1000, b("a"), b("1")}, rec{1, 1001, b("b"), b("2")}, rec{2, 1002, b("a"), b("3")}, rec{3, 1003, b("c"), b("4")}),
			rules: Rules{Map: mapOf(t, "a", 2, "b", 5, "c", 9)},
			want: want{
				res:           Result{Kept: true, RecordsRead: 4, RecordsKept: 1, LastOffset: 3, MaxTimestamp: 1002, DeleteHorizon: -1},
				recs:          []decoded{{2, 1002, b("a"), b("3")}},
				baseTimestamp: 1002, lastOffsetDelta: 3,
			},
		},
		{
			name:  "rebuilt batch keeps the original's last offset delta",
			batch: build(t, header(20), rec{0, 500, b("a"), b("1")}, rec{3, 510, b("b"), b("2")}),
			rules: Rules{Map: mapOf(t, "a", 20, "b", 30)},
			want: want{
				res:           Result{Kept: true, RecordsRead: 2, RecordsKept: 1, LastOffset: 23, MaxTimestamp: 500, DeleteHorizon: -1},
				recs:          []decoded{{20, 500, b("a"), b("1")}},
				baseTimestamp: 500, lastOffsetDelta: 3,
			},
		},
		{
			name:  "keyless removed",
			batch: build(t, header(0), rec{0, 1000, nil, b("x")}, rec{1, 1001, b("a"), b("1")}),
			rules: Rules{Map: mapOf(t, "a", 1)},
			want: want{
				res:           Result{Kept: true, RecordsRead: 2, RecordsKept: 1, LastOffset: 1, MaxTimestamp: 1001, DeleteHorizon: -1},
				recs:          []decoded{{1, 1001, b("a"), b("1")}},
				baseTimestamp: 1001, lastOffsetDelta: 1,
			},
		},
		{
			name: "past the map's latest offset: kept, keyless and tombstone too",
			batch: build(t, header(4),
				rec{0, 1000, b("a"), b("old")}, // at 4, superseded by a@5
				rec{1, 1001, b("a"), b("1")},   // at 5, the map's latest
				rec{2, 1002, nil, b("x")},      // past
				rec{3, 1003, b("a"), nil},      // past, a tombstone of a key the map holds at 5
				rec{4, 1004, b("z"), b("z")}),  // past
			rules: Rules{Map: mapOf(t, "a", 5), Now: 2000, DeleteRetention: 100},
			want: want{
				res: Result{Kept: true, RecordsRead: 5, RecordsKept: 4, Tombstones: 1, LastOffset: 8, MaxTimestamp: 1004, DeleteHorizon: 2100},
				recs: []decoded{{5, 1001, b("a"), b("1")}, {6, 1002, nil, b("x")}, {7, 1003, b("a"), nil},
					{8, 1004, b("z"), b("z")}},
				baseTimestamp: 2100, lastOffsetDelta: 4, horizonBit: true,
			},
		},
		{
			name:  "tombstone kept: delete horizon set to Now+DeleteRetention",
			batch: build(t, header(0), rec{0, 1000, b("a"), nil}, rec{1, 1005, b("b"), b("2")}),
			rules: Rules{Map: mapOf(t, "a", 0, "b", 1), Now: 5000, DeleteRetention: 100},
			want: want{
				res:           Result{Kept: true, RecordsRead: 2, RecordsKept: 2, Tombstones: 1, LastOffset: 1, MaxTimestamp: 1005, DeleteHorizon: 5100},
				recs:          []decoded{{0, 1000, b("a"), nil}, {1, 1005, b("b"), b("2")}},
				baseTimestamp: 5100, lastOffsetDelta: 1, horizonBit: true,
			},
		},
		{
			name:  "negative delete retention taken as 0",
			batch: build(t, header(0), rec{0, 1000, b("a"), nil}),
			rules: Rules{Map: mapOf(t, "a", 0), Now: 5000, DeleteRetention: -7},
			want: want{
				res:           Result{Kept: true, RecordsRead: 1, RecordsKept: 1, Tombstones: 1, LastOffset: 0, MaxTimestamp: 1000, DeleteHorizon: 5000},
				recs:          []decoded{{0, 1000, b("a"), nil}},
				baseTimestamp: 5000, lastOffsetDelta: 0, horizonBit: true,
			},
		},
		{
			name:  "all gone: dropped without KeepEmpty",
			batch: build(t, producer(0), rec{0, 1000, b("a"), b("1")}, rec{1, 1001, b("b"), b("2")}),
			rules: Rules{Map: mapOf(t, "a", 5, "b", 6)},
			want: want{
				res: Result{RecordsRead: 2, LastOffset: 1, DeleteHorizon: -1},
			},
		},
		{
			name:  "all gone: dropped when KeepEmpty says no",
			batch: build(t, producer(0), rec{0, 1000, b("a"), b("1")}),
			rules: Rules{Map: mapOf(t, "a", 5), KeepEmpty: func(*recordbatch.Header) bool { return false }},
			want: want{
				res: Result{RecordsRead: 1, LastOffset: 0, DeleteHorizon: -1},
			},
		},
		{
			name:  "all gone: written empty with KeepEmpty",
			batch: build(t, producer(0), rec{0, 1000, b("a"), b("1")}, rec{1, 1003, b("b"), b("2")}),
			rules: Rules{Map: mapOf(t, "a", 5, "b", 6), KeepEmpty: keepAll},
			want: want{
				res:           Result{Kept: true, RecordsRead: 2, LastOffset: 1, MaxTimestamp: 1003, DeleteHorizon: -1},
				baseTimestamp: -1, lastOffsetDelta: 1, // Kafka's writeEmptyHeader: NO_TIMESTAMP
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Filter
			dst := []byte("prefix")
			out, res, err := f.Batch(dst, c.batch, &c.rules)
			require.NoError(t, err)
			require.Equal(t, c.want.res, res)
			require.Equal(t, "prefix", string(out[:6]))
			out = out[6:]
			if !res.Kept {
				require.Empty(t, out)
				return
			}
			if res.Original {
				require.Equal(t, c.batch, out)
			}
			in, _ := decodeAll(t, c.batch)
			h, recs := decodeAll(t, out)
			require.Equal(t, c.want.recs, recs)
			require.Equal(t, int32(len(c.want.recs)), h.RecordCount)
			require.Equal(t, in.BaseOffset, h.BaseOffset)
			require.Equal(t, c.want.lastOffsetDelta, h.LastOffsetDelta)
			require.Equal(t, c.want.baseTimestamp, h.BaseTimestamp)
			require.Equal(t, res.MaxTimestamp, h.MaxTimestamp)
			require.Equal(t, c.want.horizonBit, h.Attributes.HasDeleteHorizon())
			require.Equal(t, in.ProducerID, h.ProducerID)
			require.Equal(t, in.ProducerEpoch, h.ProducerEpoch)
			require.Equal(t, in.BaseSequence, h.BaseSequence)
			require.Equal(t, in.PartitionLeaderEpoch, h.PartitionLeaderEpoch)
			require.Equal(t, recordbatch.CodecNone, h.Attributes.Codec())
		})
	}
}

// TestFilterTombstoneHorizon follows a tombstone through three cleans: the first sets the
// horizon, a second before it keeps the batch as it is, one at the horizon removes the tombstone
// and keeps the horizon on what is left.
func TestFilterTombstoneHorizon(t *testing.T) {
	var f Filter
	m := mapOf(t, "a", 0, "b", 1)
	in := build(t, header(0), rec{0, 1000, b("a"), nil}, rec{1, 1005, b("b"), b("2")})
	first, res, err := f.Batch(nil, in, &Rules{Map: m, Now: 5000, DeleteRetention: 100})
	require.NoError(t, err)
	require.Equal(t, int64(5100), res.DeleteHorizon)
	h, _ := decodeAll(t, first)
	ms, ok := h.DeleteHorizon()
	require.True(t, ok)
	require.Equal(t, int64(5100), ms)

	t.Run("second filter keeps the horizon", func(t *testing.T) {
		out, res, err := f.Batch(nil, first, &Rules{Map: m, Now: 5050, DeleteRetention: 1000})
		require.NoError(t, err)
		require.Equal(t, Result{Kept: true, Original: true, RecordsRead: 2, RecordsKept: 2, Tombstones: 1, LastOffset: 1, MaxTimestamp: 1005, DeleteHorizon: 5100}, res)
		require.Equal(t, first, out)
	})
	t.Run("kept at horizon-1", func(t *testing.T) {
		out, res, err := f.Batch(nil, first, &Rules{Map: m, Now: 5099})
		require.NoError(t, err)
		require.True(t, res.Original)
		require.Equal(t, 1, res.Tombstones)
		require.Equal(t, first, out)
	})
	t.Run("removed at the horizon", func(t *testing.T) {
		out, res, err := f.Batch(nil, first, &Rules{Map: m, Now: 5100})
		require.NoError(t, err)
		require.Equal(t, Result{Kept: true, RecordsRead: 2, RecordsKept: 1, LastOffset: 1, MaxTimestamp: 1005, DeleteHorizon: 5100}, res)
		h, recs := decodeAll(t, out)
		require.Equal(t, []decoded{{1, 1005, b("b"), b("2")}}, recs)
		require.True(t, h.Attributes.HasDeleteHorizon())
		require.Equal(t, int64(5100), h.BaseTimestamp)
		require.Equal(t, int32(1), h.LastOffsetDelta)
	})
	t.Run("removed after the horizon, batch gone", func(t *testing.T) {
		only := build(t, header(0), rec{0, 1000, b("a"), nil})
		m := mapOf(t, "a", 0)
		first, _, err := f.Batch(nil, only, &Rules{Map: m, Now: 5000, DeleteRetention: 100})
		require.NoError(t, err)
		out, res, err := f.Batch(nil, first, &Rules{Map: m, Now: 6000})
		require.NoError(t, err)
		require.Equal(t, Result{RecordsRead: 1, LastOffset: 0, DeleteHorizon: 5100}, res)
		require.Empty(t, out)
	})
}

func TestFilterEmptyBatchHeader(t *testing.T) {
	h := header(100)
	h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.PartitionLeaderEpoch = 77, 4, 1000, 9
	h.Attributes = recordbatch.Attributes(recordbatch.CodecGzip) | recordbatch.AttrTransactional
	in := build(t, h, rec{0, 1000, b("a"), b("1")}, rec{2, 3000, b("b"), nil}, rec{4, 2000, b("c"), b("3")})
	var f Filter
	var seen recordbatch.Header
	out, res, err := f.Batch(nil, in, &Rules{Map: mapOf(t, "a", 200, "b", 200, "c", 200), KeepEmpty: func(h *recordbatch.Header) bool {
		seen = *h
		return true
	}})
	require.NoError(t, err)
	require.Equal(t, int64(77), seen.ProducerID)
	require.Equal(t, Result{Kept: true, RecordsRead: 3, LastOffset: 104, MaxTimestamp: 3000, DeleteHorizon: -1}, res)
	eh, recs := decodeAll(t, out)
	require.Empty(t, recs)
	require.Equal(t, recordbatch.HeaderSize, len(out))
	require.Equal(t, int32(0), eh.RecordCount)
	require.Equal(t, int64(100), eh.BaseOffset)
	require.Equal(t, int32(4), eh.LastOffsetDelta)
	require.Equal(t, int64(77), eh.ProducerID)
	require.Equal(t, int16(4), eh.ProducerEpoch)
	require.Equal(t, int32(1000), eh.BaseSequence)
	require.Equal(t, int32(9), eh.PartitionLeaderEpoch)
	require.Equal(t, recordbatch.CodecNone, eh.Attributes.Codec())
	require.True(t, eh.Attributes.Transactional())
	require.False(t, eh.Attributes.HasDeleteHorizon())
	require.Equal(t, int64(-1), eh.BaseTimestamp, "Kafka's writeEmptyHeader writes NO_TIMESTAMP")
	require.Equal(t, int64(3000), eh.MaxTimestamp)
}

func TestFilterCodecs(t *testing.T) {
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLZ4, recordbatch.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			h := header(50)
			h.Attributes = recordbatch.Attributes(codec)
			in := build(t, h, rec{0, 1000, b("a"), b("old")}, rec{1, 1001, b("b"), b("bee")}, rec{2, 999, b("a"), b("new")}, rec{3, 1003, b("c"), nil})
			var f Filter
			out, res, err := f.Batch(nil, in, &Rules{Map: mapOf(t, "a", 52, "b", 51, "c", 53), Now: 10_000, DeleteRetention: 10})
			require.NoError(t, err)
			require.Equal(t, Result{Kept: true, RecordsRead: 4, RecordsKept: 3, Tombstones: 1, LastOffset: 53, MaxTimestamp: 1003, DeleteHorizon: 10_010}, res)
			oh, recs := decodeAll(t, out)
			require.Equal(t, codec, oh.Attributes.Codec())
			require.True(t, oh.Attributes.HasDeleteHorizon())
			require.Equal(t, int64(10_010), oh.BaseTimestamp)
			require.Equal(t, int64(1003), oh.MaxTimestamp)
			require.Equal(t, int32(3), oh.LastOffsetDelta)
			require.Equal(t, []decoded{{51, 1001, b("b"), b("bee")}, {52, 999, b("a"), b("new")}, {53, 1003, b("c"), nil}}, recs)
		})
	}
}

func TestFilterLogAppendTime(t *testing.T) {
	h := header(0)
	h.Attributes = recordbatch.AttrLogAppendTime
	h.MaxTimestamp = 9999
	in := build(t, h, rec{0, 1000, b("a"), b("1")}, rec{1, 1001, b("a"), b("2")}, rec{2, 1002, b("b"), b("3")})
	var f Filter
	out, res, err := f.Batch(nil, in, &Rules{Map: mapOf(t, "a", 1, "b", 2)})
	require.NoError(t, err)
	require.Equal(t, Result{Kept: true, RecordsRead: 3, RecordsKept: 2, LastOffset: 2, MaxTimestamp: 9999, DeleteHorizon: -1}, res)
	oh, recs := decodeAll(t, out)
	require.True(t, oh.Attributes.LogAppendTime())
	require.Equal(t, int64(9999), oh.MaxTimestamp)
	require.Equal(t, []decoded{{1, 9999, b("a"), b("2")}, {2, 9999, b("b"), b("3")}}, recs)
}

func TestFilterControlBatch(t *testing.T) {
	h := header(8)
	h.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
	h.ProducerID, h.ProducerEpoch = 5, 1
	// A COMMIT marker: key version 0, type 1; value version 0, coordinator epoch 0.
	in := build(t, h, rec{0, 1234, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 0}})
	var f Filter
	out, res, err := f.Batch([]byte{1}, in, &Rules{Map: NewOffsetMap(1 << 10), KeepEmpty: keepAll})
	require.NoError(t, err)
	require.Equal(t, Result{Kept: true, Original: true, RecordsRead: 1, RecordsKept: 1, LastOffset: 8, MaxTimestamp: 1234, DeleteHorizon: -1}, res)
	require.Equal(t, append([]byte{1}, in...), out)
}

func TestFilterCorrupt(t *testing.T) {
	in := build(t, header(0), rec{0, 1000, b("a"), b("1")})
	bad := append([]byte(nil), in...)
	bad[len(bad)-1] ^= 1
	var f Filter
	dst := []byte("keep")
	out, res, err := f.Batch(dst, bad, &Rules{Map: mapOf(t, "a", 0)})
	require.ErrorIs(t, err, recordbatch.ErrCorrupt)
	require.Equal(t, Result{}, res)
	require.Equal(t, "keep", string(out))
	_, _, err = f.Batch(nil, in[:len(in)-1], &Rules{Map: mapOf(t, "a", 0)})
	require.ErrorIs(t, err, recordbatch.ErrShort)
}

// TestFilterKafkaDecodes filters a run of batches with offset gaps into one segment's bytes and
// reads them back with franz-go's kmsg, Kafka's wire format as a client decodes it.
func TestFilterKafkaDecodes(t *testing.T) {
	prod := header(10)
	prod.ProducerID, prod.ProducerEpoch, prod.BaseSequence = 42, 2, 17
	in := [][]byte{
		build(t, header(0), rec{0, 100, b("a"), b("a0")}, rec{1, 101, b("b"), b("b1")}, rec{2, 102, b("c"), b("c2")}),
		build(t, header(5), rec{0, 105, b("a"), b("a5")}, rec{2, 107, b("c"), nil}),
		build(t, prod, rec{0, 110, b("b"), b("b10")}),
		build(t, header(11), rec{0, 111, b("b"), b("b11")}, rec{1, 112, b("d"), b("d12")}),
	}
	m := NewOffsetMap(1 << 20)
	var d recordbatch.Decoder
	for _, p := range in {
		added, err := m.AddBatch(&d, p)
		require.NoError(t, err)
		require.True(t, added)
	}
	rules := Rules{Map: m, Now: 1000, DeleteRetention: 500, KeepEmpty: func(h *recordbatch.Header) bool { return h.ProducerID == 42 }}
	var f Filter
	var seg []byte
	for _, p := range in {
		var err error
		seg, _, err = f.Batch(seg, p, &rules)
		require.NoError(t, err)
	}

	type kb struct {
		first      int64
		lastDelta  int32
		numRecords int32
		attrs      int16
		producer   int64
		epoch      int16
		seq        int32
		offsets    []int64
		values     []string
	}
	var got []kb
	for len(seg) > 0 {
		var rb kmsg.RecordBatch
		require.NoError(t, rb.ReadFrom(seg))
		size := 12 + int(rb.Length)
		require.Equal(t, int8(2), rb.Magic)
		require.Equal(t, crc32.Checksum(seg[21:size], crc32.MakeTable(crc32.Castagnoli)), uint32(rb.CRC))
		k := kb{first: rb.FirstOffset, lastDelta: rb.LastOffsetDelta, numRecords: rb.NumRecords, attrs: rb.Attributes,
			producer: rb.ProducerID, epoch: rb.ProducerEpoch, seq: rb.FirstSequence}
		recs := rb.Records
		for range rb.NumRecords {
			l, n := binary.Varint(recs)
			require.Positive(t, n)
			var r kmsg.Record
			require.NoError(t, r.ReadFrom(recs[:n+int(l)]))
			k.offsets = append(k.offsets, rb.FirstOffset+int64(r.OffsetDelta))
			if r.Value == nil {
				k.values = append(k.values, "<nil>")
			} else {
				k.values = append(k.values, string(r.Value))
			}
			recs = recs[n+int(l):]
		}
		require.Empty(t, recs)
		got = append(got, k)
		seg = seg[size:]
	}
	require.Equal(t, []kb{
		{first: 5, lastDelta: 2, numRecords: 2, attrs: 0x40, producer: -1, epoch: -1, seq: -1, offsets: []int64{5, 7}, values: []string{"a5", "<nil>"}},
		{first: 10, lastDelta: 0, numRecords: 0, attrs: 0, producer: 42, epoch: 2, seq: 17},
		{first: 11, lastDelta: 1, numRecords: 2, attrs: 0, producer: -1, epoch: -1, seq: -1, offsets: []int64{11, 12}, values: []string{"b11", "d12"}},
	}, got)
}

// TestFilterRebuiltRecordAttributes: a rebuilt batch's records have attributes 0, as Kafka's
// MemoryRecordsBuilder writes them (the byte is unused), whatever the input held.
func TestFilterRebuiltRecordAttributes(t *testing.T) {
	var bl recordbatch.Builder
	bl.Reset(header(0))
	bl.AddRecord(recordbatch.Record{Attributes: 5, OffsetDelta: 0, Key: b("a"), Value: b("1")})
	bl.AddRecord(recordbatch.Record{Attributes: 7, OffsetDelta: 1, TimestampDelta: 1, Key: b("b"), Value: b("2")})
	in, err := bl.Finish()
	require.NoError(t, err)
	in = append([]byte(nil), in...)
	var f Filter
	out, res, err := f.Batch(nil, in, &Rules{Map: mapOf(t, "a", 5, "b", 1)})
	require.NoError(t, err)
	require.Equal(t, 1, res.RecordsKept)
	bt, err := recordbatch.Decode(out, recordbatch.Limits{})
	require.NoError(t, err)
	var attrs []int8
	for r := range bt.Records() {
		attrs = append(attrs, r.Attributes)
	}
	require.Equal(t, []int8{0}, attrs)
}

// TestFilterHorizonSaturates: delete.retention.ms of Long.MAX_VALUE ("for ever") holds the
// horizon at math.MaxInt64 rather than wrapping it into the past, which would delete at once.
func TestFilterHorizonSaturates(t *testing.T) {
	in := build(t, header(0), rec{0, 1000, b("a"), nil})
	var f Filter
	out, res, err := f.Batch(nil, in, &Rules{Map: mapOf(t, "a", 0), Now: 5000, DeleteRetention: math.MaxInt64})
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), res.DeleteHorizon)
	h, recs := decodeAll(t, out)
	require.Equal(t, int64(math.MaxInt64), h.BaseTimestamp)
	require.Equal(t, []decoded{{0, 1000, b("a"), nil}}, recs)
	_, res, err = f.Batch(nil, out, &Rules{Map: mapOf(t, "a", 0), Now: 1 << 62})
	require.NoError(t, err)
	require.True(t, res.Original)
	require.Equal(t, 1, res.Tombstones)
}
