package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
)

// Kafka error codes used by name here (org.apache.kafka.common.protocol.Errors).
var (
	errNone               int16 = 0
	errUnsupportedVersion       = kerr.UnsupportedVersion.Code
	errUnknownTopic             = kerr.UnknownTopicOrPartition.Code
	errUnknownServer            = kerr.UnknownServerError.Code
)

// errorCode returns the Kafka error code a client gets for err: the store's sentinels map to
// the codes of the Kafka exceptions they stand for, a *group.Error carries its own code, and
// anything unknown is UNKNOWN_SERVER_ERROR (-1).
func errorCode(err error) int16 {
	if err == nil {
		return errNone
	}
	var ge *group.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return errUnknownServer
}

// errorCodes maps the store's sentinels to Kafka's codes, most specific first (ErrKeylessRecord
// wraps ErrInvalidRecord).
var errorCodes = []struct {
	err  error
	code int16
}{
	{commitlog.ErrUnknownTopic, kerr.UnknownTopicOrPartition.Code},
	{commitlog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange.Code},
	{commitlog.ErrCorrupt, kerr.CorruptMessage.Code},
	{commitlog.ErrRecordTooLarge, kerr.MessageTooLarge.Code},
	{commitlog.ErrInvalidRecord, kerr.InvalidRecord.Code},
	{commitlog.ErrInvalidTimestamp, kerr.InvalidTimestamp.Code},
	{commitlog.ErrTopicExists, kerr.TopicAlreadyExists.Code},
	{commitlog.ErrInvalidTopicName, kerr.InvalidTopicException.Code},
	{commitlog.ErrInvalidPartitions, kerr.InvalidPartitions.Code},
	{commitlog.ErrPolicyViolation, kerr.PolicyViolation.Code},
	{commitlog.ErrInvalidConfig, kerr.InvalidConfig.Code},
	{commitlog.ErrNotLeader, kerr.NotLeaderForPartition.Code},
	{commitlog.ErrTruncated, kerr.NotLeaderForPartition.Code},
	{commitlog.ErrClosed, kerr.NotLeaderForPartition.Code},
	{commitlog.ErrNotEnoughReplicas, kerr.NotEnoughReplicas.Code},
	{commitlog.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch.Code},
	{commitlog.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch.Code},
	{commitlog.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber.Code},
	{commitlog.ErrProducerFenced, kerr.InvalidProducerEpoch.Code},
	{commitlog.ErrInvalidTxnState, kerr.InvalidTxnState.Code},
	{commitlog.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced.Code},
	{commitlog.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping.Code},
	{commitlog.ErrInvalidTransactionTimeout, kerr.InvalidTransactionTimeout.Code},
	{commitlog.ErrConcurrentTransactions, kerr.ConcurrentTransactions.Code},
	{commitlog.ErrNoSpace, kerr.KafkaStorageError.Code},
	{commitlog.ErrSync, kerr.KafkaStorageError.Code},
	{commitlog.ErrReplicaNotAvailable, kerr.ReplicaNotAvailable.Code},
	{context.DeadlineExceeded, kerr.RequestTimedOut.Code},
	{context.Canceled, kerr.RequestTimedOut.Code},
}
