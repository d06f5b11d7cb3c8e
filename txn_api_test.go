package commitlog

import (
	"context"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The transaction coordinator's protocol-level API (txn_api.go) as a Kafka protocol server drives
// it: InitProducerID, AddPartitionsToTxn, a client's transactional batches appended raw
// (AppendAsLeader, after VerifyTxnPartition), AddOffsetsToTxn, TxnOffsetCommit, EndTxn; the
// groups' offsets seen through the group coordinator, live and after a reopen.

var (
	in0 = TopicPartition{Topic: "in", Partition: 0}
	in1 = TopicPartition{Topic: "in", Partition: 1}
)

// apiStore opens a store with topics "in" and "out" of two partitions each, on the store's clock
// (testEpoch) with no background retention or transaction check; reopen closes it and opens the
// same folder again.
func apiStore(t *testing.T, fsy fsys.FS, dir string, opts ...Option) *Store {
	t.Helper()
	return openTxnStore(t, fsy, dir, 2, append(txnClockOptions(newRepClock()), opts...)...)
}

func reopenAPIStore(t *testing.T, s *Store, fsy fsys.FS, dir string) *Store {
	t.Helper()
	require.NoError(t, s.Close())
	return apiStore(t, fsy, dir)
}

// produceTxn appends a client's transactional batch of vals to topic's partition, after the
// verification a Kafka broker makes (KIP-890), and returns its offsets.
func produceTxn(t *testing.T, s *Store, pid int64, epoch int16, seq int32, topic string, partition int32, vals ...string) [2]int64 {
	t.Helper()
	require.NoError(t, s.VerifyTxnPartition(pid, epoch, topic, partition))
	recs := make([]*Record, len(vals))
	for i, v := range vals {
		recs[i] = &Record{Value: []byte(v), Timestamp: testEpoch}
	}
	p, err := stMust(s.Topic(topic)).Partition(partition)
	require.NoError(t, err)
	first, last, err := p.AppendAsLeader(context.Background(), AcksAll, pidBatch(t, pid, epoch, seq, true, recs))
	require.NoError(t, err)
	return [2]int64{first, last}
}

// committed returns the values of topic's partition a ReadCommitted reader sees, checking that
// it reads up to the last stable offset lso.
func committed(t *testing.T, s *Store, topic string, partition int32, lso int64) []string {
	t.Helper()
	p, err := stMust(s.Topic(topic)).Partition(partition)
	require.NoError(t, err)
	require.Equal(t, lso, p.LastStableOffset(), "%s-%d", topic, partition)
	return values(readAll(t, s, topic, partition, ReadCommitted))
}

// groupOffset is a committed offset as the tests compare it: the commit time to the ms, as the
// log keeps it.
type groupOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitMs    int64
}

func fetchGroup(t *testing.T, s *Store, id string) map[TopicPartition]groupOffset {
	t.Helper()
	gc, err := s.GroupCoordinator()
	require.NoError(t, err)
	got, err := gc.FetchOffsets(id, nil)
	require.NoError(t, err)
	out := map[TopicPartition]groupOffset{}
	for tp, o := range got {
		out[tp] = groupOffset{o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTime.UnixMilli()}
	}
	return out
}

// offsetsOnly drops the commit times.
func offsetsOnly(m map[TopicPartition]groupOffset) map[TopicPartition]groupOffset {
	out := map[TopicPartition]groupOffset{}
	for tp, o := range m {
		o.CommitMs = 0
		out[tp] = o
	}
	return out
}

func listGroupIDs(t *testing.T, s *Store) []string {
	t.Helper()
	gs, err := s.ListGroups()
	require.NoError(t, err)
	ids := []string{}
	for _, g := range gs {
		ids = append(ids, g.Group)
	}
	return ids
}

