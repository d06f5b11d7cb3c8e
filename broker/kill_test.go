package broker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// The tests here kill a Kafka client process (this test binary, run again as a child) in the
// middle of its work, and check what the broker kept: every record the client saw acknowledged,
// none twice. The child prints a line per acknowledgement; the parent kills it with SIGKILL
// once it has read enough of them.

const killChildEnv = "COMMITLOG_BROKER_KILL_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(killChildEnv); mode != "" {
		os.Exit(runKillChild(mode, os.Getenv("COMMITLOG_BROKER_ADDR")))
	}
	os.Exit(m.Run())
}

// runKillChild is the child: it produces until killed.
func runKillChild(mode, addr string) int {
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	switch mode {
	case "produce":
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kill"), kgo.RecordRetries(1<<30))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		acks := make(chan string, 1024)
		go func() {
			for line := range acks {
				out.WriteString(line)
				out.Flush()
			}
		}()
		for i := 0; ; i++ {
			cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%07d", i)}, func(r *kgo.Record, err error) {
				if err == nil {
					acks <- fmt.Sprintf("ack %s %d\n", r.Value, r.Offset)
				}
			})
			if i%100 == 99 {
				cl.Flush(ctx)
			}
		}
	case "txn":
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kill"), kgo.TransactionalID("kill-txn"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for txn := 0; ; txn++ {
			if err := cl.BeginTransaction(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			for i := range 10 {
				cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%05d-%d", txn, i)}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			fmt.Fprintf(out, "committed %d\n", txn)
			out.Flush()
		}
	}
	return 2
}

// startKillChild runs the child in mode against addr and returns its command and a scanner of
// its stdout.
func startKillChild(t *testing.T, mode, addr string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+mode, "COMMITLOG_BROKER_ADDR="+addr)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stdout)
}

func TestClientKilledMidProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "kill", 1)
	cmd, lines := startKillChild(t, "produce", b.addr)
	acked := map[string]int64{}
	for len(acked) < 3000 && lines.Scan() {
		f := strings.Fields(lines.Text())
		require.Len(t, f, 3, "line %q", lines.Text())
		off, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		acked[f[1]] = off
	}
	require.Len(t, acked, 3000, "the child stopped early")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()

	// What the partition holds: every acknowledged record at its offset, and no value twice.
	p := storePartition(t, b.store, "kill", 0)
	seen := map[string]int64{}
	for rec, err := range p.Scan(0) {
		require.NoError(t, err)
		v := string(rec.Value)
		prev, dup := seen[v]
		require.False(t, dup, "value %s at offsets %d and %d", v, prev, rec.Offset)
		seen[v] = rec.Offset
		if rec.Offset+1 >= p.HighWatermark() {
			break
		}
	}
	for v, off := range acked {
		got, ok := seen[v]
		require.True(t, ok, "acknowledged record %s (offset %d) lost", v, off)
		require.Equal(t, off, got, "acknowledged record %s", v)
	}
}

func TestClientKilledMidTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "kill", 1)
	cmd, lines := startKillChild(t, "txn", b.addr)
	committed := 0
	for committed < 30 && lines.Scan() {
		committed++
		require.Equal(t, fmt.Sprintf("committed %d", committed-1), lines.Text())
	}
	require.Equal(t, 30, committed, "the child stopped early")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()

	// A new instance of the transactional id fences the dead one and aborts what it left open.
	ctx := testContext(t)
	cl := b.client(t, kgo.DefaultProduceTopic("kill"), kgo.TransactionalID("kill-txn"))
	require.NoError(t, cl.BeginTransaction())
	produceSync(t, ctx, cl, &kgo.Record{Value: []byte("after")})
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))

	// A read_committed consumer sees every committed transaction whole, once, in order, and
	// nothing of the one the kill interrupted, then the new instance's record.
	cons := b.client(t, kgo.ConsumeTopics("kill"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var values []string
	for len(values) == 0 || values[len(values)-1] != "after" {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d records", len(values))
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	txns := (len(values) - 1) / 10
	require.GreaterOrEqual(t, txns, committed, "committed transactions lost")
	require.LessOrEqual(t, txns, committed+1, "more transactions than the child began")
	require.Zero(t, (len(values)-1)%10, "a transaction seen in part: %d records", len(values))
	for i := range txns * 10 {
		require.Equal(t, fmt.Sprintf("t%05d-%d", i/10, i%10), values[i])
	}
}

// storePartition returns partition id of topic in s.
func storePartition(t testing.TB, s *commitlog.Store, topic string, id int32) *commitlog.Partition {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	p, err := tp.Partition(id)
	require.NoError(t, err)
	return p
}
