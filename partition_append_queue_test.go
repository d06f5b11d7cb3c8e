package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The coalescing tests make rounds deterministic by holding the first write to a .log file in
// the fault file system: the call that leads the first round is stuck in its write, every call
// made meanwhile queues, and once all have queued the write goes on: the next round takes them
// all.

// logWriteHold blocks the next write to a .log file of a fault FS until released.
type logWriteHold struct {
	held    chan struct{} // closed once the write is blocked
	release chan struct{}
	once    sync.Once
}

// holdNextLogWrite arms ffs so that its next write to a .log file blocks (holding the fault FS,
// whose every other operation waits too) until the returned hold is released.
func holdNextLogWrite(t *testing.T, ffs *faultfs.FS) *logWriteHold {
	t.Helper()
	h := &logWriteHold{held: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	ffs.Inject(func(op faultfs.Op) *faultfs.Fault {
		if op.Kind == faultfs.Write && strings.HasSuffix(op.Path, logSuffix) {
			once.Do(func() {
				close(h.held)
				<-h.release
			})
		}
		return nil
	})
	t.Cleanup(h.Release) // a failed test must not leave the write blocked
	return h
}

// Release lets the held write go on; calls after the first do nothing.
func (h *logWriteHold) Release() { h.once.Do(func() { close(h.release) }) }

// queuedCalls returns how many calls wait in p's queue.
func queuedCalls(p *Partition) int {
	p.queue.mu.Lock()
	defer p.queue.mu.Unlock()
	return len(p.queue.pending)
}

// queueTest is one store of a coalescing test, on the file or memory backend, behind a fault FS.
type queueTest struct {
	ffs *faultfs.FS
	dir string
	s   *Store
	tp  *Topic
	p   *Partition
}

// newQueueTest opens a store on fsy behind a fault FS with opts (and a fixed clock), with a
// topic "events" of one partition of cfg.
func newQueueTest(t *testing.T, fsy fsys.FS, cfg LogConfig, opts ...Option) *queueTest {
	t.Helper()
	dir := t.TempDir()
	ffs := newFaultFS(t, fsy, dir)
	s, err := Open(dir, append([]Option{withFS(ffs), WithClock(fixedClock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1, LogConfig: cfg})
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	return &queueTest{ffs: ffs, dir: dir, s: s, tp: tp, p: p}
}

// appendAsync appends r with Topic.Append under ctx on a goroutine of its own; the channel
// gives its error.
func (q *queueTest) appendAsync(ctx context.Context, r *Record) <-chan error {
	done := make(chan error, 1)
	go func() { done <- q.tp.Append(ctx, r) }()
	return done
}

// startHeld appends first and waits until its write is held, then appends each of recs and
// waits until they all queue behind it.
func (q *queueTest) startHeld(t *testing.T, h *logWriteHold, first *Record, ctxs []context.Context, recs []*Record) (firstDone <-chan error, done []<-chan error) {
	t.Helper()
	firstDone = q.appendAsync(context.Background(), first)
	<-h.held
	for i, r := range recs {
		ctx := context.Background()
		if ctxs != nil {
			ctx = ctxs[i]
		}
		done = append(done, q.appendAsync(ctx, r))
	}
	require.Eventually(t, func() bool { return queuedCalls(q.p) == len(recs) }, 30*time.Second, time.Millisecond)
	return firstDone, done
}

// logOps counts the operations of kind k on .log files that ffs recorded.
func logOps(ffs *faultfs.FS, k faultfs.Kind) int {
	n := 0
	for _, op := range ffs.Ops() {
		if op.Kind == k && strings.HasSuffix(op.Path, logSuffix) {
			n++
		}
	}
	return n
}

// recordCounts returns the record count of every batch of p, in order.
func recordCounts(t *testing.T, p *Partition) []int32 {
	t.Helper()
	var counts []int32
	for _, h := range batchHeaders(t, readAllPartitionBatches(t, p)) {
		counts = append(counts, h.RecordCount)
	}
	return counts
}

func valueRecord(v string) *Record { return &Record{Value: []byte(v)} }

// TestCoalescedAppendsShareBatchWriteAndFsync: single-record appends made while a round's write
// is in flight are written by the next round as one batch, with one write and one fsync; each
// call gets its own offset (distinct, contiguous, in queue order) and timestamp.
func TestCoalescedAppendsShareBatchWriteAndFsync(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		q := newQueueTest(t, fsy, LogConfig{})
		writes0, syncs0 := logOps(q.ffs, faultfs.Write), logOps(q.ffs, faultfs.Sync)
		h := holdNextLogWrite(t, q.ffs)
		first := valueRecord("first")
		recs := make([]*Record, 8)
		for i := range recs {
			recs[i] = valueRecord(fmt.Sprintf("queued-%d", i))
		}
		firstDone, done := q.startHeld(t, h, first, nil, recs)
		h.Release()
		require.NoError(t, <-firstDone)
		for _, d := range done {
			require.NoError(t, <-d)
		}

		require.Equal(t, int64(0), first.Offset)
		offsets := make([]int64, len(recs))
		for i, r := range recs {
			offsets[i] = r.Offset
			require.Equal(t, "events", r.Topic)
			require.Equal(t, int32(0), r.Partition)
			require.True(t, r.Timestamp.Equal(testEpoch), "record %d's timestamp %v", i, r.Timestamp)
		}
		slices.Sort(offsets)
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8}, offsets)
		require.Equal(t, int64(9), q.p.LogEndOffset())
		require.Equal(t, []int32{1, 8}, recordCounts(t, q.p), "the queued calls share one batch")
		require.Equal(t, 2, logOps(q.ffs, faultfs.Write)-writes0, "one write a round")
		require.Equal(t, 2, logOps(q.ffs, faultfs.Sync)-syncs0, "one fsync a round")
		for _, r := range append([]*Record{first}, recs...) {
			var got Record
			require.NoError(t, q.p.ReadRecord(r.Offset, &got))
			require.Equal(t, r.Value, got.Value, "offset %d", r.Offset)
		}
	})
}

