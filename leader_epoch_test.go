package commitlog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLeaderEpochCheckpointFile: BecomeLeader records each new epoch at the log end offset in
// Kafka's leader-epoch-checkpoint format, before any append; appends stamp the epoch on their
// batches; truncation drops the epochs it cut; older epochs are fenced; the file survives a
// reopen.
func TestLeaderEpochCheckpointFile(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 0}))
		require.Equal(t, "0\n1\n0 0\n", repEpochFile(t, env))
		require.NoError(t, p.Append(ctx, repRecs("v", 0, 10)...))
		require.Equal(t, "0\n1\n0 0\n", repEpochFile(t, env))

		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1}))
		require.Equal(t, "0\n2\n0 0\n1 10\n", repEpochFile(t, env), "the epoch is recorded before any append")
		require.NoError(t, p.Append(ctx, repRecs("v", 10, 5)...))
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1}))
		require.Equal(t, "0\n2\n0 0\n1 10\n", repEpochFile(t, env))
		epochs := []int32{}
		for _, h := range batchHeaders(t, readAllPartitionBatches(t, p)) {
			epochs = append(epochs, h.PartitionLeaderEpoch)
		}
		require.Equal(t, []int32{0, 1}, epochs)
		require.Equal(t, int32(1), p.Replica().LeaderEpoch())

		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 0}), ErrFencedLeaderEpoch)
		require.ErrorIs(t, p.Replica().BecomeFollower(0), ErrFencedLeaderEpoch)
		require.True(t, p.Replica().IsLeader())

		// A leader that skips epochs without writing in them keeps only the latest start there.
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 4}))
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 6}))
		require.Equal(t, "0\n3\n0 0\n1 10\n6 15\n", repEpochFile(t, env))
		require.NoError(t, p.Append(ctx, repRecs("w", 15, 2)...))
		require.Equal(t, "0\n3\n0 0\n1 10\n6 15\n", repEpochFile(t, env))

		// Truncation drops the epochs that started at or past the cut.
		require.NoError(t, p.TruncateTo(15))
		require.Equal(t, "0\n2\n0 0\n1 10\n", repEpochFile(t, env))
		require.NoError(t, p.Append(ctx, repRecs("w", 15, 2)...))
		require.Equal(t, "0\n3\n0 0\n1 10\n6 15\n", repEpochFile(t, env), "the stamp stays epoch 6")
		require.NoError(t, p.TruncateTo(10))
		require.Equal(t, int64(10), p.LogEndOffset())
		require.Equal(t, "0\n1\n0 0\n", repEpochFile(t, env))

		require.NoError(t, s.Close())
		_, p2 := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.Equal(t, "0\n1\n0 0\n", repEpochFile(t, env))
		require.True(t, p2.Replica().IsLeader(), "a partition without followers reopens as a leader")
		require.Equal(t, int64(10), p2.HighWatermark())
	})
}

// TestEpochCacheEndOffsetFor: Kafka's LeaderEpochFileCache.endOffsetFor rules.
func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := epochCache{entries: []epochEntry{{0, 0}, {2, 10}, {5, 30}}}
	const leo = 50
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{UndefinedEpoch, UndefinedEpoch, -1}, // undefined asks nothing
		{5, 5, leo},                          // the latest epoch ends at the log end offset
		{6, UndefinedEpoch, -1},              // newer than any known
		{100, UndefinedEpoch, -1},
		{0, 0, 10}, // a known epoch ends where the next begins
		{1, 0, 10}, // an unknown one between: the epoch below it, and where the next begins
		{2, 2, 30},
		{3, 2, 30},
		{4, 2, 30},
	} {
		e, end := c.endOffsetFor(tc.epoch, leo)
		require.Equal(t, tc.wantEpoch, e, "epoch %d", tc.epoch)
		require.Equal(t, tc.wantEnd, end, "epoch %d", tc.epoch)
	}
	// Older than every known epoch: the epoch asked, and where the first known one begins.
	c = epochCache{entries: []epochEntry{{3, 100}, {4, 120}}}
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{{0, 0, 100}, {2, 2, 100}, {3, 3, 120}, {4, 4, 140}, {5, UndefinedEpoch, -1}} {
		e, end := c.endOffsetFor(tc.epoch, 140)
		require.Equal(t, tc.wantEpoch, e, "epoch %d", tc.epoch)
		require.Equal(t, tc.wantEnd, end, "epoch %d", tc.epoch)
	}
	var empty epochCache
	for _, epoch := range []int32{UndefinedEpoch, 0, 7} {
		e, end := empty.endOffsetFor(epoch, 9)
		require.Equal(t, UndefinedEpoch, e)
		require.Equal(t, int64(-1), end)
	}
}

