package commitlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// BenchmarkTopicAppendSingle measures producers of single records: Topic.Append of one record
// per call, with the store's default durability (SyncAlways, acks=all), from 1, 16 and 64
// goroutines into a topic of 4 partitions on a file store, with the partitions' coalescing of
// concurrent appends (batch.size=16384, the default) and without it (batch.size=0, every call its
// own batch and write, the log's group commit alone), and with null keys. The log=group-commit line is its twin
// on one Log: Log.Append of one record per call from 16 goroutines, the log's group commit alone,
// for the ratio. One op is one record; the benchmarks report records/s, cpu-ns/op (the process's
// CPU time per record), and batches/record (the batches the appends wrote over the records) and
// appends/fsync (records per group-commit fsync), which say how well concurrent appends share a
// batch and an fsync whatever the disk's speed.
//
//	go test -run='^$' -bench=TopicAppendSingle -benchtime=2s .
func BenchmarkTopicAppendSingle(b *testing.B) {
	ctx := context.Background()
	for _, g := range []int{1, 16, 64} {
		for _, batchSize := range []int{DefaultBatchSize, 0} {
			b.Run(fmt.Sprintf("goroutines=%d/partitions=4/batch.size=%d", g, batchSize), func(b *testing.B) {
				benchTopicSingle(b, g, true, WithBatchSize(batchSize))
			})
		}
	}
	// Null keys: the sticky partitioner sends about 16 KiB of records to one partition before
	// the next, so the goroutines' appends meet in one partition, as on one log.
	b.Run("goroutines=16/partitions=4/keys=null", func(b *testing.B) { benchTopicSingle(b, 16, false) })
	b.Run("goroutines=16/log=group-commit", func(b *testing.B) {
		l, err := OpenLog(b.TempDir(), LogConfig{Sync: SyncAlways})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		if err := l.Append(ctx, benchRecord(0)); err != nil {
			b.Fatal(err)
		}
		benchSingleRecords(b, 16, []*Log{l}, func(r *Record) error { return l.Append(ctx, r) })
	})
}

// benchTopicSingle is one line of BenchmarkTopicAppendSingle: g goroutines appending single
// records, each goroutine's with a key of its own when keyed (else null keys), to a topic of 4
// partitions on a file store opened with opts.
func benchTopicSingle(b *testing.B, g int, keyed bool, opts ...Option) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("events", TopicConfig{Partitions: 4})
	if err != nil {
		b.Fatal(err)
	}
	for w := range g { // every partition's first segment made, outside the measurement
		if err := t.Append(ctx, benchRecord(w)); err != nil {
			b.Fatal(err)
		}
	}
	logs := make([]*Log, 0, 4)
	for _, p := range t.parts() {
		logs = append(logs, p.log)
	}
	benchSingleRecords(b, g, logs, func(r *Record) error {
		if !keyed {
			r.Key = nil
		}
		return t.Append(ctx, r)
	})
}

// benchSingleRecords times b.N appends of one record each by appendOne, shared among g
// goroutines, and reports records/s, allocs/record, and, over logs (those the appends land in),
// batches/record and appends/fsync. Each goroutine appends a record of its own, made again for
// every call: an append sets the record's offset.
func benchSingleRecords(b *testing.B, g int, logs []*Log, appendOne func(*Record) error) {
	b.Helper()
	batchesBefore, fsyncsBefore := benchBatches(b, logs), int64(0)
	for _, l := range logs {
		fsyncsBefore += l.gc.fsyncs.Load()
	}
	b.SetBytes(benchRecBytes)
	b.ReportAllocs()
	b.ResetTimer()
	m0 := benchMallocs()
	var next atomic.Int64
	errs := make(chan error, g)
	benchCPU(b, func() {
		var wg sync.WaitGroup
		for w := range g {
			wg.Go(func() {
				proto := benchRecord(w)
				for next.Add(1) <= int64(b.N) {
					r := &Record{Key: proto.Key, Value: proto.Value}
					if err := appendOne(r); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
	})
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	benchReport(b, b.N, benchMallocs()-m0, 1)
	fsyncs := int64(0)
	for _, l := range logs {
		fsyncs += l.gc.fsyncs.Load()
	}
	b.ReportMetric(float64(benchBatches(b, logs)-batchesBefore)/float64(b.N), "batches/record")
	b.ReportMetric(float64(b.N)/float64(max(fsyncs-fsyncsBefore, 1)), "appends/fsync")
}

// benchBatches counts the batches the logs hold.
func benchBatches(b *testing.B, logs []*Log) int {
	b.Helper()
	n := 0
	var buf []byte
	for _, l := range logs {
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			var err error
			buf, err = l.ReadBatches(buf[:0], off, 1<<20)
			if err != nil || len(buf) == 0 {
				b.Fatalf("read %s at %d: %d bytes, %v", l.Dir(), off, len(buf), err)
			}
			for pos := 0; pos < len(buf); {
				h, err := recordbatch.ParseHeader(buf[pos:], 0)
				if err != nil {
					b.Fatal(err)
				}
				n, off, pos = n+1, h.NextOffset(), pos+h.Size()
			}
		}
	}
	return n
}
