package commitlog

import (
	"fmt"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// writeNewPartitionFiles writes the files a partition that CreateTopic or CreatePartitions just
// made gets before it takes records, and then fsyncs its folder once for them all:
//
//   - partition.metadata with the topic ID id, as Kafka's PartitionMetadataFile.maybeFlush writes
//     it when the partition is created (see writePartitionMetadata);
//   - leader-epoch-checkpoint with leader epoch 0 starting at offset 0, as a Kafka broker writes
//     it when the new partition's replica becomes leader (Partition.makeLeader →
//     UnifiedLog.maybeAssignEpochStartOffset → LeaderEpochFileCache.assign, which flushes the
//     checkpoint): the epoch the partition's log stamps on its batches. The first append then
//     finds the epoch recorded and writes no file; written there, it would cost each partition's
//     first append a file write, an fsync and a folder fsync, in the appender's path.
//
// Each file is written to its ".tmp" name and fsynced before its rename, so a crash leaves the
// old contents or the new; the one folder fsync afterwards makes both renames durable, and the
// creation of the first segment's files, which the partition's load left to it
// (options.newFolderSyncedLater), where each of the three fsynced the folder itself. A crash before it
// returns leaves a folder without some of them: a missing partition.metadata is written again by
// the next Open (the creation marker is still there), a missing segment is created again, empty,
// by the load, and a missing epoch checkpoint is an empty epoch cache, which the first append
// fills in and writes, as before.
func writeNewPartitionFiles(p *Partition, id TopicID) error {
	l := p.log
	path := filepath.Join(l.dir, partitionMetadataFileName)
	if err := checkpoint.WriteRawSyncDirLater(l.fs, path, encodePartitionMetadata(id)); err != nil {
		return fmt.Errorf("commitlog: write %s: %w", path, err)
	}
	if err := l.writeFirstEpoch(checkpoint.WriteRawSyncDirLater); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("commitlog: sync %s: %w", l.dir, err)
	}
	return nil
}
