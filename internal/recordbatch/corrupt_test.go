package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
)

// rawBatch wraps an already encoded records section in a header, filling Magic, BatchLength and
// the CRC, so tests can feed the decoder records no Builder would write.
func rawBatch(h Header, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	b = append(b, records...)
	h.Magic = Magic
	h.BatchLength = int32(len(b) - LogOverhead)
	PutHeader(b, &h)
	binary.BigEndian.PutUint32(b[posCRC:], ComputeCRC(b))
	return b
}

// recrc recomputes the CRC of a batch after a test changed covered bytes.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[posCRC:], ComputeCRC(b))
	return b
}

// rec encodes one record's fields after the length varint, so tests can write malformed ones.
func rec(fields ...[]byte) []byte {
	body := bytes.Join(fields, nil)
	return append(appendVarint(nil, int32(len(body))), body...)
}

func vi(v int32) []byte  { return appendVarint(nil, v) }
func vl(v int64) []byte  { return appendVarlong(nil, v) }
func bs(s string) []byte { return []byte(s) }

// smallBatch is a valid two-record batch the corruption cases start from.
func smallBatch(t testing.TB) []byte {
	h := noProducer()
	return mustBuild(t, h, []Record{
		{TimestampDelta: 1000, Key: bs("k"), Value: bs("v")},
		{TimestampDelta: 1001, Key: nil, Value: bs("value"), Headers: []RecordHeader{{Key: "h", Value: bs("x")}}},
	})
}

func with(b []byte, f func(b []byte) []byte) []byte {
	return f(append([]byte(nil), b...))
}

func put32(at int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[at:], v); return b }
}

