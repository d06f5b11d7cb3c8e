package index

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

func TestTimeRoundTrip(t *testing.T) {
	const base = 1000
	// Entries as appended: the largest timestamp so far and its offset; the last one shares its
	// offset with the one before, as the entry Kafka appends at roll can.
	entries := [][2]int64{{1_700_000_000_100, 1005}, {1_700_000_000_200, 1007}, {1_700_000_000_300, 1007}, {1_700_000_000_400, 1012}}
	lookups := []struct {
		ts  int64
		off int64
		ok  bool
	}{
		{math.MinInt64, 0, false},
		{0, 0, false},
		{1_700_000_000_099, 0, false},
		{1_700_000_000_100, 0, false},
		{1_700_000_000_101, 1005, true},
		{1_700_000_000_200, 1005, true},
		{1_700_000_000_201, 1007, true},
		{1_700_000_000_300, 1007, true},
		{1_700_000_000_301, 1007, true},
		{1_700_000_000_400, 1007, true},
		{1_700_000_000_401, 1012, true},
		{math.MaxInt64, 1012, true},
	}
	check := func(t *testing.T, x *Time) {
		t.Helper()
		require.Equal(t, len(entries), x.Entries())
		for i, e := range entries {
			ts, off := x.Entry(i)
			require.Equal(t, e, [2]int64{ts, off}, "entry %d", i)
		}
		for _, l := range lookups {
			off, ok := x.LookupBefore(l.ts)
			require.Equal(t, l.ok, ok, "LookupBefore(%d)", l.ts)
			require.Equal(t, l.off, off, "LookupBefore(%d)", l.ts)
		}
		for ts := int64(1_700_000_000_000); ts <= 1_700_000_000_500; ts++ {
			off, ok := x.LookupBefore(ts)
			wantOff, wantOK := refLookupBefore(x, ts)
			require.Equal(t, wantOK, ok, "LookupBefore(%d)", ts)
			require.Equal(t, wantOff, off, "LookupBefore(%d)", ts)
		}
		ts, off, ok := x.LastEntry()
		require.True(t, ok)
		require.Equal(t, [2]int64{1_700_000_000_400, 1012}, [2]int64{ts, off})
		require.Equal(t, len(entries)*TimeEntrySize, x.SizeBytes())
		require.NoError(t, x.Check(1012))
	}
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, base, ".timeindex")
		x, err := OpenTime(fs, name, base, 1024, true)
		require.NoError(t, err)
		require.Equal(t, int64(0), fileSize(t, fs, name)) // unmapped until the first entry
		require.Equal(t, int64(base), x.BaseOffset())
		for _, e := range entries {
			require.True(t, x.CanAppend(e[1]))
			require.NoError(t, x.MaybeAppend(e[0], e[1]))
		}
		require.Equal(t, int64(1020), fileSize(t, fs, name)) // the first step: 1024 in whole entries
		check(t, x)
		require.NoError(t, x.Sync())
		require.NoError(t, x.Close())

		require.Equal(t, timeBytes(
			timeEntry{1_700_000_000_100, 5}, timeEntry{1_700_000_000_200, 7},
			timeEntry{1_700_000_000_300, 7}, timeEntry{1_700_000_000_400, 12}),
			readFile(t, fs, name))

		x, err = OpenTime(fs, name, base, 1024, false)
		require.NoError(t, err)
		check(t, x)
		require.True(t, x.Full())
		require.ErrorContains(t, x.MaybeAppend(1_700_000_000_500, 1013), "read-only")
		require.NoError(t, x.Close())
		require.Equal(t, int64(len(entries)*TimeEntrySize), fileSize(t, fs, name))
	})
}

