package commitlog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Commit records the reader's positions (the offset of the next record in each partition) with
// the leader epoch of the last record consumed in each (Kafka's OffsetCommit
// committed_leader_epoch, KIP-320), so that a reader opened later with the same name resumes
// exactly there, after checking that the log did not diverge below the position meanwhile (see
// ResetPolicy). Only the partitions the reader reads are written: positions committed under the
// name for the topic's other partitions, and for other topics, stay, as Kafka's OffsetCommit
// changes only the partitions it lists.
//
// The name's file is replaced atomically: a temporary file renamed over it, which a killed
// process never leaves half written. By default nothing is fsynced, so that committing after
// every record is cheap (Kafka's consumer offsets, too, are appended to __consumer_offsets under
// the broker's flush policy, not fsynced per commit): after a power loss the file may hold an
// earlier commit, and records are read again from there (at least once), or be torn, and the
// reader then starts as one that never committed, at ReaderConfig.Start. With
// ReaderConfig.SyncCommits the temporary file and the directory are fsynced, and Commit returns
// only once the positions are durable.
// Anonymous readers have nothing to commit: Commit returns ErrInvalidReaderName. ErrClosed after
// Close; ctx's error if it is done before the write.
func (r *Reader) Commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.cfg.Name == "" {
		return fmt.Errorf("%w: an anonymous reader has no positions to commit", ErrInvalidReaderName)
	}
	r.mu.Lock()
	closed := r.stopped()
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return r.commit(r.cfg.SyncCommits, false)
}

// commit writes the positions file, keeping the entries of other topics, and of the topic's
// other partitions, committed under this name; fsynced when sync is set. With leaveInFlight (the
// background auto-commit), the partition of the record in flight gets the position before it
// (see Reader.inFlight).
// The store holds its lock shared meanwhile (see Store.commitPositions), so that DeleteTopic, which rewrites the files, never runs
// between its read and its write; a reader of a topic since deleted commits nothing (ErrClosed),
// so that the deleted topic's positions never come back.
func (r *Reader) commit(sync, leaveInFlight bool) error {
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	return r.positions.commitPositions(r.cfg.Name, r.topic, sync, func(mine map[int32]committedPosition) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rp := range r.parts {
			c := committedPosition{offset: rp.pos, leaderEpoch: rp.epoch}
			if f := r.inFlight; leaveInFlight && f.rp == rp && rp.pos == f.after {
				c = f.before
			}
			mine[rp.p.id] = c
		}
	})
}

// errTopicDeleted is wrapped by a commit of a reader whose topic was deleted.
var errTopicDeleted = errors.New("topic deleted")

// autoCommit commits every AutoCommitInterval until the reader closes.
func (r *Reader) autoCommit() {
	t := time.NewTicker(r.cfg.AutoCommitInterval)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			if err := r.commit(r.cfg.SyncCommits, true); err != nil && !errors.Is(err, errTopicDeleted) {
				r.positions.logger().Error("auto-commit failed", "reader", r.cfg.Name, "err", err)
			}
		}
	}
}
