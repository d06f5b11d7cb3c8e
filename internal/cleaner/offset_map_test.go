package cleaner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

func TestOffsetMapPutGet(t *testing.T) {
	m := NewOffsetMap(64 << 10)
	require.Equal(t, int64(-1), m.LatestOffset())
	_, ok := m.Get(b("a"))
	require.False(t, ok)
	require.Equal(t, 0, m.MemoryBytes(), "nothing allocated before the first Put")

	require.True(t, m.Put(b("a"), 5))
	require.True(t, m.Put(b("b"), 3))
	require.True(t, m.Put(b(""), 7)) // an empty key is a key
	require.Equal(t, 3, m.Len())
	for _, c := range []struct {
		key string
		off int64
	}{{"a", 5}, {"b", 3}, {"", 7}} {
		off, ok := m.Get(b(c.key))
		require.True(t, ok, c.key)
		require.Equal(t, c.off, off, c.key)
	}
	_, ok = m.Get(b("c"))
	require.False(t, ok)
	_, ok = m.Get(b("ab"))
	require.False(t, ok)
	require.Equal(t, int64(7), m.LatestOffset())
}

func TestOffsetMapPutRaisesNeverLowers(t *testing.T) {
	m := NewOffsetMap(64 << 10)
	require.True(t, m.Put(b("k"), 10))
	require.True(t, m.Put(b("k"), 4))
	off, _ := m.Get(b("k"))
	require.Equal(t, int64(10), off)
	require.True(t, m.Put(b("k"), 12))
	off, _ = m.Get(b("k"))
	require.Equal(t, int64(12), off)
	require.Equal(t, 1, m.Len())
	require.Equal(t, int64(12), m.LatestOffset())

	m.UpdateLatestOffset(20)
	require.Equal(t, int64(20), m.LatestOffset())
	m.UpdateLatestOffset(15)
	require.Equal(t, int64(20), m.LatestOffset())
}

// capacity returns the most keys and key bytes an empty map of memory bytes says Fits.
func capacity(memory int) (keys, keyBytes int) {
	m := NewOffsetMap(memory)
	for m.Fits(keys+1, 0) {
		keys++
	}
	for m.Fits(1, keyBytes+1) {
		keyBytes++
	}
	return keys, keyBytes
}

func TestOffsetMapFullRefuses(t *testing.T) {
	m := NewOffsetMap(4 << 10)
	keys, _ := capacity(4 << 10)
	n := 0
	for ; ; n++ {
		k := []byte(fmt.Sprintf("key-%04d", n))
		fits := m.Fits(1, len(k))
		require.Equal(t, fits, m.Put(k, int64(n)), "Put adds exactly when Fits says so")
		if !fits {
			break
		}
	}
	require.Equal(t, keys, n, "the table filled to LoadFactor")
	require.Equal(t, n, m.Len())
	require.False(t, m.Fits(1, 0))
	require.True(t, m.Fits(0, 0))

	refused := []byte(fmt.Sprintf("key-%04d", n))
	require.False(t, m.Put(refused, 1000))
	require.Equal(t, n, m.Len())
	require.Equal(t, int64(n-1), m.LatestOffset(), "a refused Put leaves the latest offset")
	_, ok := m.Get(refused)
	require.False(t, ok)
	for i := range n {
		off, ok := m.Get([]byte(fmt.Sprintf("key-%04d", i)))
		require.True(t, ok)
		require.Equal(t, int64(i), off)
	}
	// A held key still takes a larger offset when the map is full.
	require.True(t, m.Put(b("key-0000"), 500))
	off, _ := m.Get(b("key-0000"))
	require.Equal(t, int64(500), off)
	require.Equal(t, n, m.Len())
	require.LessOrEqual(t, m.MemoryBytes(), 4<<10)
}

