//go:build !commitlog_nommap

package fsys

import "golang.org/x/sys/unix"

// madvPopulateRead maps a range's pages readable in one call (Linux 5.14).
const madvPopulateRead = unix.MADV_POPULATE_READ
