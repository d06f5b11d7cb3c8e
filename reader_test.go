package commitlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// TestReaderResetPolicy: a position out of range, below the log start offset or above the log end
// offset, gives ErrOffsetOutOfRange under ResetNone and moves to the log start or end under the
// other policies; reading at exactly the log end offset waits.
func TestReaderResetPolicy(t *testing.T) {
	const start, n = 10, 5 // the log holds [10, 15)
	tests := []struct {
		name    string
		reset   ResetPolicy
		seek    int64
		wantErr bool  // Next returns ErrOffsetOutOfRange
		want    int64 // else the first offset Next returns (-1: none until an append, then 15)
	}{
		{"below-start/none", ResetNone, 3, true, 0},
		{"below-start/earliest", ResetEarliest, 3, false, 10},
		{"below-start/latest", ResetLatest, 3, false, -1},
		{"negative/none", ResetNone, -1, true, 0},
		{"negative/earliest", ResetEarliest, -7, false, 10},
		{"above-end/none", ResetNone, 20, true, 0},
		{"above-end/earliest", ResetEarliest, 20, false, 10},
		{"above-end/latest", ResetLatest, 16, false, -1},
		{"at-end/none", ResetNone, 15, false, -1},
		{"at-end/earliest", ResetEarliest, 15, false, -1},
		{"in-range/none", ResetNone, 12, false, 12},
		{"at-start/none", ResetNone, 10, false, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				// A partition folder whose log starts at 10 (retention deleted what came before).
				pdir := env.path(partitionDirName("events", 0))
				require.NoError(t, env.FS().MkdirAll(pdir, 0o755))
				require.NoError(t, checkpoint.Write(env.FS(), filepath.Join(pdir, stateFileName),
					logState{logStartOffset: start, recoveryPoint: start, clean: true}.encode()))
				s := env.mustOpen(t, WithSync(SyncNever))
				tp, err := s.Topic("events")
				require.NoError(t, err)
				p0, err := tp.Partition(0)
				require.NoError(t, err)
				require.Equal(t, int64(start), p0.LogStartOffset())
				vals := make([]string, n)
				for i := range vals {
					vals[i] = "e" + strconv.Itoa(start+i)
				}
				require.NoError(t, tp.Append(context.Background(), stRecs(vals...)...))
				require.Equal(t, int64(start+n), p0.HighWatermark())

				for _, how := range []string{"seek", "start-offset"} {
					var r *Reader
					if how == "seek" {
						r = stReader(t, tp, ReaderConfig{Start: Earliest, Reset: tc.reset})
						require.NoError(t, r.Seek(0, tc.seek))
					} else {
						r = stReader(t, tp, ReaderConfig{Start: AtOffset, StartOffset: tc.seek, Reset: tc.reset})
					}
					require.Equal(t, tc.seek, stMust(r.Position(0)), how)
					// Below the log start offset only what is left counts (see Lag).
					require.Equal(t, map[int32]int64{0: max(start+n-max(tc.seek, start), 0)}, r.Lag(), how)
					switch {
					case tc.wantErr:
						for range 2 { // the reader stays where it is
							rec, err := r.Next(context.Background())
							require.ErrorIs(t, err, ErrOffsetOutOfRange, how)
							require.Nil(t, rec)
							require.Equal(t, tc.seek, stMust(r.Position(0)), how)
						}
						require.NoError(t, r.Seek(0, 13))
						require.Equal(t, []stSeen{{0, 13, "e13"}, {0, 14, "e14"}}, stSeenOf(stNextN(t, r, 2)), how)
					case tc.want >= 0:
						var want []stSeen
						for off := tc.want; off < start+n; off++ {
							want = append(want, stSeen{0, off, "e" + strconv.FormatInt(off, 10)})
						}
						require.Equal(t, want, stSeenOf(stNextN(t, r, len(want))), how)
						stRequireIdle(t, r)
					default:
						stRequireIdle(t, r)
						require.Equal(t, int64(start+n), stMust(r.Position(0)), how)
						require.Equal(t, map[int32]int64{0: 0}, r.Lag(), how)
					}
					require.NoError(t, r.Close())
				}
				// Finally one more record: every reader left waiting at the end gets exactly it.
				if !tc.wantErr && tc.want < 0 {
					r := stReader(t, tp, ReaderConfig{Start: AtOffset, StartOffset: tc.seek, Reset: tc.reset})
					stRequireIdle(t, r)
					require.NoError(t, tp.Append(context.Background(), stRecs("e15")...))
					require.Equal(t, []stSeen{{0, 15, "e15"}}, stSeenOf(stNextN(t, r, 1)))
				}
			})
		})
	}
}

