package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// isoSeen is a record as the isolation tests compare them.
type isoSeen struct {
	Partition int32
	Offset    int64
	Value     string
}

// isoWriter appends raw producer batches and markers to a store's partitions, as a Kafka
// client and its transaction coordinator would, tracking each producer's sequence per partition.
type isoWriter struct {
	t    *testing.T
	tp   *Topic
	seqs map[[2]int64]int32 // (partition, producer id) -> next sequence
}

func newIsoWriter(t *testing.T, s *Store, topic string) *isoWriter {
	return &isoWriter{t: t, tp: stMust(s.Topic(topic)), seqs: map[[2]int64]int32{}}
}

func (w *isoWriter) part(p int32) *Partition {
	w.t.Helper()
	part, err := w.tp.Partition(p)
	require.NoError(w.t, err)
	return part
}

// batch appends values to partition p as one batch: transactional of producer pid, or plain when
// pid is -1. It returns the first offset.
func (w *isoWriter) batch(p int32, pid int64, values ...string) int64 {
	w.t.Helper()
	recs := make([]*Record, len(values))
	for i, v := range values {
		recs[i] = &Record{Value: []byte(v), Timestamp: testEpoch}
	}
	var b []byte
	if pid < 0 {
		b = encodeBatch(w.t, 0, recs)
	} else {
		k := [2]int64{int64(p), pid}
		b = pidBatch(w.t, pid, 0, w.seqs[k], true, recs)
		w.seqs[k] += int32(len(values))
	}
	first, last, err := w.part(p).AppendAsLeader(context.Background(), AcksAll, b)
	require.NoError(w.t, err)
	require.Equal(w.t, first+int64(len(values))-1, last)
	return first
}

// marker writes producer pid's COMMIT (commit) or ABORT marker to partition p and returns its
// offset.
func (w *isoWriter) marker(p int32, pid int64, commit bool) int64 {
	w.t.Helper()
	off, err := w.part(p).AppendMarker(context.Background(), pid, 0, commit, 0)
	require.NoError(w.t, err)
	return off
}

// readAvailable returns what r gives until a Next waits: it reads with a short deadline, which
// ends the read when nothing more is readable (a Next that waits returns the deadline's error).
func readAvailable(t *testing.T, r *Reader) []isoSeen {
	t.Helper()
	return readAvailableVia(t, r, false)
}

// readAvailableVia is readAvailable, reading with Reader.Scan when scan is set: its context is
// cancelled when no record has come for the same short time.
func readAvailableVia(t *testing.T, r *Reader, scan bool) []isoSeen {
	t.Helper()
	if scan {
		const idle = 50 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		timer := time.AfterFunc(idle, cancel)
		defer timer.Stop()
		var out []isoSeen
		for rec, err := range r.Scan(ctx) {
			if err != nil {
				require.ErrorIs(t, err, context.Canceled)
				break
			}
			out = append(out, isoSeen{rec.Partition, rec.Offset, string(rec.Value)})
			timer.Reset(idle)
		}
		return out
	}
	var out []isoSeen
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		rec, err := r.Next(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return out
		}
		out = append(out, isoSeen{rec.Partition, rec.Offset, string(rec.Value)})
	}
}

// byPartition splits seen by partition, keeping their order.
func byPartition(seen []isoSeen) map[int32][]isoSeen {
	out := map[int32][]isoSeen{}
	for _, s := range seen {
		out[s.Partition] = append(out[s.Partition], s)
	}
	return out
}

