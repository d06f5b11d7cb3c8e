package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Edge cases of the exactly-once API as a user meets them: misuse, concurrency, timeouts and
// expiration on a clock the test moves, reopening, and ReadCommitted readers that start at the
// end.

// txnClock is a clock the test moves; the store's background transaction check is pushed out to
// an hour of real time, so that only the test's AbortTimedOutTransactions aborts.
func txnClockOptions(c *repClock) []Option {
	return []Option{WithClock(c.Now), WithTransactionCheckInterval(time.Hour), WithRetentionCheckInterval(-1)}
}

func TestProducerMisuse(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 2, WithTransactionMaxTimeout(time.Minute))
		_, err := s.CreateTopic("compacted", TopicConfig{LogConfig: LogConfig{CleanupPolicy: CleanupCompact, SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)

		// Configuration.
		for _, tc := range []struct {
			cfg  ProducerConfig
			want error
		}{
			{ProducerConfig{TransactionalID: "tx", TransactionTimeout: time.Minute + time.Millisecond}, ErrInvalidConfig},
			{ProducerConfig{TransactionalID: "tx", TransactionTimeout: -time.Second}, ErrInvalidConfig},
			{ProducerConfig{TransactionalID: "tx", TransactionTimeout: time.Microsecond}, ErrInvalidConfig},
			{ProducerConfig{TransactionalID: "a/b"}, ErrInvalidTopicName},
			{ProducerConfig{TransactionalID: ".."}, ErrInvalidTopicName},
		} {
			p, err := s.NewProducer(ctx, tc.cfg)
			require.ErrorIs(t, err, tc.want, "%+v", tc.cfg)
			require.Nil(t, p)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = s.NewProducer(cctx, ProducerConfig{TransactionalID: "tx"})
		require.ErrorIs(t, err, context.Canceled)
		// The default timeout, 60 s, is this store's maximum: allowed.
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)

		// State.
		require.ErrorIs(t, p.Commit(ctx), ErrInvalidTxnState)
		require.ErrorIs(t, p.Abort(ctx), ErrInvalidTxnState)
		require.ErrorIs(t, p.CommitReaderPositions(ctx, "r", "in", map[int32]int64{0: 0}), ErrInvalidTxnState)
		require.NoError(t, p.Begin())
		require.ErrorIs(t, p.Begin(), ErrInvalidTxnState)

		// Arguments refused before anything is written: the transaction goes on.
		for _, tc := range []struct {
			name, reader, topic string
			pos                 map[int32]int64
			want                error
		}{
			{"bad reader name", "a/b", "in", map[int32]int64{0: 1}, ErrInvalidReaderName},
			{"empty reader name", "", "in", map[int32]int64{0: 1}, ErrInvalidReaderName},
			{"unknown topic", "r", "nope", map[int32]int64{0: 1}, ErrUnknownTopic},
			{"internal topic", "r", consumerOffsetsTopic, map[int32]int64{0: 1}, ErrUnknownTopic},
			{"unknown partition", "r", "in", map[int32]int64{2: 1}, ErrUnknownTopic},
			{"negative offset", "r", "in", map[int32]int64{0: -1}, ErrInvalidConfig},
		} {
			require.ErrorIs(t, p.CommitReaderPositions(ctx, tc.reader, tc.topic, tc.pos), tc.want, tc.name)
		}
		require.ErrorIs(t, p.Append(ctx, "nope", &Record{Value: []byte("x")}), ErrUnknownTopic)
		require.ErrorIs(t, p.Append(ctx, transactionStateTopic, &Record{Value: []byte("x")}), ErrUnknownTopic)
		require.ErrorIs(t, p.Append(ctx, "out", nil), ErrInvalidRecord)
		compacted := stMust(stMust(s.Topic("compacted")).Partition(0))
		require.ErrorIs(t, p.Append(ctx, "compacted", &Record{Key: []byte("k"), Value: []byte("v")}, &Record{Value: []byte("keyless")}), ErrKeylessRecord)
		require.Equal(t, int64(0), compacted.LogEndOffset())
		require.Empty(t, compacted.Producers())
		require.NoError(t, p.CommitReaderPositions(ctx, "r", "in", map[int32]int64{}))
		require.NoError(t, p.Append(ctx, "out"))
		// Nothing written so far: the abort has nothing to end.
		require.NoError(t, p.Abort(ctx))
		require.Equal(t, int64(0), compacted.LogEndOffset())
		got, err := s.CommittedPositions("r")
		require.NoError(t, err)
		require.Empty(t, got)

		// A keyless record inside a transaction that wrote elsewhere: the abort ends it cleanly.
		require.NoError(t, p.Begin())
		out := stMust(stMust(s.Topic("out")).Partition(0))
		require.NoError(t, p.Append(ctx, "out", &Record{Key: []byte("k"), Value: []byte("o")}))
		outPart := out
		if out.LogEndOffset() == 0 {
			outPart = stMust(stMust(s.Topic("out")).Partition(1))
		}
		require.ErrorIs(t, p.Append(ctx, "compacted", &Record{Value: []byte("keyless")}), ErrKeylessRecord)
		require.Equal(t, int64(0), compacted.LogEndOffset())
		require.NoError(t, p.Abort(ctx))
		require.Equal(t, int64(2), outPart.LogEndOffset(), "the record and its ABORT marker")
		require.Equal(t, int64(2), outPart.LastStableOffset())
		require.Empty(t, readAll(t, s, "out", outPart.ID(), ReadCommitted))
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "compacted", &Record{Key: []byte("k"), Value: []byte("v")}))
		require.NoError(t, p.Commit(ctx))
		require.Equal(t, []string{"v"}, values(readAll(t, s, "compacted", 0, ReadCommitted)))

		// Idempotent producers have no transactions.
		ip, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		require.ErrorIs(t, ip.Begin(), ErrInvalidTxnState)
		require.ErrorIs(t, ip.Commit(ctx), ErrInvalidTxnState)
		require.ErrorIs(t, ip.Abort(ctx), ErrInvalidTxnState)
		require.ErrorIs(t, ip.CommitReaderPositions(ctx, "r", "in", map[int32]int64{0: 0}), ErrInvalidTxnState)

		// Close: every later call is ErrClosed; Close again is nil.
		require.NoError(t, p.Close())
		require.NoError(t, p.Close())
		require.ErrorIs(t, p.Begin(), ErrClosed)
		require.ErrorIs(t, p.Append(ctx, "out", &Record{Value: []byte("x")}), ErrClosed)
		require.ErrorIs(t, p.Commit(ctx), ErrClosed)
		require.NoError(t, ip.Close())
		require.ErrorIs(t, ip.Append(ctx, "out", &Record{Value: []byte("x")}), ErrClosed)

		// The coordinator's topics are not the user's.
		for _, name := range []string{transactionStateTopic, consumerOffsetsTopic} {
			_, err := s.CreateTopic(name, TopicConfig{})
			require.ErrorIs(t, err, ErrInvalidTopicName, name)
			_, err = s.Topic(name)
			require.ErrorIs(t, err, ErrUnknownTopic, name)
		}

		require.NoError(t, s.Close())
		_, err = s.NewProducer(ctx, ProducerConfig{})
		require.ErrorIs(t, err, ErrClosed)
		_, err = s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.ErrorIs(t, err, ErrClosed)
	})
}

