//go:build !unix || commitlog_nommap || race

package fsys

import "errors"

// mapAnon has no anonymous mapping to give on this platform or in this build (see
// memory_anon_unix.go): preallocations take zeroed memory from the Go heap.
func mapAnon(int) ([]byte, error) { return nil, errors.ErrUnsupported }

// unmapAnon is never called: mapAnon gives no memory.
func unmapAnon([]byte) error { return nil }
