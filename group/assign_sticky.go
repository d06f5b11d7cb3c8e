package group

import (
	"cmp"
	"maps"
	"slices"
)

type cooperativeStickyAssignor struct{}

// CooperativeStickyAssignor returns Kafka's cooperative sticky assignor
// (org.apache.kafka.clients.consumer.CooperativeStickyAssignor, whose placement is
// org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor's), named
// "cooperative-sticky", Cooperative (KIP-429). Subscription.Rack is ignored (Kafka 3.5 and later
// also weigh racks). A member id given twice counts once: the first Subscription with it in
// members is used.
//
// Balanced: each partition goes to a member subscribed to its topic, and no partition could move
// to a member with two partitions fewer than its holder, directly or by a chain of moves each to
// a member subscribed to the moved partition's topic. When every member subscribes to the same
// topics, that is Kafka's constrained assignment: each of N members gets floor(P/N) or
// ceil(P/N) of the P partitions. With different subscriptions (Kafka's general assignment) it is
// the most even split the subscriptions allow: the sum of the squares of the members' counts is
// the least possible (Kafka's general assignment aims at the same by a heuristic).
//
// Sticky: the placement starts from the partitions the members own (Subscription.Owned) and
// moves partitions only to even out the counts, each move (or chain of moves) taking one
// partition from a member with at least two more than the one it feeds; a member gives up first
// the partitions it did not own, then its highest owned (Kafka keeps the first ones listed). When
// every member subscribes to the same topics, a member owning at most floor(P/N) keeps all it
// owns and one owning more keeps at least floor(P/N) of them, as Kafka's constrained assignment. A claim on a partition counts only if the topic is in
// partitions, the member subscribes to it and the partition is below the count; other claims are
// dropped. When members claim the same partition, the claim of the highest Subscription.Generation
// wins, partition by partition (Kafka's general assignment; its constrained assignment drops
// every claim of a member whose generation is not the group's highest). When two members claim
// it in the same highest generation, both claims are dropped and the partition is held back this
// round wherever it goes, as Kafka's AbstractStickyAssignor does with
// partitionsWithMultiplePreviousOwners: both claimants revoke it first, so it is never read by
// two members.
//
// Cooperative: as Kafka's CooperativeStickyAssignor.adjustAssignment, a partition the placement
// gives to one member while another member owns it (the winning claim) is left out of this
// round's assignment: its owner, not given it, revokes it and rejoins, and the follow-up
// rebalance gives it to its new member, which then finds it unowned. A newcomer to a group
// whose partitions are all owned so gets nothing in the first round and its share in the second.
//
// The result depends only on the input, not on map order.
func CooperativeStickyAssignor() Assignor { return cooperativeStickyAssignor{} }

// Name returns "cooperative-sticky", the name of Kafka's CooperativeStickyAssignor.
func (cooperativeStickyAssignor) Name() string { return "cooperative-sticky" }

// Protocol returns Cooperative, as Kafka's CooperativeStickyAssignor (which also supports Eager
// for a group moving from an eager assignor; a group here is one or the other).
func (cooperativeStickyAssignor) Protocol() RebalanceProtocol { return Cooperative }

// Assign implements Assignor as Kafka's CooperativeStickyAssignor.assign does (see
// CooperativeStickyAssignor).
func (cooperativeStickyAssignor) Assign(partitions map[string]int32, members []Subscription) map[string]map[string][]int32 {
	s := newStickyPlan(partitions, members)
	s.balance()
	out := emptyAssignment(members)
	s.fill(out, true)
	return out
}

// stickyPlan is the sticky placement under way. Members are numbered by their place in memberLess
// order, topics by their place in name order, and partitions (tp) consecutively, topic after
// topic: partition p of topic t is first[t]+p.
type stickyPlan struct {
	members      []*Subscription // distinct member ids, in memberLess order
	topics       []string        // the topics in partitions (count > 0) some member subscribes to, sorted
	first        []int           // first[t]: the tp of topic t's partition 0; first[len(topics)]: the number of tps
	subscribers  [][]int         // subscribers[t]: the members subscribed to topic t, ascending
	memberTopics [][]int         // memberTopics[m]: the topics member m subscribes to, ascending
	held         [][]int         // held[m][i]: how many partitions of topic memberTopics[m][i] m is given
	count        []int           // count[m]: how many partitions m is given
	owner        []int           // owner[tp]: the member whose claim on tp won, -1 for none
	contested    []bool          // contested[tp]: claimed by two members in the highest generation claiming it
	assigned     []int           // assigned[tp]: the member given tp, -1 for none
}

