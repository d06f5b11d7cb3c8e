package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// A member subscribed (by name) to a topic that does not exist yet reads it once it is created:
// the leader watches the subscribed topic and rejoins, as Kafka's leader does on a metadata change.
func TestGroupTopicCreatedAfterSubscribeIsAssigned(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		gr, err := s.NewGroupReader(fastGroup("late", "later"))
		require.NoError(t, err)
		defer gr.Close()
		require.Eventually(t, func() bool { g, _ := gr.Generation(); return g > 0 }, groupWait, 5*time.Millisecond)
		fillGroupTopic(t, s, "later", 2, 3)
		require.Len(t, readN(t, gr, 6), 6)
		require.Equal(t, partitionsOf("later", 2), gr.Assignment())
	})
}

// A topic deleted and created again under its name with the same partition count, while a member
// reads it, is read again from the new topic's start: the member loses the old partitions (OnLost,
// their positions went with the topic) and joins again, since no partition count tells the two
// topics apart.
func TestGroupTopicDeletedAndCreatedAgainIsReadAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		fillGroupTopic(t, s, "a", 2, 3)
		var lost []TopicPartition
		cfg := fastGroup("g", "a")
		cfg.HeartbeatInterval = 500 * time.Millisecond
		cfg.OnLost = func(_ context.Context, parts []TopicPartition) { lost = append(lost, parts...) }
		gr, err := s.NewGroupReader(cfg)
		require.NoError(t, err)
		defer gr.Close()
		require.Len(t, readN(t, gr, 6), 6)
		require.NoError(t, gr.Commit(context.Background()))
		require.NoError(t, s.DeleteTopic("a"))
		fillGroupTopic(t, s, "a", 2, 4)
		recs := readN(t, gr, 8)
		got := map[TopicPartition][]int64{}
		for _, r := range recs {
			tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
			got[tp] = append(got[tp], r.Offset)
		}
		require.Equal(t, map[TopicPartition][]int64{{Topic: "a", Partition: 0}: {0, 1, 2, 3}, {Topic: "a", Partition: 1}: {0, 1, 2, 3}}, got)
		require.Equal(t, partitionsOf("a", 2), lost)
		require.Equal(t, partitionsOf("a", 2), gr.Assignment())
	})
}
