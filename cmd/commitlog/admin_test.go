package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// adminStore makes a store with topic events (2 partitions, retention.ms -1 set, 10 and 4
// records stamped at 1000 ms plus their index) and compacted topic keys (1 record).
func adminStore(t *testing.T) (dir, id string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "store")
	s, err := commitlog.Open(dir)
	require.NoError(t, err)
	tp, err := s.CreateTopic("events", commitlog.TopicConfig{Partitions: 2, LogConfig: commitlog.LogConfig{RetentionDuration: -1}})
	require.NoError(t, err)
	for part, n := range []int{10, 4} {
		p, err := tp.Partition(int32(part))
		require.NoError(t, err)
		for i := range n {
			require.NoError(t, p.Append(t.Context(), &commitlog.Record{Value: fmt.Appendf(nil, "%d-%d", part, i), Timestamp: time.UnixMilli(1000 + int64(i))}))
		}
	}
	kt, err := s.CreateTopic("keys", commitlog.TopicConfig{Partitions: 1, LogConfig: commitlog.LogConfig{CleanupPolicy: commitlog.CleanupCompact}})
	require.NoError(t, err)
	require.NoError(t, kt.Append(t.Context(), &commitlog.Record{Key: []byte("k"), Value: []byte("v")}))
	id = tp.ID().String()
	require.NoError(t, s.Close())
	return dir, id
}

// TestDescribeTopic: partitions with their offsets, sizes and segments, and every config with
// its value and source, as text and as JSON.
func TestDescribeTopic(t *testing.T) {
	dir, id := adminStore(t)
	r := mustCLI(t, nil, "--dir", dir, "describe", "events")
	lines := outLines(r.stdout)
	require.Equal(t, []string{
		"Topic: events  TopicId: " + id + "  PartitionCount: 2",
		"",
		"PARTITION  LOG-START-OFFSET  LOG-END-OFFSET  HIGH-WATERMARK  SIZE  SEGMENTS",
		"0          0                 10              10              710   1",
		"1          0                 4               4               284   1",
		"",
		"Dynamic configs and defaults for topic events:",
	}, lines[:7])
	require.Contains(t, lines, "retention.ms                    -1                   DYNAMIC_TOPIC_CONFIG")
	require.Contains(t, lines, "cleanup.policy                  delete               DEFAULT_CONFIG")
	require.Contains(t, lines, "segment.bytes                   1073741824           DEFAULT_CONFIG")

	r = mustCLI(t, nil, "--dir", dir, "describe", "events", "--output", "json")
	var d topicDescription
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	require.Equal(t, "events", d.Topic)
	require.Equal(t, id, d.ID)
	require.Equal(t, []partitionDescription{
		{Partition: 0, LogStartOffset: 0, LogEndOffset: 10, HighWatermark: 10, Size: 710, Segments: 1},
		{Partition: 1, LogStartOffset: 0, LogEndOffset: 4, HighWatermark: 4, Size: 284, Segments: 1},
	}, d.Partitions)
	sources := map[string]string{}
	for _, c := range d.Configs {
		sources[c.Name+"="+c.Value] = c.Source
	}
	require.Equal(t, "DYNAMIC_TOPIC_CONFIG", sources["retention.ms=-1"])
	require.Equal(t, "DEFAULT_CONFIG", sources["retention.bytes=-1"])
	require.Len(t, d.Configs, 19)

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"describe"}, 2, "give one of TOPIC, --reader NAME and --group ID"},
		{[]string{"describe", "events", "--reader", "x"}, 2, "give one of TOPIC, --reader NAME and --group ID"},
		{[]string{"describe", "events", "--output", "yaml"}, 2, `--output "yaml": want text or json`},
		{[]string{"describe", "nope"}, 1, `unknown topic "nope"`},
		{[]string{"describe", "--reader", "nobody"}, 1, `no reader "nobody" has committed positions`},
		{[]string{"describe", "--reader", "bad name"}, 2, `--reader: invalid reader name: "bad name": character ' ' at byte 3`},
	} {
		r := cli(t, nil, append([]string{"--dir", dir}, c.args...)...)
		require.Equal(t, c.code, r.code, c.args)
		require.Contains(t, r.stderr, c.want, c.args)
	}
}

