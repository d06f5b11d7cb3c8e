package index

import (
	"io/fs"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

func TestOffsetRoundTrip(t *testing.T) {
	const base = 1000
	entries := [][2]int64{{1009, 0}, {1019, 4200}, {1030, 8400}, {1045, 12700}}
	lookups := []struct {
		target, off, pos int64
	}{
		{math.MinInt64, base, 0},
		{0, base, 0},
		{999, base, 0},
		{1000, base, 0},
		{1008, base, 0},
		{1009, 1009, 0},
		{1010, 1009, 0},
		{1018, 1009, 0},
		{1019, 1019, 4200},
		{1029, 1019, 4200},
		{1030, 1030, 8400},
		{1044, 1030, 8400},
		{1045, 1045, 12700},
		{1046, 1045, 12700},
		{math.MaxInt64, 1045, 12700},
	}
	check := func(t *testing.T, x *Offset) {
		t.Helper()
		require.Equal(t, len(entries), x.Entries())
		for i, e := range entries {
			off, pos := x.Entry(i)
			require.Equal(t, e, [2]int64{off, pos}, "entry %d", i)
		}
		for _, l := range lookups {
			off, pos := x.Lookup(l.target)
			require.Equal(t, [2]int64{l.off, l.pos}, [2]int64{off, pos}, "Lookup(%d)", l.target)
		}
		// Every offset between and around the entries, against a linear scan.
		for target := int64(base - 2); target <= 1050; target++ {
			off, pos := x.Lookup(target)
			wantOff, wantPos := refLookup(x, target)
			require.Equal(t, [2]int64{wantOff, wantPos}, [2]int64{off, pos}, "Lookup(%d)", target)
		}
		off, pos, ok := x.LastEntry()
		require.True(t, ok)
		require.Equal(t, [2]int64{1045, 12700}, [2]int64{off, pos})
		require.Equal(t, len(entries)*OffsetEntrySize, x.SizeBytes())
		require.NoError(t, x.Check(12701))
	}
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, base, ".index")
		x, err := OpenOffset(fs, name, base, 1024, true)
		require.NoError(t, err)
		require.Equal(t, int64(base), x.BaseOffset())
		for _, e := range entries {
			require.True(t, x.CanAppend(e[0]))
			require.NoError(t, x.Append(e[0], e[1]))
		}
		check(t, x)
		require.NoError(t, x.Sync())
		require.NoError(t, x.Close())

		// Kafka's layout, byte for byte: relative offset, position, big-endian.
		require.Equal(t, offsetBytes([2]uint32{9, 0}, [2]uint32{19, 4200}, [2]uint32{30, 8400}, [2]uint32{45, 12700}),
			readFile(t, fs, name))

		x, err = OpenOffset(fs, name, base, 1024, false)
		require.NoError(t, err)
		check(t, x)
		require.True(t, x.Full())
		require.False(t, x.CanAppend(1046))
		require.ErrorContains(t, x.Append(1046, 13000), "read-only")
		require.NoError(t, x.Close())
		require.Equal(t, int64(len(entries)*OffsetEntrySize), fileSize(t, fs, name))

		// Reopened writable, the index continues where it was and grows the file again.
		x, err = OpenOffset(fs, name, base, 1024, true)
		require.NoError(t, err)
		require.Equal(t, int64(1024), fileSize(t, fs, name))
		check(t, x)
		require.NoError(t, x.Append(1050, 13000))
		require.NoError(t, x.Close())
		require.Equal(t, int64(5*OffsetEntrySize), fileSize(t, fs, name))
	})
}

