package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleOffsetCommit answers OffsetCommit (key 8) with the store's group coordinator
// (group.Coordinator.CommitOffsets, Kafka's OffsetMetadataManager.commitOffset), after the
// checks of Kafka's KafkaApis.handleOffsetCommitRequest: a partition the store does not hold is
// UNKNOWN_TOPIC_OR_PARTITION and is not sent to the coordinator, and a metadata string longer
// than offset.metadata.max.bytes (4096) is OFFSET_METADATA_TOO_LARGE. The other partitions are
// committed together, or all refused with the coordinator's error: a member of another
// generation cannot move the group's positions. Generation -1 with no member id commits from
// outside the group's membership (an admin, or a consumer assigning its own partitions), which
// the coordinator takes while the group is Empty, creating it if need be.
//
// Versions 2 to 4 carry a retention time, ignored as Kafka 4 ignores it (offsets.retention.minutes
// applies); version 6 brings the leader epoch (KIP-320, -1 before), version 7
// group.instance.id (KIP-345).
//
// Error codes, per partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE,
// INVALID_GROUP_ID, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
// REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (the commit could not be stored).
func handleOffsetCommit(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := group.CommitRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation,
		Offsets: map[group.TopicPartition]group.OffsetAndMetadata{}}
	if req.InstanceID != nil {
		cr.InstanceID = *req.InstanceID
	}
	// committed are the error codes of the partitions sent to the coordinator.
	var committed []*int16
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		*st = kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		t, terr := c.srv.store.Topic(rt.Topic)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			if terr != nil {
				sp.ErrorCode = errUnknownTopic
				continue
			}
			if _, err := t.Partition(rp.Partition); err != nil {
				sp.ErrorCode = errUnknownTopic
				continue
			}
			var meta string
			if rp.Metadata != nil {
				meta = *rp.Metadata
			}
			if javaLength(meta) > offsetMetadataMaxSize {
				sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			epoch := int32(-1)
			if r.version >= 6 {
				epoch = rp.LeaderEpoch
			}
			cr.Offsets[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = group.OffsetAndMetadata{
				Offset: rp.Offset, LeaderEpoch: epoch, Metadata: meta}
			committed = append(committed, &sp.ErrorCode)
		}
	}
	if len(committed) == 0 {
		return reply{msg: resp}, nil
	}
	code := c.groupErrorCode(c.srv.groups.CommitOffsets(ctx, cr))
	for _, p := range committed {
		*p = code
	}
	return reply{msg: resp}, nil
}
