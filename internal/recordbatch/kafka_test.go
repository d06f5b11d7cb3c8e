package recordbatch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKafkaBrokerBatches(t *testing.T) {
	stream := unhex(t, kafkaStream)
	require.Len(t, stream, 299)
	batches := splitBatches(t, stream)
	require.Len(t, batches, 4)

	none := noProducer()
	want := []struct {
		h    Header
		recs []Record
		// absolute offsets and timestamps of the records
		offsets    []int64
		timestamps []int64
	}{
		{
			h: Header{BaseOffset: 0, BatchLength: 59, PartitionLeaderEpoch: 1, Magic: 2, CRC: 0x0318a270,
				LastOffsetDelta: 0, BaseTimestamp: 1503229838908, MaxTimestamp: 1503229838908,
				ProducerID: none.ProducerID, ProducerEpoch: none.ProducerEpoch, BaseSequence: none.BaseSequence, RecordCount: 1},
			recs:       []Record{{Value: []byte("123")}},
			offsets:    []int64{0},
			timestamps: []int64{1503229838908},
		},
		{
			h: Header{BaseOffset: 1, BatchLength: 64, PartitionLeaderEpoch: 2, Magic: 2, CRC: 0xc85cbd23,
				LastOffsetDelta: 1, BaseTimestamp: 1503229959532, MaxTimestamp: 1503229959700,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: 2},
			recs: []Record{
				{Value: []byte{}},
				{TimestampDelta: 168, OffsetDelta: 1, Value: []byte{}},
			},
			offsets:    []int64{1, 2},
			timestamps: []int64{1503229959532, 1503229959700},
		},
		{
			h: Header{BaseOffset: 3, BatchLength: 59, PartitionLeaderEpoch: 2, Magic: 2, CRC: 0x2e0b85b7,
				LastOffsetDelta: 0, BaseTimestamp: 1503229962141, MaxTimestamp: 1503229962141,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: 1},
			recs:       []Record{{Value: []byte("123")}},
			offsets:    []int64{3},
			timestamps: []int64{1503229962141},
		},
		{
			h: Header{BaseOffset: 0, BatchLength: 69, PartitionLeaderEpoch: 0, Magic: 2, CRC: 0x5cd8ef52,
				LastOffsetDelta: 0, BaseTimestamp: 1535546684353, MaxTimestamp: 1535546684353,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: 1},
			recs: []Record{{Value: []byte("hdr"),
				Headers: []RecordHeader{{Key: "hkey", Value: []byte("hval")}}}},
			offsets:    []int64{0},
			timestamps: []int64{1535546684353},
		},
	}
	for i, w := range want {
		raw := batches[i]
		require.Equal(t, w.h.CRC, ComputeCRC(raw), "batch %d crc", i)

		b, err := Decode(raw, Limits{})
		require.NoError(t, err, "batch %d", i)
		require.Equal(t, w.h, b.Header, "batch %d", i)
		recs := b.AppendRecords(nil)
		require.Equal(t, w.recs, recs, "batch %d", i)
		for j := range recs {
			require.Nil(t, recs[j].Key, "batch %d record %d: null key", i, j)
			require.NotNil(t, recs[j].Value, "batch %d record %d: non-null value", i, j)
			require.Equal(t, w.offsets[j], b.RecordOffset(&recs[j]))
			require.Equal(t, w.timestamps[j], b.RecordTimestamp(&recs[j]))
		}
		var iterated []Record
		for r := range b.Records() {
			iterated = append(iterated, r)
		}
		require.Equal(t, recs, iterated, "batch %d", i)

		h, err := Validate(raw, Limits{})
		require.NoError(t, err, "batch %d", i)
		require.Equal(t, w.h, h)

		// Decoded records and header re-encode to the broker's bytes.
		again, err := Encode(nil, b.Header, recs)
		require.NoError(t, err)
		require.Equal(t, raw, again, "batch %d", i)

		// So does the Builder fed the decoded records with the header's fields.
		var bl Builder
		bl.Reset(b.Header)
		for _, r := range recs {
			bl.AddRecord(r)
		}
		out, err := bl.Finish()
		require.NoError(t, err)
		require.Equal(t, raw, out, "batch %d via AddRecord and derived fields", i)
	}

	// The whole stream decodes batch after batch, Decode ignoring what follows each batch.
	var offsets []int64
	for rest := stream; len(rest) > 0; {
		b, err := Decode(rest, Limits{})
		require.NoError(t, err)
		for r := range b.Records() {
			offsets = append(offsets, b.RecordOffset(&r))
		}
		rest = rest[b.Size():]
	}
	require.Equal(t, []int64{0, 1, 2, 3, 0}, offsets)
}

// TestGoldenSmallBatch pins the bytes of a one-record batch. The partition leader epoch is -1
// (Kafka's NO_PARTITION_LEADER_EPOCH, what a producer sends); the CRC does not cover it, so the
// CRC is the same for any epoch.
func TestGoldenSmallBatch(t *testing.T) {
	h := noProducer()
	h.PartitionLeaderEpoch = -1
	var b Builder
	b.Reset(h)
	b.Add(1700000000000, []byte("k"), []byte("v"), nil)
	out, err := b.Finish()
	require.NoError(t, err)
	want := unhex(t, "0000000000000000"+ // base offset
		"0000003a"+ // batch length 58
		"ffffffff"+ // partition leader epoch -1
		"02"+ // magic
		"e99b8dd8"+ // crc
		"0000"+ // attributes
		"00000000"+ // last offset delta
		"0000018bcfe56800"+ // base timestamp 1700000000000
		"0000018bcfe56800"+ // max timestamp
		"ffffffffffffffff"+ // producer id
		"ffff"+ // producer epoch
		"ffffffff"+ // base sequence
		"00000001"+ // record count
		"10"+ // record length 8
		"00"+ // attributes
		"00"+ // timestamp delta
		"00"+ // offset delta
		"026b"+ // key "k"
		"0276"+ // value "v"
		"00") // header count
	require.Len(t, out, 70)
	require.Equal(t, want, out)

	parsed, err := Check(out, 0)
	require.NoError(t, err)
	require.Equal(t, uint32(0xe99b8dd8), parsed.CRC)

	SetPartitionLeaderEpoch(out, 0)
	parsed, err = Check(out, 0)
	require.NoError(t, err, "the epoch is outside the CRC")
	require.Equal(t, int32(0), parsed.PartitionLeaderEpoch)
}
