package mirror

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// The test here kills the mirroring process (this test binary, run again as a child running
// Push) with SIGKILL in the middle of its work, 20 times, then lets a last child finish, and
// checks that the cluster holds every record of the local store exactly once, in order. The
// child is started with -test.run naming TestPushKillChild, which does its work only when
// pushKillEnv is set: no TestMain is needed.

const (
	pushKillEnv     = "COMMITLOG_MIRROR_PUSH_KILL_CHILD" // "kill": push and append until killed; "finish": push until caught up
	pushKillDirEnv  = "COMMITLOG_MIRROR_PUSH_KILL_DIR"
	pushKillAddrEnv = "COMMITLOG_MIRROR_PUSH_KILL_ADDR"
)

// TestPushKillChild is the child's body; without pushKillEnv it does nothing.
func TestPushKillChild(t *testing.T) {
	mode := os.Getenv(pushKillEnv)
	if mode == "" {
		t.Skip("the child of TestPushKilled")
	}
	os.Exit(pushKillChild(mode, os.Getenv(pushKillDirEnv), os.Getenv(pushKillAddrEnv)))
}

// pushKillChild opens the store and pushes it; in mode "kill" it also appends records while it
// pushes, and prints "txn N" after each committed transaction; in mode "finish" it prints "done"
// once everything is shipped, and exits.
func pushKillChild(mode, dir, addr string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	store, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return fail(err)
	}
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "kill",
		Rename: Rename{Prefix: "dc."}, MaxTransactionRecords: 97,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	if mode == "kill" {
		// The local log takes appends while the mirror ships (and is killed).
		go func() {
			topic, err := store.Topic("orders")
			if err != nil {
				return
			}
			for i := 0; ctx.Err() == nil; i++ {
				part, err := topic.Partition(int32(i % 4))
				if err != nil {
					return
				}
				recs := pushMakeRecords(part.ID(), int(part.LogEndOffset()), 5, 0)
				for _, r := range recs {
					r.Key = fmt.Appendf(r.Key, "-pid%d", os.Getpid())
				}
				if part.Append(ctx, recs...) != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	out := bufio.NewWriter(os.Stdout)
	var txns int64
	for {
		select {
		case err := <-runErr:
			return fail(fmt.Errorf("Run returned %v", err))
		case <-time.After(time.Millisecond):
		}
		st := p.State()
		if st.Transactions != txns {
			txns = st.Transactions
			fmt.Fprintf(out, "txn %d\n", txns)
			out.Flush()
		}
		if mode == "finish" && st.Connected && len(st.Partitions) == 6 && st.Unshipped() == 0 {
			cancel()
			if err := <-runErr; err != nil {
				return fail(err)
			}
			if err := store.Close(); err != nil {
				return fail(err)
			}
			fmt.Fprintln(out, "done")
			out.Flush()
			return 0
		}
	}
}

// startPushKillChild starts the child in mode and returns it and a scanner of its stdout.
func startPushKillChild(t *testing.T, mode, dir, addr string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPushKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pushKillEnv+"="+mode, pushKillDirEnv+"="+dir, pushKillAddrEnv+"="+addr)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stdout)
}

// TestPushKilled: the mirroring process is SIGKILLed 20 times while it ships (and while it
// appends to the local log), each time after it committed one to three transactions and a random
// few milliseconds more (so some kills land inside a transaction, some between); a last run
// ships the rest. The cluster then holds every record of the local store exactly once, in order
// per partition, read with a read_committed consumer.
func TestPushKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	store := pushStore(t, dir)
	pushCreate(t, store, "orders", 4, commitlog.CleanupDelete)
	pushCreate(t, store, "prices", 2, commitlog.CleanupCompact)
	pushAppend(t, store, "orders", 0, 3000, 0)
	pushAppend(t, store, "prices", 0, 1000, 40)
	require.NoError(t, store.Close())

	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	rng := rand.New(rand.NewPCG(21, 21))
	for kill := range 20 {
		cmd, lines := startPushKillChild(t, "kill", dir, addr)
		need := 1 + rng.IntN(3)
		for seen := 0; seen < need; {
			require.True(t, lines.Scan(), "kill %d: the child stopped before its transaction %d", kill, seen+1)
			if strings.HasPrefix(lines.Text(), "txn ") {
				seen++
			}
		}
		time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL
		cmd.Wait()
	}
	cmd, lines := startPushKillChild(t, "finish", dir, addr)
	finished := false
	for lines.Scan() {
		if lines.Text() == "done" {
			finished = true
		}
	}
	require.NoError(t, cmd.Wait())
	require.True(t, finished, "the last child did not finish")

	// What the local store holds is what the cluster must hold, exactly once.
	store = pushStore(t, dir)
	for topic, parts := range map[string]int32{"orders": 4, "prices": 2} {
		want := pushSource(t, store, topic)
		require.Len(t, want, int(parts))
		got := pushConsume(t, addr, "dc."+topic, pushCounts(want))
		for p, w := range want {
			pushRequireEqual(t, fmt.Sprintf("dc.%s[%d]", topic, p), w, got[p])
		}
	}
}

// pushSource returns every record of topic in the local store, by partition.
func pushSource(t testing.TB, s *commitlog.Store, topic string) map[int32][]pushRecord {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	out := map[int32][]pushRecord{}
	for p := range tp.PartitionCount() {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		out[p] = []pushRecord{}
		if part.HighWatermark() == part.LogStartOffset() {
			continue
		}
		for rec, err := range part.Scan(part.LogStartOffset()) {
			require.NoError(t, err)
			r := *rec
			r.Key, r.Value = pushClone(rec.Key), pushClone(rec.Value)
			r.Headers = nil
			for _, h := range rec.Headers {
				r.Headers = append(r.Headers, commitlog.Header{Key: h.Key, Value: pushClone(h.Value)})
			}
			out[p] = append(out[p], pushWant(&r))
			if rec.Offset+1 >= part.HighWatermark() {
				break
			}
		}
	}
	return out
}

func pushClone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