// TestInternalTopicNamesRefusedInAnyCase: a topic named like an internal one but for case
// would share its partition folder with the coordinator's log on a case-insensitive file system
// (the store refuses such collisions between topics, ErrTopicExists): it is refused too.
func TestInternalTopicNamesRefusedInAnyCase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		_, err := s.NewProducer(context.Background(), ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		for _, name := range []string{"__Transaction_State", "__CONSUMER_OFFSETS"} {
			_, err := s.CreateTopic(name, TopicConfig{})
			require.ErrorIs(t, err, ErrInvalidTopicName, name)
		}
	})
}

// TestTransactionTimedOut: a transaction open longer than its TransactionTimeout (on the store's
// clock) is aborted by AbortTimedOutTransactions, not a millisecond before; the producer is then
// fenced on Append, CommitReaderPositions, Commit and Abort; a new producer with the same id
// takes over with the next epochs.
func TestTransactionTimedOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		clock := newRepClock()
		s := openTxnStore(t, fsy, t.TempDir(), 2, txnClockOptions(clock)...)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx", TransactionTimeout: 10 * time.Second})
		require.NoError(t, err)
		pid, epoch := p.ID()
		require.NoError(t, p.Begin())
		// Nothing added yet: a transaction that wrote nothing has no timeout to run.
		clock.Advance(time.Minute)
		require.Equal(t, 0, s.AbortTimedOutTransactions(ctx))
		require.NoError(t, p.Append(ctx, "out", &Record{Key: []byte("a"), Value: []byte("x")}))
		part := stMust(stMust(s.Topic("out")).Partition(stMust(s.Topic("out")).partitionOfKey(t, "a")))
		require.Equal(t, int64(0), part.LastStableOffset())

		clock.Advance(10 * time.Second)
		require.Equal(t, 0, s.AbortTimedOutTransactions(ctx), "at the timeout exactly")
		clock.Advance(time.Millisecond)
		require.Equal(t, 1, s.AbortTimedOutTransactions(ctx))
		require.Equal(t, 0, s.AbortTimedOutTransactions(ctx), "aborted once")
		require.Equal(t, int64(2), part.LogEndOffset(), "the record and the ABORT marker")
		require.Equal(t, int64(2), part.LastStableOffset())
		require.Equal(t, []ProducerState{{ProducerID: pid, ProducerEpoch: epoch + 1, LastSequence: -1, LastOffset: -1,
			LastTimestamp: clock.Now().UnixMilli(), CoordinatorEpoch: 0, CurrentTxnFirstOffset: -1}}, part.Producers())

		// Fenced: to the partition it wrote to, to another, and at the coordinator.
		require.ErrorIs(t, p.Append(ctx, "out", &Record{Key: []byte("a"), Value: []byte("late")}), ErrProducerFenced)
		require.ErrorIs(t, p.Commit(ctx), ErrProducerFenced)
		require.ErrorIs(t, p.Abort(ctx), ErrProducerFenced)
		require.ErrorIs(t, p.Begin(), ErrProducerFenced)
		require.Equal(t, int64(2), part.LogEndOffset())
		require.Empty(t, readAll(t, s, "out", part.ID(), ReadCommitted))

		q, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx", TransactionTimeout: 10 * time.Second})
		require.NoError(t, err)
		qid, qepoch := q.ID()
		require.Equal(t, [2]int64{pid, int64(epoch + 2)}, [2]int64{qid, int64(qepoch)})
		require.NoError(t, q.Begin())
		require.NoError(t, q.Append(ctx, "out", &Record{Key: []byte("a"), Value: []byte("fresh")}))
		clock.Advance(10 * time.Second)
		require.Equal(t, 0, s.AbortTimedOutTransactions(ctx), "the new transaction's time runs from its first append")
		require.NoError(t, q.Commit(ctx))
		require.Equal(t, []string{"fresh"}, values(readAll(t, s, "out", part.ID(), ReadCommitted)))
	})
}

