package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
)

// Rec is one record as the harness hands it to an adapter. Key and Value belong to the caller
// and are valid only during the call; an adapter that keeps them copies them.
type Rec struct {
	Key   []byte
	Value []byte
	// Time is the record's timestamp in Unix milliseconds, or 0 for "now" (the synthetic
	// workloads); only systems that store a timestamp per record use it.
	Time int64
}

// keySize is the size of every synthetic key: the record's number, big-endian, then keyTag.
const keySize = 16

// keyTag is the second half of every synthetic key.
const keyTag = "benchkey"

// slabSize is the size of the random bytes that synthetic values are cut from.
const slabSize = 64 << 10

// Gen makes the synthetic records: record i has the key BE64(i)+"benchkey" and a value of
// valueSize bytes cut from a seeded random slab at a position derived from i, so every record's
// exact bytes can be recomputed from its number and nothing is generated in the timed loops but
// an 8-byte key.
type Gen struct {
	valueSize int
	slab      []byte
}

// NewGen returns the generator for values of valueSize bytes.
func NewGen(valueSize int) *Gen {
	rng := rand.New(rand.NewPCG(7, 11))
	slab := make([]byte, slabSize+valueSize)
	for i := range slab {
		slab[i] = byte(rng.Uint32())
	}
	return &Gen{valueSize: valueSize, slab: slab}
}

// Value returns record i's value (a view of the slab: not to be modified).
func (g *Gen) Value(i int64) []byte {
	p := int(uint64(i)*7919) % slabSize
	return g.slab[p : p+g.valueSize : p+g.valueSize]
}

// PutKey writes record i's key into dst (keySize bytes) and returns it.
func PutKey(dst []byte, i int64) []byte {
	dst = dst[:keySize]
	binary.BigEndian.PutUint64(dst, uint64(i))
	copy(dst[8:], keyTag)
	return dst
}

// Batch fills recs with records first, first+1, ...: keys are written into keys (keySize bytes
// a record), values are views of the slab.
func (g *Gen) Batch(recs []Rec, keys []byte, first int64) {
	for j := range recs {
		i := first + int64(j)
		recs[j] = Rec{Key: PutKey(keys[j*keySize:], i), Value: g.Value(i)}
	}
}

// Check verifies that key and value are record i's, exactly. Read loops call it for every record
// so that no adapter can skip the bytes it claims to have read.
func (g *Gen) Check(i int64, key, value []byte) error {
	if len(key) != keySize || binary.BigEndian.Uint64(key) != uint64(i) || string(key[8:]) != keyTag {
		return fmt.Errorf("record read back differs from the one written: record %d has key %x", i, key)
	}
	if string(value) != string(g.Value(i)) {
		return fmt.Errorf("record read back differs from the one written: record %d has a value of %d bytes that differs", i, len(value))
	}
	return nil
}

// AppendFrame appends the framing the systems without keys store as one entry: the key's
// length as a uvarint, the key, the value.
func AppendFrame(dst []byte, r *Rec) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	return append(dst, r.Value...)
}

// FrameSize returns the size of r's frame.
func FrameSize(r *Rec) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], uint64(len(r.Key))) + len(r.Key) + len(r.Value)
}

// SplitFrame returns the key and value of a frame (views of it).
func SplitFrame(frame []byte) (key, value []byte, err error) {
	n, w := binary.Uvarint(frame)
	if w <= 0 || uint64(len(frame)-w) < n {
		return nil, nil, errors.New("entry is not a key/value frame")
	}
	return frame[w : w+int(n)], frame[w+int(n):], nil
}

// Frames encodes recs into one slab (reusing buf) and returns the frames, views of it (reusing
// out).
func Frames(buf []byte, out [][]byte, recs []Rec) ([]byte, [][]byte) {
	n := 0
	for i := range recs {
		n += FrameSize(&recs[i])
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	buf = buf[:0]
	out = out[:0]
	for i := range recs {
		start := len(buf)
		buf = AppendFrame(buf, &recs[i])
		out = append(out, buf[start:len(buf):len(buf)])
	}
	return buf, out
}
