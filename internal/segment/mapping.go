package segment

import (
	"errors"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// A segment's .log file is mapped read-only for ReadRecord when the file system's mappings share
// the file's pages (mmap; the memory file system): a read then finds its batch and record in
// place, with no system call and no copy. Elsewhere (the commitlog_nommap build tag, systems
// without mmap, where a mapping would be a copy of the file) reads use ReadAt.
//
// A mapping covers the bytes of whole batches the segment held when it was made; the active
// segment grows past it, and a read of bytes past it uses ReadAt until enough has been appended
// to be worth a new mapping (remapStep). Touching a mapped page past the end of the file is a
// SIGBUS, so the file must never shrink under a mapping in use: truncation holds the mappings
// (HoldMappings), which waits for the reads using the current one and makes no new one until it
// is done. Appends only grow the file, and closing or removing a file leaves its pages mapped.

// readMapping is one read-only mapping of a segment's .log file, counted: the segment holds one
// reference while the mapping is current, each read using it one more; the last release unmaps.
type readMapping struct {
	m    fsys.Mapping
	b    []byte
	refs atomic.Int64
	done chan struct{} // closed once unmapped
}

// holds reports whether addr is an address of the mapped bytes.
func (m *readMapping) holds(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.b)))
	return addr >= start && addr-start < uintptr(len(m.b))
}

// tryAcquire takes a reference unless the mapping is already unmapped or being unmapped.
func (m *readMapping) tryAcquire() bool {
	for {
		n := m.refs.Load()
		if n <= 0 {
			return false
		}
		if m.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one unmaps. An unmap error has nobody to go to: the pages
// are the kernel's to reclaim, and the data is untouched.
func (m *readMapping) release() {
	if m.refs.Add(-1) == 0 {
		_ = m.m.Close()
		close(m.done)
	}
}

// remapStep is how far the active segment must have grown past its mapping before a read maps
// it again: an eighth of the mapping, at least 1 MiB. Reads of the newest bytes use ReadAt
// meanwhile, so a reader that follows the appends does not map the file at every read.
func remapStep(mapped int) int64 { return max(int64(mapped)/8, 1<<20) }

// mapping returns the segment's read mapping, acquired (the caller releases it), made to cover
// [0, need) when that is worth it; it may cover less (see bytesAt), and it is nil when there is
// none: the bytes are then read with ReadAt. The caller holds a reference on s, so its files are
// open.
func (s *Segment) mapping(need int64) *readMapping {
	if !s.shared {
		return nil
	}
	if m := s.rmap.Load(); m != nil && int64(len(m.b)) >= need && m.tryAcquire() {
		return m
	}
	return s.remap(need)
}

// remap returns the current mapping, acquired, after mapping the file again when it does not
// cover [0, need) and the growth since it was made is worth a new one (remapStep). No mapping is
// made while a truncation holds the mappings or after the files closed.
func (s *Segment) remap(need int64) *readMapping {
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	old := s.rmap.Load()
	if old != nil && !old.tryAcquire() {
		old = nil // dropped meanwhile; rmap no longer holds it
	}
	size := s.size.Load()
	switch {
	case old != nil && int64(len(old.b)) >= need:
		return old
	case s.mapHold > 0 || !s.isOpen.Load() || size < need:
		return old
	case old != nil && size-int64(len(old.b)) < remapStep(len(old.b)):
		return old
	case size > math.MaxInt || strconv.IntSize < 64:
		// A 32-bit address space has no room for segments of a gigabyte.
		return old
	}
	fm, err := s.file.Map(int(size), false)
	if err != nil {
		// ReadAt serves the read, and reports whatever is wrong with the file.
		return old
	}
	m := &readMapping{m: fm, b: fm.Bytes(), done: make(chan struct{})}
	m.refs.Store(2) // the segment's and the caller's
	if prev := s.rmap.Swap(m); prev != nil {
		prev.release() // the segment's reference
	}
	if old != nil {
		old.release() // ours
	}
	return m
}

// dropMapping lets the current mapping go once the reads using it end.
func (s *Segment) dropMapping() {
	s.mapMu.Lock()
	m := s.rmap.Swap(nil)
	s.mapMu.Unlock()
	if m != nil {
		m.release()
	}
}

// HoldMappings is called before the .log file is truncated: no mapping is made until
// ReleaseMappings, and the current one is unmapped, once the reads using it end, before it
// returns. Reads hold a mapping only while they parse and copy a record, and take no lock of the
// log meanwhile, so the wait is short and cannot deadlock with the truncation's locks.
func (s *Segment) HoldMappings() {
	s.mapMu.Lock()
	s.mapHold++
	m := s.rmap.Swap(nil)
	s.mapMu.Unlock()
	if m != nil {
		done := m.done
		m.release()
		<-done
	}
}

// ReleaseMappings ends a HoldMappings.
func (s *Segment) ReleaseMappings() {
	s.mapMu.Lock()
	s.mapHold--
	s.mapMu.Unlock()
}

// bytesAt returns the n bytes of the .log file at pos: a view of m when it covers them, else
// read with ReadAt into buf. The caller has checked pos+n against the segment's size.
func (s *Segment) bytesAt(m *readMapping, buf *readBuf, pos int64, n int) ([]byte, error) {
	if m != nil && pos+int64(n) <= int64(len(m.b)) {
		return m.b[pos : pos+int64(n) : pos+int64(n)], nil
	}
	b := buf.get(n)
	got, err := s.file.ReadAt(b, pos)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
