// Package fsys is the file-system seam of the log: the few operations a partition's log needs
// (open, read and write at an offset, sync, truncate, rename, remove, list, map, lock). The log
// uses nothing else of the operating system, so the same log runs on the real file system (OS),
// and on the other implementations this seam exists for: memory, and fault injection in tests.
package fsys

import (
	"errors"
	"io"
	"io/fs"
)

// ErrLocked is returned by FS.Lock when another holder, in this process or another, has the lock.
var ErrLocked = errors.New("fsys: locked by another holder")

// FS is a file system. Names are slash- or OS-separated paths as the implementation accepts them;
// the log builds them with path/filepath.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags (os.O_RDWR, os.O_CREATE, os.O_EXCL, ...).
	// Errors wrap fs.ErrNotExist or fs.ErrExist where they apply.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a directory and everything in it; no error when it does not exist.
	RemoveAll(name string) error
	// Rename renames oldpath to newpath, replacing newpath if it is a file. Atomic on POSIX.
	Rename(oldpath, newpath string) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(name string, perm fs.FileMode) error
	// Stat describes a file, following symbolic links.
	Stat(name string) (fs.FileInfo, error)
	// Lstat describes a file without following a final symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// SyncDir makes the entries of directory name (creations, renames, removals) durable.
	SyncDir(name string) error
	// Lock takes an exclusive lock tied to the file name (created when missing) and returns its
	// release. ErrLocked when it is held, by this process or another; a killed holder's lock is
	// released by the operating system.
	Lock(name string) (io.Closer, error)
}

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Name is the name the file was opened with.
	Name() string
	// Size returns the file's current size in bytes.
	Size() (int64, error)
	// Truncate changes the file's size; growing it fills with zero bytes.
	Truncate(size int64) error
	// Sync makes the file's data durable (fdatasync where the platform has it).
	Sync() error
	// Allocate gives the bytes [off, off+length) of the file disk space, as fallocate(2) with
	// mode 0 does: the file grows to off+length bytes (zero filled) when shorter, and the bytes
	// it holds are not changed. Once it returns nil, writes to the range, stores through a
	// writable mapping included, need no more space: a store into a page of a sparse file that
	// a full disk cannot back is a SIGBUS, which Allocate turns into an error beforehand. The
	// error wraps syscall.ENOSPC when the disk cannot hold the range (some of it may then be
	// allocated). Where the file system has no fallocate (EOPNOTSUPP), the OS implementation
	// writes the range back as it is, zeros past the end, with pwrite and checks the writes,
	// which allocates it too. off must not be negative and length must be positive.
	Allocate(off, length int64) error
	// Map maps the first size bytes of the file, which must be at least size bytes long, read-only
	// or writable. Writes to a writable mapping reach the file by Mapping.Sync or Mapping.Close.
	// Implementations without mmap read the bytes into memory and write them back on Sync and Close,
	// with the same observable behaviour. The mapping stays valid after the File is closed.
	Map(size int, writable bool) (Mapping, error)
	// Close closes the file.
	Close() error
}

// SharesMappings reports whether f's read-only mappings share the file's bytes, as mmap does,
// rather than copying them: bytes written to the file after Map, past the mapping's size, do not
// disturb it, and a read-only mapping of a file that grows stays a window on its first bytes at
// no cost. The real file system's mappings are shared on unix (not under the commitlog_nommap
// build tag, nor on other systems, where Map copies the file); the memory file system's are not
// taken to (a mapping of a grown file may copy it).
// A File that does not say (a wrapper that does not forward it) is taken not to share.
//
// Even when shared, a mapping must be closed before the file is truncated below its size: a
// mapped page past the end of a file is a SIGBUS on access.
func SharesMappings(f File) bool {
	s, ok := f.(interface{ SharesMappings() bool })
	return ok && s.SharesMappings()
}

// Mapping is a file's bytes in memory.
type Mapping interface {
	// Bytes is the mapped memory; valid until Close.
	Bytes() []byte
	// Sync makes writes to the mapping durable in the file.
	Sync() error
	// Close writes back (for writable mappings without mmap) and unmaps. Bytes must not be used after.
	Close() error
}
