package fsys_test

import (
	"bytes"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func newMemFile(t *testing.T, data string) (fsys.FS, fsys.File) {
	t.Helper()
	m := fsys.NewMemory()
	f, err := m.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	_, err = f.WriteAt([]byte(data), 0)
	require.NoError(t, err)
	return m, f
}

func readAt(t *testing.T, f fsys.File, off int64, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := f.ReadAt(b, off)
	require.NoError(t, err)
	return string(b)
}

func TestMemoryMapIsLive(t *testing.T) {
	_, f := newMemFile(t, "abcdef")
	m, err := f.Map(6, true)
	require.NoError(t, err)
	defer m.Close()

	_, err = f.WriteAt([]byte("XY"), 1)
	require.NoError(t, err)
	require.Equal(t, "aXYdef", string(m.Bytes()))

	copy(m.Bytes()[4:], "ZZ")
	require.Equal(t, "aXYdZZ", readAt(t, f, 0, 6))

	// The capacity ends at the mapping: append cannot write into the file past it.
	require.Equal(t, 6, cap(m.Bytes()))
}

func TestMemoryReadOnlyMapFollowsGrowth(t *testing.T) {
	_, f := newMemFile(t, "abcd")
	m, err := f.Map(4, false)
	require.NoError(t, err)
	defer m.Close()

	// Appends far past the capacity reallocate the file's bytes; the mapping must stay coherent.
	big := bytes.Repeat([]byte{'.'}, 1<<16)
	for i := 0; i < 8; i++ {
		_, err := f.WriteAt(big, int64(4+i*len(big)))
		require.NoError(t, err)
	}
	_, err = f.WriteAt([]byte("Q"), 2)
	require.NoError(t, err)
	require.Equal(t, "abQd", string(m.Bytes()))
	size, err := f.Size()
	require.NoError(t, err)
	require.Equal(t, int64(4+8<<16), size)

	// A second mapping after the growth shares the new bytes.
	m2, err := f.Map(8, false)
	require.NoError(t, err)
	require.Equal(t, "abQd....", string(m2.Bytes()))
	_, err = f.WriteAt([]byte("R"), 0)
	require.NoError(t, err)
	require.Equal(t, "RbQd", string(m.Bytes()))
	require.Equal(t, "RbQd....", string(m2.Bytes()))
	require.NoError(t, m2.Close())
}

func TestMemoryLiveMappingLimits(t *testing.T) {
	mfs, f := newMemFile(t, "abcdef")
	tests := []struct {
		name     string
		writable bool
		op       func() error
		wantErr  bool
	}{
		{"truncate below read-only mapping", false, func() error { return f.Truncate(3) }, true},
		{"truncate to mapping size", false, func() error { return f.Truncate(4) }, false},
		{"grow under read-only mapping", false, func() error { return f.Truncate(100) }, false},
		{"truncate below writable mapping", true, func() error { return f.Truncate(3) }, true},
		{"grow under writable mapping", true, func() error { return f.Truncate(100) }, true},
		{"write past end under writable mapping", true, func() error { _, err := f.WriteAt([]byte("x"), 100); return err }, true},
		{"write inside under writable mapping", true, func() error { _, err := f.WriteAt([]byte("x"), 5); return err }, false},
		{"O_TRUNC below mapping", false, func() error {
			g, err := mfs.OpenFile("f", os.O_RDWR|os.O_TRUNC, 0)
			if err == nil {
				g.Close()
			}
			return err
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, f.Truncate(6))
			m, err := f.Map(4, tt.writable)
			require.NoError(t, err)
			err = tt.op()
			if tt.wantErr {
				require.Error(t, err)
				var pe *fs.PathError
				require.ErrorAs(t, err, &pe)
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, m.Close())
			require.NoError(t, tt.op(), "allowed once the mapping is closed")
		})
	}
}

