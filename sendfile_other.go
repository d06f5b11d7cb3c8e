//go:build !linux

package commitlog

import (
	"io"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// sendfile is Linux's alone here; elsewhere BatchRange.WriteTo copies.
func sendfile(w io.Writer, f fsys.File, pos, size int64) (int64, bool, error) {
	return 0, false, nil
}
