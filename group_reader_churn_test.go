package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// kill stops the member as a crashed process would stop: its background goroutine ends, so it
// neither heartbeats nor leaves the group, and nothing is committed. Its partitions stay with it
// in the group until its session timeout removes it. Next returns ErrClosed afterwards. It
// mirrors Close without the commit and the LeaveGroup.
func (gr *GroupReader) kill() {
	if gr.halt() {
		gr.dropReaders()
	}
}

// progress is a counter that goroutines can wait on.
type progress struct {
	mu sync.Mutex
	n  int64
	ch chan struct{} // closed and replaced by every add
}

func newProgress() *progress { return &progress{ch: make(chan struct{})} }

func (p *progress) add(d int64) {
	p.mu.Lock()
	p.n += d
	close(p.ch)
	p.ch = make(chan struct{})
	p.mu.Unlock()
}

// waitFor waits until the counter reaches target; false when ctx ends first.
func (p *progress) waitFor(ctx context.Context, target int64) bool {
	for {
		p.mu.Lock()
		n, ch := p.n, p.ch
		p.mu.Unlock()
		if n >= target {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// idleContext is a context with a deadline, renewed once it passed.
type idleContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (ic *idleContext) renew(parent context.Context) {
	if ic.cancel != nil {
		ic.cancel()
	}
	ic.ctx, ic.cancel = context.WithTimeout(parent, 50*time.Millisecond)
}

// processed is one record as a member processed it: the member's generation read right after
// Next returned the record, and its member id.
type processed struct {
	generation int32
	partition  int32
	offset     int64
	member     string
}

const (
	churnActionNone int32 = iota
	churnActionClose
	churnActionKill
)

// churnMember is one member of the churn test and the goroutine that processes its records.
type churnMember struct {
	slot   int
	gr     *GroupReader
	action atomic.Int32
	cancel context.CancelFunc
	done   chan struct{}
	log    []processed
	// revoked and lost count the listener's calls.
	revoked, lost int
}

const (
	churnPartitions = 16
	churnTopic      = "churn"
	churnGroup      = "churners"
	// churnCommitEvery is how many records a member processes between commits.
	churnCommitEvery = 1000
	// churnEvents is how many joins, closes and kills the test makes while records flow.
	churnEvents = 30
	// churnMaxMembers is the most members alive at once.
	churnMaxMembers = 8
	// churnWindow bounds how far the producer runs ahead of the members' processing.
	churnWindow = 50_000
)

// TestGroupChurn runs a group of up to 8 members through joins, closes and kills at random while
// churnRecords records (1,000,000; fewer under the race detector) flow into a topic of 16
// partitions, and checks the group's invariants: (a) within one generation a partition is
// processed by one member; (b) every record is processed at least once; (c) the group's
// committed position of a partition never moves backwards in __consumer_offsets-0; (d) once the
// producer is done and the survivors have drained the topic, every partition's committed
// position is its log end offset.
func TestGroupChurn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		assignors []group.Assignor
	}{
		{"cooperative-sticky", []group.Assignor{group.CooperativeStickyAssignor()}},
		{"range-eager", []group.Assignor{group.RangeAssignor()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				runGroupChurn(t, fsy, tc.assignors)
			})
		})
	}
}

