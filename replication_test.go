package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The replication tests put a leader and its followers in different stores (three file stores
// in three temporary directories, or three in-memory stores), link each follower to its leader
// through repLink (which can pause a follower's fetches or delay them at random), and check what
// Kafka's replication protocol promises: identical logs, the high watermark as the bound of what
// readers see and of what AcksAll acknowledges, the in-sync replicas, and truncation by leader
// epochs after a failover.

const repTopic = "events"

// repWait bounds every wait on a condition of these tests; repTick is how often it is checked.
const (
	repWait = 30 * time.Second
	repTick = time.Millisecond
)

// repOptions are the options of every store of these tests: no fsync (the tests are about
// replication, not durability), no background retention, and the given clock.
func repOptions(now func() time.Time) []Option {
	return []Option{WithClock(now), WithSync(SyncNever), WithRetentionCheckInterval(-1)}
}

// repClock is a clock the test moves by hand.
type repClock struct {
	mu  sync.Mutex
	now time.Time
}

func newRepClock() *repClock { return &repClock{now: testEpoch} }

func (c *repClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *repClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// repLink is a follower's way to its leader: it passes every call through, and can hold calls
// (pause: a call neither starts nor returns while paused) or delay each fetch by a random time.
type repLink struct {
	inner    Leader
	clock    func() time.Time // the leader's clock, to record when fetches start
	maxDelay time.Duration

	mu        sync.Mutex
	paused    bool
	resumed   chan struct{} // closed by resume
	fetches   int           // fetches completed
	blocked   int           // calls waiting at the gate
	lastStart time.Time     // the leader-clock time at the start of the latest completed fetch
}

func newRepLink(inner Leader, clock func() time.Time) *repLink {
	if clock == nil {
		clock = fixedClock
	}
	return &repLink{inner: inner, clock: clock}
}

func (l *repLink) pause() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.paused {
		l.paused, l.resumed = true, make(chan struct{})
	}
}

func (l *repLink) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused {
		l.paused = false
		close(l.resumed)
	}
}

// gate waits while the link is paused.
func (l *repLink) gate(ctx context.Context) error {
	for {
		l.mu.Lock()
		paused, ch := l.paused, l.resumed
		l.mu.Unlock()
		if !paused {
			return nil
		}
		l.setBlocked(1)
		select {
		case <-ch:
			l.setBlocked(-1)
		case <-ctx.Done():
			l.setBlocked(-1)
			return ctx.Err()
		}
	}
}

func (l *repLink) setBlocked(d int) {
	l.mu.Lock()
	l.blocked += d
	l.mu.Unlock()
}

// held reports whether the follower's call is held at the gate: a paused follower then makes
// no progress that the leader could see.
func (l *repLink) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocked > 0
}

// startedSince reports whether a fetch that started at or after t (leader clock) has completed.
func (l *repLink) startedSince(t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lastStart.Before(t) && l.fetches > 0
}

