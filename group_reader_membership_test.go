package commitlog

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// memberEvent is one thing a testMember's Next did: returned a record, or ran the listener.
type memberEvent struct {
	kind       string // "record", "assigned", "revoked" or "lost"
	tp         TopicPartition
	offset     int64
	generation int32 // the member's generation right after Next returned the record
	parts      []TopicPartition
	mark       int32 // the test's mark when it happened
}

// testMember is a group member whose goroutine calls Next until the test ends, logging what
// Next returns and the listener calls, in order.
type testMember struct {
	gr       *GroupReader
	mark     *atomic.Int32
	consumed *progress // counts the records returned, when not nil
	cancel   context.CancelFunc
	done     chan struct{}

	mu     sync.Mutex
	events []memberEvent
	err    error // the error that ended the loop, ctx's excepted
}

// startTestMember makes a member of cfg and starts its goroutine. The member is closed at the
// end of the test.
func startTestMember(t *testing.T, s *Store, cfg GroupReaderConfig) *testMember {
	t.Helper()
	return startMarkedMember(t, s, cfg, nil, nil)
}

// startMarkedMember is startTestMember with mark, when not nil, recorded with each event, and
// each record returned counted in consumed, when not nil.
func startMarkedMember(t *testing.T, s *Store, cfg GroupReaderConfig, mark *atomic.Int32, consumed *progress) *testMember {
	t.Helper()
	m := &testMember{mark: mark, consumed: consumed, done: make(chan struct{})}
	wrap := func(kind string, next func(context.Context, []TopicPartition)) func(context.Context, []TopicPartition) {
		return func(ctx context.Context, parts []TopicPartition) {
			m.log(memberEvent{kind: kind, parts: slices.Clone(parts)})
			if next != nil {
				next(ctx, parts)
			}
		}
	}
	cfg.OnAssigned = wrap("assigned", cfg.OnAssigned)
	cfg.OnRevoked = wrap("revoked", cfg.OnRevoked)
	cfg.OnLost = wrap("lost", cfg.OnLost)
	gr, err := s.NewGroupReader(cfg)
	require.NoError(t, err)
	m.gr = gr
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for {
			rec, err := gr.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.mu.Lock()
					m.err = err
					m.mu.Unlock()
				}
				return
			}
			gen, _ := gr.Generation()
			m.log(memberEvent{kind: "record", tp: TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, offset: rec.Offset, generation: gen})
			if m.consumed != nil {
				m.consumed.add(1)
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *testMember) log(ev memberEvent) {
	if m.mark != nil {
		ev.mark = m.mark.Load()
	}
	m.mu.Lock()
	m.events = append(m.events, ev)
	m.mu.Unlock()
}

// stop ends the member's goroutine and closes the member.
func (m *testMember) stop() {
	m.cancel()
	<-m.done
	m.gr.Close()
}

func (m *testMember) snapshot() []memberEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

func (m *testMember) loopErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// count returns how many events of kind the member logged.
func (m *testMember) count(kind string) int { return m.countFrom(kind, 0) }

// countFrom returns how many events of kind the member logged from its event from on.
func (m *testMember) countFrom(kind string, from int) int {
	n := 0
	for _, ev := range m.snapshot()[from:] {
		if ev.kind == kind {
			n++
		}
	}
	return n
}

// partitionsOf returns partitions 0 to n-1 of topic.
func partitionsOf(topic string, n int32) []TopicPartition {
	out := make([]TopicPartition, n)
	for i := range out {
		out[i] = TopicPartition{Topic: topic, Partition: int32(i)}
	}
	return out
}

// memberIDs returns the member ids of the group, ordered.
func memberIDs(t *testing.T, s *Store, groupID string) []string {
	t.Helper()
	d, err := s.DescribeGroup(groupID)
	require.NoError(t, err)
	var ids []string
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	return ids
}

