package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The store kill test is the kill test (kill_test.go) on a whole store: a child process appends
// to three topics and two named readers read two of them and commit their positions, all at
// once, until the parent kills it with SIGKILL; 50 times on the same directory. After every kill
// the parent reopens the store and checks:
//   - every record the child acknowledged is at the partition and offset Append gave it, the
//     same record byte for byte (every record is a pure function of its id, which it carries in
//     a header; records that reached the disk unacknowledged are checked the same way);
//   - offsets run from 0 to the log end offset without a hole;
//   - each named reader resumes at exactly the positions of one of its commits (a commit is one
//     atomic file: never a mix of two), at or after the last commit that returned.
//
// The child writes one line per event to stdout, a pipe, each line in one write (atomic):
//
//	ack <topic> <partition> <offset> <id>          after Append returned
//	commit-start <reader> <p>=<pos> <p>=<pos> ...   before Commit
//	commit-done <reader> <p>=<pos> ...              after Commit returned

const (
	storeKillChildDirEnv   = "COMMITLOG_STORE_KILL_CHILD_DIR"
	storeKillChildSeedEnv  = "COMMITLOG_STORE_KILL_CHILD_SEED"
	storeKillChildFirstEnv = "COMMITLOG_STORE_KILL_CHILD_FIRST_ID"
	storeKillRounds        = 50
	storeKillShortRounds   = 10
)

// storeKillTopics are the topics and their partition counts; storeKillReaders the named readers
// and the topic each reads.
var (
	storeKillTopics = []struct {
		name       string
		partitions int32
	}{{"orders", 3}, {"payments", 2}, {"audit", 1}}
	storeKillReaders = map[string]string{"billing": "orders", "ledger": "payments"}
)

// storeKillConfig rolls segments every few dozen appends and keeps the segment files open by the
// dozen only, so that kills land in rolls and in reopens of closed segments.
func storeKillConfig() TopicConfig {
	return TopicConfig{LogConfig: LogConfig{
		SegmentBytes:       16 << 10,
		SegmentIndexBytes:  4 << 10,
		IndexIntervalBytes: 1024,
		Sync:               SyncAlways,
	}}
}

func storeKillOptions() []Option {
	return []Option{WithMaxOpenFiles(12 * filesPerSegment), WithRetentionCheckInterval(-1)}
}

// storeKillRecord returns the record with the given id: key, value, headers and timestamp all
// derived from it; the id itself in the "id" header, since some keys are null.
func storeKillRecord(topic string, id int64) *Record {
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(id))
	copy(seed[8:], topic)
	r := rand.New(rand.NewChaCha8(seed))
	value := make([]byte, r.IntN(400))
	for i := range value {
		value[i] = byte(r.Uint32())
	}
	rec := &Record{
		Key:       []byte(topic + "-" + strconv.FormatInt(id%97, 10)),
		Value:     value,
		Timestamp: time.UnixMilli(1_700_000_000_000 + id),
		Headers:   []Header{{Key: "id", Value: []byte(strconv.FormatInt(id, 10))}},
	}
	if id%5 == 2 {
		rec.Key = nil
	}
	return rec
}

// storeKillCheck reports how rec, read from topic, differs from the record its id header names,
// and returns that id.
func storeKillCheck(topic string, rec *Record) (int64, error) {
	if len(rec.Headers) == 0 || rec.Headers[0].Key != "id" {
		return 0, fmt.Errorf("%s/%d offset %d: no id header", topic, rec.Partition, rec.Offset)
	}
	id, err := strconv.ParseInt(string(rec.Headers[0].Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/%d offset %d: id header %q", topic, rec.Partition, rec.Offset, rec.Headers[0].Value)
	}
	want := storeKillRecord(topic, id)
	want.Offset = rec.Offset
	if d := killSameRecord(rec, want); d != "" {
		return id, fmt.Errorf("%s/%d offset %d (id %d): %s", topic, rec.Partition, rec.Offset, id, d)
	}
	return id, nil
}

// formatPositions writes positions as "<p>=<pos>" fields in partition order.
func formatPositions(pos map[int32]int64) string {
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(pos)) {
		fmt.Fprintf(&b, " %d=%d", p, pos[p])
	}
	return b.String()
}

