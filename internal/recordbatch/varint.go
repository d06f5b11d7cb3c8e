package recordbatch

import "math/bits"

// Kafka's record fields use zigzag varints (org.apache.kafka.common.utils.ByteUtils): the signed
// value is zigzag-mapped so small negative numbers stay short, then written 7 bits at a time,
// least significant group first, with the high bit of each byte marking that another follows.
// A varint holds an int32 in at most 5 bytes, a varlong an int64 in at most 10.

const (
	maxVarintLen  = 5
	maxVarlongLen = 10
)

// appendVarint appends v as a zigzag varint (Kafka's writeVarint).
func appendVarint(b []byte, v int32) []byte {
	return appendUvarint(b, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarlong appends v as a zigzag varlong (Kafka's writeVarlong).
func appendVarlong(b []byte, v int64) []byte {
	return appendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func appendUvarint(b []byte, u uint64) []byte {
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// putVarint writes v as a zigzag varint at the start of b, which must have room, and returns
// the bytes written.
func putVarint(b []byte, v int32) int { return putUvarint(b, uint64(uint32(v<<1)^uint32(v>>31))) }

// putVarlong writes v as a zigzag varlong at the start of b, which must have room, and returns
// the bytes written.
func putVarlong(b []byte, v int64) int { return putUvarint(b, uint64(v<<1)^uint64(v>>63)) }

func putUvarint(b []byte, u uint64) int {
	i := 0
	for u >= 0x80 {
		b[i] = byte(u) | 0x80
		u >>= 7
		i++
	}
	b[i] = byte(u)
	return i + 1
}

// sizeVarint is the number of bytes appendVarint writes for v.
func sizeVarint(v int32) int { return sizeUvarint(uint64(uint32(v<<1) ^ uint32(v>>31))) }

// sizeVarlong is the number of bytes appendVarlong writes for v.
func sizeVarlong(v int64) int { return sizeUvarint(uint64(v<<1) ^ uint64(v>>63)) }

func sizeUvarint(u uint64) int {
	// 1 + floor((bits-1)/7) for u > 0, and 1 for u == 0.
	return (bits.Len64(u|1) + 6) / 7
}

// readVarint decodes the zigzag varint at the start of b. n is the number of bytes read; n == 0
// when b ends inside the varint, n < 0 when the varint runs past 5 bytes or past 32 bits.
//
// Kafka's readVarint silently drops bits above 32 in the fifth byte; we reject them instead,
// as no Kafka writer produces them and accepting them would make re-encoding lossy.
//
// One- and two-byte varints (values -8192..8191: most lengths and deltas) take the short
// paths; longer ones go to readVarintSlow's loop.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := uint32(b[0]&0x7f) | uint32(b[1])<<7
		return int32(u>>1) ^ -int32(u&1), 2
	}
	return readVarintSlow(b)
}

func readVarintSlow(b []byte) (v int32, n int) {
	var u uint32
	for i := 0; i < maxVarintLen; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		if i == maxVarintLen-1 && c > 0x0f {
			return 0, -1
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong decodes the zigzag varlong at the start of b, with readVarint's conventions
// (n < 0 past 10 bytes or past 64 bits).
func readVarlong(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint64(b[0])
		return int64(u>>1) ^ -int64(u&1), 1
	}
	var u uint64
	for i := 0; i < maxVarlongLen; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		if i == maxVarlongLen-1 && c > 0x01 {
			return 0, -1
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}