// stableWith reports whether the group is Stable with exactly the members given.
func stableWith(s *Store, groupID string, members ...*GroupReader) bool {
	d, err := s.DescribeGroup(groupID)
	if err != nil || d.State != group.Stable || len(d.Members) != len(members) {
		return false
	}
	for _, gr := range members {
		_, id := gr.Generation()
		if !slices.ContainsFunc(d.Members, func(m GroupMemberDescription) bool { return m.MemberID == id }) {
			return false
		}
	}
	return true
}

// gateFS blocks the first ReadAt of a file whose name ends with suffix once armed, until
// released: a fetch that takes as long as the test wants.
type gateFS struct {
	fsys.FS
	suffix  string
	mu      sync.Mutex
	armed   bool
	blocked chan struct{} // closed when a ReadAt blocks
	release chan struct{}
}

func (g *gateFS) arm() {
	g.mu.Lock()
	g.armed, g.blocked, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, g.suffix) {
		return f, err
	}
	// The wrapper does not forward SharesMappings: the segment reads with ReadAt.
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	fsys.File
	g *gateFS
}

func (f *gateFile) ReadAt(p []byte, off int64) (int, error) {
	g := f.g
	g.mu.Lock()
	armed, blocked, release := g.armed, g.blocked, g.release
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(blocked)
		<-release
	}
	return f.File.ReadAt(p, off)
}

// A fetch that takes long (a slow disk, a large decode) must not hold up the member's heartbeats:
// the member stays in the group across its session timeout and follows a rebalance meanwhile.
func TestGroupReaderHeartbeatsWhileNextFetches(t *testing.T) {
	gfs := &gateFS{FS: fsys.NewMemory(), suffix: filepath.Join(partitionDirName("events", 0), segmentName(0)+logSuffix)}
	s := openGroupStore(t, gfs, "store")
	defer s.Close()
	tp := fillGroupTopic(t, s, "events", 1, 10)
	part, err := tp.Partition(0)
	require.NoError(t, err)
	cfg := fastGroup("workers", "events")
	cfg.Assignors = []group.Assignor{group.CooperativeStickyAssignor()}
	// Long enough that a stall of the machine does not expel a (a CI run under -race pauses
	// for hundreds of milliseconds at times); the fetch is held past it below.
	cfg.SessionTimeout = time.Second
	a, err := s.NewGroupReader(cfg)
	require.NoError(t, err)
	defer a.Close()
	readN(t, a, 10)

	// The next fetch of a blocks in the file system.
	gfs.arm()
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(gfs.release) }) }
	defer release() // before a.Close, which waits for the fetch to end
	type result struct {
		rec *Record
		err error
	}
	next := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rec, err := a.Next(ctx)
		next <- result{rec, err}
	}()
	require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("late")}))
	<-gfs.blocked
	blockedAt := time.Now()

	// b joins: a must heartbeat to learn of the rebalance and rejoin, all while its fetch hangs.
	b, err := s.NewGroupReader(cfg)
	require.NoError(t, err)
	defer b.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		b.Next(ctx)
		return stableWith(s, "workers", a, b)
	}, groupWait, time.Millisecond, "a stays in the group and rebalances while Next fetches")
	// The fetch stays blocked past a's session timeout: only heartbeats keep a in the group.
	time.Sleep(time.Until(blockedAt.Add(3 * cfg.SessionTimeout / 2)))
	require.True(t, stableWith(s, "workers", a, b), "a is still in the group a session timeout into the fetch")
	release()
	r := <-next
	require.NoError(t, r.err)
	require.Equal(t, int64(10), r.rec.Offset)
	require.Equal(t, []TopicPartition{{Topic: "events", Partition: 0}}, a.Assignment())
}

