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
// Balanced: each partition of a subscribed topic goes to a member subscribed to it, and no
// partition could move to a member with two partitions fewer than its holder, directly or by a
// chain of moves each to a member subscribed to the moved partition's topic. When every member
// subscribes to the same topics (Kafka's constrained assignment), each of N members gets
// floor(P/N) or ceil(P/N) of the P partitions. With different subscriptions (Kafka's general
// assignment, which reaches for the same by a heuristic) it is the most even split the
// subscriptions allow: the sum of the squares of the members' counts is the least possible.
//
// Sticky: the placement starts from the partitions the members own (Subscription.Owned) and
// moves partitions only to even out the counts, each move (or chain of moves) taking one
// partition from a member with at least two more than the one it feeds; a member gives up first
// the partitions it did not own, then its highest owned (Kafka keeps the first ones listed). When
// every member subscribes to the same topics, a member keeps all its claims (below) up to
// floor(P/N), and at least floor(P/N) of them, as in Kafka's constrained assignment.
//
// Claims: a claim on a partition counts only if its topic is in partitions, the member
// subscribes to it and the partition is below the count; other owned partitions are dropped.
// When members claim one partition, the claim from the highest Subscription.Generation wins,
// partition by partition, as in Kafka's general assignment (a generation of -1, unknown, is the
// lowest); Kafka's constrained assignment instead drops every claim of a member behind the
// group's highest generation. When members claim it in the same highest generation, all those
// claims are dropped and the partition is held back this round whoever is given it, as Kafka's
// AbstractStickyAssignor does with its partitionsWithMultiplePreviousOwners (its general
// assignment keeps the first claim it reads): every claimant revokes it before anyone gets it,
// so it is not read by two members at once.
//
// Cooperative: as Kafka's CooperativeStickyAssignor.adjustAssignment, a partition the placement
// gives to one member while another member owns it (holds the winning claim) is left out of this
// round's assignment: its owner, not given it, revokes it and rejoins, and the follow-up
// rebalance gives it to the new member, which then finds it unowned. So a newcomer to a group
// whose partitions are all owned gets nothing in the first round and its share in the second,
// and a member that leaves frees its partitions at once.
//
// The result depends only on the partition counts and the set of members (of distinct ids), not
// on the order of members or of map iteration.
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
	own          [][]int         // own[m]: the partitions given to member m that it owns, ascending
	foreign      [][]int         // foreign[m]: the other partitions given to member m, in no order
	at           []int           // at[tp]: the place of tp in foreign[assigned[tp]]

	// Set by balance: the members in increasing count, and where they are in it.
	order []int // the members by increasing count
	place []int // place[m]: the place of member m in order
	start []int // start[c]: the place in order of the first member with c partitions or more
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
	s.own = make([][]int, len(s.members))
	s.foreign = make([][]int, len(s.members))
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
	s.at = make([]int, n)
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
// without such chains is an optimum of this convex transport problem). Direct moves come first:
// a chain moves more partitions.
func (s *stickyPlan) balance() {
	n := len(s.members)
	if n == 0 {
		return
	}
	s.order = make([]int, n)
	for i := range s.order {
		s.order[i] = i
	}
	slices.SortStableFunc(s.order, func(a, b int) int { return cmp.Compare(s.count[a], s.count[b]) })
	s.place = make([]int, n)
	s.start = make([]int, s.count[s.order[n-1]]+2)
	for i, m := range s.order {
		s.place[m] = i
	}
	for c := range s.start {
		s.start[c], _ = slices.BinarySearchFunc(s.order, c, func(m, c int) int { return cmp.Compare(s.count[m], c) })
	}
	for {
		for s.feedDirect() {
		}
		if !s.feedChain() {
			return
		}
	}
}

// most returns the largest count.
func (s *stickyPlan) most() int { return s.count[s.order[len(s.order)-1]] }

// feedDirect goes once through the members, fewest partitions first, feeding each for as long as
// a member with at least two more partitions holds a partition of a topic it subscribes to; the
// one with the most partitions gives. Reports whether it moved any.
func (s *stickyPlan) feedDirect() bool {
	moved := false
	for i := 0; i < len(s.order); {
		to := s.order[i]
		if s.count[to]+2 > s.most() {
			break
		}
		giver := s.directGiver(to)
		if giver == -1 {
			i++
			continue
		}
		// to moves up out of place i, another member with its old count takes it.
		s.move(giver, to)
		moved = true
	}
	return moved
}

// directGiver returns the member with the most partitions, the latest in order of equals, that
// has at least two partitions more than member to and a partition of a topic to subscribes to;
// -1 if none. It looks through whichever is fewer: the members with enough partitions, or the
// subscribers of to's topics.
func (s *stickyPlan) directGiver(to int) int {
	enough := s.count[to] + 2
	rich := len(s.order) - s.start[enough]
	subscribers := 0
	for _, t := range s.memberTopics[to] {
		subscribers += len(s.subscribers[t])
	}
	if rich <= subscribers {
		for _, g := range slices.Backward(s.order[s.start[enough]:]) {
			if s.shares(g, to) {
				return g
			}
		}
		return -1
	}
	giver := -1
	for _, t := range s.memberTopics[to] {
		for _, g := range s.subscribers[t] {
			if s.count[g] >= enough && s.holds(g, t) &&
				(giver == -1 || s.count[g] > s.count[giver] || s.count[g] == s.count[giver] && s.place[g] > s.place[giver]) {
				giver = g
			}
		}
	}
	return giver
}

