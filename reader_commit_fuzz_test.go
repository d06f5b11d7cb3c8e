package commitlog

import (
	"maps"
	"testing"
)

// FuzzReaderPositions feeds arbitrary bytes to the decoder of a reader's positions file (both
// versions): it never panics, what it accepts holds only valid partitions, offsets and epochs,
// and version 2 written from it decodes to the same positions.
func FuzzReaderPositions(f *testing.F) {
	for _, s := range []string{
		`{"version":2,"topics":{"orders":{"0":{"offset":120,"leader_epoch":3},"7":{"offset":0,"leader_epoch":-1}}}}`,
		`{"version":2,"topics":{}}`,
		`{"version":3,"topics":{}}`,
		`{"version":2,"topics":{"t":{"0":{"offset":5}}}}`,
		`{"version":2,"topics":{"t":{"-1":{"offset":5,"leader_epoch":0}}}}`,
		`{"orders":{"0":120,"1":7}}`,
		`{"version":{"0":1}}`,
		`{"t":{"2147483648":1}}`,
		`{"t":{"0":-1}}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodePositions(b)
		if err != nil {
			return
		}
		for topic, parts := range got {
			for id, c := range parts {
				if id < 0 || c.offset < 0 || c.leaderEpoch < UndefinedEpoch {
					t.Fatalf("topic %q partition %d accepted with offset %d, leader epoch %d", topic, id, c.offset, c.leaderEpoch)
				}
			}
		}
		enc, err := encodePositions(got)
		if err != nil {
			t.Fatalf("encode %v: %v", got, err)
		}
		again, err := decodePositions(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", enc, err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %v != %v", again, got)
		}
		for topic, parts := range got {
			if !maps.Equal(parts, again[topic]) {
				t.Fatalf("round trip of topic %q: %v != %v", topic, again[topic], parts)
			}
		}
	})
}
