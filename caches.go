package commitlog

import (
	"log/slog"
	"math"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// The store-wide caches of the segments (internal/segment): the bound on open segment files and
// the record position cache of ReadRecord, with their defaults. One pair is made per call of
// OpenLog or Open (newCaches), and a store shares it among all its partitions.

// DefaultMaxOpenFiles is the most segment files a store (or a log opened on its own) keeps open
// when neither WithMaxOpenFiles nor the process's descriptor limit asks for fewer: the order of
// Pebble's and LevelDB's defaults (1000), enough for a few hundred segments to stay open between
// reads, far below the descriptor limits servers run with. Under a soft RLIMIT_NOFILE below four
// times this, the default is a quarter of that limit (see WithMaxOpenFiles).
const DefaultMaxOpenFiles = 1024

// minOpenFiles is the smallest default bound: four segments' files, whatever the descriptor
// limit says.
const minOpenFiles = 4 * filesPerSegment

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

// filesPerSegment is what one open segment holds: the descriptors of its .log file and of its
// two index files.
const filesPerSegment = segment.FilesPerSegment

// DefaultRecordPositionCacheBytes is the memory a store (or a log opened on its own) gives to
// the record position cache of ReadRecord when WithRecordPositionCache does not say: 32 MiB,
// which keeps the batches of about 3 GiB of log of ~120-byte records in batches of hundreds
// (about 11 KiB of positions and bookkeeping per MiB of such a log).
const DefaultRecordPositionCacheBytes = 32 << 20

// newCaches returns the caches for the logs opened with one set of options: maxOpenFiles files
// (0: the default, negative: no bound) and positionBytes bytes of record positions (0: the
// default, negative: none).
func newCaches(maxOpenFiles int, positionBytes int64, logger *slog.Logger) segment.Caches {
	limit := maxOpenFiles
	switch {
	case limit == 0:
		limit = defaultMaxOpenFiles()
	case limit < 0:
		limit = math.MaxInt
	}
	positions := positionBytes
	switch {
	case positions == 0:
		positions = DefaultRecordPositionCacheBytes
	case positions < 0:
		positions = 0
	}
	return segment.Caches{Files: segment.NewFileCache(limit, logger), Positions: segment.NewPositionCache(positions)}
}
