package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// The crash explorer of transactions: a store workload of a transactional producer (transactions
// committed, aborted, one left open at Close, some committing a named reader's positions),
// interleaved with an idempotent producer's appends and plain appends, on a topic of two
// partitions whose small segments roll (a producer snapshot at each roll). It runs once on the
// fault-injecting file system to count its operations, then once per crash point (every
// operation, or a seeded sample of them), and reopens what each crash leaves in every crash mode
// (a process kill and each kind of power loss), the coordinator recovering at Open. Checked:
//
//  1. a transaction whose Commit returned nil is visible whole to a ReadCommitted reader, each
//     record at the offset its Append returned, and its reader positions are committed;
//  2. a transaction is all or nothing under ReadCommitted: an aborted one, or one whose Commit was
//     never called, shows nothing; one whose Commit was under way shows all or nothing (all
//     exactly when its PrepareCommit was durable);
//  3. no transaction is open after the reopen: every partition's last stable offset is its high
//     watermark and its log end offset, the coordinator's logs' too, and no transactional id is
//     left Ongoing or prepared;
//  4. every acknowledged idempotent or plain append is there once, at its offset; nothing is
//     there twice; nothing is there that was never written;
//  5. every .snapshot file decodes, and every .txnindex file;
//  6. a new producer of the transactional id (a higher epoch than any acknowledged) commits a
//     transaction, which a ReadCommitted reader then sees, with its reader positions.
//
// Then one image of each point (the mode turns with the point) restarts a second time, by a
// clean Close or by a power loss with nothing closed, in turn: the second reopen has no transaction open either, shows a
// ReadCommitted reader exactly what the first showed plus the new transaction, keeps the reader
// positions that transaction committed, and its snapshots and transaction indexes decode.
//
// A failure names the point, the mode and the seed, with the command that replays it.
// Environment: COMMITLOG_CRASH_POINTS=all checks every operation (a number checks a sample of
// that many), COMMITLOG_CRASH_SEED a seed, COMMITLOG_CRASH_POINT=n only operation n.

const (
	txnCrashDir    = "/txnstore"
	txnCrashTopic  = "orders" // two partitions, small segments
	txnCrashSource = "source" // one partition: what the reader positions point into
	txnCrashID     = "etl"
	txnCrashReader = "etl-reader"
	txnCrashRounds = 12
)

// txnCrashModes are the images each crash point is reopened from.
var txnCrashModes = append([]faultfs.Mode{faultfs.ProcessKill}, powerLossModes...)

// txnCrashSample is how many crash points the default run checks, of the workload's ~1,300
// operations (each point reopened in five modes, about 0.05 s of CPU a point); fewer under the
// race detector, which makes each about 5x slower. COMMITLOG_CRASH_POINTS=all checks every one.
func txnCrashSample() int {
	if faultfs.RaceEnabled {
		return 60
	}
	return 600
}

func txnCrashOptions(fsy fsys.FS) []Option {
	// One log at a time: the crash model snapshots every file at each operation, which a log
	// closing in another goroutine would write meanwhile (and the order of operations stays
	// the same from run to run).
	return []Option{withFS(fsy), WithClock(fixedClock), WithRetentionCheckInterval(-1),
		WithTransactionCheckInterval(time.Hour), withParallelLogs(1)}
}

// txnCrashAt is where an acknowledged record is.
type txnCrashAt struct {
	topic  string
	part   int32
	offset int64
}

// txnCrashTxn is one transaction of the workload as the producer saw it.
type txnCrashTxn struct {
	n         int
	values    []string              // the records whose Append returned nil, in order
	at        map[string]txnCrashAt // and where
	pending   []string              // records of an Append that did not return
	positions map[int32]int64       // reader positions committed in it (CommitReaderPositions returned nil)
	commit    bool                  // its end is Commit (else Abort, or none)
	ending    bool                  // Commit or Abort was called
	ended     bool                  // and returned nil
}

