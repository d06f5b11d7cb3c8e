package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
)

// groupTestMember is a GroupReaderConfig with short timers: rebalances take milliseconds.
func groupTestMember(groupID, instanceID string, topics ...string) commitlog.GroupReaderConfig {
	return commitlog.GroupReaderConfig{Group: groupID, InstanceID: instanceID, ClientID: "app", Topics: topics,
		Start: commitlog.Earliest, SessionTimeout: 10 * time.Second, HeartbeatInterval: 10 * time.Millisecond,
		Assignors: []group.Assignor{group.RangeAssignor()}}
}

// appendTo appends n records "<partition>-<i>" to partition id of t.
func appendTo(t *testing.T, tp *commitlog.Topic, id int32, n int) {
	t.Helper()
	p, err := tp.Partition(id)
	require.NoError(t, err)
	recs := make([]*commitlog.Record, n)
	for i := range recs {
		recs[i] = &commitlog.Record{Value: fmt.Appendf(nil, "%d-%d", id, i)}
	}
	require.NoError(t, p.Append(context.Background(), recs...))
}

// nextN returns the next n records of gr, failing after 10 s.
func nextN(t *testing.T, gr *commitlog.GroupReader, n int) []*commitlog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*commitlog.Record
	for len(out) < n {
		rec, err := gr.Next(ctx)
		require.NoError(t, err, "after %d of %d records", len(out), n)
		out = append(out, rec)
	}
	return out
}

// Placeholders for the member ids (their client id or instance id, a dash and a random UUID) in
// the command's output: as long as the ids, so that the columns stay where they are.
const (
	memberA = "live-a-AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA"
	memberB = "live-b-BBBBBBBB-BBBB-BBBB-BBBB-BBBBBBBBBBBB"
)

// groupStore writes a store with two topics and two groups, closes it and returns its directory
// and the member ids of the static group:
//
//   - topic "events", 3 partitions: 10 records each, then 5 more in partition 0 and 2 more in
//     partition 1 (ends 15, 12, 10); topic "other", 1 partition of 4 records;
//   - group "workers": one dynamic member read the 30 first records of events, committed 10 in
//     each partition, and left (Close): the group is Empty, its lags 5, 2 and 0;
//   - group "live": two static members (group.instance.id live-a and live-b, client id "app",
//     the range assignor) of topic "other": live-a was assigned other-0 and read its 4 records
//     without committing, live-b got nothing. Static members do not leave when they close: the
//     group stays Stable with both, as stored at its last rebalance.
func groupStore(t *testing.T) (dir string, idA, idB string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s, err := commitlog.Open(dir, commitlog.WithGroupInitialRebalanceDelay(-1))
	require.NoError(t, err)
	events, err := s.CreateTopic("events", commitlog.TopicConfig{Partitions: 3})
	require.NoError(t, err)
	for id := range int32(3) {
		appendTo(t, events, id, 10)
	}
	other, err := s.CreateTopic("other", commitlog.TopicConfig{Partitions: 1})
	require.NoError(t, err)
	appendTo(t, other, 0, 4)

	w, err := s.NewGroupReader(groupTestMember("workers", "", "events"))
	require.NoError(t, err)
	nextN(t, w, 30)
	require.NoError(t, w.Commit(ctx))
	require.NoError(t, w.Close())
	appendTo(t, events, 0, 5)
	appendTo(t, events, 1, 2)

	a, err := s.NewGroupReader(groupTestMember("live", "live-a", "other"))
	require.NoError(t, err)
	nextN(t, a, 4) // alone in the group, live-a has other-0
	b, err := s.NewGroupReader(groupTestMember("live", "live-b", "other"))
	require.NoError(t, err)
	// Both in one generation, the group Stable: live-a keeps other-0 (range: the first instance
	// id gets the one partition), live-b gets nothing.
	require.Eventually(t, func() bool {
		for _, gr := range []*commitlog.GroupReader{a, b} {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			gr.Next(ctx)
			cancel()
		}
		genA, _ := a.Generation()
		genB, _ := b.Generation()
		d, err := s.DescribeGroup("live")
		require.NoError(t, err)
		return genA == genB && d.State == group.Stable && d.Generation == genA && len(d.Members) == 2 &&
			len(a.Assignment()) == 1 && len(b.Assignment()) == 0
	}, 30*time.Second, time.Millisecond) // a hang, not a slow machine, fails
	_, idA = a.Generation()
	_, idB = b.Generation()
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	require.NoError(t, s.Close())
	require.Len(t, idA, len(memberA))
	require.Len(t, idB, len(memberB))
	return dir, idA, idB
}

