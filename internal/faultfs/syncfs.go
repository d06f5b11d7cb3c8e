package faultfs

import "github.com/commitlog-go/commitlog/internal/fsys"

var _ fsys.FileSystemSyncer = (*FS)(nil)

// SyncFileSystem is syncfs(2) (fsys.FileSystemSyncer): after it, a power loss keeps every file's
// bytes as they are now and every directory's entries as they are now, as if each had been
// synced. A fault makes it fail as a failed fsync does, for every file: the bytes written since
// each file's last successful sync are marked clean without reaching the disk. The inner file
// system's own SyncFileSystem runs when it has one.
func (f *FS) SyncFileSystem(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := Op{Kind: SyncFS, Path: dir}
	seq, ft, err := f.start(op)
	if err == nil && ft != nil {
		for _, n := range f.files {
			if derr := n.dropUnsynced(); derr != nil {
				panic("faultfs: reading a tracked file: " + derr.Error())
			}
		}
		err = ft.Err
	}
	if err != nil {
		err = pathErr(SyncFS, op.Path, err)
		f.done(seq, err)
		return err
	}
	if _, err = fsys.SyncFileSystem(f.inner, dir); err == nil {
		for _, n := range f.files {
			if err = n.syncFile(); err != nil {
				break
			}
		}
		if err == nil {
			f.syncDirs(f.root)
		}
	}
	f.done(seq, err)
	return err
}

// syncDirs makes the entries of d and of every directory under it durable.
func (f *FS) syncDirs(d *node) {
	d.syncDir()
	for _, c := range d.children {
		if c.dir {
			f.syncDirs(c)
		}
	}
}
