package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleMetadata answers Metadata (key 3): this node as the only broker and controller, and
// for each topic asked (all, for a null list, or an empty one before v1) its partitions, each led
// by this node with itself as the only replica and in-sync replica. An unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, or is created with the default partition count when
// Config.AutoCreateTopics is set and the request allows it (v4+; always before v4, as Kafka).
func handleMetadata(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	srv := c.srv
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = srv.cfg.NodeID, srv.host, srv.port
	resp.Brokers = append(resp.Brokers, b)
	resp.ClusterID = &srv.cfg.ClusterID
	resp.ControllerID = srv.cfg.NodeID

	type asked struct {
		name string
		id   [16]byte
		byID bool
	}
	var topics []asked
	if req.Topics == nil || (r.version == 0 && len(req.Topics) == 0) {
		for _, name := range srv.store.Topics() {
			topics = append(topics, asked{name: name})
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				topics = append(topics, asked{name: *t.Topic})
			} else {
				topics = append(topics, asked{id: t.TopicID, byID: true})
			}
		}
	}
	autoCreate := srv.cfg.AutoCreateTopics && (r.version < 4 || req.AllowAutoTopicCreation)
	for _, a := range topics {
		name := a.name
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		if a.byID {
			rt.Topic, rt.TopicID = nil, a.id
		}
		t, err := srv.requestTopic(name, a.id, a.byID)
		if errors.Is(err, commitlog.ErrUnknownTopic) && autoCreate && !a.byID {
			t, err = srv.store.CreateTopic(name, commitlog.TopicConfig{Partitions: srv.cfg.DefaultPartitions})
			if errors.Is(err, commitlog.ErrTopicExists) {
				t, err = srv.store.Topic(name)
			}
		}
		if err != nil {
			rt.ErrorCode = errorCode(err)
			if errors.Is(err, commitlog.ErrInvalidTopicName) {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.Topic, rt.TopicID = kmsg.StringPtr(t.Name()), [16]byte(t.ID())
		for id := range t.PartitionCount() {
			p, err := t.Partition(id)
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = id
			if err != nil {
				rp.ErrorCode = errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.Leader = srv.cfg.NodeID
			rp.LeaderEpoch = leaderEpoch(p)
			rp.Replicas = []int32{srv.cfg.NodeID}
			rp.ISR = []int32{srv.cfg.NodeID}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply{msg: resp}, nil
}

// leaderEpoch is the epoch clients are told the partition's leader has: the store's, and 0 for
// a partition that never had one (a store that never replicated), so that clients' epoch checks
// (KIP-320) have a value to send back.
func leaderEpoch(p *commitlog.Partition) int32 {
	return max(p.Replica().LeaderEpoch(), 0)
}
