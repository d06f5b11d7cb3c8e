package commitlog

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Coalesced appends: a partition's accumulator, as a Kafka producer's RecordAccumulator
// coalesces the records that its callers send to one partition into batches of up to batch.size
// bytes, which its sender writes as one request.
//
// Partition.AppendAcks (and so Topic.Append) queues each call. One call at a time leads: it
// takes every call queued (its own first, when nothing else was), encodes their records into as
// few batches as batch.size allows, writes them with one write, waits for the one fsync that makes
// them durable (SyncAlways, acks other than AcksNone), and answers each call; the calls that
// arrived meanwhile were queued, and the first of them leads the next round. So an append never
// waits for more than the round in flight when it arrives and its own: the fsync it waits for is
// the first that starts after it arrives (group commit). (A round takes at most max.message.bytes
// of calls, or batch.size when larger; the calls past that wait for the next round.) A lone caller finds nothing queued and
// leads at once: coalescing adds no wait, Kafka's linger.ms=0 ("batch while busy"). WithLinger
// makes a leader wait for more calls, up to linger.ms or until batch.size bytes are queued.
//
// Every call keeps its records together and in order, and gets its own offsets, timestamps and
// error: the checks that refuse a call (a record larger than max.message.bytes, a timestamp past
// message.timestamp.after.max.ms, the leader and in-sync replica checks, its context done before
// the round takes it) refuse that call alone, and its neighbours in the round are written. A
// coalesced write that fails leaves nothing in the log, and each call of the round is then
// written on its own, to get its own outcome (see writeRound). An fsync that fails fails every
// call of the round, as one group commit's fsync does. An
// idempotent or transactional Producer's appends are not queued: their sequence numbers follow
// their own calls (see Producer).

// DefaultBatchSize is Kafka's default batch.size, in bytes: see WithBatchSize.
const DefaultBatchSize = 16384

// WithBatchSize sets batch.size, in bytes (Kafka's producer config, default DefaultBatchSize):
// concurrent appends to one partition are coalesced (see Partition.AppendAcks) into batches of
// up to this many bytes, each record counted at its largest encoded size; a call that would take a
// batch past it starts the next batch of the same write. A call's own records fill batches up to
// max.message.bytes, as without coalescing. bytes <= 0 turns coalescing off, as Kafka's
// batch.size=0 does: every call is then its own batch and its own write (the log's group commit
// still shares fsyncs among them).
func WithBatchSize(bytes int) Option {
	return func(o *options) {
		o.batchSize = bytes
		if bytes <= 0 {
			o.batchSize = -1
		}
	}
}

// WithLinger sets linger.ms (Kafka's producer config, default 0): how long the call that leads a
// round of coalesced appends (see Partition.AppendAcks) waits for more calls to the partition
// before it writes, unless batch.size bytes are queued first, counted from the arrival of the
// oldest queued call. With 0 nothing waits: a round takes what queued while the one before it
// was written and fsynced. d > 0 trades latency for larger batches, as in Kafka; it has no effect
// when coalescing is off (WithBatchSize(0)).
func WithLinger(d time.Duration) Option {
	return func(o *options) { o.linger = max(d, 0) }
}

// appendQueue is a partition's queue of coalesced appends. Its scratch (recs, starts, live) is the
// leader's alone: one leader runs at a time.
type appendQueue struct {
	batchSize int           // batch.size; 0: coalescing off
	linger    time.Duration // linger.ms

	mu      sync.Mutex
	pending []*queuedAppend
	bytes   int  // the pending calls' estimated bytes
	busy    bool // a leader runs (or is about to run) a round: new calls queue
	// gathering says that a leader gathers calls (see gather): the call that makes wakeCount
	// calls or wakeBytes bytes queued then sends on gathered (capacity 1) and clears it.
	gathering            bool
	gathered             chan struct{}
	wakeCount, wakeBytes int
	timer                *time.Timer // gather's, stopped between waits
	// callers is how many calls the last round answered plus those queued during it: the
	// callers appending now, which the next round waits for (see gather). lastRound is how
	// long that round's write and fsync took.
	callers   int
	lastRound time.Duration

	recs   []*Record
	starts []int
	round  []*queuedAppend
	live   []*queuedAppend
	// free keeps answered calls, with their signal channels, for the next ones.
	free sync.Pool
}

