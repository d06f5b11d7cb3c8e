package commitlog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseCleanupPolicy: Kafka's spellings of cleanup.policy, and nothing else.
func TestParseCleanupPolicy(t *testing.T) {
	for in, want := range map[string]CleanupPolicy{
		"": CleanupDelete, "delete": CleanupDelete, "compact": CleanupCompact,
		"compact,delete": CleanupCompactDelete, "delete,compact": CleanupCompactDelete, " compact , delete ": CleanupCompactDelete,
	} {
		got, err := ParseCleanupPolicy(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"shred", "compact,", ",", "compact,shred"} {
		_, err := ParseCleanupPolicy(in)
		require.ErrorIs(t, err, ErrInvalidConfig, in)
	}
	require.Equal(t, "compact,delete", CleanupCompactDelete.String())
	require.True(t, CleanupCompactDelete.Compact() && CleanupCompactDelete.Delete())
	require.False(t, CleanupCompact.Delete())
	require.False(t, CleanupDelete.Compact())
}

// TestCompactionConfigDefaultsAndRange: defaults of the compaction configs, their ranges, and
// Kafka's LogConfig.maxSegmentMs (a compacted log rolls by max.compaction.lag.ms too).
func TestCompactionConfigDefaultsAndRange(t *testing.T) {
	c, _, err := LogConfig{}.resolve(SyncDefault)
	require.NoError(t, err)
	require.Equal(t, CleanupDelete, c.CleanupPolicy)
	require.Equal(t, 0.5, c.MinCleanableDirtyRatio)
	require.Equal(t, 24*time.Hour, c.DeleteRetention)
	require.Zero(t, c.MinCompactionLag)
	require.Zero(t, c.MaxCompactionLag)

	c, _, err = LogConfig{CleanupPolicy: CleanupCompact, MaxCompactionLag: time.Hour}.resolve(SyncDefault)
	require.NoError(t, err)
	require.Equal(t, time.Hour, c.SegmentDuration)
	c, _, err = LogConfig{MaxCompactionLag: time.Hour}.resolve(SyncDefault)
	require.NoError(t, err)
	require.Equal(t, DefaultSegmentDuration, c.SegmentDuration, "only a compacted log rolls by it")

	for name, cfg := range map[string]LogConfig{
		"policy":       {CleanupPolicy: 7},
		"ratio high":   {MinCleanableDirtyRatio: 1.01},
		"ratio low":    {MinCleanableDirtyRatio: -0.1},
		"min lag":      {MinCompactionLag: -time.Second},
		"max lag":      {MaxCompactionLag: -time.Second},
		"max lag < ms": {MaxCompactionLag: time.Microsecond},
	} {
		_, _, err := cfg.resolve(SyncDefault)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
}
