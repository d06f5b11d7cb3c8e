package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
	"github.com/spf13/cobra"
)

// consumerOffsetsDir is the folder of the store's internal log that holds the consumer groups
// (Kafka's __consumer_offsets, partition 0).
const consumerOffsetsDir = "__consumer_offsets-0"

func newGroupsCommand(g *globals) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List consumer groups; describe, delete, or reset the positions of one (kafka-consumer-groups)",
		Long: `List the store's consumer groups (Kafka's kafka-consumer-groups.sh --list, with --state): each
group's state (Empty, PreparingRebalance, CompletingRebalance or Stable), the assignor its members
agreed on (PROTOCOL, "-" while none) and its number of members. A group is listed from its first
member or committed position until it is deleted. Groups live in the store's internal log
__consumer_offsets-0, in Kafka's record formats; a store without it has no groups (and this
command does not create it).

The subcommands describe a group (its committed positions with lag, its members, its state),
delete an empty group with its positions, and reset an empty group's positions.

The store must not be open in another process: the members of a group that is running live in
that process. A group whose process ended without its members leaving (static members, or a
crash) keeps them, as stored, until a process that opens the store has run for their session
timeout.`,
		Example: `  commitlog groups
  commitlog groups --state Stable,Empty
  commitlog groups describe workers
  commitlog groups reset-offsets workers --topic events --to-earliest --execute`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return listGroups(g, states) }),
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "list only the groups in these states (Empty, PreparingRebalance, CompletingRebalance, Stable)")
	cmd.AddCommand(newGroupsDescribeCommand(g), newGroupsDeleteCommand(g), newGroupsResetCommand(g))
	return cmd
}

