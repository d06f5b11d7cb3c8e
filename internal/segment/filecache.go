package commitlog

import (
	"log/slog"
	"math"
	"sync"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// DefaultMaxOpenFiles is the most segment files a store (or a log opened on its own) keeps open
// when neither WithMaxOpenFiles nor the process's descriptor limit asks for fewer: the order of
// Pebble's and LevelDB's defaults (1000), enough for a few hundred segments to stay open between
// reads, far below the descriptor limits servers run with. Under a soft RLIMIT_NOFILE below four
// times this, the default is a quarter of that limit (see WithMaxOpenFiles).
const DefaultMaxOpenFiles = 1024

// filesPerSegment is what one open segment holds: the descriptors of its .log file and of its two
// index files (an index keeps its descriptor beside its mapping, to trim the file when sealed).
const filesPerSegment = 3

// minOpenFiles is the smallest default bound: four segments' files, whatever the descriptor
// limit says.
const minOpenFiles = 4 * filesPerSegment

// evicting is added to a segment's reference count while the cache closes its files: a read that
// acquires the segment then sees a negative count and waits for the close to end before it opens
// the files again (see segment.filesReady). Far below any real count of concurrent reads.
const evicting = math.MinInt32 / 2

// defaultMaxOpenFiles returns the bound on open segment files when none is configured: a quarter
// of the soft descriptor limit, so that the rest of the program (its sockets, other stores, the
// Go runtime) keeps three quarters of it and the bound can be passed for a while by reads in
// progress and active segments, capped at DefaultMaxOpenFiles.
func defaultMaxOpenFiles() int {
	n, ok := descriptorLimit()
	if !ok {
		return DefaultMaxOpenFiles
	}
	return min(DefaultMaxOpenFiles, max(n/4, minOpenFiles))
}

// fileCache bounds the files held open by the segments of every log opened with the same options:
// one store, or one log opened on its own. Sealed segments open their files on first use (see
// segment.open) and join the cache; once the open files exceed the limit, the cache closes idle
// sealed segments, least recently used first by the CLOCK approximation (each read sets the
// segment's used bit without a lock; the clock hand clears it and passes, and closes a segment
// it finds with the bit clear).
//
// A segment is idle when no read holds it (its reference count is 0) and nobody is opening or
// closing it (its openMu is free). Active segments are pinned: they count against the limit but
// are never closed by the cache. When every open segment is pinned or in use the cache holds more
// than the limit until reads end and segments open again: a read never fails for the bound.
type fileCache struct {
	limit  int // files
	logger *slog.Logger

	mu    sync.Mutex
	open  int      // files held by the segments in the ring
	n     int      // segments in the ring
	hand  *segment // the segment the clock looks at next; nil when the ring is empty
	peak  int      // the most files open at once, for tests
	evict int      // segments closed for idleness so far, for tests
}

func newFileCache(limit int, logger *slog.Logger) *fileCache {
	return &fileCache{limit: limit, logger: logger}
}

// add puts s, whose files were just opened, in the ring, then closes idle segments while the
// files open exceed the limit. A segment already in the ring stays as it is. The caller holds
// s.openMu or owns s alone (s is being loaded or created).
func (c *fileCache) add(s *segment) {
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
	c.open += filesPerSegment
	c.peak = max(c.peak, c.open)
	c.trimLocked()
}

// trim closes idle segments while the files open exceed the limit. The cache calls it whenever
// a segment opens; files left over the limit by reads that held their segments are closed then.
func (c *fileCache) trim() {
	c.mu.Lock()
	c.trimLocked()
}

// trimLocked is trim for a caller holding mu; it unlocks mu.
func (c *fileCache) trimLocked() {
	victims := c.claimIdle()
	c.mu.Unlock()
	// Closed outside mu: other segments open and close meanwhile without waiting for the unmaps.
	for _, v := range victims {
		if err := v.finishEvict(); err != nil {
			c.logger.Warn("closing an idle segment failed", "segment", v.path(logSuffix), "err", err)
		}
	}
}

// remove takes s out of the ring, if it is there. Its caller holds s.openMu.
func (c *fileCache) remove(s *segment) {
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
func (c *fileCache) unlink(s *segment) {
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
	c.open -= filesPerSegment
}

// claimIdle runs the clock while the open files exceed the limit, for at most two turns (the
// first may only clear used bits), and returns the idle segments it claimed, out of the ring,
// their openMu held: the caller closes them with finishEvict. Callers hold mu.
func (c *fileCache) claimIdle() []*segment {
	var victims []*segment
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

// stats returns the files open now, the most open at once and the segments closed for idleness.
func (c *fileCache) stats() (open, peak, evicted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.peak, c.evict
}

// cachedFS is the file system the segments of the logs opened with one set of options see: the
// caller's file system, the cache that bounds their open files and the cache of record positions
// their reads share. Carried inside the file system, the caches reach every place that opens or
// creates a segment (loading, rolling, truncation) with the arguments it already takes.
type cachedFS struct {
	fsys.FS
	files     *fileCache
	positions *positionCache
}

// withCaches returns fs carrying files and positions, in place of any caches it already carries.
func withCaches(fs fsys.FS, files *fileCache, positions *positionCache) fsys.FS {
	if w, ok := fs.(*cachedFS); ok {
		fs = w.FS
	}
	return &cachedFS{FS: fs, files: files, positions: positions}
}

// fileCacheOf returns the cache fs carries, or nil (no bound: segments stay open) when it carries
// none.
func fileCacheOf(fs fsys.FS) *fileCache {
	if w, ok := fs.(*cachedFS); ok {
		return w.files
	}
	return nil
}

// positionCacheOf returns the record position cache fs carries, or nil (nothing is kept: every
// ReadRecord checks its batch) when it carries none.
func positionCacheOf(fs fsys.FS) *positionCache {
	if w, ok := fs.(*cachedFS); ok {
		return w.positions
	}
	return nil
}