func runGroupChurn(t *testing.T, fsy fsys.FS, assignors []group.Assignor) {
	start := time.Now()
	s, err := Open(t.TempDir(), groupTestOptions(fsy)...)
	require.NoError(t, err)
	defer s.Close()
	var topic *Topic
	topic, err = s.CreateTopic(churnTopic, TopicConfig{Partitions: churnPartitions,
		LogConfig: LogConfig{SegmentBytes: 4 << 20, SegmentIndexBytes: 64 << 10}})
	require.NoError(t, err)
	parts := make([]*Partition, churnPartitions)
	for i := range parts {
		parts[i], err = topic.Partition(int32(i))
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(2024, 10))
	// The test's deadline: every wait below fails the test rather than hang past it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	done := newProgress() // records processed by all members, duplicates included
	produced := newProgress()
	var producerErr error
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		prng := rand.New(rand.NewPCG(7, 7))
		for n := 0; n < churnRecords; {
			if !done.waitFor(ctx, int64(n)-churnWindow) {
				producerErr = ctx.Err()
				return
			}
			batch := min(1+prng.IntN(400), churnRecords-n)
			recs := make([]*Record, batch)
			for i := range recs {
				recs[i] = &Record{Value: binary.BigEndian.AppendUint64(nil, uint64(n+i))}
			}
			if producerErr = parts[prng.IntN(churnPartitions)].Append(ctx, recs...); producerErr != nil {
				return
			}
			n += batch
			produced.add(int64(batch))
		}
	}()

	errs := make(chan error, 100)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var members []*churnMember
	alive := func() []*churnMember {
		var out []*churnMember
		for _, m := range members {
			if m.action.Load() == churnActionNone {
				out = append(out, m)
			}
		}
		return out
	}
	addMember := func() {
		m := &churnMember{slot: len(members), done: make(chan struct{})}
		cfg := fastGroup(churnGroup, churnTopic)
		cfg.Assignors = assignors
		cfg.SessionTimeout = time.Second
		cfg.HeartbeatInterval = 50 * time.Millisecond
		cfg.MaxPollInterval = 30 * time.Second
		commit := func() bool {
			err := m.gr.Commit(context.Background())
			switch {
			case err == nil:
				return true
			case errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrIllegalGeneration), errors.Is(err, ErrUnknownMemberID):
				return false // the member rejoins; its records are committed later or read again
			}
			report(fmt.Errorf("member %d: commit: %w", m.slot, err))
			return false
		}
		cfg.OnRevoked = func(context.Context, []TopicPartition) {
			m.revoked++
			commit()
		}
		cfg.OnLost = func(context.Context, []TopicPartition) { m.lost++ }
		m.gr, err = s.NewGroupReader(cfg)
		require.NoError(t, err)
		mctx, mcancel := context.WithCancel(ctx)
		m.cancel = mcancel
		members = append(members, m)
		go func() {
			defer close(m.done)
			var sinceCommit, unreported int64
			// idle ends 50 ms after it is made: Next then says that there was nothing to read.
			var idle idleContext
			idle.renew(mctx)
			defer idle.cancel()
			for {
				switch m.action.Load() {
				case churnActionClose:
					done.add(unreported)
					commit()
					if err := m.gr.Close(); err != nil {
						report(fmt.Errorf("member %d: close: %w", m.slot, err))
					}
					return
				case churnActionKill:
					done.add(unreported)
					m.gr.kill()
					return
				}
				rec, err := m.gr.Next(idle.ctx)
				switch {
				case err == nil:
					gen, id := m.gr.Generation()
					m.log = append(m.log, processed{generation: gen, partition: rec.Partition, offset: rec.Offset, member: id})
					sinceCommit++
					if unreported++; unreported == 256 {
						done.add(unreported)
						unreported = 0
					}
					if sinceCommit >= churnCommitEvery && commit() {
						sinceCommit = 0
					}
				case errors.Is(err, context.DeadlineExceeded) && mctx.Err() == nil:
					// Nothing to read for now: report and commit what was processed.
					done.add(unreported)
					unreported = 0
					if sinceCommit > 0 && commit() {
						sinceCommit = 0
					}
					idle.renew(mctx)
				case mctx.Err() != nil:
					if m.action.Load() == churnActionNone {
						return // the test's deadline
					}
				default:
					report(fmt.Errorf("member %d: next: %w", m.slot, err))
					return
				}
			}
		}()
	}
	stop := func(m *churnMember, action int32) {
		m.action.Store(action)
		m.cancel()
		<-m.done
	}
	defer func() {
		for _, m := range alive() {
			stop(m, churnActionClose)
		}
	}()

	for range 4 {
		addMember()
	}
	var joins, closes, kills int
	for i := range churnEvents {
		// Each event waits for the members to have processed its share of the records, so that
		// records flow between the events.
		target := int64(i+1) * churnRecords / (churnEvents + 2)
		require.True(t, done.waitFor(ctx, target), "processing stalled below %d records", target)
		live := alive()
		switch r := rng.Float64(); {
		case len(live) == 1 || (len(live) < churnMaxMembers && r < 0.4):
			addMember()
			joins++
		case r < 0.65:
			stop(live[rng.IntN(len(live))], churnActionClose)
			closes++
		default:
			stop(live[rng.IntN(len(live))], churnActionKill)
			kills++
		}
	}
	for len(alive()) < 3 {
		addMember()
		joins++
	}
	survivors := alive()

	<-producerDone
	require.NoError(t, producerErr)
	ends := make(map[int32]int64, churnPartitions)
	var total int64
	for _, p := range parts {
		ends[p.ID()] = p.LogEndOffset()
		total += p.LogEndOffset()
	}
	require.Equal(t, int64(churnRecords), total)

	// The last rebalance: the killed members' sessions run out, the survivors hold every
	// partition between them and drain the topic. Under the cooperative protocol a Stable group
	// may hold fewer partitions for a moment (its first rebalance revoked them, the second gives
	// them out), so the whole assignment is part of what is waited for.
	var assigned []TopicPartition
	require.Eventually(t, func() bool {
		d, err := s.DescribeGroup(churnGroup)
		if err != nil || d.State != group.Stable || len(d.Members) != len(survivors) {
			return false
		}
		if len(d.Positions) != churnPartitions {
			return false
		}
		for _, p := range d.Positions {
			if p.Offset != ends[p.Partition] {
				return false
			}
		}
		assigned = assigned[:0]
		for _, m := range d.Members {
			assigned = append(assigned, m.Assignment...)
		}
		return len(assigned) >= churnPartitions
	}, 60*time.Second, 10*time.Millisecond, "the survivors hold every partition, drain the topic and commit its end")
	slices.SortFunc(assigned, compareTP)
	require.Len(t, assigned, churnPartitions, "the survivors hold each partition once")
	for i, tp := range assigned {
		require.Equal(t, TopicPartition{Topic: churnTopic, Partition: int32(i)}, tp)
	}
	for _, m := range survivors {
		stop(m, churnActionClose)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// (a) One member per partition and generation.
	type genPart struct {
		generation int32
		partition  int32
	}
	owner := map[genPart]string{}
	seen := make([][]bool, churnPartitions)
	for p := range seen {
		seen[p] = make([]bool, ends[int32(p)])
	}
	var processedCount, revoked, lost int
	for _, m := range members {
		revoked += m.revoked
		lost += m.lost
		for _, pr := range m.log {
			processedCount++
			seen[pr.partition][pr.offset] = true
			if pr.generation < 0 {
				continue
			}
			k := genPart{pr.generation, pr.partition}
			if o, ok := owner[k]; !ok {
				owner[k] = pr.member
			} else if o != pr.member {
				require.Failf(t, "a partition processed by two members in one generation",
					"generation %d partition %d: members %s and %s (offset %d)", pr.generation, pr.partition, o, pr.member, pr.offset)
			}
		}
	}
	// (b) Every record at least once.
	for p := range seen {
		missing := 0
		first := int64(-1)
		for off, ok := range seen[p] {
			if !ok {
				if missing == 0 {
					first = int64(off)
				}
				missing++
			}
		}
		require.Zero(t, missing, "partition %d: %d records never processed, the first at offset %d", p, missing, first)
	}
	// (c) No commit moves a partition backwards, in the order of __consumer_offsets-0.
	last := map[int32]int64{}
	commits := 0
	_, err = replayGroups(s.txn.offsets, groupReplay{offset: func(key, value []byte) error {
		if len(key) < 2 || binary.BigEndian.Uint16(key) > 1 || value == nil {
			return nil // a group record, or a tombstone
		}
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return err
		}
		if k.Group != churnGroup || k.Topic != churnTopic {
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return err
		}
		commits++
		if prev, ok := last[k.Partition]; ok && v.Offset < prev {
			return fmt.Errorf("partition %d committed %d after %d", k.Partition, v.Offset, prev)
		}
		last[k.Partition] = v.Offset
		return nil
	}}, func(msg string, args ...any) { t.Errorf("%s %v", msg, args) })
	require.NoError(t, err)
	// (d) The committed positions are the log end offsets, in the log as in the group.
	for p := range int32(churnPartitions) {
		require.Equal(t, ends[p], last[p], "partition %d: the last commit in __consumer_offsets-0", p)
	}
	d, err := s.DescribeGroup(churnGroup)
	require.NoError(t, err)
	require.Equal(t, group.Empty, d.State)
	require.Len(t, d.Positions, churnPartitions)
	for _, p := range d.Positions {
		require.Equal(t, ends[p.Partition], p.Offset, "partition %d", p.Partition)
		require.Zero(t, p.Lag)
	}
	t.Logf("%d records, %d processed (%d again), %d members (%d joined later, %d closed, %d killed), %d generations, "+
		"%d commits, %d revocations, %d losses, %v",
		churnRecords, processedCount, processedCount-churnRecords, len(members), joins, closes, kills, d.Generation,
		commits, revoked, lost, time.Since(start).Round(time.Millisecond))
}