// TestTxnAPIFullTransaction: a transaction through the protocol API, with the client's batches
// appended raw and a consumer group's offsets, committed, then one aborted; what ReadCommitted
// readers and the group coordinator see, again after a reopen. On the OS's files, in a memory
// file system, and in a store of OpenInMemory (not reopened).
func TestTxnAPIFullTransaction(t *testing.T) {
	run := func(t *testing.T, s *Store, reopen func(*Store) *Store) {
		ctx := context.Background()
		require.NoError(t, s.SetGroupPositions(ctx, "g", map[TopicPartition]int64{in1: 3}))
		before := fetchGroup(t, s, "g")
		require.Equal(t, map[TopicPartition]groupOffset{in1: {3, -1, "", before[in1].CommitMs}}, before)

		pid, epoch, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 0}, [2]int64{pid, int64(epoch)})
		require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 0), ErrInvalidTxnState, "nothing added yet")
		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, map[string][]int32{"out": {0, 1}}))
		require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "in", 0), ErrInvalidTxnState, "in-0 was not added")
		require.Equal(t, [2]int64{0, 1}, produceTxn(t, s, pid, epoch, 0, "out", 0, "a", "b"))
		require.Equal(t, [2]int64{0, 0}, produceTxn(t, s, pid, epoch, 0, "out", 1, "c"))
		require.Empty(t, committed(t, s, "out", 0, 0))

		require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"))
		errs, err := s.TxnOffsetCommit(ctx, TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch,
			GroupID: "g", GenerationID: -1, Offsets: map[TopicPartition]group.OffsetAndMetadata{
				in0: {Offset: 5, LeaderEpoch: 4, Metadata: "m"}, in1: {Offset: 7, LeaderEpoch: -1}}})
		require.NoError(t, err)
		require.Equal(t, map[TopicPartition]error{in0: nil, in1: nil}, errs)
		require.Equal(t, before, fetchGroup(t, s, "g"), "pending until the transaction commits")
		gc, err := s.GroupCoordinator()
		require.NoError(t, err)
		require.True(t, gc.HasPendingTxnOffsets("g", in0))

		require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true))
		require.Equal(t, []string{"a", "b"}, committed(t, s, "out", 0, 3))
		require.Equal(t, []string{"c"}, committed(t, s, "out", 1, 2))
		after := fetchGroup(t, s, "g")
		require.Equal(t, map[TopicPartition]groupOffset{in0: {5, 4, "m", 0}, in1: {7, -1, "", 0}}, offsetsOnly(after))
		require.False(t, gc.HasPendingTxnOffsets("g", in0))
		require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true), "a retry of the commit")
		require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch, false), ErrInvalidTxnState, "abort after commit")
		require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 0), ErrInvalidTxnState, "the transaction ended")

		// The next transaction, aborted: its batch and its offsets go.
		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, map[string][]int32{"out": {0}}))
		require.Equal(t, [2]int64{3, 3}, produceTxn(t, s, pid, epoch, 2, "out", 0, "d"))
		require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"))
		_, err = s.TxnOffsetCommit(ctx, TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch,
			GroupID: "g", GenerationID: -1, Offsets: map[TopicPartition]group.OffsetAndMetadata{in0: {Offset: 9, LeaderEpoch: -1}}})
		require.NoError(t, err)
		require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, false))
		require.Equal(t, []string{"a", "b"}, committed(t, s, "out", 0, 5))
		require.Equal(t, after, fetchGroup(t, s, "g"))
		require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch, true), ErrInvalidTxnState, "commit after abort")
		require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, false), "a retry of the abort")

		if reopen == nil {
			return
		}
		s = reopen(s)
		require.Equal(t, after, fetchGroup(t, s, "g"))
		require.Equal(t, []string{"a", "b"}, committed(t, s, "out", 0, 5))
		require.Equal(t, []string{"c"}, committed(t, s, "out", 1, 2))
		// The producer's id survives; its pair bumps the epoch (KIP-360), and the index by
		// producer id was rebuilt.
		pid, epoch, err = s.InitProducerID(ctx, "tx", time.Minute, pid, epoch)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 1}, [2]int64{pid, int64(epoch)})
		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, map[string][]int32{"out": {1}}))
		require.Equal(t, [2]int64{2, 2}, produceTxn(t, s, pid, epoch, 0, "out", 1, "e"))
		require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true))
		require.Equal(t, []string{"c", "e"}, committed(t, s, "out", 1, 4))
	}
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		run(t, apiStore(t, fsy, dir), func(s *Store) *Store { return reopenAPIStore(t, s, fsy, dir) })
	})
	t.Run("OpenInMemory", func(t *testing.T) {
		s, err := OpenInMemory(txnClockOptions(newRepClock())...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		for _, name := range []string{"in", "out"} {
			_, err := s.CreateTopic(name, TopicConfig{Partitions: 2})
			require.NoError(t, err)
		}
		run(t, s, nil)
	})
}