// TestReadCommittedTwoProducersTwoPartitions: producer 1 commits and producer 2 aborts, their
// batches interleaved with each other and with plain batches in two partitions. A ReadCommitted
// reader returns exactly the committed and plain records, in offset order per partition, no
// marker; a ReadUncommitted reader returns every data record. Both end past the markers, their lag
// 0. With MaxBytes 1 every fetch is one batch, so each aborted batch is the last of its fetch.
// Next and Reader.Scan read alike.
func TestReadCommittedTwoProducersTwoPartitions(t *testing.T) {
	for _, tc := range []struct {
		maxBytes int
		scan     bool // read with Reader.Scan rather than Next
	}{{0, false}, {1, false}, {0, true}, {1, true}} {
		maxBytes := tc.maxBytes
		t.Run(fmt.Sprint("max_bytes=", maxBytes, "/scan=", tc.scan), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				s := openTxnStore(t, fsy, t.TempDir(), 2)
				w := newIsoWriter(t, s, "out")
				const a, b = 1, 2
				require.Equal(t, int64(0), w.batch(0, a, "a0-0"))
				require.Equal(t, int64(0), w.batch(1, b, "b1-0"))
				require.Equal(t, int64(1), w.batch(0, b, "b0-0"))
				require.Equal(t, int64(1), w.batch(1, a, "a1-0"))
				require.Equal(t, int64(2), w.batch(0, -1, "p0-0"))
				require.Equal(t, int64(2), w.marker(1, b, false))
				require.Equal(t, int64(3), w.batch(0, a, "a0-1", "a0-2"))
				require.Equal(t, int64(3), w.batch(1, a, "a1-1"))
				require.Equal(t, int64(5), w.batch(0, b, "b0-1", "b0-2"))
				require.Equal(t, int64(7), w.marker(0, a, true))
				require.Equal(t, int64(4), w.marker(1, a, true))
				require.Equal(t, int64(8), w.marker(0, b, false))
				require.Equal(t, int64(9), w.batch(0, -1, "p0-1"))
				require.Equal(t, int64(5), w.batch(1, b, "b1-1")) // b's next transaction, aborted at the end
				require.Equal(t, int64(6), w.marker(1, b, false))
				for p, end := range map[int32]int64{0: 10, 1: 7} {
					require.Equal(t, end, w.part(p).LastStableOffset(), "partition %d", p)
					require.Equal(t, end, w.part(p).HighWatermark(), "partition %d", p)
				}

				tp := stMust(s.Topic("out"))
				rc, err := tp.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted, MaxBytes: maxBytes})
				require.NoError(t, err)
				defer rc.Close()
				require.Equal(t, map[int32]int64{0: 10, 1: 7}, rc.Lag())
				require.Equal(t, map[int32][]isoSeen{
					0: {{0, 0, "a0-0"}, {0, 2, "p0-0"}, {0, 3, "a0-1"}, {0, 4, "a0-2"}, {0, 9, "p0-1"}},
					1: {{1, 1, "a1-0"}, {1, 3, "a1-1"}},
				}, byPartition(readAvailableVia(t, rc, tc.scan)))
				require.Equal(t, map[int32]int64{0: 10, 1: 7}, rc.Positions(), "past the last aborted batch and marker")
				require.Equal(t, map[int32]int64{0: 0, 1: 0}, rc.Lag())

				ru, err := tp.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadUncommitted, MaxBytes: maxBytes})
				require.NoError(t, err)
				defer ru.Close()
				require.Equal(t, map[int32][]isoSeen{
					0: {{0, 0, "a0-0"}, {0, 1, "b0-0"}, {0, 2, "p0-0"}, {0, 3, "a0-1"}, {0, 4, "a0-2"},
						{0, 5, "b0-1"}, {0, 6, "b0-2"}, {0, 9, "p0-1"}},
					1: {{1, 0, "b1-0"}, {1, 1, "a1-0"}, {1, 3, "a1-1"}, {1, 5, "b1-1"}},
				}, byPartition(readAvailableVia(t, ru, tc.scan)))
				require.Equal(t, map[int32]int64{0: 10, 1: 7}, ru.Positions())
			})
		})
	}
}

