//go:build !unix || commitlog_nommap

package fsys

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
)

// mapIsMmap tells tests whether mappings share pages with the file.
const mapIsMmap = false

// mapFile reads the first size bytes of f into memory. A writable mapping writes back the chunks
// of the slice that differ from the file, and syncs, on Sync and Close, through its own duplicate of f's handle: the mapping stays
// valid after f is closed, and keeps the same file when f's name is renamed or removed.
//
// Unlike mmap, the copy is a snapshot: writes through f after Map are not seen in Bytes, and a
// writable mapping's write-back overwrites them. The log writes a mapped file through one of the
// two only, which both implementations serve alike.
func mapFile(f *os.File, size int, writable bool) (Mapping, error) {
	b := make([]byte, size)
	if size > 0 {
		if _, err := f.ReadAt(b, 0); err != nil {
			if err == io.EOF {
				// The file shrank since Map checked its size.
				err = io.ErrUnexpectedEOF
			}
			return nil, &fs.PathError{Op: "map", Path: f.Name(), Err: err}
		}
	}
	m := &copyMapping{name: f.Name(), b: b}
	if writable && size > 0 {
		h, err := dupFile(f)
		if err != nil {
			return nil, &fs.PathError{Op: "map", Path: f.Name(), Err: err}
		}
		m.f = h
	}
	return m, nil
}

type copyMapping struct {
	name string
	b    []byte

	mu     sync.Mutex // orders Sync and Close on f
	f      *os.File   // own handle of a writable mapping; nil when read-only or empty
	closed bool
}

func (m *copyMapping) Bytes() []byte { return m.b }

func (m *copyMapping) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &fs.PathError{Op: "msync", Path: m.name, Err: os.ErrClosed}
	}
	return m.writeBack()
}

func (m *copyMapping) writeBack() error {
	if m.f == nil {
		return nil
	}
	// Only the chunks that differ from the file are written, as mmap writes back only the pages
	// stored into: writing the whole copy would allocate every hole of a sparse file (an index
	// preallocated to its maximum size), and on a full disk fail for bytes nobody stored.
	buf := make([]byte, min(len(m.b), writeBackChunk))
	for off := 0; off < len(m.b); off += writeBackChunk {
		b := m.b[off:min(off+writeBackChunk, len(m.b))]
		n, err := m.f.ReadAt(buf[:len(b)], int64(off))
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == len(b) && bytes.Equal(buf[:n], b) {
			continue
		}
		if _, err := m.f.WriteAt(b, int64(off)); err != nil {
			return err
		}
	}
	return syncFile(m.f)
}

// writeBackChunk is the unit in which a writable copy is compared with the file and written back.
const writeBackChunk = 64 << 10

func (m *copyMapping) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &fs.PathError{Op: "munmap", Path: m.name, Err: os.ErrClosed}
	}
	m.closed = true
	if m.f == nil {
		return nil
	}
	werr := m.writeBack()
	cerr := m.f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}
