package faultfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// newTestFS returns an FS over a memory FS holding an empty directory /d, which is durable (it
// existed before the FS).
func newTestFS(t *testing.T, seed uint64) *FS {
	t.Helper()
	inner := fsys.NewMemory()
	require.NoError(t, inner.MkdirAll("/d", 0o755))
	return New(inner, seed)
}

func create(t *testing.T, fsy fsys.FS, name string) fsys.File {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func write(t *testing.T, f fsys.File, off int64, s string) {
	t.Helper()
	n, err := f.WriteAt([]byte(s), off)
	require.NoError(t, err)
	require.Equal(t, len(s), n)
}

// readImage returns name's contents in img, or nil and false when it does not exist.
func readImage(t *testing.T, img fsys.FS, name string) ([]byte, bool) {
	t.Helper()
	f, err := img.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	require.NoError(t, err)
	defer f.Close()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	if size > 0 {
		_, err = f.ReadAt(b, 0)
		require.NoError(t, err)
	}
	return b, true
}

func image(t *testing.T, f *FS, mode Mode) fsys.FS {
	t.Helper()
	img, err := f.CrashImage(mode)
	require.NoError(t, err)
	return img
}

// requireImageFile checks name's contents in f's crash image of mode.
func requireImageFile(t *testing.T, f *FS, mode Mode, name, want string) {
	t.Helper()
	got, ok := readImage(t, image(t, f, mode), name)
	require.True(t, ok, "%s: %s missing", mode, name)
	require.Equal(t, want, string(got), "%s: %s", mode, name)
}

func requireImageMissing(t *testing.T, f *FS, mode Mode, name string) {
	t.Helper()
	_, ok := readImage(t, image(t, f, mode), name)
	require.False(t, ok, "%s: %s present", mode, name)
}

func TestSyncedBytesSurvive(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 0, "hello")
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	write(t, a, 5, " world")

	for _, c := range []struct {
		mode Mode
		want string
	}{
		{ProcessKill, "hello world"},
		{PowerLossKeep, "hello world"},
		{PowerLossDrop, "hello"},
	} {
		requireImageFile(t, f, c.mode, "/d/a", c.want)
	}
}

func TestUnsyncedBytesPerSeed(t *testing.T) {
	const full = "hello world"
	run := func(seed uint64, mode Mode) string {
		f := newTestFS(t, seed)
		a := create(t, f, "/d/a")
		write(t, a, 0, "hello")
		require.NoError(t, a.Sync())
		require.NoError(t, f.SyncDir("/d"))
		write(t, a, 5, " world")
		got, ok := readImage(t, image(t, f, mode), "/d/a")
		require.True(t, ok)
		return string(got)
	}
	torn := map[int]bool{}
	outcomes := map[string]bool{}
	for seed := range uint64(60) {
		// Torn: the synced bytes and a strict prefix of the unsynced ones, the same for the
		// same seed.
		got := run(seed, PowerLossTorn)
		require.Equal(t, got, run(seed, PowerLossTorn), "seed %d", seed)
		require.GreaterOrEqual(t, len(got), 5, "seed %d", seed)
		require.Less(t, len(got), len(full), "seed %d", seed)
		require.Equal(t, full[:len(got)], got, "seed %d", seed)
		torn[len(got)] = true

		// Random: kept, dropped or torn.
		got = run(seed, PowerLoss)
		require.Equal(t, got, run(seed, PowerLoss), "seed %d", seed)
		require.Equal(t, full[:len(got)], got, "seed %d", seed)
		require.GreaterOrEqual(t, len(got), 5, "seed %d", seed)
		switch len(got) {
		case 5:
			outcomes["dropped"] = true
		case len(full):
			outcomes["kept"] = true
		default:
			outcomes["torn"] = true
		}
	}
	require.Len(t, torn, 6, "every tear length from 5 to 10 bytes occurs")
	require.Equal(t, map[string]bool{"dropped": true, "kept": true, "torn": true}, outcomes)
}

