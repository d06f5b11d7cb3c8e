//go:build !unix

package commitlog

// descriptorLimit reports that the platform has no RLIMIT_NOFILE to read; the default bound on
// open segment files is then DefaultMaxOpenFiles.
func descriptorLimit() (int, bool) { return 0, false }
