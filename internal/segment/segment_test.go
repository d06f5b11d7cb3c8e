package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// forEachFS runs f on the operating system's file system and on the in-memory one.
func forEachFS(t *testing.T, f func(t *testing.T, fsy fsys.FS, dir string)) {
	t.Run("os", func(t *testing.T) { f(t, fsys.OS(), t.TempDir()) })
	t.Run("memory", func(t *testing.T) {
		fsy := fsys.NewMemory()
		require.NoError(t, fsy.MkdirAll("/p", 0o755))
		f(t, fsy, "/p")
	})
}

func testConfig() *Config {
	return &Config{IndexIntervalBytes: 100, SegmentBytes: 1 << 20, SegmentDuration: time.Hour,
		SegmentIndexBytes: 1 << 12, MaxMessageBytes: 1 << 20, MaxDecompressedBytes: 64 << 20}
}

// batch encodes n records of 10-byte values at base, timestamps ts, ts+1, ...
func batch(t *testing.T, base int64, n int, ts int64) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: fmt.Appendf(nil, "k%d", base+int64(i)), Value: make([]byte, 10)}
	}
	b, err := recordbatch.Encode(nil, recordbatch.Header{BaseOffset: base, LastOffsetDelta: int32(n - 1), BaseTimestamp: ts, MaxTimestamp: ts + int64(n-1)}, recs)
	require.NoError(t, err)
	return b
}

// appendBatch writes and publishes b at the end of s, as the log's writer does.
func appendBatch(t *testing.T, s *Segment, b []byte) {
	t.Helper()
	h, err := recordbatch.ParseHeader(b, len(b))
	require.NoError(t, err)
	require.NoError(t, s.ReserveIndexes(1))
	pos := s.Size()
	require.NoError(t, s.WriteAt(b, pos))
	require.NoError(t, s.IndexBatch(BatchInfo{Position: pos, Size: len(b), LastOffset: h.LastOffset(), MaxTimestamp: h.MaxTimestamp}))
	s.SetSize(pos + int64(len(b)))
}

func TestNames(t *testing.T) {
	require.Equal(t, "00000000000000001234", Name(1234))
	base, ok := ParseName("00000000000000001234.log", LogSuffix)
	require.True(t, ok)
	require.Equal(t, int64(1234), base)
	for _, bad := range []string{"1234.log", "00000000000000001234.index", "0000000000000000123x.log"} {
		_, ok := ParseName(bad, LogSuffix)
		require.False(t, ok, bad)
	}
}

// TestAppendReadReopen appends three batches, reads them back by offset, time and record, seals,
// closes and reopens the segment, and finds the same state: exact sizes, positions, offsets.
func TestAppendReadReopen(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		caches := Caches{Files: NewFileCache(1<<20, slog.New(slog.DiscardHandler)), Positions: NewPositionCache(1 << 20)}
		cfg := testConfig()
		s, err := Create(fsy, dir, 100, cfg, caches, false)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(dir, "00000000000000000100.log"), s.Path(LogSuffix))
		require.Equal(t, int64(100), s.BaseOffset())
		require.Equal(t, int64(100), s.NextOffset())
		require.Equal(t, int64(-1), s.MaxTimestamp())
		require.True(t, s.Pinned())

		b1, b2, b3 := batch(t, 100, 5, 1000), batch(t, 105, 5, 2000), batch(t, 110, 2, 1500)
		for _, b := range [][]byte{b1, b2, b3} {
			appendBatch(t, s, b)
		}
		size := int64(len(b1) + len(b2) + len(b3))
		require.Equal(t, size, s.Size())
		require.Equal(t, int64(112), s.NextOffset())
		require.Equal(t, int64(2004), s.MaxTimestamp())
		// An entry before each batch that follows more than index.interval.bytes (100): the
		// second's and the third's (each batch is larger than 100 bytes).
		st := s.State()
		require.Equal(t, 166, len(b1))
		require.Equal(t, [][2]int64{{109, 166}, {111, 332}}, st.OffsetEntries)
		require.Equal(t, [][2]int64{{2004, 109}}, st.TimeEntries)
		require.Equal(t, int64(1004), st.RollTimestamp)

		var bufs Buffers
		scratch := bufs.Scratch()
		out, found, err := s.Read(nil, 107, 112, s.Lookup(107), s.Size(), 1, scratch)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, b2, out, "the whole batch holding 107, and only it at maxBytes 1")
		out, found, err = s.Read(nil, 100, 112, s.Lookup(100), s.Size(), 1<<20, scratch)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, int(size), len(out))
		_, found, err = s.Read(nil, 112, 112, s.Lookup(112), s.Size(), 1<<20, scratch)
		require.NoError(t, err)
		require.False(t, found)

		off, found, err := s.FirstAtOrAfter(1502, s.LookupTime(1502), 112, 0, s.Size(), cfg.MaxDecompressedBytes)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, int64(105), off, "the first record at or after 1502 in offset order")

		var got int64 = -1
		var key string
		set := func(h recordbatch.Header, v recordbatch.RecordView) {
			got, key = h.BaseOffset+int64(v.OffsetDelta), string(v.Key)
		}
		for range 2 { // the second read finds the batch in the position cache
			found, err = s.ReadRecord(108, 112, 112, s.Lookup(108), s.Size(), s.Truncations(), &bufs, set)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, int64(108), got)
			require.Equal(t, "k108", key)
		}
		require.True(t, caches.Positions.Holds(s, int64(len(b1))))
		_, err = s.ReadRecord(108, 108, 112, s.Lookup(108), s.Size(), s.Truncations(), &bufs, set)
		require.ErrorIs(t, err, ErrNoRecord)

		pos, err := s.PositionOf(106)
		require.NoError(t, err)
		require.Equal(t, int64(len(b1)), pos)

		require.NoError(t, s.Seal())
		require.False(t, s.Pinned())
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "a second Close is a no-op")

		r, err := Open(fsy, dir, 100, cfg, caches, true)
		require.NoError(t, err)
		rep, err := r.Load(false, NoCut)
		require.NoError(t, err)
		require.Equal(t, int64(-1), rep.BadPos)
		require.Nil(t, rep.Rebuilt)
		require.Equal(t, size, r.Size())
		require.Equal(t, int64(112), r.NextOffset())
		require.Equal(t, int64(2004), r.MaxTimestamp())
		rst := r.State()
		require.Equal(t, st.OffsetEntries, rst.OffsetEntries)
		require.True(t, rst.Sealed)
		require.NoError(t, r.Close())
		require.ErrorIs(t, r.OpenFiles(), ErrClosed)
	})
}