// hasGroups reports whether the store holds the internal log of the consumer groups. Asking the
// store for its groups without it would create the log: commands that only read look first.
func hasGroups(s *commitlog.Store) (bool, error) {
	_, err := os.Stat(filepath.Join(s.Dir(), consumerOffsetsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// groupIDs returns the ids of the store's groups, in order; none when it has no groups' log.
func groupIDs(s *commitlog.Store) ([]string, error) {
	if ok, err := hasGroups(s); !ok || err != nil {
		return nil, err
	}
	listed, err := s.ListGroups()
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(listed))
	for _, l := range listed {
		ids = append(ids, l.Group)
	}
	return ids, nil
}

// describeGroup returns the description of group id, with a message naming the groups there are
// when it does not exist.
func describeGroup(s *commitlog.Store, id string) (commitlog.GroupDescription, error) {
	ids, err := groupIDs(s)
	if err != nil {
		return commitlog.GroupDescription{}, err
	}
	if !slices.Contains(ids, id) {
		return commitlog.GroupDescription{}, unknownGroup(s, id, ids)
	}
	d, err := s.DescribeGroup(id)
	if errors.Is(err, commitlog.ErrGroupIDNotFound) {
		return commitlog.GroupDescription{}, unknownGroup(s, id, ids)
	}
	return d, err
}

func unknownGroup(s *commitlog.Store, id string, ids []string) error {
	list := "none"
	if len(ids) > 0 {
		list = strings.Join(ids, ", ")
	}
	return fmt.Errorf("unknown group %q in %s (groups: %s)", id, s.Dir(), list)
}

// parseStates reads group state names, case-insensitively.
func parseStates(names []string) ([]group.State, error) {
	var out []group.State
	for _, n := range names {
		found := false
		for st := group.Empty; st <= group.Dead; st++ {
			if strings.EqualFold(strings.TrimSpace(n), st.String()) {
				out, found = append(out, st), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("--state %q: want Empty, PreparingRebalance, CompletingRebalance or Stable", n)
		}
	}
	return out, nil
}

// dash returns s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func listGroups(g *globals, stateNames []string) error {
	states, err := parseStates(stateNames)
	if err != nil {
		return usageError("%v", err)
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var listed []group.ListedGroup
	if ok, err := hasGroups(s); err != nil {
		return err
	} else if ok {
		if listed, err = s.ListGroups(states...); err != nil {
			return err
		}
	}
	if len(listed) == 0 {
		if len(states) > 0 {
			fmt.Fprintf(g.io.err, "no consumer groups in %s in state %s\n", s.Dir(), strings.Join(stateNames, ", "))
		} else {
			fmt.Fprintf(g.io.err, "no consumer groups in %s\n", s.Dir())
		}
		return nil
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL\tMEMBERS")
	for _, l := range listed {
		d, err := s.DescribeGroup(l.Group)
		if errors.Is(err, commitlog.ErrGroupIDNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", d.Group, d.State, dash(d.Protocol), len(d.Members))
	}
	return w.Flush()
}

type describeFlags struct {
	members bool
	state   bool
}

func newGroupsDescribeCommand(g *globals) *cobra.Command {
	f := &describeFlags{}
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's committed positions and lag, its members (--members) or its state (--state)",
		Long: `Describe a consumer group as kafka-consumer-groups.sh --describe does.

By default, one line per partition that the group has a committed position in or that a member
is assigned: the committed position (CURRENT-OFFSET, the next offset the group reads; "-" when
none), the partition's end (LOG-END-OFFSET, its high watermark), the LAG between them, and the
member the partition is assigned to (CONSUMER-ID and CLIENT-ID; "-" when no member has it). A
member without partitions has a line of its own, with "-" for topic and partition.

--members: one line per member: its member id, group.instance.id ("-" for a dynamic member),
client id, number of partitions and assignment (topic(partitions)).

--state: the group's assignor (ASSIGNMENT-STRATEGY), state, generation, number of members and
leader.

A group that has no members, or is rebalancing, says so on standard error. An unknown group is a
data problem: exit code 1.`,
		Example: `  commitlog groups describe workers
  commitlog groups describe workers --members
  commitlog groups describe workers --state`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error { return describe(g, args[0], f) }),
	}
	cmd.Flags().BoolVar(&f.members, "members", false, "show the group's members and their assignments")
	cmd.Flags().BoolVar(&f.state, "state", false, "show the group's state, assignor, generation and leader")
	return cmd
}

func describe(g *globals, id string, f *describeFlags) error {
	if f.members && f.state {
		return usageError("--members and --state: give one of them")
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := describeGroup(s, id)
	if err != nil {
		return err
	}
	if !f.state {
		switch d.State {
		case group.Empty:
			fmt.Fprintf(g.io.err, "consumer group %s has no active members\n", d.Group)
		case group.PreparingRebalance, group.CompletingRebalance:
			fmt.Fprintf(g.io.err, "consumer group %s is rebalancing\n", d.Group)
		}
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	switch {
	case f.members:
		describeMembers(w, d)
	case f.state:
		fmt.Fprintln(w, "GROUP\tASSIGNMENT-STRATEGY\tSTATE\tGENERATION\t#MEMBERS\tLEADER")
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\n", d.Group, dash(d.Protocol), d.State, d.Generation, len(d.Members), dash(d.Leader))
	default:
		describeOffsets(w, d, func(tp commitlog.TopicPartition) int64 {
			if t, err := s.Topic(tp.Topic); err == nil {
				if p, err := t.Partition(tp.Partition); err == nil {
					return p.HighWatermark()
				}
			}
			return -1
		})
	}
	return w.Flush()
}

// describeOffsets writes the per-partition table of kafka-consumer-groups.sh --describe; end
// gives the high watermark of a partition the group has no position in (-1 when there is no such
// partition).
func describeOffsets(w io.Writer, d commitlog.GroupDescription, end func(commitlog.TopicPartition) int64) {
	type row struct {
		tp     commitlog.TopicPartition
		pos    *commitlog.GroupPosition
		member *commitlog.GroupMemberDescription
	}
	rows := map[commitlog.TopicPartition]*row{}
	at := func(tp commitlog.TopicPartition) *row {
		r := rows[tp]
		if r == nil {
			r = &row{tp: tp}
			rows[tp] = r
		}
		return r
	}
	for i := range d.Positions {
		p := &d.Positions[i]
		at(commitlog.TopicPartition{Topic: p.Topic, Partition: p.Partition}).pos = p
	}
	var idle []*commitlog.GroupMemberDescription
	for i := range d.Members {
		m := &d.Members[i]
		if len(m.Assignment) == 0 {
			idle = append(idle, m)
		}
		for _, tp := range m.Assignment {
			at(tp).member = m
		}
	}
	sorted := make([]*row, 0, len(rows))
	for _, r := range rows {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *row) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return int(a.tp.Partition - b.tp.Partition)
	})
	fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tCLIENT-ID")
	for _, r := range sorted {
		current, logEnd, lag := "-", "-", "-"
		if r.pos != nil {
			current = strconv.FormatInt(r.pos.Offset, 10)
			if r.pos.HighWatermark >= 0 {
				logEnd, lag = strconv.FormatInt(r.pos.HighWatermark, 10), strconv.FormatInt(r.pos.Lag, 10)
			}
		} else if hw := end(r.tp); hw >= 0 {
			logEnd = strconv.FormatInt(hw, 10)
		}
		consumer, client := "-", "-"
		if r.member != nil {
			consumer, client = r.member.MemberID, dash(r.member.ClientID)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", d.Group, r.tp.Topic, r.tp.Partition, current, logEnd, lag, consumer, client)
	}
	for _, m := range idle {
		fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\t%s\t%s\n", d.Group, m.MemberID, dash(m.ClientID))
	}
}

// describeMembers writes kafka-consumer-groups.sh --describe --members --verbose.
func describeMembers(w io.Writer, d commitlog.GroupDescription) {
	fmt.Fprintln(w, "GROUP\tCONSUMER-ID\tGROUP-INSTANCE-ID\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT")
	for _, m := range d.Members {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", d.Group, m.MemberID, dash(m.InstanceID), dash(m.ClientID),
			len(m.Assignment), formatAssignment(m.Assignment))
	}
}

// formatAssignment writes partitions as Kafka's tool does: topic(0,1,2), topics separated by
// commas; "-" for none. The partitions come ordered by topic, then partition.
func formatAssignment(tps []commitlog.TopicPartition) string {
	if len(tps) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, tp := range tps {
		switch {
		case i == 0:
			b.WriteString(tp.Topic + "(")
		case tps[i-1].Topic != tp.Topic:
			b.WriteString("),")
			b.WriteString(tp.Topic + "(")
		default:
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(tp.Partition)))
	}
	b.WriteByte(')')
	return b.String()
}

func newGroupsDeleteCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete empty groups with their committed positions",
		Long: `Delete consumer groups, with their committed positions, as kafka-consumer-groups.sh --delete
does: tombstones for the group and its positions are appended to __consumer_offsets-0. Only a
group without members (state Empty) can be deleted. Every group named is checked first: an
unknown group, or one with members, is a data problem (exit code 1), a group named twice a usage
error (exit code 2), and then nothing is deleted.`,
		Example: `  commitlog groups delete workers
  commitlog groups delete audit-2023 audit-2024`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error { return deleteGroups(cmd.Context(), g, args) }),
	}
}