func TestOffsetPreallocation(t *testing.T) {
	for _, tc := range []struct {
		maxBytes   int
		size       int64 // the file's first step: a page at most
		maxEntries int   // the entries its mapping holds
	}{
		{8, 8, 1},
		{15, 8, 1},
		{1001, 1000, 125},
		{10 << 20, 4096, 512},
	} {
		forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
			name := indexName(dir, 0, ".index")
			x, err := OpenOffset(fs, name, 0, tc.maxBytes, true)
			require.NoError(t, err)
			// Opened empty, the index is unmapped and its file untouched until an entry needs
			// room; the reservation of the first entry grows it to its first step.
			require.Equal(t, int64(0), fileSize(t, fs, name), "maxBytes %d", tc.maxBytes)
			require.Equal(t, 0, x.m.maxEntries)
			require.NoError(t, x.Reserve(1))
			require.Equal(t, tc.size, fileSize(t, fs, name), "maxBytes %d", tc.maxBytes)
			require.Equal(t, 0, x.Entries())
			require.Equal(t, 0, x.SizeBytes())
			require.Equal(t, tc.maxEntries, x.m.maxEntries)
			require.NoError(t, x.Close())
			require.Equal(t, int64(0), fileSize(t, fs, name))

			// Closed without an entry or a reservation, the file is neither grown nor trimmed.
			y, err := OpenOffset(fs, name, 0, tc.maxBytes, true)
			require.NoError(t, err)
			require.NoError(t, y.Close())
			require.Equal(t, int64(0), fileSize(t, fs, name))
		})
	}
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		_, err := OpenOffset(fs, indexName(dir, 0, ".index"), 0, 7, true)
		require.ErrorContains(t, err, "less than one 8-byte entry")
		_, err = OpenOffset(fs, indexName(dir, 0, ".index"), -1, 1024, true)
		require.ErrorContains(t, err, "base offset -1 out of range")

		// An existing file larger than maxBytes keeps its entries and is full.
		name := indexName(dir, 0, ".index")
		writeFile(t, fs, name, offsetBytes([2]uint32{1, 10}, [2]uint32{2, 20}, [2]uint32{3, 30}))
		x, err := OpenOffset(fs, name, 0, 16, true)
		require.NoError(t, err)
		require.Equal(t, 3, x.Entries())
		require.True(t, x.Full())
		require.ErrorIs(t, x.Append(4, 40), ErrFull)
		require.NoError(t, x.Close())
		require.Equal(t, int64(24), fileSize(t, fs, name))
	})
}

func TestOffsetOpenMissing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS, dir string) {
		_, err := OpenOffset(fsy, indexName(dir, 0, ".index"), 0, 1024, false)
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}

func TestOffsetFull(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenOffset(fs, indexName(dir, 0, ".index"), 0, 4*OffsetEntrySize+5, true)
		require.NoError(t, err)
		for i := range int64(4) {
			require.False(t, x.Full(), "after %d entries", i)
			require.True(t, x.CanAppend(10*i+10))
			require.NoError(t, x.Append(10*i+10, 100*i+100))
		}
		require.True(t, x.Full())
		require.False(t, x.CanAppend(50))
		off, pos := x.Lookup(math.MaxInt64)
		require.Equal(t, [2]int64{40, 400}, [2]int64{off, pos})
		err = x.Append(50, 500)
		require.ErrorIs(t, err, ErrFull)
		require.ErrorContains(t, err, "4 entries")
		require.Equal(t, 4, x.Entries())
		x.TruncateTo(40)
		require.False(t, x.Full())
		require.NoError(t, x.Close())
	})
}

func TestOffsetRelativeOverflow(t *testing.T) {
	const base = 5000
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenOffset(fs, indexName(dir, base, ".index"), base, 1024, true)
		require.NoError(t, err)
		require.False(t, x.CanAppend(base-1))
		require.True(t, x.CanAppend(base))
		require.True(t, x.CanAppend(base+math.MaxInt32))
		require.False(t, x.CanAppend(base+math.MaxInt32+1))
		require.False(t, x.CanAppend(base+math.MaxUint32))

		err = x.Append(base+math.MaxInt32+1, 100)
		require.ErrorContains(t, err, "does not fit in 31 bits")
		require.NotErrorIs(t, err, ErrFull)
		require.ErrorContains(t, x.Append(base-1, 0), "does not fit in 31 bits")
		require.NoError(t, x.Append(base+math.MaxInt32, 100))
		off, pos := x.Lookup(math.MaxInt64)
		require.Equal(t, [2]int64{base + math.MaxInt32, 100}, [2]int64{off, pos})
		require.NoError(t, x.Check(101))
		require.NoError(t, x.Close())
	})
}

func TestOffsetAppendErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		offset, pos int64
		want        string
	}{
		{"offset equal", 20, 300, "append offset 20: not above the last entry's offset 20"},
		{"offset below", 15, 300, "append offset 15: not above the last entry's offset 20"},
		{"position equal", 21, 200, "append offset 21 at position 200: not above the last entry's position 200"},
		{"position below", 21, 150, "append offset 21 at position 150: not above the last entry's position 200"},
		{"position too large", 21, math.MaxInt32 + 1, "append offset 21: position 2147483648 out of range [0, 2147483647]"},
	} {
		forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
			name := indexName(dir, 0, ".index")
			x, err := OpenOffset(fs, name, 0, 1024, true)
			require.NoError(t, err)
			require.NoError(t, x.Append(10, 100))
			require.NoError(t, x.Append(20, 200))
			require.EqualError(t, x.Append(tc.offset, tc.pos), name+": "+tc.want, tc.name)
			require.Equal(t, 2, x.Entries())
			require.NoError(t, x.Close())
		})
	}
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 7, ".index")
		x, err := OpenOffset(fs, name, 7, 1024, true)
		require.NoError(t, err)
		require.EqualError(t, x.Append(7, 61), name+": append base offset 7 at position 61: only the batch at position 0 can hold it")
		require.EqualError(t, x.Append(8, -1), name+": append offset 8: position -1 out of range [0, 2147483647]")
		require.NoError(t, x.Append(7, 0))
		require.NoError(t, x.Close())
		require.ErrorContains(t, x.Append(8, 100), "closed")
	})
}

func TestOffsetTruncateTo(t *testing.T) {
	const base = 100
	for _, tc := range []struct {
		offset int64
		keep   int
	}{
		{math.MinInt64, 0},
		{0, 0},
		{base, 0},
		{110, 0},
		{111, 1},
		{120, 1},
		{125, 2},
		{130, 2},
		{131, 3},
		{math.MaxInt64, 3},
	} {
		forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
			name := indexName(dir, base, ".index")
			x, err := OpenOffset(fs, name, base, 64, true)
			require.NoError(t, err)
			for _, e := range [][2]int64{{110, 10}, {120, 20}, {130, 30}} {
				require.NoError(t, x.Append(e[0], e[1]))
			}
			x.TruncateTo(tc.offset)
			require.Equal(t, tc.keep, x.Entries(), "TruncateTo(%d)", tc.offset)

			// The dropped entries are zeroed in the file, so a crash cannot resurrect them.
			require.NoError(t, x.Sync())
			data := readFile(t, fs, name)
			require.Len(t, data, 64)
			require.Equal(t, make([]byte, 64-tc.keep*OffsetEntrySize), data[tc.keep*OffsetEntrySize:])

			// Offsets at and above the truncation point can be appended again.
			require.NoError(t, x.Append(min(max(tc.offset, base+1), 200), 40+int64(tc.keep)*10))
			require.NoError(t, x.Check(1000))
			require.NoError(t, x.Close())
			require.Equal(t, int64(tc.keep+1)*OffsetEntrySize, fileSize(t, fs, name))
		})
	}
}

