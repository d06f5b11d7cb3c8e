package commitlog

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// BenchmarkReaderDrain drains one partition of 1,000,000 records (16-byte keys, 100-byte values,
// appended 1,000 to a batch) from its first offset to its high watermark, on the file store and
// the in-memory store. One op is one whole drain; MB/s counts key and value bytes, records/s the
// records of all ops. Every line reads the same partition:
//
//   - scan: Partition.Scan, the zero-copy iterator (records valid only during the loop body);
//   - reader: Reader.Records from Earliest, records the caller owns;
//   - reader-scan: Reader.Scan from Earliest, the zero-copy reader (records valid only during
//     the loop body);
//   - readrecords: Partition.ReadRecords(offset, DefaultReaderMaxBytes) in a loop, records the
//     caller owns.
//
// The other lines report x-scan, their records/s over the scan line's of the
// same run, so the ratio is visible in one run:
//
//	go test -run='^$' -bench=BenchmarkReaderDrain -benchtime=3x .
func BenchmarkReaderDrain(b *testing.B) {
	const total = 1_000_000
	for _, kind := range []string{"file", "memory"} {
		b.Run("store="+kind, func(b *testing.B) {
			t, p := fillDrainPartition(b, kind == "memory", total)
			var scanRate, scanCPU float64
			// report adds records/s, allocs/record and cpu-ns/record (the process's CPU time,
			// the garbage collector's included, steadier than records/s on a busy machine),
			// and, against the scan line, x-scan (records/s) and cpu-x-scan (CPU time a record,
			// the scan line's over this one's: above 1 is cheaper than scan).
			report := func(b *testing.B, n int, mallocs uint64, cpu0 time.Duration, vsScan bool) (float64, float64) {
				b.StopTimer()
				cpu1, _ := processCPU()
				if n != b.N*total {
					b.Fatalf("read %d records, want %d", n, b.N*total)
				}
				benchReport(b, n, mallocs, 1)
				rate := float64(n) / b.Elapsed().Seconds()
				cpu := float64((cpu1 - cpu0).Nanoseconds()) / float64(n)
				b.ReportMetric(cpu, "cpu-ns/record")
				if vsScan && scanRate > 0 {
					b.ReportMetric(rate/scanRate, "x-scan")
				}
				if vsScan && scanCPU > 0 && cpu > 0 {
					b.ReportMetric(scanCPU/cpu, "cpu-x-scan")
				}
				return rate, cpu
			}

			// measure runs drain b.N times, each draining the partition once and returning the
			// records it read, and reports them.
			measure := func(b *testing.B, drain func() int, vsScan bool) (float64, float64) {
				b.SetBytes(total * benchRecBytes)
				runtime.GC() // the fill's and the last line's garbage, outside the clock
				b.ResetTimer()
				m0 := benchMallocs()
				cpu0, _ := processCPU()
				n := 0
				for range b.N {
					n += drain()
				}
				return report(b, n, benchMallocs()-m0, cpu0, vsScan)
			}
			b.Run("read=scan", func(b *testing.B) {
				scanRate, scanCPU = measure(b, func() int { return drainPartitionScan(b, p) }, false)
			})
			// A new Reader reads the topic from the start, through Records (owned records) or
			// Scan (the zero-copy mode).
			b.Run("read=reader", func(b *testing.B) {
				measure(b, func() int { return drainReader(b, t, total, false) }, true)
			})
			b.Run("read=reader-scan", func(b *testing.B) {
				measure(b, func() int { return drainReader(b, t, total, true) }, true)
			})
			b.Run("read=readrecords", func(b *testing.B) {
				measure(b, func() int { return drainReadRecords(b, p, total) }, true)
			})
		})
	}
}

