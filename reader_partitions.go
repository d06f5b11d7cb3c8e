package commitlog

import "slices"

// The partition set of a group member's readers changes with each rebalance: these add and
// remove partitions of a reader, which NewReader fixes for a reader of the public API.

// addPartition makes r read p from the committed position c, or from the reader's start
// (ReaderConfig.Start) when c is nil. A partition r reads already is left as it is. ErrClosed
// after Close.
func (r *Reader) addPartition(p *Partition, c *committedPosition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		return ErrClosed
	}
	if slices.ContainsFunc(r.parts, func(rp *readerPartition) bool { return rp.p == p }) {
		return nil
	}
	rp := &readerPartition{p: p, truncGen: p.log.truncGen.Load()}
	if c != nil {
		// As for a named reader's commit: validated against the log's epochs when it has one.
		rp.pos, rp.epoch, rp.validate = c.offset, c.leaderEpoch, c.leaderEpoch != UndefinedEpoch
	} else {
		off, err := r.startOffset(p)
		if err != nil {
			return err
		}
		rp.setPosition(off)
	}
	r.parts = append(r.parts, rp)
	r.wakeMoved()
	return nil
}

// removePartition stops r reading partition id, dropping what it fetched of it.
func (r *Reader) removePartition(id int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.parts, func(rp *readerPartition) bool { return rp.p.id == id })
	if i < 0 {
		return
	}
	r.parts = slices.Delete(r.parts, i, i+1)
	if r.cursor >= len(r.parts) {
		r.cursor = 0
	}
}

// partitionCount returns how many partitions r reads.
func (r *Reader) partitionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.parts)
}

// committable returns r's position in each partition it reads, with the leader epoch of the
// record before it: what a commit stores.
func (r *Reader) committable() map[int32]committedPosition {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]committedPosition, len(r.parts))
	for _, rp := range r.parts {
		out[rp.p.id] = committedPosition{offset: rp.pos, leaderEpoch: rp.epoch}
	}
	return out
}
