package commitlog

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// opsOn returns the operations among ops of the given kinds on paths ending with suffix, as
// "kind path".
func opsOn(ops []faultfs.Op, suffix string, kinds ...faultfs.Kind) []string {
	var out []string
	for _, op := range ops {
		for _, k := range kinds {
			if op.Kind == k && strings.HasSuffix(op.Path, suffix) {
				out = append(out, k.String()+" "+op.Path)
			}
		}
	}
	return out
}

// CreateTopic and CreatePartitions write each new partition's partition.metadata and its
// leader-epoch-checkpoint (epoch 0 from offset 0, as Kafka's Partition.makeLeader assigns it),
// each fsynced before its rename, then fsync the partition folder once (the only folder fsync of
// the new partition: its load leaves the one after its first segment to it); the first append
// then writes no epoch file. A power loss right after the call keeps both files.
func TestCreateWritesNewPartitionFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		ffs := newFaultFS(t, fsy, dir)
		s, err := Open(dir, withFS(ffs), WithSync(SyncNever), WithRetentionCheckInterval(-1), WithLogger(quietLog), withParallelLogs(1))
		require.NoError(t, err)
		defer s.Close()

		check := func(t *testing.T, n int, first, last int32, create func() error) {
			t.Helper()
			require.NoError(t, create())
			ops := ffs.Ops()[n:]
			for p := first; p <= last; p++ {
				folder := filepath.Join(dir, partitionDirName("events", p))
				require.Equal(t, []string{
					"sync " + filepath.Join(folder, partitionMetadataFileName+".tmp"),
					"rename " + filepath.Join(folder, partitionMetadataFileName+".tmp"),
					"sync " + filepath.Join(folder, leaderEpochFileName+".tmp"),
					"rename " + filepath.Join(folder, leaderEpochFileName+".tmp"),
					"syncdir " + folder,
				}, slices.Concat(
					opsOn(ops, filepath.Join(folder, partitionMetadataFileName+".tmp"), faultfs.Sync, faultfs.Rename),
					opsOn(ops, filepath.Join(folder, leaderEpochFileName+".tmp"), faultfs.Sync, faultfs.Rename),
					opsOn(ops, folder, faultfs.SyncDir)))
				for _, mode := range powerLossModes {
					img := crashImage(t, ffs, mode)
					require.Equal(t, "0\n1\n0 0\n", string(fsReadFile(t, img, filepath.Join(folder, leaderEpochFileName))), "%s", mode)
					_, err := readPartitionMetadata(img, folder)
					require.NoError(t, err, "%s", mode)
				}
			}
		}
		check(t, len(ffs.Ops()), 0, 1, func() error {
			_, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
			return err
		})
		check(t, len(ffs.Ops()), 2, 2, func() error { return s.CreatePartitions("events", 3) })

		tp, err := s.Topic("events")
		require.NoError(t, err)
		n := len(ffs.Ops())
		for p := range int32(3) {
			part, err := tp.Partition(p)
			require.NoError(t, err)
			require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("v")}))
			require.Equal(t, int32(0), part.log.epochOf(0))
		}
		require.Empty(t, opsOn(ffs.Ops()[n:], leaderEpochFileName+".tmp", faultfs.OpenFile, faultfs.Write, faultfs.Sync, faultfs.Rename))
	})
}
