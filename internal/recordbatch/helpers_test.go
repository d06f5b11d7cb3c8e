package recordbatch

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kafkaStream is four batches captured from a Kafka 0.11 broker's .log segment: offsets 0,
// 1-2 and 3 of one partition, then a batch at offset 0 carrying a record header.
const kafkaStream = "00000000000000000000003b00000001020318a2700000000000000000015dff7b063c0000015dff7b063c" +
	"ffffffffffffffffffffffffffff0000000112000000010631323300000000000000000100000040000000020" +
	"2c85cbd230000000000010000015dff7cdd6c0000015dff7cde14ffffffffffffffffffffffffffff00000002" +
	"0c0000000100000e00d0020201000000000000000000030000003b00000002022e0b85b70000000000000000" +
	"015dff7ce79d0000015dff7ce79dffffffffffffffffffffffffffff00000001120000000106313233000000" +
	"0000000000000000004500000000025cd8ef520000000000000000016585b6f3c10000016585b6f3c1ffffff" +
	"ffffffffffffffffffffff000000012600000001066864720208686b6579086876616c"

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// splitBatches cuts a stream of back-to-back batches at their lengths, checking each CRC.
func splitBatches(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		h, err := Check(b, 0)
		require.NoError(t, err)
		out = append(out, b[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

// mustBuild builds one batch with Add from records whose OffsetDelta is ignored and whose
// TimestampDelta is taken as an absolute timestamp, and returns a copy of its bytes.
func mustBuild(t testing.TB, h Header, recs []Record) []byte {
	t.Helper()
	var b Builder
	b.Reset(h)
	for _, r := range recs {
		b.Add(r.TimestampDelta, r.Key, r.Value, r.Headers)
	}
	out, err := b.Finish()
	require.NoError(t, err)
	return append([]byte(nil), out...)
}

func noProducer() Header {
	return Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}
