//go:build race

package recordbatch

// raceEnabled: the race detector makes sync.Pool drop items at random, so allocation counts
// that rely on pooled state (zstd's, lz4's) are not exact under it.
const raceEnabled = true
