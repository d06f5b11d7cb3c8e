package commitlog

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkReaderCommit reads records with a named reader and commits after every record, as
// the README's reader example once did: the cost of a per-record Commit (one positions file
// write each), reported as records/s. "file" is a store on disk, commits unsynced (the default)
// and with ReaderConfig.SyncCommits (an fsync of the file and the directory each); "memory" is
// the in-memory store, the commit path without the disk.
func BenchmarkReaderCommit(b *testing.B) {
	for _, bc := range []struct {
		name   string
		memory bool
		sync   bool
	}{{"file", false, false}, {"file-sync", false, true}, {"memory", true, false}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			opts := []Option{WithSync(SyncNever), WithRetentionCheckInterval(-1)}
			var s *Store
			var err error
			if bc.memory {
				s, err = OpenInMemory(opts...)
			} else {
				s, err = Open(b.TempDir(), opts...)
			}
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
			r, err := tp.NewReader(ReaderConfig{Name: "bench", Start: Earliest, SyncCommits: bc.sync})
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
		})
	}
}
