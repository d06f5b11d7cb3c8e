package commitlog

import "fmt"

// AlterTopicConfig replaces the configuration of the topic name with cfg, as Kafka's
// AlterConfigs does for a topic (and IncrementalAlterConfigs, given a cfg built from
// Topic.StoredConfig with SetKafkaConfig and ResetKafkaConfig). cfg is checked as CreateTopic
// checks it, stored with the topic as given (zero fields take the defaults; it survives a
// reopen) and applied to the topic's open logs at once, as Kafka's dynamic topic config update
// (UnifiedLog.updateConfig) applies it:
//
//   - retention.ms, retention.bytes and cleanup.policy's delete: from the next retention check
//     (ApplyRetention and the store's background check);
//   - segment.bytes, segment.ms and index.interval.bytes: from the next append, the active
//     segment included (it rolls by the new rules); segment.index.bytes from the next segment
//     (an index already made keeps its size, as in Kafka);
//   - max.message.bytes, message.timestamp.type, message.timestamp.after.max.ms,
//     compression.type and min.insync.replicas: from the next append; appends already under way
//     finish under the values they started with. Batches stored under a larger
//     max.message.bytes stay readable, after a reopen too (the store keeps the larger bound);
//   - cleanup.policy, min.cleanable.dirty.ratio, min.compaction.lag.ms,
//     max.compaction.lag.ms and delete.retention.ms: from the next clean (a compacted topic
//     refuses keyless records from the next append);
//   - file.delete.delay.ms: for the segments deleted from then on.
//
// Sync (Kafka's flush.ms and flush.messages) cannot change on a live topic here: its policy
// decides how the open logs write (group commit, a background flusher). A cfg whose Sync
// resolves, against the store's WithSync, to another policy than the topic runs is
// ErrInvalidConfig, and changes nothing; SyncDefault and the policy itself are both accepted.
//
// Returns ErrUnknownTopic for a topic the store does not hold (the internal topics
// __consumer_offsets and __transaction_state included: they belong to the store's coordinators,
// and are not its topics, as for Topic and DeleteTopic); ErrInvalidConfig for a value out of
// range, for cfg.Partitions other than the topic's partition count (CreatePartitions adds
// partitions) and for a change of Sync; ErrClosed after Close; the file system's error when the
// configurations cannot be saved. On any error nothing is changed. Safe to call while the
// topic's partitions are appended to and read.
func (s *Store) AlterTopicConfig(name string, cfg TopicConfig) error {
	resolved, _, err := cfg.LogConfig.resolve(s.o.sync)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	cur := t.state.Load()
	n := int32(len(cur.partitions))
	if cfg.Partitions != n {
		return fmt.Errorf("%w: Partitions = %d: topic %s has %d partitions (CreatePartitions adds partitions)", ErrInvalidConfig, cfg.Partitions, name, n)
	}
	if resolved.Sync != cur.cfg.Sync {
		return fmt.Errorf("%w: topic %s: Sync (flush.ms, flush.messages) %v cannot replace %v on a live topic", ErrInvalidConfig, name, resolved.Sync, cur.cfg.Sync)
	}
	// Batches stored under a larger max.message.bytes must stay readable: the reads' bound keeps
	// the largest the topic ran under (see LogConfig.maxBatchFloor).
	cfg.maxBatchFloor = 0
	if floor := max(cur.cfg.MaxMessageBytes, cur.cfg.maxBatchFloor); floor > resolved.MaxMessageBytes {
		cfg.maxBatchFloor = floor
	}
	resolved.maxBatchFloor = cfg.maxBatchFloor

	prev, had := s.configs[name]
	s.configs[name] = cfg
	if err := s.saveConfigs(); err != nil {
		if had {
			s.configs[name] = prev
		} else {
			delete(s.configs, name)
		}
		return err
	}
	for _, p := range cur.partitions {
		p.log.reconfigure(resolved)
	}
	t.state.Store(&topicState{cfg: TopicConfig{Partitions: n, LogConfig: resolved}, stored: cfg, partitions: cur.partitions})
	return nil
}

// reconfigure makes cfg, resolved (defaults filled in, Sync the log's own policy), the log's
// configuration from now on: appends, rolls, retention, cleans and reads take it from their next
// step. The active segment takes the new roll rules and read bounds; sealed segments keep
// theirs, under which their batches were written. Appends under way finish under the old
// configuration (the staged ones are written first). Nothing on disk changes.
func (l *Log) reconfigure(cfg LogConfig) {
	l.lockWriters()
	defer l.unlockWriters()
	next := newLiveConfig(cfg)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live.Store(next)
	if !l.closed {
		l.active().SetConfig(&next.seg)
	}
}
