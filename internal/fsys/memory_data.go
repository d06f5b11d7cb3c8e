package fsys

import (
	"runtime"
	"slices"
	"sort"
)

// A memory file's bytes are a list of extents rather than one slice, so that a file grown by
// appends never copies what it holds: a single slice grown by doubling copies every byte about
// twice, keeps the old array alive while it copies (up to three times the file in memory), and
// its large copies hold off the garbage collector's preemption. Mappings need contiguous bytes, so
// they share the first extent's array, which Truncate's preallocation makes contiguous up front
// and Map makes contiguous (by merging extents) only when a mapping reaches past it.
//
// A large preallocation (an index file grown to segment.index.bytes, 10 MiB by default, of which
// a segment uses a few KiB) is an anonymous mapping outside the Go heap where the platform has
// them (see memRegion): like a sparse file it takes memory only where it is written, where heap
// memory would be zeroed in full whenever the heap reuses it, and would count towards the
// collector's goal. Extents grown by appends stay on the heap although they would be cheaper
// outside it (no collector pacing on them: about a tenth of an append's CPU time at 100 MiB): the
// collector frees the memory of a store dropped without Close only for what it can see.

// Extent sizes of a file grown by WriteAt: each new extent holds at least the write, and, past
// the first, about as much as the file already does (the file's capacity doubles, as an appended
// slice's would, without copying), within [minExtent, maxExtent]. maxExtent bounds the memory a
// file holds past its size (a sealed segment keeps its last extent); minExtent keeps small
// appends from making many tiny extents.
const (
	minExtent = 4 << 10
	maxExtent = 64 << 10
)

// sparseMin is the smallest preallocation given an anonymous mapping: below it, the system calls
// cost more than zeroing heap memory.
const sparseMin = 256 << 10

// memRegion is an anonymous mapping backing a preallocated extent: a reference counted resource,
// held by the extent and by every live mapping of its bytes, and unmapped when the last lets go
// (the file is trimmed, grown into a new preallocation, or removed and closed). A region that
// becomes unreachable unreleased (an open file dropped unclosed, a mapping dropped unclosed) is
// unmapped by a cleanup: nothing can reach its bytes through the memory FS then.
type memRegion struct {
	mem     []byte
	refs    int // guarded by the node's mu
	cleanup runtime.Cleanup
}

// allocZero returns size zero bytes for a preallocation, and the region holding them (with one
// reference, the caller's) or nil for heap memory.
func allocZero(size int) ([]byte, *memRegion) {
	if size >= sparseMin {
		if mem, err := mapAnon(size); err == nil {
			r := &memRegion{mem: mem, refs: 1}
			r.cleanup = runtime.AddCleanup(r, func(mem []byte) { _ = unmapAnon(mem) }, mem)
			return mem, r
		}
		// Out of mappings or address space: the heap may still have room.
	}
	return make([]byte, size), nil
}

// acquire adds a reference to r, under the node's mu; nil is heap memory.
func (r *memRegion) acquire() {
	if r != nil {
		r.refs++
	}
}

// release drops a reference to r, under the node's mu, and unmaps r with the last one; nil is
// heap memory.
func (r *memRegion) release() {
	if r == nil {
		return
	}
	r.refs--
	if r.refs > 0 {
		return
	}
	r.cleanup.Stop()
	mem := r.mem
	r.mem = nil
	// An unmap fails only for an invalid range, which mem is not; the memory is lost either way.
	_ = unmapAnon(mem)
}

// memExtent is a run of a file's bytes.
type memExtent struct {
	off int        // the file offset of b[0]
	b   []byte     // the file's bytes [off, off+len(b)); only the last extent has capacity past len
	r   *memRegion // the anonymous mapping b is in, or nil for heap memory
}

// releaseExtents lets go of the regions of ext and clears it, so that the arrays are not kept.
func releaseExtents(ext []memExtent) {
	for i := range ext {
		ext[i].r.release()
	}
	clear(ext)
}

// find returns the index of the extent holding offset off, which is below n.size, under n.mu.
func (n *memNode) find(off int) int {
	if last := len(n.ext) - 1; off >= n.ext[last].off {
		return last // appends and reads near the end, the common case
	}
	return sort.Search(len(n.ext), func(i int) bool { return n.ext[i].off > off }) - 1
}

// readAt copies the file's bytes at off into p, as far as the file goes, under n.mu (read).
func (n *memNode) readAt(p []byte, off int) int {
	if off >= n.size {
		return 0
	}
	c := 0
	for i := n.find(off); c < len(p) && i < len(n.ext); i++ {
		e := n.ext[i]
		c += copy(p[c:], e.b[off+c-e.off:])
	}
	return c
}

// writeAt copies p into the file at off; the file holds at least off+len(p) bytes. Under n.mu.
func (n *memNode) writeAt(p []byte, off int) {
	c := 0
	for i := n.find(off); c < len(p); i++ {
		e := n.ext[i]
		c += copy(e.b[off+c-e.off:], p[c:])
	}
	n.mirror(off, p)
}

