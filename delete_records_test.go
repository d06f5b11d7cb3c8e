package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deleteRecordsTopic creates topic "events" of one partition holding 30 records, one batch each,
// in segments of 10 batches (base offsets 0, 10, 20), and returns its partition.
func deleteRecordsTopic(t *testing.T, s *Store, policy CleanupPolicy) *Partition {
	t.Helper()
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: LogConfig{CleanupPolicy: policy}})
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	for i := range 30 {
		require.NoError(t, p.Append(context.Background(), &Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}))
		if i%10 == 9 {
			p.log.lockWriters()
			require.NoError(t, p.log.roll(p.log.active().NextOffset()))
			p.log.appendMu.Unlock()
		}
	}
	require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(p.log))
	return p
}

// requireStartsAt checks that p's records start at start: reads below it are out of range, the
// first record read from it is start's, and the log ends at 30.
func requireStartsAt(t *testing.T, p *Partition, start int64) {
	t.Helper()
	require.Equal(t, start, p.LogStartOffset())
	require.Equal(t, int64(30), p.LogEndOffset())
	var r Record
	if start > 0 {
		require.ErrorIs(t, p.ReadRecord(start-1, &r), ErrOffsetOutOfRange)
		_, err := p.ReadRecords(start-1, 1<<20)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		_, err = p.ReadBatches(nil, start-1, 1<<20)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
	}
	if start < 30 {
		require.NoError(t, p.ReadRecord(start, &r))
		require.Equal(t, start, r.Offset)
		require.Equal(t, fmt.Sprintf("v%d", start), string(r.Value))
		recs, err := p.ReadRecords(start, 1<<20)
		require.NoError(t, err)
		require.Equal(t, start, recs[0].Offset, "no record below the log start offset is returned")
	} else {
		require.ErrorIs(t, p.ReadRecord(start, &r), ErrNoRecordYet)
	}
}

// TestDeleteRecords: the log start offset rises to the offset asked (-1: the high watermark),
// never falls, the segments wholly below it go, and it survives a reopen. Both stores.
func TestDeleteRecords(t *testing.T) {
	for _, tc := range []struct {
		name      string
		offsets   []int64 // successive calls
		want      int64   // the log start offset after the last
		wantBases []int64 // the segments left
	}{
		{name: "zero", offsets: []int64{0}, want: 0, wantBases: []int64{0, 10, 20, 30}},
		{name: "within the first segment", offsets: []int64{5}, want: 5, wantBases: []int64{0, 10, 20, 30}},
		{name: "at a segment's base", offsets: []int64{10}, want: 10, wantBases: []int64{10, 20, 30}},
		{name: "within a later segment", offsets: []int64{25}, want: 25, wantBases: []int64{20, 30}},
		{name: "the high watermark", offsets: []int64{-1}, want: 30, wantBases: []int64{30}},
		{name: "the high watermark by number", offsets: []int64{30}, want: 30, wantBases: []int64{30}},
		{name: "never lower", offsets: []int64{12, 4}, want: 12, wantBases: []int64{10, 20, 30}},
		{name: "step by step", offsets: []int64{3, 10, 21, -1}, want: 30, wantBases: []int64{30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1))
				p := deleteRecordsTopic(t, s, CleanupDelete)
				var got int64
				for _, off := range tc.offsets {
					var err error
					got, err = p.DeleteRecords(ctx, off)
					require.NoError(t, err)
				}
				require.Equal(t, tc.want, got)
				require.Equal(t, tc.wantBases, segmentBases(p.log))
				requireStartsAt(t, p, tc.want)

				// Appends go on after the deleted records.
				require.NoError(t, p.Append(ctx, &Record{Value: []byte("v30")}))
				require.Equal(t, int64(31), p.LogEndOffset())
				require.NoError(t, p.log.TruncateTo(30))

				require.NoError(t, s.Close())
				s = env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1))
				tp, err := s.Topic("events")
				require.NoError(t, err)
				p, err = tp.Partition(0)
				require.NoError(t, err)
				requireStartsAt(t, p, tc.want)
				require.Equal(t, tc.wantBases, segmentBases(p.log))
			})
		})
	}
}