// feedChain feeds a member through a chain of members each giving the next a partition of a
// topic the next subscribes to, from a member with at least two more partitions than it (the
// chain's inner members keep their counts). It looks from the members with the fewest
// partitions first, then from those with up to one more, and so on; of the givers at the
// shortest distance, the one with the most partitions gives. Reports whether it fed one.
func (s *stickyPlan) feedChain() bool {
	n := len(s.members)
	seen := make([]bool, n)
	next := make([]int, n) // next[x]: the member x gives a partition to in the chain, -1 for its end
	topicSeen := make([]bool, len(s.topics))
	for c := s.count[s.order[0]]; c+2 <= s.most(); c++ {
		clear(seen)
		clear(topicSeen)
		frontier := slices.Clone(s.order[:s.start[c+1]])
		for _, m := range frontier {
			seen[m], next[m] = true, -1
		}
		for len(frontier) > 0 {
			var reached []int
			for _, y := range frontier {
				for _, t := range s.memberTopics[y] {
					if topicSeen[t] {
						continue
					}
					topicSeen[t] = true
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
				if s.count[x] >= c+2 && (giver == -1 || s.count[x] > s.count[giver]) {
					giver = x
				}
			}
			if giver >= 0 {
				var chain []int
				for x := giver; next[x] != -1; x = next[x] {
					chain = append(chain, x)
				}
				// From the fed end: each member gives a partition it held before the chain
				// moved any.
				for _, x := range slices.Backward(chain) {
					s.move(x, next[x])
				}
				return true
			}
			frontier = reached
		}
	}
	return false
}

// move moves one partition from member from to member to, of a topic to subscribes to: one that
// to owns if any, else one from does not own, else from's highest owned; the highest (by topic,
// then partition) of equals.
func (s *stickyPlan) move(from, to int) {
	best, bestRank := -1, 2
	for _, tp := range s.foreign[from] {
		if !s.subscribes(to, s.topicOf(tp)) {
			continue
		}
		rank := 1
		if s.owner[tp] == to {
			rank = 0
		}
		if rank < bestRank || rank == bestRank && tp > best {
			best, bestRank = tp, rank
		}
	}
	if best == -1 {
		for _, tp := range slices.Backward(s.own[from]) {
			if s.subscribes(to, s.topicOf(tp)) {
				best = tp
				break
			}
		}
	}
	s.take(best)
	s.give(best, to)
}

// give places unplaced partition tp with member m.
func (s *stickyPlan) give(tp, m int) {
	s.assigned[tp] = m
	if s.owner[tp] == m {
		i, _ := slices.BinarySearch(s.own[m], tp)
		s.own[m] = slices.Insert(s.own[m], i, tp)
	} else {
		s.at[tp] = len(s.foreign[m])
		s.foreign[m] = append(s.foreign[m], tp)
	}
	s.held[m][s.topicPlace(m, s.topicOf(tp))]++
	if s.order != nil {
		// m leaves the end of its count's run in order, which the next count's run then starts
		// with.
		c := s.count[m]
		s.swap(s.place[m], s.start[c+1]-1)
		s.start[c+1]--
		if c+2 == len(s.start) {
			s.start = append(s.start, len(s.order))
		}
	}
	s.count[m]++
}

// take unplaces partition tp.
func (s *stickyPlan) take(tp int) {
	m := s.assigned[tp]
	s.assigned[tp] = -1
	if s.owner[tp] == m {
		i, _ := slices.BinarySearch(s.own[m], tp)
		s.own[m] = slices.Delete(s.own[m], i, i+1)
	} else {
		f := s.foreign[m]
		last := f[len(f)-1]
		f[s.at[tp]], s.at[last] = last, s.at[tp]
		s.foreign[m] = f[:len(f)-1]
	}
	s.held[m][s.topicPlace(m, s.topicOf(tp))]--
	if s.order != nil {
		// m leaves the start of its count's run in order, which the previous count's run then
		// ends with.
		c := s.count[m]
		s.swap(s.place[m], s.start[c])
		s.start[c]++
	}
	s.count[m]--
}

// swap swaps the members at places i and j of order.
func (s *stickyPlan) swap(i, j int) {
	a, b := s.order[i], s.order[j]
	s.order[i], s.order[j] = b, a
	s.place[a], s.place[b] = j, i
}

// shares reports whether member from holds a partition of a topic member to subscribes to.
func (s *stickyPlan) shares(from, to int) bool {
	for _, t := range s.memberTopics[to] {
		if i, ok := slices.BinarySearch(s.memberTopics[from], t); ok && s.held[from][i] > 0 {
			return true
		}
	}
	return false
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
