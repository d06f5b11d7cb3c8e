package fsys_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestMemoryRandomWritableMappings: as TestMemoryRandomMappings, with writable
// mappings written through (as the indexes are): the file, and every live mapping, show the
// model's bytes after each step.
func TestMemoryRandomWritableMappings(t *testing.T) {
	forEachModelSeed(t, 300, 7, func(t *testing.T, rng *rand.Rand, f fsys.File) {
		var model []byte
		type mp struct {
			m        fsys.Mapping
			writable bool
			exempt   bool // read-only, taken before a writable one: documented not to see its stores
		}
		var maps []mp
		sizes := []int{1, 100, 5000, 70000, 300000}
		rnd := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rng.IntN(255) + 1)
			}
			return p
		}
		for step := range 80 {
			mapped, writable := 0, false
			for _, x := range maps {
				mapped = max(mapped, len(x.m.Bytes()))
				writable = writable || x.writable
			}
			desc := ""
			switch op := rng.IntN(12); {
			case op < 3: // file write
				off := rng.IntN(len(model) + 3000)
				n := 1 + rng.IntN(sizes[rng.IntN(len(sizes))])
				desc = fmt.Sprintf("write %d@%d", n, off)
				p := rnd(n)
				_, err := f.WriteAt(p, int64(off))
				if off+n > len(model) && writable {
					require.Error(t, err, desc)
					break
				}
				require.NoError(t, err, desc)
				if off+n > len(model) {
					model = append(model, make([]byte, off+n-len(model))...)
				}
				copy(model[off:], p)
			case op < 5: // write through a writable mapping
				var w []byte
				for _, x := range maps {
					if x.writable {
						w = x.m.Bytes()
					}
				}
				if len(w) == 0 {
					break
				}
				off := rng.IntN(len(w))
				n := 1 + rng.IntN(len(w)-off)
				desc = fmt.Sprintf("mapped write %d@%d", n, off)
				p := rnd(n)
				copy(w[off:], p)
				copy(model[off:], p)
			case op < 7: // truncate
				size := rng.IntN(len(model) + sizes[rng.IntN(len(sizes))])
				if rng.IntN(2) == 0 {
					size = rng.IntN(len(model) + 1)
				}
				desc = fmt.Sprintf("truncate %d (from %d, mapped %d, writable %v)", size, len(model), mapped, writable)
				err := f.Truncate(int64(size))
				if size < mapped || (size > len(model) && writable) {
					require.Error(t, err, desc)
					break
				}
				require.NoError(t, err, desc)
				if size > len(model) {
					model = append(model, make([]byte, size-len(model))...)
				} else {
					model = model[:size]
				}
			case op < 10: // map
				if len(model) == 0 {
					break
				}
				size := 1 + rng.IntN(len(model))
				w := rng.IntN(3) == 0
				desc = fmt.Sprintf("map %d writable %v", size, w)
				x, err := f.Map(size, w)
				require.NoError(t, err, desc)
				if w {
					for i := range maps {
						maps[i].exempt = maps[i].exempt || !maps[i].writable
					}
				}
				maps = append(maps, mp{x, w, false})
			default:
				if len(maps) == 0 {
					break
				}
				i := rng.IntN(len(maps))
				desc = fmt.Sprintf("unmap %d", i)
				require.NoError(t, maps[i].m.Close())
				maps = append(maps[:i], maps[i+1:]...)
			}
			got := make([]byte, len(model))
			if len(model) > 0 {
				_, err := f.ReadAt(got, 0)
				require.NoError(t, err)
			}
			require.True(t, bytes.Equal(model, got), "step %d %s: file differs at %d", step, desc, firstDiff(model, got))
			for j, x := range maps {
				if x.exempt {
					continue
				}
				b := x.m.Bytes()
				require.True(t, bytes.Equal(model[:len(b)], b), "step %d %s: mapping %d (%d bytes, writable %v) differs at %d", step, desc, j, len(b), x.writable, firstDiff(model[:len(b)], b))
			}
		}
		for _, x := range maps {
			require.NoError(t, x.m.Close())
		}
	})
}
