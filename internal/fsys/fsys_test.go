package fsys_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// backend is one FS implementation under the shared behaviour suite, with a fresh empty directory.
type backend struct {
	name string
	open func(t *testing.T) (fsys.FS, string)
}

var backends = []backend{
	{"os", func(t *testing.T) (fsys.FS, string) { return fsys.OS(), t.TempDir() }},
	{"memory", func(t *testing.T) (fsys.FS, string) {
		m := fsys.NewMemory()
		require.NoError(t, m.MkdirAll("/tmp/test", 0o755))
		return m, "/tmp/test"
	}},
}

// each runs fn once per backend, as a subtest.
func each(t *testing.T, fn func(t *testing.T, fsy fsys.FS, dir string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fsy, dir := b.open(t)
			fn(t, fsy, dir)
		})
	}
}

func create(t *testing.T, fsy fsys.FS, name string, data []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	n, err := f.WriteAt(data, 0)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, f.Close())
}

func readAll(t *testing.T, fsy fsys.FS, name string) []byte {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	return b
}

func TestWriteReadSize(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "a.log")
		f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		defer f.Close()
		require.Equal(t, name, f.Name())

		n, err := f.WriteAt([]byte("hello"), 0)
		require.NoError(t, err)
		require.Equal(t, 5, n)
		n, err = f.WriteAt([]byte("world"), 8) // past the end: zeros in between
		require.NoError(t, err)
		require.Equal(t, 5, n)
		size, err := f.Size()
		require.NoError(t, err)
		require.Equal(t, int64(13), size)
		require.NoError(t, f.Sync())

		buf := make([]byte, 13)
		n, err = f.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, 13, n)
		require.Equal(t, []byte("hello\x00\x00\x00world"), buf)

		fi, err := fsy.Stat(name)
		require.NoError(t, err)
		require.Equal(t, "a.log", fi.Name())
		require.Equal(t, int64(13), fi.Size())
		require.False(t, fi.IsDir())
		fi, err = fsy.Lstat(name)
		require.NoError(t, err)
		require.Equal(t, int64(13), fi.Size())
	})
}

func TestReadAtPastEOF(t *testing.T) {
	tests := []struct {
		name    string
		off     int64
		bufLen  int
		wantN   int
		wantErr error
		want    string
	}{
		{"whole", 0, 6, 6, nil, "abcdef"},
		{"inside", 2, 3, 3, nil, "cde"},
		{"across end", 4, 4, 2, io.EOF, "ef"},
		{"at end", 6, 1, 0, io.EOF, ""},
		{"past end", 100, 3, 0, io.EOF, ""},
		{"empty buffer past end", 100, 0, 0, nil, ""},
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")
		create(t, fsy, name, []byte("abcdef"))
		f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				buf := make([]byte, tt.bufLen)
				n, err := f.ReadAt(buf, tt.off)
				require.Equal(t, tt.wantErr, err)
				require.Equal(t, tt.wantN, n)
				require.Equal(t, tt.want, string(buf[:n]))
			})
		}
		_, err = f.ReadAt(make([]byte, 1), -1)
		require.Error(t, err)
	})
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		size int64
		want string
	}{
		{"shrink", 3, "abc"},
		{"grow with zeros", 8, "abcdef\x00\x00"},
		{"same", 6, "abcdef"},
		{"empty", 0, ""},
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				name := filepath.Join(dir, strconv.Itoa(i))
				create(t, fsy, name, []byte("abcdef"))
				f, err := fsy.OpenFile(name, os.O_RDWR, 0)
				require.NoError(t, err)
				require.NoError(t, f.Truncate(tt.size))
				size, err := f.Size()
				require.NoError(t, err)
				require.Equal(t, tt.size, size)
				require.NoError(t, f.Close())
				require.Equal(t, tt.want, string(readAll(t, fsy, name)))
			})
		}
	})
}

