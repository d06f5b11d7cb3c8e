package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/commitlog-go/commitlog"
)

// serveGuard bounds every wait of these tests: a failure guard, never a pace.
const serveGuard = 30 * time.Second

// listeningRE matches serve's first line and captures the address it listens on.
var listeningRE = regexp.MustCompile(`commitlog serve: Kafka broker listening on (\S+) \(advertised as (\S+), node (\d+), cluster (\S+)\), store .*\n`)

// watchLog keeps what a process writes (its standard error) and sends the submatches of re on
// match once a complete match is written. Safe for concurrent writes (serve's broker logger
// writes from its connections' goroutines).
type watchLog struct {
	re    *regexp.Regexp
	mu    sync.Mutex
	buf   bytes.Buffer
	sent  bool
	match chan []string
}

func newWatchLog(re *regexp.Regexp) *watchLog {
	return &watchLog{re: re, match: make(chan []string, 1)}
}

// newServeLog watches for serve's listening line.
func newServeLog() *watchLog { return newWatchLog(listeningRE) }

func (l *watchLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.sent {
		if m := l.re.FindStringSubmatch(l.buf.String()); m != nil {
			l.sent = true
			l.match <- m
		}
	}
	return len(p), nil
}

func (l *watchLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// addr waits for serve's listening line and returns the address, or "" when done is closed
// first or the guard time passed.
func (l *watchLog) addr(done <-chan struct{}) string {
	select {
	case m := <-l.match:
		return m[1]
	case <-done:
	case <-time.After(serveGuard):
	}
	return ""
}

// servedBroker is a 'commitlog serve' running as a subprocess.
type servedBroker struct {
	addr    string
	dir     string
	cmd     *exec.Cmd
	log     *watchLog
	exited  chan struct{} // closed once the process has been waited for
	waitErr error
}

// startServe runs 'commitlog --dir dir serve --listen 127.0.0.1:0 args...' (the built
// command), waits for its listening line, and kills it at the test's end unless stopped.
func startServe(t testing.TB, dir string, args ...string) *servedBroker {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("serve's tests stop it with SIGTERM, which Windows does not have")
	}
	b := &servedBroker{dir: dir, log: newServeLog(), exited: make(chan struct{})}
	b.cmd = exec.Command(command(t), append([]string{"--dir", dir, "serve", "--listen", "127.0.0.1:0"}, args...)...)
	b.cmd.Stdout = io.Discard
	b.cmd.Stderr = b.log
	require.NoError(t, b.cmd.Start())
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-b.exited:
		default:
			b.cmd.Process.Kill()
			<-b.exited
		}
	})
	if b.addr = b.log.addr(b.exited); b.addr == "" {
		t.Fatalf("serve did not say where it listens (within %s): %v\nstderr:\n%s", serveGuard, b.waitErr, b.log)
	}
	return b
}

// stop sends sig and returns the exit code once the process has ended.
func (b *servedBroker) stop(t testing.TB, sig os.Signal) int {
	t.Helper()
	require.NoError(t, b.cmd.Process.Signal(sig))
	select {
	case <-b.exited:
	case <-time.After(serveGuard):
		t.Fatalf("serve did not exit within %s of %v\nstderr:\n%s", serveGuard, sig, b.log)
	}
	var ee *exec.ExitError
	if errors.As(b.waitErr, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, b.waitErr)
	return 0
}

// kgoClient returns a franz-go client of the broker at addr, closed when the test ends.
func kgoClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// storedRecord is a record as the tests compare it: key, value and headers.
type storedRecord struct {
	key, value string
	headers    string // name=value,...
}

// position is a record's place.
type position struct {
	partition int32
	offset    int64
}