// TestTxnAPIInitProducerID: idempotent ids from the block allocator, the timeout bounds, and
// KIP-360's producer id and epoch: the current pair bumps, a retry of a bump gets its answer
// again, any other pair is fenced; an epoch at its maximum takes a new producer id, which the
// index by producer id follows.
func TestTxnAPIInitProducerID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := apiStore(t, fsy, t.TempDir(), WithTransactionMaxTimeout(time.Minute))
		type answer struct {
			pid   int64
			epoch int16
		}
		init := func(id string, timeout time.Duration, pid int64, epoch int16) (answer, error) {
			p, e, err := s.InitProducerID(ctx, id, timeout, pid, epoch)
			return answer{p, e}, err
		}
		for _, tc := range []struct {
			name       string
			id         string
			timeout    time.Duration
			pid        int64
			epoch      int16
			want       answer
			wantErr    error
			afterwards bool // the transactional id exists afterwards
		}{
			{"idempotent", "", 0, -1, -1, answer{0, 0}, nil, false},
			{"idempotent ignores the pair", "", -time.Second, 9, 9, answer{1, 0}, nil, false},
			{"timeout zero", "t0", 0, -1, -1, answer{-1, -1}, ErrInvalidTransactionTimeout, false},
			{"timeout negative", "t0", -time.Second, -1, -1, answer{-1, -1}, ErrInvalidTransactionTimeout, false},
			{"timeout below 1 ms", "t0", 999 * time.Microsecond, -1, -1, answer{-1, -1}, ErrInvalidTransactionTimeout, false},
			{"timeout above the maximum", "t0", time.Minute + time.Millisecond, -1, -1, answer{-1, -1}, ErrInvalidTransactionTimeout, false},
			{"producer id without epoch", "t0", time.Minute, 5, -1, answer{-1, -1}, ErrInvalidConfig, false},
			{"epoch without producer id", "t0", time.Minute, -1, 0, answer{-1, -1}, ErrInvalidConfig, false},
			{"id too long", strings.Repeat("x", math.MaxInt16+1), time.Minute, -1, -1, answer{-1, -1}, ErrInvalidConfig, false},
			{"a new id, the maximum timeout", "tx", time.Minute, -1, -1, answer{2, 0}, nil, true},
			{"the current pair bumps", "tx", time.Minute, 2, 0, answer{2, 1}, nil, true},
			{"a retry of that bump", "tx", time.Minute, 2, 0, answer{2, 1}, nil, true},
			{"the current pair again", "tx", time.Minute, 2, 1, answer{2, 2}, nil, true},
			{"an older epoch", "tx", time.Minute, 2, 0, answer{-1, -1}, ErrProducerFenced, true},
			{"a retry of the last bump", "tx", time.Minute, 2, 1, answer{2, 2}, nil, true},
			{"a later epoch", "tx", time.Minute, 2, 5, answer{-1, -1}, ErrProducerFenced, true},
			{"another producer id", "tx", time.Minute, 3, 2, answer{-1, -1}, ErrProducerFenced, true},
			{"no pair: a new instance", "tx", time.Minute, -1, -1, answer{2, 3}, nil, true},
			{"the pair before the new instance", "tx", time.Minute, 2, 2, answer{-1, -1}, ErrProducerFenced, true},
			{"a pair for an id with no producer", "new", time.Minute, 42, 7, answer{3, 0}, nil, true},
			{"an id of any characters", "a/b c:\x00", time.Minute, -1, -1, answer{4, 0}, nil, true},
		} {
			got, err := init(tc.id, tc.timeout, tc.pid, tc.epoch)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr, tc.name)
			} else {
				require.NoError(t, err, tc.name)
			}
			require.Equal(t, tc.want, got, tc.name)
			if tc.id != "" {
				err := s.EndTxn(ctx, tc.id, got.pid, got.epoch, true)
				if tc.afterwards {
					require.True(t, err == nil || errors.Is(err, ErrInvalidProducerIDMapping), "%s: %v", tc.name, err)
				} else {
					require.ErrorIs(t, err, ErrInvalidProducerIDMapping, tc.name)
				}
			}
		}

		// The epoch at its maximum: the next bump takes a new producer id; a retry of it gets the
		// same; the old id no longer maps to the transactional id.
		m := s.txn.txns["tx"]
		m.mu.Lock()
		m.epoch = math.MaxInt16 - 1
		m.mu.Unlock()
		got, err := init("tx", time.Minute, 2, math.MaxInt16-1)
		require.NoError(t, err)
		require.Equal(t, answer{5, 0}, got)
		got, err = init("tx", time.Minute, 2, math.MaxInt16-1)
		require.NoError(t, err)
		require.Equal(t, answer{5, 0}, got, "a retry of the rotation")
		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", 5, 0, map[string][]int32{"out": {0}}))
		require.NoError(t, s.VerifyTxnPartition(5, 0, "out", 0))
		require.ErrorIs(t, s.VerifyTxnPartition(2, math.MaxInt16-1, "out", 0), ErrInvalidProducerIDMapping)
		require.ErrorIs(t, s.AddPartitionsToTxn(ctx, "tx", 2, math.MaxInt16-1, map[string][]int32{"out": {0}}), ErrInvalidProducerIDMapping)
		// With a transaction open, the current pair aborts it and bumps.
		got, err = init("tx", time.Minute, 5, 0)
		require.NoError(t, err)
		require.Equal(t, answer{5, 2}, got, "the abort fenced epoch 1, the bump gave 2")
		require.ErrorIs(t, s.VerifyTxnPartition(5, 2, "out", 0), ErrInvalidTxnState)
	})
}

