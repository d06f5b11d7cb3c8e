//go:build !unix || commitlog_nommap

package commitlog

// osMappingsLive: without mmap, fsys.OS() copies mapped bytes and writes them back on Sync and
// Close, so a crash copy taken between the two holds no index entries.
const osMappingsLive = false