func TestTimeMaybeAppend(t *testing.T) {
	const base = 10
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, base, ".timeindex")
		x, err := OpenTime(fs, name, base, 1024, true)
		require.NoError(t, err)
		type step struct {
			ts, offset int64
			err        string // after the file name
			entries    int
		}
		for i, s := range []step{
			// On an empty index the last timestamp is Kafka's NO_TIMESTAMP (-1) at the base offset.
			{-5, base, "", 0},
			{-1, base, "", 0},
			{100, base - 1, "append timestamp 100 at offset 9: offset below the last entry's 10", 0},
			{0, base, "", 1},
			{100, 15, "", 2},
			// Timestamps going backwards, or staying, append nothing.
			{90, 16, "", 2},
			{100, 17, "", 2},
			{-1, 17, "", 2},
			// Offsets going backwards are an error, even when nothing would be appended.
			{200, 14, "append timestamp 200 at offset 14: offset below the last entry's 15", 2},
			{50, 14, "append timestamp 50 at offset 14: offset below the last entry's 15", 2},
			{150, 18, "", 3},
			// An equal offset with a larger timestamp: the entry appended at roll.
			{160, 18, "", 4},
			{170, base + math.MaxInt32 + 1, "append offset 2147483658: relative to base offset 10 it does not fit in 31 bits", 4},
			{170, base + math.MaxInt32, "", 5},
		} {
			err := x.MaybeAppend(s.ts, s.offset)
			if s.err == "" {
				require.NoError(t, err, "step %d", i)
			} else {
				require.EqualError(t, err, name+": "+s.err, "step %d", i)
			}
			require.Equal(t, s.entries, x.Entries(), "step %d", i)
		}
		require.Equal(t, timeBytes(timeEntry{0, 0}, timeEntry{100, 5}, timeEntry{150, 8}, timeEntry{160, 8}, timeEntry{170, math.MaxInt32}),
			readFileSyncedTime(t, fs, x, name)[:5*TimeEntrySize])
		require.NoError(t, x.Check(base+math.MaxInt32))
		require.NoError(t, x.Close())
		require.ErrorContains(t, x.MaybeAppend(200, 20), "closed")
	})
}

func readFileSyncedTime(t *testing.T, fs fsys.FS, x *Time, name string) []byte {
	t.Helper()
	require.NoError(t, x.Sync())
	return readFile(t, fs, name)
}

func TestTimeFull(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenTime(fs, indexName(dir, 0, ".timeindex"), 0, 4*TimeEntrySize+11, true)
		require.NoError(t, err)
		for i := range int64(3) {
			require.False(t, x.Full(), "after %d entries", i)
			require.True(t, x.CanAppend(i))
			require.NoError(t, x.MaybeAppend(100*i+100, i))
		}
		// Kafka keeps the last slot for the entry appended at roll.
		require.True(t, x.Full())
		require.False(t, x.CanAppend(3))
		require.NoError(t, x.MaybeAppend(400, 3))
		require.Equal(t, 4, x.Entries())
		require.NoError(t, x.MaybeAppend(400, 4), "nothing to append needs no room")
		err = x.MaybeAppend(500, 4)
		require.ErrorIs(t, err, ErrFull)
		require.ErrorContains(t, err, "4 entries")
		require.Equal(t, 4, x.Entries())
		require.NoError(t, x.Close())
	})
}

func TestTimeRelativeOverflow(t *testing.T) {
	const base = 5000
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenTime(fs, indexName(dir, base, ".timeindex"), base, 1024, true)
		require.NoError(t, err)
		require.False(t, x.CanAppend(base-1))
		require.True(t, x.CanAppend(base))
		require.True(t, x.CanAppend(base+math.MaxInt32))
		require.False(t, x.CanAppend(base+math.MaxInt32+1))
		err = x.MaybeAppend(1, base+math.MaxInt32+1)
		require.ErrorContains(t, err, "does not fit in 31 bits")
		require.NotErrorIs(t, err, ErrFull)
		require.NoError(t, x.Close())
	})
}

