package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscriptionAt returns a ConsumerProtocolSubscription of the given version, written by
// kmsg as an older (or newer) client would write it.
func subscriptionAt(version int16, topics []string, userData []byte, owned []TopicPartitions, generation int32) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = version
	m.Topics = topics
	m.UserData = userData
	for _, tp := range owned {
		m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	m.Generation = generation
	return m.AppendTo(nil)
}

func TestEncodeSubscriptionBytes(t *testing.T) {
	// Version 3 as Kafka's ConsumerProtocol writes it: version, topics, user data (null), owned
	// partitions, generation, rack (null).
	require.Equal(t, []byte{
		0, 3,
		0, 0, 0, 1, 0, 1, 't',
		0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5,
		0, 0, 0, 2,
		0xff, 0xff,
	}, EncodeSubscription(Subscription{
		MemberID:   "left out",
		InstanceID: "left out too",
		Topics:     []string{"t"},
		Owned:      []TopicPartitions{{Topic: "t", Partitions: []int32{0, 5}}},
		Generation: 2,
	}))
}

func TestSubscriptionRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Subscription
		want Subscription
	}{{
		name: "every field",
		in: Subscription{
			Topics:     []string{"b", "a"},
			UserData:   []byte{1, 2, 3},
			Owned:      []TopicPartitions{{Topic: "b", Partitions: []int32{3}}, {Topic: "a", Partitions: []int32{1, 0}}},
			Generation: 7,
			Rack:       "rack-1",
		},
		want: Subscription{
			MemberID:   "m",
			InstanceID: "i",
			Topics:     []string{"a", "b"},
			UserData:   []byte{1, 2, 3},
			Owned:      []TopicPartitions{{Topic: "a", Partitions: []int32{1, 0}}, {Topic: "b", Partitions: []int32{3}}},
			Generation: 7,
			Rack:       "rack-1",
		},
	}, {
		name: "empty",
		in:   Subscription{Generation: -1},
		want: Subscription{MemberID: "m", InstanceID: "i", Generation: -1},
	}, {
		// The generation field wins over the one in the user data.
		name: "generation field and user data",
		in:   Subscription{Topics: []string{"t"}, UserData: GenerationUserData(4), Generation: 9},
		want: Subscription{MemberID: "m", InstanceID: "i", Topics: []string{"t"}, UserData: []byte{0, 0, 0, 4}, Generation: 9},
	}, {
		name: "owned topic without partitions",
		in:   Subscription{Topics: []string{"t"}, Owned: []TopicPartitions{{Topic: "t"}}, Generation: 0},
		want: Subscription{MemberID: "m", InstanceID: "i", Topics: []string{"t"}, Owned: []TopicPartitions{{Topic: "t"}}, Generation: 0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSubscription("m", "i", EncodeSubscription(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeSubscriptionVersions(t *testing.T) {
	owned := []TopicPartitions{{Topic: "t", Partitions: []int32{2}}}
	for _, tc := range []struct {
		name string
		in   []byte
		want Subscription
	}{{
		name: "v0",
		in:   subscriptionAt(0, []string{"t"}, nil, owned, 3),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, Generation: -1},
	}, {
		// CooperativeStickyAssignor's user data carries the generation before version 2.
		name: "v0 with the generation in the user data",
		in:   subscriptionAt(0, []string{"t"}, GenerationUserData(6), nil, -1),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, UserData: []byte{0, 0, 0, 6}, Generation: 6},
	}, {
		name: "v1",
		in:   subscriptionAt(1, []string{"t"}, []byte("xyz"), owned, 3),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, UserData: []byte("xyz"), Owned: owned, Generation: -1},
	}, {
		name: "v1 with the generation in the user data",
		in:   subscriptionAt(1, []string{"t"}, GenerationUserData(8), owned, -1),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, UserData: []byte{0, 0, 0, 8}, Owned: owned, Generation: 8},
	}, {
		name: "v2",
		in:   subscriptionAt(2, []string{"t"}, nil, owned, 3),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, Owned: owned, Generation: 3},
	}, {
		// A later version's extra fields (after the rack) are not read.
		name: "v4 with trailing bytes",
		in:   append(subscriptionAt(4, []string{"t"}, nil, owned, 3), 0xff, 0xff, 1, 2),
		want: Subscription{MemberID: "m", Topics: []string{"t"}, Owned: owned, Generation: 3},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSubscription("m", "", tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeSubscriptionMalformed(t *testing.T) {
	full := EncodeSubscription(Subscription{
		Topics:     []string{"t"},
		Owned:      []TopicPartitions{{Topic: "t", Partitions: []int32{0}}},
		Generation: 1,
		Rack:       "r",
	})
	for _, n := range []int{0, 1, 2, 5, 8, len(full) - 1} {
		_, err := DecodeSubscription("m", "", full[:n])
		require.ErrorIs(t, err, ErrBadProtocolMetadata, "first %d bytes", n)
	}
	// A topic count larger than the bytes could hold.
	_, err := DecodeSubscription("m", "", []byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	require.ErrorIs(t, err, ErrBadProtocolMetadata)
}

func TestEncodeAssignmentBytes(t *testing.T) {
	// Version 3: version, topics with partitions, user data.
	require.Equal(t, []byte{
		0, 3,
		0, 0, 0, 2,
		0, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 4,
		0, 1, 'b', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1,
		0, 0, 0, 2, 9, 9,
	}, EncodeAssignment(map[string][]int32{"b": {0, 1}, "a": {4}}, []byte{9, 9}))
}

func TestAssignmentRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string][]int32
	}{
		{"several topics", map[string][]int32{"b": {0, 1}, "a": {4}, "c": {2, 0}}},
		{"one partition", map[string][]int32{"t": {0}}},
		{"empty", map[string][]int32{}},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.in
			if want == nil {
				want = map[string][]int32{}
			}
			got, err := DecodeAssignment(EncodeAssignment(tc.in, []byte("user data")))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestDecodeAssignment(t *testing.T) {
	got, err := DecodeAssignment(nil)
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{}, got)

	// A topic listed twice has its partitions joined.
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{1}}, {Topic: "t", Partitions: []int32{0}}}
	got, err = DecodeAssignment(a.AppendTo(nil))
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"t": {1, 0}}, got)

	full := EncodeAssignment(map[string][]int32{"t": {0, 1}}, nil)
	for _, n := range []int{1, 2, 6, len(full) - 1} {
		_, err := DecodeAssignment(full[:n])
		require.ErrorIs(t, err, ErrBadProtocolMetadata, "first %d bytes", n)
	}
}