// TestDeleteRecordsRefused: offsets past the high watermark or below -1, a compacted topic and a
// follower are refused, changing nothing. Both stores.
func TestDeleteRecordsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  CleanupPolicy
		offset  int64
		follow  bool
		want    error
		wantErr string
	}{
		{name: "past the high watermark", offset: 31, want: ErrOffsetOutOfRange,
			wantErr: "commitlog: offset out of range: cannot delete records of topic events partition 0 below offset 31: the high watermark is 30"},
		{name: "below -1", offset: -2, want: ErrOffsetOutOfRange,
			wantErr: "commitlog: offset out of range: cannot delete records of topic events partition 0 below offset -2: the high watermark is 30"},
		{name: "compacted", policy: CleanupCompact, offset: 10, want: ErrPolicyViolation,
			wantErr: "commitlog: policy violation: records of topic events partition 0 cannot be deleted under cleanup.policy compact"},
		{name: "follower", offset: 10, follow: true, want: ErrNotLeader,
			wantErr: "commitlog: not the leader: topic events partition 0 follows in epoch 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1), WithCleanerThreads(0))
				p := deleteRecordsTopic(t, s, tc.policy)
				if tc.follow {
					require.NoError(t, p.Replica().BecomeFollower(1))
				}
				got, err := p.DeleteRecords(context.Background(), tc.offset)
				require.ErrorIs(t, err, tc.want)
				require.EqualError(t, err, tc.wantErr)
				require.Zero(t, got)
				require.Equal(t, int64(0), p.LogStartOffset())
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(p.log))
			})
		})
	}

	t.Run("compact,delete", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, env *storeEnv) {
			s := env.mustOpen(t, WithSync(SyncNever), WithCleanerThreads(0))
			p := deleteRecordsTopic(t, s, CleanupCompactDelete)
			got, err := p.DeleteRecords(context.Background(), 15)
			require.NoError(t, err)
			require.Equal(t, int64(15), got)
		})
	})

	t.Run("done context and closed store", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, env *storeEnv) {
			s := env.mustOpen(t, WithSync(SyncNever))
			p := deleteRecordsTopic(t, s, CleanupDelete)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := p.DeleteRecords(ctx, 10)
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, int64(0), p.LogStartOffset())
			require.NoError(t, s.Close())
			_, err = p.DeleteRecords(context.Background(), 10)
			require.ErrorIs(t, err, ErrClosed)
		})
	})
}

// TestDeleteRecordsHighWatermark: a leader with followers deletes up to its high watermark, not
// its log end offset. Both stores.
func TestDeleteRecordsHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		p := deleteRecordsTopic(t, s, CleanupDelete)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f"}}))
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, &Record{Value: []byte("v30")}, &Record{Value: []byte("v31")}))
		require.Equal(t, int64(30), p.HighWatermark())
		require.Equal(t, int64(32), p.LogEndOffset())

		_, err := p.DeleteRecords(ctx, 31)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		got, err := p.DeleteRecords(ctx, -1)
		require.NoError(t, err)
		require.Equal(t, int64(30), got)
		require.Equal(t, int64(30), p.LogStartOffset())
	})
}

// TestDeleteRecordsCrash: the new log start offset survives a process kill right after
// DeleteRecords (an unclean open, which recovers the log), under SyncNever. Both stores.
func TestDeleteRecordsCrash(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		p := deleteRecordsTopic(t, s, CleanupDelete)
		got, err := p.DeleteRecords(context.Background(), -1)
		require.NoError(t, err)
		require.Equal(t, int64(30), got)

		// The image a process kill leaves: the store's files as they are now.
		crashed := env.dir + "-crash"
		require.NoError(t, env.FS().MkdirAll(crashed, 0o755))
		for _, name := range []string{topicsFileName, recoveryPointCheckpointName, logStartCheckpointName} {
			fsWriteFile(t, env.FS(), filepath.Join(crashed, name), fsReadFile(t, env.FS(), env.path(name)))
		}
		crashCopy(t, env.FS(), env.path("events-0"), filepath.Join(crashed, "events-0"))
		require.False(t, readTestState(t, env.FS(), filepath.Join(crashed, "events-0")).clean)

		s2, err := Open(crashed, withFS(env.FS()), WithSync(SyncNever))
		require.NoError(t, err)
		defer s2.Close()
		tp, err := s2.Topic("events")
		require.NoError(t, err)
		p2, err := tp.Partition(0)
		require.NoError(t, err)
		requireStartsAt(t, p2, 30)
	})
}

// TestDeleteRecordsUnderReader: a Reader reading below the new log start offset returns the
// records of the fetch it had made (as a Kafka consumer returns a fetch it already has), then
// meets the log start offset at its next fetch: ErrOffsetOutOfRange under ResetNone, the first
// record at the log start offset under ResetEarliest. Each fetch is one batch of 10 records
// (MaxBytes 1).
func TestDeleteRecordsUnderReader(t *testing.T) {
	for _, scan := range []bool{false, true} {
		for _, reset := range []ResetPolicy{ResetNone, ResetEarliest} {
			t.Run(fmt.Sprintf("scan=%v/reset=%s", scan, resetNames[reset]), func(t *testing.T) {
				forEachStore(t, func(t *testing.T, env *storeEnv) {
					s := env.mustOpen(t)
					tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
					appendInBatches(t, tp, divergenceValues("v", 0, 40))
					p := stMust(tp.Partition(0))
					r := stReader(t, tp, ReaderConfig{Start: Earliest, Reset: reset, MaxBytes: 1})
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					it := r.Records(ctx)
					if scan {
						it = r.Scan(ctx)
					}
					var offsets []int64
					var last error
					for rec, err := range it {
						if err != nil {
							last = err
							break
						}
						offsets = append(offsets, rec.Offset)
						if rec.Offset == 5 {
							low, err := p.DeleteRecords(ctx, 25)
							require.NoError(t, err)
							require.Equal(t, int64(25), low)
						}
						if rec.Offset == 26 {
							break
						}
					}
					if reset == ResetNone {
						require.Equal(t, offsetRange(0, 10), offsets)
						require.ErrorIs(t, last, ErrOffsetOutOfRange)
						return
					}
					require.NoError(t, last)
					require.Equal(t, append(offsetRange(0, 10), 25, 26), offsets)
				})
			})
		}
	}
}
