package fsys

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// memNodeOf opens name in a new memory FS and returns the file and its node.
func memNodeOf(t *testing.T) (File, *memNode) {
	t.Helper()
	f, err := NewMemory().OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, f.(*memFile).node
}

// regions reports whether preallocations of this build get anonymous mappings.
func regions(t *testing.T) bool {
	mem, err := mapAnon(4096)
	if err != nil {
		return false
	}
	require.NoError(t, unmapAnon(mem))
	return true
}

// TestMemoryAppendsDoNotCopy checks that appends add extents, never reallocate the bytes
// already written, and leave at most maxExtent bytes of capacity past the end.
func TestMemoryAppendsDoNotCopy(t *testing.T) {
	f, n := memNodeOf(t)
	_, err := f.WriteAt([]byte("first"), 0)
	require.NoError(t, err)
	first := &n.ext[0].b[0]
	require.Equal(t, 5, cap(n.ext[0].b), "a first write gets what it needs")
	size := 5
	for i := 0; i < 100; i++ {
		_, err := f.WriteAt(make([]byte, 3000+i*100), int64(size))
		require.NoError(t, err)
		size += 3000 + i*100
	}
	require.Same(t, first, &n.ext[0].b[0])
	require.Equal(t, size, n.size)
	var held int
	for i, e := range n.ext {
		held += len(e.b)
		if i < len(n.ext)-1 {
			require.Equal(t, len(e.b), cap(e.b), "extent %d", i)
			require.Equal(t, n.ext[i+1].off, e.off+len(e.b), "extent %d", i)
		}
	}
	require.Equal(t, size, held)
	last := n.ext[len(n.ext)-1].b
	require.LessOrEqual(t, cap(last)-len(last), maxExtent)
}

// TestMemoryPreallocationIsOneExtent checks that a Truncate growth is one array the mapping that
// follows shares, and that trimming it returns the preallocation.
func TestMemoryPreallocationIsOneExtent(t *testing.T) {
	f, n := memNodeOf(t)
	_, err := f.WriteAt([]byte("entries"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<20))
	require.Len(t, n.ext, 1)
	require.Equal(t, "entries", string(n.ext[0].b[:7]))
	r := n.ext[0].r
	if regions(t) {
		require.NotNil(t, r)
		require.Equal(t, 1, r.refs)
	} else {
		require.Nil(t, r)
	}

	m, err := f.Map(1<<20, true)
	require.NoError(t, err)
	require.Same(t, &n.ext[0].b[0], &m.Bytes()[0])
	copy(m.Bytes()[7:], "+more")
	require.NoError(t, m.Close())

	// The trim copies the entries out and unmaps the rest.
	require.NoError(t, f.Truncate(12))
	require.Len(t, n.ext, 1)
	require.Equal(t, "entries+more", string(n.ext[0].b))
	require.Less(t, cap(n.ext[0].b), 1<<10) // a size class, not the preallocation
	require.Nil(t, n.ext[0].r)
	if r != nil {
		require.Equal(t, 0, r.refs)
		require.Nil(t, r.mem)
	}
}

// TestMemoryMappingHoldsItsRegion checks that a mapping keeps the preallocation it shares when
// the file moves to another (a larger preallocation), sees later writes to its range there, and
// releases it on Close.
func TestMemoryMappingHoldsItsRegion(t *testing.T) {
	if !regions(t) {
		t.Skip("this build preallocates on the heap")
	}
	f, n := memNodeOf(t)
	require.NoError(t, f.Truncate(sparseMin))
	_, err := f.WriteAt([]byte("abc"), 0)
	require.NoError(t, err)
	m, err := f.Map(3, false)
	require.NoError(t, err)
	r := n.ext[0].r
	require.Equal(t, 2, r.refs)

	require.NoError(t, f.Truncate(2*sparseMin))
	require.NotSame(t, r, n.ext[0].r)
	require.Equal(t, 1, r.refs)
	_, err = f.WriteAt([]byte("X"), 1)
	require.NoError(t, err)
	require.Equal(t, "aXc", string(m.Bytes()))
	require.Equal(t, "aXc", string(n.ext[0].b[:3]))

	require.NoError(t, m.Close())
	require.Equal(t, 0, r.refs)
	require.Nil(t, r.mem)
	require.Equal(t, 1, n.ext[0].r.refs)
}

// TestMemoryShrinkKeepsMappedPreallocation checks that a trim under a live mapping keeps the
// array the mapping shares, and the trim after its Close returns it.
func TestMemoryShrinkKeepsMappedPreallocation(t *testing.T) {
	f, n := memNodeOf(t)
	require.NoError(t, f.Truncate(sparseMin))
	m, err := f.Map(100, false)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(200))
	require.Equal(t, sparseMin, cap(n.ext[0].b))
	require.Same(t, &n.ext[0].b[0], &m.Bytes()[0])
	require.NoError(t, m.Close())
	require.NoError(t, f.Truncate(150))
	require.Less(t, cap(n.ext[0].b), 1<<10)
	require.Nil(t, n.ext[0].r)
}

// TestMemoryRemovedFileKeepsDataWhileOpen checks POSIX's rule for the bytes of a removed or
// replaced file: kept while a File has it open, let go (regions unmapped) with the last Close.
func TestMemoryRemovedFileKeepsDataWhileOpen(t *testing.T) {
	tests := []struct {
		name   string
		remove func(fsy FS) error
	}{
		{"remove", func(fsy FS) error { return fsy.Remove("/d/f") }},
		{"remove all", func(fsy FS) error { return fsy.RemoveAll("/d") }},
		{"renamed over", func(fsy FS) error {
			g, err := fsy.OpenFile("/d/g", os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return errors.Join(g.Close(), fsy.Rename("/d/g", "/d/f"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsy := NewMemory()
			require.NoError(t, fsy.MkdirAll("/d", 0o755))
			f, err := fsy.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			g, err := fsy.OpenFile("/d/f", os.O_RDONLY, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(sparseMin)) // a preallocation, in a region where there are any
			data := make([]byte, sparseMin)
			for i := range data {
				data[i] = byte(i%250 + 1)
			}
			_, err = f.WriteAt(data, 0)
			require.NoError(t, err)
			n := f.(*memFile).node
			held := n.ext[0].r
			require.Equal(t, regions(t), held != nil)

			require.NoError(t, tt.remove(fsy))
			require.NoError(t, f.Close())
			got := make([]byte, len(data))
			_, err = g.ReadAt(got, 0)
			require.NoError(t, err)
			require.Equal(t, data, got)

			require.NoError(t, g.Close())
			require.Nil(t, n.ext)
			require.Equal(t, 0, n.size)
			if held != nil {
				require.Equal(t, 0, held.refs)
				require.Nil(t, held.mem)
			}
		})
	}
}