// queuedAppend is one call waiting in an appendQueue.
type queuedAppend struct {
	ctx     context.Context
	acks    Acks
	recs    []*Record
	bytes   int       // estimated encoded size (RecordSizeBound of each record)
	arrived time.Time // for linger.ms; zero without linger
	// signal receives true when the call must lead the next round, false when its round is
	// done (err and offsets set).
	signal chan bool
	// state, under the queue's mu: queued, lead (chosen to lead, still queued) or taken (in a
	// round).
	state queuedState
	err   error
	t     writeTicket
}

type queuedState uint8

const (
	queued queuedState = iota
	leading
	taken
)

// init configures the queue from the store's options (WithBatchSize, WithLinger).
func (q *appendQueue) init(o options) {
	switch {
	case o.batchSize == 0:
		q.batchSize = DefaultBatchSize
	case o.batchSize > 0:
		q.batchSize = o.batchSize
	}
	q.linger = o.linger
}

// on reports whether appends are coalesced.
func (q *appendQueue) on() bool { return q.batchSize > 0 }

// appendQueued is AppendAcks through the partition's queue, for recs checked and set to the
// partition.
func (p *Partition) appendQueued(ctx context.Context, acks Acks, recs []*Record) error {
	if p.log.conf().CleanupPolicy.Compact() {
		// Refused here, alone: in a round it would refuse its neighbours too.
		if err := checkKeys(recs); err != nil {
			return err
		}
	}
	q := &p.queue
	e := q.get()
	e.ctx, e.acks, e.recs = ctx, acks, recs
	for _, r := range recs {
		e.bytes += recordbatch.RecordSizeBound(r.Key, r.Value, r.Headers)
	}
	if q.linger > 0 {
		e.arrived = time.Now()
	}
	q.mu.Lock()
	q.pending = append(q.pending, e)
	q.bytes += e.bytes
	lead := !q.busy
	q.busy = true
	if q.gathering && (len(q.pending) >= q.wakeCount || q.bytes >= q.wakeBytes) {
		q.gathering = false
		q.gathered <- struct{}{}
	}
	q.mu.Unlock()
	if !lead {
		lead = q.wait(e)
	}
	if lead {
		p.leadRound(e)
	}
	err := e.err
	q.put(e) // answered: no round refers to it any more
	if err != nil {
		return err
	}
	return p.awaitAcks(ctx, acks, recs[len(recs)-1].Offset+1)
}

// get returns a call to fill in, from the free ones when it can.
func (q *appendQueue) get() *queuedAppend {
	if e, ok := q.free.Get().(*queuedAppend); ok {
		return e
	}
	return &queuedAppend{signal: make(chan bool, 1)}
}

// put keeps e, answered (its signal received, or never sent), for a later call.
func (q *appendQueue) put(e *queuedAppend) {
	*e = queuedAppend{signal: e.signal}
	q.free.Put(e)
}

// wait waits until e's round is done (false) or e must lead the next round (true). A call whose
// context is done while it is still queued leaves the queue with ctx's error, nothing written;
// once a round took it, it waits for the round, as an append whose write started does.
func (q *appendQueue) wait(e *queuedAppend) (lead bool) {
	select {
	case lead = <-e.signal:
		return lead
	case <-e.ctx.Done():
	}
	q.mu.Lock()
	if e.state == queued {
		if i := slices.Index(q.pending, e); i >= 0 {
			q.pending = slices.Delete(q.pending, i, i+1) // clears the freed slot
		}
		q.bytes -= e.bytes
		q.mu.Unlock()
		e.err = e.ctx.Err()
		return false
	}
	q.mu.Unlock()
	return <-e.signal
}

// leadRound runs one round of the queue, led by self (queued, in the round): it takes the queued
// calls, writes them, answers each but self, and hands the lead to the first call queued since,
// if any.
func (p *Partition) leadRound(self *queuedAppend) {
	q := &p.queue
	q.gather()
	q.mu.Lock()
	// A round writes at most max.message.bytes of calls (or batch.size, when larger): calls
	// past that stay queued for the next round, so that one write stays bounded.
	limit := max(p.log.conf().MaxMessageBytes, q.batchSize)
	n, size := 0, 0
	for n < len(q.pending) && (n == 0 || size+q.pending[n].bytes <= limit) {
		q.pending[n].state = taken
		size += q.pending[n].bytes
		n++
	}
	round := append(q.round[:0], q.pending[:n]...)
	left := copy(q.pending, q.pending[n:])
	clear(q.pending[left:])
	q.pending = q.pending[:left]
	q.bytes -= size
	q.mu.Unlock()

	start := time.Now()
	p.writeRound(round)
	took := time.Since(start)

	for _, e := range round {
		if e != self {
			e.signal <- false
		}
	}
	clear(round)
	q.round = round[:0] // the next leader's, once handed over below
	q.mu.Lock()
	q.callers, q.lastRound = n+len(q.pending), took
	if len(q.pending) > 0 {
		next := q.pending[0]
		next.state = leading
		next.signal <- true
	} else {
		q.busy = false
	}
	q.mu.Unlock()
}

