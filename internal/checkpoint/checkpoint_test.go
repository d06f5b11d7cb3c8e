package checkpoint_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

var backends = []struct {
	name string
	open func(t *testing.T) (fsys.FS, string)
}{
	{"os", func(t *testing.T) (fsys.FS, string) { return fsys.OS(), t.TempDir() }},
	{"memory", func(t *testing.T) (fsys.FS, string) {
		m := fsys.NewMemory()
		require.NoError(t, m.MkdirAll("/state", 0o755))
		return m, "/state"
	}},
}

func each(t *testing.T, fn func(t *testing.T, fsy fsys.FS, dir string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fsy, dir := b.open(t)
			fn(t, fsy, dir)
		})
	}
}

func writeRaw(t *testing.T, fsy fsys.FS, name string, b []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	_, err = f.WriteAt(b, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func readRaw(t *testing.T, fsy fsys.FS, name string) []byte {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

func requireCorrupt(t *testing.T, name string, data []byte, err error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, checkpoint.ErrCorrupt, msgAndArgs...)
	require.Nil(t, data, msgAndArgs...)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, msgAndArgs...)
	require.Equal(t, name, pe.Path, msgAndArgs...)
}

// TestLayout pins the byte layout; e3069283 is CRC-32C's published check value for "123456789".
func TestLayout(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "log-start-offset")
		require.NoError(t, checkpoint.Write(fsy, name, []byte("123456789")))
		require.Equal(t, "commitlog-checkpoint 1\n00000009 e3069283\n123456789", string(readRaw(t, fsy, name)))

		require.NoError(t, checkpoint.Write(fsy, name, nil))
		require.Equal(t, "commitlog-checkpoint 1\n00000000 00000000\n", string(readRaw(t, fsy, name)))
	})
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"text", []byte("orders-0 1048576\norders-1 42\n")},
		{"binary", []byte{0, 0xff, '\n', 0x80, 0}},
		{"64 KiB", bytes.Repeat([]byte("0123456789abcdef"), 4096)},
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				require.NoError(t, checkpoint.Write(fsy, name, tt.data))
				got, err := checkpoint.Read(fsy, name)
				require.NoError(t, err)
				require.Equal(t, tt.data, got)
				_, err = fsy.Stat(name + ".tmp")
				require.ErrorIs(t, err, fs.ErrNotExist, "the temporary file is renamed away")
			})
		}
	})
}

func TestPayloadLimit(t *testing.T) {
	fsy := fsys.NewMemory()
	big := make([]byte, checkpoint.MaxPayload)
	big[len(big)-1] = 7
	require.NoError(t, checkpoint.Write(fsy, "/cp", big))
	got, err := checkpoint.Read(fsy, "/cp")
	require.NoError(t, err)
	require.Equal(t, big, got)

	err = checkpoint.Write(fsy, "/cp", make([]byte, checkpoint.MaxPayload+1))
	require.Error(t, err)
	got, err = checkpoint.Read(fsy, "/cp")
	require.NoError(t, err)
	require.Equal(t, big, got, "a refused write leaves the old checkpoint")
}

func TestCorruptEveryByte(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		require.NoError(t, checkpoint.Write(fsy, name, []byte("recovery-point 12345")))
		good := readRaw(t, fsy, name)
		for pos := range good {
			// 0x20 turns hex digits into other spellings ('a' into 'A'), 0x01 into neighbours.
			for _, mask := range []byte{0x01, 0x20, 0x80, 0xff} {
				bad := bytes.Clone(good)
				bad[pos] ^= mask
				writeRaw(t, fsy, name, bad)
				data, err := checkpoint.Read(fsy, name)
				requireCorrupt(t, name, data, err, "byte %d ^ %#x", pos, mask)
			}
		}
	})
}

