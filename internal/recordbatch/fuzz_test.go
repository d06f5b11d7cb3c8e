package recordbatch

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the fuzz seed corpus in testdata/fuzz")

// fuzzLimits keeps fuzzing fast: a decompression bomb costs at most 64 KiB.
var fuzzLimits = Limits{MaxDecompressedSize: 64 << 10}

func requireSentinel(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShort) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error matches no sentinel: %v", err)
	}
}

// FuzzDecode: no input panics; every error matches a sentinel; whatever decodes re-encodes,
// uncompressed, into a batch that decodes to the same header and records. Each input is tried
// as is and with its BatchLength and CRC made to fit, so mutations reach the records rather
// than stopping at the CRC.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if len(data) >= HeaderSize && len(data)-LogOverhead <= math.MaxInt32 {
			fixed := append([]byte(nil), data...)
			binary.BigEndian.PutUint32(fixed[posBatchLength:], uint32(len(fixed)-LogOverhead))
			checkDecode(t, recrc(fixed))
		}
	})
}

func checkDecode(t *testing.T, data []byte) {
	b, err := Decode(data, fuzzLimits)
	each, eachErr := eachRecords(data)
	if err != nil {
		requireSentinel(t, err)
		_, verr := Validate(data, fuzzLimits)
		require.Error(t, verr, "Validate accepts what Decode rejects")
		if _, cerr := Check(data, fuzzLimits.batchSize()); cerr == nil {
			// With the CRC right, the one-pass path must reject the batch too (it skips only
			// the CRC).
			require.Error(t, eachErr, "EachRecord accepts what Decode rejects")
			requireSentinel(t, eachErr)
		}
		return
	}
	require.NoError(t, eachErr)
	recs := b.AppendRecords(nil)
	require.Equal(t, len(recs), len(each), "EachRecord and Decode disagree on the count")
	for i := range recs {
		require.Equal(t, recs[i], each[i])
	}
	require.Len(t, recs, int(b.RecordCount))
	i := 0
	for r := range b.Records() {
		require.Equal(t, recs[i], r)
		i++
	}
	require.Equal(t, len(recs), i)

	h := b.Header
	h.Attributes = h.Attributes.WithCodec(CodecNone)
	out, err := Encode(nil, h, recs)
	require.NoError(t, err)
	again, err := Decode(out, Limits{MaxBatchSize: -1})
	require.NoError(t, err)
	require.Equal(t, recs, again.AppendRecords(nil))
	want := h
	want.BatchLength, want.CRC = again.BatchLength, again.CRC
	require.Equal(t, want, again.Header)
	if b.Attributes.Codec() == CodecNone && len(out) == b.Size() {
		// Same length means minimal varints throughout, hence the same bytes.
		require.Equal(t, data[:b.Size()], out)
	}
}

// FuzzDecompress: every codec's decoder, bounded at 64 KiB, never panics, never returns more
// than the bound, fails only with sentinels, and what it returns survives our own compression.
func FuzzDecompress(f *testing.F) {
	const bound = 64 << 10
	f.Fuzz(func(t *testing.T, codec byte, data []byte) {
		c := Codec(codec & 7)
		var d decompressor
		out, err := d.decompress(nil, c, data, bound)
		if err != nil {
			requireSentinel(t, err)
			return
		}
		require.LessOrEqual(t, len(out), bound)
		if c == CodecNone || c > CodecZstd {
			t.Fatalf("codec %d decompressed", c)
		}
		var comp compressor
		packed, err := comp.compress(nil, c, out)
		require.NoError(t, err)
		back, err := d.decompress(nil, c, packed, bound)
		require.NoError(t, err)
		require.Equal(t, string(out), string(back))
	})
}

