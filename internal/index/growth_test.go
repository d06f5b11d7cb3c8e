package index

import (
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// TestOffsetGrowth: a new writable offset index is an empty file, unmapped, until its first
// entry; it then starts at a page and doubles, up to maxBytes rounded down to whole entries,
// keeping every entry through each remap; at its capacity it is full.
func TestOffsetGrowth(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 100, ".index")
		const maxBytes = 20003 // 2500 entries
		x, err := OpenOffset(fs, name, 100, maxBytes, true)
		require.NoError(t, err)
		require.Equal(t, int64(0), fileSize(t, fs, name))
		require.Nil(t, x.m.m)
		steps := map[int]int64{1: 4096, 512: 4096, 513: 8192, 1024: 8192, 1025: 16384, 2048: 16384, 2049: 20000, 2500: 20000}
		for i := range 2500 {
			require.False(t, x.Full(), "entry %d", i)
			require.NoError(t, x.Append(100+int64(i)*3, int64(i)*1000))
			if want, ok := steps[i+1]; ok {
				require.Equal(t, want, fileSize(t, fs, name), "%d entries", i+1)
			}
		}
		require.True(t, x.Full())
		require.ErrorIs(t, x.Append(100+2500*3, 2500*1000), ErrFull)
		require.Equal(t, 2500, x.Entries())
		for _, i := range []int{0, 511, 512, 1024, 2048, 2499} {
			off, pos := x.Entry(i)
			require.Equal(t, [2]int64{100 + int64(i)*3, int64(i) * 1000}, [2]int64{off, pos})
		}
		require.NoError(t, x.Check(2500*1000))
		require.NoError(t, x.Close())
		require.Equal(t, int64(2500*OffsetEntrySize), fileSize(t, fs, name))

		// Reopened writable with a larger maximum, a trimmed index keeps its entries, is mapped
		// at its size, and grows a step past it at the next append.
		y, err := OpenOffset(fs, name, 100, 1<<20, true)
		require.NoError(t, err)
		require.Equal(t, int64(20000), fileSize(t, fs, name))
		require.Equal(t, 2500, y.Entries())
		require.False(t, y.Full())
		require.NoError(t, y.Reserve(1))
		require.Equal(t, int64(40000), fileSize(t, fs, name))
		require.NoError(t, y.Append(100+2500*3, 2500*1000))
		off, pos, ok := y.LastEntry()
		require.True(t, ok)
		require.Equal(t, [2]int64{100 + 2500*3, 2500 * 1000}, [2]int64{off, pos})
		require.NoError(t, y.Close())
		require.Equal(t, int64(2501*OffsetEntrySize), fileSize(t, fs, name))
	})
}

// TestTimeGrowth: a writable time index grows by steps of whole 12-byte entries; Reserve grows it
// ahead of the entries it is asked for, and for the one a roll appends, so that the entry of the
// roll needs no remap.
func TestTimeGrowth(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 0, ".timeindex")
		x, err := OpenTime(fs, name, 0, 10000, true) // 833 entries
		require.NoError(t, err)
		require.Equal(t, int64(0), fileSize(t, fs, name))
		require.NoError(t, x.Reserve(1))
		require.Equal(t, int64(4092), fileSize(t, fs, name))
		require.NoError(t, x.Reserve(341)) // 341 entries fill 4092 bytes; the roll's needs more
		require.Equal(t, int64(8184), fileSize(t, fs, name))
		for i := range 832 {
			require.False(t, x.Full(), "entry %d", i)
			require.NoError(t, x.MaybeAppend(1000+int64(i), int64(i)))
		}
		require.Equal(t, int64(9996), fileSize(t, fs, name))
		require.True(t, x.Full()) // one slot left, for the roll
		require.NoError(t, x.MaybeAppend(5000, 900))
		require.ErrorIs(t, x.MaybeAppend(5001, 901), ErrFull)
		require.Equal(t, 833, x.Entries())
		require.NoError(t, x.Check(901))
		ts, off := x.Entry(400)
		require.Equal(t, [2]int64{1400, 400}, [2]int64{ts, off})
		require.NoError(t, x.Close())
		require.Equal(t, int64(833*TimeEntrySize), fileSize(t, fs, name))
	})
}

// TestIndexGrownCrash: a crash leaves a grown index at its last step's size, its bytes past the
// entries zero: Check reports the first zero entry, as for Kafka's preallocated file.
func TestIndexGrownCrash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs fsys.FS, dir string) {
		name := indexName(dir, 0, ".index")
		x, err := OpenOffset(fs, name, 0, 1<<20, true)
		require.NoError(t, err)
		for i := range 600 {
			require.NoError(t, x.Append(int64(i)+1, int64(i+1)*10))
		}
		require.NoError(t, x.Sync())
		crashed := indexName(dir, 1, ".index")
		writeFile(t, fs, crashed, readFile(t, fs, name))
		require.NoError(t, x.Close())

		y, err := OpenOffset(fs, crashed, 0, 1<<20, true)
		require.NoError(t, err)
		require.Equal(t, 1024, y.Entries())
		require.EqualError(t, y.Check(6010), crashed+": corrupt index: entry 600 (of 1024): relative offset 0 is not above the previous entry's 600")
		y.Reset()
		require.Equal(t, 0, y.Entries())
		require.False(t, y.Full())
		require.NoError(t, y.Close())
		require.Equal(t, int64(0), fileSize(t, fs, crashed))
	})
}
