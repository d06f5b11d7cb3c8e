package cleaner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// BenchmarkOffsetMapPut puts keys of 16-40 bytes into a 16 MiB map, resetting it when full.
func BenchmarkOffsetMapPut(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1<<16)
	total := 0
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%010d-%s", rnd.Uint64(), strings.Repeat("x", rnd.IntN(25))))
		total += len(keys[i])
	}
	m := NewOffsetMap(16 << 20)
	b.SetBytes(int64(total / len(keys)))
	b.ReportAllocs()
	held := 0 // the most keys held at once
	for i := 0; b.Loop(); i++ {
		if !m.Put(keys[i&(len(keys)-1)], int64(i)) {
			m.Reset()
			m.Put(keys[i&(len(keys)-1)], int64(i))
		}
		held = max(held, m.Len())
	}
	// The map's memory over the most keys it held: what a key costs in slots and arena.
	b.ReportMetric(float64(m.MemoryBytes())/float64(max(held, 1)), "bytes/key")
}

// BenchmarkFilterBatch filters 1000-record batches of 100-byte values, half superseded and a
// tenth tombstones, uncompressed and lz4.
func BenchmarkFilterBatch(b *testing.B) {
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecLZ4} {
		b.Run(codec.String(), func(b *testing.B) {
			rnd := rand.New(rand.NewPCG(3, 4))
			h := header(1_000_000)
			h.Attributes = recordbatch.Attributes(codec)
			recs := make([]rec, 1000)
			m := NewOffsetMap(1 << 20)
			for i := range recs {
				key := []byte(fmt.Sprintf("user-%06d", i))
				var val []byte
				if i%10 != 0 {
					val = make([]byte, 100)
					for j := range val {
						val[j] = 'a' + byte(rnd.IntN(26))
					}
				}
				recs[i] = rec{int32(i), 1_700_000_000_000 + int64(i), key, val}
				off := int64(1_000_000 + i)
				if i%2 == 0 {
					off += 5000 // superseded by a later record
				}
				m.Put(key, off)
			}
			batch := build(b, h, recs...)
			rules := &Rules{Map: m, Now: 1_800_000_000_000, DeleteRetention: 86_400_000}
			var f Filter
			var dst []byte
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				dst, _, err = f.Batch(dst[:0], batch, rules)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
