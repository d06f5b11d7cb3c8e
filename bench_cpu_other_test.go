//go:build !unix

package commitlog

import "time"

// processCPU is not measured here: the benchmarks leave out the CPU figures.
func processCPU() (time.Duration, bool) { return 0, false }