// TestDescribeReader: a named reader's positions, high watermarks and lag per partition.
func TestDescribeReader(t *testing.T) {
	dir, _ := adminStore(t)
	mustCLI(t, nil, "--dir", dir, "consume", "-t", "events", "-p", "0", "-r", "audit", "-c", "3")
	r := mustCLI(t, nil, "--dir", dir, "describe", "--reader", "audit")
	require.Equal(t, []string{
		"READER  TOPIC   PARTITION  POSITION  HIGH-WATERMARK  LAG",
		"audit   events  0          3         10              7",
	}, outLines(r.stdout))
	r = mustCLI(t, nil, "--dir", dir, "describe", "--reader", "audit", "--output", "json")
	var d readerDescription
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	require.Equal(t, readerDescription{Reader: "audit", Positions: []readerPosition{
		{Topic: "events", Partition: 0, Position: 3, HighWatermark: 10, Lag: 7},
	}}, d)
	r = mustCLI(t, nil, "--dir", dir, "readers")
	require.Equal(t, []string{"READER  TOPICS", "audit   events"}, outLines(r.stdout))
}

// TestAlterConfig: configs set and reset as kafka-configs --alter, checked as Kafka checks
// them, stored (a reopen has them), and a bad one changes nothing.
func TestAlterConfig(t *testing.T) {
	dir, _ := adminStore(t)
	overrides := func() map[string]string {
		s, err := commitlog.Open(dir)
		require.NoError(t, err)
		defer s.Close()
		tp, err := s.Topic("events")
		require.NoError(t, err)
		return tp.StoredConfig().KafkaConfigOverrides()
	}
	r := mustCLI(t, nil, "--dir", dir, "alter-config", "events", "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]", "--add-config", "segment.bytes=1048576")
	require.Equal(t, "altered the configs of topic events\n", r.stdout)
	require.Equal(t, map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact,delete", "segment.bytes": "1048576"}, overrides())

	mustCLI(t, nil, "--dir", dir, "alter-config", "events", "--delete-config", "retention.ms,segment.bytes")
	require.Equal(t, map[string]string{"cleanup.policy": "compact,delete"}, overrides())

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--add-config", "retention.ms=soon"}, 2, `commitlog alter-config: invalid config: invalid value "soon" for configuration retention.ms: Not a number of type LONG`},
		{[]string{"--add-config", "segment.bytes=60,retention.ms=1"}, 2, `invalid value "60" for configuration segment.bytes: Value must be at least 61`},
		{[]string{"--add-config", "no.such.config=1"}, 2, `unknown topic config name: "no.such.config"`},
		{[]string{"--delete-config", "no.such.config"}, 2, `unknown topic config name: "no.such.config"`},
		{[]string{"--add-config", "retention.ms"}, 2, `want name=value, got "retention.ms"`},
		{[]string{"--add-config", "cleanup.policy=[compact"}, 2, "unbalanced brackets"},
		{[]string{"--add-config", "retention.ms=1", "--delete-config", "retention.ms"}, 2, "retention.ms is in both --add-config and --delete-config"},
		{nil, 2, "give --add-config or --delete-config"},
	} {
		r := cli(t, nil, append([]string{"--dir", dir, "alter-config", "events"}, c.args...)...)
		require.Equal(t, c.code, r.code, c.args)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Len(t, outLines(r.stderr), 1, c.args)
	}
	require.Equal(t, map[string]string{"cleanup.policy": "compact,delete"}, overrides())
	r = cli(t, nil, "--dir", dir, "alter-config", "nope", "--add-config", "retention.ms=1")
	require.Equal(t, 1, r.code)
}

