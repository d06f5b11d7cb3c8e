package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
)

// OS returns the real file system, through package os. File.Sync is fdatasync on Linux and
// (*os.File).Sync elsewhere (F_FULLFSYNC on darwin); SyncDir fsyncs the directory on unix systems
// and only checks that it exists on others (Windows cannot sync a directory); Lock is flock on unix,
// LockFileEx on Windows and an in-process table elsewhere; Map is mmap on unix, and elsewhere, or when
// built with the commitlog_nommap tag, a copy that is written back on Sync and Close.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, flag: flag}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (osFS) SyncDir(name string) error                    { return syncDir(name) }
func (osFS) Lock(name string) (io.Closer, error)          { return lockFile(name) }

// osFile is an *os.File with the flags it was opened with, which Map needs: the access mode decides
// whether a writable mapping is allowed, identically with and without mmap.
type osFile struct {
	f    *os.File
	flag int
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Name() string                             { return f.f.Name() }
func (f *osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f *osFile) Sync() error                              { return syncFile(f.f) }
func (f *osFile) Allocate(off, length int64) error         { return allocate(f.f, off, length) }
func (f *osFile) Close() error                             { return f.f.Close() }

// SharesMappings reports whether Map is mmap (see fsys.SharesMappings).
func (f *osFile) SharesMappings() bool { return mapIsMmap }

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f *osFile) Map(size int, writable bool) (Mapping, error) {
	// Stat also reports a closed file as os.ErrClosed, before any platform code runs.
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	if err := checkMap(f.f.Name(), f.flag, size, writable, n); err != nil {
		return nil, err
	}
	return mapFile(f.f, size, writable)
}

// errMapAccess and errMapRange are the reasons a Map is refused before the platform is asked, so
// that mmap and its fallback, and the memory FS, refuse the same calls.
var (
	errMapAccess = errors.New("file not opened for reading (and writing, for a writable mapping)")
	errMapRange  = errors.New("mapping size negative or past the end of the file")
)

// checkMap refuses a mapping the file cannot back: mmap needs read access (and write access for a
// writable mapping), and touching a mapped page past the end of the file is a SIGBUS, so the range
// is checked against the size first.
func checkMap(name string, flag, size int, writable bool, fileSize int64) error {
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	if acc == os.O_WRONLY || (writable && acc != os.O_RDWR) {
		return &fs.PathError{Op: "map", Path: name, Err: errMapAccess}
	}
	if size < 0 || int64(size) > fileSize {
		return &fs.PathError{Op: "map", Path: name, Err: fmt.Errorf("%w: size %d, file %d bytes", errMapRange, size, fileSize)}
	}
	return nil
}

// allocateByWrite is Allocate without fallocate: it reads the range a chunk at a time and
// writes it back (zeros past the end of the file), so that every block of the range is written.
// Stores through a mapping of the range meanwhile would be lost: the only caller reserves space
// before it stores into it, from the goroutine that stores.
func allocateByWrite(f *os.File, off, length int64) error {
	const chunk = 64 << 10
	buf := make([]byte, min(length, chunk))
	for length > 0 {
		b := buf[:min(length, int64(len(buf)))]
		n, err := f.ReadAt(b, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		clear(b[n:])
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
		length -= int64(len(b))
	}
	return nil
}

// checkAllocate refuses a range Allocate cannot take, as fallocate does with EINVAL.
func checkAllocate(name string, off, length int64) error {
	if off < 0 || length <= 0 || off > math.MaxInt64-length {
		return &fs.PathError{Op: "allocate", Path: name, Err: fmt.Errorf("%w: offset %d, length %d", errInvalidRange, off, length)}
	}
	return nil
}

// errInvalidRange is Allocate's refusal of a negative offset, a length that is not positive, or a
// range past the largest file size.
var errInvalidRange = errors.New("invalid range")

// OSFile returns the operating system's file behind f, for system calls that take a descriptor
// (sendfile), or nil when f is not a file of OS.
func OSFile(f File) *os.File {
	if of, ok := f.(*osFile); ok {
		return of.f
	}
	return nil
}