func deleteGroups(ctx context.Context, g *globals, ids []string) error {
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return usageError("group %s is given twice", id)
		}
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	ds := make([]commitlog.GroupDescription, 0, len(ids))
	for _, id := range ids {
		d, err := describeGroup(s, id)
		if err != nil {
			return err
		}
		if d.State != group.Empty {
			return nonEmpty(d, "deleted")
		}
		ds = append(ds, d)
	}
	for _, d := range ds {
		if err := s.DeleteGroup(ctx, d.Group); err != nil {
			return fmt.Errorf("delete group %s: %w", d.Group, err)
		}
		fmt.Fprintf(g.io.out, "deleted group %s and its committed positions in %s\n", d.Group, count(len(d.Positions), "partition", ""))
	}
	return s.Close()
}

// nonEmpty is the error for a group with members that an operation needs empty.
// membersLeft says how the members a command finds go: they are not this process's (it holds
// the store alone), but those of the process that last held it (serve, or a program's
// GroupReaders), loaded with the group; their sessions restart when the store opens, so they
// go only once a process holds the store for their session timeout (session.timeout.ms, 45 s
// by default), as a Kafka coordinator removes them after it loads the group.
const membersLeft = "members kept from the store's last run are removed once their session timeout passes while a process holds the store, such as 'commitlog serve'"

