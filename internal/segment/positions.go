package segment

import (
	"sync"
	"sync/atomic"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// PositionStride is how many records apart a cached batch keeps positions: a read steps over at
// most PositionStride-1 records before the one it wants, and a batch costs 4 bytes of positions
// for every PositionStride records (8 when its offsets have gaps). Each record stepped over is
// one more cache line of the segment to bring from memory, the main cost of a random read: on
// random reads of 1M records of 116 bytes in batches of 1000 (BenchmarkReadRecordRandom, 5 runs
// each, beside the pread table), 4 took a median 0.93 of the baseline's time a read, 8 0.95 and
// 16 1.36; 2 was no faster than 4, for twice the memory.
const PositionStride = 4

// PositionEntryOverhead is what the cache counts for an entry besides its positions: the entry
// (the batch's header included), its map slot and its anchor's slot, rounded up. Counting it
// keeps a cache of many small batches bounded too.
const PositionEntryOverhead = 256

// recordMarks are the positions, in a batch's records section (the bytes after the 61-byte
// header), of its records 0, PositionStride, 2*PositionStride, ..., and their offset deltas.
// deltas is nil for a dense batch, whose record i has offset delta i (no compaction gaps: the
// usual case), so that record i*PositionStride is at pos[i].
type recordMarks struct {
	pos    []uint32
	deltas []int32
}

// mark returns the index of the last mark whose offset delta is <= delta (0 when none is).
func (m *recordMarks) mark(delta int32) int {
	if m.deltas == nil {
		return min(int(delta)/PositionStride, len(m.pos)-1)
	}
	lo, hi := 0, len(m.deltas) // the first mark above delta is in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.deltas[mid] > delta {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(lo-1, 0)
}

// positionKey names a batch in one segment's data as it stands between two truncations: the
// segment (a segment made again at the same base offset is another segment), its truncation
// count when the batch was read, and the batch's position. A position that truncation cut and
// appends wrote again has a higher count, so it can never be found by a key of the old bytes.
type positionKey struct {
	seg *Segment
	gen uint64
	pos int64
}

// positionEntry is a batch whose CRC and record framing were verified: its header and the
// position of every PositionStride-th record. h and marks never change once the entry is in the
// cache, so a read uses them without the lock.
type positionEntry struct {
	key   positionKey
	h     recordbatch.Header
	marks recordMarks
	// anchor is the position the offset index gave the read that last found this batch (-1:
	// none), under which the cache's anchors remember it; guarded by the cache's mu.
	anchor int64

	// used is the clock's reference bit: set by every read that finds the entry (without the
	// lock, and only when clear, so a hot entry's line is not written at every read), cleared
	// by the hand.
	used             atomic.Bool
	prev, next       *positionEntry // the clock's ring
	segPrev, segNext *positionEntry // the entries of key.seg
}

// bytes is what the entry counts against the bound.
func (e *positionEntry) bytes() int64 {
	return PositionEntryOverhead + 4*int64(cap(e.marks.pos)) + 4*int64(cap(e.marks.deltas))
}

// matches reports whether the batch header h read at the entry's position is the batch the
// entry was made from: a second guard, beside the key's truncation count.
func (e *positionEntry) matches(h *recordbatch.Header) bool {
	return e.h.BaseOffset == h.BaseOffset && e.h.CRC == h.CRC && e.h.Size() == h.Size()
}

// holds reports whether the batch's offsets cover offset.
func (e *positionEntry) holds(offset int64) bool {
	return e.h.BaseOffset <= offset && offset <= e.h.LastOffset()
}

// PositionCache keeps the verified batches of ReadRecord for every log opened with the same
// options (one store, or one log opened on its own), within a bound on the bytes of its entries,
// the least recently used going first by the CLOCK approximation (as the file cache does): a read
// that finds an entry only sets its reference bit, rather than moving it in a list, which would
// write the lines of its neighbours, cache misses of their own on a random read. It is what lets
// a batch's CRC be checked once rather than at every read of one of its records, and a read step
// over at most PositionStride-1 records.
//
// Entries of a segment go when its data may change or its files close: truncation
// (Segment.Truncate), retirement (Segment.Retire), and closing (Segment.Close, the file cache's
// eviction). A read that began before one of those cannot add an entry after it: the cache
// refuses an entry whose segment was truncated, retired or closed since the read loaded its
// truncation count.
type PositionCache struct {
	limit int64 // bytes; 0 keeps nothing

	mu      sync.Mutex
	entries map[positionKey]*positionEntry
	// anchors remembers, by the position the offset index gives for an offset (the batch whose
	// last offset it indexed, one or more batches before the one holding the offset), the batch
	// the last read from there found: a read whose offset that batch holds goes straight to it,
	// without reading the batch headers on the way, which on a random read are cache and TLB
	// misses of their own. At most one anchor per entry.
	anchors map[positionKey]*positionEntry
	hand    *positionEntry // the entry the clock looks at next; nil when empty
	bytes   int64
	evicted int // entries dropped for the bound, for tests
}

// NewPositionCache returns a cache holding at most limit bytes of entries (0 or less keeps
// nothing).
func NewPositionCache(limit int64) *PositionCache {
	return &PositionCache{limit: max(limit, 0), entries: make(map[positionKey]*positionEntry),
		anchors: make(map[positionKey]*positionEntry)}
}

// get returns the entry for k, marked used, or nil.
func (c *PositionCache) get(k positionKey) *positionEntry {
	if c == nil || c.limit == 0 {
		return nil
	}
	c.mu.Lock()
	e := c.entries[k]
	c.mu.Unlock()
	if e != nil && !e.used.Load() {
		e.used.Store(true)
	}
	return e
}

// anchored returns the entry remembered under the anchor position k, marked used, or nil.
func (c *PositionCache) anchored(k positionKey) *positionEntry {
	if c == nil || c.limit == 0 {
		return nil
	}
	c.mu.Lock()
	e := c.anchors[k]
	c.mu.Unlock()
	if e != nil && !e.used.Load() {
		e.used.Store(true)
	}
	return e
}

// setAnchor remembers e under the anchor position k (same segment and truncation count), in
// place of the entry remembered there before and of the anchor e had, if e is still cached.
func (c *PositionCache) setAnchor(k positionKey, e *positionEntry) {
	if c == nil || k.seg != e.key.seg || k.gen != e.key.gen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[e.key] != e {
		return // evicted or invalidated meanwhile
	}
	c.dropAnchor(e)
	if old := c.anchors[k]; old != nil {
		old.anchor = -1
	}
	c.anchors[k] = e
	e.anchor = k.pos
}

// dropAnchor forgets e's anchor. Callers hold mu.
func (c *PositionCache) dropAnchor(e *positionEntry) {
	if e.anchor < 0 {
		return
	}
	k := positionKey{seg: e.key.seg, gen: e.key.gen, pos: e.anchor}
	if c.anchors[k] == e {
		delete(c.anchors, k)
	}
	e.anchor = -1
}

// put adds e unless its segment changed or closed since the read that made e loaded its key's
// truncation count: the counter and flags are set before invalidate takes the lock, so an entry
// either is refused here or is there for invalidate to remove. Then the least recently used
// entries go until the bytes fit the bound.
func (c *PositionCache) put(e *positionEntry) {
	if c == nil || e.bytes() > c.limit {
		return
	}
	s := e.key.seg
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.truncations.Load() != e.key.gen || s.retired.Load() || !s.isOpen.Load() {
		return
	}
	if _, ok := c.entries[e.key]; ok {
		return // another read of the same batch got there first
	}
	c.entries[e.key] = e
	e.anchor = -1
	e.used.Store(true) // just read: it goes after the entries nobody read since the hand passed
	c.link(e)
	e.segNext = s.positions
	if s.positions != nil {
		s.positions.segPrev = e
	}
	s.positions = e
	c.bytes += e.bytes()
	// Two turns at most: the first may only clear reference bits.
	for steps := 2 * len(c.entries); c.bytes > c.limit && steps > 0; steps-- {
		v := c.hand
		if v.used.Load() {
			v.used.Store(false)
			c.hand = v.next
			continue
		}
		c.remove(v)
		c.evicted++
	}
}

// invalidate drops every entry of s. Its callers have first made put refuse s's older entries
// (a truncation count, retired, or isOpen cleared).
func (c *PositionCache) invalidate(s *Segment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	for s.positions != nil {
		c.remove(s.positions)
	}
	c.mu.Unlock()
}

// remove takes e out of the map, the LRU list and its segment's list. Callers hold mu.
func (c *PositionCache) remove(e *positionEntry) {
	delete(c.entries, e.key)
	c.dropAnchor(e)
	c.unlink(e)
	s := e.key.seg
	if e.segPrev != nil {
		e.segPrev.segNext = e.segNext
	} else {
		s.positions = e.segNext
	}
	if e.segNext != nil {
		e.segNext.segPrev = e.segPrev
	}
	e.segPrev, e.segNext = nil, nil
	c.bytes -= e.bytes()
}

// link puts e in the ring just behind the hand: the last entry the clock reaches.
func (c *PositionCache) link(e *positionEntry) {
	if c.hand == nil {
		e.prev, e.next = e, e
		c.hand = e
		return
	}
	e.next, e.prev = c.hand, c.hand.prev
	e.prev.next = e
	c.hand.prev = e
}

// unlink takes e out of the ring.
func (c *PositionCache) unlink(e *positionEntry) {
	if e.next == e {
		c.hand = nil
	} else {
		if c.hand == e {
			c.hand = e.next
		}
		e.prev.next = e.next
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
}

// Stats returns the entries and bytes held and the entries dropped for the bound (for tests and
// metrics). Anchors are counted in their entries' bytes, one at most each.
func (c *PositionCache) Stats() (entries int, bytes int64, evicted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes, c.evicted
}

// Holds reports whether the cache holds the batch at position pos of s's data as it stands (since
// its last truncation). For tests and diagnostics.
func (c *PositionCache) Holds(s *Segment, pos int64) bool {
	return c.get(positionKey{seg: s, gen: s.truncations.Load(), pos: pos}) != nil
}
