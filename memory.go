package commitlog

import (
	"slices"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// memoryDir is the directory an in-memory store lives in, inside its own memory file system.
const memoryDir = "/commitlog"

// OpenInMemory opens a store that keeps everything in memory: the same API and behaviour as a
// store opened with Open (the same offsets, the same batch bytes, the same errors, retention,
// readers and commits), with nothing on disk. It is meant for test suites. The data lives until
// the store is closed; each OpenInMemory starts empty.
func OpenInMemory(opts ...Option) (*Store, error) {
	// Appended to a copy: appending to opts itself would write into the caller's array when it
	// has room, where another OpenInMemory of the same options could give its store this memory.
	return Open(memoryDir, append(slices.Clone(opts), withFS(fsys.NewMemory()))...)
}
