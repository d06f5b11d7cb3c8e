//go:build unix && commitlog_nommap

package fsys

import (
	"os"
	"syscall"
)

// dupFile duplicates f's descriptor, close-on-exec. ForkLock keeps a concurrent fork from
// inheriting it in the moment before CloseOnExec, as package os does for its own descriptors.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		nfd, derr = syscall.Dup(int(fd))
		if derr == nil {
			syscall.CloseOnExec(nfd)
		}
	}); err != nil {
		return nil, os.ErrClosed
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
