package index

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// backend is a file system the indexes are tested on, with a directory to put files in.
type backend struct {
	name string
	open func(t testing.TB) (fsys.FS, string)
}

var backends = []backend{
	{"os", func(t testing.TB) (fsys.FS, string) { return fsys.OS(), t.TempDir() }},
	{"memory", func(t testing.TB) (fsys.FS, string) {
		fs := fsys.NewMemory()
		require.NoError(t, fs.MkdirAll("data", 0o755))
		return fs, "data"
	}},
}

// forEachBackend runs test once per backend, as a subtest.
func forEachBackend(t *testing.T, test func(t *testing.T, fs fsys.FS, dir string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fs, dir := b.open(t)
			test(t, fs, dir)
		})
	}
}

// indexName is Kafka's name for a segment's index file: the base offset as 20 digits.
func indexName(dir string, base int64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, ext))
}

func writeFile(t testing.TB, fs fsys.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(0))
	if len(data) > 0 {
		_, err = f.WriteAt(data, 0)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

func readFile(t testing.TB, fs fsys.FS, name string) []byte {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	n, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, n)
	if n > 0 {
		_, err = f.ReadAt(b, 0)
		require.NoError(t, err)
	}
	return b
}

func fileSize(t testing.TB, fs fsys.FS, name string) int64 {
	t.Helper()
	fi, err := fs.Stat(name)
	require.NoError(t, err)
	return fi.Size()
}

// offsetBytes encodes offset index entries (relative offset, position) as Kafka does.
func offsetBytes(entries ...[2]uint32) []byte {
	b := make([]byte, 0, len(entries)*OffsetEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e[0])
		b = binary.BigEndian.AppendUint32(b, e[1])
	}
	return b
}

// timeEntry is a time index entry as stored: timestamp, relative offset.
type timeEntry struct {
	ts  int64
	rel uint32
}

// timeBytes encodes time index entries as Kafka does.
func timeBytes(entries ...timeEntry) []byte {
	b := make([]byte, 0, len(entries)*TimeEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, e.rel)
	}
	return b
}

// refLookup is Offset.Lookup by linear scan: the last entry at most target.
func refLookup(x *Offset, target int64) (int64, int64) {
	off, pos := x.BaseOffset(), int64(0)
	for i := range x.Entries() {
		if o, p := x.Entry(i); o <= target {
			off, pos = o, p
		}
	}
	return off, pos
}

// refLookupBefore is Time.LookupBefore by linear scan: the last entry below ts.
func refLookupBefore(x *Time, ts int64) (int64, bool) {
	var off int64
	ok := false
	for i := range x.Entries() {
		if t, o := x.Entry(i); t < ts {
			off, ok = o, true
		}
	}
	return off, ok
}
