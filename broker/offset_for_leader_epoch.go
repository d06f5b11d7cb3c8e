package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleOffsetForLeaderEpoch answers OffsetForLeaderEpoch (key 23) from a consumer (KIP-320):
// for each partition, the largest leader epoch at most the one asked for and the offset where
// the next epoch starts (the log end offset for the current epoch), from the partition's
// leader-epoch-checkpoint (commitlog.Replica.EpochEndOffset). A current_leader_epoch older than
// the partition's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
func handleOffsetForLeaderEpoch(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, terr := c.srv.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, err := partitionOf(t, terr, rp.Partition)
			if err == nil {
				err = epochEndOffset(ctx, p, rp, &sp)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}

func epochEndOffset(ctx context.Context, p *commitlog.Partition, rp kmsg.OffsetForLeaderEpochRequestTopicPartition, sp *kmsg.OffsetForLeaderEpochResponseTopicPartition) error {
	epoch := leaderEpoch(p)
	if rp.CurrentLeaderEpoch >= 0 {
		if rp.CurrentLeaderEpoch < epoch {
			return commitlog.ErrFencedLeaderEpoch
		} else if rp.CurrentLeaderEpoch > epoch {
			return commitlog.ErrUnknownLeaderEpoch
		}
	}
	if rp.LeaderEpoch >= epoch {
		// The current epoch (or one this node never had, later than it) ends at the log end.
		sp.LeaderEpoch, sp.EndOffset = epoch, p.LogEndOffset()
		if rp.LeaderEpoch > epoch {
			sp.LeaderEpoch, sp.EndOffset = -1, -1
		}
		return nil
	}
	eo, err := p.Replica().EpochEndOffset(ctx, rp.LeaderEpoch)
	if err != nil {
		return err
	}
	sp.LeaderEpoch, sp.EndOffset = eo.LeaderEpoch, eo.EndOffset
	return nil
}