func TestOffsetMapFullArenaRefuses(t *testing.T) {
	m := NewOffsetMap(4 << 10)
	_, arena := capacity(4 << 10)
	require.Greater(t, arena, 1000)
	big := make([]byte, arena-10)
	require.True(t, m.Put(big, 1))
	require.True(t, m.Fits(1, 10))
	require.False(t, m.Fits(1, 11))
	require.False(t, m.Put(b("eleven byte"), 2))
	require.Equal(t, 1, m.Len())
	require.True(t, m.Put(b("ten bytes!"), 3))
	require.False(t, m.Put(b("x"), 4))
	require.Equal(t, 2, m.Len())
	require.True(t, m.Put(b(""), 5), "an empty key takes no arena")
	require.Equal(t, 3, m.Len())
	require.LessOrEqual(t, m.MemoryBytes(), 4<<10)
}

func TestOffsetMapFits(t *testing.T) {
	keys, arena := capacity(4 << 10)
	require.Positive(t, keys)
	// The budget holds the table and the arena: at 24 bytes a slot, filled to LoadFactor.
	require.LessOrEqual(t, int(float64(keys)/LoadFactor)*24+arena, 4<<10)
	m := NewOffsetMap(4 << 10)
	require.True(t, m.Fits(keys, arena))
	require.False(t, m.Fits(keys+1, 0))
	require.False(t, m.Fits(1, arena+1))
	require.True(t, m.Put(b("abc"), 0))
	require.True(t, m.Fits(keys-1, arena-3))
	require.False(t, m.Fits(keys, 0))
	require.False(t, m.Fits(1, arena-2))
}

func TestOffsetMapReset(t *testing.T) {
	m := NewOffsetMap(1 << 20)
	for i := range 5000 {
		require.True(t, m.Put([]byte(fmt.Sprint(i)), int64(i)))
	}
	mem := m.MemoryBytes()
	require.Positive(t, mem)
	m.Reset()
	require.Equal(t, 0, m.Len())
	require.Equal(t, int64(-1), m.LatestOffset())
	require.Equal(t, mem, m.MemoryBytes(), "Reset keeps the memory")
	_, ok := m.Get(b("1"))
	require.False(t, ok)
	require.True(t, m.Put(b("1"), 3))
	off, ok := m.Get(b("1"))
	require.True(t, ok)
	require.Equal(t, int64(3), off)
	require.Equal(t, mem, m.MemoryBytes())
	allocs := testing.AllocsPerRun(10, func() {
		m.Reset()
		for i := range 5000 {
			m.Put([]byte{byte(i), byte(i >> 8)}, int64(i))
		}
	})
	require.Zero(t, allocs, "a reset map refills without allocating")
}

func TestOffsetMapMemoryWithinBudget(t *testing.T) {
	for _, budget := range []int{0, 256, 1000, 4 << 10, 10000, 100 << 10, 1 << 20} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(budget), 1))
			m := NewOffsetMap(budget)
			held := map[string]int64{}
			limit := max(budget, 256)
			for refusals := 0; refusals < 50; {
				k := make([]byte, rnd.IntN(200))
				for i := range k {
					k[i] = byte(rnd.UintN(256))
				}
				off := int64(len(held))
				if _, dup := held[string(k)]; dup {
					continue
				}
				if !m.Put(k, off) {
					refusals++
					_, ok := m.Get(k)
					require.False(t, ok)
				} else {
					held[string(k)] = off
				}
				require.LessOrEqual(t, m.MemoryBytes(), limit)
			}
			require.Equal(t, len(held), m.Len())
			for k, off := range held {
				got, ok := m.Get([]byte(k))
				require.True(t, ok)
				require.Equal(t, off, got)
			}
		})
	}
}

// collides reports whether key's xxhash probes from slot 0 of a small table, whether the slot
// is taken from the hash's low bits (h & (n-1), n a power of two up to 64) or its high ones
// (multiply-shift, n up to 128).
func collides(k []byte) bool {
	h := xxhash.Sum64(k)
	return h&63 == 0 && h>>57 == 0
}