func nonEmpty(d commitlog.GroupDescription, what string) error {
	return fmt.Errorf("group %s is %s with %s: it can be %s only when it has none (%s)",
		d.Group, d.State, count(len(d.Members), "member", ""), what, membersLeft)
}

type resetFlags struct {
	topics     []string
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toOffset   int64
	toDatetime string
	shiftBy    int64
	execute    bool
	dryRun     bool
	// toOffsetSet and shiftBySet: --to-offset and --shift-by were given (0 is a value).
	toOffsetSet, shiftBySet bool
	at                      time.Time // --to-datetime, parsed
}

func newGroupsResetCommand(g *globals) *cobra.Command {
	f := &resetFlags{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP (--topic T[:P,...]... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N) [--execute]",
		Short: "Set an empty group's committed positions (a dry run unless --execute)",
		Long: `Set a consumer group's committed positions, as kafka-consumer-groups.sh --reset-offsets does: in
every partition of the topics given (--topic T, or --topic T:0,2 for some partitions; or
--all-topics, the topics the group has committed positions in), to the log start offset
(--to-earliest), the end (--to-latest, the high watermark), an offset (--to-offset N), the first
offset whose record's timestamp is at or after a time (--to-datetime 2001-01-01T08:00:00.000, UTC
unless it has a zone, or epoch milliseconds; the end when no record is that late), or the
committed position moved by N (--shift-by N, negative to go back; a partition without a
committed position is an error, as in Kafka). An offset outside the partition's start and end
is brought within them, with a warning, as Kafka does.

It prints the new positions (GROUP TOPIC PARTITION NEW-OFFSET). Without --execute it is a dry
run: nothing changes. With --execute the positions are committed (an OffsetCommit from outside
the group, generation -1); a group that does not exist is created with them.

The group must have no members (state Empty): its members hold the positions while they run.
A group with members, an unknown topic or partition, is a data problem: exit code 1.`,
		Example: `  commitlog groups reset-offsets workers --topic events --to-earliest
  commitlog groups reset-offsets workers --topic events:0,1 --to-offset 1000 --execute
  commitlog groups reset-offsets workers --all-topics --to-latest --execute`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			f.toOffsetSet, f.shiftBySet = cmd.Flags().Changed("to-offset"), cmd.Flags().Changed("shift-by")
			return resetOffsets(cmd.Context(), g, args[0], f)
		}),
	}
	cmd.Flags().StringArrayVar(&f.topics, "topic", nil, "a topic to reset, T or T:P,P,... for some partitions (repeatable)")
	cmd.Flags().BoolVar(&f.allTopics, "all-topics", false, "reset every topic the group has committed positions in")
	resetTargetFlags(cmd, f)
	return cmd
}