// TestFuzzCorpus writes the seed corpus with -update-corpus, and otherwise checks that the
// committed seeds still decode as they did.
func TestFuzzCorpus(t *testing.T) {
	type seed struct {
		name string
		args []any
	}
	var decode, decompress []seed
	for i, b := range splitBatches(t, unhex(t, kafkaStream)) {
		decode = append(decode, seed{fmt.Sprintf("kafka-0.11-batch-%d", i), []any{b}})
	}
	golden := noProducer()
	golden.PartitionLeaderEpoch = -1
	decode = append(decode, seed{"golden-70-bytes", []any{mustBuild(t, golden, []Record{{TimestampDelta: 1700000000000, Key: bs("k"), Value: bs("v")}})}})
	records := []Record{
		{TimestampDelta: 1000, Key: bs("key-1"), Value: bs("value one"), Headers: []RecordHeader{{Key: "h", Value: bs("1")}, {Key: "h", Value: nil}}},
		{TimestampDelta: 900, Key: nil, Value: bs("")},
		{TimestampDelta: 1100, Key: bs(""), Value: nil},
	}
	var comp compressor
	raw, err := Encode(nil, noProducer(), []Record{{Key: bs("k"), Value: bs("vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv")}})
	require.NoError(t, err)
	for _, codec := range allCodecs {
		h := noProducer()
		h.Attributes = h.Attributes.WithCodec(codec) | AttrTransactional
		decode = append(decode, seed{"builder-" + codec.String(), []any{mustBuild(t, h, records)}})
		if codec != CodecNone {
			packed, err := comp.compress(nil, codec, raw[HeaderSize:])
			require.NoError(t, err)
			decompress = append(decompress, seed{codec.String(), []any{byte(codec), packed}})
		}
	}
	decompress = append(decompress,
		// decoded length 11, one 11-byte literal
		seed{"snappy-plain-block", []any{byte(CodecSnappy), append([]byte{0x0b, 0x28}, "hello world"...)}},
		// xerial header, then two chunks each holding a one-byte literal block
		seed{"snappy-xerial-two-chunks", []any{byte(CodecSnappy), unhex(t, "82534e41505059000000000100000001"+"00000003"+"010061"+"00000003"+"010062")}},
	)

	write := func(fuzzName string, seeds []seed) {
		dir := filepath.Join("testdata", "fuzz", fuzzName)
		for _, s := range seeds {
			text := "go test fuzz v1\n"
			for _, a := range s.args {
				switch a := a.(type) {
				case []byte:
					text += fmt.Sprintf("[]byte(%q)\n", a)
				case byte:
					text += fmt.Sprintf("byte(%q)\n", a)
				}
			}
			path := filepath.Join(dir, s.name)
			if *updateCorpus {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestFuzzCorpus -update-corpus")
			if fuzzName == "FuzzDecode" {
				// Compressor output may change with a library upgrade; the seeds need only decode.
				_, err = Decode(s.args[0].([]byte), Limits{})
				require.NoError(t, err, s.name)
				require.Contains(t, string(got), "go test fuzz v1\n[]byte(", s.name)
			} else {
				require.Contains(t, string(got), "go test fuzz v1\nbyte(", s.name)
				var d decompressor
				_, err = d.decompress(nil, Codec(s.args[0].(byte)), s.args[1].([]byte), 1<<20)
				require.NoError(t, err, s.name)
			}
		}
	}
	write("FuzzDecode", decode)
	write("FuzzDecompress", decompress)
}

// eachRecords collects what Decoder.EachRecord delivers, copied (its records are only valid
// inside the callback).
func eachRecords(data []byte) ([]Record, error) {
	d := Decoder{Limits: fuzzLimits}
	var out []Record
	_, err := d.EachRecord(data, func(_ *Header, r *Record) bool {
		c := *r
		c.Key, c.Value = clone(r.Key), clone(r.Value)
		c.Headers = nil
		for _, hd := range r.Headers {
			c.Headers = append(c.Headers, RecordHeader{Key: hd.Key, Value: clone(hd.Value)})
		}
		out = append(out, c)
		return true
	})
	return out, err
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// FuzzRecordView: ParseRecordView accepts exactly the records parseRecord (Decode's record
// parser) accepts, with the same fields and the same size; its header walk yields parseRecord's
// headers; PeekRecord and SkipRecord, which read less, agree with it on every record it accepts.
// No input panics, and every error matches a sentinel.
func FuzzRecordView(f *testing.F) {
	recs := []Record{
		{TimestampDelta: 1000, OffsetDelta: 3, Key: bs("key-1"), Value: bs("value one"), Headers: []RecordHeader{{Key: "h", Value: bs("1")}, {Key: "h", Value: nil}, {Key: "", Value: bs("")}}},
		{TimestampDelta: -900, Key: nil, Value: bs("")},
		{TimestampDelta: 1 << 40, OffsetDelta: 1 << 20, Key: bs(""), Value: nil},
	}
	for i := range recs {
		h := noProducer()
		h.LastOffsetDelta = recs[i].OffsetDelta
		b, err := Encode(nil, h, recs[i:i+1])
		require.NoError(f, err)
		f.Add(b[HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v RecordView
		n, err := ParseRecordView(data, 0, &v)
		var want Record
		var a headerArena
		wn, werr := parseRecord(data, 0, &want, &a)
		if werr != nil {
			require.Error(t, err, "ParseRecordView accepts what parseRecord rejects")
			requireSentinel(t, err)
			if _, _, perr := PeekRecord(data, 0); perr != nil {
				requireSentinel(t, perr)
			}
			if _, serr := SkipRecord(data, 0); serr != nil {
				requireSentinel(t, serr)
			}
			return
		}
		require.NoError(t, err)
		require.Equal(t, wn, n)
		require.Equal(t, want.Attributes, v.Attributes)
		require.Equal(t, want.TimestampDelta, v.TimestampDelta)
		require.Equal(t, want.OffsetDelta, v.OffsetDelta)
		require.Equal(t, want.Key == nil, v.Key == nil)
		require.Equal(t, want.Key, v.Key)
		require.Equal(t, want.Value == nil, v.Value == nil)
		require.Equal(t, want.Value, v.Value)
		require.Equal(t, len(want.Headers), v.HeaderCount)
		w := v.Headers()
		for _, hd := range want.Headers {
			k, val, ok := w.Next()
			require.True(t, ok)
			require.Equal(t, hd.Key, string(k))
			require.Equal(t, hd.Value == nil, val == nil)
			require.Equal(t, hd.Value, val)
		}
		_, _, ok := w.Next()
		require.False(t, ok)

		d, pn, err := PeekRecord(data, 0)
		require.NoError(t, err)
		require.Equal(t, want.OffsetDelta, d)
		require.Equal(t, wn, pn)
		sn, err := SkipRecord(data, 0)
		require.NoError(t, err)
		require.Equal(t, wn, sn)
	})
}