// TestOffsetMapCollidingKeys puts keys whose xxhash all probe from the same slot of a 4 KiB
// map's table: they must stay distinct, each with its own offset.
func TestOffsetMapCollidingKeys(t *testing.T) {
	m := NewOffsetMap(4 << 10)
	var keys [][]byte
	for i := 0; len(keys) < 40; i++ {
		k := []byte(fmt.Sprintf("c%d", i))
		if collides(k) {
			keys = append(keys, k)
		}
	}
	for i, k := range keys {
		require.True(t, m.Put(k, int64(100+i)))
	}
	require.Equal(t, len(keys), m.Len())
	for i, k := range keys {
		off, ok := m.Get(k)
		require.True(t, ok, string(k))
		require.Equal(t, int64(100+i), off, string(k))
	}
	// Raising one leaves the others.
	require.True(t, m.Put(keys[5], 999))
	for i, k := range keys {
		off, _ := m.Get(k)
		want := int64(100 + i)
		if i == 5 {
			want = 999
		}
		require.Equal(t, want, off)
	}
	// A key colliding with them but not put is absent.
	for i := 0; ; i++ {
		k := []byte(fmt.Sprintf("absent%d", i))
		if collides(k) {
			_, ok := m.Get(k)
			require.False(t, ok)
			break
		}
	}
}

func TestOffsetMapAddBatch(t *testing.T) {
	var d recordbatch.Decoder
	batch := build(t, header(10),
		rec{0, 1000, b("a"), b("1")},
		rec{1, 1001, nil, b("keyless")},
		rec{2, 1002, b("b"), nil},
		rec{4, 1004, b("a"), b("2")},
	)
	m := NewOffsetMap(64 << 10)
	added, err := m.AddBatch(&d, batch)
	require.NoError(t, err)
	require.True(t, added)
	require.Equal(t, 2, m.Len(), "the keyless record adds nothing")
	off, _ := m.Get(b("a"))
	require.Equal(t, int64(14), off)
	off, _ = m.Get(b("b"))
	require.Equal(t, int64(12), off)
	require.Equal(t, int64(14), m.LatestOffset())

	t.Run("keyless only", func(t *testing.T) {
		m := NewOffsetMap(64 << 10)
		added, err := m.AddBatch(&d, build(t, header(0), rec{0, 1, nil, b("v")}))
		require.NoError(t, err)
		require.True(t, added)
		require.Equal(t, 0, m.Len())
		require.Equal(t, int64(-1), m.LatestOffset())
	})

	t.Run("control", func(t *testing.T) {
		h := header(3)
		h.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
		h.ProducerID, h.ProducerEpoch = 9, 0
		ctl := build(t, h, rec{0, 1, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 0}})
		m := NewOffsetMap(64 << 10)
		added, err := m.AddBatch(&d, ctl)
		require.NoError(t, err)
		require.True(t, added)
		require.Equal(t, 0, m.Len())
		require.Equal(t, int64(-1), m.LatestOffset())
	})

	t.Run("all or nothing", func(t *testing.T) {
		m := NewOffsetMap(4 << 10)
		keys, _ := capacity(4 << 10)
		for i := range keys - 2 {
			require.True(t, m.Put([]byte(fmt.Sprint("held", i)), int64(i)))
		}
		three := build(t, header(100), rec{0, 1, b("x"), b("1")}, rec{1, 1, b("y"), b("1")}, rec{2, 1, b("z"), b("1")})
		added, err := m.AddBatch(&d, three)
		require.NoError(t, err)
		require.False(t, added)
		require.Equal(t, keys-2, m.Len())
		require.Equal(t, int64(keys-3), m.LatestOffset())
		for _, k := range []string{"x", "y", "z"} {
			_, ok := m.Get(b(k))
			require.False(t, ok, k)
		}
		two := build(t, header(100), rec{0, 1, b("x"), b("1")}, rec{1, 1, b("y"), b("1")})
		added, err = m.AddBatch(&d, two)
		require.NoError(t, err)
		require.True(t, added)
		require.Equal(t, keys, m.Len())
		require.Equal(t, int64(101), m.LatestOffset())
	})

	t.Run("corrupt", func(t *testing.T) {
		bad := append([]byte(nil), batch...)
		bad[len(bad)-1] ^= 0xff // a record byte: the CRC no longer matches
		m := NewOffsetMap(64 << 10)
		added, err := m.AddBatch(&d, bad)
		require.ErrorIs(t, err, recordbatch.ErrCorrupt)
		require.False(t, added)
		require.Equal(t, 0, m.Len())
		require.True(t, errors.Is(err, recordbatch.ErrCorrupt))
	})
}
