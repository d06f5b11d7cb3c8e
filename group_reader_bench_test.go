package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/group"
)

// Benchmarks of consumer groups (GroupReader), each in its own store:
//
//   - BenchmarkGroupRebalance: how long a group takes to go from members being created to every
//     member consuming, on a topic of 128 partitions of a few records each. join=all creates
//     every member at once in a new group (the store's group.initial.rebalance.delay.ms is off,
//     as in groupTestOptions, so the first member's rebalance completes at once and each later
//     arrival starts another); join=one adds one member to a stable group of members-1 that
//     has consumed everything. The clock stops when the coordinator's group is Stable with all
//     the members and an assignment of all 128 partitions (a cooperative rebalance's first
//     round is Stable too, with the moving partitions withheld), every member's Assignment() is
//     what the coordinator assigned it in that generation, and every member has returned at
//     least one record (the new one included).
//     One op is one rebalance; it reports ms/rebalance. Members heartbeat every 10 ms, and a
//     member learns of a rebalance another started from its next heartbeat (as Kafka's
//     consumer does), so the figures include up to one heartbeat interval per round (join=one
//     adds the newcomer at a random point of the members' heartbeat cycle).
//   - BenchmarkGroupConsume: members of one group, each in its own goroutine, reading all of a
//     16-partition topic's records (1,000,000 of 16-byte keys and 100-byte values; 100,000
//     with -short), against one anonymous Reader (reader) reading the same records; in memory
//     (OpenInMemory) and in files (store=os, a temporary folder). One op is every record
//     read once; b.SetBytes counts key and value bytes, and it reports records/s,
//     allocs/record and cpu-ns/record (the process's CPU time, background goroutines included,
//     where the platform gives it: steadier than the wall clock on a shared machine). The
//     group's join is outside the clock: members start calling Next once
//     the group is Stable, so that no rebalance happens while they read and every record is
//     read exactly once (which each run checks, offset by offset).
//
//	go test -run '^$' -bench 'BenchmarkGroup' -benchtime 300ms -count 3 .
//
// (one op of BenchmarkGroupConsume takes longer than 300 ms, so each count reads the records once.)

// groupBenchTopic is the topic of the group benchmarks.
const groupBenchTopic = "events"

// groupBenchConfig is the member configuration of the group benchmarks: heartbeats every 10 ms,
// and timeouts long enough that a loaded machine does not drop members.
func groupBenchConfig(groupID string, assignors []group.Assignor) GroupReaderConfig {
	return GroupReaderConfig{Group: groupID, Topics: []string{groupBenchTopic}, Start: Earliest, Assignors: assignors,
		SessionTimeout: 10 * time.Second, HeartbeatInterval: 10 * time.Millisecond, MaxPollInterval: time.Minute}
}

var groupBenchSeq atomic.Int64

// groupBenchID returns a group id not used before in this process: committed positions and
// members of one run never reach the next.
func groupBenchID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, groupBenchSeq.Add(1))
}

