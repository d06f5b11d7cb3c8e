package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleAddPartitionsToTxn answers a client's AddPartitionsToTxn (key 24, v0–3): the partitions
// join the producer's transaction, durably, before it writes to them
// (commitlog.Store.AddPartitionsToTxn). When some partitions do not exist none is added: those
// answer UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as Kafka's
// TransactionCoordinator answers. Every partition gets the request's error otherwise:
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588),
// CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE. Versions 4 and later are the brokers' batched
// verification (KIP-890), not served.
func handleAddPartitionsToTxn(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	parts := map[string][]int32{}
	for _, t := range req.Topics {
		parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
	}
	err := c.srv.store.AddPartitionsToTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)
	code := txnErrorCode(err, r.version, 2)
	unknown := map[commitlog.TopicPartition]bool{}
	var upe *commitlog.UnknownPartitionsError
	if errors.As(err, &upe) {
		for _, tp := range upe.Partitions {
			unknown[tp] = true
		}
		code = kerr.OperationNotAttempted.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if unknown[commitlog.TopicPartition{Topic: t.Topic, Partition: p}] {
				rp.ErrorCode = errUnknownTopic
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply{msg: resp}, nil
}
