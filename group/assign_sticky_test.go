package group

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// owning is a dynamic member's subscription owning partitions from the given generation.
func owning(id string, generation int32, owned map[string][]int32, topics ...string) Subscription {
	return Subscription{MemberID: id, Topics: topics, Owned: ownedList(owned), Generation: generation}
}

// ownedList returns an assignment as Subscription.Owned, by topic.
func ownedList(a map[string][]int32) []TopicPartitions {
	var out []TopicPartitions
	for _, t := range slices.Sorted(maps.Keys(a)) {
		out = append(out, TopicPartitions{Topic: t, Partitions: a[t]})
	}
	return out
}

// nextRound returns members rejoining after result: each owns what result gave it, in the next
// generation.
func nextRound(members []Subscription, result map[string]map[string][]int32) []Subscription {
	out := slices.Clone(members)
	for i := range out {
		out[i].Owned = ownedList(result[out[i].MemberID])
		out[i].Generation++
	}
	return out
}

func TestCooperativeStickyAssignorNameAndProtocol(t *testing.T) {
	require.Equal(t, "cooperative-sticky", CooperativeStickyAssignor().Name())
	require.Equal(t, Cooperative, CooperativeStickyAssignor().Protocol())
}

func TestCooperativeStickyAssignor(t *testing.T) {
	type assignment = map[string]map[string][]int32
	for _, tc := range []struct {
		name       string
		partitions map[string]int32
		members    []Subscription
		want       assignment
	}{{
		name:       "first assignment",
		partitions: map[string]int32{"t0": 4, "t1": 3},
		members:    []Subscription{sub("m2", "t0", "t1"), sub("m0", "t0", "t1"), sub("m1", "t1", "t0")},
		want: assignment{
			"m0": {"t0": {0, 3}, "t1": {2}},
			"m1": {"t0": {1}, "t1": {0}},
			"m2": {"t0": {2}, "t1": {1}},
		},
	}, {
		name:       "static members first",
		partitions: map[string]int32{"t": 4},
		members:    []Subscription{sub("a", "t"), static("z", "i0", "t"), sub("b", "t")},
		want: assignment{
			"z": {"t": {0, 3}},
			"a": {"t": {1}},
			"b": {"t": {2}},
		},
	}, {
		name:       "members keep what they own",
		partitions: map[string]int32{"t0": 4, "t1": 3},
		members: []Subscription{
			owning("m0", 5, map[string][]int32{"t0": {2}, "t1": {0, 1}}, "t0", "t1"),
			owning("m1", 5, map[string][]int32{"t0": {0, 3}}, "t0", "t1"),
			owning("m2", 5, map[string][]int32{"t0": {1}, "t1": {2}}, "t0", "t1"),
		},
		want: assignment{
			"m0": {"t0": {2}, "t1": {0, 1}},
			"m1": {"t0": {0, 3}},
			"m2": {"t0": {1}, "t1": {2}},
		},
	}, {
		// m1's claim on t/0 loses to m0's later one; m1 keeps t/1.
		name:       "the later generation's claim wins",
		partitions: map[string]int32{"t": 2},
		members: []Subscription{
			owning("m0", 3, map[string][]int32{"t": {0}}, "t"),
			owning("m1", 2, map[string][]int32{"t": {0, 1}}, "t"),
		},
		want: assignment{"m0": {"t": {0}}, "m1": {"t": {1}}},
	}, {
		name:       "the later generation's claim wins whoever comes first",
		partitions: map[string]int32{"t": 2},
		members: []Subscription{
			owning("m0", 2, map[string][]int32{"t": {0, 1}}, "t"),
			owning("m1", 3, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"m0": {"t": {1}}, "m1": {"t": {0}}},
	}, {
		name:       "a known generation beats an unknown one",
		partitions: map[string]int32{"t": 2},
		members: []Subscription{
			owning("m0", -1, map[string][]int32{"t": {0, 1}}, "t"),
			owning("m1", 0, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"m0": {"t": {1}}, "m1": {"t": {0}}},
	}, {
		// Both claims on t/0 in generation 2 are dropped; the placement gives t/0 to m0 (the
		// first of the two members with no partitions), and it is held back this round.
		name:       "equal generations: both claims dropped and the partition held back",
		partitions: map[string]int32{"t": 2},
		members: []Subscription{
			owning("m0", 2, map[string][]int32{"t": {0}}, "t"),
			owning("m1", 2, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"m0": {}, "m1": {"t": {1}}},
	}, {
		// m0 keeps t/1 and gets t/2; m1, no longer owning t/0, is given it but must wait for m0
		// to revoke it.
		name:       "equal generations: neither claimant keeps the partition",
		partitions: map[string]int32{"t": 3},
		members: []Subscription{
			owning("m0", 2, map[string][]int32{"t": {0, 1}}, "t"),
			owning("m1", 2, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"m0": {"t": {1, 2}}, "m1": {}},
	}, {
		name:       "a later claim settles an equal-generation tie",
		partitions: map[string]int32{"t": 2},
		members: []Subscription{
			owning("m0", 2, map[string][]int32{"t": {0}}, "t"),
			owning("m1", 2, map[string][]int32{"t": {0}}, "t"),
			owning("m2", 3, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"m0": {"t": {1}}, "m1": {}, "m2": {"t": {0}}},
	}, {
		// m0 no longer subscribes to u, u/7 does not exist, gone is gone: m1 gets u/0 at once.
		name:       "invalid claims are dropped and hold nothing back",
		partitions: map[string]int32{"t": 1, "u": 1},
		members: []Subscription{
			owning("m0", 4, map[string][]int32{"t": {0, -1, 3}, "u": {0, 7}, "gone": {0}}, "t"),
			owning("m1", 4, nil, "u", "gone"),
		},
		want: assignment{"m0": {"t": {0}}, "m1": {"u": {0}}},
	}, {
		name:       "a member owning more than its share gives up its highest",
		partitions: map[string]int32{"t": 4},
		members: []Subscription{
			owning("m0", 1, map[string][]int32{"t": {3, 1, 0, 2}}, "t"),
			owning("m1", 1, nil, "t"),
		},
		want: assignment{"m0": {"t": {0, 1}}, "m1": {}},
	}, {
		// Partitions of a topic few members subscribe to are placed first: b gets u/0, a gets
		// the t partitions.
		name:       "different subscriptions",
		partitions: map[string]int32{"t": 3, "u": 1},
		members:    []Subscription{sub("a", "t", "u"), sub("b", "u")},
		want:       assignment{"a": {"t": {0, 1, 2}}, "b": {"u": {0}}},
	}, {
		// Only c subscribes to both; a chain a -> c -> b evens 4/0/2 out to 2/2/2. b gets the
		// u partitions c owned and c a's highest t partitions, all held back this round.
		name:       "different subscriptions: balance through a chain",
		partitions: map[string]int32{"t": 4, "u": 2},
		members: []Subscription{
			owning("a", 1, map[string][]int32{"t": {0, 1, 2, 3}}, "t"),
			owning("b", 1, nil, "u"),
			owning("c", 1, map[string][]int32{"u": {0, 1}}, "t", "u"),
		},
		want: assignment{"a": {"t": {0, 1}}, "b": {}, "c": {}},
	}, {
		name:       "member subscribed to nothing",
		partitions: map[string]int32{"t": 2},
		members:    []Subscription{sub("a"), sub("b", "t"), sub("c", "gone")},
		want:       assignment{"a": {}, "b": {"t": {0, 1}}, "c": {}},
	}, {
		name:       "duplicate member id",
		partitions: map[string]int32{"t": 2, "u": 1},
		members:    []Subscription{sub("a", "t"), sub("a", "u"), sub("b", "t")},
		want:       assignment{"a": {"t": {0}}, "b": {"t": {1}}},
	}, {
		name:       "no members",
		partitions: map[string]int32{"t": 2},
		want:       assignment{},
	}, {
		name: "no partitions",
		members: []Subscription{
			owning("a", 1, map[string][]int32{"t": {0}}, "t"),
		},
		want: assignment{"a": {}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, CooperativeStickyAssignor().Assign(tc.partitions, tc.members))
		})
	}
}

// TestCooperativeStickyMoveChoice checks which partition a member gives up: one the receiver owns,
// else one the giver does not own, else the giver's highest, over the receiver's topics.
func TestCooperativeStickyMoveChoice(t *testing.T) {
	partitions := map[string]int32{"t": 4, "u": 4}
	members := []Subscription{
		owning("m0", 1, map[string][]int32{"t": {1, 3}, "u": {0}}, "t", "u"),
		owning("m1", 1, map[string][]int32{"t": {2}}, "t"),
	}
	for _, tc := range []struct {
		name  string
		place []topicPartition // placed with m0 before the move
		want  topicPartition
	}{
		{"highest owned of the receiver's topics", []topicPartition{{"u", 3}}, topicPartition{"t", 3}},
		{"one the giver does not own", []topicPartition{{"t", 0}, {"u", 3}}, topicPartition{"t", 0}},
		{"one the receiver owns", []topicPartition{{"t", 0}, {"t", 2}}, topicPartition{"t", 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStickyPlan(partitions, members)
			for _, tp := range tc.place {
				i := s.first[slices.Index(s.topics, tp.topic)] + int(tp.partition)
				if s.assigned[i] != -1 {
					s.take(i)
				}
				s.give(i, 0)
			}
			before := slices.Clone(s.assigned)
			s.move(0, 1)
			want := s.first[slices.Index(s.topics, tc.want.topic)] + int(tc.want.partition)
			before[want] = 1
			require.Equal(t, before, s.assigned)
		})
	}
}

// TestCooperativeStickyRounds follows groups through rebalances, each round's result fed back as
// what the members own, one generation later.
func TestCooperativeStickyRounds(t *testing.T) {
	a := CooperativeStickyAssignor()
	partitions := map[string]int32{"t0": 4, "t1": 3}
	members := []Subscription{sub("m0", "t0", "t1"), sub("m1", "t0", "t1"), sub("m2", "t0", "t1")}
	first := a.Assign(partitions, members)
	require.Equal(t, map[string]map[string][]int32{
		"m0": {"t0": {0, 3}, "t1": {2}},
		"m1": {"t0": {1}, "t1": {0}},
		"m2": {"t0": {2}, "t1": {1}},
	}, first)
	members = nextRound(members, first)

	t.Run("unchanged group keeps everything", func(t *testing.T) {
		require.Equal(t, first, a.Assign(partitions, members))
		require.Equal(t, first, a.Assign(partitions, nextRound(members, first)))
	})

	t.Run("member added", func(t *testing.T) {
		// 7 partitions, 4 members: each keeps at least 1 (m0 gives up its highest, t1/2); the
		// newcomer owns nothing yet and gets nothing that others own.
		joined := append(slices.Clone(members), sub("m3", "t0", "t1"))
		round1 := a.Assign(partitions, joined)
		require.Equal(t, map[string]map[string][]int32{
			"m0": {"t0": {0, 3}},
			"m1": {"t0": {1}, "t1": {0}},
			"m2": {"t0": {2}, "t1": {1}},
			"m3": {},
		}, round1)
		round2 := a.Assign(partitions, nextRound(joined, round1))
		require.Equal(t, map[string]map[string][]int32{
			"m0": {"t0": {0, 3}},
			"m1": {"t0": {1}, "t1": {0}},
			"m2": {"t0": {2}, "t1": {1}},
			"m3": {"t1": {2}},
		}, round2)
	})

	t.Run("member added with new partitions", func(t *testing.T) {
		// t0 grows to 9 partitions: 12 over 4 members is 3 each. The new partitions go, one by
		// one, to the members with the fewest: the newcomer gets three of them, nothing owned.
		grown := map[string]int32{"t0": 9, "t1": 3}
		joined := append(slices.Clone(members), sub("m3", "t0", "t1"))
		round1 := a.Assign(grown, joined)
		require.Equal(t, map[string]map[string][]int32{
			"m0": {"t0": {0, 3}, "t1": {2}},
			"m1": {"t0": {1, 6}, "t1": {0}},
			"m2": {"t0": {2, 7}, "t1": {1}},
			"m3": {"t0": {4, 5, 8}},
		}, round1)
		require.Equal(t, round1, a.Assign(grown, nextRound(joined, round1)))
	})

	t.Run("member removed", func(t *testing.T) {
		left := []Subscription{members[0], members[2]}
		got := a.Assign(partitions, left)
		require.Equal(t, map[string]map[string][]int32{
			"m0": {"t0": {0, 3}, "t1": {0, 2}},
			"m2": {"t0": {1, 2}, "t1": {1}},
		}, got)
		require.Equal(t, got, a.Assign(partitions, nextRound(left, got)))
	})

	t.Run("equal-generation conflict resolves in the next round", func(t *testing.T) {
		p := map[string]int32{"t": 2}
		clash := []Subscription{
			owning("m0", 2, map[string][]int32{"t": {0}}, "t"),
			owning("m1", 2, map[string][]int32{"t": {0}}, "t"),
		}
		round1 := a.Assign(p, clash)
		require.Equal(t, map[string]map[string][]int32{"m0": {}, "m1": {"t": {1}}}, round1)
		require.Equal(t, map[string]map[string][]int32{"m0": {"t": {0}}, "m1": {"t": {1}}},
			a.Assign(p, nextRound(clash, round1)))
	})
}

// TestCooperativeStickyMemberAdded checks, over group sizes and partition counts, that the members
// of a balanced group keep at least floor(P/N) of theirs when one joins, that the newcomer gets
// nothing another member owns in that round, and that the next round is balanced.
func TestCooperativeStickyMemberAdded(t *testing.T) {
	a := CooperativeStickyAssignor()
	for n := 1; n <= 6; n++ {
		for p := int32(0); p <= 13; p++ {
			partitions := map[string]int32{"t": p, "u": p / 2}
			var members []Subscription
			for i := range n {
				members = append(members, sub(fmt.Sprintf("m%d", i), "t", "u"))
			}
			members = nextRound(members, a.Assign(partitions, members))
			owned := map[string]map[string][]int32{}
			for _, m := range members {
				owned[m.MemberID] = map[string][]int32{}
				for _, tp := range m.Owned {
					owned[m.MemberID][tp.Topic] = tp.Partitions
				}
			}
			joined := append(members, sub("new", "t", "u"))
			total := int(p + p/2)
			floor := total / len(joined)

			round1 := a.Assign(partitions, joined)
			require.Empty(t, round1["new"], "n=%d p=%d", n, p)
			for _, m := range members {
				kept := 0
				for topic, ps := range round1[m.MemberID] {
					for _, x := range ps {
						require.Contains(t, owned[m.MemberID][topic], x)
						kept++
					}
				}
				require.GreaterOrEqual(t, kept, min(floor, countOf(owned[m.MemberID])), "n=%d p=%d", n, p)
			}

			round2 := a.Assign(partitions, nextRound(joined, round1))
			lo, hi := total, 0
			for _, m := range joined {
				c := countOf(round2[m.MemberID])
				lo, hi = min(lo, c), max(hi, c)
			}
			require.Equal(t, total, sum(round2), "n=%d p=%d", n, p)
			require.LessOrEqual(t, hi-lo, 1, "n=%d p=%d", n, p)
		}
	}
}

func countOf(a map[string][]int32) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func sum(a map[string]map[string][]int32) int {
	n := 0
	for _, m := range a {
		n += countOf(m)
	}
	return n
}

// randomGroup returns partition counts and members with random subscriptions (the same for all
// when equal) and random, overlapping, partly invalid owned partitions and generations.
func randomGroup(r *rand.Rand, equal bool) (map[string]int32, []Subscription) {
	nTopics := 1 + r.IntN(5)
	var topics []string
	partitions := map[string]int32{}
	for i := range nTopics {
		name := fmt.Sprintf("t%d", i)
		topics = append(topics, name)
		if r.IntN(6) > 0 { // else the topic does not exist
			partitions[name] = int32(r.IntN(13))
		}
	}
	pick := func() []string {
		var out []string
		for _, t := range topics {
			if r.IntN(2) == 0 {
				out = append(out, t)
			}
		}
		return out
	}
	common := append(pick(), topics[r.IntN(len(topics))])
	n := 1 + r.IntN(20)
	members := make([]Subscription, n)
	// A previous assignment makes most claims agree; random extra claims add conflicts and
	// invalid ones.
	previous := RoundRobinAssignor().Assign(partitions, []Subscription{{MemberID: "x", Topics: topics}})["x"]
	for i := range members {
		m := &members[i]
		m.MemberID = fmt.Sprintf("m%02d", r.IntN(100)*100+i)
		if r.IntN(4) == 0 {
			m.InstanceID = fmt.Sprintf("i%02d", r.IntN(100))
		}
		m.Topics = common
		if !equal {
			m.Topics = pick()
		}
		m.Generation = int32(r.IntN(4)) - 1
	}
	for t, ps := range previous {
		for _, p := range ps {
			if r.IntN(4) > 0 {
				m := &members[r.IntN(n)]
				m.Owned = append(m.Owned, TopicPartitions{Topic: t, Partitions: []int32{p}})
			}
		}
	}
	for range r.IntN(6) {
		m := &members[r.IntN(n)]
		m.Owned = append(m.Owned, TopicPartitions{
			Topic:      topics[r.IntN(len(topics))],
			Partitions: []int32{int32(r.IntN(16)) - 1},
		})
	}
	return partitions, members
}

type topicPartition struct {
	topic     string
	partition int32
}

// claims returns, for each partition with a valid claim, the member whose claim wins ("" when
// members tie in the highest generation claiming it): an oracle for the assignor's rule.
func claims(partitions map[string]int32, members []Subscription) map[topicPartition]string {
	type claim struct {
		member     string
		generation int32
		tie        bool
	}
	best := map[topicPartition]*claim{}
	for _, m := range members {
		for _, tps := range m.Owned {
			if !slices.Contains(m.Topics, tps.Topic) {
				continue
			}
			for _, p := range tps.Partitions {
				if p < 0 || p >= partitions[tps.Topic] {
					continue
				}
				tp := topicPartition{tps.Topic, p}
				switch c := best[tp]; {
				case c == nil || m.Generation > c.generation:
					best[tp] = &claim{member: m.MemberID, generation: m.Generation}
				case c.member != m.MemberID && m.Generation == c.generation:
					c.tie = true
				}
			}
		}
	}
	out := map[topicPartition]string{}
	for tp, c := range best {
		if c.tie {
			out[tp] = ""
		} else {
			out[tp] = c.member
		}
	}
	return out
}

// checkAssignment checks what every assignment must be: every member present, partitions sorted,
// existing, of subscribed topics, none twice.
func checkAssignment(t *testing.T, partitions map[string]int32, members []Subscription, got map[string]map[string][]int32) {
	t.Helper()
	require.Len(t, got, len(members))
	seen := map[topicPartition]bool{}
	for _, m := range members {
		a, ok := got[m.MemberID]
		require.True(t, ok, m.MemberID)
		for topic, ps := range a {
			require.Contains(t, m.Topics, topic)
			require.NotEmpty(t, ps)
			require.True(t, slices.IsSorted(ps))
			for _, p := range ps {
				require.True(t, p >= 0 && p < partitions[topic], "%s/%d", topic, p)
				tp := topicPartition{topic, p}
				require.False(t, seen[tp], "%s/%d twice", topic, p)
				seen[tp] = true
			}
		}
	}
}

func TestCooperativeStickyProperties(t *testing.T) {
	a := CooperativeStickyAssignor()
	for seed := range uint64(400) {
		equal := seed%2 == 0
		r := rand.New(rand.NewPCG(seed, 42))
		partitions, members := randomGroup(r, equal)
		name := fmt.Sprintf("seed %d", seed)

		got := a.Assign(partitions, members)
		checkAssignment(t, partitions, members, got)
		require.Equal(t, got, a.Assign(partitions, members), name)
		shuffled := slices.Clone(members)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.Equal(t, got, a.Assign(partitions, shuffled), name)

		// The placement before the cooperative adjustment: every partition of a subscribed
		// topic, balanced.
		s := newStickyPlan(partitions, members)
		s.balance()
		checkPlan(t, s)
		plan := emptyAssignment(members)
		s.fill(plan, false)
		checkAssignment(t, partitions, members, plan)
		total := 0
		for topic, n := range partitions {
			if slices.ContainsFunc(members, func(m Subscription) bool { return slices.Contains(m.Topics, topic) }) {
				total += int(max(n, 0))
			}
		}
		require.Equal(t, total, sum(plan), name)
		for _, x := range members {
			for _, y := range members {
				if countOf(plan[x.MemberID]) < countOf(plan[y.MemberID])+2 {
					continue
				}
				require.False(t, equal, "%s: %s has two more than %s", name, x.MemberID, y.MemberID)
				for topic := range plan[x.MemberID] {
					require.NotContains(t, y.Topics, topic, "%s: %s could give %s a partition", name, x.MemberID, y.MemberID)
				}
			}
		}

		// The adjustment: the assignment is the placement less the partitions another member
		// owns and the contested ones.
		owners := claims(partitions, members)
		for _, m := range members {
			want := map[string][]int32{}
			for topic, ps := range plan[m.MemberID] {
				for _, p := range ps {
					if o, ok := owners[topicPartition{topic, p}]; !ok || o == m.MemberID {
						want[topic] = append(want[topic], p)
					}
				}
			}
			require.Equal(t, want, got[m.MemberID], "%s: %s", name, m.MemberID)
		}

		// Stickiness: with equal subscriptions, a member keeps all its won claims up to
		// floor(P/N), and at least floor(P/N) of them.
		if equal {
			floor := total / len(members)
			for _, m := range members {
				won, kept := 0, 0
				for tp, o := range owners {
					if o != m.MemberID {
						continue
					}
					won++
					if slices.Contains(got[m.MemberID][tp.topic], tp.partition) {
						kept++
					}
				}
				require.GreaterOrEqual(t, kept, min(won, floor), "%s: %s", name, m.MemberID)
			}
		}

		// A balanced placement, owned as it is, stays: nothing moves.
		require.Equal(t, plan, a.Assign(partitions, nextRound(members, plan)), name)
	}
}

// checkPlan checks the bookkeeping of a balanced placement.
func checkPlan(t *testing.T, s *stickyPlan) {
	t.Helper()
	n := len(s.members)
	if n == 0 {
		return
	}
	for i, m := range s.order {
		require.Equal(t, i, s.place[m])
		if i > 0 {
			require.LessOrEqual(t, s.count[s.order[i-1]], s.count[m])
		}
	}
	require.Greater(t, len(s.start), s.most()+1)
	for c := range s.start {
		want, _ := slices.BinarySearchFunc(s.order, c, func(m, c int) int { return s.count[m] - c })
		require.Equal(t, want, s.start[c], "start[%d]", c)
	}
	for m := range n {
		require.Equal(t, s.count[m], len(s.own[m])+len(s.foreign[m]))
		require.True(t, slices.IsSorted(s.own[m]))
		held := make([]int, len(s.memberTopics[m]))
		for _, tp := range s.own[m] {
			require.Equal(t, m, s.assigned[tp])
			require.Equal(t, m, s.owner[tp])
			held[s.topicPlace(m, s.topicOf(tp))]++
		}
		for i, tp := range s.foreign[m] {
			require.Equal(t, m, s.assigned[tp])
			require.NotEqual(t, m, s.owner[tp])
			require.Equal(t, i, s.at[tp])
			held[s.topicPlace(m, s.topicOf(tp))]++
		}
		require.Equal(t, held, s.held[m])
	}
	require.NotContains(t, s.assigned, -1)
}

// TestCooperativeStickyOptimal checks, against every placement of small random groups with
// different subscriptions, that the placement's sum of squared counts is the least possible.
func TestCooperativeStickyOptimal(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		partitions := map[string]int32{"a": int32(r.IntN(4)), "b": int32(r.IntN(3)), "c": int32(r.IntN(3))}
		members := make([]Subscription, 1+r.IntN(4))
		for i := range members {
			members[i].MemberID = fmt.Sprintf("m%d", i)
			for _, topic := range []string{"a", "b", "c"} {
				if r.IntN(2) == 0 {
					members[i].Topics = append(members[i].Topics, topic)
				}
			}
			if r.IntN(2) == 0 {
				members[i].Generation = 1
				members[i].Owned = []TopicPartitions{{Topic: "a", Partitions: []int32{0, 1, 2}}, {Topic: "b", Partitions: []int32{int32(i)}}}
			}
		}
		s := newStickyPlan(partitions, members)
		s.balance()
		checkPlan(t, s)
		squares := 0
		for _, c := range s.count {
			squares += c * c
		}

		// Exhaustively: each partition to each member subscribed to its topic.
		var eligible [][]int
		for _, topic := range []string{"a", "b", "c"} {
			for range partitions[topic] {
				var e []int
				for i, m := range members {
					if slices.Contains(m.Topics, topic) {
						e = append(e, i)
					}
				}
				if len(e) > 0 {
					eligible = append(eligible, e)
				}
			}
		}
		best := -1
		counts := make([]int, len(members))
		var search func(int)
		search = func(i int) {
			if i == len(eligible) {
				sq := 0
				for _, c := range counts {
					sq += c * c
				}
				if best == -1 || sq < best {
					best = sq
				}
				return
			}
			for _, m := range eligible[i] {
				counts[m]++
				search(i + 1)
				counts[m]--
			}
		}
		search(0)
		require.Equal(t, best, squares, "seed %d", seed)
	}
}