func TestOpenFileFlags(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")

		_, err := fsy.OpenFile(name, os.O_RDWR, 0)
		require.ErrorIs(t, err, fs.ErrNotExist)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, name, pe.Path)

		_, err = fsy.OpenFile(filepath.Join(dir, "missing", "f"), os.O_RDWR|os.O_CREATE, 0o644)
		require.ErrorIs(t, err, fs.ErrNotExist)

		create(t, fsy, name, []byte("abcdef"))
		_, err = fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		require.ErrorIs(t, err, fs.ErrExist)
		require.ErrorAs(t, err, &pe)

		// O_CREATE without O_EXCL opens the existing file unchanged.
		f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		size, err := f.Size()
		require.NoError(t, err)
		require.Equal(t, int64(6), size)
		require.NoError(t, f.Close())

		// Read-only: reads work, writes and truncation fail and change nothing.
		f, err = fsy.OpenFile(name, os.O_RDONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("x"), 0)
		require.Error(t, err)
		require.Error(t, f.Truncate(0))
		require.NoError(t, f.Close())

		// Write-only: writes work, reads fail.
		f, err = fsy.OpenFile(name, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("A"), 0)
		require.NoError(t, err)
		_, err = f.ReadAt(make([]byte, 1), 0)
		require.Error(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, "Abcdef", string(readAll(t, fsy, name)))

		// O_APPEND: os.File refuses WriteAt, and File has no other write.
		f, err = fsy.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("x"), 0)
		require.Error(t, err)
		require.NoError(t, f.Close())

		f, err = fsy.OpenFile(name, os.O_RDWR|os.O_TRUNC, 0)
		require.NoError(t, err)
		size, err = f.Size()
		require.NoError(t, err)
		require.Equal(t, int64(0), size)
		require.NoError(t, f.Close())
	})
}

func TestRename(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		create(t, fsy, a, []byte("new"))
		create(t, fsy, b, []byte("old contents"))

		require.NoError(t, fsy.Rename(a, b))
		require.Equal(t, "new", string(readAll(t, fsy, b)))
		_, err := fsy.Stat(a)
		require.ErrorIs(t, err, fs.ErrNotExist)

		err = fsy.Rename(a, b)
		require.ErrorIs(t, err, fs.ErrNotExist)

		err = fsy.Rename(b, filepath.Join(dir, "missing", "b"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.Equal(t, "new", string(readAll(t, fsy, b)))

		// A directory moves with its contents.
		require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "d1", "sub"), 0o755))
		create(t, fsy, filepath.Join(dir, "d1", "sub", "f"), []byte("x"))
		require.NoError(t, fsy.Rename(filepath.Join(dir, "d1"), filepath.Join(dir, "d2")))
		require.Equal(t, "x", string(readAll(t, fsy, filepath.Join(dir, "d2", "sub", "f"))))
		_, err = fsy.Stat(filepath.Join(dir, "d1"))
		require.ErrorIs(t, err, fs.ErrNotExist)

		// A file does not replace a directory.
		require.Error(t, fsy.Rename(b, filepath.Join(dir, "d2")))
	})
}

func TestRemoveAndReadDir(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "p", "q", "r"), 0o755))
		require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "p", "q", "r"), 0o755)) // exists: fine
		for _, n := range []string{"c.log", "a.index", "b.timeindex"} {
			create(t, fsy, filepath.Join(dir, "p", n), []byte(n))
		}

		entries, err := fsy.ReadDir(filepath.Join(dir, "p"))
		require.NoError(t, err)
		type entry struct {
			name string
			dir  bool
		}
		var got []entry
		for _, e := range entries {
			got = append(got, entry{e.Name(), e.IsDir()})
		}
		require.Equal(t, []entry{{"a.index", false}, {"b.timeindex", false}, {"c.log", false}, {"q", true}}, got)
		info, err := entries[2].Info()
		require.NoError(t, err)
		require.Equal(t, int64(5), info.Size())

		fi, err := fsy.Stat(filepath.Join(dir, "p", "q"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())

		_, err = fsy.ReadDir(filepath.Join(dir, "nope"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		// MkdirAll through a file fails.
		require.Error(t, fsy.MkdirAll(filepath.Join(dir, "p", "c.log", "x"), 0o755))

		require.Error(t, fsy.Remove(filepath.Join(dir, "p", "q"))) // not empty
		require.NoError(t, fsy.Remove(filepath.Join(dir, "p", "q", "r")))
		require.NoError(t, fsy.Remove(filepath.Join(dir, "p", "c.log")))
		err = fsy.Remove(filepath.Join(dir, "p", "c.log"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)

		require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "p")))
		_, err = fsy.Stat(filepath.Join(dir, "p"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "p")))

		entries, err = fsy.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries)
	})
}

