package index

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// mapped is an index file mapped into memory as an array of fixed-size entries, of which the first
// entries are in use. It holds what the offset index and the time index share: opening, the
// preallocation of the active segment's index, trimming, sealing, syncing and closing.
//
// Invariants: entries <= maxEntries and maxEntries*entrySize <= len(data), so reading an entry
// below entries never goes out of bounds, whatever the file holds; in a writable mapping the
// bytes after the entries in use are zero, so a crash that leaves the file preallocated leaves
// zero entries after the last real one, which Check detects; and every byte a writable mapping
// is stored into has disk space reserved (below reserved), so that a full disk is an error of
// the append that needs the space, never a SIGBUS.
//
// Reads of the mapping cannot fault on a file that shrank, because nothing of the log shrinks an
// index file under a live mapping of it: seal and close unmap before they trim, truncate only
// shrinks the view (the file keeps its size until the trim), and a rebuild in fresh files
// (recreateIndexes) closes the old mapping before it removes the file; retention renames files
// and removes them only once no read holds the segment. The memory file system refuses a
// Truncate below a live mapping, so a test that broke this would fail there. A file cut by
// another program while the store holds its directory's lock is outside that promise, as it
// is for Kafka's mapped indexes; the .log mapping, read in place by ReadRecord, turns such a
// fault into the read's error (the segment package's ReadRecord).
type mapped struct {
	name      string
	entrySize int
	f         fsys.File
	m         fsys.Mapping // nil when nothing is mapped: empty file, closed, or a failed remap
	data      []byte       // m.Bytes(), or nil

	entries    int // entries in use, at the start of data
	maxEntries int // entries data has room for
	// maxSize is the size in bytes, whole entries, a writable index's file and mapping grow to
	// (see grow): segment.index.bytes, or the file's size when it was larger.
	maxSize int
	// reserved is where the bytes of a writable index that have no disk space reserved start
	// (see reserve): entries*entrySize <= reserved <= len(data), and nothing is ever stored
	// through the mapping at or past it.
	reserved int

	writable  bool // data is mapped writable: the index of the active segment
	trim      bool // the file is larger than the entries in use and must be trimmed on Close
	sizeDirty bool // the file's size changed since the last Sync
	closed    bool
}

// checkBase refuses base offsets that Kafka cannot have and that would make base plus a relative
// offset overflow.
func checkBase(path string, baseOffset int64) error {
	if baseOffset < 0 || baseOffset > math.MaxInt64-maxRelative {
		return fmt.Errorf("%s: base offset %d out of range", path, baseOffset)
	}
	return nil
}

// open opens name, creating it when writable, and maps it. A writable index may hold up to
// maxBytes rounded down to a whole entry (an existing file larger than that is mapped whole and
// is full); its file grows by steps (initialStep, then doubling) up to that maximum as entries
// need room (see grow), sparse, with disk space reserved for the bytes it held and for its next
// entries (see reserve). A writable index whose file is empty is left so, unmapped, until its
// first entry (or a Reserve) needs room: opening the active segment of an idle partition, or one
// recovered after a crash with no entry to index, costs the open of the file alone, not a
// preallocation, a mapping and a trim on close. A read-only one is mapped at its size. Entries in
// use are the file's size divided by entrySize; a size that does not divide is ErrCorrupt. A
// reservation the disk cannot hold is an error wrapping syscall.ENOSPC, and nothing is mapped.
func (x *mapped) open(fs fsys.FS, name string, entrySize, maxBytes int, writable bool) error {
	*x = mapped{name: name, entrySize: entrySize}
	maxSize := maxBytes / entrySize * entrySize
	if writable && maxSize < entrySize {
		return fmt.Errorf("%s: maximum size %d bytes is less than one %d-byte entry", name, maxBytes, entrySize)
	}
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := fs.OpenFile(name, flag, 0o644)
	if err != nil {
		return fmt.Errorf("open index %s: %w", name, err)
	}
	if err := x.mapFile(f, maxSize, writable); err != nil {
		return errors.Join(err, f.Close())
	}
	return nil
}

