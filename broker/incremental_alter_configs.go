package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleIncrementalAlterConfigs answers IncrementalAlterConfigs (key 44, KIP-339) for topics:
// each operation is applied in order to the topic's stored configuration — SET parses the value
// as Kafka does (commitlog.TopicConfig.SetKafkaConfig), DELETE returns the config to its default,
// APPEND and SUBTRACT add or remove items of a list config (cleanup.policy) — and the result
// replaces the live topic's configuration with commitlog.Store.AlterTopicConfig, unless
// validate_only. A config name the store does not model or a value Kafka refuses is
// INVALID_CONFIG, and nothing of that resource changes; APPEND or SUBTRACT on a non-list
// config is INVALID_CONFIG, as Kafka answers. Broker configs are static here: INVALID_REQUEST.
func handleIncrementalAlterConfigs(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		err := c.alterTopicConfigs(res, req.ValidateOnly)
		if err != nil {
			rr.ErrorCode = errorCode(err) // a kerr.Error's own code first
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply{msg: resp}, nil
}

func (c *conn) alterTopicConfigs(res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	t, err := c.alterableTopic(res.ResourceType, res.ResourceName)
	if err != nil {
		return err
	}
	cfg := t.StoredConfig()
	for _, op := range res.Configs {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			cfg, err = cfg.SetKafkaConfig(op.Name, value)
		case kmsg.IncrementalAlterConfigOpDelete:
			cfg, err = cfg.ResetKafkaConfig(op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if op.Name != "cleanup.policy" {
				return fmt.Errorf("%w: %s is not a list config: APPEND and SUBTRACT apply to list configs", kerr.InvalidConfig, op.Name)
			}
			cur := splitList(t.Config().KafkaConfigs()[op.Name])
			for _, item := range splitList(value) {
				has := slices.Contains(cur, item)
				if op.Op == kmsg.IncrementalAlterConfigOpAppend && !has {
					cur = append(cur, item)
				} else if op.Op == kmsg.IncrementalAlterConfigOpSubtract && has {
					cur = slices.DeleteFunc(cur, func(s string) bool { return s == item })
				}
			}
			cfg, err = cfg.SetKafkaConfig(op.Name, strings.Join(cur, ","))
		default:
			return fmt.Errorf("%w: unknown operation %d", kerr.InvalidRequest, op.Op)
		}
		if err != nil {
			return invalidConfig(err)
		}
	}
	if validateOnly {
		return nil
	}
	return c.srv.store.AlterTopicConfig(res.ResourceName, cfg)
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// alterableTopic returns the topic an alter request names: INVALID_REQUEST for a resource other
// than a topic (broker settings are static here), UNKNOWN_TOPIC_OR_PARTITION for an unknown one.
func (c *conn) alterableTopic(typ kmsg.ConfigResourceType, name string) (*commitlog.Topic, error) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return nil, fmt.Errorf("%w: only topic configs can be altered (broker settings are static)", kerr.InvalidRequest)
	}
	return c.srv.store.Topic(name)
}

// invalidConfig answers a config the store refuses (commitlog.ErrInvalidConfig, ErrUnknownConfig)
// with INVALID_CONFIG, as Kafka's AdminManager does.
func invalidConfig(err error) error {
	if errors.Is(err, commitlog.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
	}
	return err
}