// stControlBatch builds a transaction marker batch (a commit marker of producer pid) at offset
// base, as a transaction coordinator writes it.
func stControlBatch(t *testing.T, base, pid int64) []byte {
	t.Helper()
	var b recordbatch.Builder
	b.Reset(recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 0,
		Attributes: recordbatch.AttrControl | recordbatch.AttrTransactional,
		ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1})
	// Key: version 0, type 1 (COMMIT); value: version 0, coordinator epoch 3.
	b.Add(stEpoch.UnixMilli(), []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 3}, nil)
	out, err := b.Finish()
	require.NoError(t, err)
	return slices.Clone(out)
}

// stDataBatch builds a data batch at offset base, transactional when pid >= 0.
func stDataBatch(t *testing.T, base, pid int64, values ...string) []byte {
	t.Helper()
	h := recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 0, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if pid >= 0 {
		h.Attributes, h.ProducerID, h.ProducerEpoch, h.BaseSequence = recordbatch.AttrTransactional, pid, 0, 0
	}
	var b recordbatch.Builder
	b.Reset(h)
	for _, v := range values {
		b.Add(stEpoch.UnixMilli(), nil, []byte(v), nil)
	}
	out, err := b.Finish()
	require.NoError(t, err)
	return slices.Clone(out)
}

// TestReaderSkipsControlBatches: transaction markers are never returned, their offsets are passed
// over, and Lag is the exact distance to the high watermark throughout.
func TestReaderSkipsControlBatches(t *testing.T) {
	for _, maxBytes := range []int{0, 1} { // default fetches, and one batch per fetch
		t.Run(fmt.Sprintf("max-bytes-%d", maxBytes), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "tx", TopicConfig{})
				p0, err := tp.Partition(0)
				require.NoError(t, err)

				require.NoError(t, p0.Append(ctx, stRecs("a", "b", "c")...)) // 0, 1, 2
				follow := func(batch []byte, wantLast int64) {
					last, err := p0.Replica().AppendAsFollower(ctx, batch)
					require.NoError(t, err)
					require.Equal(t, wantLast, last)
				}
				follow(stControlBatch(t, 3, 7), 3)              // marker at 3
				follow(stDataBatch(t, 4, 8, "tx-d", "tx-e"), 5) // a transaction at 4, 5
				follow(stControlBatch(t, 6, 8), 6)              // its commit at 6
				require.NoError(t, p0.Append(ctx, stRecs("h", "i")...))
				require.Equal(t, int64(9), p0.HighWatermark())
				follow(stControlBatch(t, 9, 9), 9) // a marker last
				require.Equal(t, int64(10), p0.HighWatermark())

				r := stReader(t, tp, ReaderConfig{Start: Earliest, MaxBytes: maxBytes})
				require.Equal(t, map[int32]int64{0: 10}, r.Lag())
				type step struct {
					seen stSeen
					lag  int64
				}
				var got []step
				for range 7 {
					rec := stNext(t, r)
					got = append(got, step{stSeenOf([]*Record{rec})[0], r.Lag()[0]})
				}
				require.Equal(t, []step{
					{stSeen{0, 0, "a"}, 9}, {stSeen{0, 1, "b"}, 8}, {stSeen{0, 2, "c"}, 7},
					{stSeen{0, 4, "tx-d"}, 5}, {stSeen{0, 5, "tx-e"}, 4},
					{stSeen{0, 7, "h"}, 2}, {stSeen{0, 8, "i"}, 1},
				}, got)
				// The trailing marker is passed over by the next read, which then waits.
				stRequireIdle(t, r)
				require.Equal(t, int64(10), stMust(r.Position(0)))
				require.Equal(t, map[int32]int64{0: 0}, r.Lag())

				// A seek onto a marker lands on the next record.
				require.NoError(t, r.Seek(0, 6))
				require.Equal(t, map[int32]int64{0: 4}, r.Lag())
				require.Equal(t, []stSeen{{0, 7, "h"}}, stSeenOf(stNextN(t, r, 1)))
				require.NoError(t, r.Seek(0, 3))
				require.Equal(t, []stSeen{{0, 4, "tx-d"}}, stSeenOf(stNextN(t, r, 1)))

				// Partition.ReadRecords skips them too.
				recs, err := p0.ReadRecords(3, 1<<20)
				require.NoError(t, err)
				require.Equal(t, []stSeen{{0, 4, "tx-d"}, {0, 5, "tx-e"}, {0, 7, "h"}, {0, 8, "i"}}, stSeenOf(recs))
			})
		})
	}
}

