package commitlog

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInMemoryEmptyPartitionsHeap: the in-memory store's empty partitions take no index space up
// front: 200 of them (400 indexes of up to segment.index.bytes, 10 MiB, each) grow the heap by
// far less than one index's maximum size, on every build: an index starts at a page and grows
// by steps (internal/index), so where the memory file system's preallocations are Go heap (the
// race detector, commitlog_nommap, systems without anonymous mappings) a partition takes two
// pages for its indexes, not 2 x 10 MiB.
func TestInMemoryEmptyPartitionsHeap(t *testing.T) {
	const partitions = 200
	s, err := OpenInMemory(WithRetentionCheckInterval(-1))
	require.NoError(t, err)
	defer s.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	_, err = s.CreateTopic("empty", TopicConfig{Partitions: partitions})
	require.NoError(t, err)
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("heap grew by %d bytes for %d empty partitions", grown, partitions)
	require.Less(t, grown, int64(8<<20), "%d partitions", partitions)
}
