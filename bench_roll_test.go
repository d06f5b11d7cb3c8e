package commitlog

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRoll times an append that rolls a segment under SyncNever, in the same run two ways:
// with the spare files the flusher made ahead of the roll (spare), and with the roll creating its
// three files itself (baseline=created: spares off). Before each timed append, untimed, the
// flusher has flushed the segment sealed before (and made the spares), so no background fsync
// competes with the roll. Every append is one 116-byte record into a segment too small to take
// two, so ns/op is one rolling append: the old segment sealed, the new one's files made or
// claimed, opened and mapped.
//
// A file's creation costs what the file system makes it cost: on ext4 without a journal it grows
// with the inodes freed in the last minutes (t.TempDir's folder in a busy /tmp has many), so run
// it with -count and read the ratio of the two lines.
//
//	go test -run='^$' -bench=Roll -count=3 .
func BenchmarkRoll(b *testing.B) {
	ctx := context.Background()
	for _, spare := range []bool{false, true} {
		name := "baseline=created"
		if spare {
			name = "spare"
		}
		b.Run(name, func(b *testing.B) {
			l, err := OpenLog(b.TempDir(), LogConfig{Sync: SyncNever, SegmentBytes: 200, RetentionDuration: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			l.spares.off = !spare
			// Two appends: the second rolls, which is what wakes the flusher to make spares.
			r := benchRecord(0)
			for range 2 {
				if err := l.Append(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(benchRecBytes)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for l.flushPending() || spare && !l.sparesReady() {
					time.Sleep(20 * time.Microsecond)
				}
				b.StartTimer()
				if err := l.Append(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if got := l.LogEndOffset(); got != int64(b.N)+2 {
				b.Fatalf("log end offset %d, want %d", got, b.N+2)
			}
		})
	}
}

// sparesReady reports whether the flusher has made the spare files for the next roll.
func (l *Log) sparesReady() bool {
	l.spares.mu.Lock()
	defer l.spares.mu.Unlock()
	return l.spares.ready
}
