package commitlog

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// repReplicationFile returns the replication checkpoint's payload in the partition folder of env.
func repReplicationFile(t *testing.T, env *storeEnv) string {
	t.Helper()
	b, err := checkpoint.Read(env.FS(), env.path(repTopic+"-0", replicationFileName))
	require.NoError(t, err)
	return string(b)
}

// TestReplicationCheckpointRoundTrip: a leader with a follower saves its high watermark and
// epoch in its own checkpoint, not in the log's state file, and reopens from it as a follower
// of no leader yet; back on its own (BecomeLeader without followers), it saves that it is not
// replicated and reopens as a leader.
func TestReplicationCheckpointRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, repRecs("v", 0, 10)...))
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 4, Followers: []string{"b"}}))
		require.Equal(t, "high-watermark 10\nleader-epoch 4\n", repReplicationFile(t, env),
			"written before BecomeLeader returns")
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, repRecs("v", 10, 5)...))
		_, err := p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "b", LeaderEpoch: 4, Offset: 13})
		require.NoError(t, err)
		require.Equal(t, int64(13), p.HighWatermark())
		require.NoError(t, p.log.saveState()) // as a roll, a flush or a truncation checkpoints the log
		require.Equal(t, "high-watermark 13\nleader-epoch 4\n", repReplicationFile(t, env),
			"written with each of the log's checkpoints")
		_, err = p.Replica().Fetch(ctx, FetchRequest{ReplicaID: "b", LeaderEpoch: 4, Offset: 15})
		require.NoError(t, err)
		require.Equal(t, int64(15), p.HighWatermark())
		require.NoError(t, s.Close())
		require.Equal(t, "high-watermark 15\nleader-epoch 4\n", repReplicationFile(t, env), "written at close")
		dir := env.path(repTopic + "-0")
		require.Equal(t, logState{logStartOffset: 0, recoveryPoint: 15, clean: true}, readTestState(t, env.FS(), dir),
			"the log's state holds no replication lines")

		s, p = repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.False(t, p.Replica().IsLeader())
		require.Equal(t, int64(15), p.HighWatermark())
		require.Equal(t, int32(4), p.Replica().LeaderEpoch())
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 3}), ErrFencedLeaderEpoch)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 5}))
		require.Equal(t, "high-watermark -1\nleader-epoch 0\n", repReplicationFile(t, env))
		require.NoError(t, s.Close())

		_, p = repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.True(t, p.Replica().IsLeader(), "a partition without followers reopens as a leader")
		require.Equal(t, int64(15), p.HighWatermark())
		require.Equal(t, int32(5), p.Replica().LeaderEpoch())
	})
}

// TestReplicationCheckpointFromOldStateFile: a store written before the partition kept its own
// replication checkpoint has the high watermark and the role's epoch as two more lines of the
// log's commitlog-state. It opens with them (a follower at high watermark 7 in epoch 4, not the
// epoch 2 its leader-epoch-checkpoint ends with), the partition writes them to its own checkpoint,
// and the log's state drops them at its next write; the store reopens the same.
func TestReplicationCheckpointFromOldStateFile(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, p := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 2}))
		require.NoError(t, p.AppendAcks(ctx, AcksLeader, repRecs("v", 0, 10)...))
		require.NoError(t, s.Close())
		dir := env.path(repTopic + "-0")
		require.NotContains(t, env.entries(t, repTopic+"-0"), replicationFileName, "never replicated")
		old := "log-start-offset 0\nrecovery-point 10\nclean-shutdown 1\nhigh-watermark 7\nleader-epoch 4\n"
		// That version kept no log directory checkpoints.
		for _, name := range []string{recoveryPointCheckpointName, logStartCheckpointName, cleanShutdownName} {
			require.NoError(t, env.FS().Remove(env.path(name)))
		}
		require.NoError(t, checkpoint.Write(env.FS(), filepath.Join(dir, stateFileName), []byte(old)))
		require.Equal(t, logState{recoveryPoint: 10, clean: true,
			legacy: legacyReplication{present: true, highWatermark: 7, leaderEpoch: 4}}, readTestState(t, env.FS(), dir))

		for range 2 {
			s, p = repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
			require.False(t, p.Replica().IsLeader())
			require.Equal(t, int64(7), p.HighWatermark())
			require.Equal(t, int64(10), p.LogEndOffset())
			require.Equal(t, int32(4), p.Replica().LeaderEpoch())
			require.ErrorIs(t, p.Append(ctx, repRecs("x", 0, 1)...), ErrNotLeader)
			require.Equal(t, "high-watermark 7\nleader-epoch 4\n", repReplicationFile(t, env))
			require.NoError(t, s.Close())
			require.Equal(t, logState{recoveryPoint: 10, clean: true}, readTestState(t, env.FS(), dir),
				"the log's next state is without the old lines")
		}
		_, p = repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.ErrorIs(t, p.Replica().BecomeLeader(LeaderConfig{Epoch: 3}), ErrFencedLeaderEpoch)
	})
}

// TestDecodeReplicationState: the checkpoint's two lines round-trip; anything else is corrupt.
func TestDecodeReplicationState(t *testing.T) {
	for _, st := range []replicationState{{}, {replicated: true, highWatermark: 0, leaderEpoch: 0},
		{replicated: true, highWatermark: 1 << 40, leaderEpoch: 1<<31 - 1}} {
		got, err := decodeReplicationState(st.encode())
		require.NoError(t, err)
		require.Equal(t, st, got)
	}
	for _, b := range []string{"", "high-watermark 5\n", "high-watermark -2\nleader-epoch 0\n",
		"high-watermark 5\nleader-epoch -1\n", "high-watermark 5\nleader-epoch 1\nmore\n", "leader-epoch 1\nhigh-watermark 5\n"} {
		_, err := decodeReplicationState([]byte(b))
		require.ErrorIs(t, err, checkpoint.ErrCorrupt, "%q", b)
	}
}