// fillBenchTopic creates groupBenchTopic with parts partitions and appends perPart records of the
// benchmark workload (benchRecord) to each, in batches of up to 1000.
func fillBenchTopic(b *testing.B, s *Store, parts int32, perPart int) *Topic {
	b.Helper()
	t, err := s.CreateTopic(groupBenchTopic, TopicConfig{Partitions: parts})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchRecords(min(perPart, 1000))
	for p := range parts {
		part, err := t.Partition(p)
		if err != nil {
			b.Fatal(err)
		}
		for left := perPart; left > 0; left -= len(batch) {
			if err := part.Append(context.Background(), batch[:min(left, len(batch))]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	return t
}

// benchGoroutines returns a check, to call once everything started after it is closed, that the
// number of goroutines fell back to what it is now: nothing leaked.
func benchGoroutines(b *testing.B) func() {
	before := runtime.NumGoroutine()
	return func() {
		b.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				b.Fatalf("%d goroutines left running, %d before:\n%s", runtime.NumGoroutine(), before, buf)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// groupBenchMember is a GroupReader whose goroutine calls Next until Close, counting records.
type groupBenchMember struct {
	gr      *GroupReader
	records atomic.Int64
	err     atomic.Pointer[error] // an error of Next other than ErrClosed
	done    chan struct{}
}

func startGroupBenchMember(b *testing.B, s *Store, cfg GroupReaderConfig) *groupBenchMember {
	b.Helper()
	gr, err := s.NewGroupReader(cfg)
	if err != nil {
		b.Fatal(err)
	}
	m := &groupBenchMember{gr: gr, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			if _, err := gr.Next(context.Background()); err != nil {
				if !errors.Is(err, ErrClosed) {
					m.err.Store(&err)
				}
				return
			}
			m.records.Add(1)
		}
	}()
	return m
}

// closeGroupBenchMembers closes every member at once and waits for their goroutines; it fails b
// on an error of Close or Next.
func closeGroupBenchMembers(b *testing.B, members []*groupBenchMember) {
	b.Helper()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			errs[i] = m.gr.Close()
			<-m.done
			if p := m.err.Load(); p != nil {
				errs[i] = errors.Join(errs[i], *p)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// groupConsuming reports whether the group is settled with members: Stable, with exactly them,
// its generation's assignment covering all parts partitions (a cooperative rebalance withholds
// the partitions that move until its second round), each member reading what the coordinator
// assigned it in that generation (non-empty) and having returned a record. It fails b on an
// error of a member.
func groupConsuming(b *testing.B, c *group.Coordinator, groupID string, members []*groupBenchMember, parts int32) bool {
	b.Helper()
	for _, m := range members {
		if p := m.err.Load(); p != nil {
			b.Fatalf("Next: %v", *p)
		}
		if m.records.Load() == 0 {
			return false
		}
	}
	d, err := c.DescribeGroup(groupID)
	if errors.Is(err, ErrGroupIDNotFound) {
		return false
	}
	if err != nil {
		b.Fatal(err)
	}
	if d.State != group.Stable || len(d.Members) != len(members) {
		return false
	}
	want := make(map[string][]TopicPartition, len(d.Members))
	assigned := 0
	for _, dm := range d.Members {
		a, err := group.DecodeAssignment(dm.Assignment)
		if err != nil {
			b.Fatal(err)
		}
		want[dm.MemberID] = flattenAssignment(a)
		assigned += len(want[dm.MemberID])
	}
	if assigned != int(parts) {
		return false
	}
	for _, m := range members {
		gen, id := m.gr.Generation()
		if gen != d.Generation || len(want[id]) == 0 || !slices.Equal(m.gr.Assignment(), want[id]) {
			return false
		}
	}
	return true
}

// awaitGroupConsuming waits until groupConsuming holds, looking every 200 µs.
func awaitGroupConsuming(b *testing.B, c *group.Coordinator, groupID string, members []*groupBenchMember, parts int32) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for !groupConsuming(b, c, groupID, members, parts) {
		if time.Now().After(deadline) {
			d, _ := c.DescribeGroup(groupID)
			b.Fatalf("group %s of %d members not consuming after a minute: %s, generation %d, %d members",
				groupID, len(members), d.State, d.Generation, len(d.Members))
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// checkGroupCoverage fails b unless the members' assignments cover the topic's parts partitions,
// each once.
func checkGroupCoverage(b *testing.B, members []*groupBenchMember, parts int32) {
	b.Helper()
	seen := map[TopicPartition]bool{}
	for _, m := range members {
		for _, tp := range m.gr.Assignment() {
			if seen[tp] {
				b.Fatalf("partition %v assigned twice", tp)
			}
			seen[tp] = true
		}
	}
	if len(seen) != int(parts) {
		b.Fatalf("%d of %d partitions assigned", len(seen), parts)
	}
}

var groupBenchAssignors = []struct {
	name      string
	assignors []group.Assignor
}{
	{"range", []group.Assignor{group.RangeAssignor()}},
	{"cooperative-sticky", []group.Assignor{group.CooperativeStickyAssignor()}},
}

// BenchmarkGroupRebalance measures a group's rebalance latency: from creating members to every
// member consuming (see the comment at the top of the file).
func BenchmarkGroupRebalance(b *testing.B) {
	const parts, perPart = 128, 4
	for _, n := range []int{2, 16, 100} {
		for _, join := range []string{"all", "one"} {
			for _, as := range groupBenchAssignors {
				b.Run(fmt.Sprintf("members=%d/join=%s/assignor=%s", n, join, as.name), func(b *testing.B) {
					leaked := benchGoroutines(b)
					s, err := OpenInMemory(WithGroupSessionTimeouts(10*time.Millisecond, time.Hour), WithGroupInitialRebalanceDelay(-1))
					if err != nil {
						b.Fatal(err)
					}
					fillBenchTopic(b, s, parts, perPart)
					c, err := s.GroupCoordinator()
					if err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						id := groupBenchID("rebalance")
						cfg := groupBenchConfig(id, as.assignors)
						var members []*groupBenchMember
						if join == "one" {
							for range n - 1 {
								members = append(members, startGroupBenchMember(b, s, cfg))
							}
							awaitGroupConsuming(b, c, id, members, parts)
							// The members' heartbeat tickers started when they were
							// assigned, just before: wait a random part of an interval so
							// that the newcomer arrives at a random point of their cycle
							// rather than right after a heartbeat.
							time.Sleep(rand.N(cfg.HeartbeatInterval))
						}
						b.StartTimer()
						for len(members) < n {
							members = append(members, startGroupBenchMember(b, s, cfg))
						}
						awaitGroupConsuming(b, c, id, members, parts)
						b.StopTimer()
						checkGroupCoverage(b, members, parts)
						closeGroupBenchMembers(b, members)
					}
					b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/rebalance")
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
					leaked()
				})
			}
		}
	}
}

// groupConsumeRecords is how many records BenchmarkGroupConsume reads in one op.
func groupConsumeRecords() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

// consumeChecker checks that records arrive in offset order from 0 in each partition, none
// skipped or repeated, and counts them.
type consumeChecker struct {
	next []int64 // by partition: the offset expected next
	n    int
}

func newConsumeChecker(parts int32) *consumeChecker {
	return &consumeChecker{next: make([]int64, parts)}
}

func (c *consumeChecker) check(rec *Record) error {
	if rec.Topic != groupBenchTopic || rec.Partition < 0 || int(rec.Partition) >= len(c.next) {
		return fmt.Errorf("record of %s-%d", rec.Topic, rec.Partition)
	}
	if rec.Offset != c.next[rec.Partition] {
		return fmt.Errorf("partition %d: offset %d, want %d", rec.Partition, rec.Offset, c.next[rec.Partition])
	}
	if len(rec.Key) != benchKeySize || len(rec.Value) != benchValueSize {
		return fmt.Errorf("partition %d offset %d: key of %d bytes, value of %d", rec.Partition, rec.Offset, len(rec.Key), len(rec.Value))
	}
	c.next[rec.Partition]++
	c.n++
	return nil
}

// checkConsumed fails b unless the checkers together read every partition to perPart, each
// partition by one of them.
func checkConsumed(b *testing.B, perPart int64, checkers ...*consumeChecker) {
	b.Helper()
	for p := range checkers[0].next {
		var got int64
		for _, c := range checkers {
			if c.next[p] > 0 {
				if got > 0 {
					b.Fatalf("partition %d read by two members", p)
				}
				got = c.next[p]
			}
		}
		if got != perPart {
			b.Fatalf("partition %d: %d records read of %d", p, got, perPart)
		}
	}
}

// BenchmarkGroupConsume measures members of a group reading all of a topic's records, against
// one Reader (see the comment at the top of the file).
func BenchmarkGroupConsume(b *testing.B) {
	const parts = 16
	total := groupConsumeRecords()
	perPart := total / parts
	total = perPart * parts
	// One store of each kind, filled at its first use and shared by the sub-benchmarks. A
	// positive initial rebalance delay makes the members created together join one generation
	// (with none, each arrival would start a rebalance that the members must see through with
	// Next, reading some records twice).
	opts := []Option{WithGroupSessionTimeouts(10*time.Millisecond, time.Hour), WithGroupInitialRebalanceDelay(20 * time.Millisecond)}
	type benchStore struct {
		s *Store
		t *Topic
	}
	stores := map[string]*benchStore{}
	storeOf := func(b *testing.B, kind string) *benchStore {
		if bs := stores[kind]; bs != nil {
			return bs
		}
		var s *Store
		var err error
		if kind == "memory" {
			s, err = OpenInMemory(opts...)
		} else {
			s, err = Open(b.TempDir(), opts...)
		}
		if err != nil {
			b.Fatal(err)
		}
		bs := &benchStore{s: s, t: fillBenchTopic(b, s, parts, perPart)}
		stores[kind] = bs
		return bs
	}
	b.Cleanup(func() {
		for _, bs := range stores {
			_ = bs.s.Close()
		}
	})
	report := func(b *testing.B, mallocs uint64, cpu time.Duration) {
		b.SetBytes(int64(total) * benchRecBytes)
		benchReport(b, b.N*total, mallocs, 1)
		if cpu > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*total), "cpu-ns/record")
		}
	}

	for _, kind := range []string{"memory", "os"} {
		b.Run("reader/store="+kind, func(b *testing.B) {
			bs := storeOf(b, kind)
			leaked := benchGoroutines(b)
			var mallocs uint64
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				r, err := bs.t.NewReader(ReaderConfig{Start: Earliest})
				if err != nil {
					b.Fatal(err)
				}
				c := newConsumeChecker(parts)
				runtime.GC() // the fill's and the last op's garbage, outside the clock
				m0 := benchMallocs()
				c0, _ := processCPU()
				b.StartTimer()
				for c.n < total {
					rec, err := r.Next(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					if err := c.check(rec); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				c1, _ := processCPU()
				cpu += c1 - c0
				mallocs += benchMallocs() - m0
				checkConsumed(b, int64(perPart), c)
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, mallocs, cpu)
			leaked()
		})
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("members=%d/store=%s", n, kind), func(b *testing.B) {
				bs := storeOf(b, kind)
				coord, err := bs.s.GroupCoordinator()
				if err != nil {
					b.Fatal(err)
				}
				leaked := benchGoroutines(b)
				var mallocs uint64
				var cpu time.Duration
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					m, c := consumeAsGroup(b, bs.s, coord, n, parts, perPart)
					mallocs, cpu = mallocs+m, cpu+c
				}
				report(b, mallocs, cpu)
				leaked()
			})
		}
	}
}

// consumeAsGroup creates n members of a new group, waits for the group to be Stable with all of
// them, then starts the clock and lets each member read its partitions to the end in its own
// goroutine; it stops the clock when all are done, checks that every record was read once, and
// closes the members. It returns the allocations made and the process's CPU time (processCPU)
// spent while the clock ran.
func consumeAsGroup(b *testing.B, s *Store, coord *group.Coordinator, n int, parts int32, perPart int) (uint64, time.Duration) {
	b.Helper()
	id := groupBenchID("consume")
	cfg := groupBenchConfig(id, nil)
	readers := make([]*GroupReader, 0, n)
	defer func() {
		for _, gr := range readers {
			if err := gr.Close(); err != nil {
				b.Error(err)
			}
		}
	}()
	for range n {
		gr, err := s.NewGroupReader(cfg)
		if err != nil {
			b.Fatal(err)
		}
		readers = append(readers, gr)
	}
	// The assignment of each member, once the group is Stable with all of them.
	var assigned map[string]int
	deadline := time.Now().Add(time.Minute)
	for assigned == nil {
		if time.Now().After(deadline) {
			b.Fatalf("group %s of %d members not Stable after a minute", id, n)
		}
		time.Sleep(200 * time.Microsecond)
		d, err := coord.DescribeGroup(id)
		if errors.Is(err, ErrGroupIDNotFound) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if d.State != group.Stable || len(d.Members) != n {
			continue
		}
		assigned = map[string]int{}
		for _, dm := range d.Members {
			a, err := group.DecodeAssignment(dm.Assignment)
			if err != nil {
				b.Fatal(err)
			}
			assigned[dm.MemberID] = len(flattenAssignment(a))
		}
	}
	checkers := make([]*consumeChecker, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runtime.GC() // the fill's and the last op's garbage, outside the clock
	m0 := benchMallocs()
	c0, _ := processCPU()
	b.StartTimer()
	for i, gr := range readers {
		_, memberID := gr.Generation()
		want := assigned[memberID] * perPart
		c := newConsumeChecker(parts)
		checkers[i] = c
		wg.Go(func() {
			for c.n < want {
				rec, err := gr.Next(ctx)
				if err == nil {
					err = c.check(rec)
				}
				if err != nil {
					errs[i] = fmt.Errorf("member %d of %d, after %d of %d records: %w", i, n, c.n, want, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	c1, _ := processCPU()
	mallocs := benchMallocs() - m0
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	checkConsumed(b, int64(perPart), checkers...)
	if d, err := coord.DescribeGroup(id); err != nil || d.State != group.Stable || len(d.Members) != n {
		b.Fatalf("the group rebalanced while its members read: %v, %v", d.State, err)
	}
	return mallocs, c1 - c0
}
