package fsys

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// syncFile is fdatasync: the log's durability needs the data and the size, not the timestamps that
// fsync would also write.
func syncFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	var serr error
	// Control holds a reference on the descriptor, so a concurrent Close cannot hand its number to
	// another file while fdatasync runs; it fails only when the file is closed.
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: serr}
	}
	return nil
}
