package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

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
	for i := 0; i < lockRetries && errors.Is(err, windows.ERROR_LOCK_VIOLATION); i++ {
		// A reader's probe (heldFile) holds a shared lock for an instant.
		time.Sleep(lockRetryWait)
		err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: fmt.Errorf("%w (%w)", ErrLocked, err)}
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return &winRelease{f: f}, nil
}

// lockRetries and lockRetryWait bound how long Lock waits out a held lock (see lock_unix.go).
const (
	lockRetries   = 20
	lockRetryWait = 5 * time.Millisecond
)

// heldFile reports whether the exclusive lock of lockFile is held on name, by taking a shared
// LockFileEx that fails at once and releasing it at once. A missing file is not held.
func heldFile(name string) (bool, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return false, windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
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
