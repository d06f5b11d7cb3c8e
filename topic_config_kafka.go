package commitlog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// kafkaNever is Kafka's Long.MAX_VALUE, the value of a ms or count config that never applies
// (flush.ms, flush.messages, max.compaction.lag.ms, message.timestamp.after.max.ms).
const kafkaNever = math.MaxInt64

// kafkaTopicConfig is one Kafka topic config that TopicConfig models: how its effective value is
// shown, how a value is parsed into the config, whether the config sets it, and its reset.
type kafkaTopicConfig struct {
	name string
	// get returns the effective value, defaults filled in, in Kafka's format.
	get func(c *TopicConfig) string
	// set parses value (Kafka's parse and range) into c; the error says why, without the name.
	set func(c *TopicConfig, value string) error
	// isSet reports whether c sets the config (a field not at its zero value).
	isSet func(c *TopicConfig) bool
	// reset returns the config to its default (zeroes its field).
	reset func(c *TopicConfig)
}

// kafkaTopicConfigs returns the Kafka topic configs TopicConfig models, by name.
func kafkaTopicConfigs() []kafkaTopicConfig {
	return []kafkaTopicConfig{
		{
			name:  "cleanup.policy",
			get:   func(c *TopicConfig) string { return c.CleanupPolicy.String() },
			set:   setCleanupPolicy,
			isSet: func(c *TopicConfig) bool { return c.CleanupPolicy != CleanupDelete },
			reset: func(c *TopicConfig) { c.CleanupPolicy = CleanupDelete },
		},
		{
			name:  "compression.type",
			get:   func(c *TopicConfig) string { return kafkaCompressionName(c.Compression) },
			set:   setCompression,
			isSet: func(c *TopicConfig) bool { return c.Compression != CompressionNone },
			reset: func(c *TopicConfig) { c.Compression = CompressionNone },
		},
		{
			name: "delete.retention.ms",
			get:  func(c *TopicConfig) string { return offMsString(c.DeleteRetention, DefaultDeleteRetention) },
			set: func(c *TopicConfig, v string) (err error) {
				c.DeleteRetention, err = parseZeroOffMs(v)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.DeleteRetention != 0 },
			reset: func(c *TopicConfig) { c.DeleteRetention = 0 },
		},
		{
			name: "file.delete.delay.ms",
			get:  func(c *TopicConfig) string { return offMsString(c.FileDeleteDelay, DefaultFileDeleteDelay) },
			set: func(c *TopicConfig, v string) (err error) {
				c.FileDeleteDelay, err = parseZeroOffMs(v)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.FileDeleteDelay != 0 },
			reset: func(c *TopicConfig) { c.FileDeleteDelay = 0 },
		},
		{
			name:  "flush.messages",
			get:   func(c *TopicConfig) string { return flushValues(c.Sync).messages },
			set:   setFlushMessages,
			isSet: func(c *TopicConfig) bool { return c.Sync == SyncAlways || c.Sync == SyncNever },
			reset: func(c *TopicConfig) {
				if c.Sync == SyncAlways || c.Sync == SyncNever {
					c.Sync = SyncDefault
				}
			},
		},
		{
			name:  "flush.ms",
			get:   func(c *TopicConfig) string { return flushValues(c.Sync).ms },
			set:   setFlushMs,
			isSet: func(c *TopicConfig) bool { return c.Sync.Interval() > 0 },
			reset: func(c *TopicConfig) {
				if c.Sync.Interval() > 0 {
					c.Sync = SyncDefault
				}
			},
		},
		{
			name: "index.interval.bytes",
			get: func(c *TopicConfig) string {
				return strconv.Itoa(cmp.Or(c.IndexIntervalBytes, DefaultIndexIntervalBytes))
			},
			set: func(c *TopicConfig, v string) error {
				n, err := parseKafkaInt(v, 0)
				// Kafka's 0 indexes every batch; so does 1 (every batch is larger), and 0 here
				// is the default.
				c.IndexIntervalBytes = max(n, 1)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.IndexIntervalBytes != 0 },
			reset: func(c *TopicConfig) { c.IndexIntervalBytes = 0 },
		},
		{
			name: "max.compaction.lag.ms",
			get: func(c *TopicConfig) string {
				if c.MaxCompactionLag <= 0 {
					return strconv.FormatInt(kafkaNever, 10)
				}
				return strconv.FormatInt(c.MaxCompactionLag.Milliseconds(), 10)
			},
			set: func(c *TopicConfig, v string) error {
				ms, err := parseKafkaLong(v, 1)
				if err != nil {
					return err
				}
				c.MaxCompactionLag = 0 // no limit, for Long.MAX_VALUE and anything a Duration cannot hold
				if ms < maxDurationMs {
					c.MaxCompactionLag = time.Duration(ms) * time.Millisecond
				}
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.MaxCompactionLag != 0 },
			reset: func(c *TopicConfig) { c.MaxCompactionLag = 0 },
		},
		{
			name: "max.message.bytes",
			get:  func(c *TopicConfig) string { return strconv.Itoa(cmp.Or(c.MaxMessageBytes, DefaultMaxMessageBytes)) },
			set: func(c *TopicConfig, v string) (err error) {
				c.MaxMessageBytes, err = parseKafkaInt(v, recordbatch.HeaderSize)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.MaxMessageBytes != 0 },
			reset: func(c *TopicConfig) { c.MaxMessageBytes = 0 },
		},
		{
			name: "message.timestamp.after.max.ms",
			get: func(c *TopicConfig) string {
				if c.TimestampAfterMax < 0 {
					return strconv.FormatInt(kafkaNever, 10)
				}
				return strconv.FormatInt(cmp.Or(c.TimestampAfterMax, DefaultTimestampAfterMax).Milliseconds(), 10)
			},
			set: func(c *TopicConfig, v string) error {
				ms, err := parseKafkaLong(v, 0)
				switch {
				case err != nil:
					return err
				case ms == 0:
					return errors.New("0 (no timestamp ahead of the append time) cannot be kept: a zero TimestampAfterMax is the default, 1 hour")
				case ms >= maxDurationMs:
					c.TimestampAfterMax = -1 // Long.MAX_VALUE, Kafka's default: no check
				default:
					c.TimestampAfterMax = time.Duration(ms) * time.Millisecond
				}
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.TimestampAfterMax != 0 },
			reset: func(c *TopicConfig) { c.TimestampAfterMax = 0 },
		},
		{
			name: "message.timestamp.type",
			get: func(c *TopicConfig) string {
				if c.TimestampType == LogAppendTime {
					return "LogAppendTime"
				}
				return "CreateTime"
			},
			set: func(c *TopicConfig, v string) error {
				switch strings.TrimSpace(v) {
				case "CreateTime":
					c.TimestampType = CreateTime
				case "LogAppendTime":
					c.TimestampType = LogAppendTime
				default:
					return errors.New("String must be one of: CreateTime, LogAppendTime")
				}
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.TimestampType != CreateTime },
			reset: func(c *TopicConfig) { c.TimestampType = CreateTime },
		},
		{
			name: "min.cleanable.dirty.ratio",
			get: func(c *TopicConfig) string {
				return javaDouble(cmp.Or(c.MinCleanableDirtyRatio, DefaultMinCleanableDirtyRatio))
			},
			set: func(c *TopicConfig, v string) error {
				r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				switch {
				case err != nil:
					//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
					return errors.New("Not a number of type DOUBLE")
				case r == 0:
					return errors.New("0 cannot be kept: a zero MinCleanableDirtyRatio is the default, 0.5; the smallest ratio is above 0")
				case !(r > 0 && r <= 1):
					//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
					return errors.New("Value must be no more than 1")
				}
				c.MinCleanableDirtyRatio = r
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.MinCleanableDirtyRatio != 0 },
			reset: func(c *TopicConfig) { c.MinCleanableDirtyRatio = 0 },
		},
		{
			name: "min.compaction.lag.ms",
			get:  func(c *TopicConfig) string { return strconv.FormatInt(c.MinCompactionLag.Milliseconds(), 10) },
			set: func(c *TopicConfig, v string) (err error) {
				c.MinCompactionLag, err = parseKafkaMs(v, 0)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.MinCompactionLag != 0 },
			reset: func(c *TopicConfig) { c.MinCompactionLag = 0 },
		},
		{
			name: "min.insync.replicas",
			get:  func(c *TopicConfig) string { return strconv.Itoa(cmp.Or(c.MinInsyncReplicas, 1)) },
			set: func(c *TopicConfig, v string) (err error) {
				c.MinInsyncReplicas, err = parseKafkaInt(v, 1)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.MinInsyncReplicas != 0 },
			reset: func(c *TopicConfig) { c.MinInsyncReplicas = 0 },
		},
		{
			name: "retention.bytes",
			get: func(c *TopicConfig) string {
				if c.RetentionBytes <= 0 {
					return "-1"
				}
				return strconv.FormatInt(c.RetentionBytes, 10)
			},
			set: func(c *TopicConfig, v string) error {
				n, err := parseKafkaLong(v, math.MinInt64)
				switch {
				case err != nil:
					return err
				case n == 0:
					return errors.New("0 (delete every sealed segment) cannot be kept: a zero RetentionBytes is the default, no limit")
				}
				c.RetentionBytes = max(n, -1)
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.RetentionBytes != 0 },
			reset: func(c *TopicConfig) { c.RetentionBytes = 0 },
		},
		{
			name: "retention.ms",
			get: func(c *TopicConfig) string {
				if c.RetentionDuration < 0 {
					return "-1"
				}
				return strconv.FormatInt(cmp.Or(c.RetentionDuration, DefaultRetentionDuration).Milliseconds(), 10)
			},
			set: func(c *TopicConfig, v string) error {
				ms, err := parseKafkaLong(v, -1)
				switch {
				case err != nil:
					return err
				case ms == 0:
					return errors.New("0 (delete every sealed segment) cannot be kept: a zero RetentionDuration is the default, 7 days")
				case ms == -1 || ms >= maxDurationMs:
					c.RetentionDuration = -1 // forever
				default:
					c.RetentionDuration = time.Duration(ms) * time.Millisecond
				}
				return nil
			},
			isSet: func(c *TopicConfig) bool { return c.RetentionDuration != 0 },
			reset: func(c *TopicConfig) { c.RetentionDuration = 0 },
		},
		{
			name: "segment.bytes",
			get:  func(c *TopicConfig) string { return strconv.FormatInt(cmp.Or(c.SegmentBytes, DefaultSegmentBytes), 10) },
			set: func(c *TopicConfig, v string) error {
				n, err := parseKafkaInt(v, recordbatch.HeaderSize)
				c.SegmentBytes = int64(n)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.SegmentBytes != 0 },
			reset: func(c *TopicConfig) { c.SegmentBytes = 0 },
		},
		{
			name: "segment.index.bytes",
			get: func(c *TopicConfig) string {
				return strconv.Itoa(cmp.Or(c.SegmentIndexBytes, DefaultSegmentIndexBytes))
			},
			set: func(c *TopicConfig, v string) (err error) {
				c.SegmentIndexBytes, err = parseKafkaInt(v, 12*4)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.SegmentIndexBytes != 0 },
			reset: func(c *TopicConfig) { c.SegmentIndexBytes = 0 },
		},
		{
			name: "segment.ms",
			get: func(c *TopicConfig) string {
				return strconv.FormatInt(cmp.Or(c.SegmentDuration, DefaultSegmentDuration).Milliseconds(), 10)
			},
			set: func(c *TopicConfig, v string) (err error) {
				c.SegmentDuration, err = parseKafkaMs(v, 1)
				return err
			},
			isSet: func(c *TopicConfig) bool { return c.SegmentDuration != 0 },
			reset: func(c *TopicConfig) { c.SegmentDuration = 0 },
		},
	}
}

