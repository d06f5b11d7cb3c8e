package commitlog

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Benchmarks of the log's append, read and open paths, each beside a baseline in the same run:
// a bufio.Writer appending length-prefixed records (4-byte big-endian length, 16-byte key, value)
// to one file, and a bufio.Reader reading them back. The figures worth comparing are the ratios
// between lines of one run, never absolute times.
//
// Records have a 16-byte key and a 100-byte value; b.SetBytes counts those 116 bytes per record,
// so MB/s is payload throughput whatever the framing costs. Besides ns/op, MB/s and allocs/op, the
// benchmarks report records/s and allocs/record.
//
//	go test -run='^$' -bench=. -benchtime=2s .
//
// The read and open benchmarks build a log of COMMITLOG_BENCH_BYTES bytes first (a number with an
// optional KiB, MiB or GiB suffix; 256MiB by default, so that a plain go test -bench stays quick
// and light on disk). Kafka's default segment is 1 GiB; measure at that size with
//
//	COMMITLOG_BENCH_BYTES=1GiB go test -run='^$' -bench='Read|Open' .
//
// The sequential read benchmark also compares reading a segment's bytes through a read-only
// mapping (mmap, through the file-system seam) with pread of the same file, since mapped reads
// have been unsteady on some machines; run it with -count to see the spread.

const (
	benchKeySize   = 16
	benchValueSize = 100
	benchRecBytes  = benchKeySize + benchValueSize
)

// benchBytes is the size of the logs the read and open benchmarks build.
func benchBytes(b *testing.B) int64 {
	s := os.Getenv("COMMITLOG_BENCH_BYTES")
	if s == "" {
		return 256 << 20
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("COMMITLOG_BENCH_BYTES=%q: want a positive size such as 1GiB", os.Getenv("COMMITLOG_BENCH_BYTES"))
	}
	return n * mult
}

// benchRecord returns a record of the benchmark workload: key "key-%012d" (16 bytes) and a
// 100-byte value, both derived from i.
func benchRecord(i int) *Record {
	value := make([]byte, benchValueSize)
	for j := range value {
		value[j] = byte(i*7 + j)
	}
	return &Record{Key: fmt.Appendf(nil, "key-%012d", i%1_000_000_000_000), Value: value}
}

func benchRecords(n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = benchRecord(i)
	}
	return recs
}

// benchReport adds records/s and allocs/record (and, with batch > 1, allocs/batch) to the
// results. mallocs is the number of allocations the measured loop made.
func benchReport(b *testing.B, records int, mallocs uint64, batch int) {
	if records <= 0 {
		return
	}
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(records)/s, "records/s")
	}
	b.ReportMetric(float64(mallocs)/float64(records), "allocs/record")
	if batch > 1 {
		b.ReportMetric(float64(mallocs)*float64(batch)/float64(records), "allocs/batch")
	}
}

func benchMallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// benchWriteRecord writes r in the baseline's format through w: its length (4 bytes, big-endian,
// built in lenBuf), key and value.
func benchWriteRecord(w *bufio.Writer, lenBuf []byte, r *Record) error {
	binary.BigEndian.PutUint32(lenBuf[:4], uint32(len(r.Key)+len(r.Value)))
	if _, err := w.Write(lenBuf[:4]); err != nil {
		return err
	}
	if _, err := w.Write(r.Key); err != nil {
		return err
	}
	_, err := w.Write(r.Value)
	return err
}

