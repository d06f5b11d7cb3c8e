package fsys_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestAllocate(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "f")
		data := bytes.Repeat([]byte("0123456789"), 1000)
		create(t, fsy, name, data)
		f, err := fsy.OpenFile(name, os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()

		// Inside the file: the bytes and the size are as they were.
		require.NoError(t, f.Allocate(100, 5000))
		require.Equal(t, data, readAll(t, fsy, name))
		// Across the end: the file grows, zero filled, as fallocate with mode 0.
		require.NoError(t, f.Allocate(9000, 7000))
		size, err := f.Size()
		require.NoError(t, err)
		require.Equal(t, int64(16000), size)
		require.Equal(t, append(bytes.Clone(data), make([]byte, 6000)...), readAll(t, fsy, name))
		// A sparse file's holes get allocated and still read as zeros; a writable mapping of
		// the range is then stored into without a fault.
		require.NoError(t, f.Truncate(1<<20))
		require.NoError(t, f.Allocate(16000, 1<<20-16000))
		m, err := f.Map(1<<20, true)
		require.NoError(t, err)
		b := m.Bytes()
		require.Equal(t, make([]byte, 1<<20-16000), b[16000:])
		b[1<<20-1] = 7
		require.NoError(t, m.Close())
		got := readAll(t, fsy, name)
		require.Equal(t, byte(7), got[1<<20-1])
		require.Equal(t, data, got[:len(data)])

		// Bad ranges are refused, and so is a file not open for writing.
		for _, r := range [][2]int64{{-1, 10}, {0, 0}, {0, -5}} {
			require.Error(t, f.Allocate(r[0], r[1]), "range %v", r)
		}
		ro, err := fsy.OpenFile(name, os.O_RDONLY, 0)
		require.NoError(t, err)
		require.Error(t, ro.Allocate(0, 10))
		require.NoError(t, ro.Close())
		require.NoError(t, f.Close())
		var pe *fs.PathError
		require.ErrorAs(t, f.Allocate(0, 10), &pe)
	})
}