func TestTear(t *testing.T) {
	f := newTestFS(t, 7)
	a := create(t, f, "/d/a")
	write(t, a, 0, "0123456789")
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	// An overwrite in the middle: the torn image is the old bytes with a prefix of the new ones
	// from the first difference on.
	write(t, a, 3, "abc")
	for range 20 {
		got, ok := readImage(t, image(t, f, PowerLossTorn), "/d/a")
		require.True(t, ok)
		require.Contains(t, []string{"0123456789", "012a456789", "012ab56789"}, string(got))
	}
	// Only a shrink pending: the old size or the new one.
	require.NoError(t, a.Sync())
	require.NoError(t, a.Truncate(4))
	seen := map[string]bool{}
	for range 20 {
		got, ok := readImage(t, image(t, f, PowerLossTorn), "/d/a")
		require.True(t, ok)
		seen[string(got)] = true
	}
	require.Equal(t, map[string]bool{"012a": true, "012abc6789": true}, seen)
}

func TestUnsyncedCreationUndone(t *testing.T) {
	f := newTestFS(t, 1)
	b := create(t, f, "/d/b")
	write(t, b, 0, "data")
	require.NoError(t, b.Sync()) // the bytes are durable, the directory entry is not
	require.NoError(t, f.MkdirAll("/d/sub/deeper", 0o755))

	requireImageMissing(t, f, PowerLossKeep, "/d/b")
	requireImageMissing(t, f, PowerLossKeep, "/d/sub")
	requireImageFile(t, f, ProcessKill, "/d/b", "data")
	_, err := image(t, f, ProcessKill).Stat("/d/sub/deeper")
	require.NoError(t, err)

	require.NoError(t, f.SyncDir("/d"))
	requireImageFile(t, f, PowerLossDrop, "/d/b", "data")
	img := image(t, f, PowerLossDrop)
	_, err = img.Stat("/d/sub")
	require.NoError(t, err)
	_, err = img.Stat("/d/sub/deeper")
	require.ErrorIs(t, err, fs.ErrNotExist, "/d/sub was not synced: its entry for deeper is not durable")
}

func TestUnsyncedRenameUndone(t *testing.T) {
	f := newTestFS(t, 1)
	final := create(t, f, "/d/final")
	write(t, final, 0, "old")
	require.NoError(t, final.Sync())
	tmp := create(t, f, "/d/final.tmp")
	write(t, tmp, 0, "new")
	require.NoError(t, tmp.Sync())
	require.NoError(t, f.SyncDir("/d"))

	require.NoError(t, f.Rename("/d/final.tmp", "/d/final"))
	// The rename is not durable: the old file under its name, the new one under the temporary
	// name, whatever the mode of a power loss.
	for _, mode := range []Mode{PowerLossKeep, PowerLossDrop, PowerLossTorn, PowerLoss} {
		requireImageFile(t, f, mode, "/d/final", "old")
		requireImageFile(t, f, mode, "/d/final.tmp", "new")
	}
	requireImageFile(t, f, ProcessKill, "/d/final", "new")
	requireImageMissing(t, f, ProcessKill, "/d/final.tmp")

	require.NoError(t, f.SyncDir("/d"))
	requireImageFile(t, f, PowerLossDrop, "/d/final", "new")
	requireImageMissing(t, f, PowerLossDrop, "/d/final.tmp")
}

func TestUnsyncedRemoveUndone(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 0, "durable")
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	write(t, a, 0, "DURABLE")
	require.NoError(t, a.Close())
	require.NoError(t, f.Remove("/d/a"))

	requireImageFile(t, f, PowerLossDrop, "/d/a", "durable")
	requireImageFile(t, f, PowerLossKeep, "/d/a", "DURABLE")
	requireImageMissing(t, f, ProcessKill, "/d/a")
	require.NoError(t, f.SyncDir("/d"))
	requireImageMissing(t, f, PowerLossDrop, "/d/a")
}

