package fsys_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// forEachModelSeed runs fn as a subtest per seed (20 under -short and the race detector) with a
// source of randomness seeded by seed and stream and a file "f" of a new memory file system.
func forEachModelSeed(t *testing.T, seeds, stream uint64, fn func(t *testing.T, rng *rand.Rand, f fsys.File)) {
	t.Helper()
	if testing.Short() || raceEnabled {
		seeds = 20
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, stream))
			f, err := fsys.NewMemory().OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			defer f.Close()
			fn(t, rng, f)
		})
	}
}

// TestMemoryRandomMappings drives a memory file with random writes, truncations (grow as
// preallocation, large and small, and shrink), read-only maps and unmaps, and checks after every
// step that the file and every live read-only mapping show the model's bytes (a shared mapping
// shows the file's current bytes in its range).
func TestMemoryRandomMappings(t *testing.T) {
	forEachModelSeed(t, 200, 99, func(t *testing.T, rng *rand.Rand, f fsys.File) {
		var model []byte
		var maps []fsys.Mapping
		sizes := []int{1, 100, 5000, 70000, 300000, 600000}
		for step := range 60 {
			mapped := 0
			for _, mp := range maps {
				mapped = max(mapped, len(mp.Bytes()))
			}
			op := rng.IntN(10)
			desc := ""
			switch {
			case op < 4: // write
				off := rng.IntN(len(model) + 5000)
				n := 1 + rng.IntN(sizes[rng.IntN(len(sizes))])
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(rng.IntN(255) + 1)
				}
				desc = fmt.Sprintf("write %d@%d", n, off)
				_, err := f.WriteAt(p, int64(off))
				require.NoError(t, err, desc)
				if off+n > len(model) {
					model = append(model, make([]byte, off+n-len(model))...)
				}
				copy(model[off:], p)
			case op < 6: // truncate
				size := rng.IntN(len(model) + sizes[rng.IntN(len(sizes))])
				if rng.IntN(2) == 0 {
					size = rng.IntN(len(model) + 1)
				}
				desc = fmt.Sprintf("truncate %d (from %d, mapped %d)", size, len(model), mapped)
				err := f.Truncate(int64(size))
				if size < mapped {
					require.Error(t, err, desc)
					break
				}
				require.NoError(t, err, desc)
				if size > len(model) {
					model = append(model, make([]byte, size-len(model))...)
				} else {
					model = model[:size]
				}
			case op < 8: // map
				if len(model) == 0 {
					break
				}
				size := 1 + rng.IntN(len(model))
				desc = fmt.Sprintf("map %d", size)
				mp, err := f.Map(size, false)
				require.NoError(t, err, desc)
				maps = append(maps, mp)
			default: // unmap
				if len(maps) == 0 {
					break
				}
				i := rng.IntN(len(maps))
				desc = fmt.Sprintf("unmap %d", i)
				require.NoError(t, maps[i].Close())
				maps = append(maps[:i], maps[i+1:]...)
			}
			sz, err := f.Size()
			require.NoError(t, err)
			require.Equal(t, int64(len(model)), sz, "step %d %s", step, desc)
			got := make([]byte, len(model))
			if len(model) > 0 {
				_, err = f.ReadAt(got, 0)
				require.NoError(t, err)
			}
			require.True(t, bytes.Equal(model, got), "step %d %s: file bytes differ at %d", step, desc, firstDiff(model, got))
			for j, mp := range maps {
				b := mp.Bytes()
				require.True(t, bytes.Equal(model[:len(b)], b), "step %d %s: mapping %d (%d bytes) differs at %d", step, desc, j, len(b), firstDiff(model[:len(b)], b))
			}
		}
		for _, mp := range maps {
			require.NoError(t, mp.Close())
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMemoryRemoveWhileMapped: a mapping outlives its file's removal and close, with the
// bytes it had, and the memory FS recreates the name as a new, empty file.
func TestMemoryRemoveWhileMapped(t *testing.T) {
	m := fsys.NewMemory()
	f, err := m.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<20)) // sparse preallocation
	_, err = f.WriteAt([]byte("hello"), 10)
	require.NoError(t, err)
	mp, err := f.Map(1<<20, false)
	require.NoError(t, err)
	require.NoError(t, m.Remove("f"))
	require.NoError(t, f.Close())
	g, err := m.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = g.WriteAt([]byte("world"), 10)
	require.NoError(t, err)
	require.Equal(t, "hello", string(mp.Bytes()[10:15]))
	require.NoError(t, mp.Close())
	require.NoError(t, g.Close())
}
