package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeCluster answers DescribeCluster (key 60, KIP-700): the cluster id and this node
// as its only broker and controller.
func handleDescribeCluster(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = c.srv.cfg.ClusterID
	resp.ControllerID = c.srv.cfg.NodeID
	resp.EndpointType = 1 // brokers
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = c.srv.cfg.NodeID, c.srv.host, c.srv.port
	resp.Brokers = append(resp.Brokers, b)
	return reply{msg: resp}, nil
}
