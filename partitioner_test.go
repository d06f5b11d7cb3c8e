package commitlog

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

// TestMurmur2Vectors: murmur2 is Kafka's Utils.murmur2 bit for bit. The first six vectors are
// those of Kafka's UtilsTest; the others, covering every tail length, were computed with a
// separate transcription of Kafka's Java code that reproduces the first six.
func TestMurmur2Vectors(t *testing.T) {
	tests := []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"abc", 479470107},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"", 275646681},
		{"a", -1563381124},
		{"ab", 316155434},
		{"abcd", -1323649548},
		{"kafka", -798503068},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			require.Equal(t, tc.want, murmur2([]byte(tc.key)))
		})
	}
}

// TestMurmur2Partitioner: partition = (murmur2(key) & 0x7fffffff) mod n, as Kafka's Java client
// computes it.
func TestMurmur2Partitioner(t *testing.T) {
	tests := []struct {
		key  string
		n    int32
		want int32
	}{
		{"foobar", 10, 6},
		{"foobar", 3, 0},
		{"abc", 10, 7},
		{"abc", 3, 479470107 % 3},
		{"21", 10, (-973932308 & 0x7fffffff) % 10},
		{"a-little-bit-long-string", 7, (-985981536 & 0x7fffffff) % 7},
		{"foobar", 1, 0},
	}
	p := Murmur2Partitioner()
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.key, tc.n), func(t *testing.T) {
			require.Equal(t, tc.want, p.Partition(&Record{Key: []byte(tc.key)}, tc.n))
		})
	}

	// Through a topic: the records land where the Java client would put them.
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "java-shared", TopicConfig{Partitions: 10})
		tp.SetPartitioner(Murmur2Partitioner())
		recs := []*Record{{Key: []byte("foobar"), Value: []byte("1")}, {Key: []byte("abc"), Value: []byte("2")}, {Key: []byte("foobar"), Value: []byte("3")}}
		require.NoError(t, tp.Append(context.Background(), recs...))
		require.Equal(t, []stSeen{{6, 0, "1"}, {7, 0, "2"}, {6, 1, "3"}}, stSeenOf(recs))
		require.Equal(t, []stSeen{{6, 0, "1"}, {6, 1, "3"}}, stSeenOf(stPartitionRecords(t, tp, 6)))
		require.Equal(t, []stSeen{{7, 0, "2"}}, stSeenOf(stPartitionRecords(t, tp, 7)))
	})
}

// TestKeyLocality: 10,000 records over 50 keys on 6 partitions; every key's records sit in one
// partition (xxhash64(key) mod 6), in the order they were appended.
func TestKeyLocality(t *testing.T) {
	const records, keys, partitions = 10_000, 50, 6
	for _, pc := range []struct {
		name string
		part Partitioner
		want func(key []byte) int32
	}{
		{"key-hash", KeyHashPartitioner(), func(k []byte) int32 { return int32(xxhash.Sum64(k) % partitions) }},
		{"murmur2", Murmur2Partitioner(), func(k []byte) int32 { return (murmur2(k) & 0x7fffffff) % partitions }},
	} {
		t.Run(pc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "orders", TopicConfig{Partitions: partitions})
				tp.SetPartitioner(pc.part)
				// Appended in calls of 250 records, keys interleaved.
				for from := 0; from < records; from += 250 {
					recs := make([]*Record, 250)
					for i := range recs {
						n := from + i
						recs[i] = &Record{Key: fmt.Appendf(nil, "cart-%02d", (n*7)%keys), Value: fmt.Appendf(nil, "%05d", n)}
					}
					require.NoError(t, tp.Append(context.Background(), recs...))
				}
				byKey := map[string][]string{} // values of each key, in offset order
				partOf := map[string]int32{}   // the one partition of each key
				used := map[int32]bool{}       // partitions holding records
				total := 0
				for p := range int32(partitions) {
					for i, rec := range stPartitionRecords(t, tp, p) {
						require.Equal(t, int64(i), rec.Offset)
						k := string(rec.Key)
						if q, ok := partOf[k]; ok {
							require.Equal(t, q, p, "key %s in two partitions", k)
						}
						partOf[k] = p
						used[p] = true
						byKey[k] = append(byKey[k], string(rec.Value))
						total++
					}
				}
				require.Equal(t, records, total)
				require.Len(t, byKey, keys)
				for k, values := range byKey {
					require.Equal(t, pc.want([]byte(k)), partOf[k], k)
					// The key's records in the order appended: n = k', k'+50, ... for the n that give k.
					var want []string
					for n := range records {
						if fmt.Sprintf("cart-%02d", (n*7)%keys) == k {
							want = append(want, fmt.Sprintf("%05d", n))
						}
					}
					require.Equal(t, want, values, k)
				}
				require.Greater(t, len(used), 3, "50 keys spread over at least 4 of 6 partitions")
			})
		})
	}
}