// A member removed from the group while it waits in a join (a LeaveGroup naming it, or a new
// instance of its static member id) stops reading its partitions at once: OnLost, an empty
// Assignment, and no record of them until it is given partitions again, although under the
// cooperative protocol it kept reading them while it waited.
func TestGroupMemberRemovedWhileJoiningStopsReading(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static bool
	}{{"left", false}, {"static-replaced", true}} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				s := openGroupStore(t, fsy, t.TempDir())
				defer s.Close()
				tp := fillGroupTopic(t, s, "events", 4, 100)
				cfg := fastGroup("workers", "events")
				cfg.Assignors = []group.Assignor{group.CooperativeStickyAssignor()}
				cfg.SessionTimeout = 30 * time.Second
				cfgA := cfg
				if tc.static {
					cfgA.InstanceID = "a"
				}
				a := startTestMember(t, s, cfgA)
				// c takes half the partitions, then dies: the next rebalance waits for it, up to
				// its session timeout (30 s), and a waits in its join meanwhile.
				c, err := s.NewGroupReader(cfg)
				require.NoError(t, err)
				require.Eventually(t, func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					defer cancel()
					c.Next(ctx)
					return len(c.Assignment()) == 2 && len(a.gr.Assignment()) == 2 && stableWith(s, "workers", a.gr, c)
				}, groupWait, time.Millisecond)
				c.kill()
				owned := a.gr.Assignment()
				genA, idA := a.gr.Generation()

				b := startTestMember(t, s, cfg)
				coord, err := s.GroupCoordinator()
				require.NoError(t, err)
				// a has rejoined when its subscription carries its generation: it waits in the
				// join now, still reading its partitions.
				require.Eventually(t, func() bool {
					d, err := coord.DescribeGroup("workers")
					if err != nil || d.State != group.PreparingRebalance {
						return false
					}
					for _, m := range d.Members {
						if m.MemberID == idA {
							sub, err := group.DecodeSubscription(m.MemberID, m.InstanceID, m.Metadata)
							return err == nil && sub.Generation == genA && len(sub.Owned) > 0
						}
					}
					return false
				}, groupWait, time.Millisecond, "a rejoins")
				require.Equal(t, owned, a.gr.Assignment(), "a reads its partitions while it waits in the join")

				var a2 *testMember
				if tc.static {
					a2 = startTestMember(t, s, cfgA) // takes instance "a" over
				} else {
					errs, err := coord.Leave("workers", []group.LeavingMember{{MemberID: idA, Reason: "test"}})
					require.NoError(t, err)
					require.NoError(t, errs[0])
				}
				require.Eventually(t, func() bool { return a.count("lost") == 1 }, groupWait, time.Millisecond, "OnLost")
				require.Empty(t, a.gr.Assignment())
				if tc.static {
					require.Eventually(t, func() bool { return a.loopErr() != nil }, groupWait, time.Millisecond)
					require.ErrorIs(t, a.loopErr(), ErrFencedInstanceID)
				}
				// More records for everyone: a must read none of them until it has partitions again.
				for p := range int32(4) {
					part, err := tp.Partition(p)
					require.NoError(t, err)
					require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("more")}))
				}
				// c's session ends now rather than in 30 s: the group completes its rebalance.
				errs, err := coord.Leave("workers", []group.LeavingMember{{MemberID: memberOf(c), Reason: "test"}})
				require.NoError(t, err)
				require.NoError(t, errs[0])
				survivors := []*testMember{a, b}
				if tc.static {
					survivors = []*testMember{a2, b}
				}
				require.Eventually(t, func() bool {
					return stableWith(s, "workers", survivors[0].gr, survivors[1].gr) &&
						len(survivors[0].gr.Assignment())+len(survivors[1].gr.Assignment()) == 4
				}, groupWait, time.Millisecond, "the group rebalances without c")

				events := a.snapshot()
				lost := slices.IndexFunc(events, func(ev memberEvent) bool { return ev.kind == "lost" })
				require.Equal(t, owned, events[lost].parts, "OnLost gets what a owned")
				for _, ev := range events[lost+1:] {
					if ev.kind == "assigned" {
						break
					}
					require.NotEqual(t, "record", ev.kind, "a returned %v offset %d after it lost its partitions", ev.tp, ev.offset)
				}
			})
		})
	}
}

func memberOf(gr *GroupReader) string {
	_, id := gr.Generation()
	return id
}