// partitionOfKey returns the partition the topic's partitioner picks for key.
func (t *Topic) partitionOfKey(tb testing.TB, key string) int32 {
	tb.Helper()
	groups, err := t.route(nil, []*Record{{Key: []byte(key)}})
	require.NoError(tb, err)
	require.Len(tb, groups, 1)
	return groups[0].id
}

// TestProducerIDExpiration: a producer silent for WithProducerIDExpiration is forgotten by a
// partition's ApplyRetentionAt (its next batch is taken at any sequence); one with an open
// transaction never is, however long it is silent.
func TestProducerIDExpiration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		clock := newRepClock()
		s := openTxnStore(t, fsy, t.TempDir(), 1, append(txnClockOptions(clock), WithProducerIDExpiration(time.Hour))...)
		part := stMust(stMust(s.Topic("out")).Partition(0))
		ip, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		require.NoError(t, ip.Append(ctx, "out", &Record{Value: []byte("i0")}))
		tp, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, tp.Begin())
		require.NoError(t, tp.Append(ctx, "out", &Record{Value: []byte("t0")}))
		ipid, _ := ip.ID()
		tpid, _ := tp.ID()
		require.Len(t, part.Producers(), 2)

		clock.Advance(time.Hour - time.Millisecond)
		_, err = part.ApplyRetentionAt(clock.Now())
		require.NoError(t, err)
		require.Len(t, part.Producers(), 2, "a millisecond before the expiration")
		clock.Advance(time.Millisecond)
		_, err = part.ApplyRetentionAt(clock.Now())
		require.NoError(t, err)
		ps := part.Producers()
		require.Len(t, ps, 1)
		require.Equal(t, tpid, ps[0].ProducerID)
		require.Equal(t, int64(1), ps[0].CurrentTxnFirstOffset)
		clock.Advance(100 * time.Hour)
		_, err = part.ApplyRetentionAt(clock.Now())
		require.NoError(t, err)
		require.Equal(t, []int64{tpid}, producerIDs(part.Producers()), "an open transaction never expires")
		require.Equal(t, int64(1), part.LastStableOffset())

		// The forgotten idempotent producer goes on (its sequence 1 is taken by a partition
		// that knows it no more).
		require.NoError(t, ip.Append(ctx, "out", &Record{Value: []byte("i1")}))
		require.Equal(t, []int64{ipid, tpid}, producerIDs(part.Producers()))
		require.NoError(t, tp.Commit(ctx))
		clock.Advance(time.Hour)
		_, err = part.ApplyRetentionAt(clock.Now())
		require.NoError(t, err)
		require.Empty(t, part.Producers(), "the committed transaction's producer expires too")
		require.Equal(t, []string{"i0", "t0", "i1"}, values(readAll(t, s, "out", 0, ReadCommitted)))
	})
}

