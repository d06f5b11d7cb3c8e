package recordbatch

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuilderAdd(t *testing.T) {
	h := noProducer()
	h.BaseOffset = 42
	h.PartitionLeaderEpoch = 7
	hdrs := []RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}, {Key: "a", Value: []byte{}}}
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			h := h
			h.Attributes = h.Attributes.WithCodec(codec)
			var b Builder
			b.Reset(h)
			b.Add(1000, []byte("k0"), []byte("v0"), nil)
			b.Add(900, nil, []byte{}, hdrs) // older than the first: negative delta
			b.Add(1500, []byte{}, nil, nil)
			b.Add(1200, []byte("k3"), []byte("v3"), hdrs[:1])
			require.Equal(t, 4, b.Len())
			est := b.EstimatedSize()
			out, err := b.Finish()
			require.NoError(t, err)
			if codec == CodecNone {
				require.Equal(t, est, len(out))
			}

			got, err := Decode(out, Limits{})
			require.NoError(t, err)
			require.Equal(t, Header{
				BaseOffset: 42, BatchLength: int32(len(out) - LogOverhead), PartitionLeaderEpoch: 7,
				Magic: 2, CRC: ComputeCRC(out), Attributes: h.Attributes, LastOffsetDelta: 3,
				BaseTimestamp: 1000, MaxTimestamp: 1500, ProducerID: -1, ProducerEpoch: -1,
				BaseSequence: -1, RecordCount: 4,
			}, got.Header)
			require.Equal(t, []Record{
				{TimestampDelta: 0, OffsetDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
				{TimestampDelta: -100, OffsetDelta: 1, Key: nil, Value: []byte{}, Headers: hdrs},
				{TimestampDelta: 500, OffsetDelta: 2, Key: []byte{}, Value: nil},
				{TimestampDelta: 200, OffsetDelta: 3, Key: []byte("k3"), Value: []byte("v3"), Headers: hdrs[:1]},
			}, got.AppendRecords(nil))
			var ts, offs []int64
			for r := range got.Records() {
				ts = append(ts, got.RecordTimestamp(&r))
				offs = append(offs, got.RecordOffset(&r))
			}
			require.Equal(t, []int64{1000, 900, 1500, 1200}, ts)
			require.Equal(t, []int64{42, 43, 44, 45}, offs)

			_, err = Validate(out, Limits{})
			require.NoError(t, err)
		})
	}
}

func TestRecordSizeBound(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
		headers    []RecordHeader
		want       int
	}{
		{"null key and value", nil, nil, nil, 36},
		{"key and value", []byte("abc"), []byte("0123456789"), nil, 49},
		{"headers", []byte("k"), nil, []RecordHeader{{Key: "ab", Value: []byte("xyz")}, {Key: "c"}}, 37 + 15 + 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, RecordSizeBound(tc.key, tc.value, tc.headers))
			// It bounds the real size at any deltas, even the widest.
			for _, delta := range []int64{0, -1, 1 << 40, -(1 << 62)} {
				body := recordBodySize(delta, 1<<30, tc.key, tc.value, tc.headers)
				require.LessOrEqual(t, int64(sizeVarint(int32(body)))+body, int64(tc.want))
			}
		})
	}
}

func TestBuilderAddWithin(t *testing.T) {
	rec := func(i int) (int64, []byte, []byte) {
		return int64(1000 + i), fmt.Appendf(nil, "key-%d", i), fmt.Appendf(nil, "value-%03d", i)
	}
	// Each record takes 21 bytes and is bounded by 36+5+9 = 50: with a limit of HeaderSize+80
	// the second goes in (21+50 <= 80) and the third does not (42+50 > 80).
	limit := HeaderSize + 80
	var within, plain Builder
	within.Reset(noProducer())
	plain.Reset(noProducer())
	for i := range 2 {
		ts, k, v := rec(i)
		require.True(t, within.AddWithin(limit, ts, k, v, nil), "record %d", i)
		plain.Add(ts, k, v, nil)
	}
	ts, k, v := rec(2)
	require.False(t, within.AddWithin(limit, ts, k, v, nil), "the third record's bound passes the limit")
	require.Equal(t, 2, within.Len())
	got, err := within.Finish()
	require.NoError(t, err)
	want, err := plain.Finish()
	require.NoError(t, err)
	require.Equal(t, want, got, "the same bytes as Add")

	// The first record of a batch goes in whatever its size.
	within.Reset(noProducer())
	require.True(t, within.AddWithin(HeaderSize, ts, k, v, nil))
	require.Equal(t, 1, within.Len())
	require.Equal(t, int64(1002), within.h.BaseTimestamp)
}