func (x *mapped) mapFile(f fsys.File, maxSize int, writable bool) error {
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("%s: size: %w", x.name, err)
	}
	if size < 0 || size%int64(x.entrySize) != 0 {
		return fmt.Errorf("%s: %w: size %d bytes is not a whole number of %d-byte entries",
			x.name, ErrCorrupt, size, x.entrySize)
	}
	if size > math.MaxInt {
		return fmt.Errorf("%s: %w: size %d bytes cannot be mapped", x.name, ErrCorrupt, size)
	}
	entries := int(size) / x.entrySize
	mapSize := int(size)
	x.maxSize = max(maxSize, mapSize)
	if writable && size > 0 {
		// The bytes the file holds may be stored into (truncate zeroes dropped entries), and a
		// file a crash left preallocated is sparse: they get their space first. On a file
		// trimmed by a clean close, every block is allocated already and this costs a lookup.
		if err := f.Allocate(0, size); err != nil {
			return fmt.Errorf("%s: reserve %d bytes: %w", x.name, size, err)
		}
	}
	if writable && size == 0 {
		// Nothing to map yet: the first entry grows the file to its first step (see put). The
		// file's size, which a close that did not sync it may have trimmed, is made durable by
		// the first Sync.
		x.f, x.writable, x.sizeDirty = f, true, true
		return nil
	}
	if first := x.step(0); writable && first > mapSize {
		if err := f.Truncate(int64(first)); err != nil {
			return fmt.Errorf("%s: preallocate %d bytes: %w", x.name, first, err)
		}
		mapSize = first
		x.sizeDirty = true
	}
	x.f = f
	x.writable = writable
	x.trim = writable
	// A writable index's file may have been trimmed by a close that did not sync it (a segment
	// closed for idleness): its first Sync makes the size durable whether open grew it or not.
	x.sizeDirty = x.sizeDirty || writable
	if err := x.mapAt(mapSize, writable); err != nil {
		return err
	}
	x.entries = entries
	x.reserved = int(size)
	if writable && entries < x.maxEntries {
		// The first entries' space now, so that a segment that could take no entry is refused
		// when it is made (a roll), not at its first append. A file that fills its mapping (one
		// trimmed by a close, or a crash's grown file that the load rebuilds in place) grows at
		// its next append, not at open: a full disk does not refuse the load.
		if err := x.reserve(1); err != nil {
			return errors.Join(err, x.unmap())
		}
	}
	return nil
}

// mapAt maps the first size bytes of the file and sets maxEntries from them; an empty file is not
// mapped, as a zero-length mmap is an error on most systems.
func (x *mapped) mapAt(size int, writable bool) error {
	x.m, x.data, x.entries, x.maxEntries = nil, nil, 0, 0
	if size == 0 {
		return nil
	}
	m, err := x.f.Map(size, writable)
	if err != nil {
		return fmt.Errorf("%s: map %d bytes: %w", x.name, size, err)
	}
	data := m.Bytes()
	if len(data) < size {
		return errors.Join(fmt.Errorf("%s: mapped %d bytes, want %d", x.name, len(data), size), m.Close())
	}
	x.m, x.data, x.maxEntries = m, data[:size:size], size/x.entrySize
	return nil
}

// unmap closes the mapping, which writes it back for file systems without mmap, and leaves the
// index empty so that nothing reads the unmapped memory.
func (x *mapped) unmap() error {
	m := x.m
	x.m, x.data, x.entries, x.maxEntries = nil, nil, 0, 0
	if m == nil {
		return nil
	}
	if err := m.Close(); err != nil {
		return fmt.Errorf("%s: unmap: %w", x.name, err)
	}
	return nil
}

