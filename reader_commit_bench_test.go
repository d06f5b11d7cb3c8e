package commitlog

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkReaderCommit reads records with a named reader and commits after every record, as
// the README's reader example does: the cost of a per-record Commit (one positions file write
// each) on the file store, reported as records/s.
func BenchmarkReaderCommit(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), WithSync(SyncNever), WithRetentionCheckInterval(-1))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]*Record, b.N)
	for i := range recs {
		recs[i] = &Record{Value: []byte("record-" + strconv.Itoa(i))}
	}
	if err := tp.Append(ctx, recs...); err != nil {
		b.Fatal(err)
	}
	r, err := tp.NewReader(ReaderConfig{Name: "bench", Start: Earliest})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := r.Next(ctx); err != nil {
			b.Fatal(err)
		}
		if err := r.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