func producerIDs(ps []ProducerState) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ProducerID
	}
	return out
}

// TestProducerIDsAcrossReopen: producer ids are never handed out twice: not across a reopen, and
// not after the id checkpoint (commitlog-producer-ids) is lost, when the ids in use in the
// partitions and the coordinator's logs are skipped. On both backends (the memory one reopened
// on the same memory; the first open is OpenInMemory).
func TestProducerIDsAcrossReopen(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		used := map[int64]bool{}
		newProducer := func(s *Store, cfg ProducerConfig) *Producer {
			t.Helper()
			p, err := s.NewProducer(ctx, cfg)
			require.NoError(t, err)
			pid, _ := p.ID()
			if cfg.TransactionalID == "" {
				require.False(t, used[pid], "producer id %d handed out twice", pid)
			}
			used[pid] = true
			return p
		}
		open := func() *Store {
			s, err := env.open(WithClock(fixedClock))
			require.NoError(t, err)
			if _, err := s.Topic("out"); err != nil {
				_, err = s.CreateTopic("out", TopicConfig{LogConfig: LogConfig{SegmentIndexBytes: 64 << 10}})
				require.NoError(t, err)
			}
			return s
		}

		s := open()
		for i := range 3 {
			p := newProducer(s, ProducerConfig{})
			require.NoError(t, p.Append(ctx, "out", &Record{Value: fmt.Appendf(nil, "a%d", i)}))
		}
		tx := newProducer(s, ProducerConfig{TransactionalID: "tx"})
		txID, _ := tx.ID()
		require.NoError(t, tx.Begin())
		require.NoError(t, tx.Append(ctx, "out", &Record{Value: []byte("t")}))
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, []int64{0, 1, 2, 3}, slices.Sorted(maps.Keys(used)))
		require.NoError(t, s.Close())

		s = open()
		p := newProducer(s, ProducerConfig{})
		pid, _ := p.ID()
		require.Equal(t, int64(producerIDBlockSize), pid, "a reopen starts a new block")
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("b")}))
		tx = newProducer(s, ProducerConfig{TransactionalID: "tx"})
		id, epoch := tx.ID()
		require.Equal(t, [2]int64{txID, 1}, [2]int64{id, int64(epoch)}, "a transactional id keeps its producer id")
		require.NoError(t, s.Close())

		require.NoError(t, env.FS().Remove(env.path(producerIDsFileName)))
		s = open()
		p = newProducer(s, ProducerConfig{})
		pid, _ = p.ID()
		require.Equal(t, int64(producerIDBlockSize+1), pid, "after the largest id in use")
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("c")}))
		require.Equal(t, []string{"a0", "a1", "a2", "t", "b", "c"}, values(readAll(t, s, "out", 0, ReadCommitted)))
		require.NoError(t, s.Close())
	})
}

