package commitlog

import (
	"fmt"
	"testing"
	"time"

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

// TestTopicConfigCompactionFields: the compaction configs are stored under Kafka's names and
// read back; a file of the shape written before them opens with their defaults.
func TestTopicConfigCompactionFields(t *testing.T) {
	in := map[string]TopicConfig{"table": {Partitions: 2, LogConfig: LogConfig{
		CleanupPolicy: CleanupCompactDelete, MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Minute,
		MaxCompactionLag: 2 * time.Hour, DeleteRetention: -1}}}
	b, err := encodeTopicConfigs(in)
	require.NoError(t, err)
	for _, field := range []string{`"cleanup.policy": "compact,delete"`, `"min.cleanable.dirty.ratio": 0.25`,
		`"min.compaction.lag.ms": 60000`, `"max.compaction.lag.ms": 7200000`, `"delete.retention.ms": -1`} {
		require.Contains(t, string(b), field)
	}
	out, err := decodeTopicConfigs(b)
	require.NoError(t, err)
	require.Equal(t, in, out)

	old := []byte(`{"events": {"partitions": 1, "segment.bytes": 4096, "compression.type": "none"}}`)
	out, err = decodeTopicConfigs(old)
	require.NoError(t, err)
	require.Equal(t, CleanupDelete, out["events"].CleanupPolicy)
	require.Zero(t, out["events"].MaxCompactionLag)

	for _, bad := range []string{`"cleanup.policy": "shred"`, `"min.cleanable.dirty.ratio": 1.5`, `"delete.retention.ms": -2`} {
		_, err := decodeTopicConfigs([]byte(`{"t": {"partitions": 1, ` + bad + `}}`))
		require.ErrorIs(t, err, ErrCorrupt, bad)
	}
}