// hideIDs replaces the member ids in out with their placeholders.
func hideIDs(out, idA, idB string) []string {
	return outLines(strings.NewReplacer(idA, memberA, idB, memberB).Replace(out))
}

func TestGroupsList(t *testing.T) {
	dir, _, _ := groupStore(t)
	r := mustCLI(t, nil, "--dir", dir, "groups")
	require.Empty(t, r.stderr)
	require.Equal(t, []string{
		"GROUP    STATE   PROTOCOL  MEMBERS",
		"live     Stable  range     2",
		"workers  Empty   -         0",
	}, outLines(r.stdout))

	r = mustCLI(t, nil, "--dir", dir, "groups", "--state", "empty")
	require.Equal(t, []string{
		"GROUP    STATE  PROTOCOL  MEMBERS",
		"workers  Empty  -         0",
	}, outLines(r.stdout))

	r = mustCLI(t, nil, "--dir", dir, "groups", "--state", "PreparingRebalance")
	require.Empty(t, r.stdout)
	require.Equal(t, "no consumer groups in "+dir+" in state PreparingRebalance\n", r.stderr)
}

// TestGroupsListWithoutGroups: a store without the groups' log has no groups, and listing them
// (or its topics) does not create the log.
func TestGroupsListWithoutGroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("a\nb\n"), "--dir", dir, "produce", "--topic", "t")
	r := mustCLI(t, nil, "--dir", dir, "groups")
	require.Empty(t, r.stdout)
	require.Equal(t, "no consumer groups in "+dir+"\n", r.stderr)
	r = cli(t, nil, "--dir", dir, "groups", "describe", "g")
	require.Equal(t, 1, r.code)
	require.Equal(t, `commitlog groups describe: unknown group "g" in `+dir+" (groups: none)\n", r.stderr)
	mustCLI(t, nil, "--dir", dir, "topics")
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "g", "--topic", "t", "--to-earliest")
	_, err := os.Stat(filepath.Join(dir, "__consumer_offsets-0"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestGroupsDescribe(t *testing.T) {
	dir, idA, idB := groupStore(t)

	r := mustCLI(t, nil, "--dir", dir, "groups", "describe", "workers")
	require.Equal(t, "consumer group workers has no active members\n", r.stderr)
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID",
		"workers  events  0          10              15              5    -            -",
		"workers  events  1          10              12              2    -            -",
		"workers  events  2          10              10              0    -            -",
	}, outLines(r.stdout))

	// live-a holds other-0 without a committed position; live-b holds nothing.
	r = mustCLI(t, nil, "--dir", dir, "groups", "describe", "live")
	require.Empty(t, r.stderr)
	require.Equal(t, []string{
		"GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID                                  CLIENT-ID",
		"live   other  0          -               4               -    live-a-AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA  app",
		"live   -      -          -               -               -    live-b-BBBBBBBB-BBBB-BBBB-BBBB-BBBBBBBBBBBB  app",
	}, hideIDs(r.stdout, idA, idB))

	r = mustCLI(t, nil, "--dir", dir, "groups", "describe", "live", "--members")
	require.Equal(t, []string{
		"GROUP  CONSUMER-ID                                  GROUP-INSTANCE-ID  CLIENT-ID  #PARTITIONS  ASSIGNMENT",
		"live   live-a-AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA  live-a             app        1            other(0)",
		"live   live-b-BBBBBBBB-BBBB-BBBB-BBBB-BBBBBBBBBBBB  live-b             app        0            -",
	}, hideIDs(r.stdout, idA, idB))

	// live-a joined first, alone: it is the leader. Generation 1 gave it other-0, generation 2
	// added live-b.
	r = mustCLI(t, nil, "--dir", dir, "groups", "describe", "live", "--state")
	require.Empty(t, r.stderr)
	require.Equal(t, []string{
		"GROUP  ASSIGNMENT-STRATEGY  STATE   GENERATION  #MEMBERS  LEADER",
		"live   range                Stable  2           2         live-a-AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA",
	}, hideIDs(r.stdout, idA, idB))

	r = mustCLI(t, nil, "--dir", dir, "groups", "describe", "workers", "--members")
	require.Equal(t, []string{"GROUP  CONSUMER-ID  GROUP-INSTANCE-ID  CLIENT-ID  #PARTITIONS  ASSIGNMENT"}, outLines(r.stdout))

	// The dynamic member joined (generation 1) and left (generation 2, empty).
	r = mustCLI(t, nil, "--dir", dir, "groups", "describe", "workers", "--state")
	require.Equal(t, []string{
		"GROUP    ASSIGNMENT-STRATEGY  STATE  GENERATION  #MEMBERS  LEADER",
		"workers  -                    Empty  2           0         -",
	}, outLines(r.stdout))

	r = cli(t, nil, "--dir", dir, "groups", "describe", "nope")
	require.Equal(t, 1, r.code)
	require.Equal(t, `commitlog groups describe: unknown group "nope" in `+dir+" (groups: live, workers)\n", r.stderr)
	r = cli(t, nil, "--dir", dir, "groups", "describe", "live", "--members", "--state")
	require.Equal(t, 2, r.code)
}

