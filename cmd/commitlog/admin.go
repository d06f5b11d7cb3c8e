package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

// openForReading opens the store for a command that changes nothing (describe, topics, verify's
// summary): the one place to change when read-only commands get their own opener.
func (g *globals) openForReading() (*commitlog.Store, error) { return g.openStore(false) }

// outputFlag adds --output (text or json) to cmd.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVar(out, "output", "text", "text (aligned columns) or json (one JSON document, for scripts)")
}

// checkOutput returns a usage error unless out is text or json.
func checkOutput(out string) error {
	if out != "text" && out != "json" {
		return usageError("--output %q: want text or json", out)
	}
	return nil
}

// writeJSON writes v, indented, as the command's one JSON document.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

type describeTopicFlags struct {
	reader string
	group  string
	output string
}

func newDescribeCommand(g *globals) *cobra.Command {
	f := &describeTopicFlags{}
	cmd := &cobra.Command{
		Use:   "describe (TOPIC | --reader NAME | --group ID)",
		Short: "A topic's partitions and configuration; a named reader's positions and lag (kafka-topics --describe, kafka-configs --describe)",
		Long: `Describe a topic as kafka-topics.sh --describe and kafka-configs.sh --describe --all show it:
its id and partition count; per partition the log start offset (the oldest record kept), the log
end offset, the high watermark (the end readers see), the size of its segments in bytes and the
number of segments; then every topic config with its value and source: DYNAMIC_TOPIC_CONFIG
when the topic sets it (at creation or with alter-config), DEFAULT_CONFIG otherwise, as Kafka's
DescribeConfigs reports them.

--reader NAME describes a named reader instead: per topic and partition it has committed a
position in, the position (the next offset it reads), the high watermark and the lag between
them (0 when the position is at or past the end). --group ID is 'commitlog groups describe ID'.

--output json prints one JSON document with the same fields. An unknown topic, reader or group
is a data problem: exit code 1.`,
		Example: `  commitlog describe orders
  commitlog describe orders --output json | jq '.configs[] | select(.source == "DYNAMIC_TOPIC_CONFIG")'
  commitlog describe --reader audit`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			set := 0
			for _, b := range []bool{len(args) == 1, f.reader != "", f.group != ""} {
				if b {
					set++
				}
			}
			if set != 1 {
				return usageError("give one of TOPIC, --reader NAME and --group ID")
			}
			switch {
			case f.reader != "":
				return describeReader(g, f.reader, f.output)
			case f.group != "":
				if f.output == "json" {
					return usageError("--group: --output json is not supported; see 'commitlog groups describe'")
				}
				return describe(g, f.group, &describeFlags{})
			}
			return describeTopic(g, args[0], f.output)
		}),
	}
	cmd.Flags().StringVar(&f.reader, "reader", "", "describe this named reader's positions and lag")
	cmd.Flags().StringVar(&f.group, "group", "", "describe this consumer group (as 'groups describe')")
	outputFlag(cmd, &f.output)
	return cmd
}

// topicDescription is describe's JSON document of a topic.
type topicDescription struct {
	Topic      string                 `json:"topic"`
	ID         string                 `json:"id"`
	Partitions []partitionDescription `json:"partitions"`
	Configs    []configEntry          `json:"configs"`
}

type partitionDescription struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	Size           int64 `json:"size_bytes"`
	Segments       int   `json:"segments"`
}

// configEntry is one topic config as kafka-configs --describe --all shows it.
type configEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // DYNAMIC_TOPIC_CONFIG or DEFAULT_CONFIG
}

// topicConfigEntries returns t's configs, sorted by name, with their sources: the effective values
// (Topic.Config), DYNAMIC_TOPIC_CONFIG for those the topic sets (KafkaConfigOverrides of
// Topic.StoredConfig).
func topicConfigEntries(t *commitlog.Topic) []configEntry {
	all := t.Config().KafkaConfigs()
	set := t.StoredConfig().KafkaConfigOverrides()
	var out []configEntry
	for _, name := range slices.Sorted(maps.Keys(all)) {
		e := configEntry{Name: name, Value: all[name], Source: "DEFAULT_CONFIG"}
		if _, ok := set[name]; ok {
			e.Source = "DYNAMIC_TOPIC_CONFIG"
		}
		out = append(out, e)
	}
	return out
}

