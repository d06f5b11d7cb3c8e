package broker

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
)

// handleOffsetFetch answers OffsetFetch (key 9) with the store's group coordinator
// (group.Coordinator.FetchOffsets), as Kafka's OffsetMetadataManager.fetchOffsets and
// fetchAllOffsets: each partition asked gets the group's committed offset, leader epoch (v5+)
// and metadata, or offset -1, leader epoch -1 and empty metadata with no error when the group
// has none for it, also when the group does not exist or never committed (not
// GROUP_ID_NOT_FOUND). A null topic list (v2+) asks for every partition the group has an
// offset for. Version 8 and later ask for several groups at once (KIP-709), each answered with
// its own error; version 9's member id and epoch are KIP-848's and not checked for a classic
// group, as Kafka does not check them.
//
// require_stable (v7+, KIP-447) answers UNSTABLE_OFFSET_COMMIT, with offset -1, for each
// partition with a transactional commit (TxnOffsetCommit) whose transaction has not ended
// (group.Coordinator.HasPendingTxnOffsets), so that a consumer does not start from an offset
// about to move; the client retries.
//
// Error codes: COORDINATOR_NOT_AVAILABLE for a group when the coordinator is closed; versions 2
// to 7 answer it at the top level, version 1 on each partition asked, as Kafka does.
func handleOffsetFetch(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.version >= 8 {
		for _, rg := range req.Groups {
			var asked []offsetFetchTopic
			if rg.Topics != nil {
				asked = make([]offsetFetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					asked = append(asked, offsetFetchTopic{topic: t.Topic, partitions: t.Partitions})
				}
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			g.Topics, g.ErrorCode = c.fetchGroupOffsets(rg.Group, asked, rg.Topics == nil, req.RequireStable)
			resp.Groups = append(resp.Groups, g)
		}
		return reply{msg: resp}, nil
	}

	var asked []offsetFetchTopic
	for _, t := range req.Topics {
		asked = append(asked, offsetFetchTopic{topic: t.Topic, partitions: t.Partitions})
	}
	all := req.Topics == nil && r.version >= 2
	topics, code := c.fetchGroupOffsets(req.Group, asked, all, r.version >= 7 && req.RequireStable)
	if code != errNone {
		if r.version >= 2 {
			resp.ErrorCode = code
			return reply{msg: resp}, nil
		}
		// Version 1 has no group error: each partition asked carries it.
		topics = offsetFetchAnswer(asked, nil, code)
	}
	for _, gt := range topics {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = gt.Topic
		for _, gp := range gt.Partitions {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return reply{msg: resp}, nil
}

// offsetFetchTopic is one topic of an OffsetFetch, with the partitions asked.
type offsetFetchTopic struct {
	topic      string
	partitions []int32
}

// fetchGroupOffsets answers one group of an OffsetFetch: the partitions asked, or with all every
// partition the group has an offset for (ordered by topic and partition), and the group's error
// code. With requireStable a partition with a pending transactional commit is
// UNSTABLE_OFFSET_COMMIT.
func (c *conn) fetchGroupOffsets(id string, asked []offsetFetchTopic, all, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	var tps []group.TopicPartition
	if !all {
		tps = []group.TopicPartition{}
		for _, t := range asked {
			for _, p := range t.partitions {
				tps = append(tps, group.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	offsets, err := c.srv.groups.FetchOffsets(id, tps)
	if err != nil {
		return nil, c.groupErrorCode(err)
	}
	if all {
		asked = nil
		tps = slices.Collect(maps.Keys(offsets))
		slices.SortFunc(tps, func(a, b group.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, tp := range tps {
			if len(asked) == 0 || asked[len(asked)-1].topic != tp.Topic {
				asked = append(asked, offsetFetchTopic{topic: tp.Topic})
			}
			last := &asked[len(asked)-1]
			last.partitions = append(last.partitions, tp.Partition)
		}
	}
	out := offsetFetchAnswer(asked, offsets, errNone)
	if requireStable {
		for i := range out {
			for j := range out[i].Partitions {
				gp := &out[i].Partitions[j]
				if c.srv.groups.HasPendingTxnOffsets(id, group.TopicPartition{Topic: out[i].Topic, Partition: gp.Partition}) {
					gp.ErrorCode, gp.Offset, gp.LeaderEpoch = kerr.UnstableOffsetCommit.Code, -1, -1
				}
			}
		}
	}
	return out, errNone
}

// offsetFetchAnswer answers the partitions asked with their offsets: -1, leader epoch -1 and
// empty metadata for one without, each with code.
func offsetFetchAnswer(asked []offsetFetchTopic, offsets map[group.TopicPartition]group.OffsetAndMetadata, code int16) []kmsg.OffsetFetchResponseGroupTopic {
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(asked))
	for _, t := range asked {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = t.topic
		for _, p := range t.partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.ErrorCode = p, code
			gp.Offset, gp.LeaderEpoch = -1, -1
			meta := ""
			if o, ok := offsets[group.TopicPartition{Topic: t.topic, Partition: p}]; ok {
				gp.Offset, gp.LeaderEpoch, meta = o.Offset, o.LeaderEpoch, o.Metadata
			}
			gp.Metadata = &meta
			gt.Partitions = append(gt.Partitions, gp)
		}
		out = append(out, gt)
	}
	return out
}
