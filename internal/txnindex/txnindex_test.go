package txnindex

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// forEachFS runs f on the operating system's file system and on the in-memory one, with a
// directory to put files in.
func forEachFS(t *testing.T, f func(t *testing.T, fsy fsys.FS, dir string)) {
	t.Run("os", func(t *testing.T) { f(t, fsys.OS(), t.TempDir()) })
	t.Run("memory", func(t *testing.T) {
		fsy := fsys.NewMemory()
		require.NoError(t, fsy.MkdirAll("/p", 0o755))
		f(t, fsy, "/p")
	})
}

func writeFile(t *testing.T, fsy fsys.FS, name string, data []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	if len(data) > 0 {
		_, err = f.WriteAt(data, 0)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// readFile returns the bytes of name, or nil when it does not exist.
func readFile(t *testing.T, fsy fsys.FS, name string) []byte {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
		return nil
	}
	defer func() { require.NoError(t, f.Close()) }()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	if size > 0 {
		_, err = f.ReadAt(b, 0)
		require.NoError(t, err)
	}
	return b
}

func exists(t *testing.T, fsy fsys.FS, name string) bool {
	t.Helper()
	_, err := fsy.Stat(name)
	if err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
		return false
	}
	return true
}

// encode is the file holding entries (empty, not nil, for none, as readFile reads it).
func encode(entries ...AbortedTxn) []byte {
	b := []byte{}
	for _, a := range entries {
		b = a.AppendTo(b)
	}
	return b
}

// TestEntryBytes checks one entry against its 34 bytes written out from Kafka's AbortedTxn layout.
func TestEntryBytes(t *testing.T) {
	a := AbortedTxn{ProducerID: 0x0102030405060708, FirstOffset: 10, LastOffset: 20, LastStableOffset: -1}
	want := []byte{
		0x00, 0x00, // version int16 = 0
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // producerId
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // firstOffset 10
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, // lastOffset 20
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // lastStableOffset -1
	}
	require.Len(t, want, EntrySize)
	require.Equal(t, want, a.AppendTo(nil))
	require.Equal(t, append([]byte("x"), want...), a.AppendTo([]byte("x")))
	got, err := Decode(want)
	require.NoError(t, err)
	require.Equal(t, []AbortedTxn{a}, got)
	require.Equal(t, "AbortedTxn(version=0, producerId=72623859790382856, firstOffset=10, lastOffset=20, lastStableOffset=-1)", a.String())
}

func TestDecode(t *testing.T) {
	a := AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 5, LastStableOffset: 1}
	b := AbortedTxn{ProducerID: math.MaxInt64, FirstOffset: math.MinInt64, LastOffset: math.MaxInt64, LastStableOffset: 0}
	badVersion := encode(a, b)
	badVersion[EntrySize+1] = 1 // entry 1's version: 1
	negVersion := encode(a)
	negVersion[0] = 0xff // version -256
	for _, tc := range []struct {
		name string
		in   []byte
		want []AbortedTxn
		err  string // "" for no error
	}{
		{"empty", []byte{}, nil, ""},
		{"one", encode(a), []AbortedTxn{a}, ""},
		{"two", encode(a, b), []AbortedTxn{a, b}, ""},
		{"27 bytes", make([]byte, 27), nil, "27 bytes are not a whole number of 34-byte entries (entry 0 at byte 0 has 27 bytes)"},
		{"35 bytes", make([]byte, 35), nil, "35 bytes are not a whole number of 34-byte entries (entry 1 at byte 34 has 1 bytes)"},
		{"67 bytes", make([]byte, 67), nil, "entry 1 at byte 34 has 33 bytes"},
		{"version 1", badVersion, nil, "entry 1 at byte 34: version 1, not 0"},
		{"version -256", negVersion, nil, "entry 0 at byte 0: version -256, not 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tc.err)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, encode(got...))
		})
	}
}

// TestLazyFile: an index opened where no file is has none until its first Append; nothing else
// creates it, and the file is named as opened.
func TestLazyFile(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000000.txnindex")
		x, err := Open(fsy, name)
		require.NoError(t, err)
		require.Equal(t, name, x.Path())
		require.Equal(t, 0, x.Len())
		require.NoError(t, x.TruncateTo(0))
		require.NoError(t, x.Reset())
		require.NoError(t, x.Sync())
		require.Empty(t, x.Collect(nil, math.MinInt64, math.MaxInt64))
		renamed := name + ".deleted"
		require.NoError(t, x.Rename(renamed))
		require.Equal(t, renamed, x.Path())
		require.NoError(t, x.Rename(name))
		require.False(t, exists(t, fsy, name))
		require.False(t, exists(t, fsy, renamed))

		a := AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 9, LastStableOffset: 3}
		require.NoError(t, x.Append(a))
		require.Equal(t, encode(a), readFile(t, fsy, name))
		require.NoError(t, x.Sync())
		require.NoError(t, x.Close())
	})
}

