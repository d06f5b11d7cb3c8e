package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAPIVersions answers ApiVersions (key 18): the served APIs with their version ranges
// (KIP-35), and no finalized features, so clients use the classic transaction protocol
// (transaction.version 0 or 1; KIP-890 part 2 is not offered). An API not served, such as the
// client telemetry APIs 71 and 72, is left out of the list.
func handleAPIVersions(_ context.Context, c *conn, r *request) (reply, error) {
	return reply{msg: apiVersionsResponse(c.srv.apis, r.version)}, nil
}

func apiVersionsResponse(apis apiTable, version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, a := range apis {
		if a == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(a.key), a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
