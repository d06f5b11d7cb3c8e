package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleEndTxn answers EndTxn (key 26): the producer's transaction commits or aborts, its
// markers written to every partition it added and its group offsets made committed or dropped
// before the answer (commitlog.Store.EndTxn). Errors: INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588), INVALID_TXN_STATE (a commit of
// an aborting transaction), CONCURRENT_TRANSACTIONS. Version 5 (KIP-890 part 2's epoch bump per
// transaction) is not served.
func handleEndTxn(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := c.srv.store.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = txnErrorCode(err, r.version, 2)
	return reply{msg: resp}, nil
}