// TestLoadTornTail: bytes of a half-written batch after the last whole one are reported at their
// position, cut when the scan may cut from their first offset, and left when it may not.
func TestLoadTornTail(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		cfg := testConfig()
		s, err := Create(fsy, dir, 0, cfg, Caches{}, false)
		require.NoError(t, err)
		b1, b2 := batch(t, 0, 4, 1000), batch(t, 4, 4, 2000)
		appendBatch(t, s, b1)
		require.NoError(t, s.WriteAt(b2[:30], int64(len(b1)))) // torn: never published
		require.NoError(t, s.Close())

		for _, tc := range []struct {
			cutFrom int64
			cut     bool
		}{{4, true}, {5, false}, {NoCut, false}} {
			r, err := Open(fsy, dir, 0, cfg, Caches{}, false)
			require.NoError(t, err)
			require.Equal(t, int64(len(b1)+30), r.Size(), "Open takes the file's size")
			rep, err := r.Load(true, tc.cutFrom)
			require.NoError(t, err)
			require.Equal(t, int64(len(b1)), rep.BadPos)
			require.Equal(t, int64(4), rep.BadOffset)
			require.Equal(t, tc.cut, rep.Cut)
			require.ErrorIs(t, rep.Cause, recordbatch.ErrShort)
			require.Equal(t, int64(len(b1)), r.Size())
			require.Equal(t, int64(4), r.NextOffset())
			require.NoError(t, r.Close())
		}
	})
}

// TestTruncateAndCorrupt: Truncate cuts at a batch boundary and counts; a flipped byte in a batch
// is ErrCorrupt naming the file, position and offset.
func TestTruncateAndCorrupt(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		cfg := testConfig()
		s, err := Create(fsy, dir, 0, cfg, Caches{}, false)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		b1, b2, b3 := batch(t, 0, 3, 1000), batch(t, 3, 3, 1000), batch(t, 6, 3, 1000)
		for _, b := range [][]byte{b1, b2, b3} {
			appendBatch(t, s, b)
		}
		pos, err := s.PositionOf(4)
		require.NoError(t, err)
		require.Equal(t, int64(len(b1)), pos)
		s.HoldMappings()
		require.NoError(t, s.Truncate(pos))
		s.ReleaseMappings()
		require.Equal(t, uint64(1), s.Truncations())
		require.Equal(t, int64(len(b1)), s.Size())
		require.Equal(t, int64(3), s.NextOffset())

		bad := append([]byte(nil), b2...)
		bad[len(bad)-1] ^= 0xff
		appendBatch(t, s, bad)
		var bufs Buffers
		_, _, err = s.Read(nil, 4, 6, 0, s.Size(), 1<<20, bufs.Scratch())
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorIs(t, err, recordbatch.ErrCorrupt)
		require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset 4)", s.Path(LogSuffix), len(b1)))
		require.False(t, errors.Is(err, ErrClosed))
	})
}

// TestRetireRemoveIfDue: a retired segment's files carry the suffix, stay while a read holds it or
// before its delete time, and go after.
func TestRetireRemoveIfDue(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		s, err := Create(fsy, dir, 7, testConfig(), Caches{}, false)
		require.NoError(t, err)
		appendBatch(t, s, batch(t, 7, 2, 1000))
		s.Acquire()
		at := time.Unix(100, 0)
		require.NoError(t, s.Retire(at, ".1"+DeletedSuffix))
		require.True(t, s.Retired())
		require.Equal(t, ".1.deleted", s.RetiredSuffix())
		_, err = fsy.Stat(filepath.Join(dir, "00000000000000000007.log.1.deleted"))
		require.NoError(t, err)
		removed, err := s.RemoveIfDue(at, true)
		require.NoError(t, err)
		require.False(t, removed, "held by a read")
		require.True(t, s.Release(), "the last use of a retired segment")
		removed, err = s.RemoveIfDue(at.Add(-time.Millisecond), false)
		require.NoError(t, err)
		require.False(t, removed, "before its delete time")
		removed, err = s.RemoveIfDue(at, false)
		require.NoError(t, err)
		require.True(t, removed)
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			_, err := fsy.Stat(filepath.Join(dir, "00000000000000000007"+suf+".1.deleted"))
			require.ErrorIs(t, err, fs.ErrNotExist, suf)
		}
	})
}