// TestTxnAPIFencing: a new instance of a transactional id aborts the old one's transaction and
// fences it on every call and in the partitions; a store Producer of the same id and a Kafka
// client fence each other.
func TestTxnAPIFencing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := apiStore(t, fsy, t.TempDir())
		pid, a, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
		require.NoError(t, err)
		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, a, map[string][]int32{"out": {0}}))
		require.Equal(t, [2]int64{0, 0}, produceTxn(t, s, pid, a, 0, "out", 0, "a"))
		require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, a, "g"))
		commitReq := TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: a, GroupID: "g", GenerationID: -1,
			Offsets: map[TopicPartition]group.OffsetAndMetadata{in0: {Offset: 1, LeaderEpoch: -1}}}
		_, err = s.TxnOffsetCommit(ctx, commitReq)
		require.NoError(t, err)

		// B: its InitProducerID aborts A's transaction with epoch 1 and returns epoch 2.
		pidB, b, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 2}, [2]int64{pidB, int64(b)})
		require.Empty(t, committed(t, s, "out", 0, 2))
		require.Empty(t, fetchGroup(t, s, "g"))

		require.ErrorIs(t, s.AddPartitionsToTxn(ctx, "tx", pid, a, map[string][]int32{"out": {1}}), ErrProducerFenced)
		require.ErrorIs(t, s.AddOffsetsToTxn(ctx, "tx", pid, a, "g"), ErrProducerFenced)
		_, err = s.TxnOffsetCommit(ctx, commitReq)
		require.ErrorIs(t, err, ErrProducerFenced)
		require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, a, true), ErrProducerFenced)
		require.ErrorIs(t, s.VerifyTxnPartition(pid, a, "out", 0), ErrProducerFenced)
		out0, err := stMust(s.Topic("out")).Partition(0)
		require.NoError(t, err)
		_, _, err = out0.AppendAsLeader(ctx, AcksAll, pidBatch(t, pid, a, 1, true, []*Record{{Value: []byte("z"), Timestamp: testEpoch}}))
		require.ErrorIs(t, err, ErrProducerFenced, "the partition's ABORT marker carries epoch 1")

		require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pidB, b, map[string][]int32{"out": {0}}))
		require.Equal(t, [2]int64{2, 2}, produceTxn(t, s, pidB, b, 0, "out", 0, "b"))
		require.NoError(t, s.EndTxn(ctx, "tx", pidB, b, true))
		require.Equal(t, []string{"b"}, committed(t, s, "out", 0, 4))

		// A store Producer of the id fences B; B's pair then fences the Producer (KIP-360 bump).
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx", TransactionTimeout: time.Minute})
		require.NoError(t, err)
		pp, pe := p.ID()
		require.Equal(t, [2]int64{0, 3}, [2]int64{pp, int64(pe)})
		require.ErrorIs(t, s.AddPartitionsToTxn(ctx, "tx", pidB, b, map[string][]int32{"out": {0}}), ErrProducerFenced)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Key: []byte("k"), Value: []byte("p")}))
		require.NoError(t, p.Commit(ctx))
		pidC, c, err := s.InitProducerID(ctx, "tx", time.Minute, pp, pe)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 4}, [2]int64{pidC, int64(c)})
		require.NoError(t, p.Begin())
		require.ErrorIs(t, p.Append(ctx, "out", &Record{Key: []byte("k"), Value: []byte("q")}), ErrProducerFenced)
	})
}

