package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Offset is the offset index of one segment, Kafka's .index file: a sparse, sorted map from
// offsets to the byte positions in the segment's .log file of the batches holding them.
//
// An entry is 8 bytes, big-endian: the offset relative to the segment's base offset and the
// position, each 4 bytes that Kafka reads as a signed int. Kafka appends (last offset of a batch, start position of that batch)
// once per index.interval.bytes of log, so a lookup finds the batch to start scanning from, and
// the scan reads at most about index.interval.bytes before it reaches the target offset.
//
// Offset does no locking: the caller serialises Append, TruncateTo, Reset, Seal and Close with
// every other call, and so Reserve when MustGrow says it grows the index (a remap). Lookup, Entry and the other readers may run concurrently with each other.
type Offset struct {
	base int64
	m    mapped
}

// OpenOffset opens the offset index at path of the segment whose base offset is baseOffset.
//
// A writable index (the active segment's) is created when missing and mapped writable; it holds
// up to maxBytes rounded down to a whole entry (Kafka's segment.index.bytes, 10 MiB by default),
// its file growing from a page by doubling as entries need room (Kafka preallocates it at
// maxBytes); an existing file larger than maxBytes keeps its size and is full. A read-only index (a sealed
// segment's) must exist and is mapped at its size; maxBytes is not used.
//
// The entries in use are the file's size divided by 8, since Kafka and Close trim the file to its
// entries. A size that is not a multiple of 8 gives ErrCorrupt; the caller removes the file and
// opens it again to rebuild it. Open does not check the entries: call Check.
func OpenOffset(fsys fsys.FS, path string, baseOffset int64, maxBytes int, writable bool) (*Offset, error) {
	if err := checkBase(path, baseOffset); err != nil {
		return nil, err
	}
	x := &Offset{base: baseOffset}
	if err := x.m.open(fsys, path, OffsetEntrySize, maxBytes, writable); err != nil {
		return nil, err
	}
	return x, nil
}

// BaseOffset returns the base offset of the index's segment.
func (x *Offset) BaseOffset() int64 { return x.base }

// raw returns entry i's relative offset and position as stored.
func (x *Offset) raw(i int) (rel, pos uint32) {
	b := x.m.entry(i)
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
}