func (l *repLink) Fetch(ctx context.Context, req FetchRequest) (FetchResponse, error) {
	if err := l.gate(ctx); err != nil {
		return FetchResponse{}, err
	}
	start := l.clock()
	if l.maxDelay > 0 {
		t := time.NewTimer(rand.N(l.maxDelay + 1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return FetchResponse{}, ctx.Err()
		}
	}
	resp, err := l.inner.Fetch(ctx, req)
	if gerr := l.gate(ctx); gerr != nil {
		return FetchResponse{}, gerr
	}
	l.mu.Lock()
	l.fetches++
	if start.After(l.lastStart) || l.fetches == 1 {
		l.lastStart = start
	}
	l.mu.Unlock()
	return resp, err
}

func (l *repLink) EpochEndOffset(ctx context.Context, epoch int32) (EpochEndOffset, error) {
	if err := l.gate(ctx); err != nil {
		return EpochEndOffset{}, err
	}
	return l.inner.EpochEndOffset(ctx, epoch)
}

// repOpen opens env's store with opts and returns it and partition 0 of repTopic, created with
// cfg when the store does not hold it yet. The store is closed at the end of the test.
func repOpen(t *testing.T, env *storeEnv, cfg TopicConfig, opts ...Option) (*Store, *Partition) {
	t.Helper()
	s := env.mustOpen(t, opts...)
	tp, err := s.Topic(repTopic)
	if errors.Is(err, ErrUnknownTopic) {
		tp, err = s.CreateTopic(repTopic, cfg)
	}
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	return s, p
}

// repFollow makes p a follower in epoch and starts its fetch loop against leader; the loop is
// stopped at the end of the test (before the stores opened earlier close).
func repFollow(t *testing.T, p *Partition, epoch int32, leader Leader, id string) *ReplicaFetcher {
	t.Helper()
	require.NoError(t, p.Replica().BecomeFollower(epoch))
	f, err := p.Replica().Follow(leader, FollowerConfig{ReplicaID: id, MaxWait: 20 * time.Millisecond, Backoff: 2 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// repRecs returns n records numbered from from, values prefix-i, timestamps testEpoch + i ms.
func repRecs(prefix string, from, n int) []*Record {
	out := make([]*Record, n)
	for i := range out {
		out[i] = &Record{Key: fmt.Appendf(nil, "k%d", from+i), Value: fmt.Appendf(nil, "%s-%d", prefix, from+i),
			Timestamp: testEpoch.Add(time.Duration(from+i) * time.Millisecond)}
	}
	return out
}

// repValues returns "offset:value" for each record.
func repValues(recs []*Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%d:%s", r.Offset, r.Value)
	}
	return out
}

// repExpect returns "offset:prefix-offset" for offsets from to from+n-1.
func repExpect(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%d:%s-%d", from+i, prefix, from+i)
	}
	return out
}

// repReadAll reads every record of p below its high watermark.
func repReadAll(t *testing.T, p *Partition) []*Record {
	t.Helper()
	var out []*Record
	for off := p.LogStartOffset(); off < p.HighWatermark(); {
		recs, err := p.ReadRecords(off, 1<<20)
		require.NoError(t, err, "read at %d", off)
		require.NotEmpty(t, recs, "read at %d", off)
		out = append(out, recs...)
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

// repLogFiles returns the contents of the .log files of p's folder in env, by name.
func repLogFiles(t *testing.T, env *storeEnv) map[string][]byte {
	t.Helper()
	dir := env.path(repTopic + "-0")
	out := map[string][]byte{}
	for _, name := range fsListDir(t, env.FS(), dir) {
		if strings.HasSuffix(name, logSuffix) {
			out[name] = fsReadFile(t, env.FS(), filepath.Join(dir, name))
		}
	}
	return out
}

// repEpochFile returns the leader-epoch-checkpoint of the partition folder in env.
func repEpochFile(t *testing.T, env *storeEnv) string {
	t.Helper()
	return string(fsReadFile(t, env.FS(), env.path(repTopic+"-0", leaderEpochFileName)))
}

// TestReplicationSteadyState: a leader with two followers takes 10,000 records in AcksAll
// batches of 10. Every append returns only once the high watermark has passed its records and
// both followers hold them; at the end the three partitions hold byte-identical .log files and
// leader-epoch checkpoints, and the leader sees both followers caught up and in sync.
func TestReplicationSteadyState(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		envs := []*storeEnv{env, env.another(t), env.another(t)}
		_, leader := repOpen(t, envs[0], TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1", "f2"}}))
		followers := make([]*Partition, 2)
		for i := range followers {
			_, followers[i] = repOpen(t, envs[i+1], TopicConfig{}, repOptions(fixedClock)...)
			repFollow(t, followers[i], 1, leader.Replica(), fmt.Sprintf("f%d", i+1))
		}

		const total, per = 10_000, 10
		for i := 0; i < total; i += per {
			recs := repRecs("v", i, per)
			require.NoError(t, leader.Append(ctx, recs...))
			last := recs[per-1].Offset
			require.Equal(t, int64(i+per-1), last)
			require.Greater(t, leader.HighWatermark(), last, "append of %d returned below the high watermark", last)
			for j, f := range followers {
				require.Greater(t, f.LogEndOffset(), last, "append of %d returned before follower f%d held it", last, j+1)
			}
		}
		require.Equal(t, int64(total), leader.LogEndOffset())
		require.Equal(t, int64(total), leader.HighWatermark())
		require.Equal(t, []string{"f1", "f2"}, leader.Replica().ISR())
		for _, f := range followers {
			require.Eventually(t, func() bool { return f.HighWatermark() == total }, repWait, repTick)
			require.Equal(t, int64(total), f.LogEndOffset())
			require.False(t, f.Replica().IsLeader())
			require.Equal(t, int32(1), f.Replica().LeaderEpoch())
		}
		require.Eventually(t, func() bool {
			rs := leader.Replica().Replicas()
			return rs[0].LogEndOffset == total && rs[1].LogEndOffset == total
		}, repWait, repTick)
		for _, r := range leader.Replica().Replicas() {
			require.True(t, r.InSync, r.ID)
			require.Equal(t, int64(0), r.Lag, r.ID)
		}

		want := repLogFiles(t, envs[0])
		require.Len(t, want, 1)
		for name, b := range want {
			require.NotEmpty(t, b, name)
			hs := batchHeaders(t, b)
			require.Len(t, hs, total/per)
			for _, h := range hs {
				require.Equal(t, int32(1), h.PartitionLeaderEpoch, "batch at %d", h.BaseOffset)
			}
		}
		require.Equal(t, "0\n1\n1 0\n", repEpochFile(t, envs[0]))
		for i := 1; i < 3; i++ {
			got := repLogFiles(t, envs[i])
			require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)), "follower f%d", i)
			for name, b := range want {
				requireSameBytes(t, b, got[name], fmt.Sprintf("follower f%d %s", i, name))
			}
			require.Equal(t, "0\n1\n1 0\n", repEpochFile(t, envs[i]), "follower f%d", i)
		}
		requireSameRecords(t, withOffsets(repRecs("v", 0, total), 0), repReadAll(t, followers[1]))
	})
}

