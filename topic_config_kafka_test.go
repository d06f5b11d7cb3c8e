package commitlog

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kafkaDefaults is KafkaConfigs of the zero TopicConfig: every modelled config at its default.
var kafkaDefaults = map[string]string{
	"cleanup.policy":                 "delete",
	"compression.type":               "producer",
	"delete.retention.ms":            "86400000",
	"file.delete.delay.ms":           "60000",
	"flush.messages":                 "1",
	"flush.ms":                       "9223372036854775807",
	"index.interval.bytes":           "4096",
	"max.compaction.lag.ms":          "9223372036854775807",
	"max.message.bytes":              "1048588",
	"message.timestamp.after.max.ms": "3600000",
	"message.timestamp.type":         "CreateTime",
	"min.cleanable.dirty.ratio":      "0.5",
	"min.compaction.lag.ms":          "0",
	"min.insync.replicas":            "1",
	"retention.bytes":                "-1",
	"retention.ms":                   "604800000",
	"segment.bytes":                  "1073741824",
	"segment.index.bytes":            "10485760",
	"segment.ms":                     "604800000",
}

// withKafka returns kafkaDefaults with the given entries replaced.
func withKafka(kv ...string) map[string]string {
	m := maps.Clone(kafkaDefaults)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestKafkaConfigs: a TopicConfig's effective values under Kafka's names and formats, and the
// configs it sets itself.
func TestKafkaConfigs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       TopicConfig
		want      map[string]string
		overrides map[string]string
	}{
		{name: "zero", cfg: TopicConfig{}, want: kafkaDefaults, overrides: map[string]string{}},
		{
			name: "every field",
			cfg: TopicConfig{Partitions: 3, LogConfig: LogConfig{
				SegmentBytes: 4096, SegmentDuration: time.Hour, SegmentIndexBytes: 1024, IndexIntervalBytes: 100,
				MaxMessageBytes: 2000, TimestampType: LogAppendTime, Compression: CompressionZstd,
				Sync: SyncInterval(1500 * time.Millisecond), RetentionDuration: 2 * time.Hour, RetentionBytes: 1 << 20,
				FileDeleteDelay: 5 * time.Second, TimestampAfterMax: time.Minute, MinInsyncReplicas: 2,
				CleanupPolicy: CleanupCompactDelete, MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Minute,
				MaxCompactionLag: 30 * time.Minute, DeleteRetention: 10 * time.Second,
			}},
			want: map[string]string{
				"cleanup.policy": "compact,delete", "compression.type": "zstd", "delete.retention.ms": "10000",
				"file.delete.delay.ms": "5000", "flush.messages": "9223372036854775807", "flush.ms": "1500",
				"index.interval.bytes": "100", "max.compaction.lag.ms": "1800000", "max.message.bytes": "2000",
				"message.timestamp.after.max.ms": "60000", "message.timestamp.type": "LogAppendTime",
				"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "60000", "min.insync.replicas": "2",
				"retention.bytes": "1048576", "retention.ms": "7200000", "segment.bytes": "4096",
				"segment.index.bytes": "1024", "segment.ms": "3600000",
			},
		},
		{
			name: "off values",
			cfg: TopicConfig{LogConfig: LogConfig{RetentionDuration: -1, RetentionBytes: -5, DeleteRetention: -1,
				FileDeleteDelay: -1, TimestampAfterMax: -1, Sync: SyncNever, MinCleanableDirtyRatio: 1,
				CleanupPolicy: CleanupCompact, Compression: CompressionGzip}},
			want: withKafka("retention.ms", "-1", "retention.bytes", "-1", "delete.retention.ms", "0",
				"file.delete.delay.ms", "0", "message.timestamp.after.max.ms", "9223372036854775807",
				"flush.messages", "9223372036854775807", "min.cleanable.dirty.ratio", "1.0",
				"cleanup.policy", "compact", "compression.type", "gzip"),
			overrides: map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "delete.retention.ms": "0",
				"file.delete.delay.ms": "0", "message.timestamp.after.max.ms": "9223372036854775807",
				"flush.messages": "9223372036854775807", "min.cleanable.dirty.ratio": "1.0",
				"cleanup.policy": "compact", "compression.type": "gzip"},
		},
		{
			name:      "sync always",
			cfg:       TopicConfig{LogConfig: LogConfig{Sync: SyncAlways}},
			want:      kafkaDefaults,
			overrides: map[string]string{"flush.messages": "1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.cfg.KafkaConfigs())
			if tc.overrides == nil {
				// Every field set; the interval policy is flush.ms's alone.
				tc.overrides = maps.Clone(tc.want)
				delete(tc.overrides, "flush.messages")
			}
			require.Equal(t, tc.overrides, tc.cfg.KafkaConfigOverrides())
		})
	}
}

