package fsys

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// syncFile is fdatasync: the log's durability needs the data and the size, not the timestamps that
// fsync would also write.
func syncFile(f *os.File) error {
	return retryOnFD(f, "sync", unix.Fdatasync)
}

// retryOnFD runs call on f's descriptor, again while it returns EINTR, and names op and f in its
// error (os.ErrClosed when f is closed). The descriptor is held for the call (os.File's
// SyscallConn Control), so a concurrent Close cannot hand its number to another file meanwhile.
func retryOnFD(f *os.File, op string, call func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: err}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = call(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: serr}
	}
	return nil
}
