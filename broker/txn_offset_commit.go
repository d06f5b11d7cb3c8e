package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
)

// handleTxnOffsetCommit answers TxnOffsetCommit (key 28): a consumer group's offsets committed
// in the producer's transaction, pending until EndTxn (commitlog.Store.TxnOffsetCommit; KIP-98,
// with KIP-447's generation, member id and group instance id from v3). A partition the store
// does not hold is UNKNOWN_TOPIC_OR_PARTITION; every other partition gets the request's error:
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v3, KIP-588),
// INVALID_TXN_STATE (no AddOffsetsToTxn), CONCURRENT_TRANSACTIONS, ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, INVALID_GROUP_ID.
func handleTxnOffsetCommit(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	in := commitlog.TxnOffsetCommitRequest{
		TransactionalID: req.TransactionalID,
		ProducerID:      req.ProducerID,
		ProducerEpoch:   req.ProducerEpoch,
		GroupID:         req.Group,
		GenerationID:    -1,
		Offsets:         map[commitlog.TopicPartition]group.OffsetAndMetadata{},
	}
	if r.version >= 3 {
		in.GenerationID, in.MemberID = req.Generation, req.MemberID
		if req.InstanceID != nil {
			in.GroupInstanceID = *req.InstanceID
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			om := group.OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: -1}
			if r.version >= 2 {
				om.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				om.Metadata = *p.Metadata
			}
			in.Offsets[commitlog.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = om
		}
	}
	perPartition, err := c.srv.store.TxnOffsetCommit(ctx, in)
	code := txnErrorCode(err, r.version, 3)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			if err == nil {
				rp.ErrorCode = errorCode(perPartition[commitlog.TopicPartition{Topic: t.Topic, Partition: p.Partition}])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply{msg: resp}, nil
}
