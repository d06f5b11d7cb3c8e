package commitlog

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkReadOnlyRefresh measures one look of a read-only open (what the background poll does
// every WithPollInterval) over a store of 100 partitions of 3 segments each that nothing writes:
// the cost of following a writer when it is idle. Reported per look and per partition.
func BenchmarkReadOnlyRefresh(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, WithSync(SyncNever))
	if err != nil {
		b.Fatal(err)
	}
	const partitions = 100
	tp, err := s.CreateTopic("t", TopicConfig{Partitions: partitions, LogConfig: LogConfig{SegmentBytes: 256}})
	if err != nil {
		b.Fatal(err)
	}
	for id := range int32(partitions) {
		p, _ := tp.Partition(id)
		for i := range 9 {
			if err := p.Append(context.Background(), &Record{Value: fmt.Appendf(nil, "value-%d", i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, WithPollInterval(-1))
	if err != nil {
		b.Fatal(err)
	}
	defer ro.Close()
	n, _, err := ro.Segments("t", 0)
	if err != nil || n < 3 {
		b.Fatalf("partition 0 has %d segments (%v), want 3 or more", n, err)
	}
	for b.Loop() {
		if err := ro.Refresh(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/partitions, "ns/partition")
}
