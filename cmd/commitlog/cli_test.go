package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// TestUsageErrors: a mistake on the command line exits 2 with one line on standard error and
// nothing on standard output.
func TestUsageErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("a\n"), "--dir", dir, "produce", "--topic", "t")
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"--nope"},
		{"produce"},
		{"produce", "--topic", "t", "--format", "xml"},
		{"produce", "--topic", "t", "--key-field", "origin"},
		{"produce", "--topic", "t", "--format", "csv", "--key-delim", ","},
		{"produce", "--topic", "t", "--format", "csv", "--time-layout", "2006"},
		{"produce", "--topic", "t", "--sync", "sometimes"},
		{"produce", "--topic", "t", "--compression", "brotli"},
		{"produce", "--topic", "t", "--segment-bytes", "lots"},
		{"produce", "--topic", "t", "--retention", "a while"},
		{"produce", "--topic", "t", "--partitions", "0"},
		{"produce", "--topic", "no/slashes"},
		{"produce", "--topic", "t", "--cleanup-policy", "retain"},
		{"produce", "--topic", "t", "--min-cleanable-dirty-ratio", "0"},
		{"produce", "--topic", "t", "--min-cleanable-dirty-ratio", "1.5"},
		{"produce", "--topic", "t", "--delete-retention", "soon"},
		{"produce", "--topic", "t", "--delete-retention", "500us"},
		{"produce", "--topic", "t", "--min-compaction-lag", "-1m"},
		{"produce", "--topic", "t", "--max-compaction-lag", "1ns"},
		{"produce", "--topic", "t", "--cleaner-threads", "-1"},
		{"consume"},
		{"consume", "--topic", "t", "--from", "yesterday"},
		{"consume", "--topic", "t", "--from", "@noon"},
		{"consume", "--topic", "t", "--format", `%z\n`},
		{"consume", "--topic", "t", "--reset", "sometimes"},
		{"consume", "--topic", "t", "--reader", "bad name"},
		{"consume", "--topic", "t", "extra"},
		{"consume", "--topic", "t", "--partition", "-5", "--exit-at-end"},
		{"topics", "--partitions", "3"},
		{"--dir", "", "topics"},
		{"groups", "extra"},
		{"groups", "--state", "sleepy"},
		{"groups", "describe"},
		{"groups", "describe", "g", "--members", "--state"},
		{"groups", "delete"},
		{"groups", "reset-offsets", "g", "--topic", "t"},
		{"groups", "reset-offsets", "g", "--to-latest"},
		{"groups", "reset-offsets", "g", "--topic", "t:", "--to-latest"},
		{"dump"},
		{"verify", "extra"},
		{"serve", "extra"},
		{"serve", "--listen", "9092"},
		{"serve", "--listen", "127.0.0.1:65536"},
		{"serve", "--advertise", "kafka.internal"},
		{"serve", "--advertise", "0.0.0.0:9092"},
		{"serve", "--advertise", "kafka.internal:0"},
		{"serve", "--node-id", "-1"},
		{"serve", "--cluster-id", ""},
		{"serve", "--partitions", "0"},
		{"serve", "--max-connections", "0"},
		{"serve", "--max-request-bytes", "lots"},
		{"serve", "--max-request-bytes", "100"},
		{"serve", "--max-request-bytes", "4GiB"},
		{"serve", "--tls"},
	} {
		r := cli(t, strings.NewReader(""), append([]string{"--dir", dir}, args...)...)
		lines := outLines(r.stderr)
		if r.code != 2 || len(lines) != 1 || r.stdout != "" {
			t.Errorf("commitlog %s: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}

// TestDataErrors: an unknown topic or partition, a missing store, and input that does not
// parse exit 1 with one line.
func TestDataErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("k:v\n"), "--dir", dir, "produce", "--topic", "t", "--key-delim", ":")
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"consume", "--topic", "nope"}, "", `unknown topic "nope"`},
		{[]string{"consume", "--topic", "t", "--partition", "7"}, "", "no partition 7"},
		{[]string{"topics", "nope"}, "", `unknown topic "nope"`},
		{[]string{"compact", "nope"}, "", `unknown topic "nope"`},
		{[]string{"compact", "t"}, "", `topic "t" has cleanup.policy delete, which does not compact`},
		{[]string{"--dir", filepath.Join(dir, "missing"), "compact"}, "", "no store"},
		{[]string{"--dir", filepath.Join(dir, "missing"), "consume", "--topic", "t"}, "", "no store"},
		{[]string{"--dir", filepath.Join(dir, "missing"), "verify"}, "", "no store"},
		{[]string{"produce", "--topic", "j", "--format", "jsonl", "--key-field", "k"}, "{\"k\":1}\nnot json\n", "standard input:2: not a JSON object"},
		{[]string{"produce", "--topic", "c", "--format", "csv", "--key-field", "origin"}, "a,b\n1,2\n", `no key column "origin"`},
		{[]string{"produce", "--topic", "c2", "--format", "csv", "--time-field", "ts"}, "ts\nlater\n", `standard input:2: time field "ts"`},
		{[]string{"produce", "--topic", "t", filepath.Join(dir, "no-such-file")}, "", "no-such-file"},
	} {
		args := c.args
		if args[0] != "--dir" {
			args = append([]string{"--dir", dir}, args...)
		}
		r := cli(t, strings.NewReader(c.stdin), args...)
		lines := outLines(r.stderr)
		if r.code != 1 || len(lines) == 0 || !strings.Contains(lines[len(lines)-1], c.want) {
			t.Errorf("commitlog %s: exit %d, stderr %q; want exit 1 and a line with %q", strings.Join(args, " "), r.code, r.stderr, c.want)
		}
		if !strings.HasPrefix(args[2], "produce") && len(lines) != 1 {
			t.Errorf("commitlog %s: %d lines on stderr, want one: %q", strings.Join(args, " "), len(lines), r.stderr)
		}
	}
	// The record before the line that does not parse was appended: one JSON record.
	r := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "j", "--exit-at-end", "--format", `%k %s\n`)
	if r.stdout != "1 {\"k\":1}\n" {
		t.Errorf("records before the bad line: %q", r.stdout)
	}
}

