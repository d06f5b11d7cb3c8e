package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAlterTopicConfigRefused: a change the store refuses changes nothing, neither the live
// topic nor the stored configuration. Both stores.
func TestAlterTopicConfigRefused(t *testing.T) {
	base := TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 1 << 20}}
	for _, tc := range []struct {
		name    string
		topic   string
		cfg     TopicConfig
		want    error
		wantErr string
	}{
		{name: "unknown topic", topic: "nope", cfg: base, want: ErrUnknownTopic,
			wantErr: `commitlog: unknown topic or partition: "nope"`},
		{name: "consumer offsets", topic: consumerOffsetsTopic, cfg: TopicConfig{Partitions: 1}, want: ErrUnknownTopic,
			wantErr: `commitlog: unknown topic or partition: "__consumer_offsets"`},
		{name: "transaction state", topic: transactionStateTopic, cfg: TopicConfig{Partitions: 1}, want: ErrUnknownTopic,
			wantErr: `commitlog: unknown topic or partition: "__transaction_state"`},
		{name: "fewer partitions", topic: "events", cfg: TopicConfig{Partitions: 1}, want: ErrInvalidConfig,
			wantErr: "commitlog: invalid config: Partitions = 1: topic events has 2 partitions (CreatePartitions adds partitions)"},
		{name: "more partitions", topic: "events", cfg: TopicConfig{Partitions: 3}, want: ErrInvalidConfig,
			wantErr: "commitlog: invalid config: Partitions = 3: topic events has 2 partitions (CreatePartitions adds partitions)"},
		{name: "zero partitions", topic: "events", cfg: TopicConfig{}, want: ErrInvalidConfig,
			wantErr: "commitlog: invalid config: Partitions = 0: topic events has 2 partitions (CreatePartitions adds partitions)"},
		{name: "value out of range", topic: "events", cfg: TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 10}},
			want: ErrInvalidConfig, wantErr: "commitlog: invalid config: SegmentBytes = 10"},
		{name: "sync", topic: "events", cfg: TopicConfig{Partitions: 2, LogConfig: LogConfig{Sync: SyncAlways}},
			want: ErrInvalidConfig, wantErr: "commitlog: invalid config: topic events: Sync (flush.ms, flush.messages) always cannot replace never on a live topic"},
		{name: "sync interval", topic: "events", cfg: TopicConfig{Partitions: 2, LogConfig: LogConfig{Sync: SyncInterval(time.Second)}},
			want: ErrInvalidConfig, wantErr: "commitlog: invalid config: topic events: Sync (flush.ms, flush.messages) interval(1s) cannot replace never on a live topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp, err := s.CreateTopic("events", base)
				require.NoError(t, err)
				before := tp.Config()

				err = s.AlterTopicConfig(tc.topic, tc.cfg)
				require.ErrorIs(t, err, tc.want)
				require.EqualError(t, err, tc.wantErr)
				require.Equal(t, base, tp.StoredConfig())
				require.Equal(t, before, tp.Config())
				for _, p := range tp.parts() {
					require.Equal(t, before.LogConfig, p.log.Config())
				}

				require.NoError(t, s.Close())
				s = env.mustOpen(t, WithSync(SyncNever))
				tp, err = s.Topic("events")
				require.NoError(t, err)
				require.Equal(t, base, tp.StoredConfig())
				require.Equal(t, []string{"events"}, s.Topics())
			})
		})
	}

	t.Run("closed", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, env *storeEnv) {
			s := env.mustOpen(t)
			_, err := s.CreateTopic("events", base)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.ErrorIs(t, s.AlterTopicConfig("events", base), ErrClosed)
		})
	})

	t.Run("same sync, said otherwise", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, env *storeEnv) {
			s := env.mustOpen(t, WithSync(SyncNever))
			tp, err := s.CreateTopic("events", base)
			require.NoError(t, err)
			explicit := TopicConfig{Partitions: 2, LogConfig: LogConfig{Sync: SyncNever}}
			require.NoError(t, s.AlterTopicConfig("events", explicit))
			require.Equal(t, explicit, tp.StoredConfig())
			require.Equal(t, SyncNever, tp.Config().Sync)
		})
	})
}