// resetTargetFlags adds the flags of kafka-consumer-groups.sh --reset-offsets.
func resetTargetFlags(cmd *cobra.Command, f *resetFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.toEarliest, "to-earliest", false, "reset to the log start offset")
	fl.BoolVar(&f.toLatest, "to-latest", false, "reset to the end (the high watermark)")
	fl.Int64Var(&f.toOffset, "to-offset", 0, "reset to this offset")
	fl.StringVar(&f.toDatetime, "to-datetime", "", "reset to the first offset at or after this time (YYYY-MM-DDTHH:mm:SS.sss, UTC unless a zone is given, or epoch ms)")
	fl.Int64Var(&f.shiftBy, "shift-by", 0, "move the committed position by this many offsets (negative: back)")
	fl.BoolVar(&f.execute, "execute", false, "commit the new positions (without it: a dry run)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "only show the new positions (the default)")
}

// checkReset checks the reset flags: one target, --topic or --all-topics, --execute or
// --dry-run; it parses --to-datetime and the topics.
func (f *resetFlags) check() ([]topicSpec, error) {
	n := 0
	for _, set := range []bool{f.toEarliest, f.toLatest, f.toOffsetSet, f.toDatetime != "", f.shiftBySet} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, usageError("give one of --to-earliest, --to-latest, --to-offset, --to-datetime and --shift-by")
	}
	if (len(f.topics) > 0) == f.allTopics {
		return nil, usageError("give --topic or --all-topics, one of them")
	}
	if f.execute && f.dryRun {
		return nil, usageError("--execute and --dry-run: give one of them")
	}
	if f.toDatetime != "" {
		at, err := parseDatetime(f.toDatetime)
		if err != nil {
			return nil, usageError("%v", err)
		}
		f.at = at
	}
	var specs []topicSpec
	for _, t := range f.topics {
		spec, err := parseTopicSpec(t)
		if err != nil {
			return nil, usageError("%v", err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// parseDatetime reads --to-datetime: kafka-consumer-groups' YYYY-MM-DDTHH:mm:SS.sss (UTC, or
// with a zone: Z, +01:00), RFC 3339, or epoch milliseconds.
func parseDatetime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss (UTC unless a zone follows), RFC 3339, or epoch milliseconds", s)
}

// resetChange is one partition's reset: its committed position, when it has one, and the new one.
type resetChange struct {
	tp     commitlog.TopicPartition
	topic  *commitlog.Topic
	cur    int64
	hasCur bool
	off    int64
}

// resetPlan resolves specs (topics, each with its partitions or all of them) to each partition's
// new position by resetTarget, against the committed positions: one change per partition (a
// partition named twice counts once), sorted by topic and partition.
func resetPlan(g *globals, s *commitlog.Store, specs []topicSpec, f *resetFlags, committed map[commitlog.TopicPartition]int64) ([]resetChange, error) {
	var plan []resetChange
	seen := map[commitlog.TopicPartition]bool{}
	for _, spec := range specs {
		t, err := topicOf(s, spec.topic)
		if err != nil {
			return nil, err
		}
		parts := spec.partitions
		if parts == nil {
			for id := range t.PartitionCount() {
				parts = append(parts, id)
			}
		}
		for _, id := range parts {
			tp := commitlog.TopicPartition{Topic: t.Name(), Partition: id}
			if seen[tp] {
				continue
			}
			seen[tp] = true
			cur, ok := committed[tp]
			off, err := resetTarget(g, t, id, f, cur, ok)
			if err != nil {
				return nil, err
			}
			plan = append(plan, resetChange{tp: tp, topic: t, cur: cur, hasCur: ok, off: off})
		}
	}
	slices.SortFunc(plan, func(a, b resetChange) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return int(a.tp.Partition - b.tp.Partition)
	})
	return plan, nil
}

// resetTarget returns the new position of partition id of t under f's target; cur is the
// committed position (ok false: none). An offset outside the partition's log start offset and
// high watermark is brought within them, saying so on standard error, as Kafka does.
func resetTarget(g *globals, t *commitlog.Topic, id int32, f *resetFlags, cur int64, ok bool) (int64, error) {
	p, err := t.Partition(id)
	if err != nil {
		return 0, fmt.Errorf("topic %s has no partition %d (it has %d)", t.Name(), id, t.PartitionCount())
	}
	start, end := p.LogStartOffset(), p.HighWatermark()
	var off int64
	switch {
	case f.toEarliest:
		return start, nil
	case f.toLatest:
		return end, nil
	case f.toDatetime != "":
		off, err := p.OffsetForTime(f.at)
		if errors.Is(err, commitlog.ErrNoOffsetForTime) {
			return end, nil // no record at or after it: the end, as kafka-consumer-groups resets
		}
		return off, err
	case f.shiftBySet:
		if !ok {
			return 0, fmt.Errorf("%s-%d: no committed position to shift (Kafka: cannot shift offset for a partition without one); use --to-offset", t.Name(), id)
		}
		off = cur + f.shiftBy
	default:
		off = f.toOffset
	}
	if off < start {
		fmt.Fprintf(g.io.err, "%s-%d: new offset %d is below the log start offset; it is set to %d\n", t.Name(), id, off, start)
		off = start
	} else if off > end {
		fmt.Fprintf(g.io.err, "%s-%d: new offset %d is past the end; it is set to %d\n", t.Name(), id, off, end)
		off = end
	}
	return off, nil
}

// topicSpec is one --topic: a topic and some of its partitions (nil: all).
type topicSpec struct {
	topic      string
	partitions []int32
}

func parseTopicSpec(s string) (topicSpec, error) {
	name, parts, ok := strings.Cut(s, ":")
	if name == "" {
		return topicSpec{}, fmt.Errorf("--topic %q: want T, or T:P,P for some partitions", s)
	}
	spec := topicSpec{topic: name}
	if !ok {
		return spec, nil
	}
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return topicSpec{}, fmt.Errorf("--topic %q: %q is not a partition number", s, p)
		}
		if !slices.Contains(spec.partitions, int32(n)) {
			spec.partitions = append(spec.partitions, int32(n))
		}
	}
	return spec, nil
}

