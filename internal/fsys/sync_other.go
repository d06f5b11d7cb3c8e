//go:build !linux

package fsys

import "os"

// syncFile is (*os.File).Sync, which on darwin is fcntl(F_FULLFSYNC): plain fsync there leaves the
// data in the drive's cache.
func syncFile(f *os.File) error { return f.Sync() }