// TestRoundTrip appends entries, reopens the file and finds them, byte for byte and in memory.
func TestRoundTrip(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000100.txnindex")
		entries := []AbortedTxn{
			{ProducerID: 1, FirstOffset: 100, LastOffset: 105, LastStableOffset: 100},
			{ProducerID: 2, FirstOffset: 101, LastOffset: 110, LastStableOffset: 101},
			{ProducerID: 1, FirstOffset: 111, LastOffset: 111, LastStableOffset: 111},
		}
		x, err := Open(fsy, name)
		require.NoError(t, err)
		for _, a := range entries {
			require.NoError(t, x.Append(a))
		}
		require.NoError(t, x.Sync())
		require.NoError(t, x.Close())
		require.ErrorIs(t, x.Append(AbortedTxn{LastOffset: 200}), ErrClosed)
		require.Equal(t, encode(entries...), readFile(t, fsy, name))
		require.Len(t, readFile(t, fsy, name), 3*EntrySize)

		y, err := Open(fsy, name)
		require.NoError(t, err)
		require.Equal(t, 3, y.Len())
		require.Equal(t, entries, y.Collect(nil, math.MinInt64, math.MaxInt64))
		// Appends go after the entries found.
		more := AbortedTxn{ProducerID: 3, FirstOffset: 112, LastOffset: 120, LastStableOffset: 112}
		require.NoError(t, y.Append(more))
		require.Equal(t, encode(append(entries, more)...), readFile(t, fsy, name))
	})
}

// TestAppendOrder: Kafka's "The last offset of appended transactions must increase sequentially".
func TestAppendOrder(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000000.txnindex")
		x, err := Open(fsy, name)
		require.NoError(t, err)
		first := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 10, LastStableOffset: 0}
		require.NoError(t, x.Append(first))
		for _, last := range []int64{10, 9, math.MinInt64} {
			err := x.Append(AbortedTxn{ProducerID: 2, FirstOffset: 0, LastOffset: last})
			require.ErrorIs(t, err, ErrOutOfOrder)
			require.ErrorContains(t, err, "is not greater than current last offset 10")
		}
		require.Equal(t, encode(first), readFile(t, fsy, name))
		require.NoError(t, x.Append(AbortedTxn{ProducerID: 2, FirstOffset: 5, LastOffset: 11}))
		require.Equal(t, 2, x.Len())
	})
}

func TestCollect(t *testing.T) {
	e1 := AbortedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 20, LastStableOffset: 10}
	e2 := AbortedTxn{ProducerID: 2, FirstOffset: 15, LastOffset: 30, LastStableOffset: 15}
	e3 := AbortedTxn{ProducerID: 3, FirstOffset: 40, LastOffset: 45, LastStableOffset: 40}
	for _, tc := range []struct {
		name         string
		fetch, upper int64
		want         []AbortedTxn
	}{
		{"all", math.MinInt64, math.MaxInt64, []AbortedTxn{e1, e2, e3}},
		{"fetch at e1's last offset", 20, 100, []AbortedTxn{e1, e2, e3}},
		{"fetch just past e1's last offset", 21, 100, []AbortedTxn{e2, e3}},
		{"upper at e3's first offset", 0, 40, []AbortedTxn{e1, e2}},
		{"upper just past e3's first offset", 0, 41, []AbortedTxn{e1, e2, e3}},
		{"upper at e1's first offset", 0, 10, nil},
		{"fetch past every last offset", 46, math.MaxInt64, nil},
		{"inside e2 only", 21, 31, []AbortedTxn{e2}},
		{"one offset inside e1 and e2", 16, 17, []AbortedTxn{e1, e2}},
		{"fetch equal to upper, inside e2", 25, 25, []AbortedTxn{e2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
				x, err := Open(fsy, filepath.Join(dir, "00000000000000000000.txnindex"))
				require.NoError(t, err)
				for _, a := range []AbortedTxn{e1, e2, e3} {
					require.NoError(t, x.Append(a))
				}
				require.Equal(t, tc.want, x.Collect(nil, tc.fetch, tc.upper))
				// Appended to dst.
				dst := []AbortedTxn{{ProducerID: 99}}
				require.Equal(t, append([]AbortedTxn{{ProducerID: 99}}, tc.want...), x.Collect(dst, tc.fetch, tc.upper))
			})
		})
	}
}

