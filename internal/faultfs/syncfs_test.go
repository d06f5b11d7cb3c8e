package faultfs

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// SyncFileSystem makes every file's bytes and every directory's entries durable, those of files
// and folders made without a sync of their own included.
func TestSyncFileSystemMakesAllDurable(t *testing.T) {
	f := newTestFS(t, 1)
	require.NoError(t, f.MkdirAll("/d/sub", 0o755))
	a := create(t, f, "/d/a")
	write(t, a, 0, "hello")
	b := create(t, f, "/d/sub/b")
	write(t, b, 0, "world")
	for _, mode := range []Mode{PowerLossKeep, PowerLossDrop} {
		requireImageMissing(t, f, mode, "/d/a")
		requireImageMissing(t, f, mode, "/d/sub/b")
	}

	require.NoError(t, f.SyncFileSystem("/d"))
	require.Equal(t, Op{Seq: len(f.Ops()) - 1, Kind: SyncFS, Path: "/d"}, f.Ops()[len(f.Ops())-1])
	write(t, a, 5, "!") // after the sync: not durable
	for _, mode := range []Mode{PowerLossKeep, PowerLossDrop, PowerLoss} {
		requireImageFile(t, f, mode, "/d/sub/b", "world")
	}
	requireImageFile(t, f, PowerLossDrop, "/d/a", "hello")
	requireImageFile(t, f, PowerLossKeep, "/d/a", "hello!")
}

// A failed SyncFileSystem is a failed fsync of every file: what was written since each file's
// last successful sync never reaches the disk, even when a later sync succeeds.
func TestFailedSyncFileSystemDropsUnsyncedData(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 0, "AAAA")
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	write(t, a, 4, "BBBB")

	f.Inject(Once(Is(SyncFS, ""), Fault{Err: syscall.EIO}))
	require.ErrorIs(t, f.SyncFileSystem("/d"), syscall.EIO)
	require.True(t, f.Ops()[len(f.Ops())-1].Injected)
	require.NoError(t, f.SyncFileSystem("/d"))
	requireImageFile(t, f, PowerLossKeep, "/d/a", "AAAA\x00\x00\x00\x00")
	requireImageFile(t, f, ProcessKill, "/d/a", "AAAABBBB")
}