// kafkaTopicConfigNamed returns the modelled config of that name, or ErrUnknownConfig.
func kafkaTopicConfigNamed(name string) (kafkaTopicConfig, error) {
	for _, k := range kafkaTopicConfigs() {
		if k.name == name {
			return k, nil
		}
	}
	return kafkaTopicConfig{}, fmt.Errorf("%w: %q", ErrUnknownConfig, name)
}

// KafkaConfigs returns the topic's effective configuration under Kafka's topic config names and
// in Kafka's value formats, as Kafka's DescribeConfigs (kafka-configs --describe --all) shows a
// topic: every config TopicConfig models, defaults filled in. The names are cleanup.policy,
// compression.type, delete.retention.ms, file.delete.delay.ms, flush.messages, flush.ms,
// index.interval.bytes, max.compaction.lag.ms, max.message.bytes,
// message.timestamp.after.max.ms, message.timestamp.type, min.cleanable.dirty.ratio,
// min.compaction.lag.ms, min.insync.replicas, retention.bytes, retention.ms, segment.bytes,
// segment.index.bytes and segment.ms. Durations are in ms and sizes in bytes, as Kafka's are;
// Partitions is not a topic config (it is the topic's partition count).
//
// The values follow Kafka's, with these mappings of LogConfig's own encodings: a negative
// RetentionDuration is retention.ms -1, a RetentionBytes of 0 or below retention.bytes -1; a
// negative DeleteRetention or FileDeleteDelay (none, at once) is 0 ms; a negative
// TimestampAfterMax (no check) and a MaxCompactionLag of 0 (no limit) are Kafka's
// Long.MAX_VALUE, 9223372036854775807; Compression none is "producer", Kafka's default (a raw
// batch keeps its producer's codec under every compression.type here: the log never
// recompresses; records the log encodes itself are compressed with the codec named); a ratio is
// in Java's Double.toString form for ordinary values ("0.5", "1.0"). Sync is flush.messages and
// flush.ms: SyncAlways is flush.messages 1 (flush.ms Long.MAX_VALUE), SyncInterval(d) flush.ms
// d (flush.messages Long.MAX_VALUE), SyncNever both Long.MAX_VALUE; SyncDefault, which takes the
// store's WithSync, is shown as the policy without WithSync, SyncAlways (Topic.Config has the
// policy resolved against the store's). message.timestamp.after.max.ms defaults to 1 hour here
// (DefaultTimestampAfterMax), where Kafka's default is Long.MAX_VALUE.
//
// Called on Topic.Config, whose values are the ones the log runs, segment.ms of a compacted
// topic with a max.compaction.lag.ms is the smaller of the two (Kafka's LogConfig.maxSegmentMs);
// called on Topic.StoredConfig it is the value set. Which values the topic sets itself, and
// which are defaults, is KafkaConfigOverrides.
func (c TopicConfig) KafkaConfigs() map[string]string {
	defs := kafkaTopicConfigs()
	m := make(map[string]string, len(defs))
	for _, k := range defs {
		m[k.name] = k.get(&c)
	}
	return m
}