// TestStoreKillChild is the writer and the readers the store kill test runs in a child process;
// on its own it skips.
func TestStoreKillChild(t *testing.T) {
	dir := os.Getenv(storeKillChildDirEnv)
	if dir == "" {
		t.Skip("run by TestStoreKillRecovery in a child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	seed, err := strconv.ParseUint(os.Getenv(storeKillChildSeedEnv), 10, 64)
	if err != nil {
		fail("bad seed: %v", err)
	}
	nextID, err := strconv.ParseInt(os.Getenv(storeKillChildFirstEnv), 10, 64)
	if err != nil {
		fail("bad first id: %v", err)
	}
	var outMu sync.Mutex
	emit := func(line string) {
		// One write per line: a pipe write this small is atomic, so the parent never sees half
		// a line, and never a line whose event did not happen.
		outMu.Lock()
		defer outMu.Unlock()
		if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
			fail("stdout: %v", err)
		}
	}

	s, err := Open(dir, storeKillOptions()...)
	if err != nil {
		fail("open: %v", err)
	}
	ctx := context.Background()
	// The deadline only stops a child the parent failed to kill.
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	for name, topic := range storeKillReaders {
		wg.Go(func() {
			tp, err := s.Topic(topic)
			if err != nil {
				fail("topic %s: %v", topic, err)
			}
			r, err := tp.NewReader(ReaderConfig{Name: name, Start: Earliest, MaxBytes: 4 << 10})
			if err != nil {
				fail("reader %s: %v", name, err)
			}
			rng := rand.New(rand.NewPCG(seed, uint64(len(name))))
			for time.Now().Before(deadline) {
				for range 1 + rng.IntN(30) {
					rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
					rec, err := r.Next(rctx)
					cancel()
					if errors.Is(err, context.DeadlineExceeded) {
						break
					}
					if err != nil {
						fail("reader %s: next: %v", name, err)
					}
					if _, err := storeKillCheck(topic, rec); err != nil {
						fail("reader %s: %v", name, err)
					}
				}
				// Only this goroutine moves the reader: the positions printed are the ones
				// Commit writes.
				pos := formatPositions(r.Positions())
				emit("commit-start " + name + pos)
				if err := r.Commit(ctx); err != nil {
					fail("reader %s: commit: %v", name, err)
				}
				emit("commit-done " + name + pos)
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	for time.Now().Before(deadline) {
		tk := storeKillTopics[rng.IntN(len(storeKillTopics))]
		tp, err := s.Topic(tk.name)
		if err != nil {
			fail("topic %s: %v", tk.name, err)
		}
		recs := make([]*Record, 1+rng.IntN(12))
		for i := range recs {
			recs[i] = storeKillRecord(tk.name, nextID)
			nextID++
		}
		if err := tp.Append(ctx, recs...); err != nil {
			fail("append to %s: %v", tk.name, err)
		}
		var b strings.Builder
		for _, r := range recs {
			fmt.Fprintf(&b, "ack %s %d %d %s\n", tk.name, r.Partition, r.Offset, r.Headers[0].Value)
		}
		outMu.Lock()
		if _, err := os.Stdout.WriteString(b.String()); err != nil { // under 4 KiB: one atomic write
			fail("stdout: %v", err)
		}
		outMu.Unlock()
	}
	fail("not killed within the deadline")
}

// storeKillState is what the parent knows of the child's acknowledged work, over all rounds.
type storeKillState struct {
	acked map[string]map[int32]map[int64]int64 // topic -> partition -> offset -> id
	// starts holds, per reader, the positions of every commit it began (as "<p>=<pos> ..."), and
	// done the last commit that returned.
	starts map[string]map[string]bool
	done   map[string]map[int32]int64
}

// TestStoreKillRecovery kills a child writing to a store and committing two named readers with
// SIGKILL 50 times (10 in -short mode) on the same directory and checks the store after each
// kill. The seed is printed; set COMMITLOG_KILL_SEED to replay one.
func TestStoreKillRecovery(t *testing.T) {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		t.Skipf("SIGKILL of a child process is a unix test (GOOS %s)", runtime.GOOS)
	}
	rounds := storeKillRounds
	if testing.Short() {
		rounds = storeKillShortRounds
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMMITLOG_KILL_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "COMMITLOG_KILL_SEED")
	}
	t.Logf("seed %d (replay with COMMITLOG_KILL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	dir := t.TempDir()
	s, err := Open(dir, storeKillOptions()...)
	require.NoError(t, err)
	for _, tk := range storeKillTopics {
		cfg := storeKillConfig()
		cfg.Partitions = tk.partitions
		_, err := s.CreateTopic(tk.name, cfg)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	st := storeKillState{acked: map[string]map[int32]map[int64]int64{}, starts: map[string]map[string]bool{}, done: map[string]map[int32]int64{}}
	for _, tk := range storeKillTopics {
		st.acked[tk.name] = map[int32]map[int64]int64{}
		for p := range tk.partitions {
			st.acked[tk.name][p] = map[int64]int64{}
		}
	}
	for name := range storeKillReaders {
		st.starts[name] = map[string]bool{}
	}
	var acks, commits, maxSegments int
	start := time.Now()
	for round := range rounds {
		// Mostly mid-stream; now and then during the child's open and recovery.
		delay := time.Duration(30+rng.IntN(300)) * time.Millisecond
		lines, stderr, err := runStoreKillChild(dir, rng.Uint64(), int64(round+1)*10_000_000, delay)
		require.NoError(t, err, "round %d; child stderr:\n%s", round, stderr)
		for _, ln := range lines {
			f := strings.Fields(ln)
			switch {
			case f[0] == "ack" && len(f) == 5:
				p, err1 := strconv.ParseInt(f[2], 10, 32)
				off, err2 := strconv.ParseInt(f[3], 10, 64)
				id, err3 := strconv.ParseInt(f[4], 10, 64)
				require.NoError(t, errors.Join(err1, err2, err3), "round %d: child wrote %q", round, ln)
				st.acked[f[1]][int32(p)][off] = id
				acks++
			case f[0] == "commit-start" && len(f) >= 2:
				st.starts[f[1]][strings.Join(f[2:], " ")] = true
			case f[0] == "commit-done" && len(f) >= 2:
				st.done[f[1]] = parsePositions(t, f[2:])
				commits++
			default:
				t.Fatalf("round %d: child wrote %q", round, ln)
			}
		}
		segs := verifyKilledStore(t, dir, &st)
		maxSegments = max(maxSegments, segs)
		t.Logf("round %d: killed after %v, %d lines; %d segments", round, delay, len(lines), segs)
	}
	t.Logf("%d rounds in %v: %d records acknowledged, %d commits returned, up to %d segments",
		rounds, time.Since(start).Round(time.Millisecond), acks, commits, maxSegments)
	require.Positive(t, acks, "no append was acknowledged in any round")
	require.Positive(t, commits, "no commit returned in any round")
	require.Greater(t, maxSegments, 12, "the store never held more segments than its file bound")
}

func parsePositions(t *testing.T, fields []string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for _, f := range fields {
		p, off, ok := strings.Cut(f, "=")
		require.True(t, ok, "position %q", f)
		pi, err1 := strconv.ParseInt(p, 10, 32)
		oi, err2 := strconv.ParseInt(off, 10, 64)
		require.NoError(t, errors.Join(err1, err2), "position %q", f)
		out[int32(pi)] = oi
	}
	return out
}

// runStoreKillChild starts the child on dir, kills it with SIGKILL after delay and returns the
// lines it wrote before dying.
func runStoreKillChild(dir string, seed uint64, firstID int64, delay time.Duration) (lines []string, stderr string, err error) {
	return killChild("TestStoreKillChild", []string{storeKillChildDirEnv + "=" + dir,
		storeKillChildSeedEnv + "=" + strconv.FormatUint(seed, 10),
		storeKillChildFirstEnv + "=" + strconv.FormatInt(firstID, 10)},
		func(ln string) bool { return strings.HasPrefix(ln, "ack ") || strings.HasPrefix(ln, "commit-") }, delay)
}

// verifyKilledStore reopens the store in dir after a kill and checks it against st; it returns
// the number of segments of all partitions.
func verifyKilledStore(t *testing.T, dir string, st *storeKillState) int {
	t.Helper()
	s, err := Open(dir, storeKillOptions()...)
	require.NoError(t, err, "reopen after kill")
	defer func() { require.NoError(t, s.Close()) }()
	segments := 0
	for _, tk := range storeKillTopics {
		tp, err := s.Topic(tk.name)
		require.NoError(t, err)
		require.Equal(t, tk.partitions, tp.PartitionCount())
		for p := range tk.partitions {
			part := stMust(tp.Partition(p))
			segments += part.SegmentCount()
			require.Equal(t, int64(0), part.LogStartOffset())
			leo := part.LogEndOffset()
			// Every record, acknowledged or not, is the one its id names, and offsets run from 0
			// to the log end offset without a hole.
			atOffset := map[int64]int64{}
			for next := int64(0); next < leo; {
				recs, err := part.ReadRecords(next, 256<<10)
				require.NoError(t, err, "%s/%d: read at %d", tk.name, p, next)
				require.NotEmpty(t, recs, "%s/%d: nothing at %d below the log end offset %d", tk.name, p, next, leo)
				for _, r := range recs {
					require.Equal(t, next, r.Offset, "%s/%d: a hole", tk.name, p)
					id, err := storeKillCheck(tk.name, r)
					require.NoError(t, err)
					atOffset[r.Offset] = id
					next++
				}
			}
			for off, id := range st.acked[tk.name][p] {
				got, ok := atOffset[off]
				require.True(t, ok, "%s/%d: acknowledged record %d at offset %d is past the log end offset %d", tk.name, p, id, off, leo)
				require.Equal(t, id, got, "%s/%d offset %d: another record than the one acknowledged", tk.name, p, off)
			}
		}
	}
	for name, topic := range storeKillReaders {
		tp, err := s.Topic(topic)
		require.NoError(t, err)
		r, err := tp.NewReader(ReaderConfig{Name: name, Start: Earliest})
		require.NoError(t, err)
		pos := r.Positions()
		require.NoError(t, r.Close())
		key := strings.TrimSpace(formatPositions(pos))
		if len(st.starts[name]) == 0 {
			// Never committed: the start position, the log start offsets.
			for p, off := range pos {
				require.Zero(t, off, "reader %s partition %d without a commit", name, p)
			}
			continue
		}
		_, begun := st.starts[name][key]
		never := true
		for _, off := range pos {
			never = never && off == 0
		}
		require.True(t, begun || (never && len(st.done[name]) == 0),
			"reader %s resumes at %s, which is none of the positions it committed", name, key)
		for p, off := range st.done[name] {
			require.GreaterOrEqual(t, pos[p], off, "reader %s partition %d resumes before its last returned commit", name, p)
		}
	}
	return segments
}
