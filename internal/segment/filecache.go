package segment

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
)

// FilesPerSegment is what one open segment holds: the descriptors of its .log file and of its two
// index files (an index keeps its descriptor beside its mapping, to trim the file when sealed).
// The .txnindex file is not counted: its entries are in memory and it is opened only for the
// moment of an append, truncation or sync, then closed (see txn.go).
const FilesPerSegment = 3

// evicting is added to a segment's reference count while the cache closes its files: a read that
// acquires the segment then sees a negative count and waits for the close to end before it opens
// the files again (see Segment.FilesReady). Far below any real count of concurrent reads.
const evicting = math.MinInt32 / 2

// FileCache bounds the files held open by the segments of every log opened with the same options:
// one store, or one log opened on its own. Sealed segments open their files on first use (see
// Segment.OpenFiles) and join the cache; once the open files exceed the limit, the cache closes idle
// sealed segments, least recently used first by the CLOCK approximation (each read sets the
// segment's used bit without a lock; the clock hand clears it and passes, and closes a segment
// it finds with the bit clear).
//
// A segment is idle when no read holds it (its reference count is 0) and nobody is opening or
// closing it (its openMu is free). Active segments are pinned: they count against the limit but
// are never closed by the cache. When every open segment is pinned or in use the cache holds more
// than the limit until reads and writes end: a read never fails for the bound. A log calls
// TrimIfOver as each read or write of its segments ends, so the bound holds again once the
// segments are idle.
type FileCache struct {
	limit  int // files
	logger *slog.Logger

	mu    sync.Mutex
	open  int      // files held by the segments in the ring
	n     int      // segments in the ring
	hand  *Segment // the segment the clock looks at next; nil when the ring is empty
	peak  int      // the most files open at once, for tests
	evict int      // segments closed for idleness so far, for tests

	// over says open > limit; written under mu, read by TrimIfOver without it.
	over atomic.Bool
}

// NewFileCache returns a cache that closes idle segments while more than limit files (three a
// segment, FilesPerSegment) are open; logger gets the errors of those closes.
func NewFileCache(limit int, logger *slog.Logger) *FileCache {
	return &FileCache{limit: limit, logger: logger}
}

// add puts s, whose files were just opened, in the ring, then closes idle segments while the
// files open exceed the limit. A segment already in the ring stays as it is. The caller holds
// s.openMu or owns s alone (s is being loaded or created).
func (c *FileCache) add(s *Segment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if s.cacheNext != nil {
		c.mu.Unlock()
		return
	}
	s.used.Store(true)
	if c.hand == nil {
		s.cacheNext, s.cachePrev = s, s
		c.hand = s
	} else {
		// Just behind the hand: the last segment the clock reaches.
		s.cacheNext, s.cachePrev = c.hand, c.hand.cachePrev
		s.cachePrev.cacheNext = s
		c.hand.cachePrev = s
	}
	c.n++
	c.open += FilesPerSegment
	c.over.Store(c.open > c.limit)
	c.peak = max(c.peak, c.open)
	c.trimLocked()
}

// Trim closes idle segments while the files open exceed the limit. The cache does so itself
// whenever a segment opens, and Segment.Unpin calls it once a sealed segment may close; files
// left over the limit by reads and writes that held their segments are closed by TrimIfOver as
// those end.
func (c *FileCache) Trim() {
	c.mu.Lock()
	c.trimLocked()
}

// TrimIfOver trims as Trim does when the files open exceed the limit, and otherwise costs one
// atomic load: a log calls it as each read of a segment ends and each time its writer lock is
// released, since a read and a writer at work keep their segment's files open past the limit (see
// Caches.Writer). Safe on a nil cache (Caches.Files nil: no cache).
func (c *FileCache) TrimIfOver() {
	if c != nil && c.over.Load() {
		c.Trim()
	}
}

// trimLocked is trim for a caller holding mu; it unlocks mu.
func (c *FileCache) trimLocked() {
	victims := c.claimIdle()
	c.mu.Unlock()
	// Closed outside mu: other segments open and close meanwhile without waiting for the unmaps.
	for _, v := range victims {
		if err := v.finishEvict(); err != nil {
			c.logger.Warn("closing an idle segment failed", "segment", v.Path(LogSuffix), "err", err)
		}
	}
}

// remove takes s out of the ring, if it is there. Its caller holds s.openMu.
func (c *FileCache) remove(s *Segment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if s.cacheNext != nil {
		c.unlink(s)
	}
	c.mu.Unlock()
}

// unlink takes s, which is in the ring, out of it. Callers hold mu.
func (c *FileCache) unlink(s *Segment) {
	if s.cacheNext == s {
		c.hand = nil
	} else {
		if c.hand == s {
			c.hand = s.cacheNext
		}
		s.cachePrev.cacheNext = s.cacheNext
		s.cacheNext.cachePrev = s.cachePrev
	}
	s.cacheNext, s.cachePrev = nil, nil
	c.n--
	c.open -= FilesPerSegment
	c.over.Store(c.open > c.limit)
}

// claimIdle runs the clock while the open files exceed the limit, for at most two turns (the
// first may only clear used bits), and returns the idle segments it claimed, out of the ring,
// their openMu held: the caller closes them with finishEvict. Callers hold mu.
func (c *FileCache) claimIdle() []*Segment {
	var victims []*Segment
	for steps := 2 * c.n; c.open > c.limit && steps > 0 && c.hand != nil; steps-- {
		s := c.hand
		c.hand = s.cacheNext
		if s.used.Load() {
			s.used.Store(false)
			continue
		}
		if !s.beginEvict() {
			continue
		}
		c.unlink(s)
		c.evict++
		victims = append(victims, s)
	}
	return victims
}

// Stats returns the files open now, the most open at once and the segments closed for idleness
// (for tests and metrics).
func (c *FileCache) Stats() (open, peak, evicted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.peak, c.evict
}

// Limit returns the bound on open files the cache was made with.
func (c *FileCache) Limit() int { return c.limit }
