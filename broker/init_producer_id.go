package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleInitProducerID answers InitProducerId (key 22): a new producer id at epoch 0 for an
// idempotent producer (null transactional id), or the transactional id's producer id with a
// bumped epoch, fencing older instances and ending the transaction one left
// (commitlog.Store.InitProducerID; Kafka's TransactionCoordinator.handleInitProducerId with
// KIP-360's producer id and epoch from v3). Errors: INVALID_TRANSACTION_TIMEOUT,
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4, KIP-588), CONCURRENT_TRANSACTIONS.
func handleInitProducerID(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	txnID := ""
	if req.TransactionalID != nil {
		txnID = *req.TransactionalID
	}
	pid, epoch := req.ProducerID, req.ProducerEpoch
	if r.version < 3 {
		pid, epoch = -1, -1
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	var err error
	resp.ProducerID, resp.ProducerEpoch, err = c.srv.store.InitProducerID(ctx, txnID, timeout, pid, epoch)
	if err != nil {
		resp.ErrorCode = txnErrorCode(err, r.version, 4)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
	}
	return reply{msg: resp}, nil
}