// TestKafkaConfigsOfTopic: Topic.Config has defaults filled in and Sync resolved against the
// store's WithSync; Topic.StoredConfig is the configuration as given, whose overrides are only
// what was set. Both stores.
func TestKafkaConfigsOfTopic(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2, LogConfig: LogConfig{
			CleanupPolicy: CleanupCompact, MaxCompactionLag: time.Hour, SegmentBytes: 1 << 20}})
		require.NoError(t, err)
		require.Equal(t, withKafka("cleanup.policy", "compact", "max.compaction.lag.ms", "3600000",
			"segment.bytes", "1048576", "segment.ms", "3600000", // the compacted roll (maxSegmentMs)
			"flush.messages", "9223372036854775807"), tp.Config().KafkaConfigs())
		require.Equal(t, withKafka("cleanup.policy", "compact", "max.compaction.lag.ms", "3600000",
			"segment.bytes", "1048576"), tp.StoredConfig().KafkaConfigs())
		require.Equal(t, map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "3600000",
			"segment.bytes": "1048576"}, tp.StoredConfig().KafkaConfigOverrides())
	})
}

// TestSetKafkaConfig: each modelled config parsed from Kafka's value, with Kafka's validation
// and LogConfig's mappings; a bad value or unknown name changes nothing.
func TestSetKafkaConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		from        LogConfig
		want        LogConfig // when wantErr is ""
		wantErr     string
		unknown     bool
	}{
		{name: "cleanup.policy", value: "compact", want: LogConfig{CleanupPolicy: CleanupCompact}},
		{name: "cleanup.policy", value: " delete , compact", want: LogConfig{CleanupPolicy: CleanupCompactDelete}},
		{name: "cleanup.policy", value: "delete", from: LogConfig{CleanupPolicy: CleanupCompact}, want: LogConfig{}},
		{name: "cleanup.policy", value: "shred", wantErr: `invalid value "shred" for configuration cleanup.policy: every item must be compact or delete`},
		{name: "cleanup.policy", value: " ", wantErr: `invalid value " " for configuration cleanup.policy: empty list: give compact, delete or both`},
		{name: "compression.type", value: "lz4", want: LogConfig{Compression: CompressionLZ4}},
		{name: "compression.type", value: "producer", from: LogConfig{Compression: CompressionGzip}, want: LogConfig{}},
		{name: "compression.type", value: "uncompressed", from: LogConfig{Compression: CompressionGzip}, want: LogConfig{}},
		{name: "compression.type", value: "none", wantErr: `invalid value "none" for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer`},
		{name: "delete.retention.ms", value: "1000", want: LogConfig{DeleteRetention: time.Second}},
		{name: "delete.retention.ms", value: "0", want: LogConfig{DeleteRetention: -1}},
		{name: "delete.retention.ms", value: "-1", wantErr: `invalid value "-1" for configuration delete.retention.ms: Value must be at least 0`},
		{name: "file.delete.delay.ms", value: "0", want: LogConfig{FileDeleteDelay: -1}},
		{name: "file.delete.delay.ms", value: "250", want: LogConfig{FileDeleteDelay: 250 * time.Millisecond}},
		{name: "flush.messages", value: "1", want: LogConfig{Sync: SyncAlways}},
		{name: "flush.messages", value: "9223372036854775807", want: LogConfig{Sync: SyncNever}},
		{name: "flush.messages", value: "9223372036854775807", from: LogConfig{Sync: SyncAlways}, want: LogConfig{Sync: SyncNever}},
		{name: "flush.messages", value: "9223372036854775807", from: LogConfig{Sync: SyncInterval(time.Second)}, want: LogConfig{Sync: SyncInterval(time.Second)}},
		{name: "flush.messages", value: "1000", wantErr: `invalid value "1000" for configuration flush.messages: only 1 (flush every append, SyncAlways) and 9223372036854775807 (no count) can be kept: SyncPolicy has no message count`},
		{name: "flush.messages", value: "0", wantErr: `invalid value "0" for configuration flush.messages: Value must be at least 1`},
		{name: "flush.ms", value: "2000", want: LogConfig{Sync: SyncInterval(2 * time.Second)}},
		{name: "flush.ms", value: "2000", from: LogConfig{Sync: SyncNever}, want: LogConfig{Sync: SyncInterval(2 * time.Second)}},
		{name: "flush.ms", value: "2000", from: LogConfig{Sync: SyncAlways}, want: LogConfig{Sync: SyncAlways}},
		{name: "flush.ms", value: "0", want: LogConfig{Sync: SyncAlways}},
		{name: "flush.ms", value: "9223372036854775807", from: LogConfig{Sync: SyncInterval(time.Second)}, want: LogConfig{Sync: SyncNever}},
		{name: "flush.ms", value: "9223372036854775807", want: LogConfig{}},
		{name: "index.interval.bytes", value: "512", want: LogConfig{IndexIntervalBytes: 512}},
		{name: "index.interval.bytes", value: "0", want: LogConfig{IndexIntervalBytes: 1}},
		{name: "max.compaction.lag.ms", value: "60000", want: LogConfig{MaxCompactionLag: time.Minute}},
		{name: "max.compaction.lag.ms", value: "9223372036854775807", from: LogConfig{MaxCompactionLag: time.Minute}, want: LogConfig{}},
		{name: "max.compaction.lag.ms", value: "0", wantErr: `invalid value "0" for configuration max.compaction.lag.ms: Value must be at least 1`},
		{name: "max.message.bytes", value: "65536", want: LogConfig{MaxMessageBytes: 65536}},
		{name: "max.message.bytes", value: "60", wantErr: `invalid value "60" for configuration max.message.bytes: Value must be at least 61`},
		{name: "max.message.bytes", value: "2147483648", wantErr: `invalid value "2147483648" for configuration max.message.bytes: Not a number of type INT`},
		{name: "message.timestamp.after.max.ms", value: "5000", want: LogConfig{TimestampAfterMax: 5 * time.Second}},
		{name: "message.timestamp.after.max.ms", value: "9223372036854775807", want: LogConfig{TimestampAfterMax: -1}},
		{name: "message.timestamp.after.max.ms", value: "0", wantErr: `invalid value "0" for configuration message.timestamp.after.max.ms: 0 (no timestamp ahead of the append time) cannot be kept: a zero TimestampAfterMax is the default, 1 hour`},
		{name: "message.timestamp.type", value: "LogAppendTime", want: LogConfig{TimestampType: LogAppendTime}},
		{name: "message.timestamp.type", value: "CreateTime", from: LogConfig{TimestampType: LogAppendTime}, want: LogConfig{}},
		{name: "message.timestamp.type", value: "logappendtime", wantErr: `invalid value "logappendtime" for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime`},
		{name: "min.cleanable.dirty.ratio", value: "0.1", want: LogConfig{MinCleanableDirtyRatio: 0.1}},
		{name: "min.cleanable.dirty.ratio", value: "1", want: LogConfig{MinCleanableDirtyRatio: 1}},
		{name: "min.cleanable.dirty.ratio", value: "1.5", wantErr: `invalid value "1.5" for configuration min.cleanable.dirty.ratio: Value must be no more than 1`},
		{name: "min.cleanable.dirty.ratio", value: "NaN", wantErr: `invalid value "NaN" for configuration min.cleanable.dirty.ratio: Value must be no more than 1`},
		{name: "min.cleanable.dirty.ratio", value: "half", wantErr: `invalid value "half" for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE`},
		{name: "min.cleanable.dirty.ratio", value: "0", wantErr: `invalid value "0" for configuration min.cleanable.dirty.ratio: 0 cannot be kept: a zero MinCleanableDirtyRatio is the default, 0.5; the smallest ratio is above 0`},
		{name: "min.compaction.lag.ms", value: "30000", want: LogConfig{MinCompactionLag: 30 * time.Second}},
		{name: "min.compaction.lag.ms", value: "9223372036854775807", wantErr: `invalid value "9223372036854775807" for configuration min.compaction.lag.ms: Value must be no more than 9223372036854`},
		{name: "min.insync.replicas", value: "2", want: LogConfig{MinInsyncReplicas: 2}},
		{name: "min.insync.replicas", value: "0", wantErr: `invalid value "0" for configuration min.insync.replicas: Value must be at least 1`},
		{name: "retention.bytes", value: "1073741824", want: LogConfig{RetentionBytes: 1 << 30}},
		{name: "retention.bytes", value: "-7", want: LogConfig{RetentionBytes: -1}},
		{name: "retention.bytes", value: "0", wantErr: `invalid value "0" for configuration retention.bytes: 0 (delete every sealed segment) cannot be kept: a zero RetentionBytes is the default, no limit`},
		{name: "retention.ms", value: "3600000", want: LogConfig{RetentionDuration: time.Hour}},
		{name: "retention.ms", value: "-1", want: LogConfig{RetentionDuration: -1}},
		{name: "retention.ms", value: "9223372036854775807", want: LogConfig{RetentionDuration: -1}},
		{name: "retention.ms", value: "-2", wantErr: `invalid value "-2" for configuration retention.ms: Value must be at least -1`},
		{name: "retention.ms", value: "0", wantErr: `invalid value "0" for configuration retention.ms: 0 (delete every sealed segment) cannot be kept: a zero RetentionDuration is the default, 7 days`},
		{name: "retention.ms", value: "1h", wantErr: `invalid value "1h" for configuration retention.ms: Not a number of type LONG`},
		{name: "segment.bytes", value: " 1048576 ", want: LogConfig{SegmentBytes: 1 << 20}},
		{name: "segment.bytes", value: "14", wantErr: `invalid value "14" for configuration segment.bytes: Value must be at least 61`},
		{name: "segment.index.bytes", value: "4096", want: LogConfig{SegmentIndexBytes: 4096}},
		{name: "segment.index.bytes", value: "8", wantErr: `invalid value "8" for configuration segment.index.bytes: Value must be at least 48`},
		{name: "segment.ms", value: "60000", want: LogConfig{SegmentDuration: time.Minute}},
		{name: "segment.ms", value: "0", wantErr: `invalid value "0" for configuration segment.ms: Value must be at least 1`},
		{name: "preallocate", value: "true", wantErr: `commitlog: invalid config: unknown topic config name: "preallocate"`, unknown: true},
		{name: "num.partitions", value: "3", wantErr: `commitlog: invalid config: unknown topic config name: "num.partitions"`, unknown: true},
		{name: "Retention.ms", value: "1", wantErr: `commitlog: invalid config: unknown topic config name: "Retention.ms"`, unknown: true},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			from := TopicConfig{Partitions: 4, LogConfig: tc.from}
			got, err := from.SetKafkaConfig(tc.name, tc.value)
			if tc.wantErr != "" {
				if !tc.unknown {
					tc.wantErr = "commitlog: invalid config: " + tc.wantErr
				}
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Equal(t, tc.unknown, errors.Is(err, ErrUnknownConfig))
				require.Equal(t, from, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, TopicConfig{Partitions: 4, LogConfig: tc.want}, got)
			_, _, err = got.LogConfig.resolve(SyncDefault)
			require.NoError(t, err, "a value SetKafkaConfig takes is one the log takes")
		})
	}
}