func TestDecodeCorrupt(t *testing.T) {
	good := smallBatch(t)
	h := noProducer()
	h.LastOffsetDelta = 1
	h.RecordCount = 1
	ok := rec(vi(0)[:0], []byte{0}, vl(0), vi(0), vi(1), bs("k"), vi(1), bs("v"), vi(0)) // attributes..headers

	for _, tc := range []struct {
		name  string
		batch []byte
		lim   Limits
		want  error
	}{
		{"wrong crc", with(good, func(b []byte) []byte { b[posCRC] ^= 1; return b }), Limits{}, ErrCorrupt},
		{"flipped record byte", with(good, func(b []byte) []byte { b[len(b)-2] ^= 0x40; return b }), Limits{}, ErrCorrupt},
		{"magic 1", with(good, func(b []byte) []byte { b[posMagic] = 1; return b }), Limits{}, ErrCorrupt},
		{"magic 3", with(good, func(b []byte) []byte { b[posMagic] = 3; return b }), Limits{}, ErrCorrupt},
		{"length 0x7FFFFFFF over the limit", with(good, put32(posBatchLength, 0x7FFFFFFF)), Limits{}, ErrTooLarge},
		{"length 0x7FFFFFFF over the limit is corrupt to a log reader", with(good, put32(posBatchLength, 0x7FFFFFFF)), Limits{}, ErrCorrupt},
		{"length 0x7FFFFFFF without a limit", with(good, put32(posBatchLength, 0x7FFFFFFF)), Limits{MaxBatchSize: -1}, ErrShort},
		{"length 0xFFFFFFFF", with(good, put32(posBatchLength, 0xFFFFFFFF)), Limits{}, ErrCorrupt},
		{"length 0", with(good, put32(posBatchLength, 0)), Limits{}, ErrCorrupt},
		{"length one short of a header", with(good, put32(posBatchLength, minBatchLength-1)), Limits{}, ErrCorrupt},
		{"length one short of the records", with(good, func(b []byte) []byte {
			return recrc(put32(posBatchLength, uint32(len(b)-LogOverhead-1))(b)[:len(b)-1])
		}), Limits{}, ErrCorrupt},
		{"batch over MaxBatchSize", good, Limits{MaxBatchSize: len(good) - 1}, ErrTooLarge},
		{"negative base offset", with(good, func(b []byte) []byte { SetBaseOffset(b, -1); return b }), Limits{}, ErrCorrupt},
		{"base offset overflows", with(good, func(b []byte) []byte { SetBaseOffset(b, math.MaxInt64); return b }), Limits{}, ErrCorrupt},
		{"record count above last offset delta + 1", with(good, func(b []byte) []byte { return recrc(put32(posRecordCount, 3)(b)) }), Limits{}, ErrCorrupt},
		{"record count above records present", with(good, func(b []byte) []byte {
			return recrc(put32(posRecordCount, 3)(put32(posLastOffsetDelta, 5)(b)))
		}), Limits{}, ErrCorrupt},
		{"record count below records present", with(good, func(b []byte) []byte { return recrc(put32(posRecordCount, 1)(b)) }), Limits{}, ErrCorrupt},
		{"record count negative", with(good, func(b []byte) []byte { return recrc(put32(posRecordCount, 0xFFFFFFFF)(b)) }), Limits{}, ErrCorrupt},
		{"record count huge", with(good, func(b []byte) []byte {
			return recrc(put32(posRecordCount, math.MaxInt32)(put32(posLastOffsetDelta, math.MaxInt32-1)(b)))
		}), Limits{}, ErrCorrupt},
		{"last offset delta negative", with(good, func(b []byte) []byte { return recrc(put32(posLastOffsetDelta, 0xFFFFFFFF)(b)) }), Limits{}, ErrCorrupt},
		{"last offset delta below the records'", with(good, func(b []byte) []byte {
			return recrc(put32(posLastOffsetDelta, 0)(put32(posRecordCount, 1)(b)))
		}), Limits{}, ErrCorrupt},
		{"trailing junk", rawBatch(h, append(append([]byte(nil), ok...), 0, 0, 0)), Limits{}, ErrCorrupt},
		{"unknown codec", with(good, func(b []byte) []byte { b[posAttributes+1] |= 6; return recrc(b) }), Limits{}, ErrCorrupt},

		// Records no writer would produce, each in an otherwise valid batch.
		{"record length varint overflow", rawBatch(h, unhex(t, "ffffffffff0f")), Limits{}, ErrCorrupt},
		{"record length varint too long", rawBatch(h, unhex(t, "80808080808000")), Limits{}, ErrCorrupt},
		{"record length varint truncated", rawBatch(h, unhex(t, "8080808080")[:4]), Limits{}, ErrCorrupt},
		{"record length negative", rawBatch(h, append(vi(-3), make([]byte, 8)...)), Limits{}, ErrCorrupt},
		{"record length past the batch", rawBatch(h, append(vi(100), make([]byte, 8)...)), Limits{}, ErrCorrupt},
		{"timestamp delta varlong overflow", rawBatch(h, rec([]byte{0}, unhex(t, "ffffffffffffffffff7f"), vi(0), vi(-1), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"offset delta varint overflow", rawBatch(h, rec([]byte{0}, vl(0), unhex(t, "ffffffff7f"), vi(-1), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"key length beyond the batch", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(100), bs("k"), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"key length beyond the record", rawBatch(h, append(rec([]byte{0}, vl(0), vi(0), vi(4), bs("k")), bs("vvvvvvv")...)), Limits{}, ErrCorrupt},
		{"key length -2", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-2), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"value length beyond the record", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(math.MaxInt32), bs("v"), vi(0))), Limits{}, ErrCorrupt},
		{"header count huge", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(1<<30))), Limits{}, ErrCorrupt},
		{"header count negative", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(-1))), Limits{}, ErrCorrupt},
		{"header key length negative", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), Limits{}, ErrCorrupt},
		{"header key past the record", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(9), bs("ab"))), Limits{}, ErrCorrupt},
		{"header value past the record", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), bs("a"), vi(5), bs("b"))), Limits{}, ErrCorrupt},
		{"header count missing", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1))), Limits{}, ErrCorrupt},
		{"bytes left inside the record", rawBatch(h, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(-1), vi(0), bs("xx"))), Limits{}, ErrCorrupt},
		{"empty record", rawBatch(h, vi(0)), Limits{}, ErrCorrupt},
		{"offset delta negative", rawBatch(h, rec([]byte{0}, vl(0), vi(-1), vi(-1), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"offset delta above last offset delta", rawBatch(h, rec([]byte{0}, vl(0), vi(2), vi(-1), vi(-1), vi(0))), Limits{}, ErrCorrupt},
		{"offset deltas not increasing", rawBatch(Header{LastOffsetDelta: 3, RecordCount: 2},
			append(rec([]byte{0}, vl(0), vi(1), vi(-1), vi(-1), vi(0)), rec([]byte{0}, vl(0), vi(1), vi(-1), vi(-1), vi(0))...)), Limits{}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.batch, tc.lim)
			require.ErrorIs(t, err, tc.want)
			_, err = Validate(tc.batch, tc.lim)
			require.ErrorIs(t, err, tc.want)
			var d Decoder
			d.Limits = tc.lim
			_, err = d.Decode(tc.batch)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// The records the cases above start from are fine as they are.
	_, err := Decode(rawBatch(h, ok), Limits{})
	require.NoError(t, err)
}

func TestDecodeTruncated(t *testing.T) {
	for _, codec := range allCodecs {
		h := noProducer()
		h.Attributes = h.Attributes.WithCodec(codec)
		good := mustBuild(t, h, []Record{
			{TimestampDelta: 5, Key: bs("key"), Value: bs("value"), Headers: []RecordHeader{{Key: "a", Value: bs("b")}}},
			{TimestampDelta: 6, Key: nil, Value: nil},
		})
		for n := range len(good) {
			_, err := Decode(good[:n], Limits{})
			require.ErrorIs(t, err, ErrShort, "%s: %d of %d bytes", codec, n, len(good))
			_, err = Validate(good[:n], Limits{})
			require.ErrorIs(t, err, ErrShort, "%s: %d of %d bytes", codec, n, len(good))
		}
		// Every shorter BatchLength over the same bytes is corrupt, never a panic.
		for l := 0; l < len(good)-LogOverhead; l++ {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[posBatchLength:], uint32(l))
			_, err := Decode(recrc(b[:LogOverhead+max(l, minBatchLength)]), Limits{})
			require.ErrorIs(t, err, ErrCorrupt, "%s: batch length %d", codec, l)
		}
	}
}