// txnCrashModel is what the workload was told.
type txnCrashModel struct {
	txns []*txnCrashTxn
	// acked are the acknowledged idempotent and plain appends, by value.
	acked map[string]txnCrashAt
	// pending are the values of the idempotent or plain append in flight at the crash.
	pending []string
	// epoch is the transactional producer's last epoch NewProducer returned, -1 before.
	epoch int16
	// sourceEnd is the end of what was acknowledged in source-0.
	sourceEnd int64
	topics    bool   // both topics' creation was acknowledged
	step      string // the step in flight, for the failure message
}

// txnCrashTopicConfig is the configuration of the workload's topics: small segments, so that
// they roll (and take producer snapshots) every few appends.
func txnCrashTopicConfig(name string) TopicConfig {
	cfg := TopicConfig{Partitions: 1, LogConfig: LogConfig{SegmentBytes: 700, SegmentIndexBytes: 240, IndexIntervalBytes: 256}}
	if name == txnCrashTopic {
		cfg.Partitions = 2
	}
	return cfg
}

// txnCrashValue names record j of what the workload writes at round i; every value is unique.
func txnCrashValue(kind string, i, j int) string { return fmt.Sprintf("%s-%02d-%d", kind, i, j) }

// txnCrashWorkload runs the workload on fsy until a step fails (the crash) and returns what was
// acknowledged; err is the failed step's error, nil when it ran to its end.
func txnCrashWorkload(fsy fsys.FS) (m *txnCrashModel, err error) {
	m = &txnCrashModel{acked: map[string]txnCrashAt{}, epoch: -1}
	ctx := context.Background()
	m.step = "open"
	s, err := Open(txnCrashDir, txnCrashOptions(fsy)...)
	if err != nil {
		return m, err
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	m.step = "create topics"
	orders, err := s.CreateTopic(txnCrashTopic, txnCrashTopicConfig(txnCrashTopic))
	if err != nil {
		return m, err
	}
	source, err := s.CreateTopic(txnCrashSource, txnCrashTopicConfig(txnCrashSource))
	if err != nil {
		return m, err
	}
	m.topics = true
	m.step = "new idempotent producer"
	idem, err := s.NewProducer(ctx, ProducerConfig{})
	if err != nil {
		return m, err
	}
	m.step = "new transactional producer"
	txp, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: txnCrashID})
	if err != nil {
		return m, err
	}
	_, m.epoch = txp.ID()

	// plain appends n records to t's partition part.
	plain := func(t *Topic, part int32, kind string, i, n int) error {
		recs := make([]*Record, n)
		vals := make([]string, n)
		for j := range recs {
			vals[j] = txnCrashValue(kind, i, j)
			recs[j] = &Record{Key: []byte(vals[j]), Value: []byte(vals[j]), Timestamp: testEpoch}
		}
		m.step, m.pending = fmt.Sprintf("plain append %s to %s-%d", vals, t.Name(), part), vals
		p, err := t.Partition(part)
		if err != nil {
			return err
		}
		if err := p.Append(ctx, recs...); err != nil {
			return err
		}
		for _, r := range recs {
			m.acked[string(r.Value)] = txnCrashAt{t.Name(), part, r.Offset}
		}
		m.pending = nil
		return nil
	}
	for i := range txnCrashRounds {
		if err := plain(source, 0, "src", i, 2); err != nil {
			return m, err
		}
		m.sourceEnd += 2
		if err := plain(orders, int32(i%2), "plain", i, 1+i%3); err != nil {
			return m, err
		}

		// The idempotent producer: keys spread over both partitions.
		recs := make([]*Record, 3)
		vals := make([]string, len(recs))
		for j := range recs {
			vals[j] = txnCrashValue("idem", i, j)
			recs[j] = &Record{Key: []byte(vals[j]), Value: []byte(vals[j]), Timestamp: testEpoch}
		}
		m.step, m.pending = fmt.Sprintf("idempotent append %s", vals), vals
		if err := idem.Append(ctx, txnCrashTopic, recs...); err != nil {
			return m, err
		}
		for _, r := range recs {
			m.acked[string(r.Value)] = txnCrashAt{txnCrashTopic, r.Partition, r.Offset}
		}
		m.pending = nil

		// Transaction i: aborted when i%3 == 1, committing the reader's positions when i%4 == 2,
		// left open at Close in the last round, committed otherwise.
		tx := &txnCrashTxn{n: i, at: map[string]txnCrashAt{}, commit: i%3 != 1}
		m.txns = append(m.txns, tx)
		m.step = fmt.Sprintf("begin transaction %d", i)
		if err := txp.Begin(); err != nil {
			return m, err
		}
		appendTxn := func(from, n int) error {
			recs := make([]*Record, n)
			for j := range recs {
				v := txnCrashValue(fmt.Sprintf("txn%02d", i), 0, from+j)
				tx.pending = append(tx.pending, v)
				recs[j] = &Record{Key: []byte(v), Value: []byte(v), Timestamp: testEpoch}
			}
			m.step = fmt.Sprintf("append %s in transaction %d", tx.pending, i)
			if err := txp.Append(ctx, txnCrashTopic, recs...); err != nil {
				return err
			}
			for _, r := range recs {
				tx.values = append(tx.values, string(r.Value))
				tx.at[string(r.Value)] = txnCrashAt{txnCrashTopic, r.Partition, r.Offset}
			}
			tx.pending = nil
			return nil
		}
		if err := appendTxn(0, 3); err != nil {
			return m, err
		}
		if i%4 == 2 {
			pos := map[int32]int64{0: m.sourceEnd}
			m.step = fmt.Sprintf("commit reader positions %v in transaction %d", pos, i)
			if err := txp.CommitReaderPositions(ctx, txnCrashReader, txnCrashSource, pos); err != nil {
				return m, err
			}
			tx.positions = pos
		}
		if err := appendTxn(3, 1+i%2); err != nil {
			return m, err
		}
		if i == txnCrashRounds-1 {
			tx.commit = false
			break // left open: Close leaves it to the coordinator
		}
		tx.ending = true
		if tx.commit {
			m.step = fmt.Sprintf("commit transaction %d", i)
			err = txp.Commit(ctx)
		} else {
			m.step = fmt.Sprintf("abort transaction %d", i)
			err = txp.Abort(ctx)
		}
		if err != nil {
			return m, err
		}
		tx.ended = true
	}
	m.step = "close"
	closing := s
	s = nil
	if err := closing.Close(); err != nil {
		return m, err
	}
	m.step = ""
	return m, nil
}

