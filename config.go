package commitlog

import (
	"fmt"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Kafka's defaults for the topic-level configs that LogConfig mirrors.
const (
	DefaultSegmentBytes       = 1 << 30            // segment.bytes: 1 GiB
	DefaultSegmentDuration    = 7 * 24 * time.Hour // segment.ms: 7 days
	DefaultSegmentIndexBytes  = 10 << 20           // segment.index.bytes: 10 MiB
	DefaultIndexIntervalBytes = 4096               // index.interval.bytes
	DefaultMaxMessageBytes    = 1048588            // max.message.bytes: 1 MiB + record batch overhead
)

// TimestampType says which time a record carries (Kafka's message.timestamp.type).
type TimestampType int8

const (
	// CreateTime keeps the timestamp the producer set (zero timestamps get the append time).
	CreateTime TimestampType = 0
	// LogAppendTime replaces every record's timestamp with the time the log appended it.
	LogAppendTime TimestampType = 1
)

// Compression is the codec batches are compressed with (Kafka's compression.type). Batches
// appended raw keep the codec their producer chose.
type Compression int8

// Kafka's codec ids.
const (
	CompressionNone   Compression = Compression(recordbatch.CodecNone)
	CompressionGzip   Compression = Compression(recordbatch.CodecGzip)
	CompressionSnappy Compression = Compression(recordbatch.CodecSnappy)
	CompressionLZ4    Compression = Compression(recordbatch.CodecLZ4)
	CompressionZstd   Compression = Compression(recordbatch.CodecZstd)
)

// String returns Kafka's name for c: none, gzip, snappy, lz4 or zstd.
func (c Compression) String() string { return recordbatch.Codec(c).String() }

// LogConfig is the configuration of one partition's log. Fields mirror Kafka's topic-level
// configs of the same meaning; a zero field takes Kafka's default.
type LogConfig struct {
	// SegmentBytes is segment.bytes: a segment rolls when the next batch would make it larger.
	SegmentBytes int64
	// SegmentDuration is segment.ms: a segment rolls when the batch being appended is this much
	// newer, by record timestamps, than the segment's first batch (Kafka's rule).
	SegmentDuration time.Duration
	// SegmentIndexBytes is segment.index.bytes: the largest size of each index file (Kafka
	// preallocates it; here an index starts at a page and doubles up to it); a segment rolls
	// when its index is full.
	SegmentIndexBytes int
	// IndexIntervalBytes is index.interval.bytes: bytes of log between offset index entries.
	IndexIntervalBytes int
	// MaxMessageBytes is max.message.bytes: the largest batch, after compression, the log
	// accepts; also the bound on a batch's decompressed size when it is read.
	MaxMessageBytes int
	// TimestampType is message.timestamp.type.
	TimestampType TimestampType
	// Compression is compression.type for batches this log encodes from records.
	Compression Compression
	// Sync is the flush policy (Kafka's flush.ms and flush.messages): it wins over WithSync's,
	// which SyncDefault takes, and SyncAlways when neither is set (see SyncPolicy for the rule).
	// Config returns the policy it resolved to; a topic stores what its TopicConfig said.
	Sync SyncPolicy
	// RetentionDuration is retention.ms: sealed segments whose largest record timestamp is older
	// than this are deleted, oldest first. 0 means DefaultRetentionDuration (7 days); negative
	// keeps records forever (Kafka's -1).
	RetentionDuration time.Duration
	// RetentionBytes is retention.bytes: oldest segments are deleted while the log exceeds this
	// size by at least the segment's size. 0 or negative means no limit (Kafka's default -1).
	RetentionBytes int64
	// FileDeleteDelay is file.delete.delay.ms: how long a deleted segment's files, renamed
	// "*.deleted", stay on disk before they are removed (and never while a reader still reads
	// them). 0 means DefaultFileDeleteDelay (1 minute); negative means at once.
	FileDeleteDelay time.Duration
	// TimestampAfterMax is message.timestamp.after.max.ms: a CreateTime record whose timestamp
	// is more than this ahead of the append time is rejected with ErrInvalidTimestamp. 0 means
	// DefaultTimestampAfterMax (1 hour); negative disables the check.
	TimestampAfterMax time.Duration
	// MinInsyncReplicas is min.insync.replicas: an AcksAll append to a partition whose in-sync
	// replicas, the leader included, are fewer than this fails with ErrNotEnoughReplicas and
	// writes nothing. 0 means Kafka's default, 1.
	MinInsyncReplicas int

	// CleanupPolicy is cleanup.policy: CleanupDelete (the zero value, Kafka's default) deletes
	// old segments by retention; CleanupCompact keeps the latest record of every key instead;
	// CleanupCompactDelete does both (see Log.Compact).
	CleanupPolicy CleanupPolicy
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: the background cleaner cleans a
	// compacted log once its dirty bytes (after the cleaner point) are at least this fraction
	// of its cleanable bytes. 0 means DefaultMinCleanableDirtyRatio (0.5); it must lie in
	// (0, 1].
	MinCleanableDirtyRatio float64
	// MinCompactionLag is min.compaction.lag.ms: a segment whose largest record timestamp is
	// less than this old is not cleaned yet. 0 (Kafka's default) cleans at once; negative is
	// invalid.
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms: a compacted log whose oldest dirty record is
	// older than this is cleaned whatever its dirty ratio, and its active segment rolls once it
	// is this old (Kafka's LogConfig.maxSegmentMs). 0 means no limit (Kafka's Long.MAX_VALUE).
	MaxCompactionLag time.Duration
	// DeleteRetention is delete.retention.ms: a tombstone (a keyed record with a null value)
	// stays readable this long after the clean that first kept it, so that a reader that was
	// behind still sees the delete, and is removed by the first clean after that. 0 means
	// DefaultDeleteRetention (24 hours); negative means none (removed by the next clean).
	DeleteRetention time.Duration

	// maxBatchFloor is, when a live change lowered max.message.bytes (AlterTopicConfig), the
	// largest max.message.bytes the log ran under before, bytes; 0 otherwise. The batches stored
	// under it stay readable: reads and recovery bound a stored batch's size by the larger of
	// it and MaxMessageBytes (see newLiveConfig, readDecompressLimit). Stored with the topic.
	maxBatchFloor int
}

// readDecompressLimit bounds the decompressed size of one stored batch when it is read. Kafka
// applies max.message.bytes to a batch's compressed size, so a batch a broker (or this log under an
// earlier, larger limit) accepted may decompress to far more than max.message.bytes; reads allow
// at least 64 MiB, enough for any batch Kafka's clients produce, still bounded against bombs.
func (c *LogConfig) readDecompressLimit() int { return max(c.MaxMessageBytes, c.maxBatchFloor, 64<<20) }

// resolve returns c as a log runs it, with the sync policy its write path asks: zero fields set to
// Kafka's defaults and Sync resolved against inherited, WithSync's policy (resolveSync). The error
// wraps ErrInvalidConfig for the first field out of range, the sync policy included; c is filled
// in even then. It is where a LogConfig meets the options: OpenLog's resolution, and a store's
// for CreateTopic's check and Topic.Config.
func (c LogConfig) resolve(inherited SyncPolicy) (LogConfig, syncPolicy, error) {
	c = c.withDefaults()
	policy := resolveSync(c.Sync, inherited)
	c.Sync = policy.policy()
	return c, policy, c.validate()
}

// withDefaults returns c with zero fields set to Kafka's defaults; Sync is resolve's.
func (c LogConfig) withDefaults() LogConfig {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentDuration == 0 {
		c.SegmentDuration = DefaultSegmentDuration
	}
	if c.SegmentIndexBytes == 0 {
		c.SegmentIndexBytes = DefaultSegmentIndexBytes
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.RetentionDuration == 0 {
		c.RetentionDuration = DefaultRetentionDuration
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.FileDeleteDelay == 0 {
		c.FileDeleteDelay = DefaultFileDeleteDelay
	}
	if c.TimestampAfterMax == 0 {
		c.TimestampAfterMax = DefaultTimestampAfterMax
	}
	if c.MinInsyncReplicas == 0 {
		c.MinInsyncReplicas = 1
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = DefaultDeleteRetention
	}
	if c.CleanupPolicy.Compact() && c.MaxCompactionLag >= time.Millisecond {
		// Kafka's LogConfig.maxSegmentMs: a compacted log's active segment, which is never
		// cleaned, rolls by max.compaction.lag.ms too, so that no record waits longer than
		// that to become cleanable. (A shorter lag is refused by validate.)
		c.SegmentDuration = min(c.SegmentDuration, c.MaxCompactionLag)
	}
	return c
}

// validate reports the first field out of range, wrapping ErrInvalidConfig.
func (c LogConfig) validate() error {
	bad := func(name string, v any) error {
		return fmt.Errorf("%w: %s = %v", ErrInvalidConfig, name, v)
	}
	switch {
	case c.SegmentBytes < recordbatch.HeaderSize || c.SegmentBytes > 1<<31-1:
		// Positions in the offset index are 32-bit, as in Kafka.
		return bad("SegmentBytes", c.SegmentBytes)
	case c.SegmentDuration < time.Millisecond:
		return bad("SegmentDuration", c.SegmentDuration)
	case c.SegmentIndexBytes < 12*4 || c.SegmentIndexBytes > 1<<31-1:
		return bad("SegmentIndexBytes", c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return bad("IndexIntervalBytes", c.IndexIntervalBytes)
	case c.MaxMessageBytes < recordbatch.HeaderSize:
		return bad("MaxMessageBytes", c.MaxMessageBytes)
	case c.TimestampType != CreateTime && c.TimestampType != LogAppendTime:
		return bad("TimestampType", c.TimestampType)
	case c.Compression < CompressionNone || c.Compression > CompressionZstd:
		return bad("Compression", c.Compression)
	case !(syncPolicy{c.Sync}).valid(): // resolved: never SyncDefault here
		return bad("Sync", c.Sync)
	case c.MinInsyncReplicas < 1:
		return bad("MinInsyncReplicas", c.MinInsyncReplicas)
	case !c.CleanupPolicy.valid():
		return bad("CleanupPolicy", c.CleanupPolicy)
	case !(c.MinCleanableDirtyRatio > 0 && c.MinCleanableDirtyRatio <= 1):
		return bad("MinCleanableDirtyRatio", c.MinCleanableDirtyRatio)
	case c.MinCompactionLag < 0:
		return bad("MinCompactionLag", c.MinCompactionLag)
	case c.MaxCompactionLag < 0 || c.MaxCompactionLag > 0 && c.MaxCompactionLag < time.Millisecond:
		// Kafka's max.compaction.lag.ms is at least 1 ms.
		return bad("MaxCompactionLag", c.MaxCompactionLag)
	}
	return nil
}
