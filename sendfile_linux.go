//go:build linux

package commitlog

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// sendfile writes size bytes of f from pos to w with sendfile(2) when w is a descriptor of the
// operating system (a socket, a file) and f a file of the OS file system; handled is false, and
// nothing was written, when it cannot be used.
func sendfile(w io.Writer, f fsys.File, pos, size int64) (written int64, handled bool, err error) {
	in := fsys.OSFile(f)
	sc, ok := w.(syscall.Conn)
	if in == nil || !ok {
		return 0, false, nil
	}
	out, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	inConn, err := in.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var serr error
	unsupported := false
	cerr := inConn.Control(func(infd uintptr) {
		werr := out.Write(func(outfd uintptr) bool {
			for written < size {
				off := pos + written
				n, e := unix.Sendfile(int(outfd), int(infd), &off, int(min(size-written, 1<<30)))
				if n > 0 {
					written += int64(n)
				}
				switch {
				case e == unix.EAGAIN:
					return false // wait until w can take more
				case e == unix.EINTR:
				case e != nil:
					unsupported = written == 0 && (e == unix.EINVAL || e == unix.ENOSYS || e == unix.EOPNOTSUPP)
					serr = e
					return true
				case n == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the range
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if cerr != nil && serr == nil {
		serr = cerr
	}
	if unsupported {
		return 0, false, nil
	}
	if serr != nil && !errors.Is(serr, io.ErrUnexpectedEOF) {
		serr = os.NewSyscallError("sendfile", serr)
	}
	return written, true, serr
}
