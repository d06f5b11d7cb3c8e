package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleFindCoordinator answers FindCoordinator (key 10): this node coordinates every group
// (key type 0) and every transactional id (key type 1). Versions 4 and later ask for several
// keys at once (KIP-699); earlier ones for one. Share-group keys (type 2) are
// INVALID_REQUEST: share groups are not served.
func handleFindCoordinator(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code := func(keyType int8, key string) int16 {
		switch keyType {
		case 0:
			if err := c.srv.groups.CheckGroupID(key); err != nil {
				return kerr.InvalidGroupID.Code
			}
			return errNone
		case 1:
			if key == "" {
				return kerr.InvalidRequest.Code
			}
			return errNone
		default:
			return kerr.InvalidRequest.Code
		}
	}
	if r.version < 4 {
		resp.ErrorCode = code(req.CoordinatorType, req.CoordinatorKey)
		if resp.ErrorCode == errNone {
			resp.NodeID, resp.Host, resp.Port = c.srv.cfg.NodeID, c.srv.host, c.srv.port
		} else {
			resp.NodeID, resp.Port = -1, -1
		}
		return reply{msg: resp}, nil
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode = code(req.CoordinatorType, key)
		if rc.ErrorCode == errNone {
			rc.NodeID, rc.Host, rc.Port = c.srv.cfg.NodeID, c.srv.host, c.srv.port
		} else {
			rc.NodeID, rc.Port = -1, -1
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return reply{msg: resp}, nil
}
