package recordbatch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeAllocs checks the read path: with a reused Decoder, decoding a batch and iterating
// its records allocates nothing per record; headers cost two allocations per batch.
func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
	for _, withHeaders := range []bool{false, true} {
		for _, codec := range allCodecs {
			h := noProducer()
			h.Attributes = h.Attributes.WithCodec(codec)
			var hdrs []RecordHeader
			if withHeaders {
				hdrs = []RecordHeader{{Key: "trace-id", Value: []byte("abc")}, {Key: "k", Value: nil}}
			}
			var bl Builder
			bl.Reset(h)
			for i := range 1000 {
				bl.Add(int64(i), []byte(fmt.Sprint("key", i)), []byte(fmt.Sprint("value", i)), hdrs)
			}
			batch, err := bl.Finish()
			require.NoError(t, err)
			var d Decoder
			n := 0
			run := func() {
				b, err := d.Decode(batch)
				if err != nil {
					t.Fatal(err)
				}
				for r := range b.Records() {
					n += len(r.Headers)
				}
			}
			run()
			allocs := testing.AllocsPerRun(20, run)
			t.Logf("%s, headers %v: %.0f allocs per 1000-record batch", codec, withHeaders, allocs)
			limit := 0.0
			if withHeaders {
				limit = 2 // the batch's header slice and key string
			}
			require.LessOrEqual(t, allocs, limit, "%s, headers %v", codec, withHeaders)
		}
	}
}

// TestRecordsOwnership checks what outlives what: header slices and keys are the caller's,
// while keys and values alias the batch.
func TestRecordsOwnership(t *testing.T) {
	batch := mustBuild(t, noProducer(), []Record{
		{Key: bs("k1"), Value: bs("v1"), Headers: []RecordHeader{{Key: "a", Value: bs("1")}}},
		{Key: bs("k2"), Value: bs("v2"), Headers: []RecordHeader{{Key: "b", Value: bs("2")}, {Key: "b", Value: bs("3")}}},
	})
	b, err := Decode(batch, Limits{})
	require.NoError(t, err)
	var kept []Record
	for r := range b.Records() {
		kept = append(kept, r)
	}
	// Appending to one record's headers or value must not clobber the next record's.
	kept[0].Headers = append(kept[0].Headers, RecordHeader{Key: "zzz"})
	kept[0].Value = append(kept[0].Value, 'X')
	require.Equal(t, []RecordHeader{{Key: "b", Value: bs("2")}, {Key: "b", Value: bs("3")}}, kept[1].Headers)
	require.Equal(t, bs("k2"), kept[1].Key)

	// Keys and values alias the batch bytes; header keys do not.
	copy(batch, make([]byte, len(batch)))
	require.Equal(t, "a", kept[0].Headers[0].Key)
	require.NotEqual(t, bs("k2"), kept[1].Key)
}

func TestDecoderReuseAcrossCodecs(t *testing.T) {
	var d Decoder
	for round := range 3 {
		for _, codec := range allCodecs {
			h := noProducer()
			h.Attributes = h.Attributes.WithCodec(codec)
			want := []Record{{TimestampDelta: int64(round), Key: bs(codec.String()), Value: bs(fmt.Sprint(round))}}
			batch := mustBuild(t, h, want)
			b, err := d.Decode(batch)
			require.NoError(t, err)
			got := b.AppendRecords(nil)
			require.Equal(t, bs(codec.String()), got[0].Key)
			require.Equal(t, bs(fmt.Sprint(round)), got[0].Value)
		}
	}
	// A failure leaves the Decoder usable.
	_, err := d.Decode(compressedBatch(CodecZstd, bs("not zstd")))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = d.Decode(mustBuild(t, noProducer(), []Record{{Value: bs("ok")}}))
	require.NoError(t, err)
}

func TestLimitsDefaults(t *testing.T) {
	// A record value that makes the batch exactly max.message.bytes, then one byte more.
	overhead := len(mustBuild(t, noProducer(), []Record{{Value: []byte{}}}))
	for _, tc := range []struct {
		extra int
		lim   Limits
		want  error
	}{
		{0, Limits{}, nil},
		{1, Limits{}, ErrTooLarge},
		{1, Limits{MaxBatchSize: -1}, nil},
		{1, Limits{MaxBatchSize: DefaultMaxMessageBytes + 1}, nil},
	} {
		// The record and value length varints grow from 1 to 3 bytes each: account for them.
		value := make([]byte, DefaultMaxMessageBytes-overhead-4+tc.extra)
		batch := mustBuild(t, noProducer(), []Record{{Value: value}})
		require.Equal(t, DefaultMaxMessageBytes+tc.extra, len(batch))
		_, err := Decode(batch, tc.lim)
		if tc.want == nil {
			require.NoError(t, err, "%+v", tc)
		} else {
			require.ErrorIs(t, err, tc.want, "%+v", tc)
		}
		var d Decoder
		d.Limits = tc.lim
		_, err2 := d.Decode(batch)
		require.Equal(t, err == nil, err2 == nil)
	}
}