// TestCoalescedAppendsBatchSize: a round splits its calls into batches of at most batch.size
// bytes (each record counted at its RecordSizeBound), still with one write.
func TestCoalescedAppendsBatchSize(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		// A record of a 100-byte value and no key is 107 bytes in a batch, 136 at its bound: a
		// batch of 61 header bytes and two records is 275, and a third would take it past 400
		// (275+136).
		q := newQueueTest(t, fsy, LogConfig{}, WithBatchSize(400))
		writes0 := logOps(q.ffs, faultfs.Write)
		h := holdNextLogWrite(t, q.ffs)
		recs := make([]*Record, 7)
		for i := range recs {
			recs[i] = &Record{Value: bytes.Repeat([]byte{byte('a' + i)}, 100)}
		}
		firstDone, done := q.startHeld(t, h, valueRecord("first"), nil, recs)
		h.Release()
		require.NoError(t, <-firstDone)
		for _, d := range done {
			require.NoError(t, <-d)
		}
		require.Equal(t, []int32{1, 2, 2, 2, 1}, recordCounts(t, q.p))
		require.Equal(t, 2, logOps(q.ffs, faultfs.Write)-writes0, "the round's four batches in one write")
	})
}

// TestCoalescedAppendErrorsStayPerCall: a call the log refuses (a record larger than
// max.message.bytes, a timestamp too far ahead) fails alone; the calls queued with it are
// written, each with its own offset, and the refused ones leave nothing in the log.
func TestCoalescedAppendErrorsStayPerCall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		q := newQueueTest(t, fsy, LogConfig{MaxMessageBytes: 1024, TimestampAfterMax: time.Hour})
		h := holdNextLogWrite(t, q.ffs)
		good1, good2 := valueRecord("good-1"), valueRecord("good-2")
		tooLarge := &Record{Value: bytes.Repeat([]byte{'x'}, 2048)}
		ahead := &Record{Value: []byte("ahead"), Timestamp: testEpoch.Add(2 * time.Hour)}
		recs := []*Record{good1, tooLarge, good2, ahead}
		firstDone, done := q.startHeld(t, h, valueRecord("first"), nil, recs)
		h.Release()
		require.NoError(t, <-firstDone)
		errs := make([]error, len(done))
		for i, d := range done {
			errs[i] = <-d
		}
		require.NoError(t, errs[0])
		require.ErrorIs(t, errs[1], ErrRecordTooLarge)
		require.NoError(t, errs[2])
		require.ErrorIs(t, errs[3], ErrInvalidTimestamp)

		offsets := []int64{good1.Offset, good2.Offset}
		slices.Sort(offsets)
		require.Equal(t, []int64{1, 2}, offsets)
		require.Equal(t, int64(3), q.p.LogEndOffset())
		// The coalesced write was refused whole; each call was then written on its own.
		require.Equal(t, []int32{1, 1, 1}, recordCounts(t, q.p))
		for _, r := range []*Record{good1, good2} {
			var got Record
			require.NoError(t, q.p.ReadRecord(r.Offset, &got))
			require.Equal(t, r.Value, got.Value)
		}
	})
}

