package commitlog

import "sync/atomic"

// logHooks is what the owner of a log (its Partition) asks of it, as callbacks, so that the log
// holds no pointer up and keeps no state of its owner's.
type logHooks struct {
	// checkpointed runs after every successful write of the log's state file, under the log's
	// state lock, so that the owner's own checkpoint (the partition's high watermark) is written
	// as often as the log's; its error is handled as the state write's own.
	checkpointed func() error
	// retentionLimit returns the offset that retention must not delete past, the high watermark
	// of a replicated partition (Kafka's deleteOldSegments keeps the log start offset at or below
	// it), or -1 for none.
	retentionLimit func() int64
	// cleaned runs after a clean moved the log's cleaner point to cleanerPoint, for the owner
	// to checkpoint it (the store's cleaner-offset-checkpoint); an error is logged, as the
	// point is only where the next clean starts.
	cleaned func(cleanerPoint int64) error
}

// logOwner is a log's link to its owner: the owner's callbacks, given once after open (set), and
// the replication lines of an earlier version's state file that the log writes back until the
// owner holds them (see legacyReplication). Its zero value has no owner and no lines.
type logOwner struct {
	hooks  atomic.Pointer[logHooks]
	legacy atomic.Pointer[legacyReplication]
}

// set gives the log its owner's callbacks. Called once, by newPartition, before the store starts
// its background retention.
func (o *logOwner) set(h logHooks) { o.hooks.Store(&h) }

// checkpointed runs the owner's checkpointed hook, if any. Callers hold the log's state file lock (stateFile.mu).
func (o *logOwner) checkpointed() error {
	if h := o.hooks.Load(); h != nil && h.checkpointed != nil {
		return h.checkpointed()
	}
	return nil
}

// cleaned runs the owner's cleaned hook, if any.
func (o *logOwner) cleaned(cleanerPoint int64) error {
	if h := o.hooks.Load(); h != nil && h.cleaned != nil {
		return h.cleaned(cleanerPoint)
	}
	return nil
}

// retentionLimit returns the owner's retention limit, -1 when it has none. A log without an owner
// that carries an earlier version's replication lines (opened on its own from such a partition
// folder) keeps their high watermark as its limit, as that version's log did.
func (o *logOwner) retentionLimit() int64 {
	if h := o.hooks.Load(); h != nil && h.retentionLimit != nil {
		return h.retentionLimit()
	}
	if r := o.legacy.Load(); r != nil {
		return r.highWatermark
	}
	return -1
}

// cutLegacy keeps the carried high watermark within a log cut to end offset end (TruncateTo, a
// follower's start over), as that version's log did, so that the partition never reopens
// readable past the cut.
func (o *logOwner) cutLegacy(end int64) {
	if r := o.legacy.Load(); r != nil && r.highWatermark > end {
		c := *r
		c.highWatermark = end
		o.legacy.CompareAndSwap(r, &c)
	}
}

// carry keeps the replication lines the state file held at open, to write back with every state.
func (o *logOwner) carry(r legacyReplication) {
	if r.present {
		o.legacy.Store(&r)
	}
}

// legacyReplication returns the replication state that the state file held at open, written by
// an earlier version (see legacyReplication), for the partition to take over; zero once dropped.
func (o *logOwner) legacyReplication() legacyReplication {
	if r := o.legacy.Load(); r != nil {
		return *r
	}
	return legacyReplication{}
}

// dropLegacyReplication stops writing back the replication lines the state file held at open:
// the partition holds them in its own checkpoint now. The next state written is without them.
func (o *logOwner) dropLegacyReplication() { o.legacy.Store(nil) }
