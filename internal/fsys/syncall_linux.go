package fsys

import (
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
	serr := retryOnFD(d, "syncfs", unix.Syncfs)
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}
