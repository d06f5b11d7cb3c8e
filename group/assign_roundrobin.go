package group

import (
	"maps"
	"slices"
)

type roundRobinAssignor struct{}

// RoundRobinAssignor returns Kafka's round-robin assignor
// (org.apache.kafka.clients.consumer.RoundRobinAssignor), named "roundrobin", Eager.
//
// It lays out every partition of every topic some member subscribes to, by topic name then
// partition, and deals them out to the members in turn, members ordered as Kafka's
// AbstractPartitionAssignor.MemberInfo (members with a group.instance.id first, by it; then the
// others by member id) and taken round in a circle: each partition goes to the next member, from
// where the last partition was given, that subscribes to its topic. When every member subscribes
// to the same topics the counts differ by at most one. Consumers C0 and C1 subscribed to t0 and
// t1 of three partitions each get C0: [t0p0, t0p2, t1p1] and C1: [t0p1, t1p0, t1p2].
//
// A member id given twice counts once: the first Subscription with it in members is used.
func RoundRobinAssignor() Assignor { return roundRobinAssignor{} }

// Name returns "roundrobin", the name of Kafka's RoundRobinAssignor.
func (roundRobinAssignor) Name() string { return "roundrobin" }

// Protocol returns Eager: Kafka's RoundRobinAssignor supports only the eager protocol.
func (roundRobinAssignor) Protocol() RebalanceProtocol { return Eager }

// Assign implements Assignor as Kafka's RoundRobinAssignor.assign does (see
// RoundRobinAssignor).
func (roundRobinAssignor) Assign(partitions map[string]int32, members []Subscription) map[string]map[string][]int32 {
	out := emptyAssignment(members)
	sorted := sortedMembers(distinctMembers(members))
	subscribes := make([]map[string]bool, len(sorted))
	all := map[string]bool{}
	for i, m := range sorted {
		subscribes[i] = make(map[string]bool, len(m.Topics))
		for _, t := range m.Topics {
			subscribes[i][t] = true
			all[t] = true
		}
	}
	next := 0 // the circular iterator's position in sorted
	for _, t := range slices.Sorted(maps.Keys(all)) {
		n := partitions[t]
		for p := int32(0); p < n; p++ {
			// Some member subscribes to t, so this stops within one turn of the circle.
			for !subscribes[next][t] {
				next = (next + 1) % len(sorted)
			}
			id := sorted[next].MemberID
			out[id][t] = append(out[id][t], p)
			next = (next + 1) % len(sorted)
		}
	}
	return out
}