// KafkaConfigOverrides returns, of KafkaConfigs, the configs c sets itself, under Kafka's names
// and formats: what DescribeConfigs reports with source DYNAMIC_TOPIC_CONFIG (kafka-configs
// --describe without --all). The others are defaults (DEFAULT_CONFIG). Call it on
// Topic.StoredConfig, the configuration as given: Topic.Config has every default filled in, so
// every config reads as set there.
//
// TopicConfig keeps no flag of what was set: a field at its zero value is a default. For the
// fields whose zero value is also a value one can set (cleanup.policy delete,
// message.timestamp.type CreateTime, compression.type producer, min.compaction.lag.ms 0,
// max.compaction.lag.ms Long.MAX_VALUE), setting that value is not told apart from the
// default, which it equals. Sync SyncAlways and SyncNever are flush.messages overrides,
// SyncInterval a flush.ms override.
func (c TopicConfig) KafkaConfigOverrides() map[string]string {
	m := map[string]string{}
	for _, k := range kafkaTopicConfigs() {
		if k.isSet(&c) {
			m[k.name] = k.get(&c)
		}
	}
	return m
}

// SetKafkaConfig returns c with the Kafka topic config name set to value, parsed and checked as
// Kafka's broker does (its ConfigDef types and validators: surrounding spaces ignored, INT
// configs within 32 bits, LONG within 64) within the ranges LogConfig allows, as CreateTopics,
// AlterConfigs and IncrementalAlterConfigs (SET) give a config. KafkaConfigs lists the names; ms
// values are durations in milliseconds, sizes bytes. c itself is not changed; an error returns
// c as it was.
//
// ErrUnknownConfig (which wraps ErrInvalidConfig) for a name TopicConfig does not model.
// ErrInvalidConfig, naming the config and the value, for a value Kafka refuses or LogConfig
// cannot hold: segment.bytes and max.message.bytes below 61 (a record batch header),
// segment.index.bytes below 48; and, where LogConfig's zero value means the default, Kafka's
// values that would need it: retention.ms 0, retention.bytes 0, message.timestamp.after.max.ms
// 0, min.cleanable.dirty.ratio 0. Values mapped to LogConfig's own encodings: retention.ms -1,
// or one too large for a time.Duration, is a negative RetentionDuration (forever); a negative
// retention.bytes is -1 (no limit); delete.retention.ms and file.delete.delay.ms 0 are -1 (none,
// at once); max.compaction.lag.ms and message.timestamp.after.max.ms past what a time.Duration
// holds (Long.MAX_VALUE, their Kafka default) are no limit and no check; index.interval.bytes 0
// is 1 (both index every batch); compression.type producer and uncompressed are Compression
// none.
//
// flush.messages and flush.ms are one setting here, Sync: flush.messages 1 is SyncAlways and
// Long.MAX_VALUE turns SyncAlways (or SyncDefault) into SyncNever, other counts being
// ErrInvalidConfig (no policy flushes every N messages); flush.ms 0 is SyncAlways, d in between
// SyncInterval(d) unless Sync is SyncAlways (flush.messages 1 flushes every append and wins, as
// in Kafka), Long.MAX_VALUE turns an interval into SyncNever. A cross-config check of Kafka's
// (min.compaction.lag.ms not above max.compaction.lag.ms) is not made.
func (c TopicConfig) SetKafkaConfig(name, value string) (TopicConfig, error) {
	k, err := kafkaTopicConfigNamed(name)
	if err != nil {
		return c, err
	}
	out := c
	if err := k.set(&out, value); err != nil {
		return c, fmt.Errorf("%w: invalid value %q for configuration %s: %s", ErrInvalidConfig, value, name, err.Error())
	}
	return out, nil
}

