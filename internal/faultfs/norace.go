//go:build !race

package faultfs

// RaceEnabled reports whether the race detector is on. Tests that size their work by counts of
// file-system operations (the crash-point explorer) scale down under it, as it makes each
// operation several times slower.
const RaceEnabled = false
