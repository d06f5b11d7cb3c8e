//go:build !(unix && !aix) && !windows

package fsys

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// heldLocks is the lock table of platforms without a usable file lock (plan9, js, wasip1, and aix,
// whose x/sys has no flock and whose fcntl locks are per process). It has to be a global: a lock
// must exclude every FS value of the process. It does not exclude other processes.
var heldLocks = struct {
	sync.Mutex
	names map[string]bool
}{names: make(map[string]bool)}

// lockFile creates name if missing and records its absolute path as held by this process.
func lockFile(name string) (io.Closer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	heldLocks.Lock()
	defer heldLocks.Unlock()
	if heldLocks.names[abs] {
		f.Close()
		return nil, &fs.PathError{Op: "lock", Path: name, Err: fmt.Errorf("%w (held in this process)", ErrLocked)}
	}
	heldLocks.names[abs] = true
	return &tableRelease{f: f, abs: abs}, nil
}

// tableRelease drops the table entry and closes the lock file; the file itself stays.
type tableRelease struct {
	f   *os.File
	abs string
}

func (r *tableRelease) Close() error {
	if err := r.f.Close(); err != nil {
		return err // already released
	}
	heldLocks.Lock()
	delete(heldLocks.names, r.abs)
	heldLocks.Unlock()
	return nil
}

// heldFile reports whether this process holds name's lock (the table does not see other
// processes).
func heldFile(name string) (bool, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return false, err
	}
	heldLocks.Lock()
	defer heldLocks.Unlock()
	return heldLocks.names[abs], nil
}
