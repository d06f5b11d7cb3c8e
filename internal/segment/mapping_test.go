package segment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

var testEpochTime = time.UnixMilli(1_700_000_000_000)

// TestMappingRule: ReadRecord maps the .log file where mappings share its pages and covers the
// bytes it had; appends of less than remapStep read past the mapping with ReadAt; HoldMappings
// drops the mapping and makes none until ReleaseMappings, so a truncation never shrinks the file
// under one.
func TestMappingRule(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		s, err := Create(fsy, dir, 0, testConfig(), Caches{}, false)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		for i := range 10 {
			appendBatch(t, s, batch(t, int64(i*4), 4, 1000))
		}
		var bufs Buffers
		var got int64
		set := func(h recordbatch.Header, v recordbatch.RecordView) { got = h.BaseOffset + int64(v.OffsetDelta) }
		read := func(offset int64) {
			t.Helper()
			found, err := s.ReadRecord(offset, s.NextOffset(), s.NextOffset(), s.Lookup(offset), s.Size(), s.Truncations(), &bufs, set)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, offset, got)
		}
		require.Equal(t, int64(-1), s.MappedSize(), "no read yet")
		read(5)
		mapped := s.Size()
		if !s.SharesMappings() {
			require.Equal(t, int64(-1), s.MappedSize(), "ReadAt, no mapping")
			return
		}
		require.Equal(t, mapped, s.MappedSize())
		appendBatch(t, s, batch(t, 40, 4, 1000))
		read(42)
		require.Equal(t, mapped, s.MappedSize(), "grown by less than remapStep (1 MiB): not mapped again")

		s.HoldMappings()
		require.Equal(t, int64(-1), s.MappedSize())
		read(5) // served by ReadAt
		require.Equal(t, int64(-1), s.MappedSize(), "no mapping while held")
		pos, err := s.PositionOf(8)
		require.NoError(t, err)
		require.NoError(t, s.Truncate(pos))
		s.ReleaseMappings()
		require.Equal(t, int64(8), s.NextOffset())
		read(7)
		require.Equal(t, pos, s.MappedSize(), "mapped again, at the cut size")
	})
}