// A killed member keeps its partitions until its session timeout removes it; a closed dynamic
// member leaves at once, so its partitions move without waiting for the session timeout.
func TestGroupDeadAndClosedMembersPartitionsMove(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session time.Duration
		end     func(gr *GroupReader) error
	}{
		{"killed", 2 * time.Second, func(gr *GroupReader) error { gr.kill(); return nil }},
		{"closed", 30 * time.Second, func(gr *GroupReader) error { return gr.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				s := openGroupStore(t, fsy, t.TempDir())
				defer s.Close()
				fillGroupTopic(t, s, "events", 4, 10)
				cfg := fastGroup("workers", "events")
				cfg.SessionTimeout = tc.session
				a, err := s.NewGroupReader(cfg)
				require.NoError(t, err)
				defer a.Close()
				b := startTestMember(t, s, cfg)
				require.Eventually(t, func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					defer cancel()
					a.Next(ctx)
					return len(a.Assignment()) == 2 && len(b.gr.Assignment()) == 2 && stableWith(s, "workers", a, b.gr)
				}, groupWait, time.Millisecond)
				idA := memberOf(a)
				require.NoError(t, tc.end(a))
				if tc.name == "killed" {
					// Nothing told the group: a is a member until its session runs out.
					require.Contains(t, memberIDs(t, s, "workers"), idA)
				}
				require.Eventually(t, func() bool {
					return len(b.gr.Assignment()) == 4 && stableWith(s, "workers", b.gr)
				}, groupWait, time.Millisecond, "b takes a's partitions")
				require.Equal(t, partitionsOf("events", 4), b.gr.Assignment())
				require.NotContains(t, memberIDs(t, s, "workers"), idA)
			})
		})
	}
}

// A static member closed and started again with the same InstanceID within its session timeout
// gets its partitions back without a rebalance: the group's generation does not change.
//
// "joined-once": both members joined in the group's first rebalance (held open by the initial
// rebalance delay), so the restarted instance's subscription is byte for byte its predecessor's.
// "rejoined": the member had rejoined in a later rebalance, so its last subscription carried
// that generation (and, cooperative, its owned partitions), which a restarted instance cannot
// know. Kafka's coordinator keeps the group's generation then too (it rebalances a Stable group
// only when the selected protocol would change: GroupMetadataManager's
// updateStaticMemberThenRebalanceOrCompleteJoin), and so does group.Coordinator's
// replaceStaticMember (group/join.go).
func TestGroupStaticMemberRestartKeepsPartitions(t *testing.T) {
	for _, assignors := range [][]group.Assignor{{group.RangeAssignor()}, {group.CooperativeStickyAssignor()}} {
		for _, rejoined := range []bool{false, true} {
			name := assignors[0].Name() + map[bool]string{false: "/joined-once", true: "/rejoined"}[rejoined]
			t.Run(name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					testStaticMemberRestart(t, fsy, assignors, rejoined)
				})
			})
		}
	}
}

func testStaticMemberRestart(t *testing.T, fsy fsys.FS, assignors []group.Assignor, rejoined bool) {
	opts := groupTestOptions(fsy)
	if !rejoined {
		opts = append(opts, WithGroupInitialRebalanceDelay(2*time.Second)) // b joins within it, even on a stalled machine
	}
	s, err := Open(t.TempDir(), opts...)
	require.NoError(t, err)
	defer s.Close()
	fillGroupTopic(t, s, "events", 4, 10)
	cfg := fastGroup("workers", "events")
	cfg.Assignors = assignors
	cfg.SessionTimeout = 30 * time.Second
	cfgA, cfgB := cfg, cfg
	cfgA.InstanceID, cfgB.InstanceID = "a", "b"
	a, err := s.NewGroupReader(cfgA)
	require.NoError(t, err)
	if rejoined {
		// a is alone in the first generation and rejoins for b.
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			a.Next(ctx)
			return len(a.Assignment()) == 4
		}, groupWait, time.Millisecond)
	}
	b := startTestMember(t, s, cfgB)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		a.Next(ctx)
		return len(a.Assignment()) == 2 && len(b.gr.Assignment()) == 2 && stableWith(s, "workers", a, b.gr)
	}, groupWait, time.Millisecond)
	owned := a.Assignment()
	before, err := s.DescribeGroup("workers")
	require.NoError(t, err)
	if !rejoined {
		require.Equal(t, int32(1), before.Generation, "both joined in the first rebalance")
	}
	revoked := b.count("revoked")
	require.NoError(t, a.Close())
	require.Len(t, memberIDs(t, s, "workers"), 2, "a static member's Close does not leave")

	a, err = s.NewGroupReader(cfgA)
	require.NoError(t, err)
	defer a.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		a.Next(ctx)
		return len(a.Assignment()) > 0
	}, groupWait, time.Millisecond)
	require.Equal(t, owned, a.Assignment())
	after, err := s.DescribeGroup("workers")
	require.NoError(t, err)
	require.Equal(t, before.Generation, after.Generation, "no rebalance")
	require.Equal(t, group.Stable, after.State)
	gen, _ := a.Generation()
	require.Equal(t, before.Generation, gen)
	require.Equal(t, revoked, b.count("revoked"), "b gave nothing up")
}

