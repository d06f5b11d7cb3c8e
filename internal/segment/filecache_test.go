package segment

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// sealedSegment creates a segment of one 4-record batch at base, seals it and lets the cache close
// it when idle, as a roll leaves the segment before the active one.
func sealedSegment(t *testing.T, fsy fsys.FS, dir string, base int64, caches Caches) *Segment {
	t.Helper()
	s, err := Create(fsy, dir, base, testConfig(), caches, false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	appendBatch(t, s, batch(t, base, 4, 1000))
	require.NoError(t, s.Seal())
	s.Unpin()
	return s
}

// TestFileCacheClosesIdleSegments: under a bound of two segments' files, the third sealed segment
// opened closes the least recently used idle one; a held segment is never closed, and a read
// reopens a closed one.
func TestFileCacheClosesIdleSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		files := NewFileCache(2*FilesPerSegment, slog.New(slog.DiscardHandler))
		caches := Caches{Files: files}
		require.Equal(t, 2*FilesPerSegment, files.Limit())
		a := sealedSegment(t, fsy, dir, 0, caches)
		b := sealedSegment(t, fsy, dir, 4, caches)
		open, peak, evicted := files.Stats()
		require.Equal(t, 6, open)
		require.Equal(t, 6, peak)
		require.Zero(t, evicted)

		b.Acquire() // a read holds b
		c := sealedSegment(t, fsy, dir, 8, caches)
		open, peak, evicted = files.Stats()
		require.Equal(t, 6, open)
		require.Equal(t, 9, peak, "the bound is passed by the segment being opened, then restored")
		require.Equal(t, 1, evicted)
		require.False(t, a.FilesOpen(), "the idle one goes")
		require.True(t, b.FilesOpen(), "held: never closed")
		require.True(t, c.FilesOpen())

		// A read of a: acquired, its files are not ready, and OpenFiles reopens them.
		a.Acquire()
		require.False(t, a.FilesReady())
		require.NoError(t, a.OpenFiles())
		require.True(t, a.FilesReady())
		var bufs Buffers
		out, found, err := a.Read(nil, 2, 12, a.Lookup(2), a.Size(), 1<<20, bufs.Scratch())
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, int(a.Size()), len(out))
		open, _, evicted = files.Stats()
		require.Equal(t, 6, open, "c, the only idle one, was closed for a")
		require.Equal(t, 2, evicted)
		require.False(t, c.FilesOpen())
		require.False(t, a.Release())
		require.False(t, b.Release())

		require.NoError(t, a.Close())
		open, _, _ = files.Stats()
		require.Equal(t, 3, open, "a closed for good leaves the ring")
	})
}

// requireFiles asserts the files files holds open and the segments it has closed for idleness.
func requireFiles(t *testing.T, files *FileCache, open, evicted int, msg string) {
	t.Helper()
	gotOpen, _, gotEvicted := files.Stats()
	require.Equal(t, open, gotOpen, msg)
	require.Equal(t, evicted, gotEvicted, msg)
}

// TestFileCacheTrimIfOver: segments held by reads keep the files over the bound when another
// opens; TrimIfOver does nothing while they are held, and closes the idle ones back to the bound
// once they are not. Within the bound it closes nothing.
func TestFileCacheTrimIfOver(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		files := NewFileCache(FilesPerSegment, slog.New(slog.DiscardHandler))
		caches := Caches{Files: files}
		a := sealedSegment(t, fsy, dir, 0, caches)
		files.TrimIfOver()
		requireFiles(t, files, 3, 0, "within the bound: nothing closed")

		a.Acquire()
		b := sealedSegment(t, fsy, dir, 4, caches) // closed by its Unpin: a is held
		require.False(t, b.FilesOpen())
		b.Acquire()
		require.NoError(t, b.OpenFiles())
		requireFiles(t, files, 6, 1, "both held: the bound is passed")
		files.TrimIfOver()
		requireFiles(t, files, 6, 1, "held segments are not closed")

		require.False(t, a.Release())
		files.TrimIfOver()
		requireFiles(t, files, 3, 2, "a, idle, is closed")
		require.False(t, a.FilesOpen())
		require.True(t, b.FilesOpen())

		require.False(t, b.Release())
		files.TrimIfOver()
		requireFiles(t, files, 3, 2, "back within the bound: b stays open")
		require.True(t, b.FilesOpen())

		var none *FileCache
		none.TrimIfOver() // Caches.Files nil turns the cache off: nothing to trim, no fault
	})
}

// TestFileCacheRetiredReopens: a read that acquired a segment closed for idleness and retired
// since reopens its files under their retired names.
func TestFileCacheRetiredReopens(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		files := NewFileCache(FilesPerSegment, slog.New(slog.DiscardHandler))
		caches := Caches{Files: files}
		a := sealedSegment(t, fsy, dir, 0, caches)
		sealedSegment(t, fsy, dir, 4, caches)
		require.False(t, a.FilesOpen())
		a.Acquire()
		require.NoError(t, a.Retire(testEpochTime, DeletedSuffix))
		require.NoError(t, a.OpenFiles())
		var bufs Buffers
		_, found, err := a.Read(nil, 0, 4, 0, a.Size(), 1<<20, bufs.Scratch())
		require.NoError(t, err)
		require.True(t, found)
		require.True(t, a.Release())
		removed, err := a.RemoveIfDue(testEpochTime, false)
		require.NoError(t, err)
		require.True(t, removed)
		require.ErrorIs(t, a.OpenFiles(), ErrClosed)
	})
}
