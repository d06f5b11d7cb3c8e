package fsys_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// TestMemoryMatchesOSUnderGrowth runs one seeded sequence of writes, gaps, truncations and
// preallocations on an OS file and a memory file, and compares their sizes and bytes after every
// step: sizes from bytes to a few MiB cross the memory file's extents and its preallocations.
func TestMemoryMatchesOSUnderGrowth(t *testing.T) {
	osf, err := fsys.OS().OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer osf.Close()
	memf, err := fsys.NewMemory().OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer memf.Close()

	rng := rand.New(rand.NewPCG(7, 11))
	var size int64
	for step := 0; step < 400; step++ {
		var op string
		switch k := rng.IntN(10); {
		case k < 5: // append, often across an extent's end
			p := pattern(step, 1+rng.IntN(100<<10))
			op = fmt.Sprintf("append %d at %d", len(p), size)
			applyBoth(t, op, osf, memf, func(f fsys.File) error { _, err := f.WriteAt(p, size); return err })
		case k < 7: // overwrite inside, or past the end leaving a gap of zeros
			off := rng.Int64N(size + 200<<10)
			p := pattern(step, 1+rng.IntN(70<<10))
			op = fmt.Sprintf("write %d at %d", len(p), off)
			applyBoth(t, op, osf, memf, func(f fsys.File) error { _, err := f.WriteAt(p, off); return err })
		case k < 9: // shrink
			to := rng.Int64N(size + 1)
			op = fmt.Sprintf("truncate %d to %d", size, to)
			applyBoth(t, op, osf, memf, func(f fsys.File) error { return f.Truncate(to) })
		default: // preallocate, small or past the sparse threshold
			to := size + 1 + rng.Int64N(1<<20)
			op = fmt.Sprintf("grow %d to %d", size, to)
			applyBoth(t, op, osf, memf, func(f fsys.File) error { return f.Truncate(to) })
		}
		size = requireSameFile(t, op, osf, memf)
	}
}

// pattern returns n bytes that differ from step to step and from zero.
func pattern(step, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(step+i)%251 + 1
	}
	return p
}

func applyBoth(t *testing.T, op string, a, b fsys.File, fn func(fsys.File) error) {
	t.Helper()
	require.NoError(t, fn(a), "os: %s", op)
	require.NoError(t, fn(b), "memory: %s", op)
}

// requireSameFile checks that a and b have the same size and bytes, read whole and in pieces
// that start and end anywhere, and returns the size.
func requireSameFile(t *testing.T, op string, a, b fsys.File) int64 {
	t.Helper()
	sa, err := a.Size()
	require.NoError(t, err)
	sb, err := b.Size()
	require.NoError(t, err)
	require.Equal(t, sa, sb, "size after %s", op)
	wa, wb := make([]byte, sa+10), make([]byte, sb+10)
	na, erra := a.ReadAt(wa, 0)
	nb, errb := b.ReadAt(wb, 0)
	require.Equal(t, erra, errb, "after %s", op)
	require.Equal(t, na, nb, "after %s", op)
	require.True(t, bytes.Equal(wa, wb), "bytes after %s", op)
	for off := int64(0); off < sa; off += 33 << 10 {
		pb := make([]byte, 5000)
		n, err := b.ReadAt(pb, off)
		want := min(int64(len(pb)), sa-off)
		require.Equal(t, int(want), n, "read at %d after %s", off, op)
		if want < int64(len(pb)) {
			require.Equal(t, io.EOF, err)
		} else {
			require.NoError(t, err)
		}
		require.True(t, bytes.Equal(wa[off:off+want], pb[:n]), "read at %d after %s", off, op)
	}
	return sa
}

