package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleAlterConfigs answers the legacy AlterConfigs (key 33), which kafkajs and older admin
// tools send: each topic's configuration is replaced whole by the configs given, every config
// not named returning to its default (Kafka's AdminManager.alterConfigs semantics, unlike
// IncrementalAlterConfigs), with commitlog.Store.AlterTopicConfig unless validate_only. Errors as
// IncrementalAlterConfigs: INVALID_CONFIG for a name the store does not model or a value Kafka
// refuses, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST for broker configs (static here).
func handleAlterConfigs(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if err := c.replaceTopicConfigs(res, req.ValidateOnly); err != nil {
			rr.ErrorCode = errorCode(err)
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply{msg: resp}, nil
}

func (c *conn) replaceTopicConfigs(res kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	t, err := c.alterableTopic(res.ResourceType, res.ResourceName)
	if err != nil {
		return err
	}
	cfg := commitlog.TopicConfig{Partitions: t.PartitionCount()}
	for _, rc := range res.Configs {
		if rc.Value == nil {
			continue // null: the default, as every config not named
		}
		if cfg, err = cfg.SetKafkaConfig(rc.Name, *rc.Value); err != nil {
			return invalidConfig(err)
		}
	}
	if validateOnly {
		return nil
	}
	return c.srv.store.AlterTopicConfig(res.ResourceName, cfg)
}