func TestValidateProducerRules(t *testing.T) {
	good := mustBuild(t, Header{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}, []Record{{Value: bs("a")}, {Value: bs("b")}})
	h, err := Validate(good, Limits{})
	require.NoError(t, err)
	require.Equal(t, int32(2), h.RecordCount)

	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"offset range wider than count", Must(Encode(nil, Header{LastOffsetDelta: 2, ProducerID: -1, BaseSequence: -1},
			[]Record{{OffsetDelta: 0}, {OffsetDelta: 2}}))},
		{"control batch", mustBuild(t, Header{Attributes: AttrControl | AttrTransactional, ProducerID: 7, BaseSequence: 0}, []Record{{Value: bs("a")}})},
		{"producer id without a sequence", mustBuild(t, Header{ProducerID: 7, BaseSequence: -1}, []Record{{Value: bs("a")}})},
		{"no records", Must(Encode(nil, noProducer(), nil))},
	} {
		_, err := Decode(tc.batch, Limits{})
		require.NoError(t, err, "%s: a log may hold it", tc.name)
		_, err = Validate(tc.batch, Limits{})
		require.ErrorIs(t, err, ErrCorrupt, "%s: a producer may not send it", tc.name)
	}
}

func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// compressedBatch wraps compressed bytes as the records of a one-record batch of codec.
func compressedBatch(codec Codec, compressed []byte) []byte {
	h := noProducer()
	h.Attributes = h.Attributes.WithCodec(codec)
	h.RecordCount = 1
	return rawBatch(h, compressed)
}

func TestDecompressCorrupt(t *testing.T) {
	records := rec([]byte{0}, vl(0), vi(0), vi(-1), vi(3), bs("abc"), vi(0))
	var c compressor
	for _, codec := range allCodecs[1:] {
		good, err := c.compress(nil, codec, records)
		require.NoError(t, err)
		_, err = Decode(compressedBatch(codec, good), Limits{})
		require.NoError(t, err, codec)

		for _, tc := range []struct {
			name string
			b    []byte
		}{
			{"empty", nil},
			{"garbage", bs("this is not compressed data at all")},
			{"truncated", good[:len(good)-3]},
			{"trailing bytes", append(append([]byte(nil), good...), 1, 2, 3, 4, 5, 6, 7, 8)},
		} {
			_, err := Decode(compressedBatch(codec, tc.b), Limits{})
			require.ErrorIs(t, err, ErrCorrupt, "%s: %s", codec, tc.name)
		}
		// Without checksums (lz4 as Kafka writes it, snappy) a flipped byte can decode to other
		// valid records, which the batch CRC exists to catch; either way, no panic.
		for i := range good {
			flipped := with(good, func(b []byte) []byte { b[i] ^= 0xff; return b })
			if _, err := Decode(compressedBatch(codec, flipped), Limits{}); err != nil {
				require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge), "%s: byte %d: %v", codec, i, err)
			}
		}
	}
}