// TestCoalescedAppendCanceledWhileQueued: a call whose context is done while it waits in the
// queue returns the context's error and writes nothing; the calls around it are written.
func TestCoalescedAppendCanceledWhileQueued(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		q := newQueueTest(t, fsy, LogConfig{})
		h := holdNextLogWrite(t, q.ffs)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		canceled, kept := valueRecord("canceled"), valueRecord("kept")
		firstDone, done := q.startHeld(t, h, valueRecord("first"),
			[]context.Context{ctx, context.Background()}, []*Record{canceled, kept})
		cancel()
		require.ErrorIs(t, <-done[0], context.Canceled)
		require.Equal(t, 1, queuedCalls(q.p), "the canceled call left the queue")
		h.Release()
		require.NoError(t, <-firstDone)
		require.NoError(t, <-done[1])
		require.Equal(t, int64(1), kept.Offset)
		require.Equal(t, int64(2), q.p.LogEndOffset())
		require.Equal(t, []int32{1, 1}, recordCounts(t, q.p))
		var got Record
		require.NoError(t, q.p.ReadRecord(1, &got))
		require.Equal(t, []byte("kept"), got.Value)
	})
}

// TestCoalescedAppendsAtClose: calls queued when the store closes each return ErrClosed or are
// written; none is acknowledged without its record in the log after a reopen.
func TestCoalescedAppendsAtClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		q := newQueueTest(t, fsy, LogConfig{})
		h := holdNextLogWrite(t, q.ffs)
		first := valueRecord("first")
		recs := make([]*Record, 6)
		for i := range recs {
			recs[i] = valueRecord(fmt.Sprintf("queued-%d", i))
		}
		firstDone, done := q.startHeld(t, h, first, nil, recs)
		closed := make(chan error, 1)
		go func() { closed <- q.s.Close() }()
		h.Release()
		require.NoError(t, <-closed)
		acked := map[int64][]byte{}
		for i, d := range append([]<-chan error{firstDone}, done...) {
			r := first
			if i > 0 {
				r = recs[i-1]
			}
			err := <-d
			if err != nil {
				require.ErrorIs(t, err, ErrClosed, "call %d", i)
				continue
			}
			acked[r.Offset] = r.Value
		}
		// After Close, a call never waits: it fails at once.
		require.ErrorIs(t, q.tp.Append(context.Background(), valueRecord("late")), ErrClosed)

		s, err := Open(q.dir, withFS(q.ffs))
		require.NoError(t, err)
		defer s.Close()
		tp, err := s.Topic("events")
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		for off, v := range acked {
			var got Record
			require.NoError(t, p.ReadRecord(off, &got), "acknowledged offset %d", off)
			require.Equal(t, v, got.Value, "offset %d", off)
		}
	})
}

// TestAppendsNotCoalescedWithBatchSizeZero: WithBatchSize(0) turns coalescing off, as Kafka's
// batch.size=0 does: every call is its own batch.
func TestAppendsNotCoalescedWithBatchSizeZero(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		q := newQueueTest(t, fsy, LogConfig{}, WithBatchSize(0))
		require.False(t, q.p.queue.on())
		h := holdNextLogWrite(t, q.ffs)
		firstDone := q.appendAsync(context.Background(), valueRecord("first"))
		<-h.held
		var done []<-chan error
		for i := range 4 {
			done = append(done, q.appendAsync(context.Background(), valueRecord(fmt.Sprintf("v%d", i))))
		}
		// Each call is in the log's append path (encoding, or waiting for the write lock).
		require.Eventually(t, func() bool { return q.p.log.gc.writing.Load() == 5 }, 30*time.Second, time.Millisecond)
		h.Release()
		require.NoError(t, <-firstDone)
		for _, d := range done {
			require.NoError(t, <-d)
		}
		require.Equal(t, []int32{1, 1, 1, 1, 1}, recordCounts(t, q.p))
	})
}