// entry returns entry i's bytes; i must be below entries.
func (x *mapped) entry(i int) []byte {
	if i < 0 || i >= x.entries {
		panic(fmt.Sprintf("index %s: entry %d out of range [0, %d)", x.name, i, x.entries))
	}
	return x.data[i*x.entrySize : (i+1)*x.entrySize]
}

// checkWritable returns the error for a write to an index that cannot take one.
func (x *mapped) checkWritable() error {
	switch {
	case x.closed:
		return fmt.Errorf("%s: index is closed", x.name)
	case !x.writable:
		return fmt.Errorf("%s: index is read-only", x.name)
	}
	return nil
}

// capacity is the most entries a writable index holds once grown to its maximum size.
func (x *mapped) capacity() int { return x.maxSize / x.entrySize }

// full reports whether there is no room for another entry, growing included.
func (x *mapped) full() bool { return !x.writable || x.entries >= x.capacity() }

// initialStep is the size in bytes a new writable index's file and mapping start at (rounded down
// to whole entries, and at most the index's maximum size): one page, which holds the entries of
// 2 MiB of log at Kafka's default index.interval.bytes (4 KiB). Kafka preallocates the file at
// segment.index.bytes (10 MiB) up front, which a sparse file and a lazily faulted mapping make
// free on disk; growing by steps keeps it so where neither is (the memory file system on the
// Go heap: the race detector, commitlog_nommap, systems without anonymous mappings), and keeps
// the mapping of an idle partition's index to a page.
const initialStep = pageSize

// step returns the size of the mapping that follows one of size bytes: initialStep at first, then
// twice the size, in whole entries, capped at maxSize.
func (x *mapped) step(size int) int {
	next := max(initialStep, 2*size) / x.entrySize * x.entrySize
	return min(max(next, x.entrySize), x.maxSize)
}

// mustGrow reports whether grow(entries+n) would remap the index.
func (x *mapped) mustGrow(n int) bool { return min(x.entries+n, x.capacity()) > x.maxEntries }

// grow remaps a writable index larger, by steps (see step), until its mapping holds need entries
// (at most its capacity): the mapping goes, the file is grown, sparse, and mapped again at the new
// size. The entries in use and the reserved space are kept. When the file cannot grow or be
// mapped at the new size the old mapping is made again and the error returned; when even that
// fails, the index has no entries and takes no more (the caller's Close still trims it, and the
// log rebuilds what it misses on the next open).
func (x *mapped) grow(need int) error {
	need = min(need, x.capacity())
	if need <= x.maxEntries {
		return nil
	}
	old, size := len(x.data), len(x.data)
	for size < need*x.entrySize {
		size = x.step(size)
	}
	entries := x.entries
	// Without mmap, unmapping writes the bytes back at the mapped length: before the growth.
	if err := x.unmap(); err != nil {
		x.writable = false
		return err
	}
	err := x.f.Truncate(int64(size))
	if err == nil {
		x.sizeDirty, x.trim = true, true
		if err = x.mapAt(size, true); err == nil {
			x.entries = entries
			return nil
		}
	} else {
		err = fmt.Errorf("%s: grow to %d bytes: %w", x.name, size, err)
	}
	if rerr := x.mapAt(old, true); rerr != nil {
		x.writable = false
		x.reserved = 0
		return errors.Join(err, rerr)
	}
	x.entries = entries
	return err
}

// put appends an entry; the caller has checked that there is room. It reserves the entry's disk
// space first if the caller has not (see reserve); when that fails nothing is stored.
func (x *mapped) put() ([]byte, error) {
	if err := x.reserve(1); err != nil {
		return nil, err
	}
	b := x.data[x.entries*x.entrySize : (x.entries+1)*x.entrySize]
	x.entries++
	return b, nil
}

// Reservation sizes: space is reserved a chunk at a time, in whole pages, ahead of the entries.
const (
	pageSize     = 4 << 10
	reserveChunk = 64 << 10
)