// TestNamedReaderContinues: a named reader commits where it stopped, and the next run with the
// name continues there; topics shows its lag.
func TestNamedReaderContinues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "k%d|v%d\n", i%5, i)
	}
	mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "--topic", "ev", "--partitions", "2", "--key-delim", "|")
	first := outLines(mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--count", "30", "--format", `%p %o\n`).stdout)
	if len(first) != 30 {
		t.Fatalf("first run read %d records, want 30", len(first))
	}
	top := mustCLI(t, nil, "--dir", dir, "topics").stdout
	if !regexp.MustCompile(`loader=\d+`).MatchString(top) {
		t.Fatalf("topics shows no lag for the reader:\n%s", top)
	}
	rest := outLines(mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--exit-at-end", "--format", `%p %o\n`).stdout)
	seen := map[string]bool{}
	for _, l := range append(first, rest...) {
		if seen[l] {
			t.Fatalf("record %s read twice", l)
		}
		seen[l] = true
	}
	if len(seen) != 100 {
		t.Fatalf("the two runs read %d records between them, want 100", len(seen))
	}
	top = mustCLI(t, nil, "--dir", dir, "topics").stdout
	if strings.Count(top, "loader=0") != 2 {
		t.Fatalf("after reading everything the reader's lag is not 0 in both partitions:\n%s", top)
	}
	// A third run has nothing to read.
	if r := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--exit-at-end"); r.stdout != "" {
		t.Fatalf("third run read %q", r.stdout)
	}
	// --from -N: the last N of each partition; --partition: one partition only.
	last := outLines(mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--from", "-3", "--exit-at-end", "--format", `%p %o\n`).stdout)
	if len(last) != 6 {
		t.Fatalf("--from -3 read %d records, want 6 (3 of each partition)", len(last))
	}
	one := outLines(mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--partition", "1", "--from", "2", "--count", "2", "--format", `%p %o %k\n`).stdout)
	if len(one) != 2 || !strings.HasPrefix(one[0], "1 2 ") || !strings.HasPrefix(one[1], "1 3 ") {
		t.Fatalf("--partition 1 --from 2 --count 2: %q", one)
	}
}

// TestNamedReaderExitAtEndAfterTruncation: a named reader committed 120; the log was then
// truncated to 100 and refilled with 100..109 only, so the committed position lies past the log
// end. consume --exit-at-end must still read the partition (the reader's reset policy moves it
// to the divergence point, 100, as Kafka's consumer does under KIP-320) and print the new
// 100..109, not take the position past the end for "done" and print nothing.
func TestNamedReaderExitAtEndAfterTruncation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for _, r := range [][2]int{{0, 100}, {100, 150}} {
		var in strings.Builder
		for i := r[0]; i < r[1]; i++ {
			fmt.Fprintf(&in, "old-%d\n", i)
		}
		mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "--topic", "ev")
	}
	first := outLines(mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--count", "120", "--format", `%o %s\n`).stdout)
	require.Len(t, first, 120)
	require.Equal(t, "119 old-119", first[119])

	s, err := commitlog.Open(dir)
	require.NoError(t, err)
	tp, err := s.Topic("ev")
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	require.NoError(t, p.TruncateTo(100))
	require.Equal(t, int64(100), p.LogEndOffset())
	var want []string
	for i := 100; i < 110; i++ {
		require.NoError(t, p.Append(context.Background(), &commitlog.Record{Value: fmt.Appendf(nil, "new-%d", i)}))
		want = append(want, fmt.Sprintf("%d new-%d", i, i))
	}
	require.NoError(t, s.Close())

	rest := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--exit-at-end", "--format", `%o %s\n`)
	require.Equal(t, want, outLines(rest.stdout))
	// It committed where it stopped: a third run has nothing to read.
	require.Empty(t, mustCLI(t, nil, "--dir", dir, "consume", "--topic", "ev", "--reader", "loader", "--exit-at-end").stdout)
}

// TestFormatTokens: kcat's tokens.
func TestFormatTokens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("k1\tv1\nnokey\n"), "--dir", dir, "produce", "--topic", "fmt", "--key-delim", "\t")
	r := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "fmt", "--exit-at-end", "--format", `%t|%p|%o|%k|%s|%K|%S|%h|100%%\n`)
	want := "fmt|0|0|k1|v1|2|2||100%\nfmt|0|1||nokey|-1|5||100%\n"
	if r.stdout != want {
		t.Fatalf("got %q, want %q", r.stdout, want)
	}
}
