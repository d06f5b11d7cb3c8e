package commitlog

import (
	"context"
	"io/fs"
	"path/filepath"
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
	mark       bool // the test's mark when it happened
}

// testMember is a group member whose goroutine calls Next until the test ends, logging what
// Next returns and the listener calls, in order.
type testMember struct {
	gr     *GroupReader
	mark   *atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []memberEvent
	err    error // the error that ended the loop, ctx's excepted
}

// startTestMember makes a member of cfg and starts its goroutine; mark, when not nil, is
// recorded with each event. The member is closed at the end of the test.
func startTestMember(t *testing.T, s *Store, cfg GroupReaderConfig, mark *atomic.Bool) *testMember {
	t.Helper()
	m := &testMember{mark: mark, done: make(chan struct{})}
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
func (m *testMember) count(kind string) int {
	n := 0
	for _, ev := range m.snapshot() {
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
	cfg.SessionTimeout = 300 * time.Millisecond
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

	// b joins: a must heartbeat to learn of the rebalance and rejoin, all while its fetch hangs.
	b, err := s.NewGroupReader(cfg)
	require.NoError(t, err)
	defer b.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		b.Next(ctx)
		return stableWith(s, "workers", a, b)
	}, 10*time.Second, time.Millisecond, "a stays in the group and rebalances while Next fetches")
	release()
	r := <-next
	require.NoError(t, r.err)
	require.Equal(t, int64(10), r.rec.Offset)
	require.Equal(t, []TopicPartition{{Topic: "events", Partition: 0}}, a.Assignment())
}