// TestStickyNullKeys: consecutive null-key records go to one partition until about 16 KiB went
// there, then to the next; keyed records in between do not move it.
func TestStickyNullKeys(t *testing.T) {
	for _, pc := range []struct {
		name string
		part func() Partitioner
	}{
		{"key-hash", KeyHashPartitioner},
		{"murmur2", Murmur2Partitioner},
	} {
		t.Run(pc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 3})
				tp.SetPartitioner(pc.part())
				value := strings.Repeat("v", 1000)
				// 1000-byte records: 17 of them (17,000 bytes) reach 16 KiB, the 18th moves on.
				var recs []*Record
				for range 120 {
					recs = append(recs, &Record{Value: []byte(value)})
				}
				require.NoError(t, tp.Append(context.Background(), recs...))
				for i, r := range recs {
					require.Equal(t, int32((i/17)%3), r.Partition, "record %d", i)
				}
				// Appended one at a time, the run goes on where it was: 120 = 7*17 + 1, so one more
				// record fits partition (7 % 3) = 1 before the move to partition 2.
				var parts []int32
				for range 18 {
					r := &Record{Value: []byte(value)}
					require.NoError(t, tp.Append(context.Background(), r))
					parts = append(parts, r.Partition)
					// A keyed record between them goes by its key and leaves the run alone.
					keyed := &Record{Key: []byte("foobar"), Value: []byte(value)}
					require.NoError(t, tp.Append(context.Background(), keyed))
				}
				want := make([]int32, 18)
				for i := range want {
					want[i] = 1
					if i >= 16 {
						want[i] = 2
					}
				}
				require.Equal(t, want, parts)
				// Small records stay far longer: 16 KiB of 10-byte values is 1,639 records.
				s2 := env.another(t).mustOpen(t, WithSync(SyncNever))
				tp2 := stCreate(t, s2, "small", TopicConfig{Partitions: 4})
				tp2.SetPartitioner(pc.part())
				var small []*Record
				for range 2000 {
					small = append(small, &Record{Value: []byte("0123456789")})
				}
				require.NoError(t, tp2.Append(context.Background(), small...))
				for i, r := range small {
					require.Equal(t, int32(i/1639), r.Partition, "record %d", i)
				}
			})
		})
	}
}

// TestManualPartitioner: records go to the partition they name; a partition the topic lacks gives
// ErrUnknownTopic and nothing of the call is written.
func TestManualPartitioner(t *testing.T) {
	for _, n := range []int32{1, 3} {
		t.Run(fmt.Sprintf("%d-partitions", n), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "manual", TopicConfig{Partitions: n})
				tp.SetPartitioner(ManualPartitioner())
				ctx := context.Background()
				last := n - 1
				recs := []*Record{
					{Partition: last, Key: []byte("k"), Value: []byte("a")},
					{Partition: 0, Value: []byte("b")},
					{Partition: last, Value: []byte("c")},
				}
				require.NoError(t, tp.Append(ctx, recs...))
				require.Equal(t, []stSeen{{last, 0, "a"}, {0, boolOffset(last == 0, 1, 0), "b"}, {last, boolOffset(last == 0, 2, 1), "c"}}, stSeenOf(recs))

				for _, bad := range []int32{n, n + 5, -1} {
					recs := []*Record{{Partition: 0, Value: []byte("x")}, {Partition: bad, Value: []byte("y")}}
					require.ErrorIs(t, tp.Append(ctx, recs...), ErrUnknownTopic, "partition %d", bad)
				}
				var total int64
				for p := range n {
					total += stMust(tp.Partition(p)).HighWatermark()
				}
				require.Equal(t, int64(3), total, "nothing of the failed calls was written")
			})
		})
	}
}

func boolOffset(c bool, a, b int64) int64 {
	if c {
		return a
	}
	return b
}