// TestReplicationISRShrinkAndExpand: a follower whose fetches stop leaves the in-sync replicas
// once LagTimeMax has passed on the leader's clock, not before; the high watermark moves on with
// the remaining follower; AcksAll appends then fail with ErrNotEnoughReplicas (min.insync.replicas
// 3) and write nothing; once the follower fetches again it catches up, rejoins, and AcksAll
// appends succeed.
func TestReplicationISRShrinkAndExpand(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		clock := newRepClock()
		cfg := TopicConfig{LogConfig: LogConfig{MinInsyncReplicas: 3}}
		_, leader := repOpen(t, env, cfg, repOptions(clock.Now)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 0, Followers: []string{"f1", "f2"}, LagTimeMax: 10 * time.Second}))
		links := []*repLink{newRepLink(leader.Replica(), clock.Now), newRepLink(leader.Replica(), clock.Now)}
		followers := make([]*Partition, 2)
		for i := range followers {
			_, followers[i] = repOpen(t, env.another(t), cfg, repOptions(fixedClock)...)
			repFollow(t, followers[i], 0, links[i], fmt.Sprintf("f%d", i+1))
		}

		require.NoError(t, leader.Append(ctx, repRecs("v", 0, 10)...))
		require.Equal(t, int64(10), leader.HighWatermark())
		require.Equal(t, []string{"f1", "f2"}, leader.Replica().ISR())

		// f2 stops fetching. Its last fetch, at time T0, was from 10: caught up.
		links[1].pause()
		require.Eventually(t, links[1].held, repWait, repTick)
		start := clock.Now()
		for step := 1; step <= 11; step++ {
			now := clock.Advance(time.Second)
			require.Eventually(t, func() bool { return links[0].startedSince(now) }, repWait, repTick, "step %d", step)
			if step <= 10 {
				require.Equal(t, []string{"f1", "f2"}, leader.Replica().ISR(), "%s after f2's last fetch", now.Sub(start))
			} else {
				require.Equal(t, []string{"f1"}, leader.Replica().ISR(), "%s after f2's last fetch", now.Sub(start))
			}
		}
		rs := leader.Replica().Replicas()
		require.Equal(t, ReplicaState{ID: "f2", LogEndOffset: 10, LastCaughtUp: start, InSync: false, Lag: 0}, rs[1])
		require.True(t, rs[0].InSync)

		// The high watermark moves on with f1 alone.
		recs := repRecs("v", 10, 10)
		require.NoError(t, leader.AppendAcks(ctx, AcksLeader, recs...))
		require.Equal(t, int64(10), recs[0].Offset)
		require.Eventually(t, func() bool { return leader.HighWatermark() == 20 }, repWait, repTick)
		require.Equal(t, int64(20), followers[0].LogEndOffset())
		require.Equal(t, int64(10), followers[1].LogEndOffset())
		require.Equal(t, int64(10), leader.Replica().Replicas()[1].Lag)

		// Two in-sync replicas of three required: AcksAll writes nothing.
		rejected := repRecs("rejected", 20, 5)
		err := leader.Append(ctx, rejected...)
		require.ErrorIs(t, err, ErrNotEnoughReplicas)
		_, _, err = leader.AppendAsLeader(ctx, AcksAll, encodeBatch(t, 0, rejected))
		require.ErrorIs(t, err, ErrNotEnoughReplicas)
		require.Equal(t, int64(20), leader.LogEndOffset())
		require.Equal(t, int64(20), leader.HighWatermark())
		for _, r := range rejected {
			require.Equal(t, int64(0), r.Offset)
		}

		// f2 fetches again, catches up and rejoins.
		links[1].resume()
		require.Eventually(t, func() bool { return slices.Equal(leader.Replica().ISR(), []string{"f1", "f2"}) }, repWait, repTick)
		require.GreaterOrEqual(t, followers[1].LogEndOffset(), int64(20))
		recs = repRecs("v", 20, 10)
		require.NoError(t, leader.Append(ctx, recs...))
		require.Equal(t, int64(20), recs[0].Offset)
		require.Equal(t, int64(30), leader.HighWatermark())
		for _, f := range followers {
			require.GreaterOrEqual(t, f.LogEndOffset(), int64(30))
		}
		for _, f := range followers {
			require.Eventually(t, func() bool { return f.HighWatermark() == 30 }, repWait, repTick)
			require.Equal(t, repExpect("v", 0, 30), repValues(repReadAll(t, f)))
		}
	})
}