func TestOpenFileSurvivesRemove(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		if runtime.GOOS == "windows" {
			t.Skip("windows does not remove open files")
		}
		name := filepath.Join(dir, "f")
		create(t, fsy, name, []byte("abc"))
		f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, fsy.Remove(name))
		buf := make([]byte, 3)
		_, err = f.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, "abc", string(buf))
	})
}

func TestSyncDir(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		create(t, fsy, filepath.Join(dir, "f"), nil)
		require.NoError(t, fsy.SyncDir(dir))
		require.ErrorIs(t, fsy.SyncDir(filepath.Join(dir, "missing")), fs.ErrNotExist)
	})
}

func TestLock(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, ".lock")
		l1, err := fsy.Lock(name)
		require.NoError(t, err)

		// Held by this process: a second lock, through a second open, still fails.
		_, err = fsy.Lock(name)
		require.ErrorIs(t, err, fsys.ErrLocked)

		require.NoError(t, l1.Close())
		require.ErrorIs(t, l1.Close(), os.ErrClosed)

		l2, err := fsy.Lock(name)
		require.NoError(t, err)
		require.NoError(t, l2.Close())

		// The lock file stays, as Kafka's does.
		fi, err := fsy.Stat(name)
		require.NoError(t, err)
		require.False(t, fi.IsDir())

		// Locks are per name.
		a, err := fsy.Lock(filepath.Join(dir, "a.lock"))
		require.NoError(t, err)
		b, err := fsy.Lock(filepath.Join(dir, "b.lock"))
		require.NoError(t, err)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())

		_, err = fsy.Lock(filepath.Join(dir, "missing", ".lock"))
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}

func TestMapReadOnly(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")
		create(t, fsy, name, []byte("0123456789"))
		f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
		require.NoError(t, err)

		tests := []struct {
			size int
			want string
		}{{10, "0123456789"}, {4, "0123"}, {0, ""}}
		for _, tt := range tests {
			m, err := f.Map(tt.size, false)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(m.Bytes()))
			require.Len(t, m.Bytes(), tt.size)
			require.NoError(t, m.Sync())
			require.NoError(t, m.Close())
			require.ErrorIs(t, m.Close(), os.ErrClosed)
			require.ErrorIs(t, m.Sync(), os.ErrClosed)
		}

		// Past the end, negative, or writable on a read-only handle: refused.
		_, err = f.Map(11, false)
		require.Error(t, err)
		_, err = f.Map(-1, false)
		require.Error(t, err)
		_, err = f.Map(4, true)
		require.Error(t, err)

		// The mapping outlives the File.
		m, err := f.Map(10, false)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, "0123456789", string(m.Bytes()))
		require.NoError(t, m.Close())

		w, err := fsy.OpenFile(name, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = w.Map(4, false) // a mapping needs read access
		require.Error(t, err)
		require.NoError(t, w.Close())
	})
}

