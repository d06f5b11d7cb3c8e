package recordbatch

// HasDeleteHorizon reports whether the delete horizon bit (bit 6, Kafka's
// DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK, KIP-534) is set: the batch's BaseTimestamp then holds
// the delete horizon, and its records' timestamp deltas are relative to it.
func (a Attributes) HasDeleteHorizon() bool { return a&deleteHorizonBit != 0 }

// WithDeleteHorizon returns a with the delete horizon bit set (on) or cleared.
func (a Attributes) WithDeleteHorizon(on bool) Attributes {
	if on {
		return a | deleteHorizonBit
	}
	return a &^ deleteHorizonBit
}

// DeleteHorizon returns the batch's delete horizon in ms since the Unix epoch, and whether it has
// one (KIP-534): the time from which the log cleaner removes the batch's tombstones. Kafka's
// cleaner sets it, to the clean's time plus delete.retention.ms, the first time it keeps a
// tombstone of the batch (MemoryRecords.filterTo); it is the BaseTimestamp field then.
func (h *Header) DeleteHorizon() (ms int64, ok bool) {
	if !h.Attributes.HasDeleteHorizon() {
		return 0, false
	}
	return h.BaseTimestamp, true
}