// TestReplicationFailoverTruncatesDivergentLog: leader L and follower F agree on 0-9; F stops
// fetching; L appends 10-14 that nobody else has (AcksLeader) and goes down. F becomes the leader
// of the next epoch and appends different 10-12. L restarts as a follower at its high watermark,
// follows F, truncates its log at the end of its epoch on F (10) and ends byte-identical to F,
// 0-12; its readers never see L's old 10-14, not even during the catch-up.
func TestReplicationFailoverTruncatesDivergentLog(t *testing.T) {
	forEachStore(t, func(t *testing.T, envL *storeEnv) {
		ctx := context.Background()
		envF := envL.another(t)
		sL, pL := repOpen(t, envL, TopicConfig{}, repOptions(fixedClock)...)
		_, pF := repOpen(t, envF, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, pL.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"F"}}))
		link := newRepLink(pL.Replica(), nil)
		fF := repFollow(t, pF, 1, link, "F")

		require.NoError(t, pL.Append(ctx, repRecs("v", 0, 5)...))
		require.NoError(t, pL.Append(ctx, repRecs("v", 5, 5)...))
		require.Equal(t, int64(10), pL.HighWatermark())
		require.Eventually(t, func() bool { return pF.HighWatermark() == 10 }, repWait, repTick)

		link.pause()
		require.Eventually(t, link.held, repWait, repTick)
		old := repRecs("old", 10, 5)
		require.NoError(t, pL.AppendAcks(ctx, AcksLeader, old...))
		require.Equal(t, int64(10), old[0].Offset)
		require.Equal(t, int64(15), pL.LogEndOffset())
		require.Equal(t, int64(10), pL.HighWatermark())
		// L's readers see only what F has too.
		require.Equal(t, repExpect("v", 0, 10), repValues(repReadAll(t, pL)))
		require.NoError(t, sL.Close())
		require.NoError(t, fF.Close())
		require.Equal(t, int64(10), pF.LogEndOffset())

		// F takes over in epoch 2 and writes its own 10-12.
		require.NoError(t, pF.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{"L"}}))
		require.True(t, pF.Replica().IsLeader())
		require.Equal(t, "0\n2\n1 0\n2 10\n", repEpochFile(t, envF))
		newer := repRecs("new", 10, 3)
		require.NoError(t, pF.AppendAcks(ctx, AcksLeader, newer...))
		require.Equal(t, int64(10), newer[0].Offset)
		require.Equal(t, int64(10), pF.HighWatermark(), "L has not fetched yet")
		eo, err := pF.Replica().EpochEndOffset(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, EpochEndOffset{LeaderEpoch: 1, EndOffset: 10}, eo)

		// L restarts: a follower of no leader yet, readable up to its high watermark.
		sL2, pL2 := repOpen(t, envL, TopicConfig{}, repOptions(fixedClock)...)
		require.False(t, pL2.Replica().IsLeader())
		require.Equal(t, int64(10), pL2.HighWatermark())
		require.Equal(t, int64(15), pL2.LogEndOffset())
		require.Equal(t, int32(1), pL2.Replica().LeaderEpoch())
		require.ErrorIs(t, pL2.Append(ctx, repRecs("x", 0, 1)...), ErrNotLeader)

		// Watch L from two sides during the catch-up: a poller of ReadRecords and a Reader.
		want := append(repExpect("v", 0, 10), repExpect("new", 10, 3)...)
		watchCtx, cancel := context.WithTimeout(ctx, repWait)
		defer cancel()
		var wg sync.WaitGroup
		var pollErr, readerErr error
		var polls atomic.Int64
		wg.Go(func() {
			pollErr = func() error {
				for watchCtx.Err() == nil {
					polls.Add(1)
					moved := pL2.waitChan()
					recs, err := pL2.ReadRecords(0, 1<<20)
					if err != nil {
						return err
					}
					got := repValues(recs)
					if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
						return fmt.Errorf("L showed %v", got)
					}
					if len(got) == len(want) {
						return nil
					}
					select {
					case <-moved:
					case <-watchCtx.Done():
					}
				}
				return fmt.Errorf("poller: %w", watchCtx.Err())
			}()
		})
		tpL2, err := sL2.Topic(repTopic)
		require.NoError(t, err)
		r := stReader(t, tpL2, ReaderConfig{Start: Earliest})
		wg.Go(func() {
			readerErr = func() error {
				var got []string
				for len(got) < len(want) {
					rec, err := r.Next(watchCtx)
					if err != nil {
						return fmt.Errorf("reader after %v: %w", got, err)
					}
					got = append(got, repValues([]*Record{rec})...)
					if !slices.Equal(got, want[:len(got)]) {
						return fmt.Errorf("reader saw %v", got)
					}
				}
				return nil
			}()
		})
		repFollow(t, pL2, 2, pF.Replica(), "L")
		wg.Wait()
		require.NoError(t, pollErr)
		require.NoError(t, readerErr)
		require.Positive(t, polls.Load())

		require.Eventually(t, func() bool { return pL2.HighWatermark() == 13 && pF.HighWatermark() == 13 }, repWait, repTick)
		require.Equal(t, int64(13), pL2.LogEndOffset())
		require.Equal(t, []string{"L"}, pF.Replica().ISR())
		requireSameBytes(t, readAllPartitionBatches(t, pF), readAllPartitionBatches(t, pL2))
		require.Equal(t, want, repValues(repReadAll(t, pL2)))
		require.Equal(t, "0\n2\n1 0\n2 10\n", repEpochFile(t, envL))
		wantFiles, gotFiles := repLogFiles(t, envF), repLogFiles(t, envL)
		require.Equal(t, slices.Sorted(maps.Keys(wantFiles)), slices.Sorted(maps.Keys(gotFiles)))
		for name, b := range wantFiles {
			requireSameBytes(t, b, gotFiles[name], name)
		}
	})
}