// ResetKafkaConfig returns c with the Kafka topic config name back at its default (its field at
// the zero value), as IncrementalAlterConfigs' DELETE does; c itself is not changed. For
// flush.messages and flush.ms, which are one setting (Sync), it resets Sync to SyncDefault when
// the policy is that config's (SyncAlways and SyncNever for flush.messages, an interval for
// flush.ms) and leaves it otherwise. ErrUnknownConfig (which wraps ErrInvalidConfig) for a
// name TopicConfig does not model.
func (c TopicConfig) ResetKafkaConfig(name string) (TopicConfig, error) {
	k, err := kafkaTopicConfigNamed(name)
	if err != nil {
		return c, err
	}
	k.reset(&c)
	return c, nil
}

// setCleanupPolicy parses Kafka's cleanup.policy list: compact, delete, or both.
func setCleanupPolicy(c *TopicConfig, v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("empty list: give compact, delete or both")
	}
	p, err := ParseCleanupPolicy(v)
	if err != nil {
		return errors.New("every item must be compact or delete")
	}
	c.CleanupPolicy = p
	return nil
}

// kafkaCompressionName is Kafka's topic compression.type for c: "producer" for none (see
// KafkaConfigs), else the codec's name.
func kafkaCompressionName(c Compression) string {
	if c == CompressionNone {
		return "producer"
	}
	return c.String()
}

