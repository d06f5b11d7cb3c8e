package commitlog

import "github.com/commitlog-go/commitlog/internal/fsys"

// memoryDir is the directory an in-memory store lives in, inside its own memory file system.
const memoryDir = "/commitlog"

// OpenInMemory opens a store that keeps everything in memory: the same API and behaviour as a
// store opened with Open (the same offsets, the same batch bytes, the same errors, retention,
// readers and commits), with nothing on disk. It is meant for test suites. The data lives until
// the store is closed; each OpenInMemory starts empty.
func OpenInMemory(opts ...Option) (*Store, error) {
	return Open(memoryDir, append(opts, withFS(fsys.NewMemory()))...)
}
