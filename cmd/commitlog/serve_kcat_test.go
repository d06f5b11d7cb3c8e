package main

// librdkafka compatibility: kcat (librdkafka's command-line client) against 'commitlog serve',
// the built command, as an operator would run both. The tests skip when kcat is not on PATH
// (Debian's package kcat; .ci/run installs it).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
)

// kcatRunner runs kcat against one broker.
type kcatRunner struct {
	path string
	addr string
	home string // an empty $HOME: no kcat.conf of the machine's user
}

// requireKcat returns kcat's path, skipping the test when kcat is not installed.
func requireKcat(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not on PATH: these librdkafka compatibility tests need it (Debian: apt-get install kcat; .ci/run installs it)")
	}
	return path
}

// newKcat returns a runner of the kcat at path against addr.
func newKcat(t testing.TB, path, addr string) *kcatRunner {
	return &kcatRunner{path: path, addr: addr, home: t.TempDir()}
}

// command returns kcat with args (after -b addr), its standard input stdin.
func (k *kcatRunner) command(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.path, append([]string{"-b", k.addr}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.home)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// run runs kcat to its end and returns its standard output; a non-zero exit or a run past the
// guard time fails the test.
func (k *kcatRunner) run(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := k.try(t, stdin, args...)
	if err != nil {
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// try runs kcat to its end and returns its standard output and error and how it ended.
func (k *kcatRunner) try(t testing.TB, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
	defer cancel()
	cmd := k.command(ctx, stdin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s did not end within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), serveGuard, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}

// kcatFormat is the consumer's output format of these tests: key, value, headers, offset,
// partition.
const kcatFormat = `%k|%s|%h|%o|%p\n`

// codecs are kcat's -z values with their codec numbers in a batch's attributes (Kafka's
// CompressionType ids).
var codecs = []struct {
	name string
	id   int16
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// codecLines returns n input lines for kcat -P -K: whose values compress well (librdkafka sends a
// batch uncompressed when compression does not make it smaller), and the lines kcat -C prints for
// them with kcatFormat, header h=codec, from offset 0 of partition 0.
func codecLines(codec string, n int) (in, out string) {
	var ib, ob strings.Builder
	for i := range n {
		k := fmt.Sprintf("%s-key-%d", codec, i)
		v := fmt.Sprintf("%s-value-%d %s", codec, i, strings.Repeat("compressible text ", 12))
		fmt.Fprintf(&ib, "%s:%s\n", k, v)
		fmt.Fprintf(&ob, "%s|%s|h=%s|%d|0\n", k, v, codec, i)
	}
	return ib.String(), ob.String()
}

// createTopics creates topics in a new store in dir (before serve opens it): name → partitions.
func createTopics(t testing.TB, dir string, topics map[string]int32) {
	t.Helper()
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	for name, n := range topics {
		_, err := s.CreateTopic(name, commitlog.TopicConfig{Partitions: n})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
}

// TestKcatProduceConsume runs librdkafka's kcat against 'commitlog serve': produce with keys,
// headers and each compression codec, consume from beginning, end, absolute and relative offsets
// and timestamps with -e, query offsets for times (-Q), list metadata (-L), then stop the broker
// and check in the store that librdkafka's compressed batches were stored compressed, as sent.
func TestKcatProduceConsume(t *testing.T) {
	kcatPath := requireKcat(t)
	dir := filepath.Join(t.TempDir(), "store")
	topics := map[string]int32{"plain": 1, "offsets": 1, "times": 1, "listed": 3}
	for _, c := range codecs {
		topics["z-"+c.name] = 1
	}
	createTopics(t, dir, topics)
	b := startServe(t, dir)
	k := newKcat(t, kcatPath, b.addr)

	t.Run("keys and headers", func(t *testing.T) {
		k.run(t, "k1:v1\nk2:v2\nk3:v3\n", "-P", "-t", "plain", "-p", "0", "-K:", "-H", "a=b", "-H", "trace=x=y")
		got := k.run(t, "", "-C", "-t", "plain", "-p", "0", "-o", "beginning", "-e", "-q", "-f", kcatFormat)
		require.Equal(t, "k1|v1|a=b,trace=x=y|0|0\nk2|v2|a=b,trace=x=y|1|0\nk3|v3|a=b,trace=x=y|2|0\n", got)
	})

	for _, c := range codecs {
		t.Run("compression "+c.name, func(t *testing.T) {
			in, want := codecLines(c.name, 20)
			k.run(t, in, "-P", "-t", "z-"+c.name, "-p", "0", "-K:", "-H", "h="+c.name, "-z", c.name)
			got := k.run(t, "", "-C", "-t", "z-"+c.name, "-p", "0", "-o", "beginning", "-e", "-q", "-f", kcatFormat)
			require.Equal(t, want, got)
		})
	}

	t.Run("offsets", func(t *testing.T) {
		k.run(t, "a:1\nb:2\nc:3\n", "-P", "-t", "offsets", "-p", "0", "-K:")
		consume := func(offset string) string {
			return k.run(t, "", "-C", "-t", "offsets", "-p", "0", "-o", offset, "-e", "-q", "-f", kcatFormat)
		}
		require.Equal(t, "a|1||0|0\nb|2||1|0\nc|3||2|0\n", consume("beginning"))
		require.Equal(t, "b|2||1|0\nc|3||2|0\n", consume("1"))
		require.Equal(t, "c|3||2|0\n", consume("-1"))
		require.Equal(t, "", consume("end"))

		// -o end: only what is produced after the consumer found the end. kcat says when it
		// reached the end (offset 3) on standard error; records produced after that are the
		// ones it prints, and -c 2 ends it after them.
		ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
		defer cancel()
		cmd := k.command(ctx, "", "-C", "-t", "offsets", "-p", "0", "-o", "end", "-c", "2", "-f", kcatFormat)
		var out bytes.Buffer
		reached := newWatchLog(regexp.MustCompile(`% Reached end of topic offsets \[0\] at offset (\d+)\n`))
		cmd.Stdout, cmd.Stderr = &out, reached
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case m := <-reached.match:
			require.Equal(t, "3", m[1])
		case err := <-done:
			t.Fatalf("kcat -o end exited before reaching the end: %v\n%s", err, reached)
		case <-ctx.Done():
			t.Fatalf("kcat -o end did not reach the end within %s\n%s", serveGuard, reached)
		}
		k.run(t, "d:4\ne:5\n", "-P", "-t", "offsets", "-p", "0", "-K:")
		select {
		case err := <-done:
			require.NoError(t, err, "stderr:\n%s", reached)
		case <-ctx.Done():
			t.Fatalf("kcat -o end -c 2 did not end within %s\nstdout:\n%s\nstderr:\n%s", serveGuard, out.String(), reached)
		}
		require.Equal(t, "d|4||3|0\ne|5||4|0\n", out.String())
	})

	t.Run("timestamps", func(t *testing.T) {
		// Records with known timestamps, an hour old (well inside the 7-day retention), one
		// second apart, written by franz-go.
		base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
		cl := kgoClient(t, b.addr)
		ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
		defer cancel()
		for i := range int64(4) {
			r := &kgo.Record{Topic: "times", Value: fmt.Appendf(nil, "t%d", i), Timestamp: time.UnixMilli(base + i*1000)}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
			require.Equal(t, i, r.Offset)
		}
		consume := func(args ...string) string {
			return k.run(t, "", append([]string{"-C", "-t", "times", "-p", "0", "-e", "-q", "-f", `%o|%T|%s\n`}, args...)...)
		}
		line := func(i int64) string { return fmt.Sprintf("%d|%d|t%d\n", i, base+i*1000, i) }
		require.Equal(t, line(0)+line(1)+line(2)+line(3), consume("-o", "beginning"))
		require.Equal(t, line(2)+line(3), consume("-o", "s@"+strconv.FormatInt(base+1500, 10)), "the first record at or after the time")
		require.Equal(t, line(1)+line(2)+line(3), consume("-o", "s@"+strconv.FormatInt(base+1000, 10)), "a record exactly at the time is included")
		require.Equal(t, "", consume("-o", "s@"+strconv.FormatInt(base+10_000, 10)), "after every record: from the end")
		require.Equal(t, line(0)+line(1), consume("-o", "s@"+strconv.FormatInt(base, 10), "-o", "e@"+strconv.FormatInt(base+2000, 10)))
		// -Q: ListOffsets by timestamp.
		require.Equal(t, "times [0] offset 2\n", k.run(t, "", "-Q", "-t", "times:0:"+strconv.FormatInt(base+1500, 10)))
	})

	t.Run("metadata", func(t *testing.T) {
		want := fmt.Sprintf(`Metadata for listed (from broker 0: %[1]s/0):
 1 brokers:
  broker 0 at %[1]s (controller)
 1 topics:
  topic "listed" with 3 partitions:
    partition 0, leader 0, replicas: 0, isrs: 0
    partition 1, leader 0, replicas: 0, isrs: 0
    partition 2, leader 0, replicas: 0, isrs: 0
`, b.addr)
		require.Equal(t, want, k.run(t, "", "-L", "-t", "listed"))

		var all struct {
			Brokers []struct {
				ID   int32  `json:"id"`
				Name string `json:"name"`
			} `json:"brokers"`
			Topics []struct {
				Topic      string `json:"topic"`
				Partitions []struct {
					Partition int32 `json:"partition"`
					Leader    int32 `json:"leader"`
				} `json:"partitions"`
			} `json:"topics"`
		}
		require.NoError(t, json.Unmarshal([]byte(k.run(t, "", "-L", "-J")), &all))
		require.Len(t, all.Brokers, 1)
		require.Equal(t, b.addr, all.Brokers[0].Name)
		listed := map[string]int32{}
		for _, tp := range all.Topics {
			listed[tp.Topic] = int32(len(tp.Partitions))
		}
		require.Equal(t, topics, listed, "-L without -t lists every topic with its partitions")

		// Without --auto-create-topics an unknown topic stays unknown: listed with Kafka's
		// UNKNOWN_TOPIC_OR_PARTITION, not created.
		require.Contains(t, k.run(t, "", "-L", "-t", "nosuch"),
			"\n  topic \"nosuch\" with 0 partitions: Broker: Unknown topic or partition\n")
	})

	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)

	// librdkafka compresses only when the broker advertises Produce from v0 (KAFKA-18659): every
	// batch it sent with -z is stored with that codec in its attributes, and the plain topic's
	// are not compressed.
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer s.Close()
	for _, c := range codecs {
		recs, codecsSeen := storedBatches(t, s, "z-"+c.name)
		require.Equal(t, int64(20), recs, c.name)
		require.Equal(t, []int16{c.id}, codecsSeen, "%s: the codecs of the stored batches", c.name)
	}
	recs, codecsSeen := storedBatches(t, s, "plain")
	require.Equal(t, int64(3), recs)
	require.Equal(t, []int16{0}, codecsSeen)
}

// storedBatches reads every batch of partition 0 of topic and returns the number of records in
// them and the compression codecs they have (sorted, each once).
func storedBatches(t testing.TB, s *commitlog.Store, topic string) (int64, []int16) {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	var recs int64
	var seen []int16
	for off := p.LogStartOffset(); off < p.LogEndOffset(); {
		raw, err := p.ReadBatches(nil, off, 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, raw)
		for len(raw) > 0 {
			var rb kmsg.RecordBatch
			require.NoError(t, rb.ReadFrom(raw))
			size := 12 + int(rb.Length)
			raw = raw[size:]
			recs += int64(rb.NumRecords)
			if codec := rb.Attributes & 0x07; !slices.Contains(seen, codec) {
				seen = append(seen, codec)
			}
			off = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		}
	}
	slices.Sort(seen)
	return recs, seen
}

// TestKcatAutoCreate: with --auto-create-topics, librdkafka's producer creates the topic it
// produces to, with --partitions partitions, and a consumer of every partition (-C without -p)
// reads all the records back with their keys.
func TestKcatAutoCreate(t *testing.T) {
	kcatPath := requireKcat(t)
	dir := filepath.Join(t.TempDir(), "store")
	b := startServe(t, dir, "--auto-create-topics", "--partitions", "3")
	k := newKcat(t, kcatPath, b.addr)
	var in strings.Builder
	var want []string
	for i := range 30 {
		fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		want = append(want, fmt.Sprintf("key-%d|value-%d", i, i))
	}
	k.run(t, in.String(), "-P", "-t", "fresh", "-K:")
	require.Contains(t, k.run(t, "", "-L", "-t", "fresh"), "\n  topic \"fresh\" with 3 partitions:\n")

	out := k.run(t, "", "-C", "-t", "fresh", "-o", "beginning", "-e", "-q", "-f", `%k|%s|%p|%o\n`)
	var got []string
	next := map[string]int{} // partition → the offset expected next
	for _, l := range outLines(out) {
		f := strings.Split(l, "|")
		require.Len(t, f, 4, l)
		require.Equal(t, strconv.Itoa(next[f[2]]), f[3], "partition %s's offsets follow each other from 0: %q", f[2], l)
		next[f[2]]++
		got = append(got, f[0]+"|"+f[1])
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)
}

// TestKcatConsumerGroup: kcat's balanced consumer (-G, librdkafka's high-level KafkaConsumer:
// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup)
// consumes every record of a 3-partition topic, commits its positions at the end of each
// partition when it closes, and a second run of the group finds nothing left to read.
func TestKcatConsumerGroup(t *testing.T) {
	kcatPath := requireKcat(t)
	dir := filepath.Join(t.TempDir(), "store")
	createTopics(t, dir, map[string]int32{"grouped": 3})
	b := startServe(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
	defer cancel()
	cl := kgoClient(t, b.addr)
	k := newKcat(t, kcatPath, b.addr)
	var in strings.Builder
	var want []string
	for i := range 60 {
		fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		want = append(want, fmt.Sprintf("key-%d|value-%d", i, i))
	}
	k.run(t, in.String(), "-P", "-t", "grouped", "-K:")
	// Where each partition ends, for the committed positions.
	ends := map[int32]int64{}
	for _, l := range outLines(k.run(t, "", "-C", "-t", "grouped", "-o", "beginning", "-e", "-q", "-f", `%p %o\n`)) {
		var p int32
		var o int64
		_, err := fmt.Sscanf(l, "%d %d", &p, &o)
		require.NoError(t, err)
		ends[p] = max(ends[p], o+1)
	}

	group := []string{"-G", "kcat-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", `%k|%s|%p|%o\n`, "grouped"}
	out := k.run(t, "", group...)
	var got []string
	for _, l := range outLines(out) {
		f := strings.Split(l, "|")
		require.Len(t, f, 4, l)
		got = append(got, f[0]+"|"+f[1])
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got, "the group's only member reads every record once")

	adm := kadm.NewClient(cl)
	committed, err := adm.FetchOffsets(ctx, "kcat-group")
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	positions := map[int32]int64{}
	committed.Each(func(o kadm.OffsetResponse) {
		require.Equal(t, "grouped", o.Topic)
		positions[o.Partition] = o.At
	})
	require.Equal(t, ends, positions, "the group committed the end of every partition")

	require.Equal(t, "", k.run(t, "", group...), "a second run of the group starts at its committed positions: nothing left")
	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)
}

// TestKcatSASL: kcat authenticates to 'commitlog serve --sasl-credentials' with each SASL
// mechanism (SASL_PLAINTEXT) as a user with a password line and as one with stored SCRAM
// credentials, produces and consumes back exact records; a wrong password fails with Kafka's
// messages. librdkafka before 2.6.1 (Debian 12's kcat links 2.0.2) sends its client nonce twice
// in SCRAM's client-final message, which the broker takes as Kafka 3.8.1 to 3.9 do.
func TestKcatSASL(t *testing.T) {
	kcatPath := requireKcat(t)
	dir := filepath.Join(t.TempDir(), "store")
	mechanisms := []string{broker.MechanismPlain, broker.MechanismSCRAMSHA256, broker.MechanismSCRAMSHA512}
	users := []struct{ user, pass string }{{"alice", "alice-secret"}, {"bob", "bob-secret"}}
	topics := map[string]int32{}
	for _, m := range mechanisms {
		for _, u := range users {
			topics[strings.ToLower(m)+"-"+u.user] = 1
		}
	}
	createTopics(t, dir, topics)
	lines := "alice:alice-secret\n"
	for _, m := range []string{broker.MechanismSCRAMSHA256, broker.MechanismSCRAMSHA512} {
		sc, err := broker.NewSCRAMCredential(m, "bob-secret", 8192)
		require.NoError(t, err)
		lines += fmt.Sprintf("bob:%s=[%s]\n", m, sc)
	}
	creds := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(creds, []byte(lines), 0o600))
	b := startServe(t, dir, "--sasl-credentials", creds)
	k := newKcat(t, kcatPath, b.addr)
	sasl := func(m, user, pass string) []string {
		return []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + m,
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass}
	}

	for _, m := range mechanisms {
		for _, u := range users {
			t.Run(m+"/"+u.user, func(t *testing.T) {
				topic := strings.ToLower(m) + "-" + u.user
				auth := sasl(m, u.user, u.pass)
				k.run(t, "k1:"+topic+"-1\nk2:"+topic+"-2\nk3:"+topic+"-3\n", append(auth, "-P", "-t", topic, "-p", "0", "-K:")...)
				got := k.run(t, "", append(auth, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", kcatFormat)...)
				want := fmt.Sprintf("k1|%[1]s-1||0|0\nk2|%[1]s-2||1|0\nk3|%[1]s-3||2|0\n", topic)
				require.Equal(t, want, got)
			})
		}
		t.Run(m+"/wrong password", func(t *testing.T) {
			// The producer ends as soon as its only broker connection failed.
			topic := strings.ToLower(m) + "-bob"
			out, errOut, err := k.try(t, "rejected\n", append(sasl(m, "bob", "wrong"), "-P", "-t", topic, "-p", "0")...)
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Equal(t, 1, ee.ExitCode())
			message := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + m
			if m == broker.MechanismPlain {
				message = "Authentication failed: Invalid username or password" // PlainSaslServer's
			}
			require.Contains(t, errOut, "SASL authentication error: "+message+" ")
			// Nothing was appended: the topic holds bob's three records only.
			got := k.run(t, "", append(sasl(m, "bob", "bob-secret"), "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", `%o\n`)...)
			require.Equal(t, "0\n1\n2\n", got)
		})
	}
	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)
}
