package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteTopics answers DeleteTopics (key 20): each named topic is deleted with
// commitlog.Store.DeleteTopic, its records, its consumer groups' committed offsets and its
// readers' positions with it. An unknown name is UNKNOWN_TOPIC_OR_PARTITION. Topics named by id
// (v6) are not served.
func handleDeleteTopics(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := req.TopicNames
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		if err := c.srv.store.DeleteTopic(name); err != nil {
			st.ErrorCode = errorCode(err)
			msg := err.Error()
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}
