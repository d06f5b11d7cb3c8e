package fsys

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// allocate is fallocate(2) with mode 0, retried on EINTR; a file system without it
// (EOPNOTSUPP, or ENOSYS from an old kernel) gets allocateByWrite.
func allocate(f *os.File, off, length int64) error {
	if err := checkAllocate(f.Name(), off, length); err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), 0, off, length)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	if errors.Is(ferr, unix.EOPNOTSUPP) || errors.Is(ferr, unix.ENOSYS) {
		return allocateByWrite(f, off, length)
	}
	if ferr != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
	}
	return nil
}
