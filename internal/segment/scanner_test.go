package segment

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// TestScanner walks two batches and a torn third with a read-ahead smaller than a batch: exact
// positions, io.EOF at the limit, ErrShort for a header or a batch cut by it, ErrCorrupt for a
// flipped CRC.
func TestScanner(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		b1, b2 := batch(t, 0, 3, 1000), batch(t, 3, 2, 1000)
		bad := append([]byte(nil), b2...)
		bad[len(bad)-1] ^= 1
		data := append(append(append([]byte(nil), b1...), bad...), b2[:20]...)
		f, err := fsy.OpenFile(filepath.Join(dir, "x.log"), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		_, err = f.WriteAt(data, 0)
		require.NoError(t, err)

		sc := newScanner(f, 0, int64(len(data)), 1<<20, 16, nil)
		h, err := sc.header()
		require.NoError(t, err)
		require.Equal(t, int64(0), h.BaseOffset)
		require.Equal(t, len(b1), h.Size())
		got, err := sc.batch(h)
		require.NoError(t, err)
		require.Equal(t, b1, got)
		sc.skip(h)
		require.Equal(t, int64(len(b1)), sc.pos)

		h, err = sc.header()
		require.NoError(t, err)
		_, err = sc.batch(h)
		require.ErrorIs(t, err, recordbatch.ErrCorrupt)
		sc.skip(h)

		_, err = sc.header()
		require.ErrorIs(t, err, recordbatch.ErrShort, "20 bytes: less than a header")

		// A limit inside the first batch: its length runs past it.
		sc = newScanner(f, 0, int64(len(b1)-1), 1<<20, 16, nil)
		_, err = sc.header()
		require.ErrorIs(t, err, recordbatch.ErrShort)
		// At the limit: the end.
		sc = newScanner(f, int64(len(b1)), int64(len(b1)), 1<<20, 16, nil)
		_, err = sc.header()
		require.ErrorIs(t, err, io.EOF)
	})
}
