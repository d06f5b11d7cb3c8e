//go:build !linux

package fsys

import "os"

// allocate writes the range back with allocateByWrite: fallocate(2) is Linux's (other systems'
// equivalents, such as F_PREALLOCATE on darwin, do not promise that a later store into the range
// needs no space).
func allocate(f *os.File, off, length int64) error {
	if err := checkAllocate(f.Name(), off, length); err != nil {
		return err
	}
	return allocateByWrite(f, off, length)
}