// TestKafkaConfigsRoundTrip: every value KafkaConfigs shows, given back to SetKafkaConfig on a
// zero config, gives the same values; the overrides of the result are what was set.
func TestKafkaConfigsRoundTrip(t *testing.T) {
	for _, cfg := range []TopicConfig{
		{},
		{LogConfig: LogConfig{SegmentBytes: 4096, SegmentDuration: time.Hour, SegmentIndexBytes: 1024,
			IndexIntervalBytes: 100, MaxMessageBytes: 2000, TimestampType: LogAppendTime, Compression: CompressionSnappy,
			Sync: SyncInterval(1500 * time.Millisecond), RetentionDuration: 2 * time.Hour, RetentionBytes: 1 << 20,
			FileDeleteDelay: 5 * time.Second, TimestampAfterMax: time.Minute, MinInsyncReplicas: 2,
			CleanupPolicy: CleanupCompactDelete, MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Minute,
			MaxCompactionLag: 30 * time.Minute, DeleteRetention: 10 * time.Second}},
		{LogConfig: LogConfig{RetentionDuration: -1, RetentionBytes: -1, DeleteRetention: -1, FileDeleteDelay: -1,
			TimestampAfterMax: -1, Sync: SyncNever, MinCleanableDirtyRatio: 1}},
	} {
		want := cfg.KafkaConfigs()
		var got TopicConfig
		for _, name := range slices.Sorted(maps.Keys(want)) {
			var err error
			got, err = got.SetKafkaConfig(name, want[name])
			require.NoError(t, err, name)
		}
		require.Equal(t, want, got.KafkaConfigs())
	}
}