// BenchmarkAppend measures Append under SyncNever, in batches of 1, 100 and 1000 records, against
// a bufio.Writer (default 4 KiB buffer, and 64 KiB) appending the same records to one file. One
// op is one record.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{0, 64 << 10} {
		name := "baseline=bufio"
		if size > 0 {
			name = fmt.Sprintf("baseline=bufio-%dKiB", size>>10)
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			w := bufio.NewWriter(f)
			if size > 0 {
				w = bufio.NewWriterSize(f, size)
			}
			recs := benchRecords(1000)
			lenBuf := make([]byte, 4)
			b.SetBytes(benchRecBytes)
			b.ReportAllocs()
			b.ResetTimer()
			m0 := benchMallocs()
			for i := range b.N {
				if err := benchWriteRecord(w, lenBuf, recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			benchReport(b, b.N, benchMallocs()-m0, 1)
		})
	}
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d/sync=never", batch), func(b *testing.B) {
			l, err := OpenLog(b.TempDir(), LogConfig{Sync: SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			recs := benchRecords(batch)
			// Warm the encoder pool and the first segment's files outside the measurement.
			if err := l.Append(ctx, recs...); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(benchRecBytes)
			benchAppendLoop(b, recs, func(rs []*Record) error { return l.Append(ctx, rs...) })
		})
	}
}

