package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rollLog rolls l's active segment at its log end offset.
func rollLog(t *testing.T, l *Log) {
	t.Helper()
	l.lockWriters()
	defer l.appendMu.Unlock()
	require.NoError(t, l.roll(l.active().NextOffset()))
}

// TestMaxTimestamp: the offset of the first record of the largest timestamp, not its batch's
// last offset (KAFKA-16310), across batches, segments, compression, a cut log start offset and
// reopens. Both stores.
func TestMaxTimestamp(t *testing.T) {
	at := func(ms int64) time.Time { return testEpoch.Add(time.Duration(ms-60_000) * time.Millisecond) }
	want := func(ms int64) int64 { return at(ms).UnixMilli() }
	// A batch is the timestamps of its records (ms, relative); nil rolls the segment.
	for _, tc := range []struct {
		name     string
		cfg      LogConfig
		batches  [][]int64
		deleteTo int64 // DeleteRecords before the question, when > 0
		wantOff  int64
		wantTs   int64 // relative ms; -1 for none
	}{
		{name: "empty", wantOff: -1, wantTs: -1},
		{name: "one record", batches: [][]int64{{5}}, wantOff: 0, wantTs: 5},
		{name: "inside a batch", batches: [][]int64{{1, 2}, {3, 9, 4, 5}, {6}}, wantOff: 3, wantTs: 9},
		{name: "first of a tie in a batch", batches: [][]int64{{1, 9, 9, 2}}, wantOff: 1, wantTs: 9},
		{name: "first of a tie across batches", batches: [][]int64{{1, 2}, {9, 3}, {4, 9}}, wantOff: 2, wantTs: 9},
		{name: "first of a tie across segments", batches: [][]int64{{1, 2}, nil, {9, 3}, nil, {4, 9}}, wantOff: 2, wantTs: 9},
		{name: "an earlier segment", batches: [][]int64{{1, 20, 2}, nil, {3, 4}, nil, {5}}, wantOff: 1, wantTs: 20},
		{name: "the active segment", batches: [][]int64{{1, 2}, nil, {3, 4}, nil, {5, 30, 6}}, wantOff: 5, wantTs: 30},
		{name: "compressed", cfg: LogConfig{Compression: CompressionGzip}, batches: [][]int64{{1, 2}, {3, 4, 40, 5}}, wantOff: 4, wantTs: 40},
		{name: "timestamps going back", batches: [][]int64{{50, 1}, {2, 3}}, wantOff: 0, wantTs: 50},
		{name: "the largest deleted", batches: [][]int64{{1, 50, 2, 3}, {7, 4}, nil, {5, 6}}, deleteTo: 2, wantOff: 4, wantTs: 7},
		{name: "the largest deleted, a batch cut", batches: [][]int64{{1, 50, 2, 8, 3}, nil, {5, 6}}, deleteTo: 2, wantOff: 3, wantTs: 8},
		{name: "the largest kept in a cut segment", batches: [][]int64{{1, 2}, {60, 3}, nil, {5, 6}}, deleteTo: 1, wantOff: 2, wantTs: 60},
		{name: "everything deleted", batches: [][]int64{{1, 2}, nil, {5, 6}}, deleteTo: -1, wantOff: -1, wantTs: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				opts := []Option{WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1)}
				s := env.mustOpen(t, opts...)
				tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: tc.cfg})
				require.NoError(t, err)
				p, err := tp.Partition(0)
				require.NoError(t, err)
				for _, b := range tc.batches {
					if b == nil {
						rollLog(t, p.log)
						continue
					}
					var recs []*Record
					for _, ms := range b {
						recs = append(recs, &Record{Value: []byte("v"), Timestamp: at(ms)})
					}
					require.NoError(t, p.Append(ctx, recs...))
				}
				if tc.deleteTo != 0 {
					_, err := p.DeleteRecords(ctx, tc.deleteTo)
					require.NoError(t, err)
				}
				wantTs := int64(-1)
				if tc.wantTs >= 0 {
					wantTs = want(tc.wantTs)
				}
				check := func(t *testing.T, p *Partition) {
					t.Helper()
					off, ts, err := p.MaxTimestamp()
					require.NoError(t, err)
					require.Equal(t, tc.wantOff, off)
					require.Equal(t, wantTs, ts)
				}
				check(t, p)

				for _, clean := range []bool{true, false} {
					require.NoError(t, s.Close())
					if !clean {
						// As after a crash with nothing flushed: the next open recovers every
						// segment and rebuilds what it knows of their timestamps.
						st := readTestState(t, env.FS(), env.path("events-0"))
						writeTestState(t, env.FS(), env.path("events-0"), logState{logStartOffset: st.logStartOffset})
					}
					s = env.mustOpen(t, opts...)
					tp, err = s.Topic("events")
					require.NoError(t, err)
					p, err = tp.Partition(0)
					require.NoError(t, err)
					check(t, p)
				}
			})
		})
	}
}

// TestMaxTimestampLogAppendTime: under LogAppendTime every record of a batch has the batch's
// timestamp: the answer is the first record of the first batch of the largest. Both stores.
func TestMaxTimestampLogAppendTime(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		now := testEpoch
		s := env.mustOpen(t, WithSync(SyncNever), WithClock(func() time.Time { return now }))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: LogConfig{TimestampType: LogAppendTime}})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		for i, step := range []time.Duration{0, time.Second, 3 * time.Second, 3 * time.Second} {
			now = testEpoch.Add(step) // one goroutine appends: the clock is read in the call
			require.NoError(t, p.Append(context.Background(), &Record{Value: fmt.Appendf(nil, "a%d", i)}, &Record{Value: fmt.Appendf(nil, "b%d", i)}))
		}
		off, ts, err := p.MaxTimestamp()
		require.NoError(t, err)
		require.Equal(t, int64(4), off, "the first record of the first batch appended at +3s")
		require.Equal(t, testEpoch.Add(3*time.Second).UnixMilli(), ts)
	})
}

// TestMaxTimestampHighWatermark: a largest timestamp past the high watermark is not committed:
// no answer, as Kafka's ListOffsets filters by the last fetchable offset. Both stores.
func TestMaxTimestampHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever), WithClock(fixedClock))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		require.NoError(t, p.Append(ctx, &Record{Value: []byte("a"), Timestamp: testEpoch.Add(-time.Minute)},
			&Record{Value: []byte("b"), Timestamp: testEpoch.Add(-2 * time.Minute)}))
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f"}}))

		require.NoError(t, p.AppendAcks(ctx, AcksLeader, &Record{Value: []byte("c"), Timestamp: testEpoch.Add(-3 * time.Minute)}))
		off, ts, err := p.MaxTimestamp()
		require.NoError(t, err)
		require.Equal(t, int64(0), off, "the largest is committed")
		require.Equal(t, testEpoch.Add(-time.Minute).UnixMilli(), ts)

		require.NoError(t, p.AppendAcks(ctx, AcksLeader, &Record{Value: []byte("d"), Timestamp: testEpoch}))
		require.Equal(t, int64(2), p.HighWatermark())
		off, ts, err = p.MaxTimestamp()
		require.NoError(t, err)
		require.Equal(t, int64(-1), off)
		require.Equal(t, int64(-1), ts)

		require.NoError(t, s.Close())
		_, _, err = p.MaxTimestamp()
		require.ErrorIs(t, err, ErrClosed)
	})
}
