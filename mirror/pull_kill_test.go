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
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// TestPullKilled kills the pulling process with SIGKILL 20 times while it pulls, then lets a
// last run finish: the local store must hold every committed source record exactly once, in
// order per partition, and none of an aborted source transaction. The pulling process is this
// test binary run again as a child (TestPullKillChild) on its own store directory; kfake, the
// cluster, lives in the parent and outlives the children. The child prints a line after each
// local transaction it commits; the parent kills it after a few such lines (or, every fifth
// round, as soon as it starts), so the kills land anywhere: mid-append, mid-commit, while it
// fences its predecessor or reads its positions.

const (
	pullKillEnv     = "COMMITLOG_MIRROR_PULL_KILL_CHILD" // "run" or "final"
	pullKillAddrEnv = "COMMITLOG_MIRROR_PULL_KILL_ADDR"
	pullKillDirEnv  = "COMMITLOG_MIRROR_PULL_KILL_DIR"
	pullKillEndsEnv = "COMMITLOG_MIRROR_PULL_KILL_ENDS" // "topic/partition=offset,..." for "final"
)

var pullKillTopics = []string{"events", "state"}

func pullKillConfig(log *slog.Logger) PullConfig {
	return PullConfig{Name: "kill", Topics: pullKillTopics, Rename: Rename{Prefix: "k."}, MaxRecords: 64, Logger: log}
}

// TestPullKillChild is the child of TestPullKilled; run directly it skips.
func TestPullKillChild(t *testing.T) {
	mode := os.Getenv(pullKillEnv)
	if mode == "" {
		t.Skip("the pulling child of TestPullKilled")
	}
	ends := map[string]map[int32]int64{}
	if mode == "final" {
		for _, kv := range strings.Split(os.Getenv(pullKillEndsEnv), ",") {
			k, v, _ := strings.Cut(kv, "=")
			tp, off, ok := pullParsePosition([]byte(k), []byte(v))
			require.True(t, ok, "ends entry %q", kv)
			if ends[tp.topic] == nil {
				ends[tp.topic] = map[int32]int64{}
			}
			ends[tp.topic][tp.partition] = off
		}
	}
	store, err := commitlog.Open(os.Getenv(pullKillDirEnv), commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	p, err := NewPuller(store, Cluster{Brokers: []string{os.Getenv(pullKillAddrEnv)}}, pullKillConfig(log))
	require.NoError(t, err)
	fmt.Println("start")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var printed int64
	caughtUp := pullCaughtUp(ends)
	for {
		st := p.State()
		for ; printed < st.Transactions; printed++ {
			fmt.Printf("txn %d\n", printed+1)
		}
		if mode == "final" && caughtUp(st) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, store.Close())
	fmt.Println("done")
}

// pullChild is a running child and its standard output, line by line.
type pullChild struct {
	cmd   *exec.Cmd
	lines chan string
}

func startPullChild(t *testing.T, mode, addr, dir, ends string) *pullChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPullKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pullKillEnv+"="+mode, pullKillAddrEnv+"="+addr, pullKillDirEnv+"="+dir, pullKillEndsEnv+"="+ends)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &pullChild{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// next returns the child's next line with the prefix, failing the test if the child ends first
// or prints none within pullGuard.
func (c *pullChild) next(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(pullGuard)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child ended before printing %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("the child printed no %q line within %s", prefix, pullGuard)
		}
	}
}

func TestPullKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	t.Parallel()
	ctx := pullTestContext(t)
	c := pullKfake(t)
	require.NoError(t, c.CreateTopic("events", 8, nil))
	require.NoError(t, c.CreateTopic("state", 2, map[string]string{"cleanup.policy": "compact"}))
	cl := pullClient(t, c.ListenAddrs())
	txn := pullClient(t, c.ListenAddrs(), kgo.TransactionalID("pull-kill-txn"))
	src := newPullSource()
	recs := pullRecords("events", "e", 8, 16_000)
	pullProduce(t, ctx, cl, recs[:8000])
	src.add(recs[:8000])
	aborted := pullRecords("events", "aborted", 8, 200)
	pullProduceTxn(t, ctx, txn, aborted, false)
	src.abort(aborted)
	pullProduceTxn(t, ctx, txn, recs[8000:12_000], true)
	src.add(recs[8000:12_000])
	pullProduce(t, ctx, cl, recs[12_000:])
	src.add(recs[12_000:])
	state := make([]*kgo.Record, 1000)
	for i := range state {
		state[i] = &kgo.Record{Topic: "state", Partition: int32(i % 2), Key: fmt.Appendf(nil, "key-%d", i%40),
			Value: fmt.Appendf(nil, "state-%d", i), Timestamp: time.UnixMilli(1_600_000_000_000 + int64(i))}
	}
	pullProduce(t, ctx, cl, state)
	src.add(state)
	ends := pullEnds(c, pullKillTopics...)

	addr, dir := c.ListenAddrs()[0], t.TempDir()
	rng := rand.New(rand.NewPCG(21, 21))
	for kill := range 20 {
		child := startPullChild(t, "run", addr, dir, "")
		child.next(t, "start")
		if kill%5 != 4 {
			for range 1 + rng.IntN(6) {
				child.next(t, "txn ")
			}
		}
		require.NoError(t, child.cmd.Process.Kill()) // SIGKILL
		err := child.cmd.Wait()
		require.Error(t, err, "kill %d: the child exited by itself", kill)
	}

	var endList []string
	for topic, ps := range ends {
		for p, off := range ps {
			endList = append(endList, fmt.Sprintf("%s/%d=%d", topic, p, off))
		}
	}
	child := startPullChild(t, "final", addr, dir, strings.Join(endList, ","))
	child.next(t, "done")
	require.NoError(t, child.cmd.Wait(), "the final run")

	store := pullOpenStore(t, dir)
	defer store.Close()
	pullCheckSamePartitions(t, store, src, "events", "k.events")
	// The local cleaner compacts k.state (each run's store opening seals a segment): records
	// a later one of the same key supersedes may be gone.
	pullCheckCompacted(t, store, src, "state", "k.state")

	// What the kills left: records of interrupted local transactions, aborted, which a
	// read_committed reader skips.
	var appended, committed int
	for _, topic := range []string{"k.events", "k.state"} {
		tp, err := store.Topic(topic)
		require.NoError(t, err)
		for id := range tp.PartitionCount() {
			part, err := tp.Partition(id)
			require.NoError(t, err)
			end := part.HighWatermark()
			for rec, err := range part.Scan(0) {
				require.NoError(t, err)
				if rec.Offset >= end {
					break
				}
				appended++
			}
		}
		for _, recs := range pullReadLocal(t, store, topic) {
			committed += len(recs)
		}
	}
	t.Logf("20 kills: %d records committed locally, once each; %d records of local transactions the kills interrupted, aborted",
		committed, appended-committed)
}
