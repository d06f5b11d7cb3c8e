//go:build !linux

package fsys

// prefault does nothing where the kernel has no MADV_POPULATE_WRITE: the pages of a new extent
// fault one by one as it is written.
func prefault([]byte) {}
