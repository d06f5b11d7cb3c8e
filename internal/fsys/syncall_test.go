package fsys

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSyncFileSystem(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644))
	ok, err := SyncFileSystem(OS(), dir)
	require.NoError(t, err)
	require.Equal(t, runtime.GOOS == "linux", ok)
	require.Equal(t, ok, CanSyncFileSystem(OS()))

	// The memory file system has no disk to sync: the caller syncs file by file.
	ok, err = SyncFileSystem(NewMemory(), "/")
	require.NoError(t, err)
	require.False(t, ok)
	require.False(t, CanSyncFileSystem(NewMemory()))
}
