//go:build unix && !linux && !commitlog_nommap

package fsys

import "golang.org/x/sys/unix"

// madvPopulateRead is MADV_WILLNEED where Linux's MADV_POPULATE_READ does not exist: it reads the
// pages ahead into the page cache, without mapping them.
const madvPopulateRead = unix.MADV_WILLNEED