func describeTopic(g *globals, name, output string) error {
	s, err := g.openForReading()
	if err != nil {
		return err
	}
	defer s.Close()
	t, err := topicOf(s, name)
	if err != nil {
		return err
	}
	d := topicDescription{Topic: t.Name(), ID: t.ID().String(), Configs: topicConfigEntries(t)}
	for id := range t.PartitionCount() {
		p, err := t.Partition(id)
		if err != nil {
			return err
		}
		d.Partitions = append(d.Partitions, partitionDescription{Partition: id, LogStartOffset: p.LogStartOffset(),
			LogEndOffset: p.LogEndOffset(), HighWatermark: p.HighWatermark(), Size: p.Size(), Segments: p.SegmentCount()})
	}
	if output == "json" {
		return writeJSON(g.io.out, d)
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\n\n", d.Topic, d.ID, len(d.Partitions))
	fmt.Fprintln(w, "PARTITION\tLOG-START-OFFSET\tLOG-END-OFFSET\tHIGH-WATERMARK\tSIZE\tSEGMENTS")
	for _, p := range d.Partitions {
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\n", p.Partition, p.LogStartOffset, p.LogEndOffset, p.HighWatermark, p.Size, p.Segments)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(g.io.out, "\nDynamic configs and defaults for topic %s:\n", d.Topic)
	w = tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CONFIG\tVALUE\tSOURCE")
	for _, c := range d.Configs {
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, c.Value, c.Source)
	}
	return w.Flush()
}

// readerDescription is describe --reader's JSON document.
type readerDescription struct {
	Reader    string           `json:"reader"`
	Positions []readerPosition `json:"positions"`
}

type readerPosition struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Position      int64  `json:"position"`
	HighWatermark int64  `json:"high_watermark"` // -1: the store no longer holds the partition
	Lag           int64  `json:"lag"`            // -1 with it
}

func describeReader(g *globals, name, output string) error {
	s, err := g.openForReading()
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.CommittedPositions(name); errors.Is(err, commitlog.ErrInvalidReaderName) {
		return usageError("--reader: %s", oneLine(err.Error())) // as consume --reader
	}
	names, err := s.Readers()
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return fmt.Errorf("no reader %q has committed positions in %s (readers: %s)", name, s.Dir(), list)
	}
	pos, err := s.CommittedPositions(name)
	if err != nil {
		return err
	}
	d := readerDescription{Reader: name, Positions: []readerPosition{}}
	for _, topic := range slices.Sorted(maps.Keys(pos)) {
		for _, id := range slices.Sorted(maps.Keys(pos[topic])) {
			rp := readerPosition{Topic: topic, Partition: id, Position: pos[topic][id], HighWatermark: -1, Lag: -1}
			if t, err := s.Topic(topic); err == nil {
				if p, err := t.Partition(id); err == nil {
					rp.HighWatermark = p.HighWatermark()
					rp.Lag = max(rp.HighWatermark-max(rp.Position, p.LogStartOffset()), 0)
				}
			}
			d.Positions = append(d.Positions, rp)
		}
	}
	if output == "json" {
		return writeJSON(g.io.out, d)
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "READER\tTOPIC\tPARTITION\tPOSITION\tHIGH-WATERMARK\tLAG")
	for _, p := range d.Positions {
		end, lag := "-", "-"
		if p.HighWatermark >= 0 {
			end, lag = fmt.Sprint(p.HighWatermark), fmt.Sprint(p.Lag)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\n", name, p.Topic, p.Partition, p.Position, end, lag)
	}
	return w.Flush()
}

func newDeleteTopicCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete-topic TOPIC...",
		Short: "Delete topics with their records and every reader's positions in them (kafka-topics --delete)",
		Long: `Delete topics as kafka-topics.sh --delete does: their folders are renamed "<folder>-delete" and
removed, their committed positions are removed from every named reader and every consumer group,
and a topic created again under the name starts empty with a new topic id. An unknown topic is a
data problem (exit code 1), and a name given twice a usage error (exit code 2); then nothing is
deleted.`,
		Example: `  commitlog delete-topic scratch`,
		Args:    cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			for i, name := range args {
				if slices.Contains(args[:i], name) {
					return usageError("topic %s is given twice", name)
				}
			}
			s, err := g.openStore(false)
			if err != nil {
				return err
			}
			defer s.Close()
			for _, name := range args {
				if _, err := topicOf(s, name); err != nil {
					return err
				}
			}
			for _, name := range args {
				if err := s.DeleteTopic(name); err != nil {
					return fmt.Errorf("delete topic %s: %w", name, err)
				}
				fmt.Fprintf(g.io.out, "deleted topic %s\n", name)
			}
			return s.Close()
		}),
	}
}

type alterConfigFlags struct {
	add []string
	del []string
}

func newAlterConfigCommand(g *globals) *cobra.Command {
	f := &alterConfigFlags{}
	cmd := &cobra.Command{
		Use:   "alter-config TOPIC [--add-config k=v,...] [--delete-config k,...]",
		Short: "Set or reset a topic's configs (kafka-configs --alter)",
		Long: `Change a topic's configuration as kafka-configs.sh --alter --entity-type topics does (Kafka's
IncrementalAlterConfigs): --add-config sets configs (name=value, comma-separated; a value holding
commas goes in brackets, as kafka-configs takes them: cleanup.policy=[compact,delete]),
--delete-config returns configs to their defaults. Names and values are Kafka's (retention.ms in
milliseconds, -1 for forever; segment.bytes in bytes; see 'commitlog describe TOPIC' for the
list), checked as Kafka's broker checks them; an unknown name or a bad value changes nothing.
The change is stored with the topic (it survives a restart) and applies at once: retention from
the next check, segment rolls from the next append.

flush.ms and flush.messages cannot change here (the store's sync policy).`,
		Example: `  commitlog alter-config flights --add-config retention.ms=-1
  commitlog alter-config events --add-config retention.ms=86400000,cleanup.policy=[compact,delete]
  commitlog alter-config events --delete-config retention.ms`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error { return alterConfig(g, args[0], f) }),
	}
	cmd.Flags().StringArrayVar(&f.add, "add-config", nil, "configs to set: name=value[,name=value...] (repeatable)")
	cmd.Flags().StringArrayVar(&f.del, "delete-config", nil, "configs to return to their defaults: name[,name...] (repeatable)")
	return cmd
}

// splitConfigs splits kafka-configs' --add-config list at the commas outside brackets, and
// takes the brackets off a value: a=1,b=[x,y] is a=1 and b=x,y.
func splitConfigs(s string) ([][2]string, error) {
	var out [][2]string
	depth, start := 0, 0
	var items []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("--add-config %q: unbalanced brackets", s)
	}
	items = append(items, s[start:])
	for _, it := range items {
		name, value, ok := strings.Cut(it, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--add-config %q: want name=value, got %q", s, it)
		}
		if strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]") {
			value = value[1 : len(value)-1]
		}
		out = append(out, [2]string{name, value})
	}
	return out, nil
}

