package segment

import (
	"errors"
	"fmt"
	"os"

	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// The aborted-transaction index of a segment, Kafka's LogSegment.txnIndex: "<base>.txnindex"
// (TxnIndexSuffix, with the segment's suffix after it like the other files), 34-byte entries
// (txnindex.AbortedTxn: version int16 = 0, producerId int64, firstOffset int64, lastOffset int64,
// lastStableOffset int64, big-endian), created by the first AppendAbortedTxn: a segment without
// aborted transactions has no such file.
//
// The entries are read whole when the segment is created or opened and kept in memory, so
// CollectAbortedTxns does no I/O; the index keeps no file descriptor between calls (an append,
// a truncation or a sync opens the file and closes it again). It therefore adds nothing to
// FilesPerSegment, is not closed for idleness by the FileCache, and is valid whether the
// segment's other files are open or not.
//
// The file follows the segment: Retire renames it with the retired suffix, SetSuffix with the
// compaction's, Remove and RemoveRetired delete it, Truncate drops the entries it cuts, Sync,
// SyncIndexes (so Seal) and Close make it durable when written since its last sync.
//
// Load does not rebuild it from the log (Kafka's LogSegment.recover does, with the producer
// state): entries the log needs again after a recovery are the log's to append.

// openTxnIndex opens the segment's txn index at its name of now. fresh (a segment being
// created) deletes a file found there first: it belongs to an earlier segment at the base
// offset. A corrupt file (txnindex.ErrCorrupt) does not fail the segment: it is emptied (Kafka
// resets and rebuilds a txn index it cannot trust) and the error kept for Load's report
// (TxnIndexCorrupt). Callers own s alone.
func (s *Segment) openTxnIndex(fresh bool) error {
	path := s.Path(TxnIndexSuffix)
	if fresh {
		if err := s.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	x, err := txnindex.Open(s.fs, path)
	if errors.Is(err, txnindex.ErrCorrupt) {
		s.txnReset = err
		err = x.Reset()
	}
	if err != nil {
		return err
	}
	s.txn = x
	return nil
}

// TxnIndexCorrupt reports whether the segment's .txnindex file was corrupt when the segment was
// opened (a size that is not whole 34-byte entries, or a version other than 0). A corrupt txn
// index does not fail the segment: its entries are dropped and the file emptied then, and the log
// must append the segment's aborted transactions again (Kafka rebuilds a txn index from the log
// at recovery). Load's report says why (LoadReport.TxnIndexReset, wrapping txnindex.ErrCorrupt),
// for the log to warn of. Safe concurrently (set before the segment is shared).
func (s *Segment) TxnIndexCorrupt() bool { return s.txnReset != nil }

// AppendAbortedTxn appends a to the segment's txn index, creating "<base>.txnindex" (with the
// segment's suffix) on the first entry, as Kafka's LogSegment.updateTxnIndex does for each
// aborted transaction a completed ABORT marker ends. a.LastOffset must be above the last entry's
// (else an error wrapping txnindex.ErrOutOfOrder, as Kafka refuses). No fsync: Sync, SyncIndexes,
// Seal and Close make it durable; the directory entry of a file it creates is the caller's to
// sync, as for a roll's files.
//
// The caller serialises it with the writer's methods (the log appends under its append lock, as
// it writes the marker's batch); it is safe concurrently with CollectAbortedTxns, which reads
// under the log's read lock (the index has a lock of its own). A closed segment's index
// refuses it (txnindex.ErrClosed).
func (s *Segment) AppendAbortedTxn(a txnindex.AbortedTxn) error {
	if err := s.txn.Append(a); err != nil {
		return fmt.Errorf("segment %s: %w", s.Path(LogSuffix), err)
	}
	return nil
}

// CollectAbortedTxns appends to dst, in order, the entries of the segment's txn index with
// LastOffset >= fetchOffset and FirstOffset < upperBoundOffset (the aborted transactions that
// overlap the offsets a fetch returns), and returns the result: Kafka's
// LogSegment.collectAbortedTxns. It does no I/O (the entries are in memory): the error is nil
// today, and is there for an index that reads its file. Safe concurrently with everything (the
// log calls it under its read lock, with the segment acquired or in its list; the writer's
// AppendAbortedTxn and TruncateTxnIndex may run meanwhile).
func (s *Segment) CollectAbortedTxns(dst []txnindex.AbortedTxn, fetchOffset, upperBoundOffset int64) ([]txnindex.AbortedTxn, error) {
	return s.txn.Collect(dst, fetchOffset, upperBoundOffset), nil
}

// TruncateTxnIndex drops the entries of the segment's txn index whose LastOffset is >= offset,
// from memory and the file (Kafka's TransactionIndex.truncateTo, which LogSegment.truncateTo
// runs). Truncate already does so at the offset it cuts to; this is for a caller that drops
// entries without cutting the data. No fsync (see AppendAbortedTxn). Single writer, as
// AppendAbortedTxn (the log's append lock).
func (s *Segment) TruncateTxnIndex(offset int64) error {
	if err := s.txn.TruncateTo(offset); err != nil {
		return fmt.Errorf("segment %s: %w", s.Path(LogSuffix), err)
	}
	return nil
}
