package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestMissingPartitionFolder: a partition folder missing for a topic that commitlog-topics lists
// fails Open with ErrPartitionMissing, changing nothing, unless the topic was being created (the
// creation is finished: empty partitions) or deleted (the deletion is finished). An empty folder
// put in its place by the operator accepts the loss: it opens as an empty log.
func TestMissingPartitionFolder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		setup := func(t *testing.T) string {
			dir := closedOrdersStore(t, fsy)
			require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "no creation left marked")
			return dir
		}

		t.Run("folder gone", func(t *testing.T) {
			dir := setup(t)
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-1")))
			before, topics := fsListDir(t, fsy, dir), fsReadFile(t, fsy, filepath.Join(dir, topicsFileName))
			_, err := Open(dir, withFS(fsy))
			require.ErrorIs(t, err, ErrPartitionMissing)
			require.Equal(t, fmt.Sprintf("%s: topic orders partition 1: folder %s",
				ErrPartitionMissing, filepath.Join(dir, "orders-1")), err.Error())
			require.Equal(t, before, fsListDir(t, fsy, dir), "a failed Open changes nothing")
			require.Equal(t, topics, fsReadFile(t, fsy, filepath.Join(dir, topicsFileName)))

			// An empty folder in its place: the operator accepts the loss.
			require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "orders-1"), 0o755))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			tp, err := s.Topic("orders")
			require.NoError(t, err)
			p1, err := tp.Partition(1)
			require.NoError(t, err)
			require.Equal(t, int64(0), p1.LogEndOffset())
			require.NoError(t, s.Close())
		})

		t.Run("creation in progress", func(t *testing.T) {
			// A crash after CreateTopic made its configuration durable, before the folders.
			dir := setup(t)
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-0")))
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-1")))
			require.NoError(t, checkpoint.Write(fsy, filepath.Join(dir, creatingFileName), []byte("orders")))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			tp, err := s.Topic("orders")
			require.NoError(t, err)
			require.Equal(t, int32(2), tp.PartitionCount())
			for id := range int32(2) {
				p, err := tp.Partition(id)
				require.NoError(t, err)
				require.Equal(t, int64(0), p.LogEndOffset())
				require.True(t, fsExists(t, fsy, filepath.Join(dir, partitionDirName("orders", id))))
			}
			require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "the creation is finished")
			require.NoError(t, s.Close())
		})

		t.Run("deletion in progress", func(t *testing.T) {
			// A crash after DeleteTopic renamed the first folder, before the second and before
			// the configuration went.
			dir := setup(t)
			require.NoError(t, fsy.Rename(filepath.Join(dir, "orders-0"), filepath.Join(dir, deleteDirName("orders", 0))))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			_, err = s.Topic("orders")
			require.ErrorIs(t, err, ErrUnknownTopic)
			require.NotContains(t, fsListDir(t, fsy, dir), "orders-1", "the deletion is finished")
			require.NotContains(t, fsListDir(t, fsy, dir), deleteDirName("orders", 0))
			require.NoError(t, s.Close())
			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
		})
	})
}

// failRenameTo is a file system on which a rename onto the file named name fails, as a crash
// there would stop the caller.
// closedOrdersStore makes a store on fsy with the topic "orders" of 2 partitions, 5 records in
// partition 1, closes it cleanly and returns its folder.
func closedOrdersStore(t *testing.T, fsy fsys.FS) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, withFS(fsy))
	require.NoError(t, err)
	tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: baseConfig()})
	require.NoError(t, err)
	p1, err := tp.Partition(1)
	require.NoError(t, err)
	require.NoError(t, p1.Append(context.Background(), workloadRecords(0, 5)...))
	require.NoError(t, s.Close())
	return dir
}

type failRenameTo struct {
	fsys.FS
	name string
}

func (f failRenameTo) Rename(oldpath, newpath string) error {
	if newpath == f.name {
		return fmt.Errorf("rename %s: %w", newpath, syscall.EIO)
	}
	return f.FS.Rename(oldpath, newpath)
}

// TestUnfinishedTopicDeletion: a DeleteTopic that stopped after renaming a folder
// "<folder>-delete" is finished by the next Open, and by the one after when that Open stops
// before the configuration is saved, and when DeleteTopic itself could not save the configuration
// without the topic; a folder "-delete" whose name, cut to the folder name limit,
// is also another topic's, finishes only the deletion of the topic whose folder is gone.
func TestUnfinishedTopicDeletion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		t.Run("open stopped while finishing it", func(t *testing.T) {
			dir := closedOrdersStore(t, fsy)
			require.NoError(t, fsy.Rename(filepath.Join(dir, "orders-0"), filepath.Join(dir, deleteDirName("orders", 0))))

			_, err := Open(dir, withFS(failRenameTo{fsy, filepath.Join(dir, topicsFileName)}))
			require.ErrorIs(t, err, syscall.EIO)

			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			_, err = s.Topic("orders")
			require.ErrorIs(t, err, ErrUnknownTopic)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
			for _, name := range fsListDir(t, fsy, dir) {
				require.False(t, strings.HasPrefix(name, "orders"), name)
			}
		})

		t.Run("configuration not saved by DeleteTopic", func(t *testing.T) {
			dir := closedOrdersStore(t, fsy)

			s, err := Open(dir, withFS(failRenameTo{fsy, filepath.Join(dir, topicsFileName)}))
			require.NoError(t, err)
			require.ErrorIs(t, s.DeleteTopic("orders"), syscall.EIO)
			require.NoError(t, s.Close())
			// The configuration still names the topic: its renamed folders stay for the next
			// open to finish the deletion, rather than leave a configured topic without folders.
			require.ElementsMatch(t, []string{deleteDirName("orders", 0), deleteDirName("orders", 1)},
				slices.DeleteFunc(fsListDir(t, fsy, dir), func(n string) bool { return !strings.HasPrefix(n, "orders") }))

			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
			for _, name := range fsListDir(t, fsy, dir) {
				require.False(t, strings.HasPrefix(name, "orders"), name)
			}
		})

		t.Run("another topic's folder of the same cut name", func(t *testing.T) {
			prefix := strings.Repeat("t", maxDirNameLength-len("-0"+deleteSuffix))
			gone, kept := prefix+"aaa", prefix+"bbb"
			require.Equal(t, deleteDirName(gone, 0), deleteDirName(kept, 0))
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			for _, name := range []string{gone, kept} {
				_, err := s.CreateTopic(name, TopicConfig{Partitions: 1, LogConfig: baseConfig()})
				require.NoError(t, err)
			}
			tp, err := s.Topic(kept)
			require.NoError(t, err)
			p0, err := tp.Partition(0)
			require.NoError(t, err)
			require.NoError(t, p0.Append(context.Background(), workloadRecords(0, 5)...))
			require.NoError(t, s.Close())
			// DeleteTopic(gone) stopped after its rename.
			require.NoError(t, fsy.Rename(filepath.Join(dir, partitionDirName(gone, 0)), filepath.Join(dir, deleteDirName(gone, 0))))

			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Equal(t, []string{kept}, s.Topics())
			tp, err = s.Topic(kept)
			require.NoError(t, err)
			p0, err = tp.Partition(0)
			require.NoError(t, err)
			require.Equal(t, int64(5), p0.LogEndOffset())
			recs, err := p0.ReadRecords(0, 1<<20)
			require.NoError(t, err)
			requireSameRecords(t, withOffsets(workloadRecords(0, 5), 0), recs)
			require.NoError(t, s.Close())
		})
	})
}