// TestReaderSeekWakesBlockedNext: a Next blocked at the end of the log returns the record a Seek
// from another goroutine moved the reader back to, without waiting for an append.
func TestReaderSeekWakesBlockedNext(t *testing.T) {
	tests := []struct {
		name string
		seek func(r *Reader) error
		want stSeen
	}{
		{"seek", func(r *Reader) error { return r.Seek(0, 1) }, stSeen{0, 1, "b"}},
		{"seek-to-earliest", func(r *Reader) error { return r.SeekToEarliest() }, stSeen{0, 0, "a"}},
		{"seek-to-time", func(r *Reader) error { return r.SeekToTime(stEpoch.Add(2 * time.Second)) }, stSeen{0, 2, "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "orders", TopicConfig{})
				require.NoError(t, tp.Append(context.Background(), stRecs("a", "b", "c")...))
				r := stReader(t, tp, ReaderConfig{Start: Latest})
				type result struct {
					rec *Record
					err error
				}
				done := make(chan result, 1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				go func() {
					rec, err := r.Next(ctx)
					done <- result{rec, err}
				}()
				time.Sleep(20 * time.Millisecond)
				require.NoError(t, tc.seek(r))
				select {
				case res := <-done:
					require.NoError(t, res.err)
					require.Equal(t, []stSeen{tc.want}, stSeenOf([]*Record{res.rec}))
				case <-time.After(30 * time.Second):
					t.Fatal("Next stayed blocked after a Seek moved the reader back") // a hang, not a slow machine
				}
			})
		})
	}
}

// quake is one feature of the USGS earthquake sample.
type quake struct {
	ID         string `json:"id"`
	Properties struct {
		Time  int64  `json:"time"`
		Net   string `json:"net"`
		Place string `json:"place"`
	} `json:"properties"`
}