func TestOffsetSeal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 0, ".index")
		x, err := OpenOffset(fs, name, 0, 1024, true)
		require.NoError(t, err)
		require.NoError(t, x.Append(5, 100))
		require.NoError(t, x.Append(9, 200))
		require.NoError(t, x.Seal())
		require.Equal(t, int64(16), fileSize(t, fs, name))
		require.NoError(t, x.Seal())
		require.Equal(t, int64(16), fileSize(t, fs, name))
		require.NoError(t, x.Sync())
		require.True(t, x.Full())
		require.False(t, x.CanAppend(10))
		require.ErrorContains(t, x.Append(10, 300), "read-only")
		require.Equal(t, 2, x.Entries())
		off, pos := x.Lookup(8)
		require.Equal(t, [2]int64{5, 100}, [2]int64{off, pos})
		require.NoError(t, x.Check(201))
		require.NoError(t, x.Close())
		require.NoError(t, x.Close())
		require.Equal(t, int64(16), fileSize(t, fs, name))
		off, pos = x.Lookup(8)
		require.Equal(t, [2]int64{0, 0}, [2]int64{off, pos}, "a closed index is empty")

		// An empty index seals to an empty file; a read-only index seals to itself.
		empty := indexName(dir, 50, ".index")
		x, err = OpenOffset(fs, empty, 50, 1024, true)
		require.NoError(t, err)
		require.NoError(t, x.Seal())
		require.Equal(t, int64(0), fileSize(t, fs, empty))
		off, pos = x.Lookup(60)
		require.Equal(t, [2]int64{50, 0}, [2]int64{off, pos})
		require.NoError(t, x.Close())

		x, err = OpenOffset(fs, name, 0, 1024, false)
		require.NoError(t, err)
		require.NoError(t, x.Seal())
		require.Equal(t, 2, x.Entries())
		require.NoError(t, x.Close())
		require.ErrorContains(t, x.Seal(), "closed")
	})
}

func TestOffsetCrashedPreallocated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		// A crash leaves the active index at its preallocated size: copy it while it is open.
		name := indexName(dir, 0, ".index")
		x, err := OpenOffset(fs, name, 0, 1024, true)
		require.NoError(t, err)
		require.NoError(t, x.Append(5, 100))
		require.NoError(t, x.Append(9, 200))
		require.NoError(t, x.Append(14, 300))
		require.NoError(t, x.Sync())
		crashed := indexName(dir, 1, ".index")
		writeFile(t, fs, crashed, readFile(t, fs, name))
		require.NoError(t, x.Close())

		for _, writable := range []bool{false, true} {
			y, err := OpenOffset(fs, crashed, 0, 1024, writable)
			require.NoError(t, err)
			require.Equal(t, 128, y.Entries())
			require.EqualError(t, y.Check(1000), crashed+": corrupt index: entry 3 (of 128): relative offset 0 is not above the previous entry's 14")
			require.ErrorIs(t, y.Check(1000), ErrCorrupt)
			require.NoError(t, y.Close())
		}

		// The caller rebuilds it.
		y, err := OpenOffset(fs, crashed, 0, 1024, true)
		require.NoError(t, err)
		require.True(t, y.Full())
		y.Reset()
		require.Equal(t, 0, y.Entries())
		require.Equal(t, make([]byte, 1024), readFileSynced(t, fs, y, crashed))
		require.NoError(t, y.Append(5, 100))
		require.NoError(t, y.Append(9, 200))
		require.NoError(t, y.Close())
		y, err = OpenOffset(fs, crashed, 0, 1024, false)
		require.NoError(t, err)
		require.NoError(t, y.Check(1000))
		require.Equal(t, 2, y.Entries())
		require.NoError(t, y.Close())

		// A crash before the first entry leaves only zeros.
		zeros := indexName(dir, 2, ".index")
		writeFile(t, fs, zeros, make([]byte, 1024))
		y, err = OpenOffset(fs, zeros, 0, 1024, false)
		require.NoError(t, err)
		require.EqualError(t, y.Check(1000), zeros+": corrupt index: entry 1 (of 128): relative offset 0 is not above the previous entry's 0")
		require.NoError(t, y.Close())
	})
}

// readFileSynced syncs x and returns the file's bytes.
func readFileSynced(t *testing.T, fs fsys.FS, x *Offset, name string) []byte {
	t.Helper()
	require.NoError(t, x.Sync())
	return readFile(t, fs, name)
}

