package commitlog

import (
	"fmt"
	"time"
)

// SyncPolicy says when appended bytes are made durable with fdatasync: Kafka's flush.messages
// and flush.ms, as one setting.
//
// A log's policy is set in one chain, resolved once when the log opens: LogConfig.Sync (for a
// topic, TopicConfig.Sync, the same field, stored with the topic as Kafka stores flush.ms with a
// topic's configuration) wins; its zero value, SyncDefault, takes the policy WithSync gave the
// store or OpenLog (Kafka's broker default, log.flush.interval.ms); with neither, SyncAlways. A
// topic stores SyncDefault, not the policy it resolved to, so that it follows WithSync across
// reopens, as a Kafka topic without a flush.ms override follows its broker's default. Unlike
// Kafka, whose default leaves flushing to the operating system and relies on replication, the
// default here is SyncAlways (flush.messages=1). A value other than the constants and
// SyncInterval's returns ErrInvalidConfig from OpenLog, Open and CreateTopic.
//
// "Acknowledged" (Append returned nil) means the records survive a process kill under every
// policy, and a power loss under SyncAlways.
type SyncPolicy int64

const (
	// SyncDefault inherits the policy that WithSync gave the store or OpenLog (SyncAlways when
	// none was given). As WithSync's argument it changes nothing.
	SyncDefault SyncPolicy = 0
	// SyncAlways makes Append return only after its bytes are on stable storage (Kafka's
	// flush.messages=1). Concurrent appends share one fdatasync (group commit).
	SyncAlways SyncPolicy = -1
	// SyncNever leaves flushing to the operating system, to Close and Sync, and to the log's
	// background flush of each segment it rolls (Kafka's default flush.ms, and its flush of a
	// rolled segment, UnifiedLog.roll).
	SyncNever SyncPolicy = -2
)

// SyncInterval returns a policy that flushes in the background every d (Kafka's flush.ms). d must
// be positive; SyncInterval returns SyncAlways for any other d.
func SyncInterval(d time.Duration) SyncPolicy {
	if d <= 0 {
		return SyncAlways
	}
	return SyncPolicy(d)
}

// Interval returns the background flush period of an interval policy, or 0 for the others.
func (p SyncPolicy) Interval() time.Duration {
	if p > 0 {
		return time.Duration(p)
	}
	return 0
}

// String describes the policy: "always", "never", "interval(1s)" or "default".
func (p SyncPolicy) String() string {
	switch {
	case p == SyncDefault:
		return "default"
	case p == SyncAlways:
		return "always"
	case p == SyncNever:
		return "never"
	case p > 0:
		return fmt.Sprintf("interval(%s)", time.Duration(p))
	}
	return fmt.Sprintf("SyncPolicy(%d)", int64(p))
}

// syncPolicy is a log's resolved SyncPolicy, never SyncDefault: what its write path asks when it
// must decide whether to wait for the disk. Every branch on the policy is one of its methods.
type syncPolicy struct{ p SyncPolicy }

// resolveSync is the one place the chain of SyncPolicy is resolved: own (LogConfig.Sync) wins,
// SyncDefault there takes inherited (WithSync's), and SyncDefault in both is SyncAlways. An
// invalid value stays what it is, for LogConfig.validate to refuse.
func resolveSync(own, inherited SyncPolicy) syncPolicy {
	switch {
	case own != SyncDefault:
		return syncPolicy{own}
	case inherited != SyncDefault:
		return syncPolicy{inherited}
	}
	return syncPolicy{SyncAlways}
}

// policy returns the resolved SyncPolicy, as LogConfig.Sync shows it.
func (s syncPolicy) policy() SyncPolicy { return s.p }

// valid reports whether s is one of the policies: SyncAlways, SyncNever or an interval.
func (s syncPolicy) valid() bool { return s.p >= SyncNever && s.p != SyncDefault }

// appendWaits reports whether an append waits for the fsync that makes it durable before it
// returns (SyncAlways): it then joins the group commit, and may be staged for its leader's write.
func (s syncPolicy) appendWaits() bool { return s.p == SyncAlways }

// rollSyncs reports whether a roll makes the old segment, its indexes and the directory durable
// before the new segment takes appends, and advances the recovery point at once (SyncAlways). A
// sealed segment can then never hold a torn write. Under the other policies a roll hands that
// flush to the flusher (see log_flush.go).
func (s syncPolicy) rollSyncs() bool { return s.p == SyncAlways }

// runsFlusher reports whether the log runs a flusher goroutine, which flushes rolled segments and
// makes the spares of the next roll (SyncNever and SyncInterval): the policies under which a roll
// does not sync. Sync under them also checkpoints the recovery point that flush reached.
func (s syncPolicy) runsFlusher() bool { return !s.rollSyncs() }

// flushInterval returns how often the flusher calls Sync: SyncInterval's period, or 0 for never.
func (s syncPolicy) flushInterval() time.Duration { return s.p.Interval() }
