package commitlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// compactBenchLog writes keys distinct keys twice over (a first value, then a newer one for
// every key), in batches of 1000, to a compacted log in a temporary directory, and returns it
// with its size in bytes. Values are 64 bytes, keys 16.
func compactBenchLog(b *testing.B, keys int) (*Log, int64) {
	b.Helper()
	cfg := LogConfig{CleanupPolicy: CleanupCompact, Sync: SyncNever}
	l, err := OpenLog(b.TempDir(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	recs := make([]*Record, 1000)
	for i := range recs {
		recs[i] = &Record{Key: make([]byte, 16), Value: make([]byte, 64)}
	}
	ctx := context.Background()
	for round := range 2 {
		for k := 0; k < keys; k += len(recs) {
			n := min(len(recs), keys-k)
			for i := range n {
				binary.BigEndian.PutUint64(recs[i].Key, uint64(k+i))
				binary.BigEndian.PutUint64(recs[i].Value, uint64(round))
				recs[i].Timestamp = time.Time{}
			}
			if err := l.Append(ctx, recs[:n]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Roll, so that every record is in a sealed segment, cleanable.
	l.appendMu.Lock()
	err = l.roll(l.LogEndOffset())
	l.appendMu.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	return l, l.Size()
}

// BenchmarkCompact measures the cleaner's throughput, in MB/s of dirty log cleaned (each
// iteration cleans a fresh log of keys distinct keys written twice), with Kafka's default
// dedupe buffer (128 MiB, one thread): 10M keys do not fit in it and are cleaned in passes.
// It reports the passes, the offset map's memory and the peak heap in use during the clean.
// Run: go test -run '^$' -bench BenchmarkCompact -benchtime 1x
func BenchmarkCompact(b *testing.B) {
	for _, keys := range []int{1_000, 100_000, 10_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			if testing.Short() && keys > 100_000 {
				b.Skip("10M keys take minutes to write; without -short only")
			}
			var passes int
			var size, peak int64
			for range b.N {
				b.StopTimer()
				l, n := compactBenchLog(b, keys)
				size = n
				runtime.GC()
				stop := make(chan struct{})
				peakCh := make(chan int64)
				go func() { peakCh <- peakHeap(stop) }()
				b.StartTimer()
				res, err := l.Compact(context.Background())
				b.StopTimer()
				close(stop)
				peak = max(peak, <-peakCh)
				if err != nil {
					b.Fatal(err)
				}
				if res.RecordsRemoved != int64(keys) {
					b.Fatalf("removed %d records, want %d", res.RecordsRemoved, keys)
				}
				passes = res.Passes
				b.StartTimer()
			}
			b.SetBytes(size)
			b.ReportMetric(float64(passes), "passes")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(cleanerMemory(newOptions(nil)))/(1<<20), "dedupe-buffer-MiB")
		})
	}
}

// peakHeap samples the heap in use every millisecond until stop is closed and returns the
// largest sample, in bytes.
func peakHeap(stop <-chan struct{}) int64 {
	var peak int64
	var ms runtime.MemStats
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		runtime.ReadMemStats(&ms)
		peak = max(peak, int64(ms.HeapInuse))
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// BenchmarkRebuildState measures a reader rebuilding a table (the latest value per key) from
// the start of a topic of 100k keys written twice, compacted or not.
func BenchmarkRebuildState(b *testing.B) {
	for _, compacted := range []bool{false, true} {
		b.Run(fmt.Sprintf("compacted=%v", compacted), func(b *testing.B) {
			l, _ := compactBenchLog(b, 100_000)
			if compacted {
				if _, err := l.Compact(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(l.Size())
			b.ResetTimer()
			for range b.N {
				table := make(map[string][]byte, 100_000)
				n := 0
				for r, err := range l.Scan(l.LogStartOffset()) {
					if err != nil {
						b.Fatal(err)
					}
					table[string(r.Key)] = append(table[string(r.Key)][:0], r.Value...)
					n++
				}
				if len(table) != 100_000 {
					b.Fatalf("%d keys", len(table))
				}
				b.ReportMetric(float64(n), "records/op")
			}
		})
	}
}