// Check verifies the entries in use and returns an ErrCorrupt naming the first bad entry and the
// rule it breaks, or nil. logSize is the size in bytes of the segment's .log file.
//
// The rules are the ones every index written by Kafka or by Append keeps, which is stricter than
// Kafka's own OffsetIndex.sanityCheck (that only looks at the file size and the last entry):
//   - relative offsets strictly increase, as Kafka's append requires;
//   - positions strictly increase, since each entry names a different batch;
//   - every position is below logSize, so that a lookup never points past the data;
//   - relative offsets and positions are at most math.MaxInt32: Kafka reads them as Java ints,
//     so 0xFFFFFFFF and friends would be negative there;
//   - relative offset 0 may only be at position 0: offsets in a segment start at its base offset,
//     so only the first batch can hold the base offset. Kafka itself never indexes the batch at
//     position 0 (it indexes after index.interval.bytes), but an entry there is correct, so it
//     is allowed, with any offset of that batch.
//
// A file left preallocated by a crash ends in zero entries, which break the first rule (when no
// entry was written at all, the second zero entry breaks it) and are reported.
func (x *Offset) Check(logSize int64) error {
	var prevRel, prevPos uint32
	for i := 0; i < x.m.entries; i++ {
		rel, pos := x.raw(i)
		var why string
		switch {
		case rel > maxRelative:
			why = fmt.Sprintf("relative offset %#x does not fit a signed 32-bit integer", rel)
		case pos > maxRelative:
			why = fmt.Sprintf("position %#x does not fit a signed 32-bit integer", pos)
		case i > 0 && rel <= prevRel:
			why = fmt.Sprintf("relative offset %d is not above the previous entry's %d", rel, prevRel)
		case i > 0 && pos <= prevPos:
			why = fmt.Sprintf("position %d is not above the previous entry's %d", pos, prevPos)
		case int64(pos) >= logSize:
			why = fmt.Sprintf("position %d is not below the log size %d", pos, logSize)
		case rel == 0 && pos != 0:
			why = fmt.Sprintf("relative offset 0 at position %d, but only the batch at position 0 can end at the base offset", pos)
		}
		if why != "" {
			return fmt.Errorf("%s: %w: entry %d (of %d): %s", x.m.name, ErrCorrupt, i, x.m.entries, why)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// floor returns the number of entries whose offset is at most offset, by binary search; on a
// sorted index that is one more than the index of the entry Lookup returns.
func (x *Offset) floor(offset int64) int {
	if offset < x.base {
		return 0
	}
	// Clamped so that rel+1 cannot overflow; it is still above every uint32 in the file.
	rel := min(offset-x.base, math.MaxUint32)
	return x.search(rel + 1)
}

// search returns the number of leading entries whose relative offset is below rel. Like Kafka it
// tries the warm tail of the index first.
func (x *Offset) search(rel int64) int {
	data := x.m.data
	below := func(i int) bool { return int64(binary.BigEndian.Uint32(data[i*OffsetEntrySize:])) < rel }
	lo, hi := 0, x.m.entries
	if warm := hi - warmBytes/OffsetEntrySize; warm > 0 {
		if below(warm) {
			lo = warm + 1
		} else {
			hi = warm
		}
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if below(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Lookup returns the entry with the largest offset at most offset: the offset and the position
// in the .log file of the batch to start scanning from. When there is none (an empty index, or an
// offset below the first entry) it returns (base offset, 0), the start of the segment, as Kafka's
// OffsetIndex.lookup does. The answer is only meaningful on an index that passes Check. It does not
// allocate.
func (x *Offset) Lookup(offset int64) (entryOffset, position int64) {
	n := x.floor(offset)
	if n == 0 {
		return x.base, 0
	}
	return x.Entry(n - 1)
}

// Append adds an entry: offset, and the position in bytes in the .log file of the batch holding
// it (Kafka appends the batch's last offset and its start position). It returns an error wrapping
// ErrFull when the index is full, and an error when the index is read-only or closed, when offset
// is not above the last entry's, when position is not above the last entry's, when offset is
// below the base offset or more than math.MaxInt32 above it (check CanAppend and roll the segment
// first), when position is negative or above math.MaxInt32, or when offset is the base offset
// but position is not 0; and an error wrapping the file system's (syscall.ENOSPC) when the disk
// space of the entry cannot be reserved (see Reserve), with nothing appended. An index built with
// Append passes Check.
func (x *Offset) Append(offset, position int64) error {
	if err := x.m.checkWritable(); err != nil {
		return err
	}
	if x.m.entries >= x.m.capacity() {
		return fmt.Errorf("%s: %w: %d entries", x.m.name, ErrFull, x.m.entries)
	}
	if lastOffset, lastPos, ok := x.LastEntry(); ok {
		if offset <= lastOffset {
			return fmt.Errorf("%s: append offset %d: not above the last entry's offset %d", x.m.name, offset, lastOffset)
		}
		if position <= lastPos {
			return fmt.Errorf("%s: append offset %d at position %d: not above the last entry's position %d", x.m.name, offset, position, lastPos)
		}
	}
	if offset < x.base || offset-x.base > maxRelative {
		return fmt.Errorf("%s: append offset %d: relative to base offset %d it does not fit in 31 bits", x.m.name, offset, x.base)
	}
	if position < 0 || position > maxRelative {
		return fmt.Errorf("%s: append offset %d: position %d out of range [0, %d]", x.m.name, offset, position, maxRelative)
	}
	if offset == x.base && position != 0 {
		return fmt.Errorf("%s: append base offset %d at position %d: only the batch at position 0 can hold it", x.m.name, offset, position)
	}
	b, err := x.m.put()
	if err != nil {
		return fmt.Errorf("append offset %d: %w", offset, err)
	}
	binary.BigEndian.PutUint32(b, uint32(offset-x.base))
	binary.BigEndian.PutUint32(b[4:], uint32(position))
	return nil
}

// Reserve makes sure the next n entries have disk space, so that appending them stores into
// the mapping without allocating: a store into a page a full disk cannot back would be a SIGBUS.
// Space is reserved with fallocate a 64 KiB chunk ahead, so most calls do nothing. The error
// wraps the file system's (syscall.ENOSPC for a full disk); nothing of the index changes then.
// Kafka preallocates its index with RandomAccessFile.setLength, sparse, and has no such check.
// A read-only or closed index has nothing to reserve.
func (x *Offset) Reserve(n int) error {
	if x.m.checkWritable() != nil {
		return nil
	}
	return x.m.reserve(n)
}

// MustGrow reports whether Reserve(n) would grow the index: remap it larger, which no lookup
// may run concurrently with (Reserve is otherwise safe alongside lookups, as it stores nothing
// through the mapping). False for a read-only or closed index.
func (x *Offset) MustGrow(n int) bool {
	return x.m.checkWritable() == nil && x.m.mustGrow(n)
}

// CanAppend reports whether an entry for offset would fit: the index is writable and not full,
// and offset is within math.MaxInt32 of the base offset. False is a reason to roll the segment
// (Kafka rolls on a full index and on relative offset overflow).
func (x *Offset) CanAppend(offset int64) bool {
	return !x.Full() && offset >= x.base && offset-x.base <= maxRelative
}

// Full reports whether the index has no room for another entry; a read-only or closed index is
// always full.
func (x *Offset) Full() bool { return x.m.full() }

// TruncateTo drops the entries whose offset is at least offset, as Kafka's truncateTo does when
// the log is truncated. A writable index zeroes the dropped entries; a read-only one only stops
// showing them (its file is not changed: reopen it writable to truncate the file).
func (x *Offset) TruncateTo(offset int64) {
	n := 0
	if offset > x.base {
		n = x.search(offset - x.base)
	}
	x.m.truncate(n)
}

// Reset drops every entry, before a rebuild from the log; it works on an index whose entries
// are corrupt.
func (x *Offset) Reset() { x.m.truncate(0) }

// Entries returns the number of entries in use.
func (x *Offset) Entries() int { return x.m.entries }

// Entry returns entry i, 0 <= i < Entries(): its absolute offset and its position. It panics
// when i is out of range, like a slice index.
func (x *Offset) Entry(i int) (offset, position int64) {
	rel, pos := x.raw(i)
	return x.base + int64(rel), int64(pos)
}

// LastEntry returns the last entry, or ok false when the index is empty.
func (x *Offset) LastEntry() (offset, position int64, ok bool) {
	if x.m.entries == 0 {
		return 0, 0, false
	}
	offset, position = x.Entry(x.m.entries - 1)
	return offset, position, true
}

// Seal trims the file to the entries in use and maps it read-only, as Kafka does when the
// segment stops being the active one. Sealing a read-only or sealed index does nothing. After
// an error the caller closes the index (and rebuilds it when it then has no entries).
func (x *Offset) Seal() error { return x.m.seal() }

// Sync makes the entries, and the file's size after a preallocation or a trim, durable.
func (x *Offset) Sync() error { return x.m.sync() }

// Close trims a writable index to the entries in use, unmaps it and closes the file; it does not
// sync (call Sync first for durability). The index is empty afterwards; a second Close does
// nothing.
func (x *Offset) Close() error { return x.m.close() }

// SizeBytes returns the bytes used by the entries in use: the file's size once trimmed.
func (x *Offset) SizeBytes() int { return x.m.entries * OffsetEntrySize }