func TestBuilderAttributesAndLogAppendTime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs Attributes
	}{
		{"create time", 0},
		{"log append time", AttrLogAppendTime},
		{"transactional", AttrTransactional},
		{"control", AttrControl | AttrTransactional},
		{"all bits zstd", AttrLogAppendTime | AttrTransactional | AttrControl | Attributes(CodecZstd)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Header{Attributes: tc.attrs, ProducerID: 1234, ProducerEpoch: 5, BaseSequence: 77,
				MaxTimestamp: 9_000}
			var b Builder
			b.Reset(h)
			b.Add(1_000, []byte("k"), []byte("v"), nil)
			b.Add(2_000, []byte("k"), []byte("v"), nil)
			out, err := b.Finish()
			require.NoError(t, err)
			got, err := Decode(out, Limits{})
			require.NoError(t, err)
			require.Equal(t, tc.attrs, got.Attributes)
			require.Equal(t, int64(1234), got.ProducerID)
			require.Equal(t, int16(5), got.ProducerEpoch)
			require.Equal(t, int32(77), got.BaseSequence)
			require.Equal(t, int64(1_000), got.BaseTimestamp)
			var ts []int64
			for r := range got.Records() {
				ts = append(ts, got.RecordTimestamp(&r))
			}
			if tc.attrs.LogAppendTime() {
				// The append time given to Reset is every record's timestamp.
				require.Equal(t, int64(9_000), got.MaxTimestamp)
				require.Equal(t, []int64{9_000, 9_000}, ts)
			} else {
				require.Equal(t, int64(2_000), got.MaxTimestamp)
				require.Equal(t, []int64{1_000, 2_000}, ts)
			}
		})
	}
}

func TestBuilderReuse(t *testing.T) {
	var b Builder
	var first []byte
	for i := range 3 {
		b.Reset(noProducer())
		for j := range 10 + i {
			b.Add(int64(j), []byte(fmt.Sprint("key", j)), []byte(fmt.Sprint("value", i, j)), nil)
		}
		out, err := b.Finish()
		require.NoError(t, err)
		got, err := Decode(out, Limits{})
		require.NoError(t, err)
		require.Equal(t, int32(10+i), got.RecordCount)
		recs := got.AppendRecords(nil)
		require.Equal(t, []byte(fmt.Sprint("value", i, 9)), recs[9].Value)
		if i == 0 {
			first = append([]byte(nil), out...)
		}
	}
	// A Reset to the same content gives the same bytes.
	b.Reset(noProducer())
	for j := range 10 {
		b.Add(int64(j), []byte(fmt.Sprint("key", j)), []byte(fmt.Sprint("value", 0, j)), nil)
	}
	out, err := b.Finish()
	require.NoError(t, err)
	require.Equal(t, first, out)
}

func TestBuilderEmptyBatch(t *testing.T) {
	// An empty batch keeps the header's fields: what compaction leaves to remember a producer.
	h := Header{BaseOffset: 10, LastOffsetDelta: 4, BaseTimestamp: 5, MaxTimestamp: 6,
		ProducerID: 3, ProducerEpoch: 1, BaseSequence: 0}
	var b Builder
	b.Reset(h)
	out, err := b.Finish()
	require.NoError(t, err)
	require.Len(t, out, HeaderSize)
	got, err := Decode(out, Limits{})
	require.NoError(t, err)
	require.Equal(t, int32(4), got.LastOffsetDelta)
	require.Equal(t, int64(5), got.BaseTimestamp)
	require.Equal(t, int64(6), got.MaxTimestamp)
	require.Zero(t, got.RecordCount)
	require.Empty(t, got.AppendRecords(nil))
	_, err = Validate(out, Limits{})
	require.ErrorIs(t, err, ErrCorrupt, "producers never send empty batches")

	var zero Builder
	out, err = zero.Finish()
	require.NoError(t, err)
	require.Len(t, out, HeaderSize)
	_, err = Decode(out, Limits{})
	require.NoError(t, err)
}

