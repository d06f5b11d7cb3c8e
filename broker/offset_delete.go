package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleOffsetDelete answers OffsetDelete (key 47, KIP-496) with the store's group coordinator
// (group.Coordinator.DeleteOffsets, Kafka's OffsetMetadataManager.deleteOffsets), after the
// check of Kafka's KafkaApis.handleOffsetDeleteRequest: a partition the store does not hold is
// UNKNOWN_TOPIC_OR_PARTITION. The group's committed offsets of the other partitions are
// removed, their tombstones stored first, except those of topics the group's members subscribe
// to (GROUP_SUBSCRIBED_TO_TOPIC). A partition without an offset is answered with no error.
//
// Error codes: at the top level INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, COORDINATOR_NOT_AVAILABLE
// (also when the tombstones could not be stored); per partition UNKNOWN_TOPIC_OR_PARTITION,
// GROUP_SUBSCRIBED_TO_TOPIC. Kafka refuses a group of another protocol type than "consumer" with
// members whole (NON_EMPTY_GROUP); the coordinator answers GROUP_SUBSCRIBED_TO_TOPIC for each of
// its partitions with an offset instead.
func handleOffsetDelete(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if err := c.srv.groups.CheckGroupID(req.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return reply{msg: resp}, nil
	}
	var tps []group.TopicPartition
	for _, rt := range req.Topics {
		t, terr := c.srv.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			if terr == nil {
				if _, err := t.Partition(rp.Partition); err == nil {
					tps = append(tps, group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				}
			}
		}
	}
	errs, err := c.srv.groups.DeleteOffsets(ctx, req.Group, tps)
	if err != nil {
		resp.ErrorCode = c.groupErrorCode(err)
		return reply{msg: resp}, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			perr, ok := errs[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if ok {
				sp.ErrorCode = c.groupErrorCode(perr)
			} else {
				sp.ErrorCode = errUnknownTopic
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}
