package fsys

import (
	"io"
	"io/fs"
	"math"
	"os"
	"sync/atomic"
	"time"
)

// memFile is an open file of the memory FS: a node, and what the open allows.
type memFile struct {
	node   *memNode
	name   string
	flag   int
	closed atomic.Bool
}

func (f *memFile) canRead() bool  { return f.flag&(os.O_WRONLY|os.O_RDWR) != os.O_WRONLY }
func (f *memFile) canWrite() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != os.O_RDONLY }

// check returns the error os.File gives op on a closed file, a directory, or a file opened without
// the access op needs.
func (f *memFile) check(op string, read, write bool) error {
	var err error
	switch {
	case f.closed.Load():
		err = fs.ErrClosed
	case f.node.dir:
		err = errIsDir
	case read && !f.canRead(), write && !f.canWrite():
		err = errBadAccess
	default:
		return nil
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", true, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errNegative}
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := f.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(n.size) {
		return 0, io.EOF
	}
	c := n.readAt(p, int(off))
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", false, true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errAppendWriteAt}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errNegative}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off > int64(math.MaxInt-len(p)) {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errInvalid}
	}
	end := int(off) + len(p)
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if end > n.size {
		if err := n.checkResize(end); err != nil {
			return 0, &fs.PathError{Op: "write", Path: f.name, Err: err}
		}
		// Only a gap between the end and off needs zeros: p covers the rest.
		n.grow(end, int(off), false)
	}
	n.writeAt(p, int(off))
	n.modTime = time.Now()
	return len(p), nil
}

func (f *memFile) Size() (int64, error) {
	if f.closed.Load() {
		return 0, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(f.node.size), nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", false, true); err != nil {
		return err
	}
	if size < 0 || size > math.MaxInt {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: errInvalid}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.resize(int(size)); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	n.modTime = time.Now()
	return nil
}

// Allocate grows the file to off+length bytes when it is shorter, as fallocate does; memory
// needs no other reservation. Growing a file with a live writable mapping is refused, as
// Truncate refuses it.
func (f *memFile) Allocate(off, length int64) error {
	if err := f.check("allocate", false, true); err != nil {
		return err
	}
	if err := checkAllocate(f.name, off, length); err != nil {
		return err
	}
	if off+length > math.MaxInt {
		return &fs.PathError{Op: "allocate", Path: f.name, Err: errInvalid}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if end := int(off + length); end > n.size {
		if err := n.resize(end); err != nil {
			return &fs.PathError{Op: "allocate", Path: f.name, Err: err}
		}
		n.modTime = time.Now()
	}
	return nil
}

// Sync has nothing to make durable.
func (f *memFile) Sync() error {
	if f.closed.Load() {
		return &fs.PathError{Op: "sync", Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

func (f *memFile) Close() error {
	if !f.closed.CompareAndSwap(false, true) {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opens--
	if n.opens == 0 && n.unlinked {
		n.discard()
	}
	return nil
}

// SharesMappings is false: a file grown by appends is a list of extents, and a mapping past the
// first one merges them, copying the file under its lock, which every write waits for (a read
// path that remaps a growing file would copy it again and again). ReadAt is a copy of the bytes
// asked for and no system call here, so reads need no mapping (see fsys.SharesMappings).
func (f *memFile) SharesMappings() bool { return false }

// Map shares the file's bytes; see NewMemory for what a live mapping forbids.
func (f *memFile) Map(size int, writable bool) (Mapping, error) {
	if err := f.check("map", false, false); err != nil {
		return nil, err
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := checkMap(f.name, f.flag, size, writable, int64(n.size)); err != nil {
		return nil, err
	}
	m := &memMapping{node: n, name: f.name, b: []byte{}, writable: writable}
	if size > 0 {
		// The capacity limit keeps an append to Bytes from writing into the rest of the file.
		m.b = n.mapBytes(size, writable)
		m.gen = n.gen // after mapBytes, which may have moved the first extent
		m.r = n.ext[0].r
		m.r.acquire()
		if n.maps == nil {
			n.maps = make(map[*memMapping]struct{})
		}
		n.maps[m] = struct{}{}
	}
	return m, nil
}

// memMapping is a window on a node's bytes.
type memMapping struct {
	node     *memNode
	name     string
	b        []byte
	writable bool
	gen      uint64     // the node's gen when mapped
	r        *memRegion // the anonymous mapping b is in, held until Close; nil for heap memory
	closed   bool       // guarded by node.mu
}

func (m *memMapping) Bytes() []byte { return m.b }

// Sync has nothing to do: the bytes are the file's.
func (m *memMapping) Sync() error {
	m.node.mu.RLock()
	defer m.node.mu.RUnlock()
	if m.closed {
		return &fs.PathError{Op: "msync", Path: m.name, Err: fs.ErrClosed}
	}
	return nil
}

func (m *memMapping) Close() error {
	m.node.mu.Lock()
	defer m.node.mu.Unlock()
	if m.closed {
		return &fs.PathError{Op: "munmap", Path: m.name, Err: fs.ErrClosed}
	}
	m.closed = true
	delete(m.node.maps, m)
	m.r.release()
	return nil
}