// BenchmarkTopicAppendKeyed measures Topic.Append of keyed records in calls of 8192 into 8
// partitions under SyncNever, the shape of the bench module's flights workload (3-byte keys
// among 300, 60-byte values) without its segment rolls: routing, encoding and writing. One op is
// one record. Run with -cpu 1 to see the CPU a record costs.
func BenchmarkTopicAppendKeyed(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), WithSync(SyncNever))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("flights", TopicConfig{Partitions: 8, LogConfig: LogConfig{SegmentDuration: 1000 * 24 * time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 8192
	recs := make([]*Record, batch)
	for i := range recs {
		recs[i] = &Record{Key: fmt.Appendf(nil, "K%02d", i*7919%300), Value: fmt.Appendf(nil, "%060d", i),
			Timestamp: time.UnixMilli(1_000_000_000_000 + int64(i)*1000)}
	}
	if err := t.Append(ctx, recs...); err != nil {
		b.Fatal(err)
	}
	var payload int
	for _, r := range recs {
		payload += len(r.Key) + len(r.Value)
	}
	b.SetBytes(int64(payload / batch)) // a record's key and value, on average
	benchAppendLoop(b, recs, func(rs []*Record) error { return t.Append(ctx, rs...) })
}

// benchAppendLoop times appending b.N records with appendRecs, in calls of len(recs) records (the
// last call fewer), and reports records/s and allocations per record.
func benchAppendLoop(b *testing.B, recs []*Record, appendRecs func([]*Record) error) {
	b.Helper()
	batch := len(recs)
	b.ReportAllocs()
	b.ResetTimer()
	m0 := benchMallocs()
	for n := 0; n < b.N; n += batch {
		if err := appendRecs(recs[:min(batch, b.N-n)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	benchReport(b, b.N, benchMallocs()-m0, batch)
}

// BenchmarkAppendSyncAlways measures single-record appends under SyncAlways from 1 and 16
// goroutines: with group commit, 16 goroutines share fsyncs and reach many times the records/s of
// one. The baseline writes one length-prefixed record and fdatasyncs the file, per op: the disk's
// fsync rate.
func BenchmarkAppendSyncAlways(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline=write+fsync", func(b *testing.B) {
		f, err := fsys.OS().OpenFile(filepath.Join(b.TempDir(), "baseline"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		r := benchRecord(0)
		rec := binary.BigEndian.AppendUint32(nil, uint32(benchRecBytes))
		rec = append(append(rec, r.Key...), r.Value...)
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		b.ResetTimer()
		m0 := benchMallocs()
		var pos int64
		for range b.N {
			if _, err := f.WriteAt(rec, pos); err != nil {
				b.Fatal(err)
			}
			pos += int64(len(rec))
			if err := f.Sync(); err != nil { // fdatasync on Linux, as the log's
				b.Fatal(err)
			}
		}
		b.StopTimer()
		benchReport(b, b.N, benchMallocs()-m0, 1)
	})
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			l, err := OpenLog(b.TempDir(), LogConfig{Sync: SyncAlways})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if err := l.Append(ctx, benchRecord(0)); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(benchRecBytes)
			b.ReportAllocs()
			b.ResetTimer()
			m0 := benchMallocs()
			f0 := l.gc.fsyncs.Load()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, g)
			for w := range g {
				wg.Go(func() {
					r := benchRecord(w)
					for next.Add(1) <= int64(b.N) {
						if err := l.Append(ctx, r); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			benchReport(b, b.N, benchMallocs()-m0, 1)
			// How well the group commit shares: the disk's speed does not change this figure.
			b.ReportMetric(float64(b.N)/float64(max(l.gc.fsyncs.Load()-f0, 1)), "appends/fsync")
		})
	}
}

// benchLog is a log built for the read and open benchmarks, and the same records in the
// baseline's format.
type benchLog struct {
	dir      string
	leo      int64
	baseline string  // the baseline file
	basePos  []int64 // position of every record in the baseline file, and its end
}

// buildBenchLog appends records of the workload, batch at a time, until the log holds size
// bytes, and writes the same records to the baseline file; both are closed when it returns.
func buildBenchLog(b *testing.B, dir string, size int64, batch int) *benchLog {
	b.Helper()
	start := time.Now()
	ctx := context.Background()
	bl := &benchLog{dir: filepath.Join(dir, "log"), baseline: filepath.Join(dir, "baseline")}
	l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(bl.baseline)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	recs := benchRecords(batch)
	lenBuf := make([]byte, 4)
	var pos int64
	for l.Size() < size {
		if err := l.Append(ctx, recs...); err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			bl.basePos = append(bl.basePos, pos)
			if err := benchWriteRecord(w, lenBuf, r); err != nil {
				b.Fatal(err)
			}
			pos += 4 + int64(len(r.Key)+len(r.Value))
		}
	}
	bl.basePos = append(bl.basePos, pos)
	bl.leo = l.LogEndOffset()
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a log of %d MiB, %d records in batches of %d, in %v", size>>20, bl.leo, batch, time.Since(start).Round(time.Millisecond))
	return bl
}

// benchReadBaseline reads length-prefixed records through a bufio.Reader until n are read,
// starting over at the end of the file. It returns the bytes of keys and values seen.
func benchReadBaseline(b *testing.B, path string, n int) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var lenBuf [4]byte
	buf := make([]byte, 0, 1024)
	sum := 0
	for i := 0; i < n; {
		if _, err := io.ReadFull(r, lenBuf[:]); err == io.EOF {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				b.Fatal(err)
			}
			r.Reset(f)
			continue
		} else if err != nil {
			b.Fatal(err)
		}
		m := int(binary.BigEndian.Uint32(lenBuf[:]))
		buf = buf[:m]
		if _, err := io.ReadFull(r, buf); err != nil {
			b.Fatal(err)
		}
		key, value := buf[:benchKeySize], buf[benchKeySize:]
		sum += len(key) + len(value)
		i++
	}
	return sum
}

// BenchmarkReadSequential reads a log from its first offset to its end, over and over, against
// a bufio.Reader reading the same records from the baseline file. One op is one record:
//
//   - ReadBatches: the broker's fetch path, whole batches with their CRCs checked, records
//     counted from the headers and not decoded;
//   - Scan: the zero-copy record iterator, every record's key and value reached without a copy
//     or an allocation per record;
//   - ReadRecords: the convenience API, which copies every record into its own *Record.
//
// Then a segment file's bytes, one op per MiB, read through a mapping and with pread.
func BenchmarkReadSequential(b *testing.B) {
	bl := buildBenchLog(b, b.TempDir(), benchBytes(b), 1000)
	const chunk = 1 << 20

	b.Run("baseline=bufio", func(b *testing.B) {
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		m0 := benchMallocs()
		sum := benchReadBaseline(b, bl.baseline, b.N)
		b.StopTimer()
		if sum != b.N*benchRecBytes {
			b.Fatalf("read %d bytes of records, want %d", sum, b.N*benchRecBytes)
		}
		benchReport(b, b.N, benchMallocs()-m0, 1)
	})

	openRead := func(b *testing.B) *Log {
		l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	b.Run("log=ReadBatches", func(b *testing.B) {
		l := openRead(b)
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		b.ResetTimer()
		m0 := benchMallocs()
		var dst []byte
		var err error
		n, off := 0, int64(0)
		for n < b.N {
			if off >= bl.leo {
				off = 0
			}
			dst, err = l.ReadBatches(dst[:0], off, chunk)
			if err != nil {
				b.Fatal(err)
			}
			for pos := 0; pos < len(dst); {
				h, err := recordbatch.ParseHeader(dst[pos:], 0)
				if err != nil {
					b.Fatal(err)
				}
				n += int(h.RecordCount)
				off = h.NextOffset()
				pos += h.Size()
			}
		}
		b.StopTimer()
		benchReport(b, n, benchMallocs()-m0, 1)
	})
	b.Run("log=Scan", func(b *testing.B) {
		l := openRead(b)
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		b.ResetTimer()
		m0 := benchMallocs()
		n, sum := 0, 0
		for n < b.N {
			for r, err := range l.Scan(0) {
				if err != nil {
					b.Fatal(err)
				}
				sum += len(r.Key) + len(r.Value)
				if n++; n == b.N {
					break
				}
			}
		}
		b.StopTimer()
		if sum != n*benchRecBytes {
			b.Fatalf("read %d bytes of records, want %d", sum, n*benchRecBytes)
		}
		benchReport(b, n, benchMallocs()-m0, 1)
	})
	b.Run("log=ReadRecords", func(b *testing.B) {
		l := openRead(b)
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		b.ResetTimer()
		m0 := benchMallocs()
		n, off := 0, int64(0)
		for n < b.N {
			if off >= bl.leo {
				off = 0
			}
			recs, err := l.ReadRecords(off, chunk)
			if err != nil {
				b.Fatal(err)
			}
			n += len(recs)
			off = recs[len(recs)-1].Offset + 1
		}
		b.StopTimer()
		benchReport(b, n, benchMallocs()-m0, 1)
	})

	// The segment file's bytes: one op is one MiB delivered into a buffer, with the file's
	// pages in the page cache. The mapping is made once, outside the measurement.
	seg := filepath.Join(bl.dir, segmentName(0)+logSuffix)
	fi, err := os.Stat(seg)
	if err != nil {
		b.Fatal(err)
	}
	segSize := int(fi.Size()) / chunk * chunk
	b.Run("file=pread", func(b *testing.B) {
		f, err := os.Open(seg)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, chunk)
		var crc uint32
		b.SetBytes(chunk)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := f.ReadAt(buf, int64(i*chunk%segSize)); err != nil {
				b.Fatal(err)
			}
			crc ^= uint32(buf[i%chunk])
		}
		_ = crc
	})
	b.Run("file=mmap", func(b *testing.B) {
		switch runtime.GOOS {
		case "windows", "plan9", "js", "wasip1":
			b.Skip("the file-system seam maps with mmap on unix only")
		}
		f, err := fsys.OS().OpenFile(seg, os.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		m, err := f.Map(segSize, false) // unix.Mmap(fd, 0, size, PROT_READ, MAP_SHARED)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		data := m.Bytes()
		buf := make([]byte, chunk)
		var crc uint32
		b.SetBytes(chunk)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			off := i * chunk % segSize
			copy(buf, data[off:off+chunk])
			crc ^= uint32(buf[i%chunk])
		}
		_ = crc
	})
	// A fresh mapping for every pass over the file, made and dropped inside the measurement: the
	// page faults of first touch, which a mapping kept open pays only once, are counted here.
	b.Run("file=mmap-per-pass", func(b *testing.B) {
		switch runtime.GOOS {
		case "windows", "plan9", "js", "wasip1":
			b.Skip("the file-system seam maps with mmap on unix only")
		}
		f, err := fsys.OS().OpenFile(seg, os.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, chunk)
		var m fsys.Mapping
		var crc uint32
		b.SetBytes(chunk)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			off := i * chunk % segSize
			if off == 0 {
				if m != nil {
					if err := m.Close(); err != nil {
						b.Fatal(err)
					}
				}
				if m, err = f.Map(segSize, false); err != nil {
					b.Fatal(err)
				}
			}
			copy(buf, m.Bytes()[off:off+chunk])
			crc ^= uint32(buf[i%chunk])
		}
		b.StopTimer()
		if m != nil {
			m.Close()
		}
		_ = crc
	})
	// The same two with the bytes checksummed in place (CRC-32C, as batch verification does)
	// rather than copied: the mapping's case for zero-copy.
	b.Run("file=pread+crc", func(b *testing.B) {
		f, err := os.Open(seg)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, chunk)
		var crc uint32
		b.SetBytes(chunk)
		b.ResetTimer()
		for i := range b.N {
			if _, err := f.ReadAt(buf, int64(i*chunk%segSize)); err != nil {
				b.Fatal(err)
			}
			crc = crc32.Update(crc, benchCastagnoli, buf)
		}
		_ = crc
	})
	b.Run("file=mmap+crc", func(b *testing.B) {
		switch runtime.GOOS {
		case "windows", "plan9", "js", "wasip1":
			b.Skip("the file-system seam maps with mmap on unix only")
		}
		f, err := fsys.OS().OpenFile(seg, os.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		m, err := f.Map(segSize, false)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		data := m.Bytes()
		var crc uint32
		b.SetBytes(chunk)
		b.ResetTimer()
		for i := range b.N {
			off := i * chunk % segSize
			crc = crc32.Update(crc, benchCastagnoli, data[off:off+chunk])
		}
		_ = crc
	})
}

var benchCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// BenchmarkReadRandom reads single records at 100k random offsets (seeded, the same for every
// line) against pread of the same records from the baseline file, whose positions are kept in a
// table. One op is one record read. The log is built of single-record batches, since a read
// returns the whole batch holding the offset (as Kafka's fetch does); batch=100 shows the cost of
// larger batches.
func BenchmarkReadRandom(b *testing.B) {
	size := benchBytes(b)
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			bl := buildBenchLog(b, b.TempDir(), size, batch)
			rng := rand.New(rand.NewPCG(1, 2))
			offsets := make([]int64, 100_000)
			for i := range offsets {
				offsets[i] = rng.Int64N(bl.leo)
			}
			if batch == 1 {
				b.Run("baseline=pread", func(b *testing.B) { benchPreadTable(b, bl, offsets) })
			}
			b.Run("log=ReadBatches+Decode", func(b *testing.B) {
				l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				var dst []byte
				var dec recordbatch.Decoder
				sum := 0
				b.SetBytes(benchRecBytes)
				b.ReportAllocs()
				b.ResetTimer()
				m0 := benchMallocs()
				for i := range b.N {
					off := offsets[i%len(offsets)]
					dst, err = l.ReadBatches(dst[:0], off, 1)
					if err != nil {
						b.Fatal(err)
					}
					batch, err := dec.Decode(dst)
					if err != nil {
						b.Fatal(err)
					}
					for r := range batch.Records() {
						if batch.RecordOffset(&r) == off {
							sum += len(r.Key) + len(r.Value)
							break
						}
					}
				}
				b.StopTimer()
				if sum != b.N*benchRecBytes {
					b.Fatalf("read %d bytes of records, want %d", sum, b.N*benchRecBytes)
				}
				benchReport(b, b.N, benchMallocs()-m0, 1)
			})
		})
	}
}

