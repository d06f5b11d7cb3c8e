package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// ListOffsets timestamps with a special meaning (Kafka's ListOffsetsRequest).
const (
	latestTimestamp   = -1 // the log end offset at the isolation level
	earliestTimestamp = -2 // the log start offset
	maxTimestamp      = -3 // the record with the largest timestamp (KIP-734)
	earliestLocal     = -4 // the first offset kept locally (KIP-405): the log start offset here
	latestTiered      = -5 // the last offset in tiered storage (KIP-1005): none here
)

// handleListOffsets answers ListOffsets (key 2), as Kafka's UnifiedLog.fetchOffsetByTimestamp:
// latest (-1) is the high watermark, or the last stable offset under read_committed; earliest
// (-2) and earliest-local (-4) the log start offset; latest-tiered (-5) is -1, as a log without
// tiered storage answers; a timestamp gives the first offset whose record has a timestamp at or
// after it, with that record's timestamp, or -1 when there is none. Version 0's old-style offset
// lists are not served (Kafka 4 dropped them too).
func handleListOffsets(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	level := commitlog.ReadUncommitted
	if req.IsolationLevel == 1 {
		level = commitlog.ReadCommitted
	}
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := c.srv.store.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p, err := partitionOf(t, terr, rp.Partition)
			if err == nil {
				err = listOffset(p, rp, level, &sp)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}

func listOffset(p *commitlog.Partition, rp kmsg.ListOffsetsRequestTopicPartition, level commitlog.IsolationLevel, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	epoch := leaderEpoch(p)
	if rp.CurrentLeaderEpoch >= 0 {
		if rp.CurrentLeaderEpoch < epoch {
			return commitlog.ErrFencedLeaderEpoch
		} else if rp.CurrentLeaderEpoch > epoch {
			return commitlog.ErrUnknownLeaderEpoch
		}
	}
	switch rp.Timestamp {
	case latestTimestamp:
		sp.Offset, sp.LeaderEpoch = p.FetchBound(level), epoch
	case earliestTimestamp, earliestLocal:
		sp.Offset, sp.LeaderEpoch = p.LogStartOffset(), epoch
	case latestTiered:
	case maxTimestamp:
		off, ts, err := p.MaxTimestamp()
		if err != nil {
			return err
		}
		if off >= 0 {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, epoch
		}
	default:
		if rp.Timestamp < 0 {
			return commitlog.ErrInvalidTimestamp
		}
		off, err := p.OffsetForTime(time.UnixMilli(rp.Timestamp))
		if errors.Is(err, commitlog.ErrNoOffsetForTime) {
			return nil // no record that recent: offset -1, timestamp -1, as Kafka answers
		}
		if err != nil {
			return err
		}
		if off < 0 || off >= p.FetchBound(level) {
			return nil
		}
		var rec commitlog.Record
		if err := p.ReadRecord(off, &rec); err != nil {
			return err
		}
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, rec.Timestamp.UnixMilli(), epoch
	}
	return nil
}