func TestFailedSyncDropsUnsyncedData(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 0, "AAAA")
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	write(t, a, 0, "X")    // an overwrite of durable bytes
	write(t, a, 4, "BBBB") // an append

	f.Inject(Once(Is(Sync, "/d/a"), Fault{Err: syscall.EIO}))
	err := a.Sync()
	require.ErrorIs(t, err, syscall.EIO)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "/d/a", pe.Path)

	// The page cache still has the bytes...
	got := make([]byte, 8)
	_, err = a.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, "XAAABBBB", string(got))
	// ...but no later fsync writes them: the retry "succeeds" and the disk holds the old bytes,
	// and zeros where the file grew.
	require.NoError(t, a.Sync())
	requireImageFile(t, f, PowerLossKeep, "/d/a", "AAAA\x00\x00\x00\x00")
	requireImageFile(t, f, PowerLossDrop, "/d/a", "AAAA\x00\x00\x00\x00")
	requireImageFile(t, f, ProcessKill, "/d/a", "XAAABBBB")

	// Bytes written again after the failure are new dirty data: the next fsync covers them.
	write(t, a, 6, "CC")
	require.NoError(t, a.Sync())
	requireImageFile(t, f, PowerLossDrop, "/d/a", "AAAA\x00\x00CC")
}

func TestFailedSyncKeepsDurableBytes(t *testing.T) {
	// A failure before anything was ever synced.
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	require.NoError(t, f.SyncDir("/d"))
	write(t, a, 0, "lost")
	f.Inject(Once(Is(Sync, ""), Fault{Err: syscall.EIO}))
	require.ErrorIs(t, a.Sync(), syscall.EIO)
	// A power loss keeps none of the bytes; the file's growth (its size is metadata the failed
	// fsync did not concern) may survive, as zeros.
	requireImageFile(t, f, PowerLossDrop, "/d/a", "")
	requireImageFile(t, f, PowerLossKeep, "/d/a", "\x00\x00\x00\x00")
	for range 10 {
		for _, mode := range []Mode{PowerLossTorn, PowerLoss} {
			got, ok := readImage(t, image(t, f, mode), "/d/a")
			require.True(t, ok)
			require.Equal(t, make([]byte, len(got)), got, "%s", mode)
		}
	}
	requireImageFile(t, f, ProcessKill, "/d/a", "lost")
}

func TestShortWrite(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	f.Inject(Once(Is(Write, ".log"), Fault{Err: syscall.ENOSPC, Written: 3}))
	write(t, a, 0, "not a log file, no fault")
	require.NoError(t, a.Truncate(0))
	l := create(t, f, "/d/x.log")
	n, err := l.WriteAt([]byte("abcdefgh"), 0)
	require.Equal(t, 3, n)
	require.ErrorIs(t, err, syscall.ENOSPC)
	size, err := l.Size()
	require.NoError(t, err)
	require.Equal(t, int64(3), size)
	// Once: space is back.
	write(t, l, 3, "defgh")
	require.NoError(t, l.Sync())
	require.NoError(t, f.SyncDir("/d"))
	requireImageFile(t, f, PowerLossDrop, "/d/x.log", "abcdefgh")
}