// stLoadQuakes reads the earthquake sample from the shared data folder, skipping the test when
// it is absent.
func stLoadQuakes(t *testing.T) []quake {
	t.Helper()
	path := filepath.Join("..", "shared", "data", "vega-datasets", "usgs-earthquakes-2018-01-31_02-07.geojson")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("real data absent: %s not found (the project's shared data folder beside the repository)", path)
	}
	require.NoError(t, err)
	var doc struct {
		Features []quake `json:"features"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Features, 1707)
	return doc.Features
}

// TestReaderSeekToTimeEarthquakes: SeekToTime over real timestamps, in the file's order (running
// backwards), ascending, and ascending with late arrivals, in a topic of small segments and a
// small index interval. Each partition's position is the first offset whose timestamp is >= t, and
// the first record read from it has such a timestamp.
func TestReaderSeekToTimeEarthquakes(t *testing.T) {
	all := stLoadQuakes(t)
	fileOrder := all
	// The sample's timestamps run backwards, strictly.
	for i := 1; i < len(fileOrder); i++ {
		require.Less(t, fileOrder[i].Properties.Time, fileOrder[i-1].Properties.Time)
	}
	ascending := slices.Clone(all)
	slices.Reverse(ascending)
	// Late arrivals: ascending, but every window of 9 events arrives reversed and every 50th
	// event a further 40 places late.
	late := slices.Clone(ascending)
	for i := 0; i+9 <= len(late); i += 9 {
		slices.Reverse(late[i : i+9])
	}
	for i := 0; i+41 <= len(late); i += 50 {
		q := late[i]
		copy(late[i:i+40], late[i+1:i+41])
		late[i+40] = q
	}

	orders := []struct {
		name   string
		quakes []quake
	}{
		{"file-order-backwards", fileOrder},
		{"ascending", ascending},
		{"late-arrivals", late},
	}
	minTS, maxTS := ascending[0].Properties.Time, ascending[len(ascending)-1].Properties.Time
	targets := []int64{minTS - 1, minTS, minTS + 1, maxTS - 1, maxTS, maxTS + 1}
	for _, i := range []int{1, 100, 427, 853, 854, 1200, 1650} {
		ts := ascending[i].Properties.Time
		targets = append(targets, ts-1, ts, ts+1)
	}

	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "quakes", TopicConfig{Partitions: 3, LogConfig: LogConfig{
					SegmentBytes: 1 << 10, IndexIntervalBytes: 128, SegmentIndexBytes: 4 << 10,
				}})
				// Appended in the order given, 7 events a call (so batches mix times too).
				model := map[int32][]*Record{}
				for i := 0; i < len(order.quakes); i += 7 {
					var recs []*Record
					for _, q := range order.quakes[i:min(i+7, len(order.quakes))] {
						recs = append(recs, &Record{Key: []byte(q.Properties.Net),
							Value:     []byte(q.ID + " " + q.Properties.Place),
							Timestamp: time.UnixMilli(q.Properties.Time)})
					}
					require.NoError(t, tp.Append(ctx, recs...))
					for _, r := range recs {
						require.Equal(t, int64(len(model[r.Partition])), r.Offset)
						model[r.Partition] = append(model[r.Partition], r)
					}
				}
				total := 0
				for p := range tp.PartitionCount() {
					part := stMust(tp.Partition(p))
					require.GreaterOrEqual(t, part.SegmentCount(), 3, "partition %d has too few segments to test", p)
					total += len(model[p])
					// What was stored is what was appended.
					got := stPartitionRecords(t, tp, p)
					require.Len(t, got, len(model[p]))
					for i, r := range got {
						require.Equal(t, model[p][i].Timestamp.UnixMilli(), r.Timestamp.UnixMilli())
						require.Equal(t, string(model[p][i].Value), string(r.Value))
					}
				}
				require.Equal(t, len(all), total)

				// The brute force answer: first offset in p whose timestamp is >= ts, or the end.
				firstAtOrAfter := func(p int32, ts int64) int64 {
					for i, r := range model[p] {
						if r.Timestamp.UnixMilli() >= ts {
							return int64(i)
						}
					}
					return int64(len(model[p]))
				}
				r := stReader(t, tp, ReaderConfig{Start: Earliest})
				for _, ts := range targets {
					at := time.UnixMilli(ts)
					require.NoError(t, r.SeekToTime(at))
					want := map[int32]int64{}
					for p := range tp.PartitionCount() {
						want[p] = firstAtOrAfter(p, ts)
						got, err := stMust(tp.Partition(p)).OffsetForTime(at)
						if want[p] == int64(len(model[p])) {
							// None: the reader goes to the end (the high watermark).
							require.ErrorIs(t, err, ErrNoOffsetForTime, "t=%d partition %d", ts, p)
							require.Equal(t, int64(-1), got, "t=%d partition %d", ts, p)
						} else {
							require.NoError(t, err, "t=%d partition %d", ts, p)
							require.Equal(t, want[p], got, "t=%d partition %d", ts, p)
						}
					}
					require.Equal(t, want, r.Positions(), "t=%d", ts)
					started := stReader(t, tp, ReaderConfig{Start: AtTime, StartTime: at})
					require.Equal(t, want, started.Positions(), "t=%d", ts)
					require.NoError(t, started.Close())

					// The first record read from each partition that has one is at the position,
					// has a timestamp >= t, and no earlier offset of the partition has one.
					pending := map[int32]bool{}
					for p, off := range want {
						if off < int64(len(model[p])) {
							pending[p] = true
						}
					}
					for len(pending) > 0 {
						rec := stNext(t, r)
						if !pending[rec.Partition] {
							continue
						}
						delete(pending, rec.Partition)
						require.Equal(t, want[rec.Partition], rec.Offset, "t=%d partition %d", ts, rec.Partition)
						require.GreaterOrEqual(t, rec.Timestamp.UnixMilli(), ts)
						require.Equal(t, string(model[rec.Partition][rec.Offset].Value), string(rec.Value))
						for _, earlier := range model[rec.Partition][:rec.Offset] {
							require.Less(t, earlier.Timestamp.UnixMilli(), ts)
						}
					}
				}
			})
		})
	}
}

// TestReaderConcurrentWriterAndSeekers: one writer appends 100-record batches while 8 readers
// read (half with Next, half with Scan), seek and read partitions directly (ReadRecords of many
// records and of one). Every reader sees consecutive offsets per partition
// and exactly the values written there, never a record past the end, and never
// ErrOffsetOutOfRange.
func TestReaderConcurrentWriterAndSeekers(t *testing.T) {
	forEachStore(t, testReaderConcurrentWriterAndSeekers)
}

func testReaderConcurrentWriterAndSeekers(t *testing.T, env *storeEnv) {
	const (
		partitions = 4
		batches    = 120
		perBatch   = 100
		readers    = 8
	)
	s := env.mustOpen(t, WithSync(SyncNever))
	tp := stCreate(t, s, "orders", TopicConfig{Partitions: partitions, LogConfig: LogConfig{
		SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, SegmentIndexBytes: 16 << 10,
	}})
	tp.SetPartitioner(ManualPartitioner())
	value := func(p int32, off int64) string { return fmt.Sprintf("p%d/o%d", p, off) }
	var writerDone atomic.Bool
	var writeErr error

	var wg sync.WaitGroup
	wg.Go(func() {
		defer writerDone.Store(true)
		next := make([]int64, partitions)
		seq := int64(0)
		for b := range batches {
			recs := make([]*Record, perBatch)
			for i := range recs {
				p := int32((b + i) % partitions)
				// The value names the offset the record will get: one writer, known offsets.
				recs[i] = &Record{Partition: p, Value: []byte(value(p, next[p])),
					Timestamp: stEpoch.Add(time.Duration(seq) * time.Millisecond)}
				next[p]++
				seq++
			}
			if err := tp.Append(context.Background(), recs...); err != nil {
				writeErr = err
				return
			}
		}
	})

	errs := make(chan error, readers)
	for id := range readers {
		wg.Go(func() {
			errs <- concurrentReader(tp, id, value, &writerDone)
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, writeErr)
	for err := range errs {
		require.NoError(t, err)
	}
	for p := range int32(partitions) {
		require.Equal(t, int64(batches*perBatch/partitions), stMust(tp.Partition(p)).HighWatermark())
	}
}

// concurrentReader is one reader of TestReaderConcurrentWriterAndSeekers; it returns the first
// broken promise it sees.
func concurrentReader(tp *Topic, id int, value func(int32, int64) string, writerDone *atomic.Bool) error {
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	r, err := tp.NewReader(ReaderConfig{Start: Earliest, MaxBytes: 4 << 10 << (id % 3)})
	if err != nil {
		return err
	}
	defer r.Close()
	n := tp.PartitionCount()
	expect := make([]int64, n) // next offset the reader must return per partition
	checkRecord := func(rec *Record) error {
		p := rec.Partition
		if rec.Offset != expect[p] {
			return fmt.Errorf("reader %d partition %d: offset %d, want %d", id, p, rec.Offset, expect[p])
		}
		if string(rec.Value) != value(p, rec.Offset) {
			return fmt.Errorf("reader %d partition %d offset %d: value %q", id, p, rec.Offset, rec.Value)
		}
		if hw := stMust(tp.Partition(p)).HighWatermark(); rec.Offset >= hw {
			return fmt.Errorf("reader %d partition %d: offset %d at or past the high watermark %d", id, p, rec.Offset, hw)
		}
		expect[p]++
		return nil
	}
	reads := 0
	for {
		switch op := rng.IntN(100); {
		case op < 3: // seek one partition anywhere in [start, end]
			p := int32(rng.IntN(int(n)))
			hw := stMust(tp.Partition(p)).HighWatermark()
			off := rng.Int64N(hw + 1)
			if err := r.Seek(p, off); err != nil {
				return err
			}
			expect[p] = off
		case op < 5: // seek to a time
			if err := r.SeekToTime(stEpoch.Add(time.Duration(rng.IntN(12_000)) * time.Millisecond)); err != nil {
				return err
			}
			for p, off := range r.Positions() {
				expect[p] = off
			}
		case op < 6: // seek to the end: nothing, or a record exactly there
			if err := r.SeekToLatest(); err != nil {
				return err
			}
			for p, off := range r.Positions() {
				expect[p] = off
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			rec, err := r.Next(ctx)
			cancel()
			if err == nil {
				if err := checkRecord(rec); err != nil {
					return err
				}
			} else if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("reader %d: Next at the end: %w", id, err)
			}
		case op < 10: // read a partition directly, at the end or inside
			p := stMust(tp.Partition(int32(rng.IntN(int(n)))))
			end := p.HighWatermark()
			off := end
			if op < 8 {
				off = rng.Int64N(end + 1)
			}
			maxBytes := 8 << 10
			if op == 7 {
				maxBytes = 1 // a single record, by ReadRecord's path
			}
			recs, err := p.ReadRecords(off, maxBytes)
			if err != nil {
				return fmt.Errorf("reader %d partition %d: ReadRecords(%d), end %d: %w", id, p.ID(), off, end, err)
			}
			after := p.HighWatermark()
			for i, rec := range recs {
				if rec.Offset != off+int64(i) || string(rec.Value) != value(p.ID(), rec.Offset) || rec.Offset >= after {
					return fmt.Errorf("reader %d partition %d: ReadRecords(%d)[%d] = offset %d value %q, end %d",
						id, p.ID(), off, i, rec.Offset, rec.Value, after)
				}
			}
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			var rec *Record
			var err error
			if id%2 == 1 {
				// Odd readers read with Scan, one record a loop: its fetches reuse their
				// buffers across the seeks; the record is checked before the step ends.
				for rec, err = range r.Scan(ctx) {
					if err == nil {
						err = checkRecord(rec)
						reads++
					}
					break
				}
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					if writerDone.Load() && reads > 0 && !slices.ContainsFunc(slices.Collect(maps.Values(r.Lag())), func(l int64) bool { return l != 0 }) {
						return nil
					}
					continue
				}
				if err != nil {
					return fmt.Errorf("reader %d: %w", id, err)
				}
				continue
			}
			rec, err = r.Next(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				if writerDone.Load() {
					lag := r.Lag()
					caughtUp := true
					for _, l := range lag {
						caughtUp = caughtUp && l == 0
					}
					if caughtUp && reads > 0 {
						return nil
					}
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("reader %d: %w", id, err)
			}
			if err := checkRecord(rec); err != nil {
				return err
			}
			reads++
		}
	}
}

// TestReaderTailing: 4 readers tail a topic while single records are appended with short random
// pauses, two with Next and two with Scan; every record reaches every reader, in order, and no
// reader ever waits 10 s.
func TestReaderTailing(t *testing.T) { forEachStore(t, testReaderTailing) }

func testReaderTailing(t *testing.T, env *storeEnv) {
	total := 100_000
	if testing.Short() {
		total = 10_000
	}
	const tailers, partitions = 4, 4
	s := env.mustOpen(t, WithSync(SyncNever))
	tp := stCreate(t, s, "clicks", TopicConfig{Partitions: partitions})
	rs := make([]*Reader, tailers)
	for i := range rs {
		rs[i] = stReader(t, tp, ReaderConfig{Start: Latest})
	}
	errs := make(chan error, tailers+1)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			if i%2 == 1 {
				errs <- tailScan(r, i, total) // half the tailers read with Scan
				return
			}
			errs <- tail(r, i, total)
		})
	}
	start := time.Now()
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range total {
			rec := &Record{Key: []byte("user-" + strconv.Itoa(i%37)), Value: []byte(strconv.Itoa(i))}
			if err := tp.Append(context.Background(), rec); err != nil {
				errs <- fmt.Errorf("append %d: %w", i, err)
				return
			}
			switch rng.IntN(1000) {
			case 0:
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
				runtime.Gosched()
			}
		}
	})
	wg.Wait()
	requireNoErrs(t, errs)
	t.Logf("%d records tailed by %d readers in %v", total, tailers, time.Since(start))
	var sum int64
	for p := range int32(partitions) {
		sum += stMust(tp.Partition(p)).HighWatermark()
	}
	require.Equal(t, int64(total), sum)
}

// tail reads total records from r, checking that each partition's offsets run on from 0 and its
// values (the append sequence) only grow, and that every value comes once.
func tail(r *Reader, id, total int) error {
	return tailWith(id, total, func() (*Record, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return r.Next(ctx)
	})
}

// tailScan is tail reading with Reader.Scan, each record checked before the next step reuses
// its bytes; the scan fails when no record comes for 10 s.
func tailScan(r *Reader, id, total int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(10*time.Second, cancel)
	defer timer.Stop()
	next, stop := iter.Pull2(r.Scan(ctx))
	defer stop()
	return tailWith(id, total, func() (*Record, error) {
		rec, err, ok := next()
		timer.Reset(10 * time.Second)
		if !ok {
			return nil, errors.New("scan ended")
		}
		return rec, err
	})
}

// tailWith is tail taking each record from next.
func tailWith(id, total int, next func() (*Record, error)) error {
	nextOff := map[int32]int64{}
	lastSeq := map[int32]int{}
	seen := make([]bool, total)
	for i := range total {
		rec, err := next()
		if err != nil {
			return fmt.Errorf("tailer %d after %d records: %w", id, i, err)
		}
		seq, err := strconv.Atoi(string(rec.Value))
		if err != nil || seq < 0 || seq >= total || seen[seq] {
			return fmt.Errorf("tailer %d: bad or repeated value %q", id, rec.Value)
		}
		seen[seq] = true
		if rec.Offset != nextOff[rec.Partition] {
			return fmt.Errorf("tailer %d partition %d: offset %d, want %d", id, rec.Partition, rec.Offset, nextOff[rec.Partition])
		}
		if last, ok := lastSeq[rec.Partition]; ok && seq <= last {
			return fmt.Errorf("tailer %d partition %d: sequence %d after %d", id, rec.Partition, seq, last)
		}
		nextOff[rec.Partition]++
		lastSeq[rec.Partition] = seq
	}
	return nil
}

// TestScenarioCheckoutFraudLoaderAudit is the seed scenario. A checkout service appends orders,
// keyed by cart id, to a 3-partition topic over three hours. A fraud scorer tails the topic live;
// a loader wakes at the end of every hour and loads what arrived since its last commit (a named
// reader closed and reopened each time); an auditor starts late from the beginning; finally the
// fraud scorer rewinds to the start of hour 2 and replays. Each reader sees exactly its own
// offsets and values, and none disturbs another.
func TestScenarioCheckoutFraudLoaderAudit(t *testing.T) {
	forEachStore(t, testScenarioCheckoutFraudLoaderAudit)
}

func testScenarioCheckoutFraudLoaderAudit(t *testing.T, env *storeEnv) {
	type order struct {
		n         int
		cart      string
		hour, min int
		// Where the default partitioner puts the cart (xxhash64 mod 3) and the offset it gets.
		partition int32
		offset    int64
	}
	orders := []order{
		{1, "cart-2", 1, 5, 0, 0},
		{2, "cart-1", 1, 12, 1, 0},
		{3, "cart-6", 1, 30, 2, 0},
		{4, "cart-2", 1, 47, 0, 1},
		{5, "cart-3", 2, 3, 1, 1},
		{6, "cart-4", 2, 15, 0, 2},
		{7, "cart-10", 2, 28, 2, 1},
		{8, "cart-1", 2, 59, 1, 2},
		{9, "cart-6", 3, 10, 2, 2},
		{10, "cart-2", 3, 41, 0, 3},
	}
	hourStart := func(h int) time.Time { return stEpoch.Add(time.Duration(h-1) * time.Hour) }
	value := func(o order) string { return fmt.Sprintf(`{"order":%d,"cart":%q,"total":%d}`, o.n, o.cart, 10*o.n+3) }
	seen := func(ns ...int) []stSeen {
		out := make([]stSeen, len(ns))
		for i, n := range ns {
			o := orders[n-1]
			out[i] = stSeen{o.partition, o.offset, value(o)}
		}
		return out
	}
	ctx := context.Background()
	s := env.mustOpen(t)
	tp := stCreate(t, s, "orders", TopicConfig{Partitions: 3})

	// The fraud scorer: a reader at Latest from before the first order, Next blocking in its own
	// goroutine, handing each record over as it comes.
	fraud := stReader(t, tp, ReaderConfig{Name: "fraud", Start: Latest})
	type delivery struct {
		rec *Record
		err error
	}
	scored := make(chan delivery)
	fraudCtx, stopFraud := context.WithCancel(ctx)
	fraudDone := make(chan struct{})
	go func() {
		defer close(fraudDone)
		for rec, err := range fraud.Records(fraudCtx) {
			select {
			case scored <- delivery{rec, err}:
			case <-fraudCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var fraudSaw []*Record

	// The loader: wakes, reads everything since its last commit, commits, closes.
	loaderRun := func() []*Record {
		t.Helper()
		loader := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		var got []*Record
		for {
			lag := loader.Lag()
			if lag[0]+lag[1]+lag[2] == 0 {
				break
			}
			got = append(got, stNext(t, loader))
		}
		stRequireIdle(t, loader)
		require.NoError(t, loader.Commit(ctx))
		require.NoError(t, loader.Close())
		return got
	}

	checkout := func(o order) {
		t.Helper()
		rec := &Record{Key: []byte(o.cart), Value: []byte(value(o)),
			Timestamp: hourStart(o.hour).Add(time.Duration(o.min) * time.Minute)}
		require.NoError(t, tp.Append(ctx, rec))
		require.Equal(t, stSeen{o.partition, o.offset, value(o)}, stSeenOf([]*Record{rec})[0], "order %d", o.n)
		// The fraud scorer has it at once.
		select {
		case d := <-scored:
			require.NoError(t, d.err)
			require.Equal(t, stSeen{o.partition, o.offset, value(o)}, stSeenOf([]*Record{d.rec})[0], "fraud scorer, order %d", o.n)
			require.Equal(t, rec.Timestamp.UnixMilli(), d.rec.Timestamp.UnixMilli())
			require.Equal(t, o.cart, string(d.rec.Key))
			require.Equal(t, "orders", d.rec.Topic)
			fraudSaw = append(fraudSaw, d.rec)
		case <-time.After(5 * time.Second):
			t.Fatalf("the fraud scorer did not get order %d", o.n)
		}
	}

	// Hour 1.
	for _, o := range orders[:4] {
		checkout(o)
	}
	require.Equal(t, seen(1, 2, 3, 4), stSeenOf(loaderRun()))

	// Hour 2.
	for _, o := range orders[4:8] {
		checkout(o)
	}
	require.Equal(t, seen(6, 5, 7, 8), stSeenOf(loaderRun()))
	committed, err := s.CommittedPositions("loader")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 3, 1: 3, 2: 2}}, committed)

	// The auditor starts late, from the beginning: everything so far, a partition at a time in
	// turn.
	audit := stReader(t, tp, ReaderConfig{Name: "audit", Start: Earliest})
	require.Equal(t, map[int32]int64{0: 3, 1: 3, 2: 2}, audit.Lag())
	require.Equal(t, seen(1, 2, 3, 4, 5, 7, 6, 8), stSeenOf(stNextN(t, audit, 8)))
	stRequireIdle(t, audit)

	// Hour 3.
	for _, o := range orders[8:] {
		checkout(o)
	}
	require.Equal(t, seen(10, 9), stSeenOf(loaderRun()))
	require.Equal(t, seen(9, 10), stSeenOf(stNextN(t, audit, 2)))
	stRequireIdle(t, audit)

	// The fraud scorer saw every order once, live, in append order.
	require.Equal(t, seen(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), stSeenOf(fraudSaw))
	stopFraud()
	<-fraudDone

	// The fraud scorer rewinds to the start of hour 2 and replays: per partition, exactly the
	// orders from then on.
	require.NoError(t, fraud.SeekToTime(hourStart(2)))
	require.Equal(t, map[int32]int64{0: 2, 1: 1, 2: 1}, fraud.Positions())
	require.Equal(t, map[int32]int64{0: 2, 1: 2, 2: 2}, fraud.Lag())
	replay := stNextN(t, fraud, 6)
	byPartition := map[int32][]stSeen{}
	for _, sn := range stSeenOf(replay) {
		byPartition[sn.Partition] = append(byPartition[sn.Partition], sn)
	}
	require.Equal(t, map[int32][]stSeen{0: seen(6, 10), 1: seen(5, 8), 2: seen(7, 9)}, byPartition)
	for _, rec := range replay {
		require.False(t, rec.Timestamp.Before(hourStart(2)))
	}
	stRequireIdle(t, fraud)

	// Nobody disturbed anybody: the auditor is at the end, the loader's commit stands, and the
	// loader's next wake finds nothing new.
	require.Equal(t, map[int32]int64{0: 4, 1: 3, 2: 3}, audit.Positions())
	require.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, audit.Lag())
	committed, err = s.CommittedPositions("loader")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 4, 1: 3, 2: 3}}, committed)
	require.Empty(t, loaderRun())
	readers, err := s.Readers()
	require.NoError(t, err)
	require.Equal(t, []string{"loader"}, readers, "only the loader committed")

	// An order after the replay reaches the fraud scorer and the auditor alike.
	late := order{11, "cart-3", 4, 2, 1, 3}
	orders = append(orders, late)
	rec := &Record{Key: []byte(late.cart), Value: []byte(value(late)), Timestamp: hourStart(4).Add(2 * time.Minute)}
	require.NoError(t, tp.Append(ctx, rec))
	require.Equal(t, seen(11), stSeenOf(stNextN(t, fraud, 1)))
	require.Equal(t, seen(11), stSeenOf(stNextN(t, audit, 1)))
	require.Equal(t, seen(11), stSeenOf(loaderRun()))
}

// TestReaderLagAfterRetention: once retention has deleted the segments below a reader's
// position, Lag counts what is left to read, high watermark − log start offset, never the
// records deleted; Positions still says where the reader stands. Reading on (ResetEarliest
// moves to the log start offset) brings it down one record at a time.
func TestReaderLagAfterRetention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset ResetPolicy
	}{{"reset-none", ResetNone}, {"reset-earliest", ResetEarliest}} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1))
				// One 70-byte batch per segment; retention keeps the newest 280 bytes, 4 segments.
				tp := stCreate(t, s, "events", TopicConfig{LogConfig: LogConfig{SegmentBytes: 100, RetentionBytes: 280, RetentionDuration: -1}})
				for i := range 10 {
					require.NoError(t, tp.Append(ctx, stRecs("v"+strconv.Itoa(i))...))
				}
				p := stMust(tp.Partition(0))
				r := stReader(t, tp, ReaderConfig{Start: Earliest, Reset: tc.reset})
				stNextN(t, r, 2)
				require.Equal(t, map[int32]int64{0: 8}, r.Lag())

				n, err := s.ApplyRetention()
				require.NoError(t, err)
				require.Equal(t, 6, n)
				require.Equal(t, int64(6), p.LogStartOffset())
				require.Equal(t, int64(10), p.HighWatermark())
				require.Equal(t, map[int32]int64{0: 2}, r.Positions())
				require.Equal(t, map[int32]int64{0: 4}, r.Lag())

				if tc.reset == ResetNone {
					_, err := r.Next(ctx)
					require.ErrorIs(t, err, ErrOffsetOutOfRange)
					require.Equal(t, map[int32]int64{0: 4}, r.Lag())
					return
				}
				require.Equal(t, []stSeen{{0, 6, "v6"}}, stSeenOf(stNextN(t, r, 1)))
				require.Equal(t, map[int32]int64{0: 3}, r.Lag())
			})
		})
	}
}