// TestReadCommittedReaderStartsAtLatestDuringTransaction: a ReadCommitted reader opened at
// Latest while a transaction is open starts at the last stable offset (the transaction's first
// offset), so that it reads the transaction's records once it commits; SeekToLatest likewise.
// A ReadUncommitted reader at Latest starts past them.
func TestReadCommittedReaderStartsAtLatestDuringTransaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		out := stMust(s.Topic("out"))
		require.NoError(t, out.Append(ctx, &Record{Value: []byte("plain")}))
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("t0")}, &Record{Value: []byte("t1")}))

		rc, err := out.NewReader(ReaderConfig{Start: Latest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer rc.Close()
		require.Equal(t, map[int32]int64{0: 1}, rc.Positions())
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())
		ru, err := out.NewReader(ReaderConfig{Start: Latest})
		require.NoError(t, err)
		defer ru.Close()
		require.Equal(t, map[int32]int64{0: 3}, ru.Positions())
		seek, err := out.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer seek.Close()
		require.NoError(t, seek.SeekToLatest())
		require.Equal(t, map[int32]int64{0: 1}, seek.Positions())

		// Nothing to read while the transaction is open.
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err = rc.Next(short)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)

		got := make(chan []string, 1)
		go func() {
			var vs []string
			for range 2 {
				r, err := seek.Next(ctx)
				if err != nil {
					vs = append(vs, err.Error())
					break
				}
				vs = append(vs, fmt.Sprintf("%d:%s", r.Offset, r.Value))
			}
			got <- vs
		}()
		require.NoError(t, p.Commit(ctx))
		for _, r := range []*Reader{rc} {
			var vs []string
			for range 2 {
				rec, err := r.Next(ctx)
				require.NoError(t, err)
				vs = append(vs, fmt.Sprintf("%d:%s", rec.Offset, rec.Value))
			}
			require.Equal(t, []string{"1:t0", "2:t1"}, vs)
		}
		require.Equal(t, []string{"1:t0", "2:t1"}, <-got, "a reader blocked at the LSO wakes at the commit")
		// The COMMIT marker at 3 counts in the lag until a fetch passes it, as in Kafka.
		require.Equal(t, map[int32]int64{0: 1}, rc.Lag())
		require.NoError(t, rc.SeekToLatest())
		require.Equal(t, map[int32]int64{0: 4}, rc.Positions())
		require.Equal(t, map[int32]int64{0: 0}, rc.Lag())
	})
}

// TestProducerSharedByGoroutines: goroutines share one idempotent producer, appending to every
// partition of two topics; every record lands once, each partition's producer state has one
// producer whose last sequence counts its records, and every batch's sequence follows the one
// before it.
func TestProducerSharedByGoroutines(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 3)
		p, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		pid, _ := p.ID()
		const workers, appends = 4, 30
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				for i := range appends {
					topic := []string{"in", "out"}[(w+i)%2]
					recs := []*Record{{Key: fmt.Appendf(nil, "k%d-%d", w, i), Value: fmt.Appendf(nil, "%d-%d", w, i)},
						{Key: fmt.Appendf(nil, "j%d-%d", w, i), Value: fmt.Appendf(nil, "%d-%d'", w, i)}}
					if err := p.Append(ctx, topic, recs...); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		want := map[string]bool{}
		for w := range workers {
			for i := range appends {
				want[fmt.Sprintf("%d-%d", w, i)] = true
				want[fmt.Sprintf("%d-%d'", w, i)] = true
			}
		}
		seen := map[string]bool{}
		for _, topic := range []string{"in", "out"} {
			for id := range int32(3) {
				part := stMust(stMust(s.Topic(topic)).Partition(id))
				recs := readAll(t, s, topic, id, ReadCommitted)
				for _, r := range recs {
					require.False(t, seen[string(r.Value)], "%s twice", r.Value)
					seen[string(r.Value)] = true
				}
				if len(recs) == 0 {
					require.Empty(t, part.Producers())
					continue
				}
				ps := part.Producers()
				require.Len(t, ps, 1)
				require.Equal(t, pid, ps[0].ProducerID)
				require.Equal(t, int32(len(recs)-1), ps[0].LastSequence, "%s-%d", topic, id)
				require.Equal(t, part.LogEndOffset()-1, ps[0].LastOffset)
			}
		}
		require.Equal(t, want, seen)
	})
}

