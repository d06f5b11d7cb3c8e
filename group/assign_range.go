package group

import (
	"maps"
	"slices"
)

type rangeAssignor struct{}

// RangeAssignor returns Kafka's range assignor (org.apache.kafka.clients.consumer.RangeAssignor,
// without its rack awareness: Subscription.Rack is ignored), named "range", Eager.
//
// It places each topic on its own: the members subscribed to the topic, ordered as Kafka's
// AbstractPartitionAssignor.MemberInfo (members with a group.instance.id first, by it; then the
// others by member id), split its P partitions into consecutive ranges. With C such members,
// the member at place i gets the P/C partitions starting at (P/C)*i + min(i, P%C), and one more
// if i < P%C: the members first in that order get the extra partitions of every topic they
// subscribe to. Two consumers C0 and C1 subscribed to topics t0 and t1 of three
// partitions each get C0: [t0p0, t0p1, t1p0, t1p1] and C1: [t0p2, t1p2].
//
// A member id given twice counts once: the first Subscription with it in members is used.
func RangeAssignor() Assignor { return rangeAssignor{} }

// Name returns "range", the name of Kafka's RangeAssignor.
func (rangeAssignor) Name() string { return "range" }

// Protocol returns Eager: Kafka's RangeAssignor supports only the eager protocol.
func (rangeAssignor) Protocol() RebalanceProtocol { return Eager }

// Assign implements Assignor as Kafka's RangeAssignor.assign does (see RangeAssignor).
func (rangeAssignor) Assign(partitions map[string]int32, members []Subscription) map[string]map[string][]int32 {
	out := emptyAssignment(members)
	sorted := sortedMembers(distinctMembers(members))
	byTopic := map[string][]*Subscription{} // subscribers of each topic, in memberLess order
	for _, m := range sorted {
		for _, t := range subscribedTopics(m) {
			byTopic[t] = append(byTopic[t], m)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		n, ok := partitions[t]
		if !ok || n <= 0 {
			continue
		}
		subs := byTopic[t]
		c := int32(len(subs))
		per, extra := n/c, n%c
		for i, m := range subs {
			i := int32(i)
			start := per*i + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			if length == 0 {
				continue
			}
			ps := make([]int32, length)
			for j := range ps {
				ps[j] = start + int32(j)
			}
			out[m.MemberID][t] = ps
		}
	}
	return out
}

// distinctMembers returns members without the later of any two with one member id (the result
// map has one entry per member id, so an assignor can serve only one of them).
func distinctMembers(members []Subscription) []Subscription {
	seen := make(map[string]bool, len(members))
	out := make([]Subscription, 0, len(members))
	for _, m := range members {
		if !seen[m.MemberID] {
			seen[m.MemberID] = true
			out = append(out, m)
		}
	}
	return out
}

// subscribedTopics returns m's topics sorted, each once.
func subscribedTopics(m *Subscription) []string {
	return slices.Compact(slices.Sorted(slices.Values(m.Topics)))
}
