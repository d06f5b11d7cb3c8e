package commitlog

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Two members read a topic that keeps receiving appends; a third joins. Under cooperative-sticky
// the two keep returning records of their partitions all through the rebalance, the wait in its
// join phase included, and OnRevoked gets only the partitions that move: exactly those the new
// member ends up with. Under range (eager) each of the two gives up every partition it had
// before it rejoins, and reads nothing until it is assigned again.
//
// A fourth member, of the same group but subscribed to another topic, holds the join phase open:
// it is killed before the third member joins, so the group waits for it (its session timeout is
// 30 s) until the test removes it with a LeaveGroup, once it has seen what it wanted.
func TestGroupCooperativeRebalanceKeepsPartitionsFlowing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		assignors []group.Assignor
	}{
		{"cooperative-sticky", []group.Assignor{group.CooperativeStickyAssignor()}},
		{"range-eager", []group.Assignor{group.RangeAssignor()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				testRebalanceWindow(t, fsy, tc.assignors, tc.assignors[0].Protocol() == group.Cooperative)
			})
		})
	}
}

func testRebalanceWindow(t *testing.T, fsy fsys.FS, assignors []group.Assignor, cooperative bool) {
	const partitions = 6
	s := openGroupStore(t, fsy, t.TempDir())
	defer s.Close()
	topic, err := s.CreateTopic("events", TopicConfig{Partitions: partitions, LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
	require.NoError(t, err)
	_, err = s.CreateTopic("other", TopicConfig{Partitions: 1, LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
	require.NoError(t, err)

	// The producer appends to every partition in turn, never more than 5000 records ahead of
	// the members.
	consumed := newProgress()
	ctx, cancel := context.WithCancel(context.Background())
	producerDone := make(chan error, 1)
	go func() {
		var produced int64
		for {
			if !consumed.waitFor(ctx, produced-5000) {
				producerDone <- nil
				return
			}
			for p := range int32(partitions) {
				part, err := topic.Partition(p)
				if err == nil {
					recs := make([]*Record, 10)
					for i := range recs {
						recs[i] = &Record{Value: []byte("x")}
					}
					err = part.Append(ctx, recs...)
				}
				if err != nil {
					if ctx.Err() != nil {
						err = nil // the test is over
					}
					producerDone <- err
					return
				}
				produced += 10
			}
		}
	}()
	defer func() {
		cancel()
		require.NoError(t, <-producerDone)
	}()

	cfg := fastGroup("workers", "events")
	cfg.Assignors = assignors
	// window marks each member's events from the moment c is created until c has its first
	// partitions.
	var window atomic.Int32
	a := startMarkedMember(t, s, cfg, &window, consumed)
	b := startMarkedMember(t, s, cfg, &window, consumed)
	cfgD := cfg
	cfgD.Topics = []string{"other"}
	cfgD.SessionTimeout = 30 * time.Second
	d, err := s.NewGroupReader(cfgD)
	require.NoError(t, err)
	defer d.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		d.Next(ctx)
		return len(a.gr.Assignment()) == partitions/2 && len(b.gr.Assignment()) == partitions/2 && len(d.Assignment()) == 1 &&
			stableWith(s, "workers", a.gr, b.gr, d) && a.count("record") > 0 && b.count("record") > 0
	}, groupWait, time.Millisecond)
	idD := memberOf(d)
	d.kill()
	before := map[*testMember][]TopicPartition{a: a.gr.Assignment(), b: b.gr.Assignment()}
	mark := map[*testMember]int{a: len(a.snapshot()), b: len(b.snapshot())}

	cfgC := cfg
	cfgC.OnAssigned = func(_ context.Context, parts []TopicPartition) {
		if len(parts) > 0 {
			window.Store(0)
		}
	}
	window.Store(1)
	c := startMarkedMember(t, s, cfgC, nil, consumed)

	// a and b rejoin (their subscriptions carry their generation), and the group waits for d.
	coord, err := s.GroupCoordinator()
	require.NoError(t, err)
	rejoined := func() bool {
		desc, err := coord.DescribeGroup("workers")
		if err != nil || desc.State != group.PreparingRebalance {
			return false
		}
		n := 0
		for _, m := range desc.Members {
			for _, tm := range []*testMember{a, b} {
				if gen, id := tm.gr.Generation(); m.MemberID == id {
					if sub, err := group.DecodeSubscription(m.MemberID, m.InstanceID, m.Metadata); err == nil && sub.Generation == gen {
						n++
					}
				}
			}
		}
		return n == 2
	}
	require.Eventually(t, rejoined, groupWait, time.Millisecond, "a and b rejoin")
	for _, m := range []*testMember{a, b} {
		if cooperative {
			// While they wait in the join, they read every partition they own: a record of each
			// after both rejoined.
			from := len(m.snapshot())
			require.Eventually(t, func() bool {
				seen := map[TopicPartition]bool{}
				for _, ev := range m.snapshot()[from:] {
					if ev.kind == "record" {
						seen[ev.tp] = true
					}
				}
				return len(seen) == len(before[m])
			}, groupWait, time.Millisecond, "records flow while the member waits in the join")
			require.Zero(t, m.countFrom("revoked", mark[m]))
			require.Equal(t, before[m], m.gr.Assignment())
		} else {
			// Each gave up every partition before it rejoined.
			require.Empty(t, m.gr.Assignment())
			require.Equal(t, 1, m.countFrom("revoked", mark[m]))
		}
	}
	require.True(t, rejoined(), "the group still waits for d")

	// d leaves: the rebalance completes.
	errs, err := coord.Leave("workers", []group.LeavingMember{{MemberID: idD, Reason: "test"}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Eventually(t, func() bool {
		return len(a.gr.Assignment()) == partitions/3 && len(b.gr.Assignment()) == partitions/3 &&
			len(c.gr.Assignment()) == partitions/3 && stableWith(s, "workers", a.gr, b.gr, c.gr)
	}, groupWait, time.Millisecond, "c gets its share")
	require.Zero(t, window.Load())
	moved := c.gr.Assignment()

	var revokedAll []TopicPartition
	for _, m := range []*testMember{a, b} {
		events := m.snapshot()[mark[m]:]
		var revoked []TopicPartition
		inWindow, keptInWindow := 0, 0
		revokedAt := -1
		for i, ev := range events {
			switch ev.kind {
			case "revoked":
				revoked = append(revoked, ev.parts...)
				if revokedAt < 0 {
					revokedAt = i
				}
			case "record":
				if ev.mark == 1 {
					inWindow++
					if !slices.Contains(moved, ev.tp) {
						keptInWindow++
					}
				}
			}
		}
		slices.SortFunc(revoked, compareTP)
		after := m.gr.Assignment()
		t.Logf("member %v -> %v: revoked %v; %d records in the rebalance window, %d of partitions it kept",
			before[m], after, revoked, inWindow, keptInWindow)
		if cooperative {
			for _, tp := range revoked {
				require.Contains(t, before[m], tp, "a member revokes only partitions it had")
			}
			kept := slices.DeleteFunc(slices.Clone(before[m]), func(tp TopicPartition) bool { return slices.Contains(revoked, tp) })
			require.Equal(t, kept, after, "a member keeps what it did not revoke, and gets nothing new")
			require.Positive(t, keptInWindow, "records of the partitions kept flow during the rebalance window")
		} else {
			require.Equal(t, before[m], revoked, "eager: OnRevoked gets every partition of the member")
			// Between the revocation and the next assignment the member reads nothing.
			for _, ev := range events[revokedAt+1:] {
				if ev.kind == "assigned" {
					break
				}
				require.NotEqual(t, "record", ev.kind, "a record of %v after the revocation", ev.tp)
			}
		}
		require.Zero(t, m.count("lost"))
		revokedAll = append(revokedAll, revoked...)
	}
	slices.SortFunc(revokedAll, compareTP)
	if cooperative {
		require.Equal(t, moved, revokedAll, "exactly the partitions that moved to c were revoked")
	} else {
		require.Equal(t, partitionsOf("events", partitions), revokedAll, "eager: every partition was revoked")
	}
	all := slices.Concat(a.gr.Assignment(), b.gr.Assignment(), c.gr.Assignment())
	slices.SortFunc(all, compareTP)
	require.Equal(t, partitionsOf("events", partitions), all)
	for _, m := range []*testMember{a, b, c} {
		require.NoError(t, m.loopErr())
	}
}
