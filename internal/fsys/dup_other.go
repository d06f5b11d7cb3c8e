//go:build !unix && !windows

package fsys

import "os"

// dupFile opens f's name again for reading and writing: plan9, js and wasip1 offer no portable way
// to duplicate a descriptor through package os. The handle names the file f had at that moment.
func dupFile(f *os.File) (*os.File, error) {
	return os.OpenFile(f.Name(), os.O_RDWR, 0)
}
