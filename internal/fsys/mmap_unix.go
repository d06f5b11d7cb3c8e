//go:build unix && !commitlog_nommap

package fsys

import (
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// mapIsMmap tells tests whether mappings share pages with the file.
const mapIsMmap = true

// mapFile maps the first size bytes of f shared, so writes through a writable mapping and writes
// through f see each other at once, as with any process that maps the file. The mapping holds no
// descriptor: it outlives f.
func mapFile(f *os.File, size int, writable bool) (Mapping, error) {
	if size == 0 {
		// mmap refuses length 0; an empty mapping needs no memory.
		return &mmapping{name: f.Name(), b: []byte{}}, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	var b []byte
	var merr error
	if err := rc.Control(func(fd uintptr) {
		b, merr = mmap(int(fd), size, prot, unix.MAP_SHARED)
	}); err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: f.Name(), Err: os.ErrClosed}
	}
	if merr != nil {
		return nil, &fs.PathError{Op: "mmap", Path: f.Name(), Err: merr}
	}
	return &mmapping{name: f.Name(), b: b, writable: writable}, nil
}

type mmapping struct {
	name     string
	b        []byte // set once; len 0 means nothing is mapped
	writable bool

	mu     sync.Mutex // orders Sync and Close: msync on unmapped memory would fail or worse
	closed bool
}

func (m *mmapping) Bytes() []byte { return m.b }

func (m *mmapping) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &fs.PathError{Op: "msync", Path: m.name, Err: os.ErrClosed}
	}
	if !m.writable || len(m.b) == 0 {
		return nil
	}
	if err := unix.Msync(m.b, unix.MS_SYNC); err != nil {
		return &fs.PathError{Op: "msync", Path: m.name, Err: err}
	}
	return nil
}

func (m *mmapping) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		// A second munmap could unmap whatever the kernel has since placed at that address.
		return &fs.PathError{Op: "munmap", Path: m.name, Err: os.ErrClosed}
	}
	m.closed = true
	if len(m.b) == 0 {
		return nil
	}
	if err := munmap(m.b); err != nil {
		return &fs.PathError{Op: "munmap", Path: m.name, Err: err}
	}
	return nil
}
