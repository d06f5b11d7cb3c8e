package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProduceCreatesTopicWithFirstRecord: a missing topic is created by the first append, so no
// input, or input that fails before any record, leaves no topic; --create makes it at once.
func TestProduceCreatesTopicWithFirstRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	r := mustCLI(t, strings.NewReader(""), "--dir", dir, "produce", "--topic", "empty")
	require.Equal(t, "produced 0 records (0 B) to empty", strings.SplitN(r.stderr, " in ", 2)[0])
	r = cli(t, strings.NewReader("not json\n"), "--dir", dir, "produce", "--topic", "bad", "--format", "jsonl")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "commitlog produce: standard input:1: not valid JSON\n")
	require.NoDirExists(t, filepath.Join(dir, "empty-0"))
	require.NoDirExists(t, filepath.Join(dir, "bad-0"))
	r = mustCLI(t, nil, "--dir", dir, "topics")
	require.Equal(t, "", r.stdout)

	mustCLI(t, strings.NewReader(""), "--dir", dir, "produce", "--topic", "made", "--create", "--partitions", "2")
	require.DirExists(t, filepath.Join(dir, "made-0"))
	require.DirExists(t, filepath.Join(dir, "made-1"))

	r = mustCLI(t, strings.NewReader("one\n"), "--dir", dir, "produce", "--topic", "later", "--partitions", "3")
	require.Equal(t, "produced 1 record (3 B) to later", strings.SplitN(r.stderr, " in ", 2)[0])
	require.DirExists(t, filepath.Join(dir, "later-2"))
}

// TestProducePartitionCeiling: a partition count past MaxPartitions is a usage error given
// before any work: no store directory is made.
func TestProducePartitionCeiling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for _, n := range []string{"4001", "100000", "2147483647"} {
		r := cli(t, strings.NewReader("a\n"), "--dir", dir, "produce", "--topic", "t", "--partitions", n)
		require.Equal(t, 2, r.code, n)
		require.Equal(t, "commitlog produce: --partitions "+n+": a topic has 1 to 4000 partitions (commitlog.MaxPartitions, Kafka's guidance per broker) (see 'commitlog produce --help')\n", r.stderr)
		_, err := os.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist)
	}
}

// TestProduceHeadersAndNull: kcat's -H puts headers on every record, -Z makes an empty value
// null, -K splits the key.
func TestProduceHeadersAndNull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("k1:v1\nk2:\n"), "--dir", dir, "produce", "-t", "h", "-K", ":", "-Z", "-H", "a=1", "-H", "b=x=y")
	mustCLI(t, strings.NewReader("k3:\n"), "--dir", dir, "produce", "-t", "h", "-K", ":")
	r := mustCLI(t, nil, "--dir", dir, "consume", "-t", "h", "-e", "-f", `%o %k %S [%h]\n`)
	require.Equal(t, "0 k1 2 [a=1,b=x=y]\n1 k2 -1 [a=1,b=x=y]\n2 k3 0 []\n", r.stdout)
	r = cli(t, strings.NewReader("x\n"), "--dir", dir, "produce", "-t", "h", "-H", "novalue")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--header "novalue": want name=value`)
}

// TestProduceWarnsOldRecords: records older than the topic's retention.ms get one warning on
// standard error (the next retention check deletes them); none under --retention forever, and
// none with -q.
func TestProduceWarnsOldRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	old := "{\"t\":978307200000}\n{\"t\":978307260000}\n"
	r := mustCLI(t, strings.NewReader(old), "--dir", dir, "produce", "-t", "old", "--format", "jsonl", "--time-field", "t", "--batch-records", "1")
	warns := 0
	for _, l := range outLines(r.stderr) {
		if strings.Contains(l, "level=WARN") {
			warns++
			require.Contains(t, l, `msg="records older than the topic's retention.ms: the next retention check deletes them`)
			require.Contains(t, l, "topic=old retention.ms=604800000 timestamp=2001-01-01T00:00:00Z")
		}
	}
	require.Equal(t, 1, warns, r.stderr)
	r = mustCLI(t, strings.NewReader(old), "--dir", dir, "produce", "-t", "kept", "--format", "jsonl", "--time-field", "t", "--retention", "forever")
	require.NotContains(t, r.stderr, "level=WARN")
	r = mustCLI(t, strings.NewReader(old), "--dir", dir, "-q", "produce", "-t", "old", "--format", "jsonl", "--time-field", "t")
	require.NotContains(t, r.stderr, "level=WARN")
	require.Contains(t, r.stderr, "produced 2 records")
}
