package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive LockFileEx on the first byte of name. Windows locks belong to the
// handle, so a second lockFile in this process fails too, and the system drops them when the holder
// dies.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: fmt.Errorf("%w (%w)", ErrLocked, err)}
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return &winRelease{f: f}, nil
}

// winRelease unlocks and closes the lock file; the file itself stays, as Kafka's .lock does.
type winRelease struct{ f *os.File }

func (r *winRelease) Close() error {
	uerr := windows.UnlockFileEx(windows.Handle(r.f.Fd()), 0, 1, 0, new(windows.Overlapped))
	if err := r.f.Close(); err != nil {
		return err
	}
	if uerr != nil {
		return &fs.PathError{Op: "unlock", Path: r.f.Name(), Err: uerr}
	}
	return nil
}
