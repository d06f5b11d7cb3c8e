package broker

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeConfigs answers DescribeConfigs (key 32): a topic's configuration under Kafka's
// topic config names (commitlog.TopicConfig.KafkaConfigs), each value with its source, a
// DYNAMIC_TOPIC_CONFIG override where the topic sets it and DEFAULT_CONFIG otherwise (Kafka's
// ConfigHelper.describeConfigs); and this broker's own settings, read-only, as
// STATIC_BROKER_CONFIG. An unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a broker resource
// naming another node, or a resource type other than topic and broker, INVALID_REQUEST. Config
// names asked for that the topic does not have are left out, as Kafka does.
func handleDescribeConfigs(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var values, overrides map[string]string
		var source kmsg.ConfigSource
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, err := c.srv.store.Topic(res.ResourceName)
			if err != nil {
				rr.ErrorCode = errorCode(err)
				resp.Resources = append(resp.Resources, rr)
				continue
			}
			values, overrides = t.Config().KafkaConfigs(), t.StoredConfig().KafkaConfigOverrides()
			source = kmsg.ConfigSourceDynamicTopicConfig
		case kmsg.ConfigResourceTypeBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(c.srv.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = kmsg.StringPtr("this cluster's only broker is node " + strconv.Itoa(int(c.srv.cfg.NodeID)))
				resp.Resources = append(resp.Resources, rr)
				continue
			}
			values = c.srv.brokerConfigs()
			overrides = values
			source = kmsg.ConfigSourceStaticBrokerConfig
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = kmsg.StringPtr("only topic and broker configs are described")
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		names := res.ConfigNames
		if names == nil {
			names = slices.Sorted(maps.Keys(values))
		}
		for _, name := range names {
			v, ok := values[name]
			if !ok {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value = name, kmsg.StringPtr(v)
			rc.ReadOnly = res.ResourceType == kmsg.ConfigResourceTypeBroker
			if _, set := overrides[name]; set {
				rc.Source = source
			} else {
				rc.Source, rc.IsDefault = kmsg.ConfigSourceDefaultConfig, true
			}
			if req.IncludeSynonyms {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = name, rc.Value, rc.Source
				rc.ConfigSynonyms = append(rc.ConfigSynonyms, syn)
			}
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply{msg: resp}, nil
}

// brokerConfigs are the broker settings DescribeConfigs shows, under Kafka's names.
func (srv *server) brokerConfigs() map[string]string {
	cfg := &srv.cfg
	return map[string]string{
		"node.id":                    strconv.Itoa(int(cfg.NodeID)),
		"advertised.listeners":       "PLAINTEXT://" + srv.host + ":" + strconv.Itoa(int(srv.port)),
		"auto.create.topics.enable":  strconv.FormatBool(cfg.AutoCreateTopics),
		"num.partitions":             strconv.Itoa(int(cfg.DefaultPartitions)),
		"default.replication.factor": "1",
		"socket.request.max.bytes":   strconv.Itoa(int(cfg.MaxRequestBytes)),
		"connections.max.idle.ms":    strconv.FormatInt(cfg.IdleTimeout.Milliseconds(), 10),
		"max.connections":            strconv.Itoa(cfg.MaxConnections),
	}
}
