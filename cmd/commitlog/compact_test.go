package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// compactedTopic produces n records "k<i%keys>:v<i, 3 digits>" to a new compacted topic, one
// record per batch into 1 KiB segments, with no background cleaner (so that only the compact
// command cleans).
func compactedTopic(t *testing.T, dir, topic string, n, keys int, extra ...string) {
	t.Helper()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "k%d:v%03d\n", i%keys, i)
	}
	args := append([]string{"--dir", dir, "produce", "--topic", topic, "--key-delim", ":", "--cleanup-policy", "compact",
		"--segment-bytes", "1KiB", "--batch-records", "1", "--cleaner-threads", "0"}, extra...)
	mustCLI(t, strings.NewReader(in.String()), args...)
}

// tableRows returns the fields of the rows of a table the command printed, the header checked
// and left out.
func tableRows(t *testing.T, out, header string) [][]string {
	t.Helper()
	lines := outLines(out)
	require.NotEmpty(t, lines)
	require.Equal(t, header, strings.Join(strings.Fields(lines[0]), " "))
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

const (
	topicsHeader  = "TOPIC PARTITION START END STABLE OPEN TXNS SIZE SEGMENTS POLICY CLEANER POINT DIRTY RATIO READERS (lag)"
	compactHeader = "TOPIC PASSES BYTES READ BYTES WRITTEN RECORDS READ RECORDS REMOVED SEGMENTS CLEANER POINT"
)

// TestCompactCommand: a topic created compacted by produce, cleaned by compact, keeps the
// latest record of every key below the active segment and every record of the active segment,
// at their offsets; compact prints what the clean did and topics the cleaner point and dirty
// ratio before and after.
//
// Every record is its own batch of 74 bytes (a 61-byte batch header and a 13-byte record:
// length, attributes, timestamp delta, offset delta, key length, "k0", value length, "v000",
// header count), so 13 batches fill a 1 KiB segment: 40 records make segments at 0, 13, 26 and
// the active one at 39. The clean reads offsets 0..38 twice (the offset map, then the copy):
// 2*39*74 = 5772 bytes, and keeps the latest of each key below 39: k3@35, k0@36, k1@37,
// k2@38, 4 batches of 296 bytes, removing 35 of the 39 records. The three sealed segments are
// cleaned one by one (two of 962 bytes exceed segment.bytes together, Kafka's
// groupSegmentsBySize), so 3 segments become 3.
func TestCompactCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	compactedTopic(t, dir, "users", 40, 4)

	require.Equal(t, [][]string{{"users", "0", "0", "40", "-", "0", "2960", "4", "compact", "0", "1.00", "-"}},
		tableRows(t, mustCLI(t, nil, "--dir", dir, "topics").stdout, topicsHeader))

	r := mustCLI(t, nil, "--dir", dir, "compact", "users")
	require.Equal(t, [][]string{{"users", "1", "5772", "296", "39", "35", "3", "->", "3", "39"}},
		tableRows(t, r.stdout, compactHeader))
	require.Empty(t, r.stderr)

	all := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "users", "--exit-at-end", "--format", `%o %k %s\n`)
	require.Equal(t, []string{"35 k3 v035", "36 k0 v036", "37 k1 v037", "38 k2 v038", "39 k3 v039"}, outLines(all.stdout))
	// A read at a removed offset returns the next record.
	at10 := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "users", "--from", "10", "--count", "1", "--format", `%o %k %s\n`)
	require.Equal(t, "35 k3 v035\n", at10.stdout)

	// The cleaner point is 39 (the active segment's base); the clean part is the 296 bytes of
	// the segment at 26 (those at 0 and 13 are empty, as Kafka's cleaner leaves them, merged by
	// the next clean), and nothing is dirty. Offsets stay: start 0, end 40.
	require.Equal(t, [][]string{{"users", "0", "0", "40", "-", "0", "370", "4", "compact", "39", "0.00", "-"}},
		tableRows(t, mustCLI(t, nil, "--dir", dir, "topics", "users").stdout, topicsHeader))

	// Nothing more to clean: no pass, the cleaner point where it was.
	again := mustCLI(t, nil, "--dir", dir, "compact")
	require.Equal(t, [][]string{{"users", "0", "0", "0", "0", "0", "0", "->", "0", "39"}},
		tableRows(t, again.stdout, compactHeader))
}

