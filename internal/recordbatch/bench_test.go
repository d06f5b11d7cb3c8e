package recordbatch

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

const benchRecords = 1000

// benchPayload returns n records' keys (16 bytes) and values (100 bytes) shaped like small
// JSON events: repeated field names, varying numbers and words, so compressors see what they
// would on real event data.
func benchPayload(n int) (keys, values [][]byte) {
	r := rand.New(rand.NewPCG(1, 2))
	actions := []string{"click", "view", "purchase", "login", "logout", "search"}
	for i := range n {
		key := fmt.Appendf(nil, "user-%06d-%04x", r.IntN(1_000_000), r.IntN(1<<16))
		value := fmt.Appendf(nil, `{"seq":%d,"action":%q,"amount":%d.%02d,"ts":%d,"ok":%t,"pad":"`,
			i, actions[r.IntN(len(actions))], r.IntN(10_000), r.IntN(100), 1700000000000+int64(i)*37, r.IntN(2) == 0)
		for len(value) < 98 {
			value = append(value, "abcdefghijklmnopqrstuvwxyz"[r.IntN(26)])
		}
		value = append(value, `"}`...)
		keys = append(keys, key[:16])
		values = append(values, value[:100])
	}
	return keys, values
}

// reportPerRecord adds records/s and allocs/record, from the mallocs counted across the loop.
func reportPerRecord(b *testing.B, mallocs uint64) {
	records := float64(b.N) * benchRecords
	b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(mallocs)/records, "allocs/record")
}

func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// BenchmarkBuilder builds a 1000-record batch per op, bytes counted uncompressed. The baseline
// appends the same records length-prefixed to a reused buffer: the least any encoder can do.
func BenchmarkBuilder(b *testing.B) {
	keys, values := benchPayload(benchRecords)
	b.Run("baseline", func(b *testing.B) {
		var buf []byte
		size := 0
		for i := range keys {
			size += 2 + len(keys[i]) + len(values[i])
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		start := mallocs()
		for b.Loop() {
			buf = buf[:0]
			for i := range keys {
				buf = binary.AppendUvarint(buf, uint64(len(keys[i])))
				buf = append(buf, keys[i]...)
				buf = binary.AppendUvarint(buf, uint64(len(values[i])))
				buf = append(buf, values[i]...)
			}
		}
		reportPerRecord(b, mallocs()-start)
	})
	for _, codec := range []Codec{CodecNone, CodecZstd, CodecLZ4, CodecGzip, CodecSnappy} {
		b.Run(codec.String(), func(b *testing.B) {
			h := noProducer()
			h.Attributes = h.Attributes.WithCodec(codec)
			var bl Builder
			build := func() []byte {
				bl.Reset(h)
				for i := range keys {
					bl.Add(1700000000000+int64(i), keys[i], values[i], nil)
				}
				out, err := bl.Finish()
				if err != nil {
					b.Fatal(err)
				}
				return out
			}
			out := build()
			b.SetBytes(int64(bl.EstimatedSize()))
			b.ReportAllocs()
			start := mallocs()
			for b.Loop() {
				build()
			}
			reportPerRecord(b, mallocs()-start)
			b.ReportMetric(float64(len(out))/float64(bl.EstimatedSize()), "size-ratio")
		})
	}
}

// BenchmarkDecode decodes a 1000-record batch per op with a reused Decoder and reads every
// record, bytes counted uncompressed. The baseline reads the baseline's length-prefixed records.
func BenchmarkDecode(b *testing.B) {
	keys, values := benchPayload(benchRecords)
	b.Run("baseline", func(b *testing.B) {
		var buf []byte
		for i := range keys {
			buf = binary.AppendUvarint(buf, uint64(len(keys[i])))
			buf = append(buf, keys[i]...)
			buf = binary.AppendUvarint(buf, uint64(len(values[i])))
			buf = append(buf, values[i]...)
		}
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		start := mallocs()
		total := 0
		for b.Loop() {
			for p := buf; len(p) > 0; {
				kl, n := binary.Uvarint(p)
				key := p[n : n+int(kl)]
				p = p[n+int(kl):]
				vl, n := binary.Uvarint(p)
				value := p[n : n+int(vl)]
				p = p[n+int(vl):]
				total += len(key) + len(value)
			}
		}
		reportPerRecord(b, mallocs()-start)
	})
	for _, codec := range []Codec{CodecNone, CodecZstd, CodecLZ4, CodecGzip, CodecSnappy} {
		b.Run(codec.String(), func(b *testing.B) {
			h := noProducer()
			h.Attributes = h.Attributes.WithCodec(codec)
			var bl Builder
			bl.Reset(h)
			for i := range keys {
				bl.Add(1700000000000+int64(i), keys[i], values[i], nil)
			}
			batch, err := bl.Finish()
			if err != nil {
				b.Fatal(err)
			}
			var d Decoder
			total := 0
			decode := func() {
				got, err := d.Decode(batch)
				if err != nil {
					b.Fatal(err)
				}
				for r := range got.Records() {
					total += len(r.Key) + len(r.Value)
				}
			}
			decode()
			b.SetBytes(int64(bl.EstimatedSize()))
			b.ReportAllocs()
			start := mallocs()
			for b.Loop() {
				decode()
			}
			reportPerRecord(b, mallocs()-start)
		})
	}
}

// BenchmarkValidate checks an uncompressed 1000-record producer batch per op, as a broker's
// produce path does (Kafka's LogValidator): framing, offsets and the header's max timestamp
// against the records'.
func BenchmarkValidate(b *testing.B) {
	keys, values := benchPayload(benchRecords)
	var bl Builder
	bl.Reset(noProducer())
	for i := range keys {
		bl.Add(1700000000000+int64(i), keys[i], values[i], nil)
	}
	batch, err := bl.Finish()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	start := mallocs()
	for b.Loop() {
		if _, err := Validate(batch, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, mallocs()-start)
}
