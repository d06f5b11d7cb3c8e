// Package producerstate is what a partition knows of its producers, as Kafka's
// ProducerStateManager knows it (org.apache.kafka.storage.internals.log.ProducerStateManager,
// ProducerStateEntry, ProducerAppendInfo): for each producer id its epoch, the sequence numbers
// and offsets of its last five batches (duplicate detection), the coordinator epoch of the last
// transaction marker, and the first offset of its open transaction; and, for the partition, the
// open transactions ordered by first offset, from which the last stable offset follows.
//
// The package knows batches by their header fields only (Batch, Marker) and files by their bytes
// (EncodeSnapshot, DecodeSnapshot); the log feeds it every batch it appends or replays and writes
// the snapshots. A Manager is safe for concurrent use: the log's writer changes it under the log's
// append lock, and readers ask it for the first unstable offset at any time.
//
// # Rules (Kafka's ProducerAppendInfo, origin CLIENT)
//
//   - A batch whose epoch is below the producer's is refused: ErrProducerFenced.
//   - A batch of the producer's epoch whose sequence range equals one of its last five batches is
//     a duplicate (FindDuplicate): the log returns that batch's offsets and writes nothing.
//   - Otherwise, in the same epoch, the first sequence must follow the last one written (last+1,
//     or 0 after math.MaxInt32; 0 when none is remembered in the epoch, as after a marker that
//     set it): else ErrOutOfOrderSequence. A new epoch must start at sequence 0, unless the
//     producer is unknown to the partition (its entries expired or were deleted), which is
//     accepted at any sequence (KIP-360).
//   - A non-transactional batch from a producer with an open transaction is ErrInvalidTxnState.
//   - A marker from an epoch below the producer's is ErrProducerFenced; from a coordinator epoch
//     below the last one seen, ErrCoordinatorFenced.
//
// Batches replayed from the log (a follower's copy, recovery) are applied without these checks.
//
// # The snapshot file
//
// <offset>.snapshot, the 20-digit offset being the log end offset the state covers, holds
// Kafka's producer snapshot, version 1, big-endian:
//
//	offset  size  field
//	     0     2  version (1)
//	     2     4  CRC-32C (Castagnoli) of bytes 6 to the end
//	     6     4  entry count
//	    10    46  each entry:
//	              producer_id int64, epoch int16, last_sequence int32, last_offset int64,
//	              offset_delta int32, timestamp int64, coordinator_epoch int32,
//	              current_txn_first_offset int64 (-1: no open transaction)
//
// A snapshot keeps only the last batch of each producer, as Kafka's does: after a restart the
// duplicate window of a producer is that batch until it writes five more.
package producerstate
