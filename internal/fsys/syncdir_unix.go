//go:build unix

package fsys

import "os"

// syncDir fsyncs the directory, which is what makes a creation, rename or removal inside it survive
// a power loss on POSIX file systems.
func syncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}