// TestReplicationFollowerRestartsEmptyAfterRetention: a follower that comes back with an empty
// log after retention deleted the leader's first segments starts over at the leader's log start
// offset and ends with the same batches from there.
func TestReplicationFollowerRestartsEmptyAfterRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		cfg := TopicConfig{LogConfig: LogConfig{SegmentBytes: 4 << 10, SegmentIndexBytes: 4 << 10,
			RetentionBytes: 8 << 10, RetentionDuration: -1, FileDeleteDelay: -1}}
		_, leader := repOpen(t, env, cfg, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 3, Followers: []string{"f"}}))
		sF, f := repOpen(t, env.another(t), cfg, repOptions(fixedClock)...)
		fetcher := repFollow(t, f, 3, leader.Replica(), "f")
		for i := 0; i < 200; i += 10 {
			require.NoError(t, leader.Append(ctx, workloadRecords(i, 10)...))
		}
		require.Equal(t, int64(200), leader.HighWatermark())
		require.NoError(t, fetcher.Close())
		require.NoError(t, sF.Close())

		n, err := leader.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Positive(t, n)
		lso := leader.LogStartOffset()
		require.Positive(t, lso)
		require.Equal(t, fmt.Sprintf("0\n1\n3 %d\n", lso), repEpochFile(t, env))
		for i := 200; i < 230; i += 10 {
			require.NoError(t, leader.AppendAcks(ctx, AcksLeader, workloadRecords(i, 10)...))
		}
		require.Equal(t, int64(200), leader.HighWatermark(), "f has not fetched since")

		// A fetch from below the log start offset says where the log starts and ends.
		resp, err := leader.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 3, Offset: 0})
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		require.Equal(t, lso, resp.LogStartOffset)
		require.Equal(t, int64(230), resp.LogEndOffset)
		require.Empty(t, resp.Batches)

		// f comes back with nothing.
		envF2 := env.another(t)
		_, f2 := repOpen(t, envF2, cfg, repOptions(fixedClock)...)
		require.Equal(t, int64(0), f2.LogEndOffset())
		repFollow(t, f2, 3, leader.Replica(), "f")
		require.Eventually(t, func() bool {
			return f2.LogEndOffset() == 230 && f2.HighWatermark() == 230 && leader.HighWatermark() == 230
		}, repWait, repTick)
		require.Equal(t, lso, f2.LogStartOffset())
		requireSameBytes(t, readAllPartitionBatches(t, leader), readAllPartitionBatches(t, f2))
		requireSameRecords(t, withOffsets(workloadRecords(int(lso), 230-int(lso)), lso), repReadAll(t, f2))
		require.Equal(t, repEpochFile(t, env), repEpochFile(t, envF2))
		require.Equal(t, []string{"f"}, leader.Replica().ISR())
	})
}

