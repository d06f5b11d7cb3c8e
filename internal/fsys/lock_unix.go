//go:build unix && !aix

package fsys

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on name. An flock belongs to the open file description, not
// the process, so a second lockFile in this process fails like one from another process, and the
// kernel drops the lock when its holder dies. fcntl locks would do neither.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
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
