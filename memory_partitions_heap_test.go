//go:build unix && !race && !commitlog_nommap

package commitlog

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Only where the memory file system gives preallocations anonymous mappings (internal/fsys's
// memory_anon_unix.go): under the race detector, with commitlog_nommap and off Unix a writable
// index's preallocation (segment.index.bytes) is zeroed Go heap, 2 × 10 MiB per empty partition
// by default, which this test would catch.

// TestInMemoryEmptyPartitionsHeap: the in-memory store's empty partitions take no index space up
// front on the Go heap: 200 of them (400 indexes of segment.index.bytes, 10 MiB, each) grow the
// heap by far less than one index's preallocation.
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
