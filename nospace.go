package commitlog

import (
	"errors"
	"syscall"
)

// isNoSpace reports whether err is the operating system's "disk full".
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
