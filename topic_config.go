package commitlog

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// MaxPartitions is the most partitions a topic may have. Kafka sets no hard limit, but its
// guidance is about 4,000 partitions per broker, and a Store is one broker's log directory: each
// partition holds at least three open files (its active segment's .log, .index and .timeindex)
// with two index mappings of up to segment.index.bytes each, and, in memory, index space set
// aside for them. A count above it is refused with ErrInvalidConfig before anything is created,
// and a stored config that declares one is ErrCorrupt, so that a damaged or hostile file cannot
// make an open create folders and files by the million.
const MaxPartitions = 4000

// checkPartitionCount returns ErrInvalidConfig, naming the field, the value and the range, for a
// partition count outside 1 to MaxPartitions.
func checkPartitionCount(n int32) error {
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("%w: Partitions = %d (1 to %d)", ErrInvalidConfig, n, MaxPartitions)
	}
	return nil
}

// TopicConfig is a topic's configuration: its partition count and the log configuration every
// partition uses. It is stored with the topic and used again when the store reopens. Its Sync is
// LogConfig.Sync, the topic's own flush policy over the store's WithSync (see SyncPolicy); it is
// stored as given, SyncDefault included, under the name commitlog.sync.
type TopicConfig struct {
	// Partitions is the number of partitions (Kafka's num.partitions); 0 means 1.
	Partitions int32
	LogConfig
}

// topicConfigJSON is TopicConfig on disk, under Kafka's config names, durations in ms. The
// compaction configs came later: a file written before them has none of their fields and opens
// with their defaults (cleanup.policy "" is delete, as ParseCleanupPolicy reads it). As for the
// older durations, 0 is "the default" and -1 "off" (delete.retention.ms -1: tombstones go at the
// next clean); max.compaction.lag.ms is written as Kafka's own default, Long.MAX_VALUE, when
// there is no limit, and 0, from an older file, means the same.
type topicConfigJSON struct {
	Partitions         int32  `json:"partitions"`
	SegmentBytes       int64  `json:"segment.bytes"`
	SegmentMs          int64  `json:"segment.ms"`
	SegmentIndexBytes  int    `json:"segment.index.bytes"`
	IndexIntervalBytes int    `json:"index.interval.bytes"`
	MaxMessageBytes    int    `json:"max.message.bytes"`
	TimestampType      string `json:"message.timestamp.type"`
	Compression        string `json:"compression.type"`
	Sync               int64  `json:"commitlog.sync"` // SyncPolicy's own encoding
	RetentionMs        int64  `json:"retention.ms"`
	RetentionBytes     int64  `json:"retention.bytes"`
	FileDeleteDelayMs  int64  `json:"file.delete.delay.ms"`
	TimestampAfterMax  int64  `json:"message.timestamp.after.max.ms"`
	MinInsyncReplicas  int    `json:"min.insync.replicas,omitempty"`

	CleanupPolicy          string  `json:"cleanup.policy"`
	MinCleanableDirtyRatio float64 `json:"min.cleanable.dirty.ratio"`
	MinCompactionLagMs     int64   `json:"min.compaction.lag.ms"`
	MaxCompactionLagMs     int64   `json:"max.compaction.lag.ms"`
	DeleteRetentionMs      int64   `json:"delete.retention.ms"`

	// MaxBatchFloor is LogConfig.maxBatchFloor, bytes: written only when a live change lowered
	// max.message.bytes.
	MaxBatchFloor int `json:"commitlog.max.batch.floor,omitempty"`
}

// noCompactionLagLimit is max.compaction.lag.ms when there is no limit: Kafka's default,
// Long.MAX_VALUE.
const noCompactionLagLimit = math.MaxInt64

// maxDurationMs is the largest number of ms a time.Duration holds.
const maxDurationMs = math.MaxInt64 / int64(time.Millisecond)