func TestMemoryRenameRules(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		wantErr  bool
	}{
		{"dir over empty dir", "/d/full", "/d/empty", false},
		{"dir over non-empty dir", "/d/empty", "/d/full", true},
		{"dir into itself", "/d/full", "/d/full/sub/x", true},
		{"dir over file", "/d/full", "/d/file", true},
		{"file over dir", "/d/file", "/d/empty", true},
		{"to itself", "/d/file", "/d/file", false},
		{"root", "/", "/x", true},
		{"missing source", "/d/nope", "/d/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fsys.NewMemory()
			require.NoError(t, m.MkdirAll("/d/full/sub", 0o755))
			require.NoError(t, m.MkdirAll("/d/empty", 0o755))
			create(t, m, "/d/file", []byte("f"))
			err := m.Rename(tt.old, tt.new)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var le *os.LinkError
			require.ErrorAs(t, err, &le)
			// Nothing moved.
			for _, p := range []string{"/d/full/sub", "/d/empty", "/d/file"} {
				_, err := m.Stat(p)
				require.NoError(t, err, p)
			}
		})
	}
}

func TestMemoryNames(t *testing.T) {
	m := fsys.NewMemory()
	require.NoError(t, m.MkdirAll("a/b", 0o755))
	create(t, m, "/a/b/c", []byte("xyz"))
	for _, name := range []string{"a/b/c", "/a/b/c", "/a/./b/../b/c", "../a/b/c"} {
		fi, err := m.Stat(name)
		require.NoError(t, err, name)
		require.Equal(t, int64(3), fi.Size(), name)
	}
	fi, err := m.Stat("/")
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	_, err = m.Stat("")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = m.Stat("/a/b/c/d")
	require.Error(t, err)

	// Directories open read-only only, and are not files.
	d, err := m.OpenFile("/a", os.O_RDONLY, 0)
	require.NoError(t, err)
	_, err = d.ReadAt(make([]byte, 1), 0)
	require.Error(t, err)
	require.NoError(t, d.Close())
	_, err = m.OpenFile("/a", os.O_RDWR, 0)
	require.Error(t, err)
	_, err = m.ReadDir("/a/b/c")
	require.Error(t, err)
	require.Error(t, m.SyncDir("/a/b/c"))
	require.ErrorIs(t, m.Remove("/a"), fs.ErrExist) // not empty, like ENOTEMPTY
}

// TestMemoryLockFollowsFile checks flock's rule that the lock is the file's, not the name's.
func TestMemoryLockFollowsFile(t *testing.T) {
	m := fsys.NewMemory()
	l, err := m.Lock("/a.lock")
	require.NoError(t, err)
	require.NoError(t, m.Rename("/a.lock", "/b.lock"))
	_, err = m.Lock("/b.lock")
	require.ErrorIs(t, err, fsys.ErrLocked)
	l2, err := m.Lock("/a.lock") // a new file
	require.NoError(t, err)
	require.NoError(t, l2.Close())
	require.NoError(t, l.Close())
	l3, err := m.Lock("/b.lock")
	require.NoError(t, err)
	require.NoError(t, l3.Close())
}

// TestMemoryConcurrentMappings is for -race: readers map, read and unmap while the writer appends
// past the mapped prefix, and others lock and stat.
func TestMemoryConcurrentMappings(t *testing.T) {
	m, w := newMemFile(t, "0123456789")
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := m.OpenFile("f", os.O_RDONLY, 0)
			if !assertNoError(t, err) {
				return
			}
			defer f.Close()
			for i := 0; i < 200; i++ {
				mp, err := f.Map(10, false)
				if !assertNoError(t, err) {
					return
				}
				if string(mp.Bytes()) != "0123456789" {
					t.Errorf("mapping reads %q", mp.Bytes())
				}
				assertNoError(t, mp.Close())
				_, err = m.Stat("f")
				assertNoError(t, err)
			}
		}()
	}
	chunk := bytes.Repeat([]byte{'x'}, 100)
	for i := 0; i < 500; i++ {
		_, err := w.WriteAt(chunk, int64(10+i*len(chunk)))
		require.NoError(t, err)
	}
	wg.Wait()
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