// TestResetKafkaConfig: a reset returns the config to its default, as IncrementalAlterConfigs'
// DELETE does; flush.messages and flush.ms reset Sync only when the policy is theirs.
func TestResetKafkaConfig(t *testing.T) {
	full := TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 4096, SegmentDuration: time.Hour,
		SegmentIndexBytes: 1024, IndexIntervalBytes: 100, MaxMessageBytes: 2000, TimestampType: LogAppendTime,
		Compression: CompressionSnappy, Sync: SyncAlways, RetentionDuration: 2 * time.Hour, RetentionBytes: 1 << 20,
		FileDeleteDelay: 5 * time.Second, TimestampAfterMax: time.Minute, MinInsyncReplicas: 2,
		CleanupPolicy: CleanupCompactDelete, MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Minute,
		MaxCompactionLag: 30 * time.Minute, DeleteRetention: 10 * time.Second}}
	names := slices.Sorted(maps.Keys(kafkaDefaults))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			got, err := full.ResetKafkaConfig(name)
			require.NoError(t, err)
			wantOverrides := full.KafkaConfigOverrides()
			if name != "flush.ms" { // SyncAlways is flush.messages'
				delete(wantOverrides, name)
			}
			require.Equal(t, wantOverrides, got.KafkaConfigOverrides())
			if name != "flush.ms" {
				require.Equal(t, kafkaDefaults[name], got.KafkaConfigs()[name])
			}
		})
	}
	var c TopicConfig = full
	for _, name := range names {
		var err error
		c, err = c.ResetKafkaConfig(name)
		require.NoError(t, err)
	}
	require.Equal(t, TopicConfig{Partitions: 2}, c)

	interval := TopicConfig{LogConfig: LogConfig{Sync: SyncInterval(time.Second)}}
	got, err := interval.ResetKafkaConfig("flush.messages")
	require.NoError(t, err)
	require.Equal(t, interval, got)
	got, err = interval.ResetKafkaConfig("flush.ms")
	require.NoError(t, err)
	require.Equal(t, TopicConfig{}, got)

	_, err = full.ResetKafkaConfig("unclean.leader.election.enable")
	require.ErrorIs(t, err, ErrUnknownConfig)
	require.EqualError(t, err, `commitlog: invalid config: unknown topic config name: "unclean.leader.election.enable"`)
}