// TestReadCommittedStopsAtLastStableOffset: while a transaction is open, a ReadCommitted reader
// returns the records below its first offset and then waits, its lag the last stable offset
// minus its position; the commit lets it go on. Start Latest begins at the last stable offset
// under ReadCommitted, at the high watermark under ReadUncommitted.
func TestReadCommittedStopsAtLastStableOffset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		w := newIsoWriter(t, s, "out")
		tp := stMust(s.Topic("out"))
		w.batch(0, -1, "x0")
		require.Equal(t, int64(1), w.batch(0, 7, "t1", "t2")) // open from 1
		w.batch(0, -1, "x3")
		p := w.part(0)
		require.Equal(t, int64(1), p.LastStableOffset())
		require.Equal(t, int64(4), p.HighWatermark())

		rc, err := tp.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer rc.Close()
		ru, err := tp.NewReader(ReaderConfig{Start: Earliest})
		require.NoError(t, err)
		defer ru.Close()
		require.Equal(t, map[int32]int64{0: 1}, rc.Lag())
		require.Equal(t, map[int32]int64{0: 4}, ru.Lag())

		require.Equal(t, []isoSeen{{0, 0, "x0"}}, readAvailable(t, rc))
		require.Equal(t, int64(1), stMust(rc.Position(0)))
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())
		require.Equal(t, []isoSeen{{0, 0, "x0"}, {0, 1, "t1"}, {0, 2, "t2"}, {0, 3, "x3"}}, readAvailable(t, ru))

		latestRC, err := tp.NewReader(ReaderConfig{Start: Latest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer latestRC.Close()
		latestRU, err := tp.NewReader(ReaderConfig{Start: Latest})
		require.NoError(t, err)
		defer latestRU.Close()
		require.Equal(t, int64(1), stMust(latestRC.Position(0)))
		require.Equal(t, int64(4), stMust(latestRU.Position(0)))

		// A Next waiting at the last stable offset returns once the commit lands.
		type result struct {
			rec *Record
			err error
		}
		got := make(chan result, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go func() {
			rec, err := rc.Next(ctx)
			got <- result{rec, err}
		}()
		require.Equal(t, int64(4), w.marker(0, 7, true))
		res := <-got
		require.NoError(t, res.err)
		require.Equal(t, isoSeen{0, 1, "t1"}, isoSeen{res.rec.Partition, res.rec.Offset, string(res.rec.Value)})
		require.Equal(t, []isoSeen{{0, 2, "t2"}, {0, 3, "x3"}}, readAvailable(t, rc))
		require.Equal(t, int64(5), stMust(rc.Position(0)))
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())
		require.Equal(t, []isoSeen{{0, 1, "t1"}, {0, 2, "t2"}, {0, 3, "x3"}}, readAvailable(t, latestRC))
		require.Empty(t, readAvailable(t, latestRU))
	})
}

// TestReadCommittedPassesAbortedBatchAtFetchEnd: an aborted batch that is the last of what a
// fetch may return (the last stable offset, at another producer's open transaction, cuts the
// fetch right after it) still moves the position past it; the reader then waits at the last
// stable offset with no lag, and reads on after the commit.
func TestReadCommittedPassesAbortedBatchAtFetchEnd(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		w := newIsoWriter(t, s, "out")
		tp := stMust(s.Topic("out"))
		require.Equal(t, int64(0), w.batch(0, 1, "a1", "a2", "a3")) // 0-2, aborted
		require.Equal(t, int64(3), w.batch(0, 2, "b1"))             // 3, open
		require.Equal(t, int64(4), w.marker(0, 1, false))
		p := w.part(0)
		require.Equal(t, int64(3), p.LastStableOffset())

		rc, err := tp.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer rc.Close()
		require.Empty(t, readAvailable(t, rc))
		require.Equal(t, int64(3), stMust(rc.Position(0)), "past the aborted batch")
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())

		require.Equal(t, int64(5), w.marker(0, 2, true))
		require.Equal(t, int64(6), p.LastStableOffset())
		require.Equal(t, map[int32]int64{0: 3}, rc.Lag())
		require.Equal(t, []isoSeen{{0, 3, "b1"}}, readAvailable(t, rc))
		require.Equal(t, int64(6), stMust(rc.Position(0)), "past both markers")
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())
	})
}
