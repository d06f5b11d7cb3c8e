package segment

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// TestPositionCache: a batch read once keeps its marks (PositionEntryOverhead plus 4 bytes every
// PositionStride records) until the bound evicts it, a truncation of its segment, or a close.
func TestPositionCache(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		const perBatch = 20
		entry := int64(PositionEntryOverhead + 4*((perBatch+PositionStride-1)/PositionStride))
		cache := NewPositionCache(2 * entry)
		s, err := Create(fsy, dir, 0, testConfig(), Caches{Positions: cache}, false)
		require.NoError(t, err)
		var positions []int64
		for i := range 3 {
			positions = append(positions, s.Size())
			appendBatch(t, s, batch(t, int64(i*perBatch), perBatch, 1000))
		}
		var bufs Buffers
		set := func(recordbatch.Header, recordbatch.RecordView) {}
		for i := range 3 {
			off := int64(i*perBatch + 7)
			found, err := s.ReadRecord(off, 60, 60, s.Lookup(off), s.Size(), s.Truncations(), &bufs, set)
			require.NoError(t, err)
			require.True(t, found)
		}
		entries, bytes, evicted := cache.Stats()
		require.Equal(t, 2, entries)
		require.Equal(t, 2*entry, bytes)
		require.Equal(t, 1, evicted)
		require.False(t, cache.Holds(s, positions[0]), "the least recently used went")
		require.True(t, cache.Holds(s, positions[1]))
		require.True(t, cache.Holds(s, positions[2]))

		s.HoldMappings()
		require.NoError(t, s.Truncate(positions[2]))
		s.ReleaseMappings()
		entries, bytes, _ = cache.Stats()
		require.Zero(t, entries, "a truncation drops the segment's entries")
		require.Zero(t, bytes)

		found, err := s.ReadRecord(3, 40, 40, s.Lookup(3), s.Size(), s.Truncations(), &bufs, set)
		require.NoError(t, err)
		require.True(t, found)
		require.True(t, cache.Holds(s, positions[0]))
		require.NoError(t, s.Close())
		entries, _, _ = cache.Stats()
		require.Zero(t, entries, "closing drops them too")
	})
}