func TestGroupsResetOffsets(t *testing.T) {
	dir, _, _ := groupStore(t)
	describeWorkers := func() []string {
		return outLines(mustCLI(t, nil, "--dir", dir, "groups", "describe", "workers").stdout)
	}
	before := describeWorkers()

	// A dry run by default: the new positions, nothing changed.
	r := mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--topic", "events", "--to-earliest")
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  NEW-OFFSET",
		"workers  events  0          0",
		"workers  events  1          0",
		"workers  events  2          0",
	}, outLines(r.stdout))
	require.Equal(t, "dry run: nothing changed (add --execute to commit these positions)\n", r.stderr)
	require.Equal(t, before, describeWorkers())

	// --to-offset past the end of partition 1 (12) and 2 (10) is brought to the end, as Kafka does.
	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--topic", "events:0,1", "--topic", "events:2",
		"--to-offset", "11", "--execute")
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  NEW-OFFSET",
		"workers  events  0          11",
		"workers  events  1          11",
		"workers  events  2          10",
	}, outLines(r.stdout))
	require.Equal(t, "events-2: new offset 11 is past the end; it is set to 10\n", r.stderr)
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID",
		"workers  events  0          11              15              4    -            -",
		"workers  events  1          11              12              1    -            -",
		"workers  events  2          10              10              0    -            -",
	}, describeWorkers())

	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--all-topics", "--to-latest", "--execute")
	require.Empty(t, r.stderr)
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  NEW-OFFSET",
		"workers  events  0          15",
		"workers  events  1          12",
		"workers  events  2          10",
	}, outLines(r.stdout))
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID",
		"workers  events  0          15              15              0    -            -",
		"workers  events  1          12              12              0    -            -",
		"workers  events  2          10              10              0    -            -",
	}, describeWorkers())

	// --shift-by moves each committed position; --to-datetime finds the first record at or after
	// the time (every record here is younger than 2001); a shift below the log start offset is
	// brought to it.
	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--all-topics", "--shift-by", "-3", "--execute")
	require.Equal(t, []string{
		"GROUP    TOPIC   PARTITION  NEW-OFFSET",
		"workers  events  0          12",
		"workers  events  1          9",
		"workers  events  2          7",
	}, outLines(r.stdout))
	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--topic", "events:0", "--to-datetime", "2001-01-01T00:00:00.000", "--execute")
	require.Equal(t, []string{"GROUP    TOPIC   PARTITION  NEW-OFFSET", "workers  events  0          0"}, outLines(r.stdout))
	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--topic", "events:0", "--shift-by", "-1")
	require.Equal(t, []string{"GROUP    TOPIC   PARTITION  NEW-OFFSET", "workers  events  0          0"}, outLines(r.stdout))
	require.Equal(t, "events-0: new offset -1 is below the log start offset; it is set to 0\ndry run: nothing changed (add --execute to commit these positions)\n", r.stderr)
	r = mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--topic", "events:1", "--to-datetime", "2999-01-01T00:00:00Z")
	require.Equal(t, []string{"GROUP    TOPIC   PARTITION  NEW-OFFSET", "workers  events  1          12"}, outLines(r.stdout))
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "workers", "--all-topics", "--to-latest", "--execute")

	// A group that does not exist is created with the positions.
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "audit", "--topic", "other", "--to-offset", "1", "--execute")
	require.Equal(t, []string{
		"GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID",
		"audit  other  0          1               4               3    -            -",
	}, outLines(mustCLI(t, nil, "--dir", dir, "groups", "describe", "audit").stdout))

	// A group with members is refused, dry run or not, and nothing changes.
	for _, extra := range [][]string{nil, {"--execute"}} {
		r = cli(t, nil, append([]string{"--dir", dir, "groups", "reset-offsets", "live", "--topic", "other", "--to-earliest"}, extra...)...)
		require.Equal(t, 1, r.code)
		require.Empty(t, r.stdout)
		require.Equal(t, "commitlog groups reset-offsets: group live is Stable with 2 members: it can be reset only when it has none (members kept from the store's last run are removed once their session timeout passes while a process holds the store, such as 'commitlog serve')\n", r.stderr)
	}
	require.Equal(t, []string{"live", "other", "0", "-", "4", "-"},
		strings.Fields(outLines(mustCLI(t, nil, "--dir", dir, "groups", "describe", "live").stdout)[1])[:6])

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"workers", "--topic", "events"}, 2, "give one of --to-earliest, --to-latest, --to-offset, --to-datetime and --shift-by"},
		{[]string{"workers", "--topic", "events", "--to-earliest", "--to-latest"}, 2, "give one of --to-earliest, --to-latest, --to-offset, --to-datetime and --shift-by"},
		{[]string{"workers", "--to-earliest"}, 2, "give --topic or --all-topics, one of them"},
		{[]string{"workers", "--topic", "events:x", "--to-earliest"}, 2, `--topic "events:x": "x" is not a partition number`},
		{[]string{"workers", "--topic", "events", "--to-earliest", "--execute", "--dry-run"}, 2, "--execute and --dry-run: give one of them"},
		{[]string{"workers", "--topic", "nope", "--to-earliest"}, 1, `unknown topic "nope"`},
		{[]string{"workers", "--topic", "events:3", "--to-earliest"}, 1, "topic events has no partition 3 (it has 3)"},
		{[]string{"fresh", "--all-topics", "--to-earliest"}, 1, "group fresh has no committed positions: name the topics with --topic"},
		{[]string{"fresh", "--topic", "events", "--shift-by", "1"}, 1, "events-0: no committed position to shift"},
		{[]string{"workers", "--topic", "events", "--to-datetime", "noon"}, 2, `--to-datetime "noon": want YYYY-MM-DDTHH:mm:SS.sss`},
	} {
		r := cli(t, nil, append([]string{"--dir", dir, "groups", "reset-offsets"}, c.args...)...)
		require.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
		require.Len(t, outLines(r.stderr), 1, "%v", c.args)
	}
}