// newStickyPlan resolves the members' claims and places every partition of a subscribed topic:
// each validly owned one with its owner, each other one with the subscribed member with the
// fewest partitions, partitions with the fewest possible members first.
func newStickyPlan(partitions map[string]int32, members []Subscription) *stickyPlan {
	s := &stickyPlan{members: sortedMembers(distinctMembers(members))}
	subscribed := map[string]bool{}
	for _, m := range s.members {
		for _, t := range m.Topics {
			if partitions[t] > 0 {
				subscribed[t] = true
			}
		}
	}
	s.topics = slices.Sorted(maps.Keys(subscribed))
	index := make(map[string]int, len(s.topics))
	s.first = make([]int, len(s.topics)+1)
	for t, name := range s.topics {
		index[name] = t
		s.first[t+1] = s.first[t] + int(partitions[name])
	}
	s.subscribers = make([][]int, len(s.topics))
	s.memberTopics = make([][]int, len(s.members))
	s.held = make([][]int, len(s.members))
	s.count = make([]int, len(s.members))
	for m, sub := range s.members {
		// Names in order give topic numbers in order.
		for _, name := range subscribedTopics(sub) {
			if t, ok := index[name]; ok {
				s.memberTopics[m] = append(s.memberTopics[m], t)
				s.subscribers[t] = append(s.subscribers[t], m)
			}
		}
		s.held[m] = make([]int, len(s.memberTopics[m]))
	}

	n := s.first[len(s.topics)]
	s.owner = slices.Repeat([]int{-1}, n)
	s.assigned = slices.Repeat([]int{-1}, n)
	s.contested = make([]bool, n)
	generation := make([]int32, n) // of the claim in owner
	for m, sub := range s.members {
		for _, tps := range sub.Owned {
			t, ok := index[tps.Topic]
			if !ok || !s.subscribes(m, t) {
				continue
			}
			for _, p := range tps.Partitions {
				if p < 0 || int(p) >= s.first[t+1]-s.first[t] {
					continue
				}
				tp := s.first[t] + int(p)
				switch o := s.owner[tp]; {
				case o == -1 || sub.Generation > generation[tp]:
					s.owner[tp], generation[tp], s.contested[tp] = m, sub.Generation, false
				case o != m && sub.Generation == generation[tp]:
					s.contested[tp] = true
				}
			}
		}
	}
	for tp, o := range s.owner {
		if s.contested[tp] {
			s.owner[tp] = -1
		} else if o >= 0 {
			s.give(tp, o)
		}
	}

	var free []int
	for tp, m := range s.assigned {
		if m == -1 {
			free = append(free, tp)
		}
	}
	slices.SortStableFunc(free, func(a, b int) int {
		return cmp.Compare(len(s.subscribers[s.topicOf(a)]), len(s.subscribers[s.topicOf(b)]))
	})
	for _, tp := range free {
		best := -1
		for _, m := range s.subscribers[s.topicOf(tp)] {
			if best == -1 || s.count[m] < s.count[best] {
				best = m
			}
		}
		s.give(tp, best)
	}
	return s
}

// balance moves partitions until no member with at least two partitions fewer than another can
// get one from it, directly or through a chain of members. Each move lowers the sum of the
// squares of the counts, so it ends; at the end that sum is the least possible (a placement
// without such chains is an optimum of this convex transport problem).
func (s *stickyPlan) balance() {
	if len(s.members) == 0 {
		return
	}
	order := make([]int, len(s.members))
	for {
		most := slices.Max(s.count)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.count[a], s.count[b]) })
		if !s.feedOne(order, most, true) && !s.feedOne(order, most, false) {
			return
		}
	}
}

// feedOne feeds the first member in order (fewest partitions first) that it can, with a direct
// move only or through chains too, and reports whether it did. A direct move anywhere is
// preferred to a chain, which moves more partitions.
func (s *stickyPlan) feedOne(order []int, most int, direct bool) bool {
	for _, m := range order {
		if s.count[m]+2 > most {
			return false
		}
		if s.feed(m, direct) {
			return true
		}
	}
	return false
}

