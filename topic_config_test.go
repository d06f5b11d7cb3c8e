package commitlog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// TestPartitionCountCeiling: a topic has 1 to MaxPartitions partitions; a count outside is
// ErrInvalidConfig naming the field and value, from CreateTopic and from a stored config, and
// nothing is created.
func TestPartitionCountCeiling(t *testing.T) {
	for _, tc := range []struct {
		n       int32
		wantErr string
	}{
		{1, ""},
		{3, ""},
		{MaxPartitions + 1, "commitlog: invalid config: Partitions = 4001 (1 to 4000)"},
		{1 << 30, "commitlog: invalid config: Partitions = 1073741824 (1 to 4000)"},
		{-1, "commitlog: invalid config: Partitions = -1 (1 to 4000)"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp, err := s.CreateTopic("events", TopicConfig{Partitions: tc.n})
				if tc.wantErr == "" {
					require.NoError(t, err)
					require.Equal(t, tc.n, tp.PartitionCount())
					return
				}
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Empty(t, s.Topics())
				require.Equal(t, []string{".lock"}, env.entries(t))

				// The same count in a stored config: the store refuses to open rather than
				// creating that many folders.
				require.NoError(t, s.Close())
				b, err := encodeTopicConfigs(map[string]TopicConfig{"events": {Partitions: tc.n}})
				require.NoError(t, err)
				require.NoError(t, checkpoint.Write(env.FS(), env.path(topicsFileName), b))
				_, err = env.open()
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tc.wantErr)
			})
		})
	}
}
