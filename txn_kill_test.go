package commitlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The exactly-once kill test (issue 18): a child process (this test binary, re-executed) runs a
// consume-transform-produce pipeline. It reads topic "A" with the named reader "pipe", and for
// each record appends to topic "B" a record of the same key whose value is "out:" and the
// input's value, with a "src" header naming the input's partition and offset; each batch of
// inputs is one transaction of the producer "pipeline" that also commits the reader's positions
// (Producer.CommitReaderPositions). The parent kills it with SIGKILL at random moments, 20 times,
// on the same directory; then it runs one child to the end of A.
//
// After most kills (and always after the last) the parent reopens the store, whose open
// completes or aborts the transaction the child left; the other kills are left to the next
// child's open, so that kills also land in that recovery. It checks, from the bytes of B and
// under ReadCommitted:
//   - B has no open transaction: its last stable offset is its log end offset;
//   - the records a ReadCommitted reader returns are exactly those of B's committed
//     transactions, as the markers in B's batches decide them;
//   - they are exactly one output per input of A below the reader's committed position, per A
//     partition, and none for an input at or past it: the committed outputs and the committed
//     position advance together. So per key the outputs are the key's inputs, in input order;
//   - each output is the transform of its input: same key, value "out:" + the input's value.
//
// The child also reads B under ReadCommitted while it works and exits with an error should it
// see an input twice or the inputs of one A partition out of order in a B partition.
//
// The child writes one line to stdout, a pipe, per event, each in one write (atomic):
//
//	ready                     the producer is initialised
//	commit <n> <positions>    after the n-th Commit of this child returned
//	finished                  A is consumed to its end

const (
	pipeChildDirEnv  = "COMMITLOG_PIPE_CHILD_DIR"
	pipeChildSeedEnv = "COMMITLOG_PIPE_CHILD_SEED"
	pipeKills        = 20
	pipeShortKills   = 8
	pipeInputs       = 6000 // for 20 kills; 300 more per kill beyond
	pipePartitions   = 3
	pipeKeys         = 30
	pipeReader       = "pipe"
	pipeTxnID        = "pipeline"
)

// pipeTopicConfig rolls segments every few hundred records, so that B's producer snapshots,
// .txnindex files and ReadCommitted reads cross segments.
func pipeTopicConfig() TopicConfig {
	return TopicConfig{Partitions: pipePartitions, LogConfig: LogConfig{
		SegmentBytes:       16 << 10,
		SegmentIndexBytes:  4 << 10,
		IndexIntervalBytes: 1024,
	}}
}

func pipeOptions() []Option {
	return []Option{WithRetentionCheckInterval(-1), WithTransactionCheckInterval(time.Hour)}
}

// pipeInput returns the i-th input record of A: one of pipeKeys keys, a value of varying length.
func pipeInput(i int) *Record {
	return &Record{
		Key:     []byte(fmt.Sprintf("key-%02d", i%pipeKeys)),
		Value:   []byte(fmt.Sprintf("in-%d-%s", i, strings.Repeat("x", i%61))),
		Headers: []Header{{Key: "id", Value: []byte(strconv.Itoa(i))}},
	}
}

// pipeTransform returns the output of input record in: same key, value "out:" + its value, the
// "src" header naming its partition and offset.
func pipeTransform(in *Record) *Record {
	return &Record{
		Key:     slices.Clone(in.Key),
		Value:   append([]byte("out:"), in.Value...),
		Headers: []Header{{Key: "src", Value: []byte(fmt.Sprintf("%d/%d", in.Partition, in.Offset))}},
	}
}

// pipeSrc is an input's place in A.
type pipeSrc struct {
	partition int32
	offset    int64
}

// parsePipeSrc reads the src header of output rec.
func parsePipeSrc(rec *Record) (pipeSrc, error) {
	if len(rec.Headers) != 1 || rec.Headers[0].Key != "src" {
		return pipeSrc{}, fmt.Errorf("B/%d offset %d: headers %v, want one src header", rec.Partition, rec.Offset, rec.Headers)
	}
	p, off, ok := strings.Cut(string(rec.Headers[0].Value), "/")
	pi, err1 := strconv.ParseInt(p, 10, 32)
	oi, err2 := strconv.ParseInt(off, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return pipeSrc{}, fmt.Errorf("B/%d offset %d: src header %q", rec.Partition, rec.Offset, rec.Headers[0].Value)
	}
	return pipeSrc{int32(pi), oi}, nil
}