// A member whose program does not call Next within MaxPollInterval leaves the group: its
// partitions move to the other member, and the next Next runs OnLost and joins again.
func TestGroupMaxPollIntervalTakesPartitionsAway(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		fillGroupTopic(t, s, "events", 4, 10)
		cfg := fastGroup("workers", "events")
		b := startTestMember(t, s, cfg)
		cfgA := cfg
		cfgA.MaxPollInterval = 500 * time.Millisecond
		var lost [][]TopicPartition
		cfgA.OnLost = func(_ context.Context, parts []TopicPartition) { lost = append(lost, parts) }
		a, err := s.NewGroupReader(cfgA)
		require.NoError(t, err)
		defer a.Close()
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			a.Next(ctx)
			return len(a.Assignment()) == 2 && len(b.gr.Assignment()) == 2 && stableWith(s, "workers", a, b.gr)
		}, groupWait, time.Millisecond)
		owned := a.Assignment()
		gen, _ := a.Generation()

		// a's program stops calling Next.
		require.Eventually(t, func() bool {
			return len(b.gr.Assignment()) == 4 && stableWith(s, "workers", b.gr)
		}, groupWait, time.Millisecond, "a's partitions move to b")
		require.Empty(t, lost, "OnLost runs in Next")
		require.Empty(t, a.Assignment())

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		a.Next(ctx)
		cancel()
		require.Equal(t, [][]TopicPartition{owned}, lost)
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			a.Next(ctx)
			return len(a.Assignment()) == 2 && len(b.gr.Assignment()) == 2 && stableWith(s, "workers", a, b.gr)
		}, groupWait, time.Millisecond, "the next Next joins a again")
		gen2, _ := a.Generation()
		require.Greater(t, gen2, gen)
	})
}

// A TopicPattern subscription follows the store's topics: a matching topic created later is
// assigned and read, a deleted one is taken out.
func TestGroupTopicPatternFollowsTopics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		fillGroupTopic(t, s, "ev-a", 2, 5)
		fillGroupTopic(t, s, "other", 2, 5)
		cfg := GroupReaderConfig{Group: "workers", TopicPattern: regexp.MustCompile(`^ev-`), Start: Earliest,
			SessionTimeout: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond, MaxPollInterval: 10 * time.Second}
		a := startTestMember(t, s, cfg)
		b := startTestMember(t, s, cfg)
		union := func() []TopicPartition {
			out := append(a.gr.Assignment(), b.gr.Assignment()...)
			slices.SortFunc(out, compareTP)
			return out
		}
		read := func(topic string) int {
			n := 0
			for _, m := range []*testMember{a, b} {
				for _, ev := range m.snapshot() {
					if ev.kind == "record" && ev.tp.Topic == topic {
						n++
					}
				}
			}
			return n
		}
		require.Eventually(t, func() bool {
			return slices.Equal(union(), partitionsOf("ev-a", 2)) && read("ev-a") == 10
		}, groupWait, time.Millisecond)

		fillGroupTopic(t, s, "ev-b", 2, 5)
		require.Eventually(t, func() bool {
			return slices.Equal(union(), append(partitionsOf("ev-a", 2), partitionsOf("ev-b", 2)...)) && read("ev-b") == 10
		}, groupWait, time.Millisecond, "ev-b is assigned and read")

		require.NoError(t, s.DeleteTopic("ev-a"))
		require.Eventually(t, func() bool {
			d, err := s.DescribeGroup("workers")
			if err != nil || d.State != group.Stable {
				return false
			}
			var assigned []TopicPartition
			for _, m := range d.Members {
				assigned = append(assigned, m.Assignment...)
			}
			slices.SortFunc(assigned, compareTP)
			return slices.Equal(assigned, partitionsOf("ev-b", 2)) && slices.Equal(union(), partitionsOf("ev-b", 2))
		}, groupWait, time.Millisecond, "ev-a is taken out")
		require.Zero(t, read("other"))
		require.NoError(t, a.loopErr())
		require.NoError(t, b.loopErr())
	})
}