// BenchmarkReaderDrainInterleaved drains the partition of BenchmarkReaderDrain (file store) with
// every read path in turn within each op, so that a busy machine slows them alike, and reports
// from the summed times of all ops each path's records/s over Partition.Scan's (PATH-x-scan), and
// what the paths whose records are the caller's allocate: bytes a record (PATH-B/record) and
// garbage collections a million records (PATH-gc/Mrecord). The paths check each record's offset,
// key and value lengths, as BenchmarkReaderDrain's do:
//
//	go test -run='^$' -bench=BenchmarkReaderDrainInterleaved -benchtime=5x .
func BenchmarkReaderDrainInterleaved(b *testing.B) {
	const total = 1_000_000
	t, p := fillDrainPartition(b, false, total)
	paths := []struct {
		name  string
		owned bool
		read  func()
	}{
		{"scan", false, func() { drainPartitionScan(b, p) }},
		{"reader-scan", false, func() { drainReader(b, t, total, true) }},
		{"reader", true, func() { drainReader(b, t, total, false) }},
		{"readrecords", true, func() { drainReadRecords(b, p, total) }},
	}
	type cost struct {
		took       time.Duration
		bytes, gcs uint64
	}
	costs := make([]cost, len(paths))
	var ms runtime.MemStats
	runtime.GC() // the fill's garbage, outside the clock
	b.ResetTimer()
	for range b.N {
		for i, path := range paths {
			runtime.ReadMemStats(&ms)
			bytes0, gc0 := ms.TotalAlloc, ms.NumGC
			t0 := time.Now()
			path.read()
			costs[i].took += time.Since(t0)
			runtime.ReadMemStats(&ms)
			costs[i].bytes += ms.TotalAlloc - bytes0
			costs[i].gcs += uint64(ms.NumGC - gc0)
		}
	}
	b.StopTimer()
	records := float64(b.N) * total
	b.ReportMetric(records/costs[0].took.Seconds(), "scan-records/s")
	for i, path := range paths[1:] {
		c := costs[i+1]
		b.ReportMetric(float64(costs[0].took)/float64(c.took), path.name+"-x-scan")
		if path.owned {
			b.ReportMetric(float64(c.bytes)/records, path.name+"-B/record")
			b.ReportMetric(float64(c.gcs)*1e6/records, path.name+"-gc/Mrecord")
		}
	}
}

// checkBenchRecord fails b unless r is a record of fillBenchTopic at offset want: its offset, and
// its key and value lengths.
func checkBenchRecord(b *testing.B, want int64, r *Record) {
	if r.Offset != want || len(r.Key) != benchKeySize || len(r.Value) != benchValueSize {
		b.Fatalf("record at %d: offset %d, %d key bytes, %d value bytes", want, r.Offset, len(r.Key), len(r.Value))
	}
}

// drainPartitionScan reads p from offset 0 to its end with Partition.Scan, checking each record,
// and returns how many it read.
func drainPartitionScan(b *testing.B, p *Partition) int {
	next := int64(0)
	for r, err := range p.Scan(0) {
		if err != nil {
			b.Fatal(err)
		}
		checkBenchRecord(b, next, r)
		next++
	}
	return int(next)
}

// drainReader reads the first total records of t with a new Reader from Earliest, through
// Records (owned records) or, with zeroCopy, Scan, checking each, and returns how many it read.
func drainReader(b *testing.B, t *Topic, total int64, zeroCopy bool) int {
	r, err := t.NewReader(ReaderConfig{Start: Earliest})
	if err != nil {
		b.Fatal(err)
	}
	records := r.Records
	if zeroCopy {
		records = r.Scan
	}
	next := int64(0)
	for rec, err := range records(context.Background()) {
		if err != nil {
			b.Fatal(err)
		}
		checkBenchRecord(b, next, rec)
		if next++; next == total {
			break
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	return int(next)
}

// drainReadRecords reads the first total records of p with Partition.ReadRecords, a reader's
// fetch size (DefaultReaderMaxBytes) at a time, checking each, and returns how many it read.
func drainReadRecords(b *testing.B, p *Partition, total int64) int {
	next := int64(0)
	for next < total {
		recs, err := p.ReadRecords(next, DefaultReaderMaxBytes)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			checkBenchRecord(b, next, r)
			next++
		}
	}
	return int(next)
}

// fillDrainPartition opens a store (in memory, or in a temporary folder), closed when the
// benchmark ends, and fills the one partition of a new topic with total records of
// benchRecBytes.
func fillDrainPartition(b *testing.B, inMemory bool, total int) (*Topic, *Partition) {
	b.Helper()
	var s *Store
	var err error
	if inMemory {
		s, err = OpenInMemory()
	} else {
		s, err = Open(b.TempDir())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	t := fillBenchTopic(b, s, 1, total)
	p, err := t.Partition(0)
	if err != nil {
		b.Fatal(err)
	}
	return t, p
}
