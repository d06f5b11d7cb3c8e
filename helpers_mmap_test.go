//go:build unix && !commitlog_nommap

package commitlog

// osMappingsLive reports whether fsys.OS() maps files with mmap, so that bytes written to an
// index mapping are in the file at once (as a crash copy sees them), rather than on Sync.
const osMappingsLive = true
