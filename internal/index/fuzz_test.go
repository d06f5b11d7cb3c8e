package index

import (
	"flag"
	"math"
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

const fuzzBase = 1000

// fuzzBackends are the backends for fuzz inputs. A plain test run tries the seed corpus on every
// backend; fuzzing (-fuzz) uses the memory one only, as the index code that reads the bytes is the
// same on all, and truncating a real file costs about a millisecond, a hundred times the rest.
func fuzzBackends(f *testing.F) []func(t *testing.T) (fsys.FS, string) {
	fuzzing := false
	if fl := flag.Lookup("test.fuzz"); fl != nil {
		fuzzing = fl.Value.String() != ""
	}
	var fns []func(t *testing.T) (fsys.FS, string)
	for _, b := range backends {
		if fuzzing && b.name == "os" {
			continue
		}
		fns = append(fns, func(t *testing.T) (fsys.FS, string) { return b.open(t) })
	}
	return fns
}

// FuzzOffsetIndex opens any bytes as an offset index (seeds in testdata/fuzz/FuzzOffsetIndex).
// Nothing may panic; an index that passes Check must answer every Lookup with the last entry at or
// below the target; a corrupt index opened writable must rebuild after Reset.
func FuzzOffsetIndex(f *testing.F) {
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, data []byte, logSize, target int64) {
		for _, open := range backends {
			fs, dir := open(t)
			name := indexName(dir, fuzzBase, ".index")
			writeFile(t, fs, name, data)
			x, err := OpenOffset(fs, name, fuzzBase, 0, false)
			if len(data)%OffsetEntrySize != 0 {
				require.ErrorIs(t, err, ErrCorrupt)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, len(data)/OffsetEntrySize, x.Entries())

			targets := []int64{target, math.MinInt64, fuzzBase - 1, fuzzBase, math.MaxInt64}
			for i := range min(x.Entries(), 64) {
				off, _ := x.Entry(i)
				targets = append(targets, off-1, off, off+1)
			}
			valid := x.Check(logSize) == nil
			for _, target := range targets {
				off, pos := x.Lookup(target)
				if !valid {
					continue
				}
				wantOff, wantPos := refLookup(x, target)
				require.Equal(t, [2]int64{wantOff, wantPos}, [2]int64{off, pos}, "Lookup(%d)", target)
				require.True(t, off <= target || (off == fuzzBase && pos == 0), "Lookup(%d) = %d", target, off)
				require.True(t, pos < logSize || (off == fuzzBase && pos == 0))
			}
			x.TruncateTo(target)
			x.Reset()
			require.NoError(t, x.Close())

			// The caller's recovery: open writable, and rebuild when Check fails.
			x, err = OpenOffset(fs, name, fuzzBase, len(data)+64, true)
			require.NoError(t, err)
			if x.Check(logSize) != nil {
				x.Reset()
				require.NoError(t, x.Append(fuzzBase+1, 0))
				require.NoError(t, x.Append(fuzzBase+9, 4096))
			}
			want := x.Entries()
			require.NoError(t, x.Close())
			x, err = OpenOffset(fs, name, fuzzBase, 0, false)
			require.NoError(t, err)
			require.Equal(t, want, x.Entries())
			require.NoError(t, x.Check(max(logSize, 4097)))
			require.NoError(t, x.Close())
		}
	})
}

// FuzzTimeIndex opens any bytes as a time index (seeds in testdata/fuzz/FuzzTimeIndex). Nothing
// may panic; an index that passes Check must answer every LookupBefore with the last entry below
// the target; a corrupt index opened writable must rebuild after Reset.
func FuzzTimeIndex(f *testing.F) {
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, data []byte, maxOffset, target int64) {
		for _, open := range backends {
			fs, dir := open(t)
			name := indexName(dir, fuzzBase, ".timeindex")
			writeFile(t, fs, name, data)
			x, err := OpenTime(fs, name, fuzzBase, 0, false)
			if len(data)%TimeEntrySize != 0 {
				require.ErrorIs(t, err, ErrCorrupt)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, len(data)/TimeEntrySize, x.Entries())

			targets := []int64{target, math.MinInt64, -1, 0, math.MaxInt64}
			for i := range min(x.Entries(), 64) {
				ts, _ := x.Entry(i)
				targets = append(targets, ts-1, ts, ts+1)
			}
			valid := x.Check(maxOffset) == nil
			for _, ts := range targets {
				off, ok := x.LookupBefore(ts)
				if !valid {
					continue
				}
				wantOff, wantOK := refLookupBefore(x, ts)
				require.Equal(t, wantOK, ok, "LookupBefore(%d)", ts)
				require.Equal(t, wantOff, off, "LookupBefore(%d)", ts)
				if ok {
					require.True(t, off >= fuzzBase && off <= maxOffset)
				}
			}
			x.TruncateTo(target)
			x.Reset()
			require.NoError(t, x.Close())

			x, err = OpenTime(fs, name, fuzzBase, len(data)+64, true)
			require.NoError(t, err)
			if x.Check(maxOffset) != nil {
				x.Reset()
				require.NoError(t, x.MaybeAppend(100, fuzzBase))
				require.NoError(t, x.MaybeAppend(50, fuzzBase+1))
				require.NoError(t, x.MaybeAppend(200, fuzzBase+2))
			}
			want := x.Entries()
			require.NoError(t, x.Close())
			x, err = OpenTime(fs, name, fuzzBase, 0, false)
			require.NoError(t, err)
			require.Equal(t, want, x.Entries())
			require.NoError(t, x.Check(max(maxOffset, fuzzBase+2)))
			require.NoError(t, x.Close())
		}
	})
}
