package group

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundRobinAssignor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions map[string]int32
		members    []Subscription
		want       map[string]map[string][]int32
	}{{
		// RoundRobinAssignor's javadoc, first example.
		name:       "kafka example same subscriptions",
		partitions: map[string]int32{"t0": 3, "t1": 3},
		members:    []Subscription{sub("C1", "t0", "t1"), sub("C0", "t0", "t1")},
		want: map[string]map[string][]int32{
			"C0": {"t0": {0, 2}, "t1": {1}},
			"C1": {"t0": {1}, "t1": {0, 2}},
		},
	}, {
		// RoundRobinAssignor's javadoc, second example.
		name:       "kafka example different subscriptions",
		partitions: map[string]int32{"t0": 1, "t1": 2, "t2": 3},
		members: []Subscription{
			sub("C2", "t0", "t1", "t2"),
			sub("C0", "t0"),
			sub("C1", "t0", "t1"),
		},
		want: map[string]map[string][]int32{
			"C0": {"t0": {0}},
			"C1": {"t1": {0}},
			"C2": {"t1": {1}, "t2": {0, 1, 2}},
		},
	}, {
		name:       "more members than partitions",
		partitions: map[string]int32{"a": 1, "b": 1},
		members:    []Subscription{sub("m0", "a", "b"), sub("m1", "a", "b"), sub("m2", "a", "b")},
		want: map[string]map[string][]int32{
			"m0": {"a": {0}},
			"m1": {"b": {0}},
			"m2": {},
		},
	}, {
		name:       "static members first",
		partitions: map[string]int32{"t": 5},
		members:    []Subscription{sub("a", "t"), static("z", "i1", "t"), static("y", "i2", "t")},
		want: map[string]map[string][]int32{
			"z": {"t": {0, 3}},
			"y": {"t": {1, 4}},
			"a": {"t": {2}},
		},
	}, {
		name:       "topic missing from the counts",
		partitions: map[string]int32{"t": 3},
		members:    []Subscription{sub("a", "gone", "t"), sub("b", "t", "gone")},
		want: map[string]map[string][]int32{
			"a": {"t": {0, 2}},
			"b": {"t": {1}},
		},
	}, {
		name:       "duplicate member id",
		partitions: map[string]int32{"t": 3, "u": 1},
		members:    []Subscription{sub("a", "t"), sub("b", "t"), sub("a", "u")},
		want: map[string]map[string][]int32{
			"a": {"t": {0, 2}},
			"b": {"t": {1}},
		},
	}, {
		name:       "no members",
		partitions: map[string]int32{"t": 1},
		want:       map[string]map[string][]int32{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, RoundRobinAssignor().Assign(tc.partitions, tc.members))
		})
	}
}

func TestRoundRobinAssignorNameAndProtocol(t *testing.T) {
	require.Equal(t, "roundrobin", RoundRobinAssignor().Name())
	require.Equal(t, Eager, RoundRobinAssignor().Protocol())
}
