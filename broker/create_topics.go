package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleCreateTopics answers CreateTopics (key 19), as Kafka's ZkAdminManager/ControllerApis:
// each topic is created with its partition count (-1: Config.DefaultPartitions) and its
// configs under Kafka's names; the replication factor must be -1 or 1 and a manual replica
// assignment must name only this node (INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT
// otherwise: there is one broker); validate_only checks without creating. A name given twice in
// one request is INVALID_REQUEST for each, as Kafka answers. The request's topics are created in
// one Store.CreateTopics call (one round of durable writes for all of them), each answered with
// its own error code.
func handleCreateTopics(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// The topics that pass the request's checks are created in one Store.CreateTopics call, its
	// durable writes shared, each answered with its own result.
	create := map[string]commitlog.TopicConfig{}
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		switch cfg, code, msg := c.createTopicConfig(rt); {
		case seen[rt.Topic] > 1:
			failCreateTopic(st, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q is named more than once in the request", rt.Topic))
		case code != errNone:
			failCreateTopic(st, code, msg)
		case req.ValidateOnly:
			if _, err := c.srv.store.Topic(rt.Topic); err == nil {
				failCreateTopic(st, kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %q already exists", rt.Topic))
			} else if err := commitlog.CheckTopicName(rt.Topic); err != nil {
				failCreateTopic(st, errorCode(err), err.Error())
			}
			st.NumPartitions, st.ReplicationFactor = cfg.Partitions, 1
		default:
			create[rt.Topic] = cfg
		}
	}
	if len(create) == 0 {
		return reply{msg: resp}, nil
	}
	created := c.srv.store.CreateTopics(create)
	for i := range resp.Topics {
		st := &resp.Topics[i]
		res, ok := created[st.Topic]
		if !ok {
			continue
		}
		if err := res.Err; err != nil {
			code := errorCode(err)
			if errors.Is(err, commitlog.ErrInvalidTopicName) {
				code = kerr.InvalidTopicException.Code
			}
			failCreateTopic(st, code, err.Error())
			continue
		}
		t := res.Topic
		st.NumPartitions, st.ReplicationFactor = t.PartitionCount(), 1
		st.TopicID = [16]byte(t.ID())
		st.Configs = createdTopicConfigs(t.Config().KafkaConfigs(), t.StoredConfig().KafkaConfigOverrides())
	}
	return reply{msg: resp}, nil
}

// failCreateTopic sets the error code and message of a topic's CreateTopics answer.
func failCreateTopic(st *kmsg.CreateTopicsResponseTopic, code int16, msg string) {
	st.ErrorCode = code
	st.ErrorMessage = &msg
}

// createdTopicConfigs are the configs CreateTopics v5+ answers a new topic with (KIP-525): each
// of its configs, sourced DYNAMIC_TOPIC_CONFIG where the request set it and DEFAULT_CONFIG
// otherwise.
func createdTopicConfigs(values, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(values))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = name, kmsg.StringPtr(values[name])
		c.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if _, set := overrides[name]; set {
			c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		out = append(out, c)
	}
	return out
}

// createTopicConfig is the configuration of a topic to create, or an error code and message.
func (c *conn) createTopicConfig(rt kmsg.CreateTopicsRequestTopic) (commitlog.TopicConfig, int16, string) {
	cfg := commitlog.TopicConfig{Partitions: rt.NumPartitions}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return cfg, kerr.InvalidRequest.Code, "both a replica assignment and a partition count or replication factor"
		}
		cfg.Partitions = int32(len(rt.ReplicaAssignment))
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) {
				return cfg, kerr.InvalidReplicaAssignment.Code, "the replica assignment must list partitions 0 to n-1 in order"
			}
			if len(a.Replicas) != 1 || a.Replicas[0] != c.srv.cfg.NodeID {
				return cfg, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("partition %d: the only broker is node %d", a.Partition, c.srv.cfg.NodeID)
			}
		}
	}
	if cfg.Partitions == -1 {
		cfg.Partitions = c.srv.cfg.DefaultPartitions
	}
	if cfg.Partitions <= 0 || cfg.Partitions > commitlog.MaxPartitions {
		return cfg, kerr.InvalidPartitions.Code, fmt.Sprintf("%d partitions: must be 1 to %d", cfg.Partitions, commitlog.MaxPartitions)
	}
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return cfg, kerr.InvalidReplicationFactor.Code, fmt.Sprintf("replication factor %d: this cluster has 1 broker", rt.ReplicationFactor)
	}
	for _, kc := range rt.Configs {
		if kc.Value == nil {
			continue
		}
		next, err := cfg.SetKafkaConfig(kc.Name, *kc.Value)
		if err != nil {
			return cfg, kerr.InvalidConfig.Code, err.Error()
		}
		cfg = next
	}
	return cfg, errNone, ""
}