func TestTornFile(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		require.NoError(t, checkpoint.Write(fsy, name, []byte("clean-shutdown")))
		good := readRaw(t, fsy, name)
		for n := 0; n < len(good); n++ {
			writeRaw(t, fsy, name, good[:n])
			data, err := checkpoint.Read(fsy, name)
			requireCorrupt(t, name, data, err, "truncated to %d bytes", n)
		}
		writeRaw(t, fsy, name, append(bytes.Clone(good), 0))
		data, err := checkpoint.Read(fsy, name)
		requireCorrupt(t, name, data, err, "one byte too long")
	})
}

func TestBadHeaders(t *testing.T) {
	tests := []struct {
		name string
		file string
	}{
		{"other format", "kafka-checkpoint 0\n00000000 00000000\n"},
		{"future version", "commitlog-checkpoint 2\n00000000 00000000\n"},
		{"uppercase hex", "commitlog-checkpoint 1\n00000009 E3069283\n123456789"},
		{"signed length", "commitlog-checkpoint 1\n-0000009 e3069283\n123456789"},
		{"no separator", "commitlog-checkpoint 1\n00000009-e3069283\n123456789"},
		{"no newline", "commitlog-checkpoint 1\n00000009 e3069283 123456789"},
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				writeRaw(t, fsy, name, []byte(tt.file))
				data, err := checkpoint.Read(fsy, name)
				requireCorrupt(t, name, data, err)
			})
		}
	})
}

// TestHugeDeclaredLength: a header declaring more than MaxPayload is refused before the payload is
// allocated, even when the file really is that long.
func TestHugeDeclaredLength(t *testing.T) {
	tests := []struct {
		name   string
		length string
		size   int64 // of the whole file
	}{
		{"4 GiB declared, tiny file", "ffffffff", 100},
		{"just over the limit, file that long", "04000001", 41 + checkpoint.MaxPayload + 1},
	}
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				writeRaw(t, fsy, name, []byte("commitlog-checkpoint 1\n"+tt.length+" 00000000\n"))
				f, err := fsy.OpenFile(name, os.O_RDWR, 0)
				require.NoError(t, err)
				require.NoError(t, f.Truncate(tt.size))
				require.NoError(t, f.Close())

				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				data, err := checkpoint.Read(fsy, name)
				runtime.ReadMemStats(&after)
				requireCorrupt(t, name, data, err)
				require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by Read")
			})
		}
	})
}

func TestMissing(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		_, err := checkpoint.Read(fsy, filepath.Join(dir, "nope"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.NotErrorIs(t, err, checkpoint.ErrCorrupt)
	})
}

func TestLeftoverTemp(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "reader-fraud")
		require.NoError(t, checkpoint.Write(fsy, name, []byte("orders-0 17")))
		// What a crash between creating and renaming the temporary file leaves.
		writeRaw(t, fsy, name+".tmp", []byte("commitlog-checkpoint 1\n0000"))
		writeRaw(t, fsy, filepath.Join(dir, "other.tmp"), []byte("x"))
		writeRaw(t, fsy, filepath.Join(dir, "00000000000000000000.log"), []byte("x"))
		require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "d.tmp"), 0o755))

		got, err := checkpoint.Read(fsy, name)
		require.NoError(t, err)
		require.Equal(t, "orders-0 17", string(got))

		// A Write over the leftover replaces it.
		require.NoError(t, checkpoint.Write(fsy, name, []byte("orders-0 18")))
		writeRaw(t, fsy, name+".tmp", []byte("torn"))

		require.NoError(t, checkpoint.CleanTemp(fsy, dir, "reader-"))
		entries, err := fsy.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.Equal(t, []string{"00000000000000000000.log", "d.tmp", "other.tmp", "reader-fraud"}, names)
		got, err = checkpoint.Read(fsy, name)
		require.NoError(t, err)
		require.Equal(t, "orders-0 18", string(got))

		require.ErrorIs(t, checkpoint.CleanTemp(fsy, filepath.Join(dir, "missing"), ""), fs.ErrNotExist)
	})
}