func TestGroupsDelete(t *testing.T) {
	dir, _, _ := groupStore(t)

	// Nothing is deleted when one of the groups named cannot be.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"workers", "live"}, "commitlog groups delete: group live is Stable with 2 members: it can be deleted only when it has none (members kept from the store's last run are removed once their session timeout passes while a process holds the store, such as 'commitlog serve')\n"},
		{[]string{"workers", "nope"}, `commitlog groups delete: unknown group "nope" in ` + dir + " (groups: live, workers)\n"},
	} {
		r := cli(t, nil, append([]string{"--dir", dir, "groups", "delete"}, c.args...)...)
		require.Equal(t, 1, r.code)
		require.Empty(t, r.stdout)
		require.Equal(t, c.want, r.stderr)
	}
	// A group named twice is a usage error, found before anything is deleted.
	r := cli(t, nil, "--dir", dir, "groups", "delete", "workers", "workers")
	require.Equal(t, 2, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "commitlog groups delete: group workers is given twice (see 'commitlog groups delete --help')\n", r.stderr)

	r = mustCLI(t, nil, "--dir", dir, "groups", "delete", "workers")
	require.Equal(t, "deleted group workers and its committed positions in 3 partitions\n", r.stdout)
	require.Equal(t, []string{
		"GROUP  STATE   PROTOCOL  MEMBERS",
		"live   Stable  range     2",
	}, outLines(mustCLI(t, nil, "--dir", dir, "groups").stdout))
	// Its positions went with it: a group made again under the name starts with none.
	r = cli(t, nil, "--dir", dir, "groups", "describe", "workers")
	require.Equal(t, 1, r.code)
	require.Equal(t, `commitlog groups describe: unknown group "workers" in `+dir+" (groups: live)\n", r.stderr)
	require.Equal(t, 2, cli(t, nil, "--dir", dir, "groups", "delete").code)
}