func TestEncodeRaw(t *testing.T) {
	// A compacted batch: offsets 0 and 3 remain of 0..5, timestamps as the original header.
	h := Header{BaseOffset: 100, LastOffsetDelta: 5, BaseTimestamp: 1_000, MaxTimestamp: 7_000,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Attributes: AttrTransactional}
	recs := []Record{
		{Attributes: 0, TimestampDelta: 10, OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")},
		{Attributes: 3, TimestampDelta: -10, OffsetDelta: 3, Key: []byte("b"), Value: nil,
			Headers: []RecordHeader{{Key: "x", Value: []byte("y")}}},
	}
	for _, codec := range allCodecs {
		h := h
		h.Attributes = h.Attributes.WithCodec(codec)
		out, err := Encode([]byte("prefix"), h, recs)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(out[:6]))
		got, err := Decode(out[6:], Limits{})
		require.NoError(t, err, codec)
		want := h
		want.Magic = 2
		want.RecordCount = 2
		want.BatchLength = int32(len(out) - 6 - LogOverhead)
		want.CRC = ComputeCRC(out[6:])
		require.Equal(t, want, got.Header, codec)
		require.Equal(t, recs, got.AppendRecords(nil), codec)
		if codec == CodecNone {
			again, err := Encode(nil, got.Header, got.AppendRecords(nil))
			require.NoError(t, err)
			require.Equal(t, out[6:], again)
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *Builder)
		want  error
	}{
		{"offset delta repeats", func(b *Builder) {
			b.AddRecord(Record{OffsetDelta: 1})
			b.AddRecord(Record{OffsetDelta: 1})
		}, ErrCorrupt},
		{"offset delta decreases", func(b *Builder) {
			b.AddRecord(Record{OffsetDelta: 2})
			b.AddRecord(Record{OffsetDelta: 1})
		}, ErrCorrupt},
		{"negative offset delta", func(b *Builder) { b.AddRecord(Record{OffsetDelta: -1}) }, ErrCorrupt},
		{"last offset delta below records", func(b *Builder) {
			b.AddRecord(Record{OffsetDelta: 0})
			b.AddRecord(Record{OffsetDelta: 4})
			b.SetHeaderFields(3, 0, 0)
		}, ErrCorrupt},
		{"unknown codec", func(b *Builder) {
			b.Reset(Header{Attributes: 5})
			b.Add(0, nil, nil, nil)
		}, ErrCorrupt},
	} {
		var b Builder
		b.Reset(noProducer())
		tc.build(&b)
		out, err := b.Finish()
		require.ErrorIs(t, err, tc.want, tc.name)
		require.Nil(t, out, tc.name)
	}
	_, err := Encode(nil, Header{LastOffsetDelta: 0}, []Record{{OffsetDelta: 0}, {OffsetDelta: 1}})
	require.True(t, errors.Is(err, ErrCorrupt), "records past the header's last offset delta")
}

// TestBuilderAllocs checks the encode hot path: once a Builder has built a batch, building the
// same batch again allocates nothing per record, and nothing at all when uncompressed.
func TestBuilderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
	key := make([]byte, 16)
	value := make([]byte, 100)
	hdrs := []RecordHeader{{Key: "trace", Value: []byte("abc")}}
	for _, codec := range allCodecs {
		var b Builder
		h := noProducer()
		h.Attributes = h.Attributes.WithCodec(codec)
		build := func() {
			b.Reset(h)
			for i := range 1000 {
				b.Add(int64(i), key, value, hdrs)
			}
			if _, err := b.Finish(); err != nil {
				t.Fatal(err)
			}
		}
		build()
		allocs := testing.AllocsPerRun(20, build)
		t.Logf("%s: %.1f allocs per 1000-record batch", codec, allocs)
		if codec == CodecNone {
			require.Zero(t, allocs, codec)
		} else {
			require.LessOrEqual(t, allocs, 1.0, codec)
		}
	}
}
