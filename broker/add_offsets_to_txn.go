package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAddOffsetsToTxn answers AddOffsetsToTxn (key 25): the group's offsets partition
// (__consumer_offsets-0, where every group's offsets live) joins the producer's transaction, so
// that TxnOffsetCommit may write to it (commitlog.Store.AddOffsetsToTxn). Errors as
// AddPartitionsToTxn's, PRODUCER_FENCED from v2 (KIP-588), and INVALID_GROUP_ID.
func handleAddOffsetsToTxn(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	err := c.srv.store.AddOffsetsToTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	resp.ErrorCode = txnErrorCode(err, r.version, 2)
	return reply{msg: resp}, nil
}
