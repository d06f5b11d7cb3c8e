//go:build unix && !aix

package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockRetries and lockRetryWait bound how long Lock waits out a held lock before it returns
// ErrLocked: long enough for a reader's probe (heldFile holds a shared lock for a few
// microseconds) never to refuse a writer, short enough that a second writer is refused at once.
const (
	lockRetries   = 20
	lockRetryWait = 5 * time.Millisecond
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on name. An flock belongs to the open file description, not
// the process, so a second lockFile in this process fails like one from another process, and the
// kernel drops the lock when its holder dies. fcntl locks would do neither. A lock found held is
// tried again lockRetries times, lockRetryWait apart (a reader's probe, heldFile, holds it for an
// instant).
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	for i := 0; i < lockRetries && err == unix.EWOULDBLOCK; i++ {
		time.Sleep(lockRetryWait)
		err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: fmt.Errorf("%w (%w)", ErrLocked, err)}
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return &flockRelease{f: f}, nil
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return os.ErrClosed
	}
	return ferr
}

// flockRelease unlocks and closes the lock file; the file itself stays, as Kafka's .lock does.
type flockRelease struct{ f *os.File }

func (r *flockRelease) Close() error {
	uerr := flock(r.f, unix.LOCK_UN)
	if err := r.f.Close(); err != nil {
		// Closing releases the lock too; a failed close means it was already released.
		return err
	}
	if uerr != nil {
		return &fs.PathError{Op: "unlock", Path: r.f.Name(), Err: uerr}
	}
	return nil
}

// heldFile reports whether an flock is held on name exclusively, by taking flock(LOCK_SH|LOCK_NB)
// on a read-only descriptor and releasing it at once. A missing file is not held; nothing is
// created.
func heldFile(name string) (bool, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := flock(f, unix.LOCK_SH|unix.LOCK_NB); err {
	case nil:
		return false, flock(f, unix.LOCK_UN)
	case unix.EWOULDBLOCK:
		return true, nil
	default:
		return false, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
}
