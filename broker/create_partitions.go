package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreatePartitions answers CreatePartitions (key 37, KIP-195): each topic grows to its
// new count with commitlog.Store.CreatePartitions. A count not above the current one is
// INVALID_PARTITIONS, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a manual assignment naming
// another node than this one INVALID_REPLICA_ASSIGNMENT, a topic named twice in the request
// INVALID_REQUEST; validate_only checks without adding.
func handleCreatePartitions(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		err := c.createPartitions(rt, seen[rt.Topic] > 1, req.ValidateOnly)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}

func (c *conn) createPartitions(rt kmsg.CreatePartitionsRequestTopic, duplicate, validateOnly bool) error {
	if duplicate {
		return fmt.Errorf("%w: topic %q is named more than once", kerr.InvalidRequest, rt.Topic)
	}
	t, err := c.srv.store.Topic(rt.Topic)
	if err != nil {
		return err
	}
	cur := t.PartitionCount()
	if rt.Count <= cur {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", kerr.InvalidPartitions, rt.Topic, cur, rt.Count)
	}
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(rt.Count-cur) {
			return fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(rt.Assignment), rt.Count-cur)
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != c.srv.cfg.NodeID {
				return fmt.Errorf("%w: the only broker is node %d", kerr.InvalidReplicaAssignment, c.srv.cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return nil
	}
	return c.srv.store.CreatePartitions(rt.Topic, rt.Count)
}
