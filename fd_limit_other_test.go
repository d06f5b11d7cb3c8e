//go:build !linux

package commitlog

import (
	"runtime"
	"testing"
)

// The descriptor tests count /proc/self/fd and /proc/self/maps, which only Linux has.

func TestStoreCloseReleasesDescriptorsAndMappings(t *testing.T) {
	t.Skipf("counts descriptors in /proc/self/fd and mappings in /proc/self/maps, which only Linux has (GOOS %s)", runtime.GOOS)
}

func TestDescriptorLimit(t *testing.T) {
	t.Skipf("counts descriptors in /proc/self/fd of a child with RLIMIT_NOFILE 256, a Linux test (GOOS %s)", runtime.GOOS)
}