// TestTxnAPIErrors: each call's errors, Kafka's; nothing changes on any of them.
func TestTxnAPIErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := apiStore(t, fsy, t.TempDir())
		pid, epoch, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
		require.NoError(t, err)
		otherPID, _, err := s.InitProducerID(ctx, "other", time.Minute, -1, -1)
		require.NoError(t, err)
		idem, _, err := s.InitProducerID(ctx, "", 0, -1, -1)
		require.NoError(t, err)
		require.Equal(t, []int64{0, 1, 2}, []int64{pid, otherPID, idem})
		out := map[string][]int32{"out": {0}}

		t.Run("AddPartitionsToTxn", func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				id      string
				pid     int64
				epoch   int16
				parts   map[string][]int32
				want    error
				unknown []TopicPartition
			}{
				{"unknown transactional id", "nope", pid, epoch, out, ErrInvalidProducerIDMapping, nil},
				{"another producer id", "tx", otherPID, epoch, out, ErrInvalidProducerIDMapping, nil},
				{"another epoch", "tx", pid, epoch + 1, out, ErrProducerFenced, nil},
				{"unknown topic", "tx", pid, epoch, map[string][]int32{"nope": {0}, "out": {0}}, ErrUnknownTopic,
					[]TopicPartition{{Topic: "nope", Partition: 0}}},
				{"unknown partitions", "tx", pid, epoch, map[string][]int32{"out": {2, 0, 2}, "in": {-1}}, ErrUnknownTopic,
					[]TopicPartition{{Topic: "in", Partition: -1}, {Topic: "out", Partition: 2}}},
				{"internal topics", "tx", pid, epoch, map[string][]int32{consumerOffsetsTopic: {0}, transactionStateTopic: {0}}, ErrUnknownTopic,
					[]TopicPartition{{Topic: consumerOffsetsTopic, Partition: 0}, {Topic: transactionStateTopic, Partition: 0}}},
				{"unknown topic before an unknown id", "nope", pid, epoch, map[string][]int32{"nope": {1}}, ErrUnknownTopic,
					[]TopicPartition{{Topic: "nope", Partition: 1}}},
			} {
				err := s.AddPartitionsToTxn(ctx, tc.id, tc.pid, tc.epoch, tc.parts)
				require.ErrorIs(t, err, tc.want, tc.name)
				var upe *UnknownPartitionsError
				if tc.unknown != nil {
					require.ErrorAs(t, err, &upe, tc.name)
					require.Equal(t, tc.unknown, upe.Partitions, tc.name)
				} else {
					require.False(t, errors.As(err, &upe), tc.name)
				}
				require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 0), ErrInvalidTxnState, "%s: nothing added", tc.name)
			}
			require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, nil), "nothing to add")
			require.Equal(t, "Empty", s.txn.txns["tx"].state.String())
		})

		t.Run("AddOffsetsToTxn", func(t *testing.T) {
			for _, tc := range []struct {
				name, id, group string
				epoch           int16
				want            error
			}{
				{"empty group id", "tx", "", epoch, ErrInvalidGroupID},
				{"reserved prefix", "tx", readerGroupPrefix + "r", epoch, ErrInvalidGroupID},
				{"group id too long", "tx", strings.Repeat("g", math.MaxInt16+1), epoch, ErrInvalidGroupID},
				{"unknown transactional id", "nope", "g", epoch, ErrInvalidProducerIDMapping},
				{"another epoch", "tx", "g", epoch + 1, ErrProducerFenced},
			} {
				require.ErrorIs(t, s.AddOffsetsToTxn(ctx, tc.id, pid, tc.epoch, tc.group), tc.want, tc.name)
			}
			require.Equal(t, "Empty", s.txn.txns["tx"].state.String())
		})

		t.Run("EndTxn", func(t *testing.T) {
			require.ErrorIs(t, s.EndTxn(ctx, "nope", pid, epoch, true), ErrInvalidProducerIDMapping)
			require.ErrorIs(t, s.EndTxn(ctx, "tx", otherPID, epoch, true), ErrInvalidProducerIDMapping)
			require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch+1, true), ErrProducerFenced)
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true), "Empty: nothing to commit")
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, false), "Empty: nothing to abort")
			for _, first := range []bool{false, true} {
				require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, out))
				require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, first))
				require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch, !first), ErrInvalidTxnState, "the other decision after %v", first)
				require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, first), "a retry of %v", first)
			}
		})

		t.Run("TxnOffsetCommit", func(t *testing.T) {
			req := func(mod func(*TxnOffsetCommitRequest)) TxnOffsetCommitRequest {
				r := TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, GroupID: "g", GenerationID: -1,
					Offsets: map[TopicPartition]group.OffsetAndMetadata{in0: {Offset: 5, LeaderEpoch: -1}}}
				if mod != nil {
					mod(&r)
				}
				return r
			}
			// Not in a transaction, then in one without the offsets partition.
			_, err := s.TxnOffsetCommit(ctx, req(nil))
			require.ErrorIs(t, err, ErrInvalidTxnState)
			require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, out))
			_, err = s.TxnOffsetCommit(ctx, req(nil))
			require.ErrorIs(t, err, ErrInvalidTxnState)
			require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"))
			for _, tc := range []struct {
				name string
				mod  func(*TxnOffsetCommitRequest)
				want error
			}{
				{"unknown transactional id", func(r *TxnOffsetCommitRequest) { r.TransactionalID = "nope" }, ErrInvalidProducerIDMapping},
				{"another producer id", func(r *TxnOffsetCommitRequest) { r.ProducerID = otherPID }, ErrInvalidProducerIDMapping},
				{"another epoch", func(r *TxnOffsetCommitRequest) { r.ProducerEpoch++ }, ErrProducerFenced},
				{"empty group id", func(r *TxnOffsetCommitRequest) { r.GroupID = "" }, ErrInvalidGroupID},
				{"reserved prefix", func(r *TxnOffsetCommitRequest) { r.GroupID = readerGroupPrefix + "r" }, ErrInvalidGroupID},
				{"a generation of a group that does not exist", func(r *TxnOffsetCommitRequest) { r.GenerationID = 0 }, ErrIllegalGeneration},
				{"the other transaction's id", func(r *TxnOffsetCommitRequest) { r.TransactionalID, r.ProducerID = "other", otherPID }, ErrInvalidTxnState},
			} {
				errs, err := s.TxnOffsetCommit(ctx, req(tc.mod))
				require.ErrorIs(t, err, tc.want, tc.name)
				require.Nil(t, errs, tc.name)
			}
			gc, err := s.GroupCoordinator()
			require.NoError(t, err)
			require.False(t, gc.HasPendingTxnOffsets("g", in0), "nothing written")

			nope, out9 := TopicPartition{Topic: "nope", Partition: 0}, TopicPartition{Topic: "out", Partition: 9}
			internal := TopicPartition{Topic: consumerOffsetsTopic, Partition: 0}
			errs, err := s.TxnOffsetCommit(ctx, req(func(r *TxnOffsetCommitRequest) {
				r.Offsets[nope], r.Offsets[out9], r.Offsets[internal] = group.OffsetAndMetadata{Offset: 1}, group.OffsetAndMetadata{Offset: 1}, group.OffsetAndMetadata{Offset: 1}
			}))
			require.NoError(t, err)
			require.Equal(t, []TopicPartition{internal, in0, nope, out9}, slices.SortedFunc(maps.Keys(errs), compareTP))
			require.NoError(t, errs[in0])
			for _, tp := range []TopicPartition{nope, out9, internal} {
				require.ErrorIs(t, errs[tp], ErrUnknownTopic, "%v", tp)
			}
			// Only unknown partitions: nothing is asked of the transaction.
			errs, err = s.TxnOffsetCommit(ctx, req(func(r *TxnOffsetCommitRequest) {
				r.TransactionalID, r.Offsets = "nope", map[TopicPartition]group.OffsetAndMetadata{nope: {Offset: 1}}
			}))
			require.NoError(t, err)
			require.Len(t, errs, 1)
			require.ErrorIs(t, errs[nope], ErrUnknownTopic)
			require.True(t, gc.HasPendingTxnOffsets("g", in0))
			require.False(t, gc.HasPendingTxnOffsets("g", nope))
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true))
			require.Equal(t, map[TopicPartition]groupOffset{in0: {5, -1, "", 0}}, offsetsOnly(fetchGroup(t, s, "g")))
		})

		t.Run("VerifyTxnPartition", func(t *testing.T) {
			require.ErrorIs(t, s.VerifyTxnPartition(99, 0, "out", 0), ErrInvalidProducerIDMapping)
			require.ErrorIs(t, s.VerifyTxnPartition(idem, 0, "out", 0), ErrInvalidProducerIDMapping, "an idempotent producer")
			require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, out))
			require.NoError(t, s.VerifyTxnPartition(pid, epoch, "out", 0))
			require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch+1, "out", 0), ErrProducerFenced)
			require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 1), ErrInvalidTxnState)
			require.ErrorIs(t, s.VerifyTxnPartition(otherPID, 0, "out", 0), ErrInvalidTxnState, "other's transaction is Empty")
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, false))
		})

		t.Run("closed and cancelled", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, _, err := s.InitProducerID(cctx, "tx", time.Minute, -1, -1)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, s.AddPartitionsToTxn(cctx, "tx", pid, epoch, out), context.Canceled)
			require.ErrorIs(t, s.EndTxn(cctx, "tx", pid, epoch, true), context.Canceled)
			require.NoError(t, s.Close())
			_, _, err = s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, out), ErrClosed)
			require.ErrorIs(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"), ErrClosed)
			require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch, true), ErrClosed)
			_, err = s.TxnOffsetCommit(ctx, TxnOffsetCommitRequest{TransactionalID: "tx", GroupID: "g"})
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 0), ErrClosed)
		})
	})
}

