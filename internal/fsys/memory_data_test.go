package fsys

import (
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
func regions() bool {
	_, err := mapAnon(4096)
	return err == nil
}

// TestMemoryAppendsDoNotCopy checks that appends add extents, never reallocate the bytes
// already written, and leave at most maxExtent bytes of capacity past the end.
func TestMemoryAppendsDoNotCopy(t *testing.T) {
	f, n := memNodeOf(t)
	_, err := f.WriteAt([]byte("first"), 0)
	require.NoError(t, err)
	first := &n.ext[0].b[0]
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
	if regions() {
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
	if !regions() {
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