// TestCompactCommandAfterMoreRecords: records appended after a clean are cleaned by the next,
// from the cleaner point on, with the clean part again.
func TestCompactCommandAfterMoreRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	compactedTopic(t, dir, "users", 40, 4)
	mustCLI(t, nil, "--dir", dir, "compact", "users")
	// 26 more records (offsets 40..65, keys k0..k1 alternately): the active segment at 39 fills
	// with 39..51 and rolls, 52..64 fill the next, 65 opens the active one.
	var in strings.Builder
	for i := 40; i < 66; i++ {
		fmt.Fprintf(&in, "k%d:v%03d\n", i%2, i)
	}
	mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "--topic", "users", "--key-delim", ":",
		"--batch-records", "1", "--cleaner-threads", "0")
	top := tableRows(t, mustCLI(t, nil, "--dir", dir, "topics").stdout, topicsHeader)
	// Clean: 370 - 74 = 296 bytes in segments 0, 13, 26; dirty: 39 and 52, 962 bytes each.
	require.Equal(t, [][]string{{"users", "0", "0", "66", "-", "0", "2294", "6", "compact", "39", "0.87", "-"}}, top)

	// The offset map reads the dirty 39..64, 26*74 = 1924 bytes; the copy the five sealed
	// segments, 296 + 1924 bytes, 4 + 26 records, grouped by size into the segments at 0 (0, 13
	// and 26: 296 bytes), 39 and 52. It keeps the latest of each key below 65, k2@38, k3@39,
	// k1@63 and k0@64: 296 bytes, 26 records removed.
	r := mustCLI(t, nil, "--dir", dir, "compact", "users")
	require.Equal(t, [][]string{{"users", "1", "4144", "296", "30", "26", "5", "->", "3", "65"}},
		tableRows(t, r.stdout, compactHeader))

	all := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "users", "--exit-at-end", "--format", `%o %k %s\n`)
	require.Equal(t, []string{"38 k2 v038", "39 k3 v039", "63 k1 v063", "64 k0 v064", "65 k1 v065"}, outLines(all.stdout))
	require.Equal(t, [][]string{{"users", "0", "0", "66", "-", "0", "370", "4", "compact", "65", "0.00", "-"}},
		tableRows(t, mustCLI(t, nil, "--dir", dir, "topics").stdout, topicsHeader))
}

// TestCompactRefusesTopicNotCompacted: a named topic whose cleanup.policy is delete is an error
// naming it, and nothing is cleaned, not even the compacted topic named with it; without names
// only the compacted topics are cleaned.
func TestCompactRefusesTopicNotCompacted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("a:1\na:2\n"), "--dir", dir, "produce", "--topic", "events", "--key-delim", ":")
	compactedTopic(t, dir, "users", 40, 4)

	for _, args := range [][]string{{"compact", "events"}, {"compact", "users", "events"}} {
		r := cli(t, nil, append([]string{"--dir", dir}, args...)...)
		require.Equal(t, 1, r.code, "commitlog %s: %s", strings.Join(args, " "), r.stderr)
		require.Empty(t, r.stdout)
		require.Equal(t, []string{`commitlog compact: topic "events" has cleanup.policy delete, which does not compact (a topic is created compacted with produce --cleanup-policy compact)`},
			outLines(r.stderr))
	}
	// events: its two records in one batch, 61 + 2*9 bytes.
	require.Equal(t, [][]string{
		{"events", "0", "0", "2", "-", "0", "79", "1", "delete", "-", "-", "-"},
		{"users", "0", "0", "40", "-", "0", "2960", "4", "compact", "0", "1.00", "-"},
	}, tableRows(t, mustCLI(t, nil, "--dir", dir, "topics", "events", "users").stdout, topicsHeader))

	r := mustCLI(t, nil, "--dir", dir, "compact")
	require.Equal(t, [][]string{{"users", "1", "5772", "296", "39", "35", "3", "->", "3", "39"}},
		tableRows(t, r.stdout, compactHeader))

	// A store without compacted topics: nothing to do, said on standard error.
	other := filepath.Join(t.TempDir(), "other")
	mustCLI(t, strings.NewReader("x\n"), "--dir", other, "produce", "--topic", "events")
	none := mustCLI(t, nil, "--dir", other, "compact")
	require.Empty(t, none.stdout)
	require.Equal(t, []string{"no compacted topics in " + other}, outLines(none.stderr))
}

