//go:build unix && !commitlog_nommap && !race

package fsys

import "golang.org/x/sys/unix"

// Under the race detector preallocations stay on the Go heap: the detector does not watch memory
// outside it, and the memory FS is where the tests see races on the bytes of a mapped index.

// mapAnon returns size zero bytes of an anonymous private mapping: the kernel gives a page
// memory only when it is first written, as a sparse file's blocks are allocated.
func mapAnon(size int) ([]byte, error) {
	return mmap(-1, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// unmapAnon returns mapAnon's memory to the kernel.
func unmapAnon(b []byte) error { return munmap(b) }