// checkResize refuses a new size that a live mapping forbids (see NewMemory), under n.mu.
func (n *memNode) checkResize(size int) error {
	var mapped int
	var writable bool
	for m := range n.maps {
		mapped = max(mapped, len(m.b))
		writable = writable || m.writable
	}
	switch {
	case size < mapped:
		return errMappedShrink
	case size > n.size && writable:
		// Growth never moves the first extent, but refusing it keeps the memory FS as strict
		// as mmap, where the mapping does not cover what the file gains.
		return errMappedGrow
	}
	return nil
}

// resize sets the file's size, zero filling growth, under n.mu.
func (n *memNode) resize(size int) error {
	if err := n.checkResize(size); err != nil {
		return err
	}
	switch {
	case size < n.size:
		n.shrink(size)
	case size > n.size:
		n.grow(size, size, true)
	}
	return nil
}

// shrink cuts the file to size bytes, under n.mu, after checkResize. Extents past the size are
// dropped; the last one kept keeps its capacity (grow zeroes what it exposes again) unless that
// is more than maxExtent past its length, as an index's preallocation trimmed to its entries is,
// and nothing maps it: then it is copied to its length, to return the rest.
func (n *memNode) shrink(size int) {
	if size == 0 {
		releaseExtents(n.ext)
		n.ext = n.ext[:0]
		n.size = 0
		n.gen++
		return
	}
	k := n.find(size - 1)
	releaseExtents(n.ext[k+1:])
	n.ext = n.ext[:k+1]
	e := &n.ext[k]
	e.b = e.b[:size-e.off]
	n.size = size
	if cap(e.b)-len(e.b) > maxExtent && len(n.maps) == 0 {
		e.b = slices.Clone(e.b)
		e.r.release()
		e.r = nil
		if k == 0 {
			n.gen++
		}
	}
}

// grow extends the file to size bytes, under n.mu, after checkResize. The bytes from the old size
// to zeroTo read as zeros afterwards; the caller overwrites those from zeroTo to size (WriteAt
// passes its offset, Truncate the size). A preallocation (Truncate) gets the exact size asked
// for; when the file is at most one extent, one array holding the whole file, so that the
// mapping that follows it shares that array without a copy.
func (n *memNode) grow(size, zeroTo int, prealloc bool) {
	old := n.size
	if prealloc && len(n.ext) <= 1 && (len(n.ext) == 0 || size > cap(n.ext[0].b)) {
		b, r := allocZero(size)
		if len(n.ext) == 1 {
			copy(b, n.ext[0].b)
			releaseExtents(n.ext)
		}
		n.ext = append(n.ext[:0], memExtent{b: b, r: r})
		n.size = size
		n.gen++
		return
	}
	at := old // where the bytes not yet placed in an extent start
	if len(n.ext) > 0 {
		// The last extent's capacity first: it may hold bytes from before a shrink, which
		// must read as zeros.
		e := &n.ext[len(n.ext)-1]
		l := len(e.b)
		room := min(cap(e.b)-l, size-old)
		e.b = e.b[:l+room]
		clear(e.b[l : l+max(0, min(zeroTo-old, room))])
		at += room
	}
	if at < size {
		need := size - at
		c := need
		if !prealloc && old > 0 {
			// A first write gets what it needs: most small files are written once.
			c = max(need, min(max(old, minExtent), maxExtent))
		}
		// A new array is zero: nothing to clear.
		var b []byte
		var r *memRegion
		if prealloc {
			b, r = allocZero(need)
		} else {
			b = make([]byte, need, c)
			prefault(b[:c])
		}
		n.ext = append(n.ext, memExtent{off: at, b: b, r: r})
	}
	n.size = size
}

// mapBytes returns the file's first size bytes (0 < size <= n.size) as one slice of the first
// extent's array, under n.mu, merging the extents it reaches into the first when it reaches past
// it. A writable mapping makes the whole file one extent: the first extent cannot then be
// replaced while the mapping lives (the file cannot grow, and no later mapping reaches past it),
// which would lose the writes made through the mapping.
func (n *memNode) mapBytes(size int, writable bool) []byte {
	switch {
	case writable && len(n.ext) > 1:
		n.merge(len(n.ext) - 1)
	case size > len(n.ext[0].b):
		n.merge(n.find(size - 1))
	}
	return n.ext[0].b[:size:size]
}

// merge copies extents 0 to k into one new first extent, under n.mu. Mappings of the old first
// array stay on it, and mirror keeps them current.
func (n *memNode) merge(k int) {
	last := n.ext[k]
	b := make([]byte, last.off+len(last.b))
	for _, e := range n.ext[:k+1] {
		copy(b[e.off:], e.b)
	}
	releaseExtents(n.ext[:k+1])
	n.ext[0] = memExtent{b: b}
	n.ext = slices.Delete(n.ext, 1, k+1)
	n.gen++
}

// discard drops the file's bytes, under n.mu, when it has no name and no open File left: nothing
// can read them again but the mappings, which hold their own references.
func (n *memNode) discard() {
	releaseExtents(n.ext)
	n.ext = nil
	n.size = 0
	n.gen++
}

// mirror copies a write at off into the mappings still on an array the first extent has left,
// under n.mu.
func (n *memNode) mirror(off int, p []byte) {
	for m := range n.maps {
		if m.gen != n.gen && off < len(m.b) {
			copy(m.b[off:], p)
		}
	}
}
