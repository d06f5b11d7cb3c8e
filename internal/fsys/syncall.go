package fsys

// FileSystemSyncer is an FS that can make everything written to the file system holding a
// directory durable in one call: every file's data and size, mapped writes included, and every
// directory's entries, as if each file and directory on it had been fsynced. The real file system
// implements it on Linux with syncfs(2); the others do not (see SyncFileSystem).
type FileSystemSyncer interface {
	// SyncFileSystem makes the whole file system holding dir durable. It reports an error when
	// any writeback on that file system failed since the descriptor it opens on dir was opened,
	// which Linux tells syncfs callers from 5.8 on (errseq_t on the superblock); older kernels
	// return nil even then. It may flush the data of other programs on the same file system,
	// and costs what they have pending too.
	SyncFileSystem(dir string) error
}

// SyncFileSystem makes everything written so far to the file system holding dir durable, and
// reports whether fsy can do that in one call (FileSystemSyncer): when it cannot (the memory file
// system, systems other than Linux), it does nothing and returns false, and the caller syncs file
// by file and folder by folder as it would otherwise.
func SyncFileSystem(fsy FS, dir string) (bool, error) {
	s, ok := fsy.(FileSystemSyncer)
	if !ok {
		return false, nil
	}
	return true, s.SyncFileSystem(dir)
}

// CanSyncFileSystem reports whether fsy implements FileSystemSyncer, so that a caller can leave
// the per-file syncs out of work it will make durable with one SyncFileSystem afterwards.
func CanSyncFileSystem(fsy FS) bool {
	_, ok := fsy.(FileSystemSyncer)
	return ok
}
