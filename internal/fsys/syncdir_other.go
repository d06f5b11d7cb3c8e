//go:build !unix

package fsys

import (
	"io/fs"
	"os"
	"syscall"
)

// syncDir only checks that the directory exists: Windows cannot open a directory for fsync, and
// NTFS journals its metadata; plan9, js and wasip1 offer no directory sync either.
func syncDir(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "syncdir", Path: name, Err: syscall.ENOTDIR}
	}
	return nil
}
