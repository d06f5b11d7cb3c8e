package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteRecords answers DeleteRecords (key 21): each partition's log start offset is
// raised to the offset given (-1: the high watermark) with commitlog.Partition.DeleteRecords,
// and the answer is the new low watermark, as Kafka's ReplicaManager.deleteRecords. An offset
// past the high watermark is OFFSET_OUT_OF_RANGE; an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION. The request's timeout bounds the work.
func handleDeleteRecords(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t, terr := c.srv.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			p, err := partitionOf(t, terr, rp.Partition)
			if err == nil {
				sp.LowWatermark, err = p.DeleteRecords(ctx, rp.Offset)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}