// TestDecodeEpochCacheRejectsMalformed: anything but Kafka's format, with epochs increasing and
// start offsets not decreasing, is ErrCorrupt.
func TestDecodeEpochCacheRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		"",
		"\n",
		"0",
		"1\n0\n",
		"00\n0\n",
		"0\nx\n",
		"0\n-1\n",
		"0\n1\n",
		"0\n0\n0 0\n",
		"0\n2\n0 0\n",
		"0\n99999999999999999999\n",
		"0\n1\n0\n",
		"0\n1\na b\n",
		"0\n1\n0 0 0\n",
		"0\n1\n0 0x\n",
		"0\n1\n0x1 0\n",
		"0\n1\n-1 0\n",
		"0\n1\n0 -5\n",
		"0\n1\n3000000000 0\n",
		"0\n1\n0 99999999999999999999\n",
		"0\n2\n1 0\n1 5\n",
		"0\n2\n2 0\n1 5\n",
		"0\n2\n0 10\n1 5\n",
		"0\n1\n0 0\n\n",
	} {
		_, err := decodeEpochCache([]byte(in))
		require.ErrorIs(t, err, ErrCorrupt, "%q", in)
	}
	for in, want := range map[string][]epochEntry{
		"0\n0\n":            {},
		"0\n1\n0 0\n":       {{0, 0}},
		"0\n2\n0 0\n1 10\n": {{0, 0}, {1, 10}},
		"0\n1\n3 150":       {{3, 150}}, // no final newline
	} {
		c, err := decodeEpochCache([]byte(in))
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, c.entries, "%q", in)
	}
}

// FuzzEpochCheckpoint: no input makes decodeEpochCache panic; what it accepts is a valid cache
// (epochs increasing, start offsets not decreasing, none negative) that encodes to a file it
// reads back the same, and whose endOffsetFor answers stay within Kafka's rules.
func FuzzEpochCheckpoint(f *testing.F) {
	for _, s := range []string{"0\n0\n", "0\n1\n0 0\n", "0\n2\n0 0\n1 10\n", "0\n3\n2 5\n7 5\n9 100\n", "0\n2\n1 0\n1 5\n", "0\n1\n0 0 0\n", "1\n0\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeEpochCache(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for i, e := range c.entries {
			if e.epoch < 0 || e.startOffset < 0 {
				t.Fatalf("entry %d negative: %+v", i, e)
			}
			if i > 0 && (e.epoch <= c.entries[i-1].epoch || e.startOffset < c.entries[i-1].startOffset) {
				t.Fatalf("entry %d %+v does not follow %+v", i, e, c.entries[i-1])
			}
		}
		enc := c.encode()
		c2, err := decodeEpochCache(enc)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", enc, err)
		}
		if !slices.Equal(c.entries, c2.entries) {
			t.Fatalf("round trip: %v != %v", c.entries, c2.entries)
		}
		leo := int64(1 << 40)
		if last, ok := c.latest(); ok {
			leo = max(leo, last.startOffset)
		}
		probe := []int32{UndefinedEpoch, 0, 1}
		for _, e := range c.entries {
			probe = append(probe, e.epoch, e.epoch-1, e.epoch+1)
		}
		for _, epoch := range probe {
			got, end := c.endOffsetFor(epoch, leo)
			if got == UndefinedEpoch {
				if end != -1 {
					t.Fatalf("epoch %d: undefined with end %d", epoch, end)
				}
				continue
			}
			if got > epoch || end < 0 || end > leo {
				t.Fatalf("epoch %d: answer (%d, %d) on %v", epoch, got, end, c.entries)
			}
		}
	})
}

// TestReplicationEpochSurvivesRestart: a replica restarted after BecomeFollower(7), with no
// batch of epoch 7 in its log, still refuses epoch 5.
func TestReplicationEpochSurvivesRestart(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"b"}}))
		require.NoError(t, p.Replica().BecomeFollower(7))
		require.NoError(t, s.Close())
		_, p = repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.Equal(t, int32(7), p.Replica().LeaderEpoch())
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 5}), ErrFencedLeaderEpoch)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 8}))
	})
}