func TestSnappyXerialCorrupt(t *testing.T) {
	block := snappy.Encode(nil, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(3), bs("abc"), vi(0)))
	header := unhex(t, "82534e415050590000000001 00000001")
	chunk := func(n uint32, b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, n), b...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	_, err := Decode(compressedBatch(CodecSnappy, cat(header, chunk(uint32(len(block)), block))), Limits{})
	require.NoError(t, err, "xerial framing")
	_, err = Decode(compressedBatch(CodecSnappy, block), Limits{})
	require.NoError(t, err, "a plain snappy block")
	// A block split across two xerial chunks is one record.
	b2 := snappy.Encode(nil, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(3), bs("abc"), vi(0))[:4])
	b3 := snappy.Encode(nil, rec([]byte{0}, vl(0), vi(0), vi(-1), vi(3), bs("abc"), vi(0))[4:])
	_, err = Decode(compressedBatch(CodecSnappy, cat(header, chunk(uint32(len(b2)), b2), chunk(uint32(len(b3)), b3))), Limits{})
	require.NoError(t, err, "records spanning chunks")

	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"chunk length past the end", cat(header, chunk(uint32(len(block)+1), block)), ErrCorrupt},
		{"chunk length 0xFFFFFFFF", cat(header, chunk(0xFFFFFFFF, block)), ErrCorrupt},
		{"chunk length 0x80000000", cat(header, chunk(0x80000000, block)), ErrCorrupt},
		{"chunk length short of the block", cat(header, chunk(uint32(len(block)-1), block)), ErrCorrupt},
		{"zero-length chunk", cat(header, chunk(0, nil), chunk(uint32(len(block)), block)), ErrCorrupt},
		{"length cut to 2 bytes", cat(header, chunk(uint32(len(block)), block), []byte{0, 0}), ErrCorrupt},
		{"header cut short", header[:12], ErrCorrupt},
		{"block declares more than it holds", cat(header, chunk(uint32(len(block)), with(block, func(b []byte) []byte { b[0]++; return b }))), ErrCorrupt},
		{"block declares 1 GiB", cat(header, chunk(5, unhex(t, "8080808004"))), ErrTooLarge},
		{"plain block declares 1 GiB", unhex(t, "808080800400"), ErrTooLarge},
	} {
		_, err := Decode(compressedBatch(CodecSnappy, tc.b), Limits{})
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

// TestDecompressionBomb feeds 100 MiB of zeros, compressed to ~100 KB, to a decoder bounded
// at 1 MiB: it must stop at the bound and allocate only about that much.
func TestDecompressionBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 100 MiB")
	}
	const bound = 1 << 20
	zeros := make([]byte, 1<<20)
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	require.NoError(t, err)
	for range 100 {
		_, err = w.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.Less(t, gz.Len(), DefaultMaxMessageBytes)

	// Every codec, from a smaller bomb so the test stays quick.
	eightMiB := make([]byte, 8<<20)
	var c compressor
	bombs := map[Codec][]byte{CodecGzip: gz.Bytes()}
	for _, codec := range []Codec{CodecSnappy, CodecLZ4, CodecZstd} {
		bombs[codec], err = c.compress(nil, codec, eightMiB)
		require.NoError(t, err)
	}
	lim := Limits{MaxDecompressedSize: bound}
	for codec, bomb := range bombs {
		batch := compressedBatch(codec, bomb)
		var d Decoder
		d.Limits = lim
		_, err := d.Decode(batch) // warm up the decompressor
		require.ErrorIs(t, err, ErrTooLarge, codec)

		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d = Decoder{Limits: lim}
		_, err = d.Decode(batch)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrTooLarge, codec)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d compressed bytes, %d bytes allocated", codec, len(bomb), allocated)
		// The bound, the buffer's growth slack and the codec's state; zstd also allocates its
		// window (at most 8 MiB) and lz4 its 4 MiB block buffer; nowhere near 100 MiB.
		require.Less(t, allocated, uint64(16<<20), codec)

		_, err = Decode(batch, lim)
		require.ErrorIs(t, err, ErrTooLarge, codec)
		_, err = Validate(batch, lim)
		require.ErrorIs(t, err, ErrTooLarge, codec)
	}
}

// TestDecompressedSizeBoundary checks the bound is inclusive: records of exactly
// MaxDecompressedSize bytes decode, one more does not.
func TestDecompressedSizeBoundary(t *testing.T) {
	for _, codec := range allCodecs[1:] {
		h := noProducer()
		h.Attributes = h.Attributes.WithCodec(codec)
		batch := mustBuild(t, h, []Record{{Value: make([]byte, 5000)}})
		b, err := Decode(batch, Limits{MaxDecompressedSize: 1 << 20})
		require.NoError(t, err)
		size := len(b.RecordBytes())
		_, err = Decode(batch, Limits{MaxDecompressedSize: size})
		require.NoError(t, err, codec)
		_, err = Decode(batch, Limits{MaxDecompressedSize: size - 1})
		require.ErrorIs(t, err, ErrTooLarge, codec)
		require.False(t, errors.Is(err, ErrShort))
	}
}