// TestAlterTopicConfigLive: a change takes effect on the open partitions at once (rolls,
// retention, max.message.bytes, timestamps, cleanup.policy), is stored, and is the topic's
// configuration after a reopen. Both stores.
func TestAlterTopicConfigLive(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		opts := []Option{WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1), WithCleanerThreads(0)}
		s := env.mustOpen(t, opts...)
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		value := bytes.Repeat([]byte("v"), 1000)
		for i := range 10 {
			require.NoError(t, p.Append(ctx, &Record{Key: fmt.Appendf(nil, "k%d", i), Value: value, Timestamp: testEpoch}))
		}
		require.Equal(t, 1, p.SegmentCount())

		// Segments of about 3 batches from the next append on, the active segment included;
		// retention by size; small batches; the append time.
		cfg, err := tp.StoredConfig().SetKafkaConfig("segment.bytes", "3500")
		require.NoError(t, err)
		for _, kv := range [][2]string{{"retention.bytes", "1000"}, {"max.message.bytes", "2000"},
			{"message.timestamp.type", "LogAppendTime"}} {
			cfg, err = cfg.SetKafkaConfig(kv[0], kv[1])
			require.NoError(t, err)
		}
		require.NoError(t, s.AlterTopicConfig("events", cfg))
		require.Equal(t, cfg, tp.StoredConfig())
		require.Equal(t, int64(3500), tp.Config().SegmentBytes)
		require.Equal(t, int64(3500), p.log.Config().SegmentBytes)
		require.Equal(t, map[string]string{"segment.bytes": "3500", "retention.bytes": "1000",
			"max.message.bytes": "2000", "message.timestamp.type": "LogAppendTime"}, tp.StoredConfig().KafkaConfigOverrides())

		// The active segment, already past 3500 bytes, rolls at the next append.
		for i := 10; i < 16; i++ {
			require.NoError(t, p.Append(ctx, &Record{Key: fmt.Appendf(nil, "k%d", i), Value: value, Timestamp: testEpoch.Add(-time.Hour)}))
		}
		require.Equal(t, []int64{0, 10, 13}, segmentBases(p.log))
		var r Record
		require.NoError(t, p.ReadRecord(15, &r))
		require.Equal(t, testEpoch, r.Timestamp, "LogAppendTime replaced the record's own")

		require.ErrorIs(t, p.Append(ctx, &Record{Key: []byte("big"), Value: bytes.Repeat([]byte("b"), 3000)}), ErrRecordTooLarge)

		// retention.bytes 1000: of segments of about 10,700, 3,200 and 3,200 bytes the last
		// stays (a segment goes while the log exceeds the limit by at least its size).
		n, err := tp.ApplyRetention()
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, int64(13), p.LogStartOffset())

		// cleanup.policy compact: keyless records are refused from the next append.
		cfg, err = cfg.SetKafkaConfig("cleanup.policy", "compact")
		require.NoError(t, err)
		require.NoError(t, s.AlterTopicConfig("events", cfg))
		require.ErrorIs(t, tp.Append(ctx, &Record{Value: []byte("no key")}), ErrKeylessRecord)
		require.ErrorIs(t, p.Append(ctx, &Record{Value: []byte("no key")}), ErrKeylessRecord)

		// Reset everything: the defaults again, live.
		require.NoError(t, s.AlterTopicConfig("events", TopicConfig{Partitions: 1}))
		require.NoError(t, p.Append(ctx, &Record{Value: bytes.Repeat([]byte("b"), 3000), Timestamp: testEpoch.Add(-time.Hour)}))
		require.NoError(t, p.ReadRecord(16, &r))
		require.Equal(t, testEpoch.Add(-time.Hour), r.Timestamp, "CreateTime again")
		require.NoError(t, s.AlterTopicConfig("events", cfg))

		// After a reopen the topic runs the stored configuration.
		require.NoError(t, s.Close())
		s = env.mustOpen(t, opts...)
		tp, err = s.Topic("events")
		require.NoError(t, err)
		require.Equal(t, cfg, tp.StoredConfig())
		require.Equal(t, map[string]string{"segment.bytes": "3500", "retention.bytes": "1000", "max.message.bytes": "2000",
			"message.timestamp.type": "LogAppendTime", "cleanup.policy": "compact"}, tp.StoredConfig().KafkaConfigOverrides())
		p, err = tp.Partition(0)
		require.NoError(t, err)
		require.Equal(t, tp.Config().LogConfig, p.log.Config())
		require.Equal(t, int64(3500), p.log.Config().SegmentBytes)
		require.Equal(t, int64(13), p.LogStartOffset())
		require.ErrorIs(t, p.Append(ctx, &Record{Value: []byte("no key")}), ErrKeylessRecord)
		require.NoError(t, p.ReadRecord(16, &r))
		require.Len(t, r.Value, 3000, "a batch stored under a larger max.message.bytes stays readable")
	})
}

