package commitlog

import (
	"encoding/json"
	"fmt"
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

// topicConfigJSON is TopicConfig on disk, under Kafka's config names, durations in ms.
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
	return topicConfigJSON{
		Partitions: c.Partitions, SegmentBytes: c.SegmentBytes, SegmentMs: c.SegmentDuration.Milliseconds(),
		SegmentIndexBytes: c.SegmentIndexBytes, IndexIntervalBytes: c.IndexIntervalBytes,
		MaxMessageBytes: c.MaxMessageBytes, TimestampType: tt, Compression: c.Compression.String(),
		Sync: int64(c.Sync), RetentionMs: durationMs(c.RetentionDuration), RetentionBytes: c.RetentionBytes,
		FileDeleteDelayMs: durationMs(c.FileDeleteDelay), TimestampAfterMax: durationMs(c.TimestampAfterMax),
		MinInsyncReplicas: c.MinInsyncReplicas,
	}
}

func (j topicConfigJSON) toConfig() (TopicConfig, error) {
	c := TopicConfig{Partitions: j.Partitions, LogConfig: LogConfig{
		SegmentBytes: j.SegmentBytes, SegmentDuration: time.Duration(j.SegmentMs) * time.Millisecond,
		SegmentIndexBytes: j.SegmentIndexBytes, IndexIntervalBytes: j.IndexIntervalBytes,
		MaxMessageBytes: j.MaxMessageBytes, Sync: SyncPolicy(j.Sync),
		RetentionDuration: msDuration(j.RetentionMs), RetentionBytes: j.RetentionBytes,
		FileDeleteDelay: msDuration(j.FileDeleteDelayMs), TimestampAfterMax: msDuration(j.TimestampAfterMax),
		MinInsyncReplicas: j.MinInsyncReplicas,
	}}
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
