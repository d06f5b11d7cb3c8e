package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
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
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: baseConfig()})
			require.NoError(t, err)
			p1, err := tp.Partition(1)
			require.NoError(t, err)
			require.NoError(t, p1.Append(context.Background(), workloadRecords(0, 5)...))
			require.NoError(t, s.Close())
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