// produceKgo produces n records to topic with kgo and returns each one's place as the broker
// acknowledged it.
func produceKgo(t testing.TB, ctx context.Context, addr, topic string, n int) map[position]storedRecord {
	t.Helper()
	cl := kgoClient(t, addr, kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Key:     fmt.Appendf(nil, "key-%d", i%7),
			Value:   fmt.Appendf(nil, "value-%d", i),
			Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
		}
	}
	res := cl.ProduceSync(ctx, recs...)
	require.NoError(t, res.FirstErr())
	acked := map[position]storedRecord{}
	for _, r := range res {
		acked[position{r.Record.Partition, r.Record.Offset}] = storedRecord{
			key: string(r.Record.Key), value: string(r.Record.Value), headers: "i=" + string(r.Record.Headers[0].Value),
		}
	}
	require.Len(t, acked, n, "every record has its own place")
	return acked
}

// consumeKgo reads n records of topic from the start with kgo.
func consumeKgo(t testing.TB, ctx context.Context, addr, topic string, n int) map[position]storedRecord {
	t.Helper()
	cl := kgoClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[position]storedRecord{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) {
			var h []string
			for _, rh := range r.Headers {
				h = append(h, rh.Key+"="+string(rh.Value))
			}
			got[position{r.Partition, r.Offset}] = storedRecord{key: string(r.Key), value: string(r.Value), headers: strings.Join(h, ",")}
		})
	}
	return got
}

// storeRecords opens the store in dir (serve must have closed it) and returns every record of
// topic, with its partition count.
func storeRecords(t testing.TB, dir, topic string) (map[position]storedRecord, int32) {
	t.Helper()
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err, "the store reopens after serve stopped")
	defer func() { require.NoError(t, s.Close()) }()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	out := map[position]storedRecord{}
	for id := range tp.PartitionCount() {
		p, err := tp.Partition(id)
		require.NoError(t, err)
		for r, err := range p.Scan(0) {
			require.NoError(t, err)
			var h []string
			for _, rh := range r.Headers {
				h = append(h, rh.Key+"="+string(rh.Value))
			}
			out[position{r.Partition, r.Offset}] = storedRecord{key: string(r.Key), value: string(r.Value), headers: strings.Join(h, ",")}
		}
	}
	return out, tp.PartitionCount()
}

// TestServeKgoSIGTERM runs 'commitlog serve' on a new store directory, creates a topic through
// it (CreateTopics with the default partition count, which --partitions sets), produces and
// consumes with franz-go, stops it with SIGTERM, and checks that it exited 0 and that the store
// reopens holding exactly the records acknowledged, where they were acknowledged.
func TestServeKgoSIGTERM(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store") // created by serve
			b := startServe(t, dir, "--partitions", "3", "--cluster-id", "serve-test", "--node-id", "7")
			m := listeningRE.FindStringSubmatch(b.log.String())
			require.Equal(t, []string{b.addr, "7", "serve-test"}, m[2:], "advertised as the listen address by default")
			ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
			defer cancel()

			adm := kadm.NewClient(kgoClient(t, b.addr))
			meta, err := adm.BrokerMetadata(ctx)
			require.NoError(t, err)
			require.Equal(t, "serve-test", meta.Cluster)
			require.Equal(t, int32(7), meta.Controller)
			require.Len(t, meta.Brokers, 1)
			require.Equal(t, int32(7), meta.Brokers[0].NodeID)
			created, err := adm.CreateTopic(ctx, -1, -1, nil, "events")
			require.NoError(t, err)
			require.NoError(t, created.Err)
			require.Equal(t, int32(3), created.NumPartitions, "CreateTopics with -1 takes --partitions")

			const n = 300
			acked := produceKgo(t, ctx, b.addr, "events", n)
			parts := map[int32]bool{}
			for pos := range acked {
				parts[pos.partition] = true
			}
			require.Len(t, parts, 3, "seven keys spread over the three partitions")
			require.Equal(t, acked, consumeKgo(t, ctx, b.addr, "events", n))

			require.Equal(t, 0, b.stop(t, sig), "stderr:\n%s", b.log)
			require.Contains(t, b.log.String(), "commitlog serve: stopped; store "+dir+" closed\n")
			stored, partitions := storeRecords(t, dir, "events")
			require.Equal(t, int32(3), partitions)
			require.Equal(t, acked, stored)
		})
	}
}

