package commitlog

import (
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
		require.Eventually(t, func() bool { g, _ := gr.Generation(); return g > 0 }, 10*time.Second, 5*time.Millisecond)
		fillGroupTopic(t, s, "later", 2, 3)
		require.Len(t, readN(t, gr, 6), 6)
		require.Equal(t, partitionsOf("later", 2), gr.Assignment())
	})
}