// maxGather bounds how long a round waits for the callers of the last one (see gather),
// whatever the disk: a slow fsync must not make every acknowledgement wait that much longer.
const maxGather = time.Millisecond

// gather waits, before a round takes the queue, for the calls it should take:
//
//   - the callers of the last round, which it answered a moment ago and which are appending
//     again, until as many calls are queued as the last round answered and queued (callers), but
//     at most half the time the last round took (and maxGather). Otherwise the callers split into
//     two cohorts, one queuing while the other's round is written and fsynced, and each round
//     takes half of them. A lone caller never waits: its last round answered only itself.
//   - with linger.ms, until linger.ms has passed since the oldest queued call arrived.
//
// Either wait ends once batch.size bytes are queued.
func (q *appendQueue) gather() {
	q.mu.Lock()
	if want := q.callers; len(q.pending) < want && q.bytes < q.batchSize {
		q.waitQueued(want, min(q.lastRound/2, maxGather))
	}
	if q.linger > 0 && len(q.pending) > 0 && q.bytes < q.batchSize {
		if d := time.Until(q.pending[0].arrived.Add(q.linger)); d > 0 {
			q.waitQueued(math.MaxInt, d)
		}
	}
	q.mu.Unlock()
}

// waitQueued waits, for at most d, until count calls or batch.size bytes are queued. Callers hold
// mu; it is released while waiting.
func (q *appendQueue) waitQueued(count int, d time.Duration) {
	if d <= 0 {
		return
	}
	if q.timer == nil {
		q.gathered, q.timer = make(chan struct{}, 1), time.NewTimer(d)
	} else {
		q.timer.Reset(d) // stopped, its channel empty (Go 1.23's timers)
	}
	q.gathering, q.wakeCount, q.wakeBytes = true, count, q.batchSize
	q.mu.Unlock()
	select {
	case <-q.gathered:
	case <-q.timer.C:
	}
	q.timer.Stop()
	q.mu.Lock()
	q.gathering = false
	select {
	case <-q.gathered: // sent after the timer fired: not for the next wait
	default:
	}
}

// writeRound writes the calls of one round, as appendAsLeader writes one: under the role, each
// call checked against it, the calls that pass written with one write (their records back to
// back, in queue order), then made durable unless every one is AcksNone. It sets each call's err,
// and its records' offsets. Should the coalesced write fail, each call is written again on its
// own, so that it gets its own error (a record too large, a timestamp too far ahead) and its
// neighbours theirs; nothing of the failed write stayed in the log.
func (p *Partition) writeRound(round []*queuedAppend) {
	q := &p.queue
	p.roleMu.RLock()
	var leaderErr [2]error // checkLeader's, for AcksAll and for the others
	var checked [2]bool
	live, await := q.live[:0], false
	for _, e := range round {
		if err := e.ctx.Err(); err != nil {
			e.err = err
			continue
		}
		i := 0
		if e.acks == AcksAll {
			i = 1
		}
		if !checked[i] {
			leaderErr[i], checked[i] = p.checkLeader(e.acks), true
		}
		if leaderErr[i] != nil {
			e.err = leaderErr[i]
			continue
		}
		live = append(live, e)
		await = await || e.acks != AcksNone
	}
	switch len(live) {
	case 0:
	case 1:
		e := live[0]
		e.t, e.err = p.log.appendRecords(e.ctx, e.recs, await)
	default:
		recs, starts := q.recs[:0], q.starts[:0]
		for _, e := range live {
			starts = append(starts, len(recs))
			recs = append(recs, e.recs...)
		}
		t, err := p.log.appendCalls(context.Background(), recs, starts, q.batchSize, await, nil)
		clear(recs) // the scratch keeps no caller's record
		q.recs, q.starts = recs[:0], starts[:0]
		for _, e := range live {
			if err == nil {
				e.t = t
			} else {
				e.t, e.err = p.log.appendRecords(e.ctx, e.recs, await)
			}
		}
	}
	if await {
		for _, e := range live {
			if e.err == nil {
				// The first waits for the round's fsync; the others find their writes durable.
				e.err = p.log.awaitDurable(e.t)
			}
		}
	}
	clear(live)
	q.live = live[:0]
	p.roleMu.RUnlock()
	p.appended()
}
