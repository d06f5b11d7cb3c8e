package fsys_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestAllocateNoSpace(t *testing.T) {
	// A size-limited tmpfs: a reservation past its free space is ENOSPC, not a SIGBUS later.
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a size-limited tmpfs (mount -t tmpfs -o size=1m)")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("needs the right to mount tmpfs: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(mnt, 0)) })
	fsy := fsys.OS()
	f, err := fsy.OpenFile(filepath.Join(mnt, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(8<<20)) // sparse: no space needed
	require.NoError(t, f.Allocate(0, 512<<10))
	require.ErrorIs(t, f.Allocate(512<<10, 1<<20), syscall.ENOSPC)
	require.NoError(t, f.Allocate(0, 256<<10), "an allocated range needs no more space")
}