func TestInjectedErrors(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 0, "x")
	require.NoError(t, a.Sync())
	tests := []struct {
		name string
		kind Kind
		call func() error
	}{
		{"open", OpenFile, func() error { _, err := f.OpenFile("/d/a", os.O_RDONLY, 0); return err }},
		{"remove", Remove, func() error { return f.Remove("/d/a") }},
		{"rename", Rename, func() error { return f.Rename("/d/a", "/d/b") }},
		{"syncdir", SyncDir, func() error { return f.SyncDir("/d") }},
		{"mkdirall", MkdirAll, func() error { return f.MkdirAll("/d/e", 0o755) }},
		{"readdir", ReadDir, func() error { _, err := f.ReadDir("/d"); return err }},
		{"truncate", Truncate, func() error { return a.Truncate(0) }},
		{"read", Read, func() error { _, err := a.ReadAt(make([]byte, 1), 0); return err }},
		{"allocate", Allocate, func() error { return a.Allocate(0, 4096) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.Inject(Once(Is(tc.kind, ""), Fault{Err: syscall.EIO}))
			require.ErrorIs(t, tc.call(), syscall.EIO)
			ops := f.Ops()
			last := ops[len(ops)-1]
			require.Equal(t, tc.kind, last.Kind)
			require.True(t, last.Injected)
			require.ErrorIs(t, last.Err, syscall.EIO)
		})
	}
	// Nothing the failed operations would have done happened.
	f.Inject(nil)
	entries, err := f.ReadDir("/d")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "a", entries[0].Name())
	got := make([]byte, 1)
	_, err = a.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	size, err := a.Size()
	require.NoError(t, err)
	require.Equal(t, int64(1), size, "the failed Allocate did not grow the file")
	// Allocate runs through: recorded with its range, the file grown, its bytes kept.
	require.NoError(t, a.Allocate(1, 99))
	ops := f.Ops()
	require.Equal(t, "#"+strconv.Itoa(len(ops)-1)+" allocate /d/a off=1 len=99", ops[len(ops)-1].String())
	size, err = a.Size()
	require.NoError(t, err)
	require.Equal(t, int64(100), size)
	_, err = a.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	requireImageMissing(t, f, PowerLossDrop, "/d/a") // the failed SyncDir made nothing durable
}

func TestOpsRecord(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	write(t, a, 2, "abc")
	_, err := a.ReadAt(make([]byte, 8), 0)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, a.Truncate(4))
	require.NoError(t, a.Sync())
	require.NoError(t, f.Rename("/d/a", "/d/b"))
	require.NoError(t, f.SyncDir("/d"))
	require.NoError(t, a.Close())

	var got []Op
	for _, op := range f.Ops() {
		op.Err = nil // compared below
		got = append(got, op)
	}
	require.Equal(t, []Op{
		{Seq: 0, Kind: OpenFile, Path: "/d/a", Flag: os.O_RDWR | os.O_CREATE},
		{Seq: 1, Kind: Write, Path: "/d/a", Offset: 2, Len: 3},
		{Seq: 2, Kind: Read, Path: "/d/a", Offset: 0, Len: 8},
		{Seq: 3, Kind: Truncate, Path: "/d/a", Offset: 4},
		{Seq: 4, Kind: Sync, Path: "/d/a"},
		{Seq: 5, Kind: Rename, Path: "/d/a", NewPath: "/d/b"},
		{Seq: 6, Kind: SyncDir, Path: "/d"},
		{Seq: 7, Kind: Close, Path: "/d/a"},
	}, got)
	require.ErrorIs(t, f.Ops()[2].Err, io.EOF)
	require.Equal(t, "#1 write /d/a off=2 len=3", f.Ops()[1].String())
	require.Equal(t, "#5 rename /d/a -> /d/b", f.Ops()[5].String())
	requireImageFile(t, f, PowerLossDrop, "/d/b", "\x00\x00ab")
}

func TestCrash(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a.index")
	require.NoError(t, a.Truncate(8))
	require.NoError(t, a.Sync())
	require.NoError(t, f.SyncDir("/d"))
	m, err := a.Map(8, true)
	require.NoError(t, err)
	copy(m.Bytes(), "mapped")
	write(t, a, 7, "w")
	crashAt := len(f.Ops()) + 1 // the second operation from now
	f.Inject(CrashAt(crashAt))
	_, err = a.Size()
	require.NoError(t, err)
	require.False(t, f.Crashed())

	err = m.Sync()
	require.ErrorIs(t, err, ErrCrashed)
	require.True(t, f.Crashed())
	// The dead process's memory writes after the crash reach no image.
	copy(m.Bytes(), "MAPPED")
	for _, call := range []func() error{
		func() error { _, err := a.WriteAt([]byte("x"), 0); return err },
		func() error { return a.Sync() },
		func() error { return f.SyncDir("/d") },
		func() error { _, err := f.OpenFile("/d/b", os.O_RDWR|os.O_CREATE, 0o644); return err },
		func() error { return m.Close() },
		func() error { return a.Close() },
	} {
		require.ErrorIs(t, call(), ErrCrashed)
	}
	ops := f.Ops()
	require.Len(t, ops, crashAt+1, "nothing is recorded after the crash")
	require.Equal(t, MapSync, ops[crashAt].Kind)
	require.True(t, ops[crashAt].Injected)
	require.ErrorIs(t, ops[crashAt].Err, ErrCrashed)

	requireImageFile(t, f, ProcessKill, "/d/a.index", "mapped\x00w")
	requireImageFile(t, f, PowerLossDrop, "/d/a.index", "\x00\x00\x00\x00\x00\x00\x00\x00")
	requireImageMissing(t, f, PowerLossDrop, "/d/b")
}