// setCompression parses Kafka's topic compression.type (BrokerCompressionType's names).
func setCompression(c *TopicConfig, v string) error {
	switch v = strings.TrimSpace(v); v {
	case "producer", "uncompressed":
		c.Compression = CompressionNone
		return nil
	case "gzip", "snappy", "lz4", "zstd":
		comp, err := ParseCompression(v)
		c.Compression = comp
		return err
	}
	return errors.New("String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
}

// flushPair is a Sync policy as Kafka's flush.messages and flush.ms.
type flushPair struct{ messages, ms string }

// flushValues returns the two configs of policy p, SyncDefault taken as SyncAlways.
func flushValues(p SyncPolicy) flushPair {
	never := strconv.FormatInt(kafkaNever, 10)
	switch p = resolveSync(p, SyncDefault).policy(); {
	case p == SyncAlways:
		return flushPair{messages: "1", ms: never}
	case p.Interval() > 0:
		return flushPair{messages: never, ms: strconv.FormatInt(p.Interval().Milliseconds(), 10)}
	}
	return flushPair{messages: never, ms: never}
}

// setFlushMessages parses flush.messages into Sync (see SetKafkaConfig).
func setFlushMessages(c *TopicConfig, v string) error {
	n, err := parseKafkaLong(v, 1)
	switch {
	case err != nil:
		return err
	case n == 1:
		c.Sync = SyncAlways
	case n == kafkaNever:
		if c.Sync == SyncAlways || c.Sync == SyncDefault {
			c.Sync = SyncNever
		}
	default:
		return errors.New("only 1 (flush every append, SyncAlways) and 9223372036854775807 (no count) can be kept: SyncPolicy has no message count")
	}
	return nil
}

// setFlushMs parses flush.ms into Sync (see SetKafkaConfig).
func setFlushMs(c *TopicConfig, v string) error {
	ms, err := parseKafkaLong(v, 0)
	switch {
	case err != nil:
		return err
	case ms == 0:
		c.Sync = SyncAlways
	case ms >= maxDurationMs:
		if c.Sync.Interval() > 0 {
			c.Sync = SyncNever
		}
	case c.Sync != SyncAlways:
		c.Sync = SyncInterval(time.Duration(ms) * time.Millisecond)
	}
	return nil
}

// parseKafkaLong parses a Kafka LONG config value (spaces around it ignored) of at least least.
func parseKafkaLong(v string, least int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
		return 0, errors.New("Not a number of type LONG")
	}
	if n < least {
		//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
		return 0, fmt.Errorf("Value must be at least %d", least)
	}
	return n, nil
}

