package commitlog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The transactional side of replication: a transactional producer writes to a leader partition
// whose follower fetches from it. The follower copies the batches and the markers byte for
// byte, and with them the producer state (Kafka's followers keep it for exactly this): the same
// producers, the same last stable offset (bounded by its own high watermark), the same aborted
// transactions for ReadCommitted readers; and, once it takes over, it answers a retry of a batch
// written under the old leader with the original offsets.

// txnReadAll reads topic repTopic's partition 0 of s under iso from the start.
func txnReadAll(t *testing.T, s *Store, iso IsolationLevel) []string {
	t.Helper()
	return repValues(readAll(t, s, repTopic, 0, iso))
}

func TestReplicationTransactionFollowerKeepsProducerState(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		ls, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f"}}))
		fs, follower := repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
		fetcher := repFollow(t, follower, 1, leader.Replica(), "f")

		p, err := ls.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		pid, epoch := p.ID()
		// a0 a1 at 0-1, COMMIT at 2; b0 at 3, ABORT at 4; c0 at 5, left open.
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, repTopic, repRecs("a", 0, 2)...))
		require.NoError(t, p.Commit(ctx))
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, repTopic, repRecs("b", 3, 1)...))
		require.NoError(t, p.Abort(ctx))
		require.NoError(t, p.Begin())
		c0 := repRecs("c", 5, 1)
		require.NoError(t, p.Append(ctx, repTopic, c0...))
		require.Equal(t, int64(5), c0[0].Offset)

		require.Eventually(t, func() bool { return follower.HighWatermark() == 6 }, repWait, repTick)
		want := []ProducerState{{ProducerID: pid, ProducerEpoch: epoch, LastSequence: 3, LastOffset: 5,
			LastTimestamp: leader.Producers()[0].LastTimestamp, CoordinatorEpoch: 0, CurrentTxnFirstOffset: 5}}
		require.Equal(t, want, leader.Producers())
		require.Equal(t, want, follower.Producers())
		require.Equal(t, int64(5), leader.LastStableOffset())
		require.Equal(t, int64(5), follower.LastStableOffset())
		require.Equal(t, []string{"0:a-0", "1:a-1"}, txnReadAll(t, fs, ReadCommitted))
		require.Equal(t, []string{"0:a-0", "1:a-1", "3:b-3", "5:c-5"}, txnReadAll(t, fs, ReadUncommitted))

		// The producer's batches as it sent them (the base offset and the leader epoch, which
		// the leader rewrites, aside): its retries.
		firstBatch, err := leader.ReadBatches(nil, 0, 1)
		require.NoError(t, err)
		lastBatch, err := leader.ReadBatches(nil, 5, 1)
		require.NoError(t, err)

		// Failover: the follower takes over, alone.
		require.NoError(t, fetcher.Close())
		require.NoError(t, leader.Replica().BecomeFollower(2))
		require.NoError(t, follower.Replica().BecomeLeader(LeaderConfig{Epoch: 2}))
		first, last, err := follower.AppendAsLeader(ctx, AcksAll, lastBatch)
		require.NoError(t, err)
		require.Equal(t, [2]int64{5, 5}, [2]int64{first, last}, "retry of the open transaction's batch")
		first, last, err = follower.AppendAsLeader(ctx, AcksAll, firstBatch)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 1}, [2]int64{first, last}, "retry of the first transaction's batch")
		require.Equal(t, int64(6), follower.LogEndOffset(), "a retry writes nothing")
		require.Equal(t, want, follower.Producers())

		// The coordinator's marker to the new leader ends the open transaction there; an older
		// producer epoch is fenced.
		_, err = follower.AppendMarker(ctx, pid, epoch-1, true, 0)
		require.ErrorIs(t, err, ErrProducerFenced)
		off, err := follower.AppendMarker(ctx, pid, epoch, true, 0)
		require.NoError(t, err)
		require.Equal(t, int64(6), off)
		require.Equal(t, int64(7), follower.LastStableOffset())
		require.Equal(t, []string{"0:a-0", "1:a-1", "5:c-5"}, txnReadAll(t, fs, ReadCommitted))
	})
}

// TestReplicationTransactionMarkerNotReplicatedKeepsLSO: a COMMIT marker the leader wrote but its
// follower does not hold yet leaves the transaction unstable on the leader (Kafka's
// unreplicatedTxns): the last stable offset stays at its first offset until the high watermark
// passes the marker. The follower, which holds the records but not the marker, has the same.
func TestReplicationTransactionMarkerNotReplicatedKeepsLSO(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		ls, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f"}}))
		fs, follower := repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
		link := newRepLink(leader.Replica(), nil)
		repFollow(t, follower, 1, link, "f")

		p, err := ls.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, repTopic, repRecs("a", 0, 2)...))
		require.Eventually(t, func() bool { return follower.HighWatermark() == 2 }, repWait, repTick)

		link.pause()
		done := make(chan error, 1)
		go func() { done <- p.Commit(ctx) }()
		require.Eventually(t, func() bool { return leader.LogEndOffset() == 3 }, repWait, repTick)
		require.Equal(t, int64(2), leader.HighWatermark())
		require.Equal(t, int64(0), leader.LastStableOffset(), "leader, marker at 2 not replicated")
		require.Empty(t, txnReadAll(t, ls, ReadCommitted))
		require.Equal(t, int64(2), follower.HighWatermark())
		require.Equal(t, int64(0), follower.LastStableOffset(), "follower, marker not fetched")
		require.Empty(t, txnReadAll(t, fs, ReadCommitted))

		link.resume()
		require.NoError(t, <-done)
		require.Equal(t, int64(3), leader.HighWatermark())
		require.Equal(t, int64(3), leader.LastStableOffset())
		require.Equal(t, []string{"0:a-0", "1:a-1"}, txnReadAll(t, ls, ReadCommitted))
		require.Eventually(t, func() bool { return follower.HighWatermark() == 3 }, repWait, repTick)
		require.Equal(t, int64(3), follower.LastStableOffset())
		require.Equal(t, []string{"0:a-0", "1:a-1"}, txnReadAll(t, fs, ReadCommitted))
		require.Equal(t, leader.Producers(), follower.Producers())
	})
}

// TestReplicationFollowerLSOBoundedByHighWatermark: a follower fed by hand (Fetch and
// AppendAsFollower, no Follow loop, so its high watermark does not move) holds a committed
// transaction past its high watermark: its last stable offset is its high watermark, and a
// ReadCommitted reader of it sees nothing.
func TestReplicationFollowerLSOBoundedByHighWatermark(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		ls, leader := repOpen(t, env, TopicConfig{}, repOptions(fixedClock)...)
		fs, follower := repOpen(t, env.another(t), TopicConfig{}, repOptions(fixedClock)...)
		require.NoError(t, follower.Replica().BecomeFollower(1))
		p, err := ls.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, repTopic, repRecs("a", 0, 2)...))
		require.NoError(t, p.Commit(ctx))
		require.Equal(t, int64(3), leader.LastStableOffset())

		b, err := leader.ReadBatches(nil, 0, 1<<20)
		require.NoError(t, err)
		last, err := follower.Replica().AppendAsFollower(ctx, b)
		require.NoError(t, err)
		require.Equal(t, int64(2), last)
		require.Equal(t, int64(3), follower.LogEndOffset())
		require.Equal(t, int64(0), follower.HighWatermark())
		require.Equal(t, int64(0), follower.LastStableOffset())
		require.Empty(t, txnReadAll(t, fs, ReadCommitted))
		require.Equal(t, leader.Producers(), follower.Producers())
	})
}
