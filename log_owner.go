package commitlog

// logHooks is what the owner of a log (its Partition) asks of it, as callbacks given once after
// open (setHooks), so that the log holds no pointer up and keeps no state of its owner's.
type logHooks struct {
	// checkpointed runs after every successful write of the log's state file, under the log's
	// state lock, so that the owner's own checkpoint (the partition's high watermark) is written
	// as often as the log's; its error is handled as the state write's own.
	checkpointed func() error
	// retentionLimit returns the offset that retention must not delete past, the high watermark
	// of a replicated partition (Kafka's deleteOldSegments keeps the log start offset at or below
	// it), or -1 for none.
	retentionLimit func() int64
}

// setHooks gives the log its owner's callbacks. Called once, by newPartition, before the store
// starts its background retention.
func (l *Log) setHooks(h logHooks) {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	l.hooks.Store(&h)
}

// ownerCheckpointed runs the owner's checkpointed hook, if any. Callers hold stateMu.
func (l *Log) ownerCheckpointed() error {
	if h := l.hooks.Load(); h != nil && h.checkpointed != nil {
		return h.checkpointed()
	}
	return nil
}

// retentionLimit returns the owner's retention limit, -1 when it has none.
func (l *Log) retentionLimit() int64 {
	if h := l.hooks.Load(); h != nil && h.retentionLimit != nil {
		return h.retentionLimit()
	}
	return -1
}

// legacyReplication returns the replication state that the state file held at open, written by
// an earlier version (see legacyReplication), for the partition to take over; zero once
// dropLegacyReplication ran.
func (l *Log) legacyReplication() legacyReplication {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	return l.legacy
}

// dropLegacyReplication stops writing back the replication lines the state file held at open
// (see legacyReplication): the partition holds them in its own checkpoint now. The next state
// written is without them.
func (l *Log) dropLegacyReplication() {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	l.legacy = legacyReplication{}
}
