package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// One CreateTopics request of many topics answers each in the request's order with its own
// error code, as Kafka does: the valid topics are created (in one Store.CreateTopics call),
// while a held name is TOPIC_ALREADY_EXISTS, a name given twice INVALID_REQUEST for each, an
// illegal name INVALID_TOPIC_EXCEPTION, a replication factor above 1 INVALID_REPLICATION_FACTOR
// and a partition count of 0 INVALID_PARTITIONS; none of those is created, and each answers
// NumPartitions -1 (the field's default).
func TestCreateTopicsManyInOneRequest(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := startBroker(t, be.open(t), Config{DefaultPartitions: 2})
			ctx := testContext(t)
			cl := b.client(t)
			_, err := b.store.CreateTopic("held", commitlog.TopicConfig{})
			require.NoError(t, err)

			req := kmsg.NewPtrCreateTopicsRequest()
			add := func(name string, partitions int32, replication int16) {
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, replication
				req.Topics = append(req.Topics, rt)
			}
			add("orders", 3, 1)
			add("held", 1, 1)
			add("twice", 1, 1)
			add("bad name", 1, 1)
			add("payments", -1, -1)
			add("twice", 2, 1)
			add("replicated", 1, 3)
			add("none", 0, 1)
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)

			type answer struct {
				topic      string
				code       int16
				partitions int32
			}
			var got []answer
			for _, st := range resp.Topics {
				got = append(got, answer{st.Topic, st.ErrorCode, st.NumPartitions})
				if st.ErrorCode != 0 {
					require.NotNil(t, st.ErrorMessage, st.Topic)
				}
			}
			require.Equal(t, []answer{
				{"orders", 0, 3},
				{"held", kerr.TopicAlreadyExists.Code, -1},
				{"twice", kerr.InvalidRequest.Code, -1},
				{"bad name", kerr.InvalidTopicException.Code, -1},
				{"payments", 0, 2},
				{"twice", kerr.InvalidRequest.Code, -1},
				{"replicated", kerr.InvalidReplicationFactor.Code, -1},
				{"none", kerr.InvalidPartitions.Code, -1},
			}, got)
			require.Equal(t, []string{"held", "orders", "payments"}, b.store.Topics())
			for _, i := range []int{0, 4} {
				topic, err := b.store.Topic(resp.Topics[i].Topic)
				require.NoError(t, err)
				require.Equal(t, [16]byte(topic.ID()), [16]byte(resp.Topics[i].TopicID))
			}
		})
	}
}