// TestTxnAPIConcurrentTransactions: a commit whose marker cannot be written (the partition became
// a follower) is decided all the same: EndTxn returns nil, and until the markers are written the
// producer's calls get ErrConcurrentTransactions, the other decision ErrInvalidTxnState; once the
// partition leads again, the timeout check or an EndTxn retry completes it, the group's offsets
// with it.
func TestTxnAPIConcurrentTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		for _, viaCheck := range []bool{false, true} {
			s := apiStore(t, fsy, t.TempDir())
			pid, epoch, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
			require.NoError(t, err)
			require.NoError(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, map[string][]int32{"out": {0}}))
			produceTxn(t, s, pid, epoch, 0, "out", 0, "a")
			require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"))
			req := TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, GroupID: "g", GenerationID: -1,
				Offsets: map[TopicPartition]group.OffsetAndMetadata{in0: {Offset: 5, LeaderEpoch: -1}}}
			_, err = s.TxnOffsetCommit(ctx, req)
			require.NoError(t, err)

			out0, err := stMust(s.Topic("out")).Partition(0)
			require.NoError(t, err)
			require.NoError(t, out0.Replica().BecomeFollower(1))
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true), "decided; the marker failed")
			require.Equal(t, "PrepareCommit", s.txn.txns["tx"].state.String())
			require.ErrorIs(t, s.AddPartitionsToTxn(ctx, "tx", pid, epoch, map[string][]int32{"out": {1}}), ErrConcurrentTransactions)
			require.ErrorIs(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"), ErrConcurrentTransactions)
			_, err = s.TxnOffsetCommit(ctx, req)
			require.ErrorIs(t, err, ErrConcurrentTransactions)
			require.ErrorIs(t, s.VerifyTxnPartition(pid, epoch, "out", 0), ErrConcurrentTransactions)
			require.ErrorIs(t, s.EndTxn(ctx, "tx", pid, epoch, false), ErrInvalidTxnState)
			err = s.EndTxn(ctx, "tx", pid, epoch, true)
			require.ErrorIs(t, err, ErrConcurrentTransactions, "a retry while the marker still fails")
			require.NotErrorIs(t, err, ErrNotLeader, "one Kafka error to answer with")
			require.Empty(t, fetchGroup(t, s, "g"))

			require.NoError(t, out0.Replica().BecomeLeader(LeaderConfig{Epoch: 2}))
			if viaCheck {
				require.Equal(t, 0, s.AbortTimedOutTransactions(ctx), "completed, not aborted")
			} else {
				require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true))
			}
			require.Equal(t, "CompleteCommit", s.txn.txns["tx"].state.String())
			require.Equal(t, []string{"a"}, committed(t, s, "out", 0, 2))
			require.Equal(t, map[TopicPartition]groupOffset{in0: {5, -1, "", 0}}, offsetsOnly(fetchGroup(t, s, "g")))
			require.NoError(t, s.EndTxn(ctx, "tx", pid, epoch, true))
			require.NoError(t, s.Close())
		}
	})
}