// auto.offset.reset: a group without a committed position starts at Start (Latest or Earliest);
// a committed position below the log start offset (retention deleted its records) is handled
// by Reset.
func TestGroupStartAndResetPositions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		fillGroupTopic(t, s, "events", 1, 10)
		for _, start := range []StartPosition{Latest, Earliest} {
			cfg := fastGroup("start-"+map[StartPosition]string{Latest: "latest", Earliest: "earliest"}[start], "events")
			cfg.Start = start
			gr, err := s.NewGroupReader(cfg)
			require.NoError(t, err)
			if start == Latest {
				// Nothing is read of the 10 records there; the first is the next one appended,
				// once the member reads the partition from the log end.
				var early *Record
				require.Eventually(t, func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					defer cancel()
					if rec, _ := gr.Next(ctx); rec != nil {
						early = rec
					}
					return gr.Positions()[TopicPartition{Topic: "events", Partition: 0}] == 10
				}, groupWait, time.Millisecond)
				require.Nil(t, early, "nothing of the records there before")
				tp, err := s.Topic("events")
				require.NoError(t, err)
				part, err := tp.Partition(0)
				require.NoError(t, err)
				require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("new")}))
				rec := readN(t, gr, 1)[0]
				require.Equal(t, int64(10), rec.Offset)
			} else {
				recs := readN(t, gr, 10)
				require.Equal(t, int64(0), recs[0].Offset)
			}
			require.NoError(t, gr.Close())
		}
	})
}

func TestGroupResetBelowLogStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1,
			LogConfig: LogConfig{SegmentBytes: 1024, RetentionBytes: 1024, SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)
		part, err := tp.Partition(0)
		require.NoError(t, err)
		events0 := TopicPartition{Topic: "events", Partition: 0}
		for range 5 {
			require.NoError(t, part.Append(context.Background(), &Record{Value: make([]byte, 100)}))
		}
		for _, policy := range []ResetPolicy{ResetEarliest, ResetLatest, ResetNone} {
			groupID := map[ResetPolicy]string{ResetEarliest: "earliest", ResetLatest: "latest", ResetNone: "none"}[policy]
			require.NoError(t, s.SetGroupPositions(context.Background(), groupID, map[TopicPartition]int64{events0: 5}))
		}
		// Retention deletes the records at and after the committed position 5.
		for i := 0; i < 1000 && part.LogStartOffset() <= 5; i++ {
			require.NoError(t, part.Append(context.Background(), &Record{Value: make([]byte, 100)}))
			_, err := part.ApplyRetention()
			require.NoError(t, err)
		}
		require.Greater(t, part.LogStartOffset(), int64(5), "retention moved the log start past the committed position")
		logStart, logEnd := part.LogStartOffset(), part.LogEndOffset()

		for _, policy := range []ResetPolicy{ResetEarliest, ResetLatest, ResetNone} {
			groupID := map[ResetPolicy]string{ResetEarliest: "earliest", ResetLatest: "latest", ResetNone: "none"}[policy]
			cfg := fastGroup(groupID, "events")
			cfg.Reset = policy
			gr, err := s.NewGroupReader(cfg)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			switch policy {
			case ResetEarliest:
				rec, err := gr.Next(ctx)
				require.NoError(t, err)
				require.Equal(t, logStart, rec.Offset)
			case ResetLatest:
				// Once the member reads from the log end, the next append is its first record.
				var early *Record
				require.Eventually(t, func() bool {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					defer cancel()
					if rec, _ := gr.Next(ctx); rec != nil {
						early = rec
					}
					return gr.Positions()[events0] == logEnd
				}, groupWait, time.Millisecond)
				require.Nil(t, early)
				require.NoError(t, part.Append(context.Background(), &Record{Value: []byte("new")}))
				rec, err := gr.Next(ctx)
				require.NoError(t, err)
				require.Equal(t, logEnd, rec.Offset)
			case ResetNone:
				_, err := gr.Next(ctx)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)
			}
			cancel()
			require.NoError(t, gr.Close())
		}
	})
}

