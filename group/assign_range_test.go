package group

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// sub is a dynamic member's subscription.
func sub(id string, topics ...string) Subscription {
	return Subscription{MemberID: id, Topics: topics, Generation: -1}
}

// static is a static member's subscription.
func static(id, instance string, topics ...string) Subscription {
	return Subscription{MemberID: id, InstanceID: instance, Topics: topics, Generation: -1}
}

func TestRangeAssignor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions map[string]int32
		members    []Subscription
		want       map[string]map[string][]int32
	}{{
		// RangeAssignor's javadoc.
		name:       "kafka example",
		partitions: map[string]int32{"t0": 3, "t1": 3},
		members:    []Subscription{sub("C1", "t0", "t1"), sub("C0", "t0", "t1")},
		want: map[string]map[string][]int32{
			"C0": {"t0": {0, 1}, "t1": {0, 1}},
			"C1": {"t0": {2}, "t1": {2}},
		},
	}, {
		name:       "more members than partitions",
		partitions: map[string]int32{"t": 2},
		members:    []Subscription{sub("c", "t"), sub("a", "t"), sub("b", "t")},
		want: map[string]map[string][]int32{
			"a": {"t": {0}},
			"b": {"t": {1}},
			"c": {},
		},
	}, {
		name:       "10 partitions 3 members",
		partitions: map[string]int32{"t": 10},
		members:    []Subscription{sub("m2", "t"), sub("m1", "t"), sub("m0", "t")},
		want: map[string]map[string][]int32{
			"m0": {"t": {0, 1, 2, 3}},
			"m1": {"t": {4, 5, 6}},
			"m2": {"t": {7, 8, 9}},
		},
	}, {
		name:       "different subscriptions",
		partitions: map[string]int32{"t0": 3, "t1": 5},
		members:    []Subscription{sub("a", "t0"), sub("b", "t0", "t1"), sub("c", "t1")},
		want: map[string]map[string][]int32{
			"a": {"t0": {0, 1}},
			"b": {"t0": {2}, "t1": {0, 1, 2}},
			"c": {"t1": {3, 4}},
		},
	}, {
		// Static members by instance id, before dynamic ones by member id.
		name:       "static members first",
		partitions: map[string]int32{"t": 5},
		members: []Subscription{
			sub("a", "t"),
			static("z", "i1", "t"),
			sub("b", "t"),
			static("y", "i2", "t"),
		},
		want: map[string]map[string][]int32{
			"z": {"t": {0, 1}},
			"y": {"t": {2}},
			"a": {"t": {3}},
			"b": {"t": {4}},
		},
	}, {
		name:       "topic missing from the counts",
		partitions: map[string]int32{"t": 2, "other": 4},
		members:    []Subscription{sub("a", "t", "gone"), sub("b", "gone")},
		want: map[string]map[string][]int32{
			"a": {"t": {0, 1}},
			"b": {},
		},
	}, {
		name:       "zero and negative counts",
		partitions: map[string]int32{"zero": 0, "neg": -3},
		members:    []Subscription{sub("a", "zero", "neg")},
		want:       map[string]map[string][]int32{"a": {}},
	}, {
		name:       "topic listed twice",
		partitions: map[string]int32{"t": 3},
		members:    []Subscription{sub("a", "t", "t"), sub("b", "t")},
		want: map[string]map[string][]int32{
			"a": {"t": {0, 1}},
			"b": {"t": {2}},
		},
	}, {
		// The first subscription with an id counts.
		name:       "duplicate member id",
		partitions: map[string]int32{"t": 2, "u": 1},
		members:    []Subscription{sub("a", "t"), sub("a", "u"), sub("b", "t")},
		want: map[string]map[string][]int32{
			"a": {"t": {0}},
			"b": {"t": {1}},
		},
	}, {
		name:       "no members",
		partitions: map[string]int32{"t": 2},
		want:       map[string]map[string][]int32{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, RangeAssignor().Assign(tc.partitions, tc.members))
		})
	}
}

func TestRangeAssignorNameAndProtocol(t *testing.T) {
	require.Equal(t, "range", RangeAssignor().Name())
	require.Equal(t, Eager, RangeAssignor().Protocol())
}