func TestMappingSync(t *testing.T) {
	f := newTestFS(t, 1)
	a := create(t, f, "/d/a")
	require.NoError(t, f.SyncDir("/d"))
	require.NoError(t, a.Truncate(8)) // preallocated, size not synced
	m, err := a.Map(8, true)
	require.NoError(t, err)
	copy(m.Bytes(), "entry")
	requireImageFile(t, f, PowerLossDrop, "/d/a", "")
	require.NoError(t, m.Sync())
	requireImageFile(t, f, PowerLossDrop, "/d/a", "entry\x00\x00\x00")
	require.NoError(t, m.Close())
}

func TestPreexistingFilesAreDurable(t *testing.T) {
	inner := fsys.NewMemory()
	require.NoError(t, inner.MkdirAll("/d/sub", 0o755))
	fl, err := inner.OpenFile("/d/old", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = fl.WriteAt([]byte("before"), 0)
	require.NoError(t, err)
	require.NoError(t, fl.Close())

	f := New(inner, 1)
	entries, err := f.ReadDir("/d")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	a, err := f.OpenFile("/d/old", os.O_RDWR, 0)
	require.NoError(t, err)
	write(t, a, 0, "AFTER!")
	requireImageFile(t, f, PowerLossDrop, "/d/old", "before")
	requireImageFile(t, f, PowerLossKeep, "/d/old", "AFTER!")
	_, err = image(t, f, PowerLossDrop).Stat("/d/sub")
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, f.Release())
}

func TestLock(t *testing.T) {
	f := newTestFS(t, 1)
	l, err := f.Lock("/d/.lock")
	require.NoError(t, err)
	_, err = f.Lock("/d/.lock")
	require.ErrorIs(t, err, fsys.ErrLocked)
	require.NoError(t, l.Close())
	requireImageMissing(t, f, PowerLossDrop, "/d/.lock")
	requireImageFile(t, f, ProcessKill, "/d/.lock", "")
	kinds := []Kind{}
	for _, op := range f.Ops() {
		kinds = append(kinds, op.Kind)
	}
	require.Equal(t, []Kind{Lock, Lock, Unlock}, kinds)
}

func TestSpans(t *testing.T) {
	tests := []struct {
		name string
		s    spans
		add  [2]int64
		rm   [2]int64
		want spans
	}{
		{"add to empty", nil, [2]int64{2, 5}, [2]int64{}, spans{{2, 5}}},
		{"merge adjacent", spans{{0, 2}}, [2]int64{2, 4}, [2]int64{}, spans{{0, 4}}},
		{"merge overlapping both", spans{{0, 2}, {5, 8}}, [2]int64{1, 6}, [2]int64{}, spans{{0, 8}}},
		{"keep disjoint sorted", spans{{5, 8}}, [2]int64{0, 2}, [2]int64{}, spans{{0, 2}, {5, 8}}},
		{"remove middle", spans{{0, 10}}, [2]int64{}, [2]int64{3, 5}, spans{{0, 3}, {5, 10}}},
		{"remove all", spans{{2, 4}, {6, 8}}, [2]int64{}, [2]int64{0, 10}, nil},
		{"remove edge", spans{{2, 8}}, [2]int64{}, [2]int64{6, 20}, spans{{2, 6}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.add(tc.add[0], tc.add[1]).remove(tc.rm[0], tc.rm[1])
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, spans{{1, 2}, {4, 6}}, diffSpans([]byte("abcdef"), []byte("aXcd")))
}