// TestReplicationReadersStayBelowHighWatermark: under concurrent appends (AcksLeader, so that
// they do not wait for the followers) and followers whose fetches are delayed at random, every
// record any reader of the leader or of a follower gets lies below that partition's high
// watermark as it stands once the read returned.
func TestReplicationReadersStayBelowHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1", "f2"}}))
		followers := make([]*Partition, 2)
		for i := range followers {
			_, followers[i] = repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
			link := newRepLink(leader.Replica(), nil)
			link.maxDelay = 5 * time.Millisecond
			repFollow(t, followers[i], 1, link, fmt.Sprintf("f%d", i+1))
		}
		const appenders, appends, per = 2, 300, 5
		const total = appenders * appends * per
		tp, err := s.Topic(repTopic)
		require.NoError(t, err)

		watchCtx, cancel := context.WithTimeout(ctx, repWait)
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for a := range appenders {
			wg.Go(func() {
				for i := range appends {
					acks := AcksLeader
					if i%2 == 1 {
						acks = AcksNone
					}
					if err := leader.AppendAcks(ctx, acks, repRecs(fmt.Sprintf("a%d", a), i*per, per)...); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		// Pollers of ReadRecords on the leader and on each follower.
		for _, p := range append([]*Partition{leader}, followers...) {
			wg.Go(func() {
				next := int64(0)
				for next < total {
					moved := p.waitChan()
					recs, err := p.ReadRecords(next, 4<<10)
					hw := p.HighWatermark()
					if err != nil {
						errs <- err
						return
					}
					for _, r := range recs {
						if r.Offset != next || r.Offset >= hw {
							errs <- fmt.Errorf("read offset %d, want %d, high watermark %d", r.Offset, next, hw)
							return
						}
						next++
					}
					if len(recs) == 0 {
						select {
						case <-moved:
						case <-watchCtx.Done():
							errs <- fmt.Errorf("poller at %d: %w", next, watchCtx.Err())
							return
						}
					}
				}
			})
		}
		// A Reader of the leader's topic.
		r := stReader(t, tp, ReaderConfig{Start: Earliest, MaxBytes: 2 << 10})
		wg.Go(func() {
			for want := int64(0); want < total; want++ {
				rec, err := r.Next(watchCtx)
				if err != nil {
					errs <- fmt.Errorf("reader at %d: %w", want, err)
					return
				}
				if hw := leader.HighWatermark(); rec.Offset != want || rec.Offset >= hw {
					errs <- fmt.Errorf("reader got offset %d, want %d, high watermark %d", rec.Offset, want, hw)
					return
				}
			}
		})
		wg.Wait()
		requireNoErrs(t, errs)
		require.Equal(t, int64(total), leader.LogEndOffset())
		require.Eventually(t, func() bool { return leader.HighWatermark() == total }, repWait, repTick)
		for _, f := range followers {
			require.Eventually(t, func() bool { return f.HighWatermark() == total }, repWait, repTick)
			requireSameBytes(t, readAllPartitionBatches(t, leader), readAllPartitionBatches(t, f))
		}
	})
}

// TestLeaderFetchErrors: what Fetch, EpochEndOffset and the appends answer in each case of the
// Leader contract.
func TestLeaderFetchErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{"f", "f"}}), ErrInvalidConfig)
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{""}}), ErrInvalidConfig)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{"f"}}))
		_, err := p.Replica().Follow(p.Replica(), FollowerConfig{ReplicaID: "x"})
		require.ErrorIs(t, err, ErrInvalidConfig, "a leader follows nobody")
		recs := repRecs("v", 0, 4)
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, recs[:2]...))
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, recs[2:]...))
		require.Equal(t, int64(0), p.HighWatermark(), "f has not fetched")
		all := readAllBatches(t, p.log, 0)

		for _, tc := range []struct {
			req  FetchRequest
			want error
		}{
			{FetchRequest{ReplicaID: "f", LeaderEpoch: 1}, ErrFencedLeaderEpoch},
			{FetchRequest{ReplicaID: "f", LeaderEpoch: 3}, ErrUnknownLeaderEpoch},
			{FetchRequest{ReplicaID: "g", LeaderEpoch: 2}, ErrReplicaNotAvailable},
			{FetchRequest{ReplicaID: "", LeaderEpoch: UndefinedEpoch}, ErrReplicaNotAvailable},
		} {
			resp, err := p.Replica().Fetch(ctx, tc.req)
			require.ErrorIs(t, err, tc.want, "%+v", tc.req)
			require.Equal(t, FetchResponse{}, resp)
		}
		resp, err := p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 5})
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		require.Equal(t, FetchResponse{HighWatermark: 0, LogStartOffset: 0, LogEndOffset: 4}, resp)
		require.Equal(t, int64(-1), p.Replica().Replicas()[0].LogEndOffset, "an out-of-range fetch records nothing")

		// A fetch from 0 reads past the high watermark (a follower copies everything); the first
		// batch comes whole however small MaxBytes.
		resp, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: UndefinedEpoch, Offset: 0, MaxBytes: 1})
		require.NoError(t, err)
		hs := batchHeaders(t, all)
		require.Len(t, hs, 2)
		requireSameBytes(t, all[:hs[1].pos], resp.Batches)
		require.Equal(t, FetchResponse{Batches: resp.Batches, HighWatermark: 0, LogStartOffset: 0, LogEndOffset: 4}, resp)
		resp, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 0})
		require.NoError(t, err)
		requireSameBytes(t, all, resp.Batches)
		resp, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 4})
		require.NoError(t, err)
		require.Equal(t, FetchResponse{HighWatermark: 4, LogStartOffset: 0, LogEndOffset: 4}, resp)
		require.Equal(t, int64(4), p.HighWatermark())
		require.Equal(t, []ReplicaState{{ID: "f", LogEndOffset: 4, LastCaughtUp: testEpoch, InSync: true, Lag: 0}}, p.Replica().Replicas())

		// Caught up and told the high watermark: the fetch waits for MaxWait or ctx.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = p.Replica().Fetch(cctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 4, MaxWait: time.Hour})
		require.ErrorIs(t, err, context.Canceled)
		resp, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 4, MaxWait: time.Millisecond})
		require.NoError(t, err)
		require.Equal(t, FetchResponse{HighWatermark: 4, LogStartOffset: 0, LogEndOffset: 4}, resp)
		// A waiting fetch returns as soon as the leader appends.
		done := make(chan FetchResponse, 1)
		go func() {
			resp, _ := p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 2, Offset: 4, MaxWait: time.Hour})
			done <- resp
		}()
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, repRecs("v", 4, 1)...))
		select {
		case resp = <-done:
		case <-time.After(repWait):
			t.Fatal("a waiting fetch did not return after an append")
		}
		require.Equal(t, int64(5), resp.LogEndOffset)
		require.Len(t, batchHeaders(t, resp.Batches), 1)

		for _, tc := range []struct {
			epoch int32
			want  EpochEndOffset
		}{{2, EpochEndOffset{2, 5}}, {1, EpochEndOffset{1, 0}}, {3, EpochEndOffset{UndefinedEpoch, -1}}, {UndefinedEpoch, EpochEndOffset{UndefinedEpoch, -1}}} {
			eo, err := p.Replica().EpochEndOffset(ctx, tc.epoch)
			require.NoError(t, err)
			require.Equal(t, tc.want, eo, "epoch %d", tc.epoch)
		}
		_, err = p.Replica().EpochEndOffset(cctx, 2)
		require.ErrorIs(t, err, context.Canceled)

		// A follower refuses fetches and appends, and writes nothing.
		require.NoError(t, p.Replica().BecomeFollower(3))
		require.False(t, p.Replica().IsLeader())
		require.Nil(t, p.Replica().ISR())
		require.Empty(t, p.Replica().Replicas())
		_, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 3, Offset: 0})
		require.ErrorIs(t, err, ErrNotLeader)
		_, err = p.Replica().EpochEndOffset(ctx, 2)
		require.ErrorIs(t, err, ErrNotLeader)
		require.ErrorIs(t, p.Append(ctx, repRecs("x", 0, 1)...), ErrNotLeader)
		for _, acks := range []Acks{AcksNone, AcksLeader, AcksAll} {
			require.ErrorIs(t, p.AppendAcks(ctx, acks, repRecs("x", 0, 1)...), ErrNotLeader, "acks %d", acks)
			_, _, err = p.AppendAsLeader(ctx, acks, encodeBatch(t, 0, repRecs("x", 0, 1)))
			require.ErrorIs(t, err, ErrNotLeader, "acks %d", acks)
		}
		tp, err := s.Topic(repTopic)
		require.NoError(t, err)
		require.ErrorIs(t, tp.Append(ctx, repRecs("x", 0, 1)...), ErrNotLeader)
		require.Equal(t, int64(5), p.LogEndOffset())
		_, err = p.Replica().Follow(p.Replica(), FollowerConfig{})
		require.ErrorIs(t, err, ErrInvalidConfig, "no ReplicaID")

		// After the store closed.
		require.NoError(t, s.Close())
		_, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 3})
		require.ErrorIs(t, err, ErrClosed)
		_, err = p.Replica().EpochEndOffset(ctx, 3)
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 4}), ErrClosed)
		require.ErrorIs(t, p.Replica().BecomeFollower(4), ErrClosed)
	})
}