// TestServeInProcess runs serve through the command's run function, as main does, and ends it
// by cancelling its context (what main's signal handler does), under the race detector: run
// returns 0 once Serve has answered and the store is closed, and the store holds the records.
func TestServeInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	log := newServeLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		code <- run(ctx, []string{"--dir", dir, "serve", "--listen", "127.0.0.1:0", "--auto-create-topics"},
			stdio{in: strings.NewReader(""), out: io.Discard, err: log})
	}()
	addr := log.addr(returned)
	if addr == "" {
		t.Fatalf("serve did not say where it listens (within %s)\n%s", serveGuard, log)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), serveGuard)
	defer pcancel()
	// A producer's Metadata request allowing auto-creation creates the topic, with one partition
	// (--partitions' default).
	cl := kgoClient(t, addr, kgo.AllowAutoTopicCreation())
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: "auto", Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)})
	}
	res := cl.ProduceSync(pctx, recs...)
	require.NoError(t, res.FirstErr())
	for i, r := range res {
		require.Equal(t, int32(0), r.Record.Partition)
		require.Equal(t, int64(i), r.Record.Offset)
	}
	cl.Close()

	cancel()
	select {
	case c := <-code:
		require.Equal(t, exitOK, c, "stderr:\n%s", log)
	case <-time.After(serveGuard):
		t.Fatalf("serve did not return within %s of its context's end\n%s", serveGuard, log)
	}
	stored, partitions := storeRecords(t, dir, "auto")
	require.Equal(t, int32(1), partitions)
	want := map[position]storedRecord{}
	for i := range 50 {
		want[position{0, int64(i)}] = storedRecord{key: "k", value: fmt.Sprintf("v%d", i)}
	}
	require.Equal(t, want, stored)
}

// TestServeListenFails: an address already taken is a data problem (exit 1) with one line
// naming it, and the store is left closed (another process can open it).
func TestServeListenFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "store")
	r := cli(t, nil, "--dir", dir, "serve", "--listen", ln.Addr().String())
	require.Equal(t, exitData, r.code)
	require.Empty(t, r.stdout)
	lines := outLines(r.stderr)
	require.Len(t, lines, 1, r.stderr)
	require.Contains(t, lines[0], "commitlog serve: listen on "+ln.Addr().String()+": ")
	if runtime.GOOS != "windows" {
		require.Contains(t, lines[0], "address already in use")
	}
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestServeSASL: with --sasl-credentials a client authenticates with SCRAM-SHA-256 and
// produces; a wrong password is refused with SASL_AUTHENTICATION_FAILED.
func TestServeSASL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	creds := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(creds, []byte("# test users\nalice:alice-secret\n"), 0o600))
	log := newServeLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		code <- run(ctx, []string{"--dir", dir, "serve", "--listen", "127.0.0.1:0", "--auto-create-topics",
			"--sasl-credentials", creds, "--sasl-mechanisms", "SCRAM-SHA-256"},
			stdio{in: strings.NewReader(""), out: io.Discard, err: log})
	}()
	addr := log.addr(returned)
	if addr == "" {
		t.Fatalf("serve did not say where it listens (within %s)\n%s", serveGuard, log)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), serveGuard)
	defer pcancel()
	good := kgoClient(t, addr, kgo.AllowAutoTopicCreation(),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	res := good.ProduceSync(pctx, &kgo.Record{Topic: "secure", Value: []byte("v")})
	require.NoError(t, res.FirstErr())
	require.Equal(t, int64(0), res[0].Record.Offset)
	good.Close()

	bad := kgoClient(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()),
		kgo.RequestRetries(0))
	err := bad.Ping(pctx)
	require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	bad.Close()

	cancel()
	select {
	case c := <-code:
		require.Equal(t, exitOK, c, "stderr:\n%s", log)
	case <-time.After(serveGuard):
		t.Fatalf("serve did not return within %s of its context's end\n%s", serveGuard, log)
	}
}