// FuzzDecodeSubscription: no bytes make DecodeSubscription or DecodeAssignment panic, and their
// errors are ErrBadProtocolMetadata. A subscription that decodes goes through every assignor,
// with another member, without a panic.
func FuzzDecodeSubscription(f *testing.F) {
	owned := []TopicPartitions{{Topic: "t", Partitions: []int32{0, 2}}}
	v3 := EncodeSubscription(Subscription{Topics: []string{"t", "u"}, UserData: []byte{1}, Owned: owned, Generation: 4, Rack: "r"})
	for _, b := range [][]byte{
		v3,
		v3[:len(v3)/2],
		EncodeSubscription(Subscription{Generation: -1}),
		subscriptionAt(0, []string{"t"}, GenerationUserData(2), nil, -1),
		subscriptionAt(1, []string{"t"}, nil, owned, -1),
		subscriptionAt(2, []string{"t"}, nil, owned, 5),
		EncodeAssignment(map[string][]int32{"t": {0, 1}}, nil),
		nil,
	} {
		f.Add(b)
	}
	assignors := []Assignor{RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor()}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodeAssignment(b); err != nil {
			require.ErrorIs(t, err, ErrBadProtocolMetadata)
		}
		s, err := DecodeSubscription("m", "", b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadProtocolMetadata)
			return
		}
		partitions := map[string]int32{"t": 3}
		for i, topic := range s.Topics {
			if i < 8 {
				partitions[topic] = int32(len(topic) % 5)
			}
		}
		other := Subscription{MemberID: "o", Topics: []string{"t"}, Owned: owned, Generation: s.Generation}
		for _, a := range assignors {
			got := a.Assign(partitions, []Subscription{s, other})
			require.Contains(t, got, "m")
			require.Contains(t, got, "o")
		}
	})
}