// parseKafkaInt parses a Kafka INT config value (32 bits; spaces around it ignored) of at least
// least.
func parseKafkaInt(v string, least int) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
		return 0, errors.New("Not a number of type INT")
	}
	if n < int64(least) {
		//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
		return 0, fmt.Errorf("Value must be at least %d", least)
	}
	return int(n), nil
}

// parseKafkaMs parses a LONG of ms, at least least, into a duration; values past what a
// time.Duration holds are refused.
func parseKafkaMs(v string, least int64) (time.Duration, error) {
	ms, err := parseKafkaLong(v, least)
	if err != nil {
		return 0, err
	}
	if ms > maxDurationMs {
		//lint:ignore ST1005 Kafka's ConfigDef message, verbatim
		return 0, fmt.Errorf("Value must be no more than %d", maxDurationMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// parseZeroOffMs parses a LONG of ms, at least 0, where Kafka's 0 is LogConfig's -1 (none; its
// zero is the default).
func parseZeroOffMs(v string) (time.Duration, error) {
	d, err := parseKafkaMs(v, 0)
	if err == nil && d == 0 {
		d = -1
	}
	return d, err
}

// offMsString is the ms value of a duration whose zero means def and whose negative values mean
// none, Kafka's 0.
func offMsString(d, def time.Duration) string {
	if d < 0 {
		return "0"
	}
	return strconv.FormatInt(cmp.Or(d, def).Milliseconds(), 10)
}

// javaDouble formats f as Java's Double.toString does for values written in decimal (a ".0"
// on whole numbers: "1.0", "0.5"), as Kafka shows a DOUBLE config.
func javaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEN") {
		s += ".0"
	}
	return s
}
