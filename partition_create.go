package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
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

// writeNewPartitionsFiles writes the new partitions' files (writeNewPartitionFiles; ids[i] is
// parts[i]'s topic ID), all made durable before it returns, on the store's workers.
//
// A call of more partitions than the workers run at once, on a file system that can be synced in
// one call (fsys.CanSyncFileSystem: syncfs(2) on Linux), writes them without an fsync each: every
// partition's files are written to their ".tmp" names, one sync of the file system makes them
// durable, each is renamed over its name, and a second sync makes the renames durable (and the
// folders' segment files, as the folder fsync of writeNewPartitionFiles does). Two syncs rather
// than three fsyncs a partition, thirty thousand for a CreateTopics of a thousand topics of ten
// partitions; as for Store.Close, the syncs also flush what else is pending on that file system.
// The crash model is writeNewPartitionFiles': the first sync makes each file's bytes durable
// before its rename, so after a crash a file is whole or absent (its ".tmp" removed by the next
// Open), and an absent one is written again by the next Open or the first append.
func writeNewPartitionsFiles(fsy fsys.FS, dir string, workers logWorkers, parts []*Partition, ids []TopicID) error {
	if len(parts) <= parallelLogs || !fsys.CanSyncFileSystem(fsy) {
		return errors.Join(workers.each(len(parts), func(i int) error { return writeNewPartitionFiles(parts[i], ids[i]) })...)
	}
	written := make([][]string, len(parts)) // by partition, the files written to their temporary names
	err := errors.Join(workers.each(len(parts), func(i int) error {
		l := parts[i].log
		path := filepath.Join(l.dir, partitionMetadataFileName)
		if err := checkpoint.WriteRawTemp(l.fs, path, encodePartitionMetadata(ids[i])); err != nil {
			return fmt.Errorf("commitlog: write %s: %w", path, err)
		}
		written[i] = append(written[i], path)
		return l.writeFirstEpoch(func(fsy fsys.FS, name string, data []byte) error {
			if err := checkpoint.WriteRawTemp(fsy, name, data); err != nil {
				return err
			}
			written[i] = append(written[i], name)
			return nil
		})
	})...)
	if err == nil {
		err = syncFileSystem(fsy, dir)
	}
	if err == nil {
		err = errors.Join(workers.each(len(parts), func(i int) error {
			for _, path := range written[i] {
				if err := checkpoint.CommitTemp(parts[i].log.fs, path); err != nil {
					return fmt.Errorf("commitlog: write %s: %w", path, err)
				}
			}
			return nil
		})...)
	}
	if err == nil {
		err = syncFileSystem(fsy, dir)
	}
	return err
}
