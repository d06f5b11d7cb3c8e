// Package index implements Kafka's two per-segment indexes over memory-mapped files: the offset
// index (.index), which maps offsets to byte positions in the segment's .log file, and the time
// index (.timeindex), which maps timestamps to offsets. The files are Kafka's, byte for byte, so a
// segment folder copied from a Kafka broker opens here and the files written here open in Kafka.
//
// Both indexes are sparse, sorted arrays of fixed-size big-endian entries whose offsets are stored
// relative to the segment's base offset. The index of the active segment is mapped writable and
// may grow to its maximum size (segment.index.bytes, 10 MiB by default); where Kafka preallocates
// the file at that size up front, it starts at a page here and doubles as entries need room, so
// that an idle partition's index takes a page of memory on every file system, and an index opened
// writable on an empty file takes none: it is grown and mapped when its first entry (or Reserve)
// needs room. The file is trimmed to the entries in use when the segment is sealed (Seal) or the
// index is closed (Close). Because Kafka trims on clean close, the number of entries in a file is its size divided
// by the entry size; a file left preallocated by a crash therefore ends in zero entries, which
// Check reports as corrupt, and the caller rebuilds the index (Reset, then appends) from the log.
//
// Limits follow Kafka, which reads relative offsets and positions as signed 32-bit integers: a
// relative offset or a position above math.MaxInt32 is refused by the append methods and reported
// by Check, because Kafka would read it as negative.
//
// Nothing in this package trusts the file: sizes are checked before mapping, no length read from
// the file is used to allocate, and no file content makes a method panic.
//
// The indexes do no locking. The caller serialises a writer (Append, MaybeAppend, TruncateTo,
// Reset, Seal, Close) with readers (Lookup, LookupBefore, Entry, Check, ...); readers may run
// concurrently with each other.
package index

import (
	"errors"
	"math"
)

// ErrCorrupt reports an index file that breaks the index's rules: a size that is not a whole
// number of entries (from the Open functions) or entries that are out of order or out of range
// (from Check). Errors wrapping it name the file and, for Check, the entry and the rule broken.
// The remedy is to rebuild the index from the log.
var ErrCorrupt = errors.New("corrupt index")

// ErrFull reports an append to an index with no room left for the entry; the caller rolls the
// segment before that happens (see the CanAppend methods).
var ErrFull = errors.New("index full")

// Entry sizes in bytes, as in Kafka's OffsetIndex and TimeIndex.
const (
	// OffsetEntrySize is the size of an offset index entry: relative offset (4), position (4).
	OffsetEntrySize = 8
	// TimeEntrySize is the size of a time index entry: timestamp in ms (8), relative offset (4).
	TimeEntrySize = 12
)

// maxRelative is the largest relative offset and the largest position Kafka can read back: both
// are Java ints in its index entries.
const maxRelative = math.MaxInt32

// noTimestamp is Kafka's RecordBatch.NO_TIMESTAMP. Kafka's time index behaves, when empty, as if
// its last entry were (noTimestamp, baseOffset), so only timestamps above it are ever appended.
const noTimestamp = -1

// warmBytes is the size of the tail of an index searched first, as Kafka's AbstractIndex does
// (its "warm section", 8 KiB): lookups near the end of the log, the common case, then touch only
// the last pages of the mapping instead of faulting in pages all over a large, cold file.
const warmBytes = 8192