func TestMapWritable(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f.index")
		f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(16)) // preallocate, as an index does

		m, err := f.Map(16, true)
		require.NoError(t, err)
		b := m.Bytes()
		require.Equal(t, make([]byte, 16), b)
		copy(b, "abcdefgh")
		require.NoError(t, m.Sync())
		// The File is closed before the mapping: the mapping keeps working.
		require.NoError(t, f.Close())
		copy(b[8:], "ijklmnop")
		require.NoError(t, m.Close())

		require.Equal(t, "abcdefghijklmnop", string(readAll(t, fsy, name)))

		// Sync alone makes the writes reach the file.
		f, err = fsy.OpenFile(name, os.O_RDWR, 0)
		require.NoError(t, err)
		m, err = f.Map(4, true)
		require.NoError(t, err)
		copy(m.Bytes(), "WXYZ")
		require.NoError(t, m.Sync())
		require.Equal(t, "WXYZefghijklmnop", string(readAll(t, fsy, name)))
		require.NoError(t, m.Close())
		require.NoError(t, f.Close())
	})
}

func TestMapEmpty(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		f, err := fsy.OpenFile(filepath.Join(dir, "empty"), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		defer f.Close()
		for _, writable := range []bool{false, true} {
			m, err := f.Map(0, writable)
			require.NoError(t, err)
			require.Empty(t, m.Bytes())
			require.NoError(t, m.Sync())
			require.NoError(t, m.Close())
		}
		_, err = f.Map(1, false)
		require.Error(t, err)
	})
}

func TestClosedFile(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")
		create(t, fsy, name, []byte("abc"))
		f, err := fsy.OpenFile(name, os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, name, f.Name())

		calls := []struct {
			name string
			call func() error
		}{
			{"ReadAt", func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
			{"WriteAt", func() error { _, err := f.WriteAt([]byte("x"), 0); return err }},
			{"Size", func() error { _, err := f.Size(); return err }},
			{"Truncate", func() error { return f.Truncate(1) }},
			{"Sync", f.Sync},
			{"Map", func() error { _, err := f.Map(1, false); return err }},
			{"Map empty", func() error { _, err := f.Map(0, false); return err }},
			{"Close", f.Close},
		}
		for _, c := range calls {
			require.ErrorIs(t, c.call(), os.ErrClosed, c.name)
		}
		require.Equal(t, "abc", string(readAll(t, fsy, name)))
	})
}

// TestConcurrentReadWrite is for -race: one writer and several readers on different regions of one
// file, through one File and through others.
func TestConcurrentReadWrite(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")
		const region = 4096
		head := make([]byte, region)
		for i := range head {
			head[i] = byte(i)
		}
		create(t, fsy, name, head)
		w, err := fsy.OpenFile(name, os.O_RDWR, 0)
		require.NoError(t, err)
		defer w.Close()

		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := w
				if r%2 == 1 {
					own, err := fsy.OpenFile(name, os.O_RDONLY, 0)
					if err != nil {
						errs <- err
						return
					}
					defer own.Close()
					f = own
				}
				buf := make([]byte, region)
				for i := 0; i < 200; i++ {
					if _, err := f.ReadAt(buf, 0); err != nil {
						errs <- err
						return
					}
					for j, c := range buf {
						if c != byte(j) {
							errs <- errors.New("reader saw a changed byte in the stable region")
							return
						}
					}
				}
			}()
		}
		chunk := make([]byte, 512)
		for i := 0; i < 200; i++ {
			_, err := w.WriteAt(chunk, int64(region+i*len(chunk)))
			require.NoError(t, err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		size, err := w.Size()
		require.NoError(t, err)
		require.Equal(t, int64(region+200*512), size)
	})
}

// TestLockFollowsRename checks that a lock is the file's: renamed, the file stays locked.
func TestLockFollowsRename(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("windows does not rename open files")
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		a, b := filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")
		l, err := fsy.Lock(a)
		require.NoError(t, err)
		defer l.Close()
		require.NoError(t, fsy.Rename(a, b))
		_, err = fsy.Lock(b)
		require.ErrorIs(t, err, fsys.ErrLocked)
	})
}