// TestReplicationFollowerDropsEpochItNeverWrote: F led epoch 2 without writing a batch (its
// leader-epoch-checkpoint says epoch 2 starts at its log end offset, 10), then follows L in
// epoch 3, whose log holds epoch 1 up to 15. F's records 10..14 come from L's epoch 1, so F's
// epochs must end up as L's, (1 0) and (3 15), as a Kafka follower's cache drops the entries
// its leader's batches contradict: kept, the entry (2 10) says that F's epoch 1 ends at 10, and
// a reader on F that consumed 10..12 in epoch 1 and committed 13 is told the log diverged.
func TestReplicationFollowerDropsEpochItNeverWrote(t *testing.T) {
	forEachStore(t, func(t *testing.T, envL *storeEnv) {
		ctx := context.Background()
		envF := envL.another(t)
		_, pL := repOpen(t, envL, TopicConfig{}, repOptions(fixedClock)...)
		sF, pF := repOpen(t, envF, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, pL.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"F"}}))
		link := newRepLink(pL.Replica(), nil)
		fF := repFollow(t, pF, 1, link, "F")
		require.NoError(t, pL.Append(ctx, repRecs("v", 0, 10)...))
		require.Eventually(t, func() bool { return pF.HighWatermark() == 10 }, repWait, repTick)
		link.pause()
		require.Eventually(t, link.held, repWait, repTick)
		require.NoError(t, pL.AppendAcks(ctx, AcksLeader, repRecs("v", 10, 5)...))
		require.NoError(t, fF.Close())
		require.Equal(t, int64(10), pF.LogEndOffset())

		require.NoError(t, pF.Replica().BecomeLeader(LeaderConfig{Epoch: 2, Followers: []string{"L"}}))
		require.Equal(t, "0\n2\n1 0\n2 10\n", repEpochFile(t, envF))
		require.NoError(t, pL.Replica().BecomeLeader(LeaderConfig{Epoch: 3, Followers: []string{"F"}}))
		repFollow(t, pF, 3, pL.Replica(), "F")
		require.NoError(t, pL.Append(ctx, repRecs("v", 15, 5)...))
		require.Eventually(t, func() bool { return pF.HighWatermark() == 20 }, repWait, repTick)
		require.Equal(t, "0\n2\n1 0\n3 15\n", repEpochFile(t, envL))
		require.Equal(t, repEpochFile(t, envL), repEpochFile(t, envF))

		tpF := stMust(sF.Topic(repTopic))
		r := stReader(t, tpF, ReaderConfig{Name: "n", Start: Earliest})
		stNextN(t, r, 13)
		require.NoError(t, r.Commit(ctx))
		require.NoError(t, r.Close())
		r = stReader(t, tpF, ReaderConfig{Name: "n"})
		require.Equal(t, repExpect("v", 13, 1), repValues([]*Record{stNext(t, r)}))
	})
}

// TestEpochCacheAssign: what a batch of epoch at offset does to the cache (1 0) (2 10) (4 10),
// whose epochs 2 and 4 began at the log end offset, 10, without a batch.
func TestEpochCacheAssign(t *testing.T) {
	for _, tc := range []struct {
		name        string
		epoch       int32
		offset      int64
		want        []epochEntry
		wantChanged bool
	}{
		{"the latest epoch's first batch", 4, 10, []epochEntry{{1, 0}, {2, 10}, {4, 10}}, false},
		{"a newer epoch", 5, 10, []epochEntry{{1, 0}, {5, 10}}, true},
		{"an empty epoch's batch drops the newer ones", 2, 10, []epochEntry{{1, 0}, {2, 10}}, true},
		{"an older epoch's batch drops the epochs begun without one", 1, 10, []epochEntry{{1, 0}}, true},
		{"an epoch between them", 3, 10, []epochEntry{{1, 0}, {2, 10}, {3, 10}}, true},
		{"undefined", UndefinedEpoch, 10, []epochEntry{{1, 0}, {2, 10}, {4, 10}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := epochCache{entries: []epochEntry{{1, 0}, {2, 10}, {4, 10}}}
			require.Equal(t, tc.wantChanged, c.assign(tc.epoch, tc.offset))
			require.Equal(t, tc.want, c.entries)
		})
	}
	// Past the latest epoch's start, an older epoch's batch changes nothing.
	c := epochCache{entries: []epochEntry{{1, 0}, {2, 10}}}
	require.False(t, c.assign(1, 20))
	require.Equal(t, []epochEntry{{1, 0}, {2, 10}}, c.entries)
}

// TestOpenLogOfCrashedReplicatedPartitionStartsNoLocalEpoch: a log opened on its own from the
// folder of a replicated partition after an unclean shutdown starts no leader epoch of its own,
// as a partition's log does: its epochs are its leader's, and a local one above them would make
// the partition, back in its store, disagree with its leader's epochs.
func TestOpenLogOfCrashedReplicatedPartitionStartsNoLocalEpoch(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		_, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 3, Followers: []string{"f"}}))
		require.NoError(t, leader.AppendAcks(ctx, AcksLeader, workloadRecords(0, 10)...))
		dst := env.path("crashed")
		crashCopy(t, env.FS(), env.path(repTopic+"-0"), dst)

		l, err := OpenLog(dst, LogConfig{}, withFS(env.FS()), WithClock(fixedClock))
		require.NoError(t, err)
		defer l.Close()
		require.Equal(t, int32(3), l.latestEpoch(), "no local epoch started")
	})
}
