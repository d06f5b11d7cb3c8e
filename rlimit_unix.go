//go:build unix

package commitlog

import (
	"math"

	"golang.org/x/sys/unix"
)

// descriptorLimit returns the process's soft limit on open file descriptors (RLIMIT_NOFILE), and
// false when it cannot be read. An unlimited or huge limit is returned as math.MaxInt32.
func descriptorLimit() (int, bool) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	cur := uint64(r.Cur)
	if cur > math.MaxInt32 {
		return math.MaxInt32, true
	}
	return int(cur), true
}
