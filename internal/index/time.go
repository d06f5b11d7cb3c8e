package index

import (
	"encoding/binary"
	"fmt"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Time is the time index of one segment, Kafka's .timeindex file: a sparse, sorted map from
// timestamps to offsets, used to find the first record at or after a time.
//
// An entry is 12 bytes, big-endian: a timestamp in milliseconds since the Unix epoch (int64) and
// an offset relative to the segment's base offset (4 bytes that Kafka reads as a signed int). An entry (t, o) says that no record
// at or below offset o has a timestamp above t. Kafka appends the largest timestamp seen so far
// and the offset it was seen at, only when that timestamp grows, so timestamps strictly increase
// even when record timestamps go backwards; offsets never decrease, and two entries may share an
// offset (Kafka appends the segment's final largest timestamp when the segment rolls).
//
// Time does no locking: the caller serialises MaybeAppend, TruncateTo, Reset, Seal and Close
// with every other call, and so Reserve when MustGrow says it grows the index (a remap). LookupBefore, Entry and the other readers may run concurrently with each
// other.
type Time struct {
	base int64
	m    mapped
}

// OpenTime opens the time index at path of the segment whose base offset is baseOffset; it
// behaves as OpenOffset, with 12-byte entries: a writable index is created when missing and
// holds up to maxBytes rounded down to a whole entry, its file growing by steps, a read-only one is mapped at its size,
// and a size that is not a multiple of 12 gives ErrCorrupt. Open does not check the entries: call
// Check.
func OpenTime(fsys fsys.FS, path string, baseOffset int64, maxBytes int, writable bool) (*Time, error) {
	if err := checkBase(path, baseOffset); err != nil {
		return nil, err
	}
	x := &Time{base: baseOffset}
	if err := x.m.open(fsys, path, TimeEntrySize, maxBytes, writable); err != nil {
		return nil, err
	}
	return x, nil
}

// BaseOffset returns the base offset of the index's segment.
func (x *Time) BaseOffset() int64 { return x.base }

// raw returns entry i's timestamp and relative offset as stored.
func (x *Time) raw(i int) (ts int64, rel uint32) {
	b := x.m.entry(i)
	return int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint32(b[8:])
}

// Check verifies the entries in use and returns an ErrCorrupt naming the first bad entry and the
// rule it breaks, or nil. maxOffset is the last offset in the segment's .log file (below the
// base offset when the segment is empty).
//
// The rules are the ones every index written by Kafka or by MaybeAppend keeps, which is stricter
// than Kafka's TimeIndex.sanityCheck (that only compares the last entry with the first and the
// base offset):
//   - timestamps strictly increase, and are not negative: Kafka appends only above the last
//     timestamp, which for an empty index is -1 (no timestamp);
//   - offsets never decrease;
//   - every offset is within [base offset, maxOffset], and its relative offset at most
//     math.MaxInt32 (Kafka reads it as a Java int).
//
// A file left preallocated by a crash ends in zero entries, whose timestamp 0 does not increase,
// and is reported.
func (x *Time) Check(maxOffset int64) error {
	var prevTS int64
	var prevRel uint32
	for i := 0; i < x.m.entries; i++ {
		ts, rel := x.raw(i)
		var why string
		switch {
		case ts < 0:
			why = fmt.Sprintf("negative timestamp %d", ts)
		case i > 0 && ts <= prevTS:
			why = fmt.Sprintf("timestamp %d is not above the previous entry's %d", ts, prevTS)
		case rel > maxRelative:
			why = fmt.Sprintf("relative offset %#x does not fit a signed 32-bit integer", rel)
		case i > 0 && rel < prevRel:
			why = fmt.Sprintf("relative offset %d is below the previous entry's %d", rel, prevRel)
		case maxOffset < x.base || int64(rel) > maxOffset-x.base:
			why = fmt.Sprintf("offset %d is past the segment's last offset %d", x.base+int64(rel), maxOffset)
		}
		if why != "" {
			return fmt.Errorf("%s: %w: entry %d (of %d): %s", x.m.name, ErrCorrupt, i, x.m.entries, why)
		}
		prevTS, prevRel = ts, rel
	}
	return nil
}

// LookupBefore returns the offset of the entry with the largest timestamp strictly below ts, or
// ok false when there is none. Every record at or below that offset has a timestamp below ts, so
// the search for the first record whose timestamp is at least ts starts after it (in the batch
// holding offset+1). The answer is only meaningful on an index that passes Check. It does not
// allocate.
//
// Kafka's TimeIndex.lookup returns the entry with the largest timestamp at most ts instead, and
// scans from the batch holding that entry's offset, since a record at that offset may carry ts
// itself; the strict bound is what lets the scan start after the entry's offset.
func (x *Time) LookupBefore(ts int64) (offset int64, ok bool) {
	lo, hi := 0, x.m.entries
	below := func(i int) bool { return int64(binary.BigEndian.Uint64(x.m.data[i*TimeEntrySize:])) < ts }
	if warm := hi - warmBytes/TimeEntrySize; warm > 0 {
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
	if lo == 0 {
		return 0, false
	}
	_, offset = x.Entry(lo - 1)
	return offset, true
}

// MaybeAppend records that the largest timestamp so far in the segment is timestamp (ms), seen at
// offset. It appends an entry only when timestamp is above the last entry's (above -1, Kafka's
// "no timestamp", on an empty index), and otherwise does nothing, so the caller may pass every
// batch's largest timestamp, and the segment's final one when it rolls.
//
// It returns an error when the index is read-only or closed, when offset is below the last
// entry's offset or the base offset (even if nothing would be appended, as in Kafka), an error
// wrapping ErrFull when an entry is due and there is no room, and an error when the relative
// offset of an entry due does not fit in 31 bits, and an error wrapping the file system's
// (syscall.ENOSPC) when the entry's disk space cannot be reserved (see Reserve), with nothing
// appended. An index built with MaybeAppend passes Check.
//
// Like Kafka, the index keeps its last slot for the entry appended at roll: Full is true one entry
// before MaybeAppend returns ErrFull.
func (x *Time) MaybeAppend(timestamp, offset int64) error {
	if err := x.m.checkWritable(); err != nil {
		return err
	}
	lastTS, lastOffset := int64(noTimestamp), x.base
	if ts, o, ok := x.LastEntry(); ok {
		lastTS, lastOffset = ts, o
	}
	if offset < lastOffset {
		return fmt.Errorf("%s: append timestamp %d at offset %d: offset below the last entry's %d", x.m.name, timestamp, offset, lastOffset)
	}
	if timestamp <= lastTS {
		return nil
	}
	if x.m.entries >= x.m.capacity() {
		return fmt.Errorf("%s: %w: %d entries", x.m.name, ErrFull, x.m.entries)
	}
	if offset-x.base > maxRelative {
		return fmt.Errorf("%s: append offset %d: relative to base offset %d it does not fit in 31 bits", x.m.name, offset, x.base)
	}
	b, err := x.m.put()
	if err != nil {
		return fmt.Errorf("append timestamp %d at offset %d: %w", timestamp, offset, err)
	}
	binary.BigEndian.PutUint64(b, uint64(timestamp))
	binary.BigEndian.PutUint32(b[8:], uint32(offset-x.base))
	return nil
}

// Reserve makes sure the next n entries, and the one after them that a roll appends, have disk
// space, as Offset.Reserve does for the offset index: appending them then cannot fault on a
// full disk, and the entry of the roll needs no space. The error wraps the file system's
// (syscall.ENOSPC for a full disk); nothing of the index changes then. A read-only or closed
// index has nothing to reserve.
func (x *Time) Reserve(n int) error {
	if x.m.checkWritable() != nil {
		return nil
	}
	return x.m.reserve(n + 1)
}

// MustGrow reports whether Reserve(n) would grow the index: remap it larger, which no lookup
// may run concurrently with (Reserve is otherwise safe alongside lookups, as it stores nothing
// through the mapping). False for a read-only or closed index.
func (x *Time) MustGrow(n int) bool {
	return x.m.checkWritable() == nil && x.m.mustGrow(n+1)
}

// CanAppend reports whether an entry for offset would fit: the index is not Full and offset is
// within math.MaxInt32 of the base offset. False is a reason to roll the segment.
func (x *Time) CanAppend(offset int64) bool {
	return !x.Full() && offset >= x.base && offset-x.base <= maxRelative
}

// Full reports whether the index should roll: as Kafka's TimeIndex.isFull it is true when one
// free slot is left, which is kept for the entry MaybeAppend adds at roll. A read-only or closed
// index is always full.
func (x *Time) Full() bool { return x.m.full() || x.m.entries >= x.m.capacity()-1 }

// TruncateTo drops the entries whose offset is at least offset, as Kafka's truncateTo does when
// the log is truncated. A writable index zeroes the dropped entries; a read-only one only stops
// showing them (its file is not changed: reopen it writable to truncate the file).
func (x *Time) TruncateTo(offset int64) {
	n := 0
	if offset > x.base {
		rel := offset - x.base
		lo, hi := 0, x.m.entries
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if int64(binary.BigEndian.Uint32(x.m.data[mid*TimeEntrySize+8:])) < rel {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		n = lo
	}
	x.m.truncate(n)
}

// Reset drops every entry, before a rebuild from the log; it works on an index whose entries
// are corrupt.
func (x *Time) Reset() { x.m.truncate(0) }

// Entries returns the number of entries in use.
func (x *Time) Entries() int { return x.m.entries }

// Entry returns entry i, 0 <= i < Entries(): its timestamp (ms) and its absolute offset. It
// panics when i is out of range, like a slice index.
func (x *Time) Entry(i int) (timestamp, offset int64) {
	ts, rel := x.raw(i)
	return ts, x.base + int64(rel)
}

// LastEntry returns the last entry, or ok false when the index is empty.
func (x *Time) LastEntry() (timestamp, offset int64, ok bool) {
	if x.m.entries == 0 {
		return 0, 0, false
	}
	timestamp, offset = x.Entry(x.m.entries - 1)
	return timestamp, offset, true
}

// Seal trims the file to the entries in use and maps it read-only, as Kafka does when the
// segment stops being the active one (append the segment's final largest timestamp first).
// Sealing a read-only or sealed index does nothing. After an error the caller closes the index.
func (x *Time) Seal() error { return x.m.seal() }

// Sync makes the entries, and the file's size after a preallocation or a trim, durable.
func (x *Time) Sync() error { return x.m.sync() }

// Close trims a writable index to the entries in use, unmaps it and closes the file; it does not
// sync (call Sync first for durability). The index is empty afterwards; a second Close does
// nothing.
func (x *Time) Close() error { return x.m.close() }

// SizeBytes returns the bytes used by the entries in use: the file's size once trimmed.
func (x *Time) SizeBytes() int { return x.m.entries * TimeEntrySize }