// Errors of the join come from Next: a session timeout outside the store's bounds, assignors that
// share none with the group's members, and a static member's instance id taken by a new
// instance.
func TestGroupReaderJoinErrors(t *testing.T) {
	s := openGroupStore(t, fsys.NewMemory(), "store")
	defer s.Close()
	fillGroupTopic(t, s, "events", 2, 5)
	next := func(gr *GroupReader) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := gr.Next(ctx)
		return err
	}

	t.Run("session-timeout", func(t *testing.T) {
		// groupTestOptions allows 10 ms to 1 h.
		for _, d := range []time.Duration{5 * time.Millisecond, 2 * time.Hour} {
			cfg := fastGroup("bounds", "events")
			cfg.SessionTimeout, cfg.HeartbeatInterval = d, time.Millisecond
			gr, err := s.NewGroupReader(cfg)
			require.NoError(t, err)
			err = next(gr)
			require.ErrorIs(t, err, ErrInvalidSessionTimeout, "%v", d)
			require.ErrorIs(t, next(gr), ErrInvalidSessionTimeout, "the member stays failed")
			require.NoError(t, gr.Close())
		}
	})

	t.Run("inconsistent-protocol", func(t *testing.T) {
		cfg := fastGroup("protocols", "events")
		cfg.Assignors = []group.Assignor{group.RoundRobinAssignor()}
		rr := startTestMember(t, s, cfg)
		require.Eventually(t, func() bool { return len(rr.gr.Assignment()) == 2 }, groupWait, time.Millisecond)
		cfg.Assignors = []group.Assignor{group.RangeAssignor()}
		rg, err := s.NewGroupReader(cfg)
		require.NoError(t, err)
		defer rg.Close()
		require.ErrorIs(t, next(rg), ErrInconsistentGroupProtocol)
		require.Empty(t, rg.Assignment())
		require.Len(t, rr.gr.Assignment(), 2, "the group goes on")
		require.NoError(t, rr.loopErr())
	})

	t.Run("fenced-instance", func(t *testing.T) {
		cfg := fastGroup("static", "events")
		cfg.InstanceID = "worker-1"
		old := startTestMember(t, s, cfg)
		require.Eventually(t, func() bool { return len(old.gr.Assignment()) == 2 }, groupWait, time.Millisecond)
		owned := old.gr.Assignment()
		instance := startTestMember(t, s, cfg)
		require.Eventually(t, func() bool { return old.loopErr() != nil }, groupWait, time.Millisecond)
		require.ErrorIs(t, old.loopErr(), ErrFencedInstanceID)
		require.Empty(t, old.gr.Assignment())
		events := old.snapshot()
		require.Equal(t, "lost", events[len(events)-1].kind)
		require.Equal(t, owned, events[len(events)-1].parts)
		require.Eventually(t, func() bool { return slices.Equal(instance.gr.Assignment(), owned) }, groupWait, time.Millisecond)
		require.NoError(t, instance.loopErr())
	})
}