// TestReplicationRetentionStaysBelowHighWatermark: retention never deletes a segment holding
// offsets at or past the high watermark, so the log start offset never passes it (Kafka's
// UnifiedLog.deleteOldSegments: "We don't delete segments with offsets at or beyond the high
// watermark to ensure that the log start offset can never exceed it").
func TestReplicationRetentionStaysBelowHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		cfg := TopicConfig{LogConfig: LogConfig{SegmentBytes: 4 << 10, SegmentIndexBytes: 4 << 10,
			RetentionBytes: 4 << 10, RetentionDuration: -1, FileDeleteDelay: -1}}
		_, leader := repOpen(t, env, cfg, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f"}}))
		// f fetches once, up to 20, then stops.
		for i := 0; i < 20; i += 10 {
			require.NoError(t, leader.AppendAcks(ctx, AcksLeader, workloadRecords(i, 10)...))
		}
		_, err := leader.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 1, Offset: 20})
		require.NoError(t, err)
		require.Equal(t, int64(20), leader.HighWatermark())
		for i := 20; i < 200; i += 10 {
			require.NoError(t, leader.AppendAcks(ctx, AcksLeader, workloadRecords(i, 10)...))
		}
		require.Greater(t, leader.SegmentCount(), 5)
		_, err = leader.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.LessOrEqual(t, leader.LogStartOffset(), leader.HighWatermark(), "the log start offset passed the high watermark")
		// The follower, still in sync, goes on from where it was.
		resp, err := leader.Replica().Fetch(ctx, FetchRequest{ReplicaID: "f", LeaderEpoch: 1, Offset: 20})
		require.NoError(t, err)
		require.Equal(t, int64(20), batchHeaders(t, resp.Batches)[0].BaseOffset)
		require.Equal(t, []string{"f"}, leader.Replica().ISR())
	})
}

// TestReplicationFollowerFollowsLogStartOffset: retention on the leader moves a running
// follower's log start offset too (Kafka's follower takes the leader's log start offset from
// every fetch), deleting its segments wholly below it.
func TestReplicationFollowerFollowsLogStartOffset(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		cfg := TopicConfig{LogConfig: LogConfig{SegmentBytes: 4 << 10, SegmentIndexBytes: 4 << 10,
			RetentionBytes: 8 << 10, RetentionDuration: -1, FileDeleteDelay: -1}}
		_, leader := repOpen(t, env, cfg, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{"f"}}))
		_, f := repOpen(t, env.another(t), cfg, repOptions(fixedClock)...)
		repFollow(t, f, 2, leader.Replica(), "f")
		for i := 0; i < 200; i += 10 {
			require.NoError(t, leader.Append(ctx, workloadRecords(i, 10)...))
		}
		fSegments := f.SegmentCount()
		n, err := leader.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Positive(t, n)
		lso := leader.LogStartOffset()
		require.NoError(t, leader.Append(ctx, workloadRecords(200, 10)...)) // a fetch carries the new start

		require.Eventually(t, func() bool { return f.LogStartOffset() == lso && f.HighWatermark() == 210 }, repWait, repTick)
		require.Less(t, f.SegmentCount(), fSegments, "segments below the start deleted")
		_, err = f.ReadBatches(nil, lso-1, 1)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		requireSameBytes(t, readAllPartitionBatches(t, leader), readAllPartitionBatches(t, f))
	})
}

