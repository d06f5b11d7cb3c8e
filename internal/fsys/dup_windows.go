package fsys

import (
	"os"

	"golang.org/x/sys/windows"
)

// dupFile duplicates f's handle, with the same access, not inheritable.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nh windows.Handle
	var derr error
	if err := rc.Control(func(h uintptr) {
		p := windows.CurrentProcess()
		derr = windows.DuplicateHandle(p, windows.Handle(h), p, &nh, 0, false, windows.DUPLICATE_SAME_ACCESS)
	}); err != nil {
		return nil, os.ErrClosed
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(nh), f.Name()), nil
}