// msField reads the stored duration ms of the config name: 0 and, when off is set, -1 as they
// are; a value below (-1, or 0 when !off) or past what a time.Duration holds is ErrInvalidConfig.
func msField(name string, ms int64, off bool) (time.Duration, error) {
	switch {
	case ms == -1 && off:
		return -1, nil
	case ms < 0 || ms > maxDurationMs:
		return 0, fmt.Errorf("%w: %s %d", ErrInvalidConfig, name, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// durationMs writes a duration in Kafka's ms, keeping "negative means off" as -1.
func durationMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// msDuration reads it back: -1 (any negative) stays negative.
func msDuration(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func (c TopicConfig) toJSON() topicConfigJSON {
	tt := "CreateTime"
	if c.TimestampType == LogAppendTime {
		tt = "LogAppendTime"
	}
	j := topicConfigJSON{
		Partitions: c.Partitions, SegmentBytes: c.SegmentBytes, SegmentMs: c.SegmentDuration.Milliseconds(),
		SegmentIndexBytes: c.SegmentIndexBytes, IndexIntervalBytes: c.IndexIntervalBytes,
		MaxMessageBytes: c.MaxMessageBytes, TimestampType: tt, Compression: c.Compression.String(),
		Sync: int64(c.Sync), RetentionMs: durationMs(c.RetentionDuration), RetentionBytes: c.RetentionBytes,
		FileDeleteDelayMs: durationMs(c.FileDeleteDelay), TimestampAfterMax: durationMs(c.TimestampAfterMax),
		MinInsyncReplicas:      c.MinInsyncReplicas,
		MinCleanableDirtyRatio: c.MinCleanableDirtyRatio, MinCompactionLagMs: durationMs(c.MinCompactionLag),
		DeleteRetentionMs: durationMs(c.DeleteRetention), CleanupPolicy: c.CleanupPolicy.String(),
		MaxCompactionLagMs: noCompactionLagLimit, MaxBatchFloor: c.maxBatchFloor,
	}
	if c.MaxCompactionLag > 0 {
		j.MaxCompactionLagMs = c.MaxCompactionLag.Milliseconds()
	}
	return j
}

func (j topicConfigJSON) toConfig() (TopicConfig, error) {
	c := TopicConfig{Partitions: j.Partitions, LogConfig: LogConfig{
		SegmentBytes: j.SegmentBytes, SegmentDuration: time.Duration(j.SegmentMs) * time.Millisecond,
		SegmentIndexBytes: j.SegmentIndexBytes, IndexIntervalBytes: j.IndexIntervalBytes,
		MaxMessageBytes: j.MaxMessageBytes, Sync: SyncPolicy(j.Sync),
		RetentionDuration: msDuration(j.RetentionMs), RetentionBytes: j.RetentionBytes,
		FileDeleteDelay: msDuration(j.FileDeleteDelayMs), TimestampAfterMax: msDuration(j.TimestampAfterMax),
		MinInsyncReplicas: j.MinInsyncReplicas, maxBatchFloor: j.MaxBatchFloor,
	}}
	if j.MaxBatchFloor < 0 {
		return c, fmt.Errorf("%w: commitlog.max.batch.floor %d", ErrInvalidConfig, j.MaxBatchFloor)
	}
	switch j.TimestampType {
	case "CreateTime", "":
	case "LogAppendTime":
		c.TimestampType = LogAppendTime
	default:
		return c, fmt.Errorf("%w: message.timestamp.type %q", ErrInvalidConfig, j.TimestampType)
	}
	comp, err := ParseCompression(j.Compression)
	if err != nil {
		return c, err
	}
	c.Compression = comp
	if c.CleanupPolicy, err = ParseCleanupPolicy(j.CleanupPolicy); err != nil {
		return c, err
	}
	if r := j.MinCleanableDirtyRatio; r != 0 && !(r > 0 && r <= 1) {
		return c, fmt.Errorf("%w: min.cleanable.dirty.ratio %v", ErrInvalidConfig, r)
	}
	c.MinCleanableDirtyRatio = j.MinCleanableDirtyRatio
	if c.MinCompactionLag, err = msField("min.compaction.lag.ms", j.MinCompactionLagMs, false); err != nil {
		return c, err
	}
	if j.MaxCompactionLagMs != noCompactionLagLimit {
		if c.MaxCompactionLag, err = msField("max.compaction.lag.ms", j.MaxCompactionLagMs, false); err != nil {
			return c, err
		}
	}
	if c.DeleteRetention, err = msField("delete.retention.ms", j.DeleteRetentionMs, true); err != nil {
		return c, err
	}
	return c, nil
}

// ParseCompression returns the codec Kafka names name (none, gzip, snappy, lz4, zstd; "" is
// none). ErrInvalidConfig for any other name.
func ParseCompression(name string) (Compression, error) {
	for c := CompressionNone; c <= CompressionZstd; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	if name == "" {
		return CompressionNone, nil
	}
	return 0, fmt.Errorf("%w: compression.type %q", ErrInvalidConfig, name)
}

// encodeTopicConfigs serialises the store's topic configs, by topic name.
func encodeTopicConfigs(m map[string]TopicConfig) ([]byte, error) {
	out := make(map[string]topicConfigJSON, len(m))
	for name, c := range m {
		out[name] = c.toJSON()
	}
	return json.MarshalIndent(out, "", "  ")
}

func decodeTopicConfigs(b []byte) (map[string]TopicConfig, error) {
	var in map[string]topicConfigJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%w: topic configs: %w", ErrCorrupt, err)
	}
	m := make(map[string]TopicConfig, len(in))
	for name, j := range in {
		if err := checkTopicName(name); err != nil {
			return nil, fmt.Errorf("%w: topic configs: %w", ErrCorrupt, err)
		}
		c, err := j.toConfig()
		if err == nil && c.Partitions != 0 {
			// 0, from a file written before counts were stored, opens the folders found.
			err = checkPartitionCount(c.Partitions)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: topic %s: %w", ErrCorrupt, name, err)
		}
		m[name] = c
	}
	return m, nil
}