// TestConcurrentTransactionsOneReader: two transactional producers write to one partition from
// their own goroutines, each committing or aborting at random (seeded), while a ReadCommitted
// reader reads: the reader sees exactly the committed records, each once, in offset order.
func TestConcurrentTransactionsOneReader(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		out := stMust(s.Topic("out"))
		part := stMust(out.Partition(0))
		const txns = 40
		var mu sync.Mutex
		committed := map[string]int64{} // value → offset
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for w := range 2 {
			p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: fmt.Sprintf("tx%d", w)})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(uint64(w), 18))
			wg.Go(func() {
				for i := range txns {
					if err := p.Begin(); err != nil {
						errs <- err
						return
					}
					var recs []*Record
					for j := range 1 + rng.IntN(3) {
						rs := []*Record{{Value: fmt.Appendf(nil, "w%d-t%d-%d", w, i, j)}}
						if err := p.Append(ctx, "out", rs...); err != nil {
							errs <- err
							return
						}
						recs = append(recs, rs...)
					}
					commit := rng.IntN(2) == 0
					var err error
					if commit {
						err = p.Commit(ctx)
					} else {
						err = p.Abort(ctx)
					}
					if err != nil {
						errs <- err
						return
					}
					if commit {
						mu.Lock()
						for _, r := range recs {
							committed[string(r.Value)] = r.Offset
						}
						mu.Unlock()
					}
				}
			})
		}
		r, err := out.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted})
		require.NoError(t, err)
		defer r.Close()
		readDone := make(chan struct{})
		var got []*Record
		var readErr error
		stop := make(chan struct{})
		go func() {
			defer close(readDone)
			for {
				rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				rec, err := r.Next(rctx)
				cancel()
				if err != nil {
					select {
					case <-stop:
						if pos, _ := r.Position(0); pos >= part.LastStableOffset() {
							return
						}
					default:
					}
					if !errors.Is(err, context.DeadlineExceeded) {
						readErr = err
						return
					}
					continue
				}
				got = append(got, rec)
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, part.LogEndOffset(), part.LastStableOffset())
		close(stop)
		<-readDone
		require.NoError(t, readErr)
		want := slices.SortedFunc(maps.Keys(committed), func(a, b string) int { return int(committed[a] - committed[b]) })
		var gotValues []string
		for i, rec := range got {
			if i > 0 {
				require.Greater(t, rec.Offset, got[i-1].Offset)
			}
			require.Equal(t, committed[string(rec.Value)], rec.Offset, "%s", rec.Value)
			gotValues = append(gotValues, string(rec.Value))
		}
		require.Equal(t, want, gotValues)
		require.Equal(t, want, values(readAll(t, s, "out", 0, ReadCommitted)))
	})
}