// TestTxnOffsetCommitReplayAtOpen: the groups' offsets after a reopen are those the live store
// had: a committed transaction's offsets applied (unless the group committed the partition again
// after them), an aborted one's not, a group deleted while a transaction held its offsets stays
// deleted, a transaction open at the close is aborted by the open and its offsets never apply;
// reader positions committed in a transaction under a group's name stay the reader's. The same
// again after the compaction of __consumer_offsets-0.
func TestTxnOffsetCommitReplayAtOpen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		s := apiStore(t, fsy, dir)
		begin := func(id, groupID string) (int64, int16) {
			pid, epoch, err := s.InitProducerID(ctx, id, time.Minute, -1, -1)
			require.NoError(t, err)
			require.NoError(t, s.AddOffsetsToTxn(ctx, id, pid, epoch, groupID))
			return pid, epoch
		}
		commit := func(id string, pid int64, epoch int16, groupID string, offsets map[TopicPartition]int64) {
			req := TxnOffsetCommitRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, GroupID: groupID, GenerationID: -1,
				Offsets: map[TopicPartition]group.OffsetAndMetadata{}}
			for tp, o := range offsets {
				req.Offsets[tp] = group.OffsetAndMetadata{Offset: o, LeaderEpoch: -1, Metadata: id}
			}
			errs, err := s.TxnOffsetCommit(ctx, req)
			require.NoError(t, err)
			require.Len(t, errs, len(offsets))
		}
		require.NoError(t, s.SetGroupPositions(ctx, "g-abort", map[TopicPartition]int64{in0: 1}))

		pa, ea := begin("ta", "g-commit")
		commit("ta", pa, ea, "g-commit", map[TopicPartition]int64{in0: 10, in1: 11})
		require.NoError(t, s.EndTxn(ctx, "ta", pa, ea, true))

		pb, eb := begin("tb", "g-abort")
		commit("tb", pb, eb, "g-abort", map[TopicPartition]int64{in0: 20})
		require.NoError(t, s.EndTxn(ctx, "tb", pb, eb, false))

		pc, ec := begin("tc", "g-later")
		commit("tc", pc, ec, "g-later", map[TopicPartition]int64{in0: 30, in1: 32})
		require.NoError(t, s.SetGroupPositions(ctx, "g-later", map[TopicPartition]int64{in0: 31}))
		require.NoError(t, s.EndTxn(ctx, "tc", pc, ec, true))

		pd, ed := begin("td", "g-deleted")
		commit("td", pd, ed, "g-deleted", map[TopicPartition]int64{in0: 40})
		require.NoError(t, s.DeleteGroup(ctx, "g-deleted"))
		require.NoError(t, s.EndTxn(ctx, "td", pd, ed, true))

		// Reader positions under the name of a group, in a store Producer's transaction.
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tr"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Key: []byte("k"), Value: []byte("v")}))
		require.NoError(t, p.CommitReaderPositions(ctx, "g-commit", "in", map[int32]int64{0: 50}))
		require.NoError(t, p.Commit(ctx))

		pe, ee := begin("te", "g-open")
		commit("te", pe, ee, "g-open", map[TopicPartition]int64{in0: 60})
		// Two transactions in one producer's life: the second's offsets wait for its own marker.
		require.NoError(t, s.AddOffsetsToTxn(ctx, "ta", pa, ea, "g-commit"))
		commit("ta", pa, ea, "g-commit", map[TopicPartition]int64{in1: 12})
		require.NoError(t, s.EndTxn(ctx, "ta", pa, ea, true))

		groups := []string{"g-abort", "g-commit", "g-deleted", "g-later", "g-open"}
		live := map[string]map[TopicPartition]groupOffset{}
		for _, id := range groups {
			live[id] = fetchGroup(t, s, id)
		}
		require.Equal(t, map[string]map[TopicPartition]groupOffset{
			"g-abort":   {in0: {1, -1, "", 0}},
			"g-commit":  {in0: {10, -1, "ta", 0}, in1: {12, -1, "ta", 0}},
			"g-deleted": {},
			"g-later":   {in0: {31, -1, "", 0}, in1: {32, -1, "tc", 0}},
			"g-open":    {},
		}, map[string]map[TopicPartition]groupOffset{"g-abort": offsetsOnly(live["g-abort"]), "g-commit": offsetsOnly(live["g-commit"]),
			"g-deleted": offsetsOnly(live["g-deleted"]), "g-later": offsetsOnly(live["g-later"]), "g-open": offsetsOnly(live["g-open"])})
		require.Equal(t, []string{"g-abort", "g-commit", "g-later", "g-open"}, listGroupIDs(t, s))
		gc, err := s.GroupCoordinator()
		require.NoError(t, err)
		require.True(t, gc.HasPendingTxnOffsets("g-open", in0))
		positions, err := s.CommittedPositions("g-commit")
		require.NoError(t, err)
		require.Equal(t, map[string]map[int32]int64{"in": {0: 50}}, positions)

		check := func(s *Store, what string) {
			t.Helper()
			for _, id := range groups {
				require.Equal(t, live[id], fetchGroup(t, s, id), "%s: %s", what, id)
			}
			gc, err := s.GroupCoordinator()
			require.NoError(t, err)
			require.False(t, gc.HasPendingTxnOffsets("g-open", in0), "%s: the open aborted te", what)
			positions, err := s.CommittedPositions("g-commit")
			require.NoError(t, err)
			require.Equal(t, map[string]map[int32]int64{"in": {0: 50}}, positions, what)
		}
		s = reopenAPIStore(t, s, fsy, dir)
		check(s, "reopened")
		require.Equal(t, []string{"g-abort", "g-commit", "g-later", "g-open"}, listGroupIDs(t, s))
		require.Equal(t, "CompleteAbort", s.txn.txns["te"].state.String())

		// Compacted: the aborted transactions' records and every overwritten record go.
		rollInternal(t, s.txn.offsets)
		res, err := s.txn.offsets.Compact(ctx)
		require.NoError(t, err)
		require.Positive(t, res.RecordsRemoved)
		s = reopenAPIStore(t, s, fsy, dir)
		check(s, "compacted and reopened")
		// The group the aborted transaction made, with no offset, is gone with its records.
		require.Equal(t, []string{"g-abort", "g-commit", "g-later"}, listGroupIDs(t, s))
	})
}

