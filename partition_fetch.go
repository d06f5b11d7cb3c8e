package commitlog

import (
	"math"

	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// What a broker needs to answer a consumer's Fetch from a partition (Kafka's
// ReplicaManager.readFromLog and Partition.fetchRecords): the stored batches below the bound
// the isolation level sets, the aborted transactions among them, and a way to wait for more.

// AbortedTransaction is one aborted transaction a read_committed consumer is told of with the
// batches it fetched (Kafka's FetchResponse AbortedTransaction): the consumer drops the batches
// of ProducerID from FirstOffset up to that producer's ABORT marker.
type AbortedTransaction struct {
	ProducerID  int64
	FirstOffset int64
}

// FetchBound returns the offset a consumer's fetch at level reads below (Kafka's
// FetchIsolation): the high watermark under ReadUncommitted, the last stable offset under
// ReadCommitted. It is also the log end offset ListOffsets answers for "latest" at that level.
func (p *Partition) FetchBound(level IsolationLevel) int64 {
	if level == ReadCommitted {
		return p.LastStableOffset()
	}
	return p.HighWatermark()
}

// ReadRangeBelow is ReadRange with only the batches wholly below bound, which a broker takes
// from FetchBound (the high watermark or the last stable offset): the zero-copy read of a
// consumer's fetch. At or past bound the range is empty. The caller must Close it. Errors as for
// ReadRange.
func (p *Partition) ReadRangeBelow(offset int64, maxBytes int, bound int64) (*BatchRange, error) {
	if bound == math.MaxInt64 {
		return p.countRange(p.log.ReadRange(offset, maxBytes))
	}
	return p.countRange(p.log.readRange(offset, maxBytes, bound))
}

// AbortedTransactions returns the aborted transactions that may hold batches in [from, upTo),
// read from the partition's .txnindex files (Kafka's UnifiedLog.collectAbortedTransactions), in
// the order of their markers: what a read_committed fetch of that span answers with. Errors are
// those of reading a damaged or closed index.
func (p *Partition) AbortedTransactions(from, upTo int64) ([]AbortedTransaction, error) {
	var buf [8]txnindex.AbortedTxn
	got, err := p.log.abortedTxns(buf[:0], from, upTo)
	if err != nil || len(got) == 0 {
		return nil, err
	}
	out := make([]AbortedTransaction, len(got))
	for i, a := range got {
		out[i] = AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out, nil
}

// Changed returns a channel closed at the next change of the partition's log end offset, high
// watermark or role, or when it closes: a fetch that found nothing new waits on it (Kafka's
// DelayedFetch) instead of polling. Take it before reading, so that an append between the read
// and the wait is not missed.
func (p *Partition) Changed() <-chan struct{} { return p.waitChan() }
