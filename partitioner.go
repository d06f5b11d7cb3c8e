package commitlog

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Partitioner picks the partition of a record appended to a topic. Implementations must be safe
// for concurrent use.
type Partitioner interface {
	// Partition returns a partition in [0, n) for r, n being the topic's partition count.
	Partition(r *Record, n int32) int32
}

// stickyBytes is how many bytes of null-key records go to one partition before the next is
// chosen: Kafka's default batch.size, so that null-key batches stay large (KIP-480).
const stickyBytes = 16 << 10

// sticky spreads null-key records: all to one partition until about stickyBytes have gone
// there, then to the next.
type sticky struct {
	mu    sync.Mutex
	cur   int32
	bytes int
}

func (s *sticky) partition(r *Record, n int32) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes >= stickyBytes || s.cur >= n {
		s.cur = (s.cur + 1) % n
		s.bytes = 0
	}
	s.bytes += len(r.Value) + len(r.Key)
	for _, h := range r.Headers {
		s.bytes += len(h.Key) + len(h.Value)
	}
	return s.cur
}

// KeyHashPartitioner returns the default partitioner: a record with a key goes to partition
// xxhash64(key) mod n, so records with equal keys stay in one partition, in order; null-key
// records are spread sticky (about 16 KiB to one partition, then the next).
func KeyHashPartitioner() Partitioner { return &keyHash{} }

type keyHash struct{ sticky sticky }

func (p *keyHash) Partition(r *Record, n int32) int32 {
	if r.Key == nil {
		return p.sticky.partition(r, n)
	}
	return int32(xxhash.Sum64(r.Key) % uint64(n))
}

// Murmur2Partitioner returns the partitioner of Kafka's Java client: a record with a key goes to
// partition (murmur2(key) & 0x7fffffff) mod n, with Kafka's seed 0x9747b28c, so a topic shared
// with Java producers keeps each key in the same partition. Null-key records are spread sticky,
// as the Java client has done since 2.4.
func Murmur2Partitioner() Partitioner { return &murmur2Partitioner{} }

type murmur2Partitioner struct{ sticky sticky }

func (p *murmur2Partitioner) Partition(r *Record, n int32) int32 {
	if r.Key == nil {
		return p.sticky.partition(r, n)
	}
	return (murmur2(r.Key) & 0x7fffffff) % n
}

// murmur2 is Kafka's org.apache.kafka.common.utils.Utils.murmur2, bit for bit.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[length&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// ManualPartitioner returns a partitioner that honours each record's own Partition field; a
// record whose Partition is outside [0, n) makes Append return ErrUnknownTopic.
func ManualPartitioner() Partitioner { return manual{} }

type manual struct{}

func (manual) Partition(r *Record, n int32) int32 { return r.Partition }