// reserve makes sure the next n entries of a writable index (as many of them as its capacity
// holds) are mapped, growing the mapping (see grow), and have disk space, so that storing them
// through the mapping cannot fault: the first
// store into a page of a sparse file allocates the page's block, and on a full disk that is a
// SIGBUS. Space is reserved with File.Allocate (fallocate) from reserved to at least a chunk
// further, rounded up to a page, so that an append rarely pays for it: one call per
// reserveChunk bytes of index. A failed reservation is an error wrapping the file system's
// (syscall.ENOSPC for a full disk) and leaves the index as it was; some of the range may have
// been allocated, which is harmless: the file's size does not change.
func (x *mapped) reserve(n int) error {
	if err := x.grow(x.entries + n); err != nil {
		return err
	}
	end := min((x.entries+n)*x.entrySize, len(x.data))
	if end <= x.reserved {
		return nil
	}
	to := min((max(end, x.reserved+reserveChunk)+pageSize-1)/pageSize*pageSize, len(x.data))
	if err := x.f.Allocate(int64(x.reserved), int64(to-x.reserved)); err != nil {
		return fmt.Errorf("%s: reserve bytes %d to %d for %d entries: %w", x.name, x.reserved, to, n, err)
	}
	x.reserved = to
	return nil
}

// truncate keeps the first n entries. A writable index zeroes the dropped ones, so that a crash
// before the next trim cannot leave stale entries behind the live ones that look valid; a
// read-only mapping cannot be written, and only its view shrinks. The bytes zeroed are below
// reserved (entries in use always are), so the stores need no space.
func (x *mapped) truncate(n int) {
	if n < 0 || n >= x.entries {
		return
	}
	if x.writable {
		clear(x.data[n*x.entrySize : x.entries*x.entrySize])
	}
	x.entries = n
}

// seal trims the file to the entries in use and maps it read-only. When the trim fails the
// entries stay readable and Close tries the trim again; when the remap fails the index is left
// empty (no entry is readable), and the caller closes it and rebuilds it.
func (x *mapped) seal() error {
	if x.closed {
		return fmt.Errorf("%s: index is closed", x.name)
	}
	if !x.writable {
		return nil
	}
	used := x.entries * x.entrySize
	x.writable = false
	x.trim = false
	// The writable mapping goes first: without mmap its Close writes the bytes back at the
	// mapped length, which would undo a trim made before it.
	if err := x.unmap(); err != nil {
		return err
	}
	var trimErr error
	if err := x.f.Truncate(int64(used)); err != nil {
		trimErr = fmt.Errorf("%s: trim to %d bytes: %w", x.name, used, err)
		x.trim = true
	} else {
		x.sizeDirty = true
	}
	if err := x.mapAt(used, false); err != nil {
		return errors.Join(trimErr, err)
	}
	x.entries = x.maxEntries
	return trimErr
}

// sync makes the entries and the file's size durable.
func (x *mapped) sync() error {
	if x.closed {
		return fmt.Errorf("%s: index is closed", x.name)
	}
	if x.writable && x.m != nil {
		if err := x.m.Sync(); err != nil {
			return fmt.Errorf("%s: sync mapping: %w", x.name, err)
		}
	}
	if x.sizeDirty {
		if err := x.f.Sync(); err != nil {
			return fmt.Errorf("%s: sync: %w", x.name, err)
		}
		x.sizeDirty = false
	}
	return nil
}

// close trims a writable index to the entries in use, unmaps it and closes the file. A second
// close does nothing.
func (x *mapped) close() error {
	if x.closed {
		return nil
	}
	x.closed = true
	used := x.entries * x.entrySize
	trim := x.trim
	x.writable, x.trim = false, false
	err := x.unmap()
	if trim && err == nil {
		if terr := x.f.Truncate(int64(used)); terr != nil {
			err = fmt.Errorf("%s: trim to %d bytes: %w", x.name, used, terr)
		}
	}
	if cerr := x.f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("%s: close: %w", x.name, cerr))
	}
	return err
}