func TestTruncateTo(t *testing.T) {
	e1 := AbortedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 20, LastStableOffset: 10}
	e2 := AbortedTxn{ProducerID: 2, FirstOffset: 15, LastOffset: 30, LastStableOffset: 15}
	e3 := AbortedTxn{ProducerID: 3, FirstOffset: 40, LastOffset: 45, LastStableOffset: 40}
	for _, tc := range []struct {
		name   string
		offset int64
		want   []AbortedTxn
	}{
		{"past the last", 46, []AbortedTxn{e1, e2, e3}},
		{"at the last's last offset", 45, []AbortedTxn{e1, e2}},
		{"inside the last", 41, []AbortedTxn{e1, e2}},
		{"at e2's last offset", 30, []AbortedTxn{e1}},
		{"just past e1's last offset", 21, []AbortedTxn{e1}},
		{"at e1's last offset", 20, nil},
		{"at 0", 0, nil},
		{"below everything", math.MinInt64, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
				name := filepath.Join(dir, "00000000000000000000.txnindex")
				x, err := Open(fsy, name)
				require.NoError(t, err)
				for _, a := range []AbortedTxn{e1, e2, e3} {
					require.NoError(t, x.Append(a))
				}
				require.NoError(t, x.TruncateTo(tc.offset))
				require.Equal(t, tc.want, x.Collect(nil, math.MinInt64, math.MaxInt64))
				require.Equal(t, encode(tc.want...), readFile(t, fsy, name))
				require.NoError(t, x.Sync())

				y, err := Open(fsy, name)
				require.NoError(t, err)
				require.Equal(t, tc.want, y.Collect(nil, math.MinInt64, math.MaxInt64))

				// Appends go on after what is left, even at an offset dropped.
				next := AbortedTxn{ProducerID: 4, FirstOffset: 46, LastOffset: 50, LastStableOffset: 46}
				require.NoError(t, x.Append(next))
				require.Equal(t, encode(append(tc.want, next)...), readFile(t, fsy, name))
			})
		})
	}
}

// TestCorruptFile: a file of 27 bytes or with version 1 fails to open with ErrCorrupt; the index
// returned is empty and usable, its file untouched until Reset empties it.
func TestCorruptFile(t *testing.T) {
	good := encode(AbortedTxn{ProducerID: 1, FirstOffset: 1, LastOffset: 2, LastStableOffset: 1})
	version1 := bytes.Clone(good)
	version1[1] = 1
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{
		{"27 bytes", make([]byte, 27), "00000000000000000000.txnindex: txnindex: corrupt transaction index: 27 bytes are not a whole number of 34-byte entries (entry 0 at byte 0 has 27 bytes)"},
		{"a whole entry and 27 bytes", append(bytes.Clone(good), make([]byte, 27)...), "61 bytes are not a whole number of 34-byte entries (entry 1 at byte 34 has 27 bytes)"},
		{"version 1", version1, "entry 0 at byte 0: version 1, not 0"},
		{"version 1 second", append(bytes.Clone(good), version1...), "entry 1 at byte 34: version 1, not 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
				name := filepath.Join(dir, "00000000000000000000.txnindex")
				writeFile(t, fsy, name, tc.data)
				x, err := Open(fsy, name)
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tc.err)
				require.NotNil(t, x)
				require.Equal(t, 0, x.Len())
				require.Equal(t, tc.data, readFile(t, fsy, name))
				require.NoError(t, x.Reset())
				require.Equal(t, []byte{}, readFile(t, fsy, name))
				a := AbortedTxn{ProducerID: 5, FirstOffset: 7, LastOffset: 8, LastStableOffset: 7}
				require.NoError(t, x.Append(a))
				require.Equal(t, encode(a), readFile(t, fsy, name))
			})
		})
	}
}

// TestRenameRemove: the file follows Rename, and Remove deletes it under its name of now.
func TestRenameRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000000.txnindex")
		x, err := Open(fsy, name)
		require.NoError(t, err)
		a := AbortedTxn{ProducerID: 1, FirstOffset: 1, LastOffset: 2, LastStableOffset: 1}
		require.NoError(t, x.Append(a))
		swap := name + ".swap"
		require.NoError(t, x.Rename(swap))
		require.False(t, exists(t, fsy, name))
		require.Equal(t, encode(a), readFile(t, fsy, swap))
		// Later writes go to the new name.
		b := AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 4, LastStableOffset: 3}
		require.NoError(t, x.Append(b))
		require.NoError(t, x.Sync())
		require.Equal(t, encode(a, b), readFile(t, fsy, swap))
		require.NoError(t, x.Close())
		deleted := name + ".deleted"
		require.NoError(t, x.Rename(deleted))
		require.Equal(t, encode(a, b), readFile(t, fsy, deleted))
		require.NoError(t, x.Remove())
		require.False(t, exists(t, fsy, deleted))
		require.False(t, exists(t, fsy, swap))
		require.NoError(t, x.Remove())
	})
}

// TestStaleFileAtCreation: an index opened where no file was starts its file afresh on Append,
// even when one appeared at the name meanwhile.
func TestStaleFileAtCreation(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000000.txnindex")
		x, err := Open(fsy, name)
		require.NoError(t, err)
		writeFile(t, fsy, name, bytes.Repeat([]byte{0xee}, 3*EntrySize))
		a := AbortedTxn{ProducerID: 1, FirstOffset: 1, LastOffset: 2, LastStableOffset: 1}
		require.NoError(t, x.Append(a))
		require.Equal(t, encode(a), readFile(t, fsy, name))
	})
}