// TestCoalescedAppendsConcurrent: single-record appends from many goroutines to a topic of 4
// partitions, with acks all, leader and none mixed: every call succeeds, and every partition's
// records hold distinct, contiguous offsets from 0, each record at its own.
func TestCoalescedAppendsConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 4})
		require.NoError(t, err)
		ctx := context.Background()
		const goroutines, each = 16, 40
		var mu sync.Mutex
		written := map[int32]map[int64]string{}
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				acks := []Acks{AcksAll, AcksLeader, AcksNone}[g%3]
				for i := range each {
					v := fmt.Sprintf("g%d-%d", g, i)
					r := &Record{Key: fmt.Appendf(nil, "key-%d", g), Value: []byte(v)}
					if err := tp.AppendAcks(ctx, acks, r); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if written[r.Partition] == nil {
						written[r.Partition] = map[int64]string{}
					}
					_, dup := written[r.Partition][r.Offset]
					written[r.Partition][r.Offset] = v
					mu.Unlock()
					if dup {
						errs <- fmt.Errorf("partition %d offset %d given twice", r.Partition, r.Offset)
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
		total := 0
		for id, offs := range written {
			p, err := tp.Partition(id)
			require.NoError(t, err)
			require.Equal(t, int64(len(offs)), p.LogEndOffset(), "partition %d", id)
			for off, v := range offs {
				require.Less(t, off, int64(len(offs)), "partition %d: offsets contiguous from 0", id)
				var got Record
				require.NoError(t, p.ReadRecord(off, &got))
				require.Equal(t, v, string(got.Value), "partition %d offset %d", id, off)
			}
			total += len(offs)
		}
		require.Equal(t, goroutines*each, total)
	})
}

// TestLingerWaitsForBatchSize: with linger.ms, a round's leader waits for more calls, and a
// queue that reaches batch.size ends the wait before linger.ms: the calls made meanwhile share
// the leader's batch.
func TestLingerWaitsForBatchSize(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		// A linger no test run reaches: the round is written once batch.size bytes are queued.
		// Each record is counted at 136 bytes (see TestCoalescedAppendsBatchSize): four reach 544.
		q := newQueueTest(t, fsy, LogConfig{}, WithLinger(time.Hour), WithBatchSize(500))
		var done []<-chan error
		for i := range 4 {
			done = append(done, q.appendAsync(context.Background(), &Record{Value: bytes.Repeat([]byte{byte('a' + i)}, 100)}))
		}
		for _, d := range done {
			require.NoError(t, <-d)
		}
		require.Equal(t, int64(4), q.p.LogEndOffset())
		counts := recordCounts(t, q.p)
		// The four calls went in one round; batch.size splits it after three (61 + 3*107 = 382,
		// and 382 + 136 > 500).
		require.Equal(t, []int32{3, 1}, counts)
	})
}

// TestProducerAppendsNotCoalesced: an idempotent Producer's appends do not queue: each is its own
// batch, with its producer id and sequence, even while another call's write is in flight.
func TestProducerAppendsNotCoalesced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		q := newQueueTest(t, fsy, LogConfig{})
		prod, err := q.s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		defer prod.Close()
		h := holdNextLogWrite(t, q.ffs)
		firstDone := q.appendAsync(ctx, valueRecord("first"))
		<-h.held
		prodDone := make(chan error, 1)
		go func() { prodDone <- prod.Append(ctx, "events", valueRecord("p-1"), valueRecord("p-2")) }()
		// The producer's call is in the log's append path, not in the partition's queue.
		require.Eventually(t, func() bool { return q.p.log.gc.writing.Load() == 2 }, 30*time.Second, time.Millisecond)
		require.Equal(t, 0, queuedCalls(q.p))
		h.Release()
		require.NoError(t, <-firstDone)
		require.NoError(t, <-prodDone)
		hs := batchHeaders(t, readAllPartitionBatches(t, q.p))
		require.Len(t, hs, 2)
		require.Equal(t, int32(1), hs[0].RecordCount)
		require.Equal(t, int64(-1), hs[0].ProducerID)
		require.Equal(t, int32(2), hs[1].RecordCount)
		require.GreaterOrEqual(t, hs[1].ProducerID, int64(0))
		require.Equal(t, int32(0), hs[1].BaseSequence)
	})
}