func TestTimeTruncateTo(t *testing.T) {
	const base = 100
	for _, tc := range []struct {
		offset int64
		keep   int
	}{
		{math.MinInt64, 0},
		{base, 0},
		{110, 0},
		{111, 2},
		{120, 2},
		{121, 3},
		{math.MaxInt64, 3},
	} {
		forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
			name := indexName(dir, base, ".timeindex")
			x, err := OpenTime(fs, name, base, 120, true)
			require.NoError(t, err)
			for _, e := range [][2]int64{{1000, 110}, {2000, 110}, {3000, 120}} {
				require.NoError(t, x.MaybeAppend(e[0], e[1]))
			}
			x.TruncateTo(tc.offset)
			require.Equal(t, tc.keep, x.Entries(), "TruncateTo(%d)", tc.offset)
			data := readFileSyncedTime(t, fs, x, name)
			require.Len(t, data, 120)
			require.Equal(t, make([]byte, 120-tc.keep*TimeEntrySize), data[tc.keep*TimeEntrySize:])
			require.NoError(t, x.MaybeAppend(4000, min(max(tc.offset, base), 200)))
			require.NoError(t, x.Check(200))
			require.NoError(t, x.Close())
			require.Equal(t, int64(tc.keep+1)*TimeEntrySize, fileSize(t, fs, name))
		})
	}
}

func TestTimeSeal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 0, ".timeindex")
		x, err := OpenTime(fs, name, 0, 1024, true)
		require.NoError(t, err)
		require.NoError(t, x.MaybeAppend(100, 5))
		require.NoError(t, x.MaybeAppend(200, 9))
		require.NoError(t, x.Seal())
		require.NoError(t, x.Seal())
		require.Equal(t, int64(24), fileSize(t, fs, name))
		require.True(t, x.Full())
		require.ErrorContains(t, x.MaybeAppend(300, 10), "read-only")
		off, ok := x.LookupBefore(201)
		require.True(t, ok)
		require.Equal(t, int64(9), off)
		require.NoError(t, x.Check(9))
		require.NoError(t, x.Close())
		require.Equal(t, int64(24), fileSize(t, fs, name))
	})
}

func TestTimeCrashedPreallocated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 0, ".timeindex")
		x, err := OpenTime(fs, name, 0, 120, true)
		require.NoError(t, err)
		require.NoError(t, x.MaybeAppend(100, 5))
		require.NoError(t, x.MaybeAppend(200, 9))
		crashed := indexName(dir, 1, ".timeindex")
		writeFile(t, fs, crashed, readFileSyncedTime(t, fs, x, name))
		require.NoError(t, x.Close())

		y, err := OpenTime(fs, crashed, 0, 120, true)
		require.NoError(t, err)
		require.Equal(t, 10, y.Entries())
		err = y.Check(1000)
		require.EqualError(t, err, crashed+": corrupt index: entry 2 (of 10): timestamp 0 is not above the previous entry's 200")
		require.ErrorIs(t, err, ErrCorrupt)
		y.Reset()
		require.Equal(t, make([]byte, 120), readFileSyncedTime(t, fs, y, crashed))
		require.NoError(t, y.MaybeAppend(100, 5))
		require.NoError(t, y.Close())
		y, err = OpenTime(fs, crashed, 0, 120, false)
		require.NoError(t, err)
		require.NoError(t, y.Check(5))
		require.NoError(t, y.Close())
	})
}