// txnCrashReadCommitted reads every record of t's partition part that a ReadCommitted reader
// returns, from the start to the last stable offset, without waiting: poll returns what is
// there.
func txnCrashReadCommitted(t *Topic, part int32) ([]*Record, error) {
	r, err := t.NewReader(ReaderConfig{Partitions: []int32{part}, Start: Earliest, Isolation: ReadCommitted})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*Record
	for {
		rec, _, err := r.poll()
		if err != nil {
			return out, err
		}
		if rec != nil {
			out = append(out, rec)
			continue
		}
		pos, err := r.Position(part)
		if err != nil {
			return out, err
		}
		p, _ := t.Partition(part)
		if lso := p.LastStableOffset(); pos != lso {
			return out, fmt.Errorf("a ReadCommitted reader of %s-%d stops at %d, the last stable offset is %d", t.Name(), part, pos, lso)
		}
		return out, nil
	}
}

// txnCrashVisible checks that no transaction is open in s (invariant 3) and returns what a
// ReadCommitted reader sees in the workload's topics, by value; a value read twice is an error.
// A topic missing while its creation was in flight (create false) is created.
func txnCrashVisible(s *Store, create bool) (map[string]txnCrashAt, error) {
	for _, name := range s.Topics() {
		t, _ := s.Topic(name)
		for id := range t.PartitionCount() {
			p, _ := t.Partition(id)
			if lso, hw, leo := p.LastStableOffset(), p.HighWatermark(), p.LogEndOffset(); lso != hw || hw != leo {
				return nil, fmt.Errorf("%s-%d: last stable offset %d, high watermark %d, log end offset %d (producers %+v)",
					name, id, lso, hw, leo, p.Producers())
			}
		}
	}
	// A crash before the first NewProducer leaves no coordinator log: open them as NewProducer
	// would, to check them too.
	if err := s.txn.ensureOpen(); err != nil {
		return nil, err
	}
	for _, l := range []*Log{s.txn.log, s.txn.offsets} {
		if lso, leo := l.LastStableOffset(), l.LogEndOffset(); lso != leo {
			return nil, fmt.Errorf("%s: last stable offset %d, log end offset %d", l.Dir(), lso, leo)
		}
	}
	s.txn.mu.Lock()
	for id, tm := range s.txn.txns {
		switch tm.state {
		case kmsg.TransactionStateOngoing, kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
			s.txn.mu.Unlock()
			return nil, fmt.Errorf("transactional id %q left in state %s", id, tm.state)
		}
	}
	s.txn.mu.Unlock()

	seen := map[string]txnCrashAt{}
	for _, name := range []string{txnCrashTopic, txnCrashSource} {
		t, err := s.Topic(name)
		if errors.Is(err, ErrUnknownTopic) && create {
			// Its creation was in flight: created whole or not at all, and nothing in it.
			if _, err := s.CreateTopic(name, txnCrashTopicConfig(name)); err != nil {
				return nil, fmt.Errorf("create %s after the reopen: %w", name, err)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for id := range t.PartitionCount() {
			recs, err := txnCrashReadCommitted(t, id)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				v := string(r.Value)
				at := txnCrashAt{name, id, r.Offset}
				if prev, ok := seen[v]; ok {
					return nil, fmt.Errorf("%s read twice: at %+v and at %+v", v, prev, at)
				}
				seen[v] = at
			}
		}
	}
	return seen, nil
}

// txnRestart says how txnCrashCheck restarts the recovered store a second time.
type txnRestart int

const (
	restartNone      txnRestart = iota
	restartClose                // a clean Close
	restartPowerLoss            // a power loss, nothing closed
)

func (r txnRestart) String() string {
	return [...]string{"no second restart", "second restart by a clean close", "second restart by a power loss"}[r]
}

// txnCrashCheck reopens the store in img and checks it against m (seed drives the fault FS the
// reopened store runs on). Then, after a new transaction, it restarts the store a second time as
// restart says, and checks that the second reopen shows exactly what the first showed, the new
// transaction included.
func txnCrashCheck(img fsys.FS, m *txnCrashModel, seed uint64, restart txnRestart) error {
	ffs := faultfs.New(img, seed)
	defer ffs.Release()
	s, err := Open(txnCrashDir, txnCrashOptions(ffs)...)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	ctx := context.Background()

	// 3, and what a ReadCommitted reader sees, nothing twice.
	seen, err := txnCrashVisible(s, !m.topics)
	if err != nil {
		return err
	}
	known := map[string]bool{}

	// 4: acknowledged appends, once, at their offsets; the one in flight at most once.
	for v, want := range m.acked {
		known[v] = true
		if got, ok := seen[v]; !ok || got != want {
			return fmt.Errorf("acknowledged %s at %+v: read at %+v (found %v)", v, want, got, ok)
		}
	}
	for _, v := range m.pending {
		known[v] = true
	}

	// 1 and 2: transactions all or nothing; committed ones whole; positions with them.
	var wantPositions map[int32]int64
	for _, tx := range m.txns {
		visible := 0
		for _, v := range tx.values {
			known[v] = true
			if got, ok := seen[v]; ok {
				if got != tx.at[v] {
					return fmt.Errorf("transaction %d: %s read at %+v, appended at %+v", tx.n, v, got, tx.at[v])
				}
				visible++
			}
		}
		for _, v := range tx.pending {
			known[v] = true
			if _, ok := seen[v]; ok {
				return fmt.Errorf("transaction %d: %s, of an append that did not return, is visible", tx.n, v)
			}
		}
		switch {
		case tx.commit && tx.ended && visible != len(tx.values):
			return fmt.Errorf("transaction %d committed: %d of its %d records visible", tx.n, visible, len(tx.values))
		case visible != 0 && visible != len(tx.values):
			return fmt.Errorf("transaction %d: %d of its %d records visible", tx.n, visible, len(tx.values))
		case visible != 0 && !(tx.commit && tx.ending):
			return fmt.Errorf("transaction %d (commit %v, ended %v): its records are visible without a commit", tx.n, tx.commit, tx.ending)
		}
		if visible != 0 && tx.positions != nil {
			wantPositions = tx.positions
		}
	}
	for v, at := range seen {
		if !known[v] {
			return fmt.Errorf("%s read at %+v was never written", v, at)
		}
	}
	got, err := s.CommittedPositions(txnCrashReader)
	if err != nil {
		return fmt.Errorf("committed positions: %w", err)
	}
	if !maps.Equal(got[txnCrashSource], wantPositions) {
		return fmt.Errorf("reader %s: committed positions %v, want %v (of the last transaction committed with positions)", txnCrashReader, got, wantPositions)
	}

	// 5: every snapshot and transaction index decodes.
	if err := txnCrashCheckFiles(img, txnCrashDir); err != nil {
		return err
	}

	// 6: a new producer of the transactional id commits.
	p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: txnCrashID})
	if err != nil {
		return fmt.Errorf("new producer after the reopen: %w", err)
	}
	if _, epoch := p.ID(); epoch <= m.epoch {
		return fmt.Errorf("new producer after the reopen: epoch %d, the last one acknowledged was %d", epoch, m.epoch)
	}
	orders, _ := s.Topic(txnCrashTopic)
	recs := []*Record{{Key: []byte("after-0"), Value: []byte("after-0")}, {Key: []byte("after-1"), Value: []byte("after-1")}}
	pos := map[int32]int64{0: m.sourceEnd + 2}
	if err := p.Begin(); err != nil {
		return fmt.Errorf("begin after the reopen: %w", err)
	}
	if err := p.Append(ctx, txnCrashTopic, recs...); err != nil {
		return fmt.Errorf("append after the reopen: %w", err)
	}
	if err := p.CommitReaderPositions(ctx, txnCrashReader, txnCrashSource, pos); err != nil {
		return fmt.Errorf("commit reader positions after the reopen: %w", err)
	}
	if err := p.Commit(ctx); err != nil {
		return fmt.Errorf("commit after the reopen: %w", err)
	}
	for _, r := range recs {
		got, err := txnCrashReadCommitted(orders, r.Partition)
		if err != nil {
			return fmt.Errorf("after the new commit: %w", err)
		}
		i := slices.IndexFunc(got, func(g *Record) bool { return string(g.Value) == string(r.Value) })
		if i < 0 || got[i].Offset != r.Offset {
			return fmt.Errorf("after the new commit: %s, appended at %d of partition %d, not read there", r.Value, r.Offset, r.Partition)
		}
	}
	if got, err := s.CommittedPositions(txnCrashReader); err != nil || !maps.Equal(got[txnCrashSource], pos) {
		return fmt.Errorf("after the new commit: committed positions %v (%v), want %v", got, err, pos)
	}
	for _, r := range recs {
		seen[string(r.Value)] = txnCrashAt{txnCrashTopic, r.Partition, r.Offset}
	}

	// The second restart.
	if restart == restartNone {
		return nil
	}
	s2, img2, mode, err := restartAgain(ffs, img, &s, restart == restartPowerLoss, txnCrashDir, txnCrashOptions)
	if err != nil {
		return err
	}
	defer s2.Close()
	seen2, err := txnCrashVisible(s2, false)
	if err != nil {
		return fmt.Errorf("second reopen after a %s: %w", mode, err)
	}
	if !maps.Equal(seen, seen2) {
		return fmt.Errorf("second reopen after a %s: a ReadCommitted reader sees %v, after the first reopen %v", mode, seen2, seen)
	}
	if got, err := s2.CommittedPositions(txnCrashReader); err != nil || !maps.Equal(got[txnCrashSource], pos) {
		return fmt.Errorf("second reopen after a %s: committed positions %v (%v), want %v", mode, got, err, pos)
	}
	if err := txnCrashCheckFiles(img2, txnCrashDir); err != nil {
		return fmt.Errorf("second reopen after a %s: %w", mode, err)
	}
	return nil
}

