package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteTopics answers DeleteTopics (key 20): each topic, named by name or (v6) by id, is
// deleted with commitlog.Store.DeleteTopic, its records, its consumer groups' committed offsets
// and its readers' positions with it. An unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown
// id UNKNOWN_TOPIC_ID.
func handleDeleteTopics(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type named struct {
		name string
		id   [16]byte
		byID bool
	}
	var topics []named
	for _, name := range req.TopicNames { // v0 to v5
		topics = append(topics, named{name: name})
	}
	for _, t := range req.Topics { // v6
		if t.Topic != nil {
			topics = append(topics, named{name: *t.Topic})
		} else {
			topics = append(topics, named{id: t.TopicID, byID: true})
		}
	}
	for _, n := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = kmsg.StringPtr(n.name), n.id
		err := func() error {
			t, err := c.srv.requestTopic(n.name, n.id, n.byID)
			if err != nil {
				return err
			}
			st.Topic, st.TopicID = kmsg.StringPtr(t.Name()), [16]byte(t.ID())
			return c.srv.store.DeleteTopic(t.Name())
		}()
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Topics = append(resp.Topics, st)
	}
	return reply{msg: resp}, nil
}