func TestOffsetCorrupt(t *testing.T) {
	random := make([]byte, 64)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		logSize int64
		want    string // the error after the file name; empty: valid
		openErr bool
	}{
		{"empty", nil, 0, "", false},
		{"valid", offsetBytes([2]uint32{0, 0}, [2]uint32{10, 4100}, [2]uint32{20, 8200}), 8300, "", false},
		{"random bytes", random, 1 << 40, "corrupt index: entry 0 (of 8): relative offset 0x86ad05dc does not fit a signed 32-bit integer", false},
		{"3 extra bytes", append(offsetBytes([2]uint32{10, 4100}), 1, 2, 3), 8300, "corrupt index: size 11 bytes is not a whole number of 8-byte entries", true},
		{"entries swapped", offsetBytes([2]uint32{10, 4100}, [2]uint32{30, 12300}, [2]uint32{20, 8200}), 13000,
			"corrupt index: entry 2 (of 3): relative offset 20 is not above the previous entry's 30", false},
		{"entry repeated", offsetBytes([2]uint32{10, 4100}, [2]uint32{10, 4100}), 13000,
			"corrupt index: entry 1 (of 2): relative offset 10 is not above the previous entry's 10", false},
		{"positions swapped", offsetBytes([2]uint32{10, 8200}, [2]uint32{20, 4100}), 13000,
			"corrupt index: entry 1 (of 2): position 4100 is not above the previous entry's 8200", false},
		{"position past the log", offsetBytes([2]uint32{10, 4100}, [2]uint32{20, 8200}), 8000,
			"corrupt index: entry 1 (of 2): position 8200 is not below the log size 8000", false},
		{"position at the log size", offsetBytes([2]uint32{10, 4100}, [2]uint32{20, 8200}), 8200,
			"corrupt index: entry 1 (of 2): position 8200 is not below the log size 8200", false},
		{"position on an empty log", offsetBytes([2]uint32{0, 0}), 0,
			"corrupt index: entry 0 (of 1): position 0 is not below the log size 0", false},
		{"relative offset 0xFFFFFFFF", offsetBytes([2]uint32{10, 4100}, [2]uint32{0xFFFFFFFF, 8200}), 13000,
			"corrupt index: entry 1 (of 2): relative offset 0xffffffff does not fit a signed 32-bit integer", false},
		{"relative offset 2^31", offsetBytes([2]uint32{0x80000000, 4100}), 13000,
			"corrupt index: entry 0 (of 1): relative offset 0x80000000 does not fit a signed 32-bit integer", false},
		{"position 2^31", offsetBytes([2]uint32{10, 0x80000000}), 1 << 40,
			"corrupt index: entry 0 (of 1): position 0x80000000 does not fit a signed 32-bit integer", false},
		{"base offset not at position 0", offsetBytes([2]uint32{0, 4100}, [2]uint32{10, 8200}), 13000,
			"corrupt index: entry 0 (of 2): relative offset 0 at position 4100, but only the batch at position 0 can end at the base offset", false},
		{"trailing zero entry", offsetBytes([2]uint32{10, 4100}, [2]uint32{0, 0}), 13000,
			"corrupt index: entry 1 (of 2): relative offset 0 is not above the previous entry's 10", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
				name := indexName(dir, 0, ".index")
				writeFile(t, fs, name, tc.data)
				x, err := OpenOffset(fs, name, 0, 1024, false)
				if tc.openErr {
					require.EqualError(t, err, name+": "+tc.want)
					require.ErrorIs(t, err, ErrCorrupt)
					_, err = OpenOffset(fs, name, 0, 1024, true)
					require.ErrorIs(t, err, ErrCorrupt)
					return
				}
				require.NoError(t, err)
				require.Equal(t, len(tc.data)/OffsetEntrySize, x.Entries())
				err = x.Check(tc.logSize)
				if tc.want == "" {
					require.NoError(t, err)
				} else {
					require.EqualError(t, err, name+": "+tc.want)
					require.ErrorIs(t, err, ErrCorrupt)
				}
				// Lookups on a corrupt index answer something and do not panic.
				for _, target := range []int64{math.MinInt64, -1, 0, 10, 25, math.MaxInt64} {
					x.Lookup(target)
				}
				require.NoError(t, x.Close())
			})
		})
	}
}

