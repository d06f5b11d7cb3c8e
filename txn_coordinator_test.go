package commitlog

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// rollInternal rolls one of the coordinator's logs at its log end offset, as 100 MiB of
// transitions would.
func rollInternal(t *testing.T, l *Log) {
	t.Helper()
	l.lockWriters()
	defer l.appendMu.Unlock()
	require.NoError(t, l.roll(l.active().NextOffset()))
}

// TestCoordinatorCompactsItsLogs: the coordinator cleans its state log once it is due, keeping the
// last record of each transactional id, and a reopen reads the same state from what is left.
func TestCoordinatorCompactsItsLogs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		clock := newRepClock()
		s := openTxnStore(t, fsy, dir, 1, txnClockOptions(clock)...)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		for range 5 {
			require.NoError(t, p.Begin())
			require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("v")}))
			require.NoError(t, p.CommitReaderPositions(ctx, "r", "in", map[int32]int64{0: 0}))
			require.NoError(t, p.Commit(ctx))
		}
		// Each transaction wrote Ongoing with "out", Ongoing with the offsets log too (Kafka's
		// AddPartitionsToTxn, then AddOffsetsToTxn), PrepareCommit and CompleteCommit; the first
		// use Empty.
		stateLog, offsetsLog := s.txn.log, s.txn.offsets
		require.Equal(t, int64(1+5*4), stateLog.LogEndOffset())
		rollInternal(t, stateLog)
		rollInternal(t, offsetsLog)
		require.True(t, stateLog.CompactionState().Due)

		s.txn.compactInternal(ctx)
		var recs []*Record
		for rec, err := range stateLog.Scan(0) {
			require.NoError(t, err)
			recs = append(recs, rec)
		}
		require.Len(t, recs, 1, "one transactional id: its last record stays")
		require.Equal(t, int64(20), recs[0].Offset)
		var val kmsg.TxnMetadataValue
		require.NoError(t, val.ReadFrom(recs[0].Value))
		require.Equal(t, kmsg.TransactionStateCompleteCommit, val.State)
		pid, epoch := p.ID()
		require.Equal(t, pid, val.ProducerID)
		require.Equal(t, epoch, val.ProducerEpoch)
		// The offsets log keeps the last position of (r, in, 0) and the markers.
		require.False(t, offsetsLog.CompactionState().Due)
		require.NoError(t, s.Close())

		s = openTxnStore(t, fsy, dir, 1, txnClockOptions(clock)...)
		q, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		qid, qepoch := q.ID()
		require.Equal(t, pid, qid)
		require.Equal(t, epoch+1, qepoch)
		got, err := s.CommittedPositions("r")
		require.NoError(t, err)
		require.Equal(t, map[string]map[int32]int64{"in": {0: 0}}, got)
	})
}

// TestDamagedTxnIndexRebuilt: a .txnindex damaged while the store was closed (cleanly, so that
// nothing else is replayed) is emptied when its segment opens and its entries are written again
// from the log's ABORT markers: ReadCommitted readers still skip the aborted records.
func TestDamagedTxnIndexRebuilt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		s, err := Open(dir, withFS(fsy))
		require.NoError(t, err)
		tp, err := s.CreateTopic("out", TopicConfig{Partitions: 1, LogConfig: LogConfig{SegmentBytes: 1024, SegmentIndexBytes: 64 << 10}})
		require.NoError(t, err)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("aborted")}))
		require.NoError(t, p.Abort(ctx))
		for i := range 40 { // several segments after the ABORT's
			require.NoError(t, tp.Append(ctx, &Record{Value: []byte{byte(i)}}))
		}
		part, err := tp.Partition(0)
		require.NoError(t, err)
		require.Greater(t, part.SegmentCount(), 2)
		pdir := part.log.Dir()
		entry := txnIndexBytes(t, fsy, pdir, 0)
		require.Len(t, entry, 34)
		require.NoError(t, s.Close())

		fsTruncate(t, fsy, segPath(pdir, 0, txnIndexSuffix), 20) // not a whole entry
		s, err = Open(dir, withFS(fsy))
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, entry, txnIndexBytes(t, fsy, pdir, 0))
		got := readAll(t, s, "out", 0, ReadCommitted)
		require.Len(t, got, 40)
		require.Equal(t, []byte{0}, got[0].Value)
		require.Equal(t, int64(2), got[0].Offset, "the aborted record at 0 and its marker at 1 are skipped")
	})
}

// TestFencingAtTheLargestEpoch: a producer whose epoch is the largest InitProducerId gives
// (math.MaxInt16-1) is still fenced when the coordinator aborts its transaction (the abort's
// epoch is math.MaxInt16), and the next instance of its transactional id gets a new producer id.
func TestFencingAtTheLargestEpoch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		clock := newRepClock()
		s := openTxnStore(t, fsy, t.TempDir(), 1, txnClockOptions(clock)...)
		p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx", TransactionTimeout: time.Second})
		require.NoError(t, err)
		pid, _ := p.ID()
		p.epoch = math.MaxInt16 - 1
		p.txn.epoch = math.MaxInt16 - 1
		require.NoError(t, p.Begin())
		require.NoError(t, p.Append(ctx, "out", &Record{Value: []byte("late")}))
		clock.Advance(2 * time.Second)
		require.Equal(t, 1, s.AbortTimedOutTransactions(ctx))
		require.Equal(t, int16(math.MaxInt16), p.txn.epoch)
		require.ErrorIs(t, p.Append(ctx, "out", &Record{Value: []byte("zombie")}), ErrProducerFenced)

		q, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: "tx"})
		require.NoError(t, err)
		qid, qepoch := q.ID()
		require.NotEqual(t, pid, qid)
		require.Equal(t, int16(0), qepoch)
		require.Empty(t, readAll(t, s, "out", 0, ReadCommitted))
	})
}
