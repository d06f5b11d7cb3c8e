package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleProduce answers Produce (key 0): each partition's record batches are appended as the
// leader with Partition.AppendAsLeader, which checks them as Kafka's LogValidator and
// ProducerStateManager do (CRC, offsets, sizes, idempotent sequences, transactional state), and
// answers with the base offset given to the first batch. The partitions of one request are
// appended at once, so that their fsyncs are shared. acks=0 sends no response, and closes the
// connection when a partition failed, as Kafka's KafkaApis does; acks=1 answers
// once the leader's log holds them durably by its sync policy, acks=-1 once every in-sync
// replica does; the request's timeout bounds the wait (REQUEST_TIMED_OUT).
//
// Versions 0 to 2 carry message formats 0 and 1, which the store does not keep: they are
// advertised, as Kafka 4 does so that librdkafka compresses (KAFKA-18659), and answered
// UNSUPPORTED_VERSION for each partition, as Kafka 4 answers them.
func handleProduce(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acks := commitlog.AcksAll
	switch req.Acks {
	case 0:
		acks = commitlog.AcksNone
	case 1:
		acks = commitlog.AcksLeader
	case -1:
	default:
		return reply{msg: produceError(req, resp, kerr.InvalidRequiredAcks.Code)}, nil // acks is not 0: answered
	}
	if r.version < 3 {
		if req.Acks == 0 {
			return reply{}, fmt.Errorf("acks=0 produce v%d: message formats 0 and 1 are not kept", r.version)
		}
		return reply{msg: produceError(req, resp, errUnsupportedVersion)}, nil
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}

	type job struct {
		p    *commitlog.Partition
		recs []byte
		out  *kmsg.ProduceResponseTopicPartition
	}
	var jobs []job
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		t, terr := c.srv.requestTopic(rt.Topic, rt.TopicID, r.version >= 13)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			if terr != nil {
				sp.ErrorCode = errorCode(terr)
				continue
			}
			p, err := t.Partition(rp.Partition)
			if err != nil {
				sp.ErrorCode = errUnknownTopic
				continue
			}
			if err := c.verifyTransactional(t.Name(), p.ID(), rp.Records); err != nil {
				sp.ErrorCode = errorCode(err)
				sp.ErrorMessage = kmsg.StringPtr(err.Error())
				continue
			}
			jobs = append(jobs, job{p: p, recs: rp.Records, out: sp})
		}
	}
	run := func(j job) {
		first, _, err := j.p.AppendAsLeader(ctx, acks, j.recs)
		if err != nil {
			j.out.ErrorCode = errorCode(err)
			if j.out.ErrorCode == errUnknownServer {
				c.log.Warn("kafka produce failed", "topic", j.p.Topic(), "partition", j.p.ID(), "err", err)
			}
			msg := err.Error()
			j.out.ErrorMessage = &msg
			return
		}
		j.out.BaseOffset = first
		j.out.LogStartOffset = j.p.LogStartOffset()
	}
	if len(jobs) == 1 {
		run(jobs[0])
	} else {
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Go(func() { run(j) })
		}
		wg.Wait()
	}
	if req.Acks == 0 {
		// With acks=0 the producer reads no answer: Kafka closes the connection on an error
		// instead, "so that the producer client will know that some error has happened and
		// will refresh its metadata" (KafkaApis.handleProduceRequest).
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != errNone {
					return reply{}, fmt.Errorf("acks=0 produce to topic %s partition %d failed with error code %d", st.Topic, sp.Partition, sp.ErrorCode)
				}
			}
		}
		return reply{none: true}, nil
	}
	return reply{msg: resp}, nil
}

// produceError answers every partition of req with code.
func produceError(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, code int16) *kmsg.ProduceResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, code, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// verifyTransactional checks, for batches of a transactional producer, that the producer's
// open transaction holds the partition (KIP-890 part 1, Kafka's produce-side verification
// against the transaction coordinator): a batch of a transaction that never added the
// partition, or that ended, is INVALID_TXN_STATE, so that a late write cannot leave a
// transaction open in the partition forever. The batches' own checks are the log's.
func (c *conn) verifyTransactional(topic string, partition int32, batches []byte) error {
	// RecordBatch v2: attributes at byte 21, producer id at 43, producer epoch at 51.
	if len(batches) < 61 || batches[16] != 2 {
		return nil
	}
	attrs := binary.BigEndian.Uint16(batches[21:23])
	if attrs&0x10 == 0 || attrs&0x20 != 0 { // not transactional, or a control batch
		return nil
	}
	pid := int64(binary.BigEndian.Uint64(batches[43:51]))
	epoch := int16(binary.BigEndian.Uint16(batches[51:53]))
	err := c.srv.store.VerifyTxnPartition(pid, epoch, topic, partition)
	if errors.Is(err, commitlog.ErrConcurrentTransactions) {
		// Kafka's produce path answers a transaction being completed with NOT_ENOUGH_REPLICAS,
		// which every client retries.
		return fmt.Errorf("%w: %w", kerr.NotEnoughReplicas, err)
	}
	return err
}
