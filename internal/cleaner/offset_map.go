package cleaner

import (
	"bytes"
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// LoadFactor is the most a map's slots are filled, Kafka's log.cleaner.io.buffer.load.factor.
const LoadFactor = 0.9

// slotBytes is what one slot takes: hash, offset, key position and key length + 1.
const slotBytes = 24

// minSlots is the table a map starts with.
const minSlots = 1 << 10

type slot struct {
	hash   uint64
	offset int64
	keyPos uint32
	keyLen uint32 // key length + 1; 0: empty slot
}

// OffsetMap maps keys to the latest offset a clean has seen them at, within a memory budget: the
// offset map of Kafka's Cleaner.buildOffsetMap (SkimpyOffsetMap), but keyed by the key's bytes
// rather than a digest (see the package documentation for why collisions then lose nothing).
// Its table of slots (24 bytes each, open addressing with linear probing, filled to LoadFactor)
// and its arena of key bytes grow as keys come, up to the budget given to NewOffsetMap, which
// they never pass. The zero value is not usable. Not safe for concurrent use.
type OffsetMap struct {
	slots    []slot
	arena    []byte
	len      int
	latest   int64
	maxSlots int // the table's largest size
	maxArena int // the arena's largest size, bytes
}

// NewOffsetMap returns an empty map that holds at most memory bytes of slots and keys together
// (one cleaner thread's share of log.cleaner.dedupe.buffer.size), split for keys of
// splitKeyBytes bytes: a key then costs slotBytes/LoadFactor bytes of table and its length of
// arena, and the budget holds as many keys of that length as it can. Longer keys fill the arena
// first, shorter ones the table; either way the map refuses a key once either is full. Nothing is
// allocated until the first Put. A memory below 256 bytes is taken as 256.
func NewOffsetMap(memory int) *OffsetMap {
	memory = max(memory, 256)
	perKey := slotBytes/LoadFactor + splitKeyBytes
	maxSlots := max(int(float64(memory)*(slotBytes/LoadFactor)/perKey)/slotBytes, 2)
	return &OffsetMap{latest: -1, maxSlots: maxSlots, maxArena: memory - maxSlots*slotBytes}
}

// splitKeyBytes is the key length NewOffsetMap divides its budget for: 16 bytes (a UUID, an
// 8-byte id with a prefix).
const splitKeyBytes = 16

// slotOf returns where hash h starts probing in a table of n slots (Lemire's multiply-shift
// reduction: any n, no modulo).
func slotOf(h uint64, n int) int {
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}

// Len returns the number of keys held.
func (m *OffsetMap) Len() int { return m.len }

// LatestOffset returns the largest offset Put since the last Reset, -1 when none.
func (m *OffsetMap) LatestOffset() int64 { return m.latest }

// UpdateLatestOffset raises LatestOffset to offset: the end of the range the map covers, minus
// one, when its last batches held no key (Kafka's OffsetMap.updateLatestOffset), so that a
// Filter treats every record of the range as mapped.
func (m *OffsetMap) UpdateLatestOffset(offset int64) { m.latest = max(m.latest, offset) }

// MemoryBytes returns the bytes the map holds allocated: its table and its arena.
func (m *OffsetMap) MemoryBytes() int { return len(m.slots)*slotBytes + cap(m.arena) }

// Reset empties the map, keeping its memory for the next pass.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.arena = m.arena[:0]
	m.len = 0
	m.latest = -1
}

// maxEntries is how many keys a table of n slots holds.
func maxEntries(n int) int { return int(float64(n) * LoadFactor) }

// Fits reports whether keys new keys of keyBytes bytes in total are sure to fit.
func (m *OffsetMap) Fits(keys, keyBytes int) bool {
	return m.len+keys <= maxEntries(m.maxSlots) && len(m.arena)+keyBytes <= m.maxArena
}

// find returns the index of key's slot, or of the empty slot where it would go.
func (m *OffsetMap) find(key []byte, h uint64) int {
	n := len(m.slots)
	for i := slotOf(h, n); ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.keyLen == 0 {
			return i
		}
		if s.hash == h && int(s.keyLen-1) == len(key) && bytes.Equal(m.arena[s.keyPos:s.keyPos+s.keyLen-1], key) {
			return i
		}
	}
}

// Get returns the offset held for key, and whether the map holds key.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	if m.len == 0 {
		return 0, false
	}
	s := &m.slots[m.find(key, xxhash.Sum64(key))]
	if s.keyLen == 0 {
		return 0, false
	}
	return s.offset, true
}

// Put records offset as key's latest: a key already held takes offset when it is larger (a
// clean reads batches in offset order), a new key is added. It returns false, the map unchanged,
// when a new key does not fit the budget.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h := xxhash.Sum64(key)
	if m.len > 0 {
		if s := &m.slots[m.find(key, h)]; s.keyLen != 0 {
			s.offset = max(s.offset, offset)
			m.latest = max(m.latest, offset)
			return true
		}
	}
	if !m.Fits(1, len(key)) {
		return false
	}
	if m.len+1 > maxEntries(len(m.slots)) {
		m.grow()
	}
	if len(m.arena)+len(key) > cap(m.arena) {
		n := min(max(2*cap(m.arena), len(m.arena)+len(key), 4<<10), m.maxArena)
		a := make([]byte, len(m.arena), n)
		copy(a, m.arena)
		m.arena = a
	}
	i := m.find(key, h)
	m.slots[i] = slot{hash: h, offset: offset, keyPos: uint32(len(m.arena)), keyLen: uint32(len(key)) + 1}
	m.arena = append(m.arena, key...)
	m.len++
	m.latest = max(m.latest, offset)
	return true
}

// grow doubles the table (Fits has made sure the largest one has room).
func (m *OffsetMap) grow() {
	n := min(max(2*len(m.slots), minSlots), m.maxSlots)
	old := m.slots
	m.slots = make([]slot, n)
	for _, s := range old {
		if s.keyLen == 0 {
			continue
		}
		i := slotOf(s.hash, n)
		for m.slots[i].keyLen != 0 {
			if i++; i == n {
				i = 0
			}
		}
		m.slots[i] = s
	}
}

// AddBatch puts every keyed record of the batch at the start of batch in the map at its offset
// (Kafka's Cleaner.buildOffsetMapForSegment, one batch): all of them, or, when the batch's keys
// might not fit, none, and then it returns false. Control batches and records without a key put
// nothing. d decodes the batch (its CRC and records are checked); errors are its, wrapping
// recordbatch.ErrCorrupt for a damaged batch.
func (m *OffsetMap) AddBatch(d *recordbatch.Decoder, batch []byte) (added bool, err error) {
	b, err := d.Decode(batch)
	if err != nil {
		return false, err
	}
	if b.Attributes.Control() {
		return true, nil
	}
	keys, keyBytes := 0, 0
	for r := range b.Records() {
		if r.Key != nil {
			keys++
			keyBytes += len(r.Key)
		}
	}
	if !m.Fits(keys, keyBytes) {
		return false, nil
	}
	for r := range b.Records() {
		if r.Key != nil {
			m.Put(r.Key, b.RecordOffset(&r))
		}
	}
	return true, nil
}