func resetOffsets(ctx context.Context, g *globals, id string, f *resetFlags) error {
	specs, err := f.check()
	if err != nil {
		return err
	}
	if id == "" {
		return usageError("the group id is empty")
	}

	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var d commitlog.GroupDescription
	exists := false
	if ids, err := groupIDs(s); err != nil {
		return err
	} else if slices.Contains(ids, id) {
		if d, err = s.DescribeGroup(id); err != nil {
			return err
		}
		exists = true
	}
	if exists && d.State != group.Empty {
		return nonEmpty(d, "reset")
	}
	if f.allTopics {
		if !exists || len(d.Positions) == 0 {
			return fmt.Errorf("group %s has no committed positions: name the topics with --topic", id)
		}
		for _, p := range d.Positions {
			if len(specs) == 0 || specs[len(specs)-1].topic != p.Topic {
				specs = append(specs, topicSpec{topic: p.Topic})
			}
		}
	}

	committed := map[commitlog.TopicPartition]int64{}
	for _, p := range d.Positions {
		committed[commitlog.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.Offset
	}
	plan, err := resetPlan(g, s, specs, f, committed)
	if err != nil {
		return err
	}
	positions := make(map[commitlog.TopicPartition]int64, len(plan))
	for _, c := range plan {
		positions[c.tp] = c.off
	}

	if f.execute {
		if err := s.SetGroupPositions(ctx, id, positions); err != nil {
			if errors.Is(err, commitlog.ErrUnknownMemberID) || errors.Is(err, commitlog.ErrNonEmptyGroup) {
				return fmt.Errorf("group %s has members: its positions can be reset only when it has none (%s)", id, membersLeft)
			}
			return fmt.Errorf("reset the positions of group %s: %w", id, err)
		}
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, c := range plan {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", id, c.tp.Topic, c.tp.Partition, c.off)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if !f.execute {
		fmt.Fprintln(g.io.err, "dry run: nothing changed (add --execute to commit these positions)")
		return nil
	}
	return s.Close()
}