// TestCompactionKeepsCommittedValueOverAbortedOne: a compacted topic where a key's committed
// value is followed by an aborted one. Compaction must not let the aborted record stand for
// the key (Kafka's cleaner leaves aborted batches out of its offset map and removes them): a
// ReadCommitted reader still reads the committed value after the clean, and a ReadUncommitted
// reader no longer sees the aborted one.
func TestCompactionKeepsCommittedValueOverAbortedOne(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		s := openTxnStore(t, fsy, t.TempDir(), 1)
		cfg := compactConfig()
		c, err := s.CreateTopic("c", TopicConfig{LogConfig: cfg})
		require.NoError(t, err)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "c", &Record{Key: []byte("a"), Value: []byte("committed")}))
		require.NoError(t, p.Commit(ctx))
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "c", &Record{Key: []byte("a"), Value: []byte("aborted")}))
		require.NoError(t, p.Abort(ctx))
		// Key b: the aborted transaction's ABORT marker lands in the active segment, past the
		// segments cleaned, which hold its record.
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "c", &Record{Key: []byte("b"), Value: []byte("b-committed")}))
		require.NoError(t, p.Commit(ctx))
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "c", &Record{Key: []byte("b"), Value: []byte("b-aborted")}))
		for i := range 60 {
			require.NoError(t, c.Append(ctx, &Record{Key: fmt.Appendf(nil, "f%d", i%3), Value: fmt.Appendf(nil, "filler%d", i)}))
		}
		require.NoError(t, p.Abort(ctx))
		part := stMust(c.Partition(0))
		require.Greater(t, part.SegmentCount(), 2)
		require.Equal(t, []string{"committed", "b-committed"}, values(readAll(t, s, "c", 0, ReadCommitted))[:2])
		_, err = c.Compact(ctx)
		require.NoError(t, err)
		// What the clean left: the committed values of a and b, then the fillers of the active
		// segment, which is not cleaned.
		got := values(readAll(t, s, "c", 0, ReadCommitted))
		require.Equal(t, []string{"committed", "b-committed"}, got[:2])
		require.Equal(t, []string{"filler57", "filler58", "filler59"}, got[len(got)-3:])
		require.Equal(t, got, values(readAll(t, s, "c", 0, ReadUncommitted)), "the aborted records are gone")
		// The producer's state survives the clean: its next transaction goes on in sequence.
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "c", &Record{Key: []byte("a"), Value: []byte("again")}))
		require.NoError(t, p.Commit(ctx))
	})
}

// TestIdempotentRetryAfterReopen: a producer's retry of its last batch, sent after the store
// was closed and reopened, is answered with the original offsets and writes nothing: the
// producer state comes back from the snapshot written at close, and, with every snapshot
// deleted, from the replay of the log. An older batch's retry is out of order after a load
// from a snapshot, as in Kafka, whose snapshot keeps each producer's last batch only.
func TestIdempotentRetryAfterReopen(t *testing.T) {
	for _, dropSnapshots := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropSnapshots=%v", dropSnapshots), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s, part := repOpen(t, env, TopicConfig{}, WithClock(fixedClock))
				p, err := s.NewProducer(ctx, ProducerConfig{})
				require.NoError(t, err)
				for i := range 3 {
					require.NoError(t, p.Append(ctx, repTopic, repRecs("v", 2*i, 2)...))
				}
				last, err := part.ReadBatches(nil, 4, 1)
				require.NoError(t, err)
				first, err := part.ReadBatches(nil, 0, 1)
				require.NoError(t, err)
				want := part.Producers()
				require.NoError(t, s.Close())
				if dropSnapshots {
					dir := env.path(repTopic + "-0")
					for _, name := range fsListDir(t, env.FS(), dir) {
						if filepath.Ext(name) == ".snapshot" {
							require.NoError(t, env.FS().Remove(filepath.Join(dir, name)))
						}
					}
				}
				_, part = repOpen(t, env, TopicConfig{}, WithClock(fixedClock))
				require.Equal(t, want, part.Producers())
				f, l, err := part.AppendAsLeader(ctx, AcksAll, last)
				require.NoError(t, err)
				require.Equal(t, [2]int64{4, 5}, [2]int64{f, l})
				// An older batch: Kafka's snapshot keeps only a producer's last batch, so
				// after a load from it the retry is out of order; a replay of the log knows
				// the last five.
				f, l, err = part.AppendAsLeader(ctx, AcksAll, first)
				if dropSnapshots {
					require.NoError(t, err)
					require.Equal(t, [2]int64{0, 1}, [2]int64{f, l})
				} else {
					require.ErrorIs(t, err, ErrOutOfOrderSequence)
				}
				require.Equal(t, int64(6), part.LogEndOffset())
			})
		})
	}
}