// TestProduceKeylessToCompactedTopic: a line without a key is refused for a compacted topic
// (ErrKeylessRecord), with its place; the records before it are appended.
func TestProduceKeylessToCompactedTopic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	r := cli(t, strings.NewReader("k:1\nnokey\nk:3\n"), "--dir", dir, "produce", "--topic", "users", "--key-delim", ":",
		"--cleanup-policy", "compact", "--batch-records", "1", "--cleaner-threads", "0")
	require.Equal(t, 1, r.code, r.stderr)
	lines := outLines(r.stderr)
	require.Equal(t, "commitlog produce: standard input:2: a record without a key, which topic users refuses (cleanup.policy compact keeps the latest record of every key)",
		lines[len(lines)-1])
	got := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "users", "--exit-at-end", "--format", `%o %k %s\n`)
	require.Equal(t, "0 k 1\n", got.stdout)
	// The error is ErrKeylessRecord.
	require.ErrorIs(t, &keylessError{}, commitlog.ErrKeylessRecord)
}

// TestProduceCompactionFlags: the compaction flags of produce become the new topic's stored
// configuration, with Kafka's meanings (delete.retention 0: tombstones go at the next clean).
func TestProduceCompactionFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cases := []struct {
		topic string
		args  []string
		want  commitlog.LogConfig
	}{
		{"defaults", nil, commitlog.LogConfig{CleanupPolicy: commitlog.CleanupDelete,
			MinCleanableDirtyRatio: 0.5, DeleteRetention: 24 * time.Hour}},
		{"both", []string{"--cleanup-policy", "compact,delete", "--min-cleanable-dirty-ratio", "0.25", "--delete-retention", "90m",
			"--min-compaction-lag", "10m", "--max-compaction-lag", "7d"},
			commitlog.LogConfig{CleanupPolicy: commitlog.CleanupCompactDelete, MinCleanableDirtyRatio: 0.25,
				DeleteRetention: 90 * time.Minute, MinCompactionLag: 10 * time.Minute, MaxCompactionLag: 7 * 24 * time.Hour}},
		{"now", []string{"--cleanup-policy", "delete,compact", "--delete-retention", "0", "--max-compaction-lag", "unlimited"},
			commitlog.LogConfig{CleanupPolicy: commitlog.CleanupCompactDelete, MinCleanableDirtyRatio: 0.5, DeleteRetention: -1}},
	}
	for _, c := range cases {
		args := append([]string{"--dir", dir, "produce", "--topic", c.topic, "--key-delim", ":", "--cleaner-threads", "0"}, c.args...)
		mustCLI(t, strings.NewReader("k:v\n"), args...)
	}
	// The flags given to an existing topic that differ from its configuration are reported as
	// ignored (--min-compaction-lag 10m is what it has).
	r := mustCLI(t, strings.NewReader("k:v\n"), "--dir", dir, "produce", "--topic", "both", "--key-delim", ":",
		"--cleaner-threads", "0", "--cleanup-policy", "compact", "--min-compaction-lag", "10m")
	require.Contains(t, r.stderr, "cleanup.policy compact,delete); its stored configuration is kept, --cleanup-policy ignored\n")

	s, err := commitlog.Open(dir, commitlog.WithCleanerThreads(0), commitlog.WithRetentionCheckInterval(-1))
	require.NoError(t, err)
	defer s.Close()
	for _, c := range cases {
		tp, err := s.Topic(c.topic)
		require.NoError(t, err)
		have := tp.Config().LogConfig
		got := commitlog.LogConfig{CleanupPolicy: have.CleanupPolicy, MinCleanableDirtyRatio: have.MinCleanableDirtyRatio,
			DeleteRetention: have.DeleteRetention, MinCompactionLag: have.MinCompactionLag, MaxCompactionLag: have.MaxCompactionLag}
		require.Equal(t, c.want, got, c.topic)
	}
}
