package commitlog

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// closeSyncStore opens a store on ffs in dir under SyncNever with one topic of two partitions,
// each holding three records, and returns it.
func closeSyncStore(t *testing.T, ffs *faultfs.FS, dir string) *Store {
	t.Helper()
	s, err := Open(dir, withFS(ffs), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog))
	require.NoError(t, err)
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
	require.NoError(t, err)
	for p := range int32(2) {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		for i := range 3 {
			require.NoError(t, part.Append(context.Background(), &Record{Value: []byte{byte('a' + i)}}))
		}
	}
	return s
}

// syncsOf returns the File.Sync, SyncDir and SyncFS operations among ops, as "kind path".
func syncsOf(ops []faultfs.Op) []string {
	var out []string
	for _, op := range ops {
		switch op.Kind {
		case faultfs.Sync, faultfs.SyncDir, faultfs.SyncFS:
			out = append(out, op.Kind.String()+" "+op.Path)
		}
	}
	return out
}

// Store.Close on a file system that syncs in one call (syncfs): the logs close without a sync of
// their own, one SyncFS makes everything durable, and only then are the checkpoints and the clean
// shutdown marker written; a power loss right after finds every record and the clean state.
func TestStoreCloseSyncsFileSystemOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		ffs := newFaultFS(t, fsy, dir)
		s := closeSyncStore(t, ffs, dir)
		n := len(ffs.Ops())
		require.NoError(t, s.Close())

		syncs := syncsOf(ffs.Ops()[n:])
		fsAt := -1
		for i, op := range syncs {
			if strings.HasPrefix(op, "syncfs ") {
				require.Equal(t, -1, fsAt, "one syncfs: %q", syncs)
				fsAt = i
			}
		}
		require.NotEqual(t, -1, fsAt, "no syncfs: %q", syncs)
		// Before the syncfs nothing of a partition is synced; after it, the store's checkpoints
		// and the marker are written as before.
		for _, op := range syncs[:fsAt] {
			require.NotContains(t, op, "events-", "a partition's file synced before the syncfs: %q", syncs)
		}
		require.Equal(t, []string{
			"sync " + filepath.Join(dir, logStartCheckpointName+".tmp"),
			"syncdir " + dir,
			"sync " + filepath.Join(dir, recoveryPointCheckpointName+".tmp"),
			"syncdir " + dir,
			"sync " + filepath.Join(dir, cleanShutdownName),
			"syncdir " + dir,
		}, syncs[fsAt+1:])

		for _, mode := range powerLossModes {
			img := crashImage(t, ffs, mode)
			st, err := readLogDirState(img, dir)
			require.NoError(t, err)
			require.True(t, st.clean, "%s", mode)
			require.Equal(t, map[topicPartition]int64{{"events", 0}: 3, {"events", 1}: 3}, st.recoveryPoints, "%s", mode)
			re, err := Open(dir, withFS(img), WithLogger(quietLog))
			require.NoError(t, err, "%s", mode)
			tp, err := re.Topic("events")
			require.NoError(t, err)
			for p := range int32(2) {
				part, err := tp.Partition(p)
				require.NoError(t, err)
				require.Equal(t, int64(3), part.LogEndOffset(), "%s partition %d", mode, p)
				recs, err := part.ReadRecords(0, 1<<20)
				require.NoError(t, err)
				require.Len(t, recs, 3)
				require.Equal(t, []byte("c"), recs[2].Value)
			}
			require.NoError(t, re.Close())
		}
	})
}

// A failed syncfs fails Store.Close with its error, and nothing is written after it: the
// checkpoints keep what they held and no clean shutdown marker is made, so the next open
// recovers the partitions as after a crash.
func TestStoreCloseFileSystemSyncFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		ffs := newFaultFS(t, fsy, dir)
		s := closeSyncStore(t, ffs, dir)
		before, err := readLogDirState(ffs, dir)
		require.NoError(t, err)
		ffs.Inject(faultfs.Once(faultfs.Is(faultfs.SyncFS, ""), faultfs.Fault{Err: syscall.EIO}))
		n := len(ffs.Ops())
		err = s.Close()
		require.ErrorIs(t, err, syscall.EIO)

		ops := ffs.Ops()[n:]
		at := -1
		for i, op := range ops {
			if op.Kind == faultfs.SyncFS {
				require.True(t, op.Injected)
				at = i
			}
		}
		require.NotEqual(t, -1, at)
		for _, op := range ops[at+1:] {
			switch op.Kind {
			case faultfs.OpenFile, faultfs.Write, faultfs.Sync, faultfs.Rename, faultfs.SyncDir, faultfs.SyncFS:
				require.Equal(t, faultfs.Unlock, op.Kind, "written after the failed syncfs: %s", op)
			}
		}
		_, err = ffs.Lstat(filepath.Join(dir, cleanShutdownName))
		require.True(t, errors.Is(err, fs.ErrNotExist), "marker: %v", err)
		after, err := readLogDirState(ffs, dir)
		require.NoError(t, err)
		require.Equal(t, before, after)
		require.False(t, after.clean)

		// The process lives on: the page cache holds every record, and the reopen, unclean,
		// recovers them.
		ffs.Inject(nil)
		re, err := Open(dir, withFS(ffs), WithLogger(quietLog))
		require.NoError(t, err)
		tp, err := re.Topic("events")
		require.NoError(t, err)
		for p := range int32(2) {
			part, err := tp.Partition(p)
			require.NoError(t, err)
			require.Equal(t, int64(3), part.LogEndOffset())
		}
		require.NoError(t, re.Close())
	})
}

// hideFileSystemSync is a file system that does not offer SyncFileSystem (as the memory one and
// the real one off Linux do not), over one that records operations.
type hideFileSystemSync struct{ fsys.FS }

// Without a one-call sync, Store.Close syncs every log's files itself before the marker, as it
// always did.
func TestStoreCloseSyncsEachLogWithoutFileSystemSync(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		ffs := newFaultFS(t, fsy, dir)
		require.False(t, fsys.CanSyncFileSystem(hideFileSystemSync{ffs}))
		s, err := Open(dir, withFS(hideFileSystemSync{ffs}), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
		require.NoError(t, err)
		require.NoError(t, tp.Append(context.Background(), &Record{Value: []byte("a")}))
		n := len(ffs.Ops())
		require.NoError(t, s.Close())
		syncs := syncsOf(ffs.Ops()[n:])
		for p := range 2 {
			seg := filepath.Join(dir, partitionDirName("events", int32(p)), "00000000000000000000")
			require.Contains(t, syncs, "sync "+seg+".log")
			require.Contains(t, syncs, "sync "+seg+".index")
			require.Contains(t, syncs, "sync "+seg+".timeindex")
		}
		for _, op := range syncs {
			require.False(t, strings.HasPrefix(op, "syncfs "), "%q", syncs)
		}
		require.Equal(t, "syncdir "+dir, syncs[len(syncs)-1])
		require.Equal(t, "sync "+filepath.Join(dir, cleanShutdownName), syncs[len(syncs)-2])
	})
}