// TestAcksAllBelowMinInsyncReplicas: an acks=all append is committed even when the ISR shrinks
// below min.insync.replicas while it waits (ErrNotEnoughReplicas, the high watermark past it),
// and the next one is refused before it writes.
func TestAcksAllBelowMinInsyncReplicas(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		cfg := TopicConfig{LogConfig: LogConfig{MinInsyncReplicas: 2}}
		clock := newRepClock()
		_, p := repOpen(t, env, cfg, repOptions(clock.Now)...)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"b"}, LagTimeMax: 20 * time.Millisecond}))
		// b is in the ISR when the append starts (the clock stands still until the append has
		// written), never fetches, and leaves it once the clock passes LagTimeMax.
		done := make(chan error, 1)
		go func() { done <- p.Append(ctx, repRecs("v", 0, 1)...) }()
		require.Eventually(t, func() bool { return p.LogEndOffset() == 1 }, repWait, repTick)
		clock.Advance(time.Second)
		err := <-done
		require.ErrorIs(t, err, ErrNotEnoughReplicas)
		require.Empty(t, p.Replica().ISR())
		require.Equal(t, int64(1), p.HighWatermark(), "written and committed, with one copy")
		// The next one is refused before it writes.
		require.ErrorIs(t, p.Append(ctx, repRecs("v", 1, 1)...), ErrNotEnoughReplicas)
		require.Equal(t, int64(1), p.LogEndOffset())
	})
}

// TestLeaderWithFollowersRefusesTruncation: a leader with followers does not truncate
// (ErrNotLeader); on its own again it does.
func TestLeaderWithFollowersRefusesTruncation(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		_, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, repRecs("v", 0, 10)...))
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"b"}}))
		require.ErrorIs(t, p.TruncateTo(3), ErrNotLeader)
		require.Equal(t, int64(10), p.LogEndOffset())
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 2})) // on its own again
		require.NoError(t, p.TruncateTo(3))
		require.Equal(t, int64(0), p.LogEndOffset(), "the whole batch 0-9 goes")
	})
}

// TestFollowOneFetcherAPartition: Follow needs a leader and runs one fetch loop a partition; a
// second Follow is refused until the first is closed.
func TestFollowOneFetcherAPartition(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		_, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"b"}}))
		_, f := repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, f.Replica().BecomeFollower(1))
		_, err := f.Replica().Follow(nil, FollowerConfig{ReplicaID: "b"})
		require.ErrorIs(t, err, ErrInvalidConfig)
		first, err := f.Replica().Follow(leader.Replica(), FollowerConfig{ReplicaID: "b", MaxWait: time.Millisecond})
		require.NoError(t, err)
		_, err = f.Replica().Follow(leader.Replica(), FollowerConfig{ReplicaID: "b"})
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.NoError(t, first.Close())
		again, err := f.Replica().Follow(leader.Replica(), FollowerConfig{ReplicaID: "b", MaxWait: time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, again.Close())
	})
}

// TestUnknownAcksRefused: an acks value other than 0, 1 or -1 is ErrInvalidConfig, and nothing
// is written.
func TestUnknownAcksRefused(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		_, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.ErrorIs(t, p.AppendAcks(ctx, Acks(7), repRecs("v", 0, 1)...), ErrInvalidConfig)
		_, _, err := p.AppendAsLeader(ctx, Acks(2), encodeBatch(t, 0, repRecs("v", 0, 1)))
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.Equal(t, int64(0), p.LogEndOffset())
	})
}

// TestStagedAcksAllWithFollower: SyncAlways leader, many AcksAll appenders (staged), one
// follower fetching; every acknowledged record is below the HW, readable on both, in order.
func TestStagedAcksAllWithFollower(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		opts := []Option{WithClock(fixedClock), WithSync(SyncAlways), WithRetentionCheckInterval(-1)}
		_, leader := repOpen(t, env, TopicConfig{}, opts...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1"}}))
		_, follower := repOpen(t, env.another(t), TopicConfig{}, opts...)
		repFollow(t, follower, 1, newRepLink(leader.Replica(), nil), "f1")
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := map[int64]string{}
		for w := range 12 {
			wg.Go(func() {
				for i := range 60 {
					r := rvRecord(w, i)
					if err := leader.AppendAcks(ctx, AcksAll, r); err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if hw := leader.HighWatermark(); hw <= r.Offset {
						t.Errorf("acked offset %d with hw %d", r.Offset, hw)
					}
					mu.Lock()
					acked[r.Offset] = string(r.Key)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, acked, 720)
		var r Record
		for off, key := range acked {
			require.NoError(t, leader.ReadRecord(off, &r))
			require.Equal(t, key, string(r.Key))
			// acks=all means the follower's log holds the record; the follower's own high
			// watermark, which bounds Partition.ReadRecord, arrives with its next fetch.
			require.NoError(t, follower.log.ReadRecord(off, &r), fmt.Sprint(off))
			require.Equal(t, key, string(r.Key))
		}
		t.Logf("fsyncs %d", leader.log.gc.fsyncs.Load())
	})
}
