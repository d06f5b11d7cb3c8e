package segment

import (
	"encoding/binary"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// After a clean close, an active segment of no more than index.interval.bytes loads without
// opening its indexes (loadClosed), and the first append opens them; its state is then exactly
// that of the same segment loaded the checked way (no file cache: Load opens and checks the
// indexes). A segment past the interval, an offset index holding an entry, or a time index that
// is not whole entries load the checked way, files open; time index entries that fail their
// check are emptied at the first open.
func TestLoadClosedSmallActiveSegment(t *testing.T) {
	tests := []struct {
		name     string
		interval int
		damage   func(t *testing.T, fsy fsys.FS, s *Segment)
		closed   bool       // loaded with its files closed
		entries  [][2]int64 // the time index once the files open, before the next append
	}{
		{name: "small", interval: 4096, closed: true, entries: [][2]int64{{2004, 109}}},
		{name: "past the interval", interval: 300, closed: false, entries: [][2]int64{{2004, 109}}},
		{name: "offset index entry", interval: 4096, closed: false, entries: [][2]int64{{2004, 109}},
			damage: func(t *testing.T, fsy fsys.FS, s *Segment) {
				writeAt(t, fsy, s.Path(IndexSuffix), binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 5), 166))
			}},
		// Rebuilt by the checked path: no entry is due within the interval.
		{name: "time index of a partial entry", interval: 4096, closed: false, entries: nil,
			damage: func(t *testing.T, fsy fsys.FS, s *Segment) {
				f, err := fsy.OpenFile(s.Path(TimeIndexSuffix), os.O_RDWR, 0)
				require.NoError(t, err)
				_, err = f.WriteAt(make([]byte, 5), 12)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}},
		// Two clean closes, each after an append, leave two entries: loaded closed, kept.
		{name: "time index of two entries", interval: 4096, closed: true, entries: [][2]int64{{1004, 104}, {2004, 109}},
			damage: func(t *testing.T, fsy fsys.FS, s *Segment) {
				b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 1004), 4)
				b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, 2004), 9)
				writeAt(t, fsy, s.Path(TimeIndexSuffix), b)
			}},
		// Not in order: emptied at the first open.
		{name: "time index entries out of order", interval: 4096, closed: true, entries: nil,
			damage: func(t *testing.T, fsy fsys.FS, s *Segment) {
				b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 2004), 9)
				b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, 1004), 4)
				writeAt(t, fsy, s.Path(TimeIndexSuffix), b)
			}},
		{name: "time index entry past the data", interval: 4096, closed: true, entries: nil,
			damage: func(t *testing.T, fsy fsys.FS, s *Segment) {
				b := binary.BigEndian.AppendUint64(nil, 2004)
				writeAt(t, fsy, s.Path(TimeIndexSuffix), binary.BigEndian.AppendUint32(b, 50)) // offset 150
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
				cfg := testConfig()
				cfg.IndexIntervalBytes = tt.interval
				files := NewFileCache(1<<20, slog.New(slog.DiscardHandler))
				size := closedSegment(t, fsy, dir, cfg, Caches{Files: files})
				r, err := Open(fsy, dir, 100, cfg, Caches{Files: files}, false)
				require.NoError(t, err)
				if tt.damage != nil {
					tt.damage(t, fsy, r)
				}
				rep, err := r.Load(false, NoCut)
				require.NoError(t, err)
				require.Equal(t, int64(-1), rep.BadPos)
				require.Equal(t, tt.closed, !r.FilesOpen())
				require.Equal(t, size, r.Size())
				require.Equal(t, int64(110), r.NextOffset())
				require.Equal(t, int64(2004), r.MaxTimestamp())
				require.Equal(t, int64(109), r.OffsetOfMaxTimestamp())

				st := r.State() // opens the files
				require.True(t, r.FilesOpen())
				require.True(t, r.Pinned())
				require.Equal(t, tt.entries, st.TimeEntries)
				require.Equal(t, int64(1004), st.RollTimestamp)
				appendBatch(t, r, batch(t, 110, 2, 3000))
				got := r.State()
				require.NoError(t, r.Close())

				// Undamaged, the same segment loaded the checked way takes the same append to the
				// same state.
				if tt.damage == nil {
					require.Equal(t, reference(t, fsy, dir+"/ref", cfg), got)
				}
			})
		})
	}
}

// closedSegment makes a segment at 100 in dir holding two batches of five records (166 bytes
// each, max timestamps 1004 and 2004) and closes it; it returns the segment's size.
func closedSegment(t *testing.T, fsy fsys.FS, dir string, cfg *Config, caches Caches) int64 {
	t.Helper()
	s, err := Create(fsy, dir, 100, cfg, caches, false)
	require.NoError(t, err)
	appendBatch(t, s, batch(t, 100, 5, 1000))
	appendBatch(t, s, batch(t, 105, 5, 2000))
	size := s.Size()
	require.NoError(t, s.Close())
	return size
}

// reference is the state of closedSegment's segment made in dir, loaded the checked way (no file
// cache: Load opens and checks the indexes) and given the append TestLoadClosedSmallActiveSegment
// gives it.
func reference(t *testing.T, fsy fsys.FS, dir string, cfg *Config) State {
	t.Helper()
	require.NoError(t, fsy.MkdirAll(dir, 0o755))
	closedSegment(t, fsy, dir, cfg, Caches{})
	r, err := Open(fsy, dir, 100, cfg, Caches{}, false)
	require.NoError(t, err)
	_, err = r.Load(false, NoCut)
	require.NoError(t, err)
	require.True(t, r.FilesOpen())
	appendBatch(t, r, batch(t, 110, 2, 3000))
	st := r.State()
	require.NoError(t, r.Close())
	return st
}

// writeAt replaces the contents of the file at name with b.
func writeAt(t *testing.T, fsy fsys.FS, name string, b []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
