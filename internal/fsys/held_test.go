package fsys_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestHeld: Held tells a held lock from a free one, creates no file, keeps no lock, and a Lock
// racing with probes is never refused because of them.
func TestHeld(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, ".lock")
		held, err := fsys.Held(fsy, name)
		require.NoError(t, err)
		require.False(t, held)
		_, err = fsy.Stat(name)
		require.ErrorIs(t, err, fs.ErrNotExist, "Held created the file")
		held, err = fsys.Held(fsy, filepath.Join(dir, "missing", ".lock"))
		require.NoError(t, err)
		require.False(t, held)

		l, err := fsy.Lock(name)
		require.NoError(t, err)
		held, err = fsys.Held(fsy, name)
		require.NoError(t, err)
		require.True(t, held)
		require.NoError(t, l.Close())
		held, err = fsys.Held(fsy, name)
		require.NoError(t, err)
		require.False(t, held)

		// Probes running all the time: every Lock still gets the lock.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					fsys.Held(fsy, name)
				}
			}
		})
		for range 50 {
			l, err := fsy.Lock(name)
			require.NoError(t, err)
			require.NoError(t, l.Close())
		}
		close(stop)
		wg.Wait()
	})
}

// TestHeldUnsupported: a file system that does not say returns ErrUnsupported.
func TestHeldUnsupported(t *testing.T) {
	_, err := fsys.Held(struct{ fsys.FS }{fsys.NewMemory()}, "x")
	require.ErrorIs(t, err, errors.ErrUnsupported)
}