// BenchmarkReadRecordRandom reads single records at 100k random offsets (seeded) of a log built
// in batches of 1000 records, as workload (e) of bench/ does, against the pread table baseline:
// one pread of the record's bytes from the baseline file, whose record positions are kept in
// memory. One op is one record read:
//
//   - ReadRecord: into one reused Record, through the segment's mapping (pread under the
//     commitlog_nommap build tag) and the record position cache, so that after the first pass
//     over the offsets every batch read has had its CRC checked and its positions kept;
//   - ReadRecord-nocache: with WithRecordPositionCache(-1), every read checks its batch's CRC
//     and walks it from its first record;
//   - ReadRecords: ReadRecords(offset, 1), a new Record for each read, which takes ReadRecord's
//     path (offset index and position cache) and allocates the record.
func BenchmarkReadRecordRandom(b *testing.B) {
	bl := buildBenchLog(b, b.TempDir(), benchBytes(b), 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := make([]int64, 100_000)
	for i := range offsets {
		offsets[i] = rng.Int64N(bl.leo)
	}
	b.Run("baseline=pread-table", func(b *testing.B) { benchPreadTable(b, bl, offsets) })
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"log=ReadRecord", nil},
		{"log=ReadRecord-nocache", []Option{WithRecordPositionCache(-1)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever}, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var rec Record
			sum := 0
			b.SetBytes(benchRecBytes)
			b.ReportAllocs()
			b.ResetTimer()
			m0 := benchMallocs()
			for i := range b.N {
				off := offsets[i%len(offsets)]
				if err := l.ReadRecord(off, &rec); err != nil {
					b.Fatal(err)
				}
				if rec.Offset != off {
					b.Fatalf("read offset %d, got record %d", off, rec.Offset)
				}
				sum += len(rec.Key) + len(rec.Value)
			}
			b.StopTimer()
			if sum != b.N*benchRecBytes {
				b.Fatalf("read %d bytes of records, want %d", sum, b.N*benchRecBytes)
			}
			benchReport(b, b.N, benchMallocs()-m0, 1)
		})
	}
	b.Run("log=ReadRecords", func(b *testing.B) {
		l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		sum := 0
		b.SetBytes(benchRecBytes)
		b.ReportAllocs()
		b.ResetTimer()
		m0 := benchMallocs()
		for i := range b.N {
			off := offsets[i%len(offsets)]
			recs, err := l.ReadRecords(off, 1)
			if err != nil {
				b.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Offset != off {
				b.Fatalf("read offset %d, got %d records", off, len(recs))
			}
			sum += len(recs[0].Key) + len(recs[0].Value)
		}
		b.StopTimer()
		if sum != b.N*benchRecBytes {
			b.Fatalf("read %d bytes of records, want %d", sum, b.N*benchRecBytes)
		}
		benchReport(b, b.N, benchMallocs()-m0, 1)
	})
}