// txnCrashCheckFiles decodes every .snapshot and .txnindex file under dir.
func txnCrashCheckFiles(fsy fsys.FS, dir string) error {
	entries, err := fsy.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		if e.IsDir() {
			if err := txnCrashCheckFiles(fsy, name); err != nil {
				return err
			}
			continue
		}
		isSnap := strings.HasSuffix(name, producerstate.SnapshotSuffix)
		isTxn := strings.HasSuffix(name, txnIndexSuffix)
		if !isSnap && !isTxn {
			continue
		}
		b, err := readWholeFile(fsy, name, 1<<30)
		if err != nil {
			return err
		}
		if isSnap {
			_, err = producerstate.DecodeSnapshot(b)
		} else {
			_, err = txnindex.Decode(b)
		}
		if err != nil {
			return fmt.Errorf("%s (%d bytes) does not decode: %w", name, len(b), err)
		}
	}
	return nil
}

// newTxnCrashFS returns a fault FS over a memory FS holding the empty store directory.
func newTxnCrashFS(seed uint64) *faultfs.FS {
	inner := fsys.NewMemory()
	if err := inner.MkdirAll(txnCrashDir, 0o755); err != nil {
		panic(err)
	}
	return faultfs.New(inner, seed)
}

func TestTransactionCrashPoints(t *testing.T) {
	seed := uint64(crashSeed)
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", crashSeedEnv, err)
		}
	}
	start := time.Now()

	// The counting run: no crash; the workload runs to its end, and what it leaves checks out.
	counting := newTxnCrashFS(seed)
	model, err := txnCrashWorkload(counting)
	if err != nil {
		t.Fatalf("workload without faults: %v (step %s)", err, model.step)
	}
	counted := counting.Ops()
	if len(model.txns) != txnCrashRounds {
		t.Fatalf("workload without faults ran %d transactions", len(model.txns))
	}
	for _, mode := range txnCrashModes {
		img, err := counting.CrashImage(mode)
		if err != nil {
			t.Fatal(err)
		}
		if err := txnCrashCheck(img, model, seed, restartClose+txnRestart(mode%2)); err != nil {
			t.Fatalf("workload without faults, %s after close: %v", mode, err)
		}
	}
	counting.Release()

	failures := 0
	points := crashPoints(t, seed, 3, len(counted), txnCrashSample())
	for _, point := range points {
		ffs := newTxnCrashFS(crashImageSeed(seed, point))
		ffs.Inject(faultfs.CrashAt(point))
		m, werr := txnCrashWorkload(ffs)
		ops := ffs.Ops()
		fail := func(mode string, err error) {
			failures++
			t.Errorf("crash at operation %d (%s), %s image, step in flight: %s: %v\n"+
				"replay: %s=%d %s=%d go test -run '^TestTransactionCrashPoints$' .\n"+
				"operations up to the crash (the last 40):\n%s",
				point, ops[min(point, len(ops)-1)], mode, m.step, err,
				crashSeedEnv, seed, crashPointEnv, point, faultfs.FormatOps(ops[max(0, min(point+1, len(ops))-40):min(point+1, len(ops))]))
			if failures >= 3 {
				t.Fatalf("stopping after %d failed checks", failures)
			}
		}
		switch {
		case !ffs.Crashed():
			fail("no", fmt.Errorf("the workload ended after %d operations without reaching the crash (err %v)", len(ops), werr))
			ffs.Release()
			continue
		case werr == nil && m.step != "":
			fail("no", fmt.Errorf("the workload stopped at %s without an error", m.step))
		case werr != nil && !errors.Is(werr, faultfs.ErrCrashed):
			fail("no", fmt.Errorf("step %s failed with %v, which does not wrap the crash", m.step, werr))
		}
		for i, mode := range txnCrashModes {
			img, err := ffs.CrashImage(mode)
			if err != nil {
				t.Fatal(err)
			}
			// One image of each point restarts a second time (the mode turns with the point), by
			// a clean close or a power loss in turn: a restart of each image would triple the
			// cost of a point.
			restart := restartNone
			if i == point%len(txnCrashModes) {
				restart = restartClose + txnRestart(point/len(txnCrashModes)%2)
			}
			if err := txnCrashCheck(img, m, crashImageSeed(seed, point)+uint64(i)+1, restart); err != nil {
				fail(fmt.Sprintf("%s, %s", mode, restart), err)
			}
		}
		ffs.Release()
	}
	t.Logf("transaction crash points: %d checked of %d operations, each in %d modes; seed %d, %s",
		len(points), len(counted), len(txnCrashModes), seed, time.Since(start).Round(time.Millisecond))
}
