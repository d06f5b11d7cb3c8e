package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// scanCopies collects Scan's records from from, copied (Scan's records are only valid inside the
// loop body), stopping after limit records when limit > 0.
func scanCopies(t *testing.T, l *Log, from int64, limit int) ([]*Record, error) {
	t.Helper()
	var out []*Record
	for r, err := range l.Scan(from) {
		if err != nil {
			return out, err
		}
		c := *r
		c.Key, c.Value = cloneBytes(r.Key), cloneBytes(r.Value)
		c.Headers = nil
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, Header{Key: h.Key, Value: cloneBytes(h.Value)})
		}
		out = append(out, &c)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func TestScan(t *testing.T) {
	for _, comp := range []Compression{CompressionNone, CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.SegmentBytes, cfg.Compression = 4096, comp
				l := openTestLog(t, fsy, t.TempDir(), cfg)
				want := appendBatches(t, l, 12, 25) // 300 records over several segments
				require.Greater(t, l.SegmentCount(), 1)

				tests := []struct {
					name  string
					from  int64
					limit int
					want  []*Record
				}{
					{"all", 0, 0, want},
					{"mid-batch", 37, 0, want[37:]},
					{"last", 299, 0, want[299:]},
					{"at end", 300, 0, nil},
					{"first three", 110, 3, want[110:113]},
				}
				for _, tc := range tests {
					got, err := scanCopies(t, l, tc.from, tc.limit)
					require.NoError(t, err, tc.name)
					require.Len(t, got, len(tc.want), tc.name)
					requireSameRecords(t, tc.want, got)
				}

				// Records appended after the iteration starts are not part of it.
				n := 0
				for r, err := range l.Scan(290) {
					require.NoError(t, err)
					if n == 0 {
						require.NoError(t, l.Append(context.Background(), workloadRecords(300, 5)...))
					}
					require.Equal(t, int64(290+n), r.Offset)
					n++
				}
				require.Equal(t, 10, n)

				_, err := scanCopies(t, l, 306, 0)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)
				require.NoError(t, l.Close())
				_, err = scanCopies(t, l, 0, 0)
				require.ErrorIs(t, err, ErrClosed)
			})
		})
	}
}

func TestScanAllocatesNothingPerRecord(t *testing.T) {
	l := openTestLog(t, fsys.NewMemory(), "/log", baseConfig())
	appendBatches(t, l, 4, 1000)
	allocs := testing.AllocsPerRun(5, func() {
		n := 0
		for r, err := range l.Scan(0) {
			if err != nil || r.Offset != int64(n) {
				t.Fatalf("record %d: offset %d, err %v", n, r.Offset, err)
			}
			n++
		}
		if n != 4000 {
			t.Fatalf("scanned %d records, want 4000", n)
		}
	})
	// Per read and per batch (buffers, closures, and the batch's header keys and header slice,
	// which grow by doubling: about 20 a batch of these records, 1,000 with two headers each),
	// never per record: 4,000 records would make at least 4,000.
	require.Less(t, allocs, 200.0, "allocations per scan of 4,000 records")
}

// TestScanResetsEveryField: a loop body that changes a record does not change the next one.
func TestScanResetsEveryField(t *testing.T) {
	l := openTestLog(t, fsys.NewMemory(), "/log", baseConfig())
	recs := workloadRecords(0, 3)
	for _, r := range recs {
		r.Timestamp = testEpoch // one timestamp for all three
	}
	require.NoError(t, l.Append(context.Background(), recs...))
	var seen []time.Time
	for r, err := range l.Scan(0) {
		require.NoError(t, err)
		seen = append(seen, r.Timestamp)
		r.Timestamp = r.Timestamp.Add(time.Hour)
		r.Key = nil
	}
	require.Len(t, seen, 3)
	for _, ts := range seen {
		require.True(t, ts.Equal(testEpoch), "timestamp %v", ts)
	}
}
