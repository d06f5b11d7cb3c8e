package group

import "slices"

// RebalanceProtocol is how an assignor moves partitions between members (Kafka's
// ConsumerPartitionAssignor.RebalanceProtocol).
type RebalanceProtocol int8

const (
	// Eager revokes every partition of every member before each rebalance and hands the whole
	// assignment out anew: reading stops group-wide for the rebalance.
	Eager RebalanceProtocol = iota
	// Cooperative (KIP-429) revokes only the partitions that move: a member keeps reading the
	// partitions it keeps throughout the rebalance. A partition that moves is first taken from
	// its owner (left unassigned in one generation) and given to its new owner in the follow-up
	// rebalance that the revoking member asks for.
	Cooperative
)

// String returns Kafka's name of the protocol: EAGER or COOPERATIVE.
func (p RebalanceProtocol) String() string {
	if p == Cooperative {
		return "COOPERATIVE"
	}
	return "EAGER"
}

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Subscription is one member's subscription as the group's leader sees it in the JoinGroup
// response: Kafka's ConsumerProtocolSubscription, decoded from the member's protocol metadata
// (DecodeSubscription).
type Subscription struct {
	// MemberID is the member id the coordinator gave the member.
	MemberID string
	// InstanceID is the member's group.instance.id (static membership, KIP-345); "" for a
	// dynamic member. Assignors order members by it when every member has one, as Kafka's
	// AbstractPartitionAssignor.MemberInfo does.
	InstanceID string
	// Topics are the topics the member subscribes to.
	Topics []string
	// UserData is the assignor's own data, opaque to the coordinator.
	UserData []byte
	// Owned are the partitions the member reads now (version 1 and later): what cooperative
	// assignors keep in place.
	Owned []TopicPartitions
	// Generation is the generation in which the member was given Owned (version 2 and later),
	// -1 when unknown: of two members claiming a partition, the later generation's claim wins.
	Generation int32
	// Rack is the member's client.rack (version 3 and later), "" when unset.
	Rack string
}

// Assignor divides a group's partitions among its members: Kafka's ConsumerPartitionAssignor,
// run by the member the coordinator chose as the group's leader (the classic protocol's
// client-side assignment).
type Assignor interface {
	// Name is the assignor's protocol name in JoinGroup, as Kafka's: "range", "roundrobin",
	// "cooperative-sticky". Members of one group agree on an assignor by name.
	Name() string
	// Protocol says whether the assignor's assignments are Eager or Cooperative.
	Protocol() RebalanceProtocol
	// Assign returns each member's partitions, by member id and topic, partitions in increasing
	// order. partitions gives each topic's partition count; a topic a member subscribes to that
	// is missing from it (it does not exist) is left out. Every member of members is a key of
	// the result, with an empty map when it gets nothing. No partition is given to two members.
	Assign(partitions map[string]int32, members []Subscription) map[string]map[string][]int32
}

// memberLess orders members as Kafka's AbstractPartitionAssignor.MemberInfo.compareTo does:
// members with a group.instance.id first, by it; then the others by member id.
func memberLess(a, b *Subscription) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if c := compareStrings(a.InstanceID, b.InstanceID); c != 0 {
			return c
		}
		return compareStrings(a.MemberID, b.MemberID)
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return compareStrings(a.MemberID, b.MemberID)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortedMembers returns members ordered by memberLess, leaving members as it is.
func sortedMembers(members []Subscription) []*Subscription {
	out := make([]*Subscription, len(members))
	for i := range members {
		out[i] = &members[i]
	}
	slices.SortStableFunc(out, memberLess)
	return out
}

// emptyAssignment returns the result map with an empty entry for every member.
func emptyAssignment(members []Subscription) map[string]map[string][]int32 {
	out := make(map[string]map[string][]int32, len(members))
	for _, m := range members {
		out[m.MemberID] = map[string][]int32{}
	}
	return out
}
