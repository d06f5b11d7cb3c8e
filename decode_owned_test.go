package commitlog

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// FuzzOwnedDecode: the decode of the Reader and ReadRecords, whatever bytes it is given, never
// panics and returns what DecodeRecords' decode of the same bytes returns (records, their bytes,
// and ErrCorrupt or not), with Topic and Partition set, for any from and maxBytes.
func FuzzOwnedDecode(f *testing.F) {
	batch := func(base int64, recs []*Record) []byte {
		var b recordbatch.Builder
		b.Reset(recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
		for _, r := range recs {
			b.Add(r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers)
		}
		out, err := b.Finish()
		if err != nil {
			f.Fatal(err)
		}
		return slices.Clone(out)
	}
	recs := scanTestRecords(12)
	one := batch(0, recs[:5])
	two := batch(5, recs[5:])
	both := append(append([]byte(nil), one...), two...)
	f.Add(one, int64(0), 0)
	f.Add(both, int64(3), 0)
	f.Add(both, int64(6), 20)
	f.Add(both, int64(0), 1)
	f.Add(both[:len(both)-3], int64(0), 0)
	f.Add(both[:len(one)+30], int64(2), 0)
	f.Add([]byte{}, int64(0), 0)
	f.Fuzz(func(t *testing.T, b []byte, from int64, maxBytes int) {
		maxBytes = max(maxBytes, 0)
		want, wantErr := decodeChecked(nil, b, from, 1<<20, maxBytes)
		dec := ownedDecode{topic: "t", partition: 3, maxDecompressed: 1 << 20, maxBytes: maxBytes}
		got, err := dec.decode(b, from)
		require.Equal(t, errors.Is(wantErr, ErrCorrupt), errors.Is(err, ErrCorrupt), "errors %v and %v", wantErr, err)
		require.Len(t, got, len(want))
		for i, w := range want {
			w.Topic, w.Partition = "t", 3
			require.Equal(t, *w, got[i], "record %d", i)
		}
	})
}