func TestOffsetEmptyFile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := indexName(dir, 42, ".index")
		writeFile(t, fsy, name, nil)
		x, err := OpenOffset(fsy, name, 42, 1024, false)
		require.NoError(t, err)
		require.Equal(t, 0, x.Entries())
		require.NoError(t, x.Check(0))
		off, pos := x.Lookup(100)
		require.Equal(t, [2]int64{42, 0}, [2]int64{off, pos})
		_, _, ok := x.LastEntry()
		require.False(t, ok)
		require.True(t, x.Full())
		x.TruncateTo(0)
		x.Reset()
		require.NoError(t, x.Sync())
		require.NoError(t, x.Close())
		require.Equal(t, int64(0), fileSize(t, fsy, name))
	})
}

// TestOffsetConcurrentReaders runs readers against an appending writer, serialised the way the
// log does it, for the race detector.
func TestOffsetConcurrentReaders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenOffset(fs, indexName(dir, 0, ".index"), 0, 8*1000, true)
		require.NoError(t, err)
		var mu sync.RWMutex
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for i := range int64(2000) {
					mu.RLock()
					off, pos := x.Lookup(i)
					mu.RUnlock()
					if off > i || (off > 0 && pos != off*10) {
						t.Errorf("Lookup(%d) = %d, %d", i, off, pos)
						return
					}
				}
			})
		}
		for i := range int64(1000) {
			mu.Lock()
			err := x.Append(i+1, (i+1)*10)
			mu.Unlock()
			require.NoError(t, err)
		}
		wg.Wait()
		require.NoError(t, x.Close())
	})
}

func BenchmarkOffsetLookup(b *testing.B) {
	const n = 1 << 20
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			fs, dir := be.open(b)
			x, err := OpenOffset(fs, indexName(dir, 0, ".index"), 0, n*OffsetEntrySize, true)
			require.NoError(b, err)
			for i := range int64(n) {
				require.NoError(b, x.Append(i*16+15, i*2000+100))
			}
			require.NoError(b, x.Seal())
			b.ReportAllocs()
			var target uint64
			var sink int64
			for b.Loop() {
				// A cheap pseudo-random walk over the whole offset range.
				target = target*6364136223846793005 + 1442695040888963407
				off, pos := x.Lookup(int64(target>>44) * 16)
				sink += off + pos
			}
			_ = sink
			require.NoError(b, x.Close())
		})
	}
}

// TestOffsetLookupLarge covers lookups in and out of the warm tail that is searched first.
func TestOffsetLookupLarge(t *testing.T) {
	const base, n = 1 << 32, 3000
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenOffset(fs, indexName(dir, base, ".index"), base, n*OffsetEntrySize, true)
		require.NoError(t, err)
		for i := range int64(n) {
			require.NoError(t, x.Append(base+3*i+2, 100*i+100))
		}
		require.NoError(t, x.Seal())
		require.NoError(t, x.Check(100*n+100))
		for target := int64(base - 1); target <= base+3*n+1; target++ {
			off, pos := x.Lookup(target)
			want := [2]int64{base, 0}
			if target >= base+2 {
				i := (target - base - 2) / 3
				want = [2]int64{base + 3*i + 2, 100*i + 100}
			}
			require.Equal(t, want, [2]int64{off, pos}, "Lookup(%d)", target)
		}
		for _, tc := range []struct{ offset, keep int64 }{{base + 3*2999 + 3, 3000}, {base + 3*2000 + 2, 2000}, {base + 2, 0}} {
			x.TruncateTo(tc.offset)
			require.Equal(t, int(tc.keep), x.Entries())
		}
		require.NoError(t, x.Close())
	})
}
