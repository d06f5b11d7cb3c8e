package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/commitlog-go/commitlog"
)

// topicByID returns the topic a request names by its topic id (Fetch from v13, Produce from
// v13, Metadata's topics without a name): UNKNOWN_TOPIC_ID (KIP-516) for an id no topic has,
// where a name would be UNKNOWN_TOPIC_OR_PARTITION.
func (srv *server) topicByID(id [16]byte) (*commitlog.Topic, error) {
	t, err := srv.store.TopicByID(commitlog.TopicID(id))
	if errors.Is(err, commitlog.ErrUnknownTopic) {
		return nil, fmt.Errorf("%w: %v", kerr.UnknownTopicID, err)
	}
	return t, err
}

// requestTopic returns the topic a request names: by id when byID (the versions that carry
// ids), else by name.
func (srv *server) requestTopic(name string, id [16]byte, byID bool) (*commitlog.Topic, error) {
	if byID {
		return srv.topicByID(id)
	}
	return srv.store.Topic(name)
}

// partitionOf returns partition id of t, a topic a request named, or terr, the error of looking
// the topic up: the per-partition lookup every handler that lists topics and partitions does.
func partitionOf(t *commitlog.Topic, terr error, id int32) (*commitlog.Partition, error) {
	if terr != nil {
		return nil, terr
	}
	return t.Partition(id)
}