// TestDeleteRecords: the log start offset moves to the offset given (-1: the high watermark),
// never back; past the high watermark, or on a compact-only topic, nothing changes.
func TestDeleteRecords(t *testing.T) {
	dir, _ := adminStore(t)
	r := mustCLI(t, nil, "--dir", dir, "delete-records", "events", "--partition", "0", "--before", "4")
	require.Equal(t, []string{"TOPIC   PARTITION  LOW-WATERMARK", "events  0          4"}, outLines(r.stdout))
	r = mustCLI(t, nil, "--dir", dir, "delete-records", "events", "-p", "0,1", "--before", "-1")
	require.Equal(t, []string{"TOPIC   PARTITION  LOW-WATERMARK", "events  0          10", "events  1          4"}, outLines(r.stdout))
	r = mustCLI(t, nil, "--dir", dir, "delete-records", "events", "-p", "0", "--before", "2")
	require.Equal(t, []string{"TOPIC   PARTITION  LOW-WATERMARK", "events  0          10"}, outLines(r.stdout))

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"events", "-p", "1", "--before", "5"}, 1, "events-1: offset 5 is past the high watermark 4 (Kafka's OFFSET_OUT_OF_RANGE); nothing deleted"},
		{[]string{"events", "-p", "2", "--before", "0"}, 1, "topic events has no partition 2 (it has 2)"},
		{[]string{"keys", "-p", "0", "--before", "1"}, 1, "topic keys has cleanup.policy compact"},
		{[]string{"events", "-p", "0", "--before", "-2"}, 2, "--before -2"},
		{[]string{"events", "--before", "1"}, 2, `required flag(s) "partition" not set`},
		{[]string{"events", "-p", "1,0,1", "--before", "1"}, 2, "--partition 1 is given twice (kafka-delete-records refuses duplicate partitions)"},
		{[]string{"events", "-p", "-1", "--before", "1"}, 2, "--partition -1: want a partition number"},
	} {
		r := cli(t, nil, append([]string{"--dir", dir, "delete-records"}, c.args...)...)
		require.Equal(t, c.code, r.code, c.args)
		require.Contains(t, r.stderr, c.want, c.args)
	}
	r = mustCLI(t, nil, "--dir", dir, "describe", "keys", "--output", "json")
	var d topicDescription
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	require.Equal(t, int64(0), d.Partitions[0].LogStartOffset)
}

// TestDeleteTopic: the topic and the reader positions in it go; an unknown topic among the names
// deletes nothing.
func TestDeleteTopic(t *testing.T) {
	dir, _ := adminStore(t)
	mustCLI(t, nil, "--dir", dir, "consume", "-t", "events", "-r", "audit", "-c", "1")
	r := cli(t, nil, "--dir", dir, "delete-topic", "events", "nope")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `unknown topic "nope"`)
	require.DirExists(t, filepath.Join(dir, "events-0"))

	// A name given twice is a usage error, found before anything is deleted (it deleted the topic,
	// then failed on the second name with the library's unknown topic error, exit 1).
	r = cli(t, nil, "--dir", dir, "delete-topic", "keys", "events", "keys")
	require.Equal(t, 2, r.code)
	require.Equal(t, "commitlog delete-topic: topic keys is given twice (see 'commitlog delete-topic --help')\n", r.stderr)
	require.Empty(t, r.stdout)
	require.DirExists(t, filepath.Join(dir, "keys-0"))
	require.DirExists(t, filepath.Join(dir, "events-0"))

	r = mustCLI(t, nil, "--dir", dir, "delete-topic", "events")
	require.Equal(t, "deleted topic events\n", r.stdout)
	require.NoDirExists(t, filepath.Join(dir, "events-0"))
	require.NoDirExists(t, filepath.Join(dir, "events-1"))
	r = cli(t, nil, "--dir", dir, "describe", "events")
	require.Equal(t, 1, r.code)
	r = cli(t, nil, "--dir", dir, "describe", "--reader", "audit")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `no reader "audit" has committed positions`)
}

