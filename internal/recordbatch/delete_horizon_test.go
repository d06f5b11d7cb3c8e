package recordbatch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeleteHorizonAttributes(t *testing.T) {
	cases := []struct {
		name string
		in   Attributes
		on   Attributes // in.WithDeleteHorizon(true)
		off  Attributes // in.WithDeleteHorizon(false)
	}{
		{"none", 0, 0x40, 0},
		{"set", 0x40, 0x40, 0},
		{"other bits kept", Attributes(CodecZstd) | AttrLogAppendTime | AttrTransactional | AttrControl,
			0x3c | 0x40, 0x3c},
		{"other bits kept, set", 0x7f, 0x7f, 0x3f},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.in&0x40 != 0, c.in.HasDeleteHorizon())
			require.Equal(t, c.on, c.in.WithDeleteHorizon(true))
			require.Equal(t, c.off, c.in.WithDeleteHorizon(false))
			require.True(t, c.on.HasDeleteHorizon())
			require.False(t, c.off.HasDeleteHorizon())
			require.Equal(t, c.in.Codec(), c.on.Codec())
			require.Equal(t, c.in.Codec(), c.off.Codec())
		})
	}
	require.Equal(t, Attributes(0x40), AttrDeleteHorizonSet)
}

func TestHeaderDeleteHorizon(t *testing.T) {
	h := Header{BaseTimestamp: 1234}
	ms, ok := h.DeleteHorizon()
	require.False(t, ok)
	require.Equal(t, int64(0), ms)
	h.Attributes = h.Attributes.WithDeleteHorizon(true)
	ms, ok = h.DeleteHorizon()
	require.True(t, ok)
	require.Equal(t, int64(1234), ms)
}

// TestDeleteHorizonRoundTrip writes a batch with the bit set and the horizon as its
// BaseTimestamp, records' deltas relative to it, and reads back the bit, the horizon and the
// records' timestamps.
func TestDeleteHorizonRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			h := noProducer()
			h.BaseOffset = 30
			h.Attributes = Attributes(codec).WithDeleteHorizon(true)
			h.BaseTimestamp = 90_000
			var b Builder
			b.Reset(h)
			b.AddRecord(Record{OffsetDelta: 0, TimestampDelta: 1000 - 90_000, Key: []byte("a"), Value: nil})
			b.AddRecord(Record{OffsetDelta: 2, TimestampDelta: 1500 - 90_000, Key: []byte("b"), Value: []byte("v")})
			b.SetHeaderFields(2, 90_000, 1500)
			out, err := b.Finish()
			require.NoError(t, err)
			require.Equal(t, byte(0x40|byte(codec)), out[22], "attributes' low byte")

			bt, err := Decode(out, Limits{})
			require.NoError(t, err)
			require.True(t, bt.Attributes.HasDeleteHorizon())
			require.Equal(t, codec, bt.Attributes.Codec())
			ms, ok := bt.DeleteHorizon()
			require.True(t, ok)
			require.Equal(t, int64(90_000), ms)
			require.Equal(t, int64(1500), bt.MaxTimestamp)
			var ts, offs []int64
			for r := range bt.Records() {
				ts = append(ts, bt.RecordTimestamp(&r))
				offs = append(offs, bt.RecordOffset(&r))
			}
			require.Equal(t, []int64{1000, 1500}, ts)
			require.Equal(t, []int64{30, 32}, offs)
		})
	}
}
