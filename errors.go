package commitlog

import (
	"errors"
	"fmt"

	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// Sentinel errors. Every error the package returns that one of these describes wraps it, so
// callers test with errors.Is; the wrapping text names the file, position and offset involved.
var (
	// ErrClosed is returned by every method of a log, store or reader after Close (the segment
	// package's error, re-exported).
	ErrClosed = segment.ErrClosed

	// ErrOffsetOutOfRange is returned when an offset is below the log start offset or above the
	// log end offset (Kafka's OFFSET_OUT_OF_RANGE). Reading a range at exactly the log end offset
	// (ReadBatches, ReadRecords, Scan) is not an error: there is nothing yet; ReadRecord says so
	// with ErrNoRecordYet.
	ErrOffsetOutOfRange = errors.New("commitlog: offset out of range")

	// ErrNoOffsetForTime is returned, with offset -1, by Log.OffsetForTime and
	// Partition.OffsetForTime when no record has a timestamp at or after the time asked (the
	// log is empty, or every record is older; for a partition, below its high watermark): Kafka's
	// ListOffsets answers offset -1 and timestamp -1 then, and its consumer's offsetsForTimes
	// returns null for the partition.
	ErrNoOffsetForTime = errors.New("commitlog: no record at or after the time")

	// ErrNoRecordYet is returned by ReadRecord when no record lies at or after the offset below
	// the log end offset (the high watermark, for Partition.ReadRecord): the offset is that end or
	// past it up to the log end offset, or only a gap (compaction, transaction markers) lies
	// between it and that end. It is the single-record read's "nothing yet", where a Kafka fetch
	// at the high watermark returns no records and ReadRecords an empty slice: a tail reader waits
	// for appends and reads the same offset again. Offsets the log no longer or never held are
	// ErrOffsetOutOfRange.
	ErrNoRecordYet = errors.New("commitlog: no record at or after the offset yet")

	// ErrCorrupt is returned when bytes on disk or handed to a raw append are not a valid
	// RecordBatch v2 (bad length, magic or CRC, records that disagree with their header): reads
	// of a batch that recovery left in place (any bad batch found after a clean shutdown or below
	// the recovery point, and everything behind a broken length or magic in the same segment). It
	// never means a torn tail in the unflushed region: that is truncated on open and logged. It is
	// the segment package's error, re-exported.
	ErrCorrupt = segment.ErrCorrupt

	// ErrRecordTooLarge is returned when a record or batch is larger than the log's
	// MaxMessageBytes (Kafka's max.message.bytes, RECORD_TOO_LARGE). Nothing of the call is
	// written.
	ErrRecordTooLarge = errors.New("commitlog: record too large")

	// ErrOffsetOutOfOrder is returned by AppendAsFollower when a batch's base offset is not above
	// the log's last offset: offsets only grow and are never reused.
	ErrOffsetOutOfOrder = errors.New("commitlog: offset out of order")

	// ErrLocked is returned by Open when another Log or Store, in this process or another, holds
	// the directory.
	ErrLocked = errors.New("commitlog: directory locked by another holder")

	// ErrSync is wrapped, together with the operating system's error, by every write after an
	// fsync failed. Linux may drop the unsynced pages of a failed fsync, so a retry could report a
	// false success: the log refuses writes until it is reopened and recovered.
	ErrSync = errors.New("commitlog: sync failed; log is read-only until reopened")

	// ErrNoSpace wraps the operating system's ENOSPC when the disk is full. The partial write is
	// removed before the error is returned, so the log's framing stays intact and a later append
	// may succeed once space is freed.
	ErrNoSpace = errors.New("commitlog: no space left on device")

	// ErrUnknownTopic is returned for a topic the store does not hold (Kafka's
	// UNKNOWN_TOPIC_OR_PARTITION), and for a partition number the topic does not have.
	ErrUnknownTopic = errors.New("commitlog: unknown topic or partition")

	// ErrTopicExists is returned by CreateTopic for a name the store already holds, or one that
	// differs from a held name only in case (their folders would collide on case-insensitive
	// file systems).
	ErrTopicExists = errors.New("commitlog: topic already exists")

	// ErrPartitionMissing is returned by Open when the topic configurations (commitlog-topics)
	// list a partition whose folder does not exist, and no CreateTopic or DeleteTopic of that
	// topic was in progress: every record the partition held is gone, and starting it again
	// empty would hide the loss (a Kafka broker would copy the partition back from its leader;
	// a store has none). The message names the topic, the partition and the folder. Nothing is
	// changed: restore the folder, or create it empty to accept the loss.
	ErrPartitionMissing = errors.New("commitlog: partition folder missing")

	// ErrInvalidTopicName is returned for a topic name outside Kafka's rule (1 to 249 characters
	// of [a-zA-Z0-9._-], not "." or "..") and for a partition folder that is a symbolic link.
	// Nothing is created.
	ErrInvalidTopicName = errors.New("commitlog: invalid topic name")

	// ErrInvalidTopicID is returned by ParseTopicID for a string that is not a topic ID in
	// Kafka's Uuid.toString form (Uuid.fromString throws IllegalArgumentException for it).
	ErrInvalidTopicID = errors.New("commitlog: invalid topic ID")

	// ErrInvalidReaderName is returned for a reader name outside the topic-name rule.
	ErrInvalidReaderName = errors.New("commitlog: invalid reader name")

	// ErrReaderExists is returned by NewReader for a name a live reader of the topic already has,
	// and for a name that differs only in case from a live reader's or from one whose positions
	// are committed: their positions files would be one file on a case-insensitive file system.
	// Store.DeleteReader returns it while a reader of the name is open on any topic.
	ErrReaderExists = errors.New("commitlog: reader name in use")

	// ErrInvalidTimestamp is returned by appends of a CreateTime record whose timestamp is
	// further ahead of the append time than TimestampAfterMax allows (Kafka's
	// INVALID_TIMESTAMP). Nothing of the call is written.
	ErrInvalidTimestamp = errors.New("commitlog: invalid timestamp")

	// ErrInvalidRecord is returned by appends of records given a nil *Record, naming its place
	// in the call (Kafka answers a record it cannot take with INVALID_RECORD). Nothing of the
	// call is written.
	ErrInvalidRecord = errors.New("commitlog: invalid record")

	// ErrInvalidConfig is returned for a configuration value out of its documented range.
	ErrInvalidConfig = errors.New("commitlog: invalid config")

	// ErrNotLeader is returned by appends to a partition that is a follower, and by Fetch and
	// EpochEndOffset on one (Kafka's NOT_LEADER_OR_FOLLOWER). A follower takes records only from
	// its leader.
	ErrNotLeader = errors.New("commitlog: not the leader")

	// ErrTruncated is returned by an append whose records a truncation (TruncateTo, or a
	// follower starting over at its leader's log start offset) removed before they were on
	// stable storage: the append is not acknowledged and nothing of it stays.
	ErrTruncated = errors.New("commitlog: appended records removed by a truncation before they were durable")

	// ErrNotEnoughReplicas is returned by an AcksAll append when the in-sync replicas, the leader
	// included, are fewer than the topic's MinInsyncReplicas (Kafka's NOT_ENOUGH_REPLICAS).
	// Nothing is written.
	ErrNotEnoughReplicas = errors.New("commitlog: not enough in-sync replicas")

	// ErrFencedLeaderEpoch is returned when a request names a leader epoch older than the
	// partition's: the asker follows a leader that has been replaced (Kafka's
	// FENCED_LEADER_EPOCH), and when BecomeLeader or BecomeFollower is given an older epoch.
	ErrFencedLeaderEpoch = errors.New("commitlog: fenced leader epoch")

	// ErrUnknownLeaderEpoch is returned when a request names a leader epoch newer than the
	// partition's: this replica has not yet heard of the new leader (Kafka's
	// UNKNOWN_LEADER_EPOCH). The asker retries.
	ErrUnknownLeaderEpoch = errors.New("commitlog: unknown leader epoch")

	// ErrLogTruncated is returned by Reader.Next, under ResetNone, when the log was truncated
	// below the reader's position and may since hold other records at the offsets the reader
	// passed: the reader's position (committed, or live) was taken in a history the log no
	// longer has, so resuming there would silently skip the records the log now holds between
	// the divergence point and the position. It is always wrapped in a *LogTruncatedError
	// naming both offsets; Kafka's consumer throws LogTruncationException in this case (KIP-320).
	ErrLogTruncated = errors.New("commitlog: log truncated below the reader's position")

	// ErrReplicaNotAvailable is returned by Fetch for a replica ID the leader was not given as a
	// follower (Kafka's REPLICA_NOT_AVAILABLE).
	ErrReplicaNotAvailable = errors.New("commitlog: replica not available")

	// ErrOutOfOrderSequence is returned for a producer's batch whose first sequence does not
	// follow the last one the partition holds from it in the same epoch, or a new epoch's batch
	// that does not start at sequence 0 (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER); nothing is
	// written. A retry of a batch the partition holds is no error: it gets the original offsets.
	ErrOutOfOrderSequence = producerstate.ErrOutOfOrderSequence

	// ErrProducerFenced is returned for a batch, a marker or a transactional call of a producer
	// epoch older than the newest the store or partition has seen for its producer id: another
	// instance with the same transactional.id took over, or the coordinator aborted its
	// transaction on timeout and bumped the epoch (Kafka's PRODUCER_FENCED and
	// INVALID_PRODUCER_EPOCH). The producer can do nothing more; nothing is written.
	ErrProducerFenced = producerstate.ErrProducerFenced

	// ErrInvalidTxnState is returned for a transactional call out of turn (Append or Commit with
	// no transaction begun, Begin inside one, Commit after a failed append; EndTxn with the other
	// decision than the one taken, TxnOffsetCommit before AddOffsetsToTxn, VerifyTxnPartition of
	// a partition not added) and for a non-transactional batch from a producer with an open
	// transaction (Kafka's INVALID_TXN_STATE); nothing is written.
	ErrInvalidTxnState = producerstate.ErrInvalidTxnState

	// ErrCoordinatorFenced is returned for a transaction marker from a coordinator epoch older
	// than the last one the partition saw for its producer (Kafka's
	// TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = producerstate.ErrCoordinatorFenced

	// ErrInvalidProducerIDMapping is returned by the transaction APIs (AddPartitionsToTxn,
	// AddOffsetsToTxn, EndTxn, TxnOffsetCommit, VerifyTxnPartition) for a transactional id the
	// coordinator does not know, or a producer id that is not the one its transactional id holds
	// (Kafka's INVALID_PRODUCER_ID_MAPPING, 49): the producer must call InitProducerID again.
	ErrInvalidProducerIDMapping = errors.New("commitlog: invalid producer id mapping")

	// ErrInvalidTransactionTimeout is returned by InitProducerID for a transaction timeout below
	// 1 ms or above the store's WithTransactionMaxTimeout (Kafka's INVALID_TRANSACTION_TIMEOUT,
	// 50).
	ErrInvalidTransactionTimeout = errors.New("commitlog: invalid transaction timeout")

	// ErrConcurrentTransactions is returned by the transaction APIs while the producer's
	// transaction is being completed: committed or aborted, with markers not yet all written
	// (Kafka's CONCURRENT_TRANSACTIONS, 51, which a client retries after a backoff). The store
	// completes it at its next transaction check (WithTransactionCheckInterval), or at the
	// producer's next EndTxn or InitProducerID.
	ErrConcurrentTransactions = errors.New("commitlog: a transaction is being completed")
)

// LogTruncatedError is the error Reader.Next returns, under ResetNone, when a partition's log
// diverged below the reader's position: Kafka's LogTruncationException (KIP-320), with the
// divergent offset its consumer finds with OffsetsForLeaderEpoch. errors.Is(err,
// ErrLogTruncated) matches it. The reader stays at CommittedOffset until Seek; Seek(Partition,
// TruncatedOffset) resumes at the first record of the log's new history that the reader has
// not seen.
type LogTruncatedError struct {
	Topic     string
	Partition int32
	// CommittedOffset is the reader's position when the divergence was found: the committed
	// position it resumed at, or the live position it had reached.
	CommittedOffset int64
	// TruncatedOffset is the divergence point: the end offset, in the log as it is now, of the
	// leader epoch of the last record the reader consumed. Records from it on may differ from
	// those the reader saw.
	TruncatedOffset int64
	// LeaderEpoch is the leader epoch stored with the position (that of the last record
	// consumed).
	LeaderEpoch int32
}

// Error says which partition diverged, where, and how to resume.
func (e *LogTruncatedError) Error() string {
	return fmt.Sprintf("%v: topic %s partition %d position %d (leader epoch %d) is past the log's end offset %d for that epoch; Seek(%d, %d) to read the records the log now holds from there",
		ErrLogTruncated, e.Topic, e.Partition, e.CommittedOffset, e.LeaderEpoch, e.TruncatedOffset, e.Partition, e.TruncatedOffset)
}

// Unwrap returns ErrLogTruncated.
func (e *LogTruncatedError) Unwrap() error { return ErrLogTruncated }

// ErrKeylessRecord is returned by an append to a compacted log (cleanup.policy compact or
// compact,delete) of a record without a key; nothing of the append is written. It wraps
// ErrInvalidRecord, as Kafka answers INVALID_RECORD ("Compacted topic cannot accept message
// without key", LogValidator.validateKey).
var ErrKeylessRecord = fmt.Errorf("%w: compacted topic cannot accept a record without a key", ErrInvalidRecord)

// ErrUnknownConfig is returned by SetKafkaConfig and ResetKafkaConfig for a config name that
// TopicConfig does not model: a name Kafka does not know, or a Kafka topic config this library
// has no field for (preallocate, segment.jitter.ms, unclean.leader.election.enable,
// message.timestamp.before.max.ms, the remote storage and throttling configs, ...). Kafka's
// broker answers INVALID_CONFIG ("Unknown topic config name") for the first kind; it wraps
// ErrInvalidConfig, so errors.Is(err, ErrInvalidConfig) holds for it too.
var ErrUnknownConfig = fmt.Errorf("%w: unknown topic config name", ErrInvalidConfig)

// ErrInvalidPartitions is returned by CreatePartitions for a partition count that is not larger
// than the topic's, or is above MaxPartitions (Kafka's INVALID_PARTITIONS). Nothing is created.
var ErrInvalidPartitions = errors.New("commitlog: invalid partition count")

// ErrPolicyViolation is returned by DeleteRecords on a partition whose cleanup.policy does not
// delete (compact alone): Kafka's broker refuses it with POLICY_VIOLATION ("Records of partition
// ... can not be deleted due to the configured policy"). Nothing is deleted.
var ErrPolicyViolation = errors.New("commitlog: policy violation")
