package fsys

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

var _ FileSystemSyncer = osFS{}

// SyncFileSystem is syncfs(2) on a descriptor of dir (see FileSystemSyncer). The descriptor is
// opened before the call, so a writeback error recorded on the file system while syncfs runs is
// reported (Linux 5.8 and later).
func (osFS) SyncFileSystem(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	rc, err := d.SyscallConn()
	if err != nil {
		d.Close()
		return &fs.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Syncfs(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		serr = err
	}
	cerr := d.Close()
	if serr != nil {
		return &fs.PathError{Op: "syncfs", Path: dir, Err: serr}
	}
	return cerr
}