// TestReadersResetOffsets: a named reader's positions planned (a dry run) and set with
// --execute, by each of Kafka's targets.
func TestReadersResetOffsets(t *testing.T) {
	dir, _ := adminStore(t)
	positions := func() string {
		return strings.Join(outLines(mustCLI(t, nil, "--dir", dir, "describe", "--reader", "audit").stdout)[1:], "\n")
	}
	mustCLI(t, nil, "--dir", dir, "consume", "-t", "events", "-r", "audit", "-e")
	require.Equal(t, "audit   events  0          10        10              0\naudit   events  1          4         4               0", positions())

	r := mustCLI(t, nil, "--dir", dir, "readers", "reset-offsets", "audit", "--topic", "events", "--to-earliest")
	require.Equal(t, []string{
		"READER  TOPIC   PARTITION  CURRENT-OFFSET  NEW-OFFSET",
		"audit   events  0          10              0",
		"audit   events  1          4               0",
	}, outLines(r.stdout))
	require.Equal(t, "dry run: nothing changed (add --execute to commit these positions)\n", r.stderr)
	require.Equal(t, "audit   events  0          10        10              0\naudit   events  1          4         4               0", positions())

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--topic", "events", "--to-earliest"}, "audit   events  0          0         10              10\naudit   events  1          0         4               4"},
		{[]string{"--all-topics", "--shift-by", "3"}, "audit   events  0          3         10              7\naudit   events  1          3         4               1"},
		{[]string{"--topic", "events:0", "--to-offset", "7"}, "audit   events  0          7         10              3\naudit   events  1          3         4               1"},
		{[]string{"--topic", "events", "--to-datetime", "1970-01-01T00:00:01.002"}, "audit   events  0          2         10              8\naudit   events  1          2         4               2"},
		{[]string{"--topic", "events:1", "--to-datetime", "1001"}, "audit   events  0          2         10              8\naudit   events  1          1         4               3"},
		{[]string{"--topic", "events", "--to-latest"}, "audit   events  0          10        10              0\naudit   events  1          4         4               0"},
	} {
		mustCLI(t, nil, append(append([]string{"--dir", dir, "readers", "reset-offsets", "audit"}, c.args...), "--execute")...)
		require.Equal(t, c.want, positions(), c.args)
	}

	// A reader named for the first time is made with the positions; --shift-by needs one.
	mustCLI(t, nil, "--dir", dir, "readers", "reset-offsets", "replay", "--topic", "events:1", "--to-offset", "2", "--execute")
	require.Equal(t, []string{"READER  TOPIC   PARTITION  POSITION  HIGH-WATERMARK  LAG", "replay  events  1          2         4               2"},
		outLines(mustCLI(t, nil, "--dir", dir, "describe", "--reader", "replay").stdout))
	r = cli(t, nil, "--dir", dir, "readers", "reset-offsets", "replay", "--topic", "events:0", "--shift-by", "1")
	require.Equal(t, 1, r.code)
	require.Equal(t, "commitlog readers reset-offsets: events-0: no committed position to shift (Kafka: cannot shift offset for a partition without one); use --to-offset\n", r.stderr)
	r = cli(t, nil, "--dir", dir, "readers", "reset-offsets", "bad name", "--topic", "events", "--to-earliest")
	require.Equal(t, 2, r.code)
}

// TestInvalidTopicName: a name no topic can have is a usage error naming the rule and the
// character that breaks it (a non-ASCII one whole), on every command that takes a topic, not an
// unknown topic.
func TestInvalidTopicName(t *testing.T) {
	dir, _ := adminStore(t)
	const why = `invalid topic name: "café": character 'é' at byte 3 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`
	for _, args := range [][]string{
		{"produce", "-t", "café"},
		{"consume", "-t", "café"},
		{"describe", "café"},
		{"topics", "café"},
		{"alter-config", "café", "--add-config", "retention.ms=1"},
		{"delete-records", "café", "-p", "0", "--before", "1"},
		{"delete-topic", "café"},
	} {
		r := cli(t, strings.NewReader("a\n"), append([]string{"--dir", dir}, args...)...)
		require.Equal(t, 2, r.code, args)
		require.Equal(t, "commitlog "+args[0]+": "+why+" (see 'commitlog "+args[0]+" --help')\n", r.stderr, args)
	}
	require.NoDirExists(t, filepath.Join(dir, "café-0"))
}