// BenchmarkOpen opens a log of COMMITLOG_BENCH_BYTES: after a clean close (nothing to scan but
// the batches after the active segment's last index entry), and after a simulated crash (the
// state file marked unclean with recovery point 0, so every batch is scanned and the indexes
// rebuilt). One op is one OpenLog; the Close after it is not measured.
func BenchmarkOpen(b *testing.B) {
	bl := buildBenchLog(b, b.TempDir(), benchBytes(b), 1000)
	measure := func(b *testing.B, before func()) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			before()
			b.StartTimer()
			l, err := OpenLog(bl.dir, LogConfig{Sync: SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if got := l.LogEndOffset(); got != bl.leo {
				b.Fatalf("opened with log end offset %d, want %d", got, bl.leo)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/open")
	}
	b.Run("clean", func(b *testing.B) {
		measure(b, func() {})
	})
	b.Run("crash", func(b *testing.B) {
		measure(b, func() {
			st := logState{logStartOffset: 0, recoveryPoint: 0, clean: false}
			if err := checkpoint.Write(fsys.OS(), filepath.Join(bl.dir, stateFileName), st.encode()); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// benchPreadTable is the random-read baseline: one pread of each record's frame of bl's baseline
// file, at a position kept in a table, for offsets in turn.
func benchPreadTable(b *testing.B, bl *benchLog, offsets []int64) {
	f, err := os.Open(bl.baseline)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	sum := 0
	b.SetBytes(benchRecBytes)
	b.ReportAllocs()
	b.ResetTimer()
	m0 := benchMallocs()
	for i := range b.N {
		off := offsets[i%len(offsets)]
		pos, end := bl.basePos[off], bl.basePos[off+1]
		p := buf[:end-pos]
		if _, err := f.ReadAt(p, pos); err != nil {
			b.Fatal(err)
		}
		sum += len(p) - 4
	}
	b.StopTimer()
	if sum != b.N*benchRecBytes {
		b.Fatalf("read %d bytes of records, want %d", sum, b.N*benchRecBytes)
	}
	benchReport(b, b.N, benchMallocs()-m0, 1)
}