// TestAlterTopicConfigKeepsLargeBatchesReadable: lowering max.message.bytes and segment.bytes
// below a batch the log holds leaves it readable, live and after reopens, clean or not: the
// store keeps the larger bound. Both stores.
func TestAlterTopicConfigKeepsLargeBatchesReadable(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: LogConfig{MaxMessageBytes: 300 << 10}})
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		big := bytes.Repeat([]byte("x"), 200<<10)
		require.NoError(t, p.Append(ctx, &Record{Value: big}))

		small := TopicConfig{Partitions: 1, LogConfig: LogConfig{MaxMessageBytes: 1000, SegmentBytes: 64 << 10}}
		require.NoError(t, s.AlterTopicConfig("events", small))
		require.Equal(t, 300<<10, tp.Config().maxBatchFloor)
		// Lowered again: the floor stays the largest.
		small.MaxMessageBytes = 2000
		require.NoError(t, s.AlterTopicConfig("events", small))
		require.Equal(t, 300<<10, tp.Config().maxBatchFloor)
		require.Equal(t, map[string]string{"max.message.bytes": "2000", "segment.bytes": "65536"},
			tp.StoredConfig().KafkaConfigOverrides())
		require.NoError(t, p.Append(ctx, &Record{Value: []byte("small")}))
		recs := readAllRecords(t, p.log)
		require.Len(t, recs, 2)
		require.Equal(t, big, recs[0].Value)

		// A raise above the old limit needs no floor.
		require.NoError(t, s.AlterTopicConfig("events", TopicConfig{Partitions: 1, LogConfig: LogConfig{MaxMessageBytes: 400 << 10}}))
		require.Zero(t, tp.Config().maxBatchFloor)
		require.NoError(t, s.AlterTopicConfig("events", small))
		require.Equal(t, 400<<10, tp.Config().maxBatchFloor)
		require.Equal(t, small, tp.StoredConfig(), "the floor is the store's own")

		for _, clean := range []bool{true, false} {
			require.NoError(t, s.Close())
			if !clean {
				// As after a crash with nothing flushed: the next open recovers every segment.
				writeTestState(t, env.FS(), env.path("events-0"), logState{})
			}
			s = env.mustOpen(t, WithSync(SyncNever))
			tp, err = s.Topic("events")
			require.NoError(t, err)
			p, err = tp.Partition(0)
			require.NoError(t, err)
			recs = readAllRecords(t, p.log)
			require.Len(t, recs, 2, "clean %v", clean)
			require.Equal(t, big, recs[0].Value)
			require.Equal(t, []byte("small"), recs[1].Value)
		}
	})
}

// TestAlterTopicConfigConcurrent: config changes while appends and reads run lose and reorder
// nothing, under the race detector. Both stores.
func TestAlterTopicConfigConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1), WithCleanerThreads(0))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
		require.NoError(t, err)
		const writers, perWriter = 4, 300
		var wg sync.WaitGroup
		errs := make(chan error, writers+1)
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					key := fmt.Appendf(nil, "w%d", w)
					if err := tp.Append(ctx, &Record{Key: key, Value: fmt.Appendf(nil, "%d", i)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		stop := make(chan struct{})
		var readers sync.WaitGroup
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, p := range tp.parts() {
					if _, err := p.ReadRecords(p.LogStartOffset(), 1<<20); err != nil {
						errs <- err
						return
					}
				}
			}
		})
		for i := range 40 {
			cfg := TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: int64(2000 + 500*(i%4)),
				MaxMessageBytes: 1000 + 1000*(i%3), IndexIntervalBytes: 100 * (i % 5), SegmentIndexBytes: 4096 * (1 + i%2)}}
			if i%2 == 1 {
				cfg.CleanupPolicy = CleanupCompactDelete
			}
			require.NoError(t, s.AlterTopicConfig("events", cfg))
		}
		wg.Wait()
		close(stop)
		readers.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		// Every writer's records, in its order, in its key's partition.
		for _, reopen := range []bool{false, true} {
			if reopen {
				require.NoError(t, s.Close())
				s = env.mustOpen(t, WithSync(SyncNever), WithRetentionCheckInterval(-1), WithCleanerThreads(0))
				tp, err = s.Topic("events")
				require.NoError(t, err)
			}
			next := map[string]int{}
			for _, p := range tp.parts() {
				for _, r := range readAllRecords(t, p.log) {
					require.Equal(t, fmt.Sprint(next[string(r.Key)]), string(r.Value))
					next[string(r.Key)]++
				}
			}
			require.Len(t, next, writers)
			for k, n := range next {
				require.Equal(t, perWriter, n, k)
			}
		}
	})
}
