package commitlog

import (
	"context"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// ProducerState is a producer's state in one partition, as the partition's log holds it (Kafka's
// ProducerStateEntry, which DescribeProducers reports): its epoch, the last sequence and offset it
// wrote, the coordinator epoch of its last transaction marker, and the first offset of its open
// transaction (-1 when none is open).
type ProducerState struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // -1 when no batch is remembered
	LastOffset            int64 // -1 when no batch is remembered
	LastTimestamp         int64 // ms, of the last batch or marker; expiration counts from it
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

// Producers returns the state of every producer the log remembers, ordered by producer id.
func (l *Log) Producers() []ProducerState {
	entries := l.producers.m.Entries()
	out := make([]ProducerState, len(entries))
	for i, e := range entries {
		ps := ProducerState{ProducerID: e.ProducerID, ProducerEpoch: e.Epoch, LastSequence: -1, LastOffset: -1,
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnFirstOffset: e.CurrentTxnFirstOffset}
		if n := len(e.Batches); n > 0 {
			ps.LastSequence, ps.LastOffset = e.Batches[n-1].LastSeq, e.Batches[n-1].LastOffset
		}
		out[i] = ps
	}
	return out
}

// appendMarker writes a transaction marker for producer id pid at epoch: a control batch with one
// COMMIT or ABORT record (see encodeMarker), checked as Kafka's leader checks the coordinator's
// WriteTxnMarkers (an older producer epoch is ErrProducerFenced, an older coordinator epoch
// ErrCoordinatorFenced), which ends the producer's open transaction in this log. It returns the
// write's ticket and the marker's offset. Callers hold the partition's role when it has one.
func (l *Log) appendMarker(ctx context.Context, pid int64, epoch int16, commit bool, coordinatorEpoch int32, await bool) (writeTicket, int64, error) {
	if err := ctx.Err(); err != nil {
		return writeTicket{}, 0, err
	}
	var b recordbatch.Builder
	data, err := encodeMarker(&b, pid, epoch, commit, coordinatorEpoch, l.now().UnixMilli())
	if err != nil {
		return writeTicket{}, 0, err
	}
	h, err := recordbatch.ParseHeader(data, 0)
	if err != nil {
		return writeTicket{}, 0, err
	}
	w := &pendingWrite{data: data, maxTimestamp: h.MaxTimestamp, producer: true,
		batches: []batchInfo{{size: len(data), lastOffset: 0, maxTimestamp: h.MaxTimestamp}}}
	l.gc.writing.Add(1)
	defer l.gc.writing.Add(-1)
	t, first, err := l.write(w, true, await)
	if err != nil {
		return t, 0, err
	}
	return t, first, nil
}

// AppendMarker writes a transaction marker to the log (see Partition.AppendMarker) and returns its
// offset once it is durable (the sync policy). ErrProducerFenced for a producer epoch below the
// one the log has seen, ErrCoordinatorFenced for an older coordinator epoch, nothing written;
// other errors as for Append (ErrClosed, ErrSync, ErrNoSpace, ctx's).
func (l *Log) AppendMarker(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	t, off, err := l.appendMarker(ctx, producerID, producerEpoch, commit, coordinatorEpoch, true)
	if err != nil {
		return 0, err
	}
	return off, l.awaitDurable(t)
}

// AppendMarker writes a transaction marker for a producer to the partition, as Kafka's transaction
// coordinator does with WriteTxnMarkers: a control batch (attributes transactional and control,
// the producer's id and epoch) holding one COMMIT (commit set) or ABORT record whose value
// carries coordinatorEpoch. It ends the producer's open transaction here: the last stable
// offset moves past it, and an aborted one is recorded in the segment's .txnindex so that
// ReadCommitted readers skip its batches. It returns the marker's offset once the high watermark
// passes it (AcksAll).
//
// ErrProducerFenced when producerEpoch is below the epoch the partition has seen from the
// producer; ErrCoordinatorFenced when coordinatorEpoch is below the last marker's. Other errors
// as for AppendAcks. A store's transactional producers write their markers themselves
// (Producer.Commit, Producer.Abort); this is for a coordinator of one's own.
func (p *Partition) AppendMarker(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	var off int64
	err := p.appendAsLeader(ctx, AcksAll, func() (writeTicket, error) {
		t, o, err := p.log.appendMarker(ctx, producerID, producerEpoch, commit, coordinatorEpoch, true)
		off = o
		return t, err
	})
	if err != nil {
		return 0, err
	}
	return off, p.awaitAcks(ctx, AcksAll, off+1)
}

// appendProducer appends recs as one producer's batch (the batches of prod), with AcksAll, and
// sets their Topic, Partition, Offset and Timestamp; a retry of batches the log holds gets the
// original offsets and writes nothing. Errors as for AppendAcks, and the producer checks'
// (ErrOutOfOrderSequence, ErrProducerFenced, ErrInvalidTxnState).
func (p *Partition) appendProducer(ctx context.Context, prod *producerFields, recs []*Record) error {
	if err := checkRecords(recs); err != nil {
		return err
	}
	for _, r := range recs {
		r.Topic, r.Partition = p.topicName, p.id
	}
	var next int64
	err := p.appendAsLeader(ctx, AcksAll, func() (writeTicket, error) {
		t, err := p.log.appendProducerRecords(ctx, recs, true, prod)
		if err == nil && len(recs) > 0 {
			next = recs[len(recs)-1].Offset + 1
		}
		return t, err
	})
	if err != nil || next == 0 {
		return err
	}
	return p.awaitAcks(ctx, AcksAll, next)
}

// LastStableOffset returns the partition's last stable offset (Kafka's LSO): the first offset of
// the oldest transaction not yet decided, or of a decided one whose marker the high watermark has
// not passed, else the high watermark. A ReadCommitted reader reads below it only.
func (p *Partition) LastStableOffset() int64 { return p.log.lastStableOffset(p.HighWatermark()) }

// Producers returns the state of every producer the partition remembers; see Log.Producers.
func (p *Partition) Producers() []ProducerState { return p.log.Producers() }