func alterConfig(g *globals, topic string, f *alterConfigFlags) error {
	var sets [][2]string
	for _, a := range f.add {
		kv, err := splitConfigs(a)
		if err != nil {
			return usageError("%v", err)
		}
		sets = append(sets, kv...)
	}
	var dels []string
	for _, d := range f.del {
		for _, name := range strings.Split(d, ",") {
			if name = strings.TrimSpace(name); name != "" {
				dels = append(dels, name)
			}
		}
	}
	if len(sets)+len(dels) == 0 {
		return usageError("give --add-config or --delete-config")
	}
	for _, kv := range sets {
		if slices.Contains(dels, kv[0]) {
			return usageError("%s is in both --add-config and --delete-config", kv[0])
		}
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	t, err := topicOf(s, topic)
	if err != nil {
		return err
	}
	cfg := t.StoredConfig()
	for _, kv := range sets {
		if cfg, err = cfg.SetKafkaConfig(kv[0], kv[1]); err != nil {
			return configError(err)
		}
	}
	for _, name := range dels {
		if cfg, err = cfg.ResetKafkaConfig(name); err != nil {
			return configError(err)
		}
	}
	if err := s.AlterTopicConfig(topic, cfg); err != nil {
		return configError(err)
	}
	fmt.Fprintf(g.io.out, "altered the configs of topic %s\n", topic)
	return s.Close()
}

// configError is a config the library refuses: a usage error (the command line named it).
func configError(err error) error {
	if errors.Is(err, commitlog.ErrInvalidConfig) {
		return usageError("%s", oneLine(err.Error()))
	}
	return err
}

type deleteRecordsFlags struct {
	partitions []int32
	before     int64
}

func newDeleteRecordsCommand(g *globals) *cobra.Command {
	f := &deleteRecordsFlags{}
	cmd := &cobra.Command{
		Use:   "delete-records TOPIC --partition P --before OFFSET",
		Short: "Delete a partition's records below an offset: move its log start offset (kafka-delete-records)",
		Long: `Delete the records below OFFSET in the partitions given, as kafka-delete-records.sh (Kafka's
DeleteRecords) does: each partition's log start offset rises to OFFSET (never falls), the
segments wholly below it are deleted, and readers below it are moved by their reset policy.
--before -1 is the high watermark: every record goes. It prints each partition's new log start
offset (Kafka's low watermark). An offset past the high watermark, or a topic whose
cleanup.policy is compact alone (Kafka refuses it too: POLICY_VIOLATION), is a data problem.`,
		Example: `  commitlog delete-records events --partition 0 --before 1000
  commitlog delete-records events --partition 0,1,2 --before -1`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error { return deleteRecords(cmd, g, args[0], f) }),
	}
	cmd.Flags().Int32SliceVarP(&f.partitions, "partition", "p", nil, "the partitions (comma-separated; required)")
	cmd.Flags().Int64Var(&f.before, "before", 0, "delete the records below this offset (-1: the high watermark; required)")
	cmd.MarkFlagRequired("partition")
	cmd.MarkFlagRequired("before")
	return cmd
}

func deleteRecords(cmd *cobra.Command, g *globals, topic string, f *deleteRecordsFlags) error {
	if f.before < -1 {
		return usageError("--before %d: want an offset, or -1 for the high watermark", f.before)
	}
	for i, id := range f.partitions {
		if id < 0 {
			return usageError("--partition %d: want a partition number", id)
		}
		if slices.Contains(f.partitions[:i], id) {
			return usageError("--partition %d is given twice (kafka-delete-records refuses duplicate partitions)", id)
		}
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	t, err := topicOf(s, topic)
	if err != nil {
		return err
	}
	var parts []*commitlog.Partition
	for _, id := range f.partitions {
		p, err := t.Partition(id)
		if err != nil {
			return fmt.Errorf("topic %s has no partition %d (it has %d)", topic, id, t.PartitionCount())
		}
		if f.before > p.HighWatermark() {
			return fmt.Errorf("%s-%d: offset %d is past the high watermark %d (Kafka's OFFSET_OUT_OF_RANGE); nothing deleted", topic, id, f.before, p.HighWatermark())
		}
		parts = append(parts, p)
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tLOW-WATERMARK")
	for i, p := range parts {
		low, err := p.DeleteRecords(cmd.Context(), f.before)
		if errors.Is(err, commitlog.ErrPolicyViolation) {
			return fmt.Errorf("topic %s has cleanup.policy compact: its records are removed by compaction, not deleted by offset (Kafka's POLICY_VIOLATION)", topic)
		}
		if err != nil {
			return fmt.Errorf("%s-%d: %w", topic, f.partitions[i], err)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\n", topic, f.partitions[i], low)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return s.Close()
}