// TestTopicsShowsGroups: under each topic's partitions, the groups with committed positions in
// it and their lag summed over its partitions.
func TestTopicsShowsGroups(t *testing.T) {
	dir, _, _ := groupStore(t)
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "audit", "--topic", "events", "--to-offset", "3", "--execute")
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "audit", "--topic", "other", "--to-offset", "1", "--execute")
	// A group id is any string: one the line could not tell apart is quoted.
	mustCLI(t, nil, "--dir", dir, "groups", "reset-offsets", "night shift", "--topic", "other", "--to-earliest", "--execute")
	r := mustCLI(t, nil, "--dir", dir, "topics")
	require.Empty(t, r.stderr)
	// workers: 5+2+0; audit: 12+9+7 in events, 3 in other; "night shift" 4; live committed nothing. Sizes: a
	// batch of 10 records "p-i" is 61+10*10 bytes, of 5 records 61+5*10, of 2 61+2*10.
	require.Equal(t, []string{
		"TOPIC   PARTITION  START  END  STABLE  OPEN TXNS  SIZE  SEGMENTS  POLICY  CLEANER POINT  DIRTY RATIO  READERS (lag)",
		"events  0          0      15   -       0          272   1         delete  -              -            -",
		"events  1          0      12   -       0          242   1         delete  -              -            -",
		"events  2          0      10   -       0          161   1         delete  -              -            -",
		"  groups (total lag): audit=28 workers=7",
		"other   0          0      4    -       0          101   1         delete  -              -            -",
		`  groups (total lag): audit=3 "night shift"=4`,
	}, outLines(r.stdout))

	r = mustCLI(t, nil, "--dir", dir, "topics", "other")
	require.Equal(t, []string{
		"TOPIC  PARTITION  START  END  STABLE  OPEN TXNS  SIZE  SEGMENTS  POLICY  CLEANER POINT  DIRTY RATIO  READERS (lag)",
		"other  0          0      4    -       0          101   1         delete  -              -            -",
		`  groups (total lag): audit=3 "night shift"=4`,
	}, outLines(r.stdout))
}