// TestExactlyOncePipelineChild is the pipeline TestExactlyOncePipelineKill runs in a child
// process; on its own it skips.
func TestExactlyOncePipelineChild(t *testing.T) {
	dir := os.Getenv(pipeChildDirEnv)
	if dir == "" {
		t.Skip("run by TestExactlyOncePipelineKill in a child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	emit := func(line string) {
		if _, err := os.Stdout.WriteString(line + "\n"); err != nil { // one small write: atomic
			fail("stdout: %v", err)
		}
	}
	seed, err := strconv.ParseUint(os.Getenv(pipeChildSeedEnv), 10, 64)
	if err != nil {
		fail("bad seed: %v", err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	s, err := Open(dir, pipeOptions()...)
	if err != nil {
		fail("open: %v", err)
	}
	// The deadline only stops a child the parent failed to kill.
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	// A ReadCommitted reader of B, all along: never an input twice, never the inputs of one A
	// partition out of order within a B partition.
	b, err := s.Topic("B")
	if err != nil {
		fail("topic B: %v", err)
	}
	watch, err := b.NewReader(ReaderConfig{Start: Earliest, Isolation: ReadCommitted, MaxBytes: 8 << 10})
	if err != nil {
		fail("reader of B: %v", err)
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		seen := map[pipeSrc]int64{}
		last := map[[2]int32]int64{} // (A partition, B partition) -> last input offset
		for {
			rec, err := watch.Next(ctx)
			if errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) {
				return
			}
			if err != nil {
				fail("ReadCommitted reader of B: %v", err)
			}
			src, err := parsePipeSrc(rec)
			if err != nil {
				fail("ReadCommitted reader of B: %v", err)
			}
			if at, dup := seen[src]; dup {
				fail("ReadCommitted reader of B: input %d/%d at offsets %d and %d of B/%d", src.partition, src.offset, at, rec.Offset, rec.Partition)
			}
			seen[src] = rec.Offset
			pair := [2]int32{src.partition, rec.Partition}
			if prev, ok := last[pair]; ok && prev >= src.offset {
				fail("ReadCommitted reader of B: B/%d offset %d holds input %d/%d after input %d/%d", rec.Partition, rec.Offset, src.partition, src.offset, src.partition, prev)
			}
			last[pair] = src.offset
		}
	}()

	p, err := s.NewProducer(ctx, ProducerConfig{TransactionalID: pipeTxnID})
	if err != nil {
		fail("new producer: %v", err)
	}
	a, err := s.Topic("A")
	if err != nil {
		fail("topic A: %v", err)
	}
	in, err := a.NewReader(ReaderConfig{Name: pipeReader, Start: Earliest, MaxBytes: 8 << 10})
	if err != nil {
		fail("reader of A: %v", err)
	}
	emit("ready")
	remaining := func() int64 {
		var n int64
		for _, l := range in.Lag() {
			n += l
		}
		return n
	}
	for n := 1; remaining() > 0; n++ {
		if err := p.Begin(); err != nil {
			fail("begin: %v", err)
		}
		var outs []*Record
		flush := func() {
			if err := p.Append(ctx, "B", outs...); err != nil {
				fail("append to B: %v", err)
			}
			outs = outs[:0]
		}
		chunk := 1 + rng.IntN(8)
		for range 1 + rng.IntN(50) {
			if remaining() == 0 {
				break
			}
			rec, err := in.Next(ctx)
			if err != nil {
				fail("read A: %v", err)
			}
			if outs = append(outs, pipeTransform(rec)); len(outs) == chunk {
				flush()
			}
		}
		if len(outs) > 0 {
			flush()
		}
		pos := in.Positions()
		if err := p.CommitReaderPositions(ctx, pipeReader, "A", pos); err != nil {
			fail("commit reader positions: %v", err)
		}
		if err := p.Commit(ctx); err != nil {
			fail("commit: %v", err)
		}
		emit(fmt.Sprintf("commit %d%s", n, formatPositions(pos)))
	}
	emit("finished")
	if err := in.Close(); err != nil {
		fail("close reader of A: %v", err)
	}
	if err := p.Close(); err != nil {
		fail("close producer: %v", err)
	}
	// Let the watcher read what was committed last, then stop it.
	for lag := int64(1); lag > 0; {
		lag = 0
		for _, l := range watch.Lag() {
			lag += l
		}
		time.Sleep(time.Millisecond)
	}
	if err := watch.Close(); err != nil {
		fail("close reader of B: %v", err)
	}
	<-watchDone
	if err := s.Close(); err != nil {
		fail("close: %v", err)
	}
}

// TestExactlyOncePipelineKill kills the pipeline child 20 times (8 in -short mode) with SIGKILL at
// random moments, checking B and the reader's committed positions after each kill, then runs it
// to the end: B then holds exactly one output per input, in input order per key, and the
// reader's positions are at A's end. The seed is printed; set COMMITLOG_KILL_SEED to replay one
// (the kill moments depend on timing too, but every interleaving must pass), and
// COMMITLOG_PIPE_KILLS to kill more often.
func TestExactlyOncePipelineKill(t *testing.T) {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		t.Skipf("SIGKILL of a child process is a unix test (GOOS %s)", runtime.GOOS)
	}
	kills := pipeKills
	if testing.Short() {
		kills = pipeShortKills
	}
	if n := os.Getenv("COMMITLOG_PIPE_KILLS"); n != "" { // more rounds, to hunt
		var err error
		kills, err = strconv.Atoi(n)
		require.NoError(t, err, "COMMITLOG_PIPE_KILLS")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMMITLOG_KILL_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "COMMITLOG_KILL_SEED")
	}
	t.Logf("seed %d (replay with COMMITLOG_KILL_SEED=%d)", seed, seed)
	defer func() {
		if t.Failed() {
			t.Logf("failed with seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 18))

	dir := t.TempDir()
	n := max(pipeInputs, 300*kills)
	inputs := pipeSetup(t, dir, n)

	start := time.Now()
	var txnTime time.Duration = 5 * time.Millisecond     // a running estimate of one transaction's time
	var readyTime time.Duration = 100 * time.Millisecond // and of a child's start, open and recovery
	commits := 0
	recovered := map[string]int{} // what the parent's opens found to finish, by state ("" nothing)
	for round := range kills {
		var plan string
		var trigger pipeTrigger
		if rng.IntN(6) == 0 {
			// During the child's start: its open, its recovery, its producer's initialisation.
			d := time.Duration(rng.Int64N(int64(readyTime)*5/4 + 1))
			plan = fmt.Sprintf("%v after start", d)
			trigger = pipeTrigger{afterCommits: -1, delay: d}
		} else {
			n := rng.IntN(8)
			d := time.Duration(rng.Int64N(int64(txnTime)*3/2 + 1))
			plan = fmt.Sprintf("%v after commit %d", d, n)
			trigger = pipeTrigger{afterCommits: n, delay: d}
		}
		res, err := runPipeChild(dir, rng.Uint64(), &trigger)
		require.NoError(t, err, "round %d (kill %s); child stderr:\n%s", round, plan, res.stderr)
		require.False(t, res.finished, "round %d: the child consumed all of A before the kill; make A larger", round)
		commits += res.commits
		if res.commits > 1 {
			txnTime = (txnTime + res.perTxn) / 2
		}
		if res.ready > 0 {
			readyTime = (readyTime + res.ready) / 2
		}
		// Most rounds are checked at once, by the parent's open, which finishes the killed
		// child's transaction; some are left to the next child's open, so that kills land in
		// that recovery too.
		checked := round == kills-1 || rng.IntN(4) != 0
		var got pipeCheck
		if checked {
			got = pipeVerify(t, dir, inputs, false)
		}
		what := "left to the next child's open"
		if checked {
			recovered[got.recovered]++
			what = fmt.Sprintf("checked: %d outputs committed, %d aborted; the open found %q", got.committed, got.aborted, got.recovered)
		}
		t.Logf("round %d: killed %s (%d commits returned, about %v each); %s",
			round, plan, res.commits, res.perTxn.Round(10*time.Microsecond), what)
	}
	require.Positive(t, commits, "no transaction committed in any kill round")

	// The last child runs to the end of A.
	res, err := runPipeChild(dir, rng.Uint64(), nil)
	require.NoError(t, err, "final round; child stderr:\n%s", res.stderr)
	require.True(t, res.finished, "final round: the child did not say it finished")
	got := pipeVerify(t, dir, inputs, true)
	require.Equal(t, n, got.committed)
	t.Logf("%d kills and a final run in %v: %d transactions committed by killed children, %d outputs of aborted transactions in B; the parent's opens recovered %v",
		kills, time.Since(start).Round(time.Millisecond), commits, got.aborted, recovered)
}

// pipeSetup creates the store in dir with A, filled with n inputs (a multiple of 100), and B, both of
// pipePartitions partitions, and returns A's records by partition, in offset order.
func pipeSetup(t *testing.T, dir string, n int) [][]*Record {
	t.Helper()
	ctx := context.Background()
	s, err := Open(dir, pipeOptions()...)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	a, err := s.CreateTopic("A", pipeTopicConfig())
	require.NoError(t, err)
	_, err = s.CreateTopic("B", pipeTopicConfig())
	require.NoError(t, err)
	for i := 0; i < n; i += 100 {
		recs := make([]*Record, 100)
		for j := range recs {
			recs[j] = pipeInput(i + j)
		}
		require.NoError(t, a.Append(ctx, recs...))
	}
	inputs := make([][]*Record, pipePartitions)
	total := 0
	for p := range int32(pipePartitions) {
		part := stMust(a.Partition(p))
		for off := int64(0); off < part.LogEndOffset(); {
			recs, err := part.ReadRecords(off, 1<<20)
			require.NoError(t, err)
			require.NotEmpty(t, recs)
			for _, r := range recs {
				require.Equal(t, off, r.Offset)
				r.Partition = p
				inputs[p] = append(inputs[p], r)
				off++
			}
		}
		keys := map[string]bool{}
		for _, r := range inputs[p] {
			keys[string(r.Key)] = true
		}
		require.GreaterOrEqual(t, len(keys), 3, "partition %d of A holds %d keys", p, len(keys))
		total += len(inputs[p])
	}
	require.Equal(t, n, total)
	return inputs
}

// pipeTrigger says when to kill the child: delay after the afterCommits-th "commit" line, or
// after the start when afterCommits is negative.
type pipeTrigger struct {
	afterCommits int
	delay        time.Duration
}

type pipeRun struct {
	stderr   string
	commits  int           // commit lines read
	perTxn   time.Duration // the mean time between them
	ready    time.Duration // from the start to the ready line; 0 without one
	finished bool
}

// runPipeChild runs the pipeline child on dir; with a trigger it kills it with SIGKILL when the
// trigger says and fails unless it died of the kill, without one it waits for it and fails
// unless it exited 0.
func runPipeChild(dir string, seed uint64, kill *pipeTrigger) (pipeRun, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestExactlyOncePipelineChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pipeChildDirEnv+"="+dir, pipeChildSeedEnv+"="+strconv.FormatUint(seed, 10))
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return pipeRun{}, err
	}
	if err := cmd.Start(); err != nil {
		return pipeRun{}, err
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var res pipeRun
	started := time.Now()
	var first, last time.Time
	read := func(ln string) {
		switch {
		case ln == "ready":
			res.ready = time.Since(started)
		case strings.HasPrefix(ln, "commit "):
			res.commits++
			last = time.Now()
			if res.commits == 1 {
				first = last
			}
		case ln == "finished":
			res.finished = true
		}
	}
	var killErr error
	if kill != nil {
		timer := time.NewTimer(kill.delay)
		if kill.afterCommits >= 0 {
			timer.Stop()
		}
		armed := kill.afterCommits < 0
	wait:
		for {
			select {
			case ln, ok := <-lines:
				if !ok {
					break wait // the child ended by itself: the checks below say how
				}
				read(ln)
				if !armed && res.commits >= kill.afterCommits && (kill.afterCommits > 0 || ln == "ready") {
					armed = true
					timer.Reset(kill.delay)
				}
			case <-timer.C:
				// Process.Kill is SIGKILL on unix: no deferred function, no Close, no flush runs.
				killErr = cmd.Process.Kill()
				break wait
			}
		}
		timer.Stop()
	}
	for ln := range lines { // the pipe reaches EOF once the child is gone
		read(ln)
	}
	waitErr := cmd.Wait()
	res.stderr = errBuf.String()
	if res.commits > 1 {
		res.perTxn = last.Sub(first) / time.Duration(res.commits-1)
	}
	if kill == nil {
		if waitErr != nil {
			return res, fmt.Errorf("child failed: %w", waitErr)
		}
		return res, nil
	}
	if killErr != nil && !errors.Is(killErr, os.ErrProcessDone) {
		return res, fmt.Errorf("kill: %w", killErr)
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.Exited() {
		return res, fmt.Errorf("child did not die of SIGKILL: %v", waitErr)
	}
	return res, nil
}

// pipeCheck is what pipeVerify counted.
type pipeCheck struct {
	committed int // outputs of committed transactions in B
	aborted   int // outputs of aborted transactions in B
	// recovered is the state in which the open found the killed child's transaction, if it
	// had to finish it: Ongoing, PrepareCommit or PrepareAbort.
	recovered string
}

// pipeVerify reopens the store in dir and checks B and the reader's committed positions against
// the inputs (see the top of this file); final also requires every input to be consumed.
func pipeVerify(t *testing.T, dir string, inputs [][]*Record, final bool) pipeCheck {
	t.Helper()
	var logBuf bytes.Buffer
	s, err := Open(dir, append(pipeOptions(), WithLogger(slog.New(slog.NewTextHandler(&logBuf, nil))))...)
	require.NoError(t, err, "reopen after kill")
	defer func() { require.NoError(t, s.Close()) }()
	var check pipeCheck
	for _, ln := range strings.Split(logBuf.String(), "\n") {
		switch {
		case strings.Contains(ln, "completing the commit"):
			check.recovered = "PrepareCommit"
		case strings.Contains(ln, "completing the abort"):
			check.recovered = "PrepareAbort"
		case strings.Contains(ln, "aborting a transaction left open"):
			check.recovered = "Ongoing"
		}
	}

	positions, err := s.CommittedPositions(pipeReader)
	require.NoError(t, err)
	committedPos := make([]int64, pipePartitions)
	for p := range int32(pipePartitions) {
		committedPos[p] = positions["A"][p]
		require.GreaterOrEqual(t, committedPos[p], int64(0))
		require.LessOrEqual(t, committedPos[p], int64(len(inputs[p])), "A partition %d: position past A's end", p)
		if final {
			require.Equal(t, int64(len(inputs[p])), committedPos[p], "A partition %d: the reader is not at A's end", p)
		}
	}

	b := stMust(s.Topic("B"))
	seen := map[pipeSrc]pipeSrc{} // input -> the B partition and offset of its committed output
	byKey := map[string][]int64{} // key -> input offsets of its committed outputs, in B order
	for p := range int32(pipePartitions) {
		part := stMust(b.Partition(p))
		leo := part.LogEndOffset()
		require.Equal(t, leo, part.HighWatermark(), "B/%d", p)
		require.Equal(t, leo, part.LastStableOffset(), "B/%d: a transaction is still open after the store's open", p)
		for _, ps := range part.Producers() {
			require.Equal(t, int64(-1), ps.CurrentTxnFirstOffset, "B/%d: producer %d has an open transaction", p, ps.ProducerID)
		}

		// The committed records by the markers in B's own bytes.
		want, aborted := pipeDecided(t, part, leo)
		check.aborted += aborted
		got := pipeReadCommitted(t, b, p)
		require.Equal(t, len(want), len(got), "B/%d: ReadCommitted returned %d records, the committed transactions hold %d", p, len(got), len(want))
		for i := range want {
			require.Equal(t, want[i].Offset, got[i].Offset, "B/%d: ReadCommitted record %d", p, i)
			require.Equal(t, "", killSameRecord(got[i], want[i]), "B/%d offset %d", p, got[i].Offset)
		}

		for _, rec := range got {
			src, err := parsePipeSrc(rec)
			require.NoError(t, err)
			require.True(t, src.partition >= 0 && src.partition < pipePartitions, "B/%d offset %d: src %v", p, rec.Offset, src)
			require.Less(t, src.offset, committedPos[src.partition],
				"B/%d offset %d: a committed output of input %d/%d, at or past the reader's committed position %d", p, rec.Offset, src.partition, src.offset, committedPos[src.partition])
			require.GreaterOrEqual(t, src.offset, int64(0))
			if at, dup := seen[src]; dup {
				t.Fatalf("input %d/%d has two committed outputs: B/%d offset %d and B/%d offset %d", src.partition, src.offset, at.partition, at.offset, p, rec.Offset)
			}
			seen[src] = pipeSrc{p, rec.Offset}
			in := inputs[src.partition][src.offset]
			require.Equal(t, string(in.Key), string(rec.Key), "B/%d offset %d: key", p, rec.Offset)
			require.Equal(t, "out:"+string(in.Value), string(rec.Value), "B/%d offset %d: value", p, rec.Offset)
			byKey[string(rec.Key)] = append(byKey[string(rec.Key)], src.offset)
		}
		check.committed += len(got)
	}

	// Exactly the inputs below the committed positions have an output, and per key in input
	// order.
	wantByKey := map[string][]int64{}
	wantCount := 0
	for p := range int32(pipePartitions) {
		for off := range committedPos[p] {
			_, ok := seen[pipeSrc{p, off}]
			require.True(t, ok, "input %d/%d is below the committed position %d but has no committed output", p, off, committedPos[p])
			k := string(inputs[p][off].Key)
			wantByKey[k] = append(wantByKey[k], off)
			wantCount++
		}
	}
	require.Equal(t, wantCount, len(seen))
	require.Equal(t, wantByKey, byKey, "the outputs per key are not the key's inputs in order")
	return check
}

// pipeDecided walks the batches of part below leo and returns the records of the transactions
// committed by a COMMIT marker of their producer, in offset order, and the number of records of
// aborted ones. No transaction may be left undecided.
func pipeDecided(t *testing.T, part *Partition, leo int64) (committed []*Record, aborted int) {
	t.Helper()
	open := map[int64][]*Record{} // producer id -> the records of its open transaction
	for next := int64(0); next < leo; {
		b, err := part.ReadBatches(nil, next, 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, b, "B/%d: nothing at %d below the log end offset %d", part.id, next, leo)
		for pos := 0; pos < len(b); {
			h, err := recordbatch.Check(b[pos:], 0)
			require.NoError(t, err, "B/%d batch at %d", part.id, next)
			require.Equal(t, next, h.BaseOffset, "B/%d: a hole", part.id)
			batch := b[pos : pos+h.Size()]
			pos += h.Size()
			next = h.NextOffset()
			require.True(t, h.Attributes.Transactional(), "B/%d offset %d: a batch outside a transaction", part.id, h.BaseOffset)
			if h.Attributes.Control() {
				mk, err := parseMarker(batch, &h)
				require.NoError(t, err)
				if mk.Commit {
					committed = append(committed, open[h.ProducerID]...)
				} else {
					aborted += len(open[h.ProducerID])
				}
				delete(open, h.ProducerID)
				continue
			}
			recs, err := DecodeRecords(nil, batch, 0, 0)
			require.NoError(t, err)
			for _, r := range recs {
				r.Topic, r.Partition = "B", part.id
			}
			open[h.ProducerID] = append(open[h.ProducerID], recs...)
		}
	}
	for pid, recs := range open {
		require.Empty(t, recs, "B/%d: producer %d has records with no marker after them", part.id, pid)
	}
	slices.SortFunc(committed, func(a, b *Record) int { return int(a.Offset - b.Offset) })
	return committed, aborted
}

// pipeReadCommitted reads B's partition p from the start under ReadCommitted, up to its last
// stable offset.
func pipeReadCommitted(t *testing.T, b *Topic, p int32) []*Record {
	t.Helper()
	r, err := b.NewReader(ReaderConfig{Partitions: []int32{p}, Start: Earliest, Isolation: ReadCommitted, MaxBytes: 8 << 10})
	require.NoError(t, err)
	defer r.Close()
	var out []*Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		rec, err := r.Next(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			// Past markers and aborted batches, Next waits at the last stable offset.
			if r.Lag()[p] == 0 {
				break
			}
			continue
		}
		require.NoError(t, err)
		out = append(out, rec)
	}
	return out
}