// TestTxnOffsetCommitKafkaRecords: the batch TxnOffsetCommit writes is the producer's
// transactional batch of Kafka's OffsetCommitKey version 1 (the group id) and OffsetCommitValue
// version 3 records, each partition once, in topic and partition order, with the sequence after
// the producer's last one in the log.
func TestTxnOffsetCommitKafkaRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := apiStore(t, fsy, filepath.Join(t.TempDir(), "s"))
		pid, epoch, err := s.InitProducerID(ctx, "tx", time.Minute, -1, -1)
		require.NoError(t, err)
		require.NoError(t, s.AddOffsetsToTxn(ctx, "tx", pid, epoch, "g"))
		start := s.txn.offsets.LogEndOffset()
		for i, offsets := range []map[TopicPartition]group.OffsetAndMetadata{
			{in1: {Offset: 8, LeaderEpoch: 2, Metadata: "meta"}, in0: {Offset: 7, LeaderEpoch: -1}},
			{in0: {Offset: 9, LeaderEpoch: -1}},
		} {
			_, err := s.TxnOffsetCommit(ctx, TxnOffsetCommitRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch,
				GroupID: "g", GenerationID: -1, Offsets: offsets})
			require.NoError(t, err, "call %d", i)
		}
		b := readAllBatches(t, s.txn.offsets, start)
		hs := batchHeaders(t, b)
		require.Len(t, hs, 2)
		for i, want := range []struct {
			base int64
			seq  int32
			n    int32
		}{{start, 0, 2}, {start + 2, 2, 1}} {
			h := hs[i].Header
			require.Equal(t, want.base, h.BaseOffset, "batch %d", i)
			require.Equal(t, pid, h.ProducerID)
			require.Equal(t, epoch, h.ProducerEpoch)
			require.Equal(t, want.seq, h.BaseSequence, "batch %d", i)
			require.Equal(t, want.n-1, h.LastOffsetDelta, "batch %d", i)
			require.True(t, h.Attributes.Transactional())
			require.False(t, h.Attributes.Control())
		}
		recs, err := DecodeRecords(nil, b, 0, 0)
		require.NoError(t, err)
		type kv struct {
			keyVersion   int16
			group, topic string
			partition    int32
			valVersion   int16
			offset       int64
			leaderEpoch  int32
			metadata     string
		}
		var got []kv
		for _, r := range recs {
			var k kmsg.OffsetCommitKey
			var v kmsg.OffsetCommitValue
			require.NoError(t, k.ReadFrom(r.Key))
			require.NoError(t, v.ReadFrom(r.Value))
			require.Positive(t, v.CommitTimestamp)
			got = append(got, kv{k.Version, k.Group, k.Topic, k.Partition, v.Version, v.Offset, v.LeaderEpoch, v.Metadata})
		}
		require.Equal(t, []kv{
			{1, "g", "in", 0, 3, 7, -1, ""},
			{1, "g", "in", 1, 3, 8, 2, "meta"},
			{1, "g", "in", 0, 3, 9, -1, ""},
		}, got)
	})
}