// TestMemoryMapAcrossExtents maps a file grown by many appends: the mapping holds the file's
// bytes, a mapping taken before the appends keeps showing writes to its range, and a later
// mapping of the whole file is one slice.
func TestMemoryMapAcrossExtents(t *testing.T) {
	_, f := newMemFile(t, "abcd")
	early, err := f.Map(4, false)
	require.NoError(t, err)
	defer early.Close()

	want := []byte("abcd")
	for i := 0; i < 40; i++ {
		p := pattern(i, 10<<10)
		_, err := f.WriteAt(p, int64(len(want)))
		require.NoError(t, err)
		want = append(want, p...)
	}
	whole, err := f.Map(len(want), false)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, whole.Bytes()))
	require.Equal(t, len(want), cap(whole.Bytes()))

	// Writes after the mapping reach both mappings and reads.
	_, err = f.WriteAt([]byte("XY"), 1)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("Z"), int64(len(want)-1))
	require.NoError(t, err)
	require.Equal(t, "aXYd", string(early.Bytes()))
	require.Equal(t, "aXYd", string(whole.Bytes()[:4]))
	require.Equal(t, byte('Z'), whole.Bytes()[len(want)-1])
	require.Equal(t, "aXYd", readAt(t, f, 0, 4))
	require.NoError(t, whole.Close())

	// Growth after the merge adds to the file without moving the mapped bytes.
	_, err = f.WriteAt(pattern(99, 100<<10), int64(len(want)))
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("Q"), 0)
	require.NoError(t, err)
	require.Equal(t, "QXYd", string(early.Bytes()))
}

// TestMemoryWritableMapOfGrownFile maps writable a file grown by appends: stores through the
// mapping are the file's, and a read-only mapping of all of it taken later sees them.
func TestMemoryWritableMapOfGrownFile(t *testing.T) {
	_, f := newMemFile(t, "")
	want := []byte{}
	for i := 0; i < 20; i++ {
		p := pattern(i, 7<<10)
		_, err := f.WriteAt(p, int64(len(want)))
		require.NoError(t, err)
		want = append(want, p...)
	}
	w, err := f.Map(100, true)
	require.NoError(t, err)
	defer w.Close()
	copy(w.Bytes()[10:], "stored")
	r, err := f.Map(len(want), false)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, "stored", string(r.Bytes()[10:16]))
	require.Equal(t, "stored", readAt(t, f, 10, 6))
	require.True(t, bytes.Equal(want[16:], r.Bytes()[16:]))
}

// TestMemoryTruncateThenGrow checks that bytes cut off by a truncation read as zeros when the
// file grows over them again, by Truncate and by a WriteAt past the end.
func TestMemoryTruncateThenGrow(t *testing.T) {
	tests := []struct {
		name string
		grow func(f fsys.File) error
		want string
	}{
		{"truncate", func(f fsys.File) error { return f.Truncate(8) }, "abc\x00\x00\x00\x00\x00"},
		{"write past the end", func(f fsys.File) error { _, err := f.WriteAt([]byte("Z"), 7); return err }, "abc\x00\x00\x00\x00Z"},
		{"write at the end", func(f fsys.File) error { _, err := f.WriteAt([]byte("ZZZZZ"), 3); return err }, "abcZZZZZ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := newMemFile(t, "abcdefgh")
			require.NoError(t, f.Truncate(3))
			require.NoError(t, tt.grow(f))
			require.Equal(t, tt.want, readAt(t, f, 0, 8))
		})
	}
}

// TestMemoryConcurrentReadDuringWrite is for -race: readers read what the writer has appended
// (every byte is a function of its offset) while it appends across extents.
func TestMemoryConcurrentReadDuringWrite(t *testing.T) {
	m, w := newMemFile(t, "")
	byteAt := func(off int) byte { return byte(off*7 + off/251) }
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := m.OpenFile("f", os.O_RDONLY, 0)
			if !assertNoError(t, err) {
				return
			}
			defer f.Close()
			buf := make([]byte, 20<<10)
			for {
				select {
				case <-done:
					return
				default:
				}
				size, err := f.Size()
				if !assertNoError(t, err) || size == 0 {
					continue
				}
				off := int(size) / 2
				n, _ := f.ReadAt(buf, int64(off))
				for i, c := range buf[:n] {
					if c != byteAt(off+i) {
						t.Errorf("byte %d reads %d, want %d", off+i, c, byteAt(off+i))
						return
					}
				}
			}
		}()
	}
	off := 0
	for i := 0; i < 300; i++ {
		p := make([]byte, 1+i*37%(9<<10))
		for j := range p {
			p[j] = byteAt(off + j)
		}
		_, err := w.WriteAt(p, int64(off))
		require.NoError(t, err)
		off += len(p)
	}
	close(done)
	wg.Wait()
}
