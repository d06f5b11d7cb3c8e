package commitlog

import (
	"errors"
	"fmt"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The recovery writes of Store.Open, made durable at once.
//
// After an unclean shutdown every partition's load writes files: the producer snapshot at the
// log end offset after the replay (Kafka's LogLoader ends its recovery with
// ProducerStateManager.takeSnapshot), and the leader epoch checkpoint when the load changed it
// (entries past the recovered log end dropped, as LeaderEpochFileCache.truncateFromEnd writes
// only then, and the new epoch a log no replication drives starts after an unclean shutdown, see
// leaderEpochFile.startAbove). Each fsynced on its own, with the folder, that is three fsyncs a
// partition: thirty thousand for a store of ten thousand partitions. Where the file system can
// be synced in one call (fsys.FileSystemSyncer: syncfs on Linux), Open has the logs write them
// unsynced (options.openSyncedLater) and makes them durable with two syncs of the file system:
//
//  1. the loads write each snapshot under a temporary name renamed into place, unsynced, and
//     each changed epoch checkpoint under its temporary name only ("leader-epoch-checkpoint.tmp");
//  2. a first sync makes all of it durable;
//  3. the epoch checkpoints are renamed into place (finishPending);
//  4. a second sync makes the renames durable;
//  5. only then Open writes the store's checkpoints and removes the clean shutdown marker
//     (checkpointLogDir), and returns.
//
// The crash model is a power loss (or kill) at any point, after which the files hold what was
// synced, and any subset of what was not. Before step 2 the epoch checkpoints hold what the last
// run made durable (a temporary file left is deleted by the next load), a snapshot may be torn
// or empty (loading deletes the newest snapshot that does not decode, reads the one before and
// replays from there: a longer replay, the same state), the clean shutdown marker and the store's
// checkpoints are as the last run left them: the next Open recovers from the same files, exactly
// as this one did. Between steps 2 and 4 each epoch checkpoint is the old one or the new one,
// whole. Nobody has seen the store before Open returns, so no state a reader may have seen is
// lost. Where the file system cannot be synced in one call (the memory file system, other
// systems) every file is fsynced as it is written, as before.

// syncOpened makes what the logs' loads wrote unsynced durable (steps 2 to 4 above), when Open had
// them write so, and clears openSyncedLater: logs opened later sync their own writes.
func (s *Store) syncOpened() error {
	if !s.o.openSyncedLater {
		return nil
	}
	s.o.openSyncedLater = false
	var logs []*Log // those whose epoch checkpoint is pending
	unsynced := false
	for _, t := range s.topics {
		for _, p := range t.parts() {
			unsynced = unsynced || p.log.producers.unsynced || p.log.epochs.pending
			p.log.producers.unsynced = false
			if p.log.epochs.pending {
				logs = append(logs, p.log)
			}
		}
	}
	if !unsynced {
		return nil // a clean open writes nothing: no sync
	}
	if err := syncFileSystem(s.o.fs, s.dir); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	if err := errors.Join(s.workers.all(len(logs), func(i int) error { return logs[i].epochs.finishPending() })...); err != nil {
		return err
	}
	return syncFileSystem(s.o.fs, s.dir)
}

// syncFileSystem syncs the file system holding dir (fsys.SyncFileSystem), naming dir in its
// error: the one sync of Store.Open's recovery writes (syncOpened), of Store.Close, and of a
// CreateTopics of many partitions (writeNewPartitionsFiles).
func syncFileSystem(fsy fsys.FS, dir string) error {
	if _, err := fsys.SyncFileSystem(fsy, dir); err != nil {
		return fmt.Errorf("commitlog: sync the file system of %s: %w", dir, err)
	}
	return nil
}