func TestTimeCorrupt(t *testing.T) {
	random := make([]byte, 60)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for _, tc := range []struct {
		name      string
		data      []byte
		maxOffset int64
		want      string
		openErr   bool
	}{
		{"empty", nil, -1, "", false},
		{"valid", timeBytes(timeEntry{0, 0}, timeEntry{100, 5}, timeEntry{200, 5}), 5, "", false},
		{"random bytes", random, math.MaxInt64, "corrupt index: entry 2 (of 5): negative timestamp -7011621111877844916", false},
		{"one extra byte", append(timeBytes(timeEntry{100, 5}), 0), 5, "corrupt index: size 13 bytes is not a whole number of 12-byte entries", true},
		{"falling timestamps", timeBytes(timeEntry{100, 5}, timeEntry{300, 6}, timeEntry{200, 7}), 10,
			"corrupt index: entry 2 (of 3): timestamp 200 is not above the previous entry's 300", false},
		{"equal timestamps", timeBytes(timeEntry{100, 5}, timeEntry{100, 6}), 10,
			"corrupt index: entry 1 (of 2): timestamp 100 is not above the previous entry's 100", false},
		{"falling offsets", timeBytes(timeEntry{100, 6}, timeEntry{200, 5}), 10,
			"corrupt index: entry 1 (of 2): relative offset 5 is below the previous entry's 6", false},
		{"offset past the log", timeBytes(timeEntry{100, 5}, timeEntry{200, 11}), 10,
			"corrupt index: entry 1 (of 2): offset 11 is past the segment's last offset 10", false},
		{"entry in an empty segment", timeBytes(timeEntry{100, 0}), -1,
			"corrupt index: entry 0 (of 1): offset 0 is past the segment's last offset -1", false},
		{"negative timestamp", timeBytes(timeEntry{-1, 0}), 10,
			"corrupt index: entry 0 (of 1): negative timestamp -1", false},
		{"relative offset 0xFFFFFFFF", timeBytes(timeEntry{100, 0xFFFFFFFF}), math.MaxInt64,
			"corrupt index: entry 0 (of 1): relative offset 0xffffffff does not fit a signed 32-bit integer", false},
		{"trailing zero entry", timeBytes(timeEntry{100, 5}, timeEntry{0, 0}), 10,
			"corrupt index: entry 1 (of 2): timestamp 0 is not above the previous entry's 100", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
				name := indexName(dir, 0, ".timeindex")
				writeFile(t, fs, name, tc.data)
				x, err := OpenTime(fs, name, 0, 1024, false)
				if tc.openErr {
					require.EqualError(t, err, name+": "+tc.want)
					require.ErrorIs(t, err, ErrCorrupt)
					_, err = OpenTime(fs, name, 0, 1024, true)
					require.ErrorIs(t, err, ErrCorrupt)
					return
				}
				require.NoError(t, err)
				require.Equal(t, len(tc.data)/TimeEntrySize, x.Entries())
				err = x.Check(tc.maxOffset)
				if tc.want == "" {
					require.NoError(t, err)
				} else {
					require.EqualError(t, err, name+": "+tc.want)
					require.ErrorIs(t, err, ErrCorrupt)
				}
				for _, ts := range []int64{math.MinInt64, -1, 0, 150, math.MaxInt64} {
					x.LookupBefore(ts)
				}
				x.TruncateTo(3)
				x.Reset()
				require.NoError(t, x.Close())
			})
		})
	}
}

func TestTimeEmptyFile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 42, ".timeindex")
		writeFile(t, fs, name, nil)
		x, err := OpenTime(fs, name, 42, 1024, false)
		require.NoError(t, err)
		require.Equal(t, 0, x.Entries())
		require.NoError(t, x.Check(41))
		_, ok := x.LookupBefore(math.MaxInt64)
		require.False(t, ok)
		_, _, ok = x.LastEntry()
		require.False(t, ok)
		require.NoError(t, x.Close())
	})
}

// TestTimeLookupLarge covers lookups in and out of the warm tail that is searched first.
func TestTimeLookupLarge(t *testing.T) {
	const base, n = 1 << 32, 2000
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		x, err := OpenTime(fs, indexName(dir, base, ".timeindex"), base, (n+1)*TimeEntrySize, true)
		require.NoError(t, err)
		for i := range int64(n) {
			require.NoError(t, x.MaybeAppend(10*i+10, base+i/2))
		}
		require.NoError(t, x.Seal())
		require.NoError(t, x.Check(base+n/2))
		for ts := int64(0); ts <= 10*n+11; ts++ {
			off, ok := x.LookupBefore(ts)
			if ts <= 10 {
				require.False(t, ok, "LookupBefore(%d)", ts)
				continue
			}
			i := min((ts-11)/10, n-1)
			require.True(t, ok, "LookupBefore(%d)", ts)
			require.Equal(t, base+i/2, off, "LookupBefore(%d)", ts)
		}
		x.TruncateTo(base + 700)
		require.Equal(t, 1400, x.Entries())
		require.NoError(t, x.Close())
	})
}