// feed gives member to one partition more and takes one from a member with at least two more
// partitions than to, through the shortest chain of members each giving the next a partition of a
// topic the next subscribes to (the chain's inner members keep their counts). Of the givers at
// that shortest distance, the one with the most partitions gives. With direct, the chain is one
// move long. Reports whether it found a giver.
func (s *stickyPlan) feed(to int, direct bool) bool {
	n := len(s.members)
	seen := make([]bool, n)
	next := make([]int, n) // next[x]: the member x gives a partition to in the chain
	seen[to] = true
	frontier := []int{to}
	for len(frontier) > 0 {
		var reached []int
		for _, y := range frontier {
			for _, t := range s.memberTopics[y] {
				for _, x := range s.subscribers[t] {
					if !seen[x] && s.holds(x, t) {
						seen[x], next[x] = true, y
						reached = append(reached, x)
					}
				}
			}
		}
		giver := -1
		for _, x := range reached {
			if s.count[x] >= s.count[to]+2 && (giver == -1 || s.count[x] > s.count[giver] ||
				s.count[x] == s.count[giver] && x < giver) {
				giver = x
			}
		}
		if giver >= 0 {
			var chain []int
			for x := giver; x != to; x = next[x] {
				chain = append(chain, x)
			}
			// From to's end: each member gives a partition it held before the chain moved any.
			for _, x := range slices.Backward(chain) {
				s.move(x, next[x])
			}
			return true
		}
		if direct {
			return false
		}
		frontier = reached
	}
	return false
}

// move moves one partition from member from to member to, of a topic to subscribes to: one that
// to owns if any, else one from does not own, else from's highest owned; the highest (by topic,
// then partition) of equals.
func (s *stickyPlan) move(from, to int) {
	best, bestRank := -1, 3
	for _, t := range slices.Backward(s.memberTopics[to]) {
		for tp := s.first[t+1] - 1; tp >= s.first[t]; tp-- {
			if s.assigned[tp] != from {
				continue
			}
			rank := 2
			switch s.owner[tp] {
			case to:
				rank = 0
			case from:
			default:
				rank = 1
			}
			if rank < bestRank {
				best, bestRank = tp, rank
			}
		}
	}
	s.take(best)
	s.give(best, to)
}

// give places unplaced partition tp with member m.
func (s *stickyPlan) give(tp, m int) {
	s.assigned[tp] = m
	s.count[m]++
	s.held[m][s.topicPlace(m, s.topicOf(tp))]++
}

// take unplaces partition tp.
func (s *stickyPlan) take(tp int) {
	m := s.assigned[tp]
	s.assigned[tp] = -1
	s.count[m]--
	s.held[m][s.topicPlace(m, s.topicOf(tp))]--
}

// holds reports whether member m, subscribed to topic t, is given a partition of it.
func (s *stickyPlan) holds(m, t int) bool {
	return s.held[m][s.topicPlace(m, t)] > 0
}

func (s *stickyPlan) subscribes(m, t int) bool {
	_, ok := slices.BinarySearch(s.memberTopics[m], t)
	return ok
}

// topicPlace returns the place of topic t in memberTopics[m]; m subscribes to t.
func (s *stickyPlan) topicPlace(m, t int) int {
	i, _ := slices.BinarySearch(s.memberTopics[m], t)
	return i
}

// topicOf returns the topic of partition tp.
func (s *stickyPlan) topicOf(tp int) int {
	t, found := slices.BinarySearch(s.first, tp)
	if !found {
		t--
	}
	return t
}

// fill adds the placement to out, which has an entry for every member id, partitions in
// increasing order. With cooperative, it leaves out the partitions that must be revoked first:
// those that another member owns and those that were contested.
func (s *stickyPlan) fill(out map[string]map[string][]int32, cooperative bool) {
	for t, name := range s.topics {
		for tp := s.first[t]; tp < s.first[t+1]; tp++ {
			m := s.assigned[tp]
			if m == -1 || cooperative && (s.contested[tp] || s.owner[tp] != -1 && s.owner[tp] != m) {
				continue
			}
			id := s.members[m].MemberID
			out[id][name] = append(out[id][name], int32(tp-s.first[t]))
		}
	}
}
