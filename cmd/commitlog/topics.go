package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

func newTopicsCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "topics [TOPIC...]",
		Short: "List topics: per partition, offsets, open transactions, size, segments, compaction and each named reader's lag; per topic, each group's lag",
		Long: `List the store's topics (or those named): per partition, the log start offset (the oldest
record kept), the end offset (the next record's), the last stable offset when it is below the
end (STABLE: the first offset of the oldest transaction not yet committed or aborted, where a
ReadCommitted reader stops; "-" when there is none), the number of open transactions (OPEN
TXNS), the bytes of its segments, the number of segments, the topic's cleanup.policy (delete, compact or compact,delete), for a compacted topic
the partition's cleaner point (the first offset not yet cleaned) and dirty ratio (the share of
its cleanable bytes at or past the cleaner point, which the background cleaner compares with
min.cleanable.dirty.ratio), and for each named reader that committed positions in the topic its
lag: how many records lie between its committed position and the end (offsets a compaction
removed count too).

Under a topic's partitions, when consumer groups have committed positions in it, an indented
line "groups (total lag):" names each such group with its lag summed over the topic's partitions
it has a position in (the end minus the committed position, 0 for a position at or past the
end, as 'commitlog groups describe' shows per partition).

While another process writes the store (produce, serve), topics reads it read-only: STABLE, OPEN
TXNS, CLEANER POINT and DIRTY RATIO, which that process alone knows, show "?", and the groups'
lines are left out.

--output json prints one JSON document with the same fields (see topicsJSON); it needs the
store to this process.`,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return topics(g, args, output)
		}),
	}
	outputFlag(cmd, &output)
	return cmd
}

func topics(g *globals, names []string, output string) error {
	s, err := g.openStore(false)
	if errors.As(err, new(storeBusyError)) {
		if output == "json" {
			return fmt.Errorf("%w; --output json needs the store to this process (the table works read-only)", err)
		}
		return topicsReadOnly(g, names)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if len(names) == 0 {
		names = s.Topics()
	}
	// The store's figures: each partition's offsets, size and segments, and each named reader's
	// lag (a reader whose positions cannot be read is named on standard error and left out).
	st, err := s.Stats()
	for _, e := range joinedErrors(err) {
		fmt.Fprintf(g.io.err, "commitlog topics: %s\n", oneLine(e.Error()))
	}
	figures := map[string][]commitlog.PartitionStats{}
	for _, ts := range st.Topics {
		figures[ts.Topic] = ts.Partitions
	}
	readerLag := map[string]map[string]map[int32]int64{} // reader → topic → partition → lag
	for _, r := range st.Readers {
		if readerLag[r.Name] == nil {
			readerLag[r.Name] = map[string]map[int32]int64{}
		}
		if readerLag[r.Name][r.Topic] == nil {
			readerLag[r.Name][r.Topic] = map[int32]int64{}
		}
		readerLag[r.Name][r.Topic][r.Partition] = r.Lag
	}
	groupLag, err := groupLags(s)
	if err != nil {
		return err
	}
	var ts []*commitlog.Topic
	for _, name := range names {
		t, err := topicOf(s, name)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if output == "json" {
		return topicsJSON(g, ts, figures, readerLag, groupLag)
	}
	if len(ts) == 0 {
		fmt.Fprintf(g.io.err, "no topics in %s\n", s.Dir())
		return nil
	}
	// The table is aligned as a whole, and each topic's line of groups put under its rows after:
	// a line without cells inside the tabwriter would end its column blocks.
	var table bytes.Buffer
	w := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	rows := make([]int, len(ts)) // rows[i]: the number of rows of ts[i]
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSTART\tEND\tSTABLE\tOPEN TXNS\tSIZE\tSEGMENTS\tPOLICY\tCLEANER POINT\tDIRTY RATIO\tREADERS (lag)")
	for i, t := range ts {
		policy := t.Config().CleanupPolicy
		rows[i] = int(t.PartitionCount())
		for id := range t.PartitionCount() {
			p, _ := t.Partition(id)
			var ps commitlog.PartitionStats
			if f := figures[t.Name()]; int(id) < len(f) {
				ps = f[id]
			} else {
				ps = p.Stats()
			}
			end := ps.HighWatermark
			var lags []string
			for _, name := range slices.Sorted(maps.Keys(readerLag)) {
				lag, ok := readerLag[name][t.Name()][id]
				if !ok {
					continue
				}
				lags = append(lags, name+"="+strconv.FormatInt(lag, 10))
			}
			readerCol := "-"
			if len(lags) > 0 {
				readerCol = strings.Join(lags, " ")
			}
			point, ratio := "-", "-"
			if policy.Compact() {
				st := p.CompactionState()
				point, ratio = strconv.FormatInt(st.CleanerPoint, 10), strconv.FormatFloat(st.DirtyRatio, 'f', 2, 64)
			}
			stable := "-"
			if lso := ps.LastStableOffset; lso != end {
				stable = strconv.FormatInt(lso, 10)
			}
			open := 0
			for _, ps := range p.Producers() {
				if ps.CurrentTxnFirstOffset >= 0 {
					open++
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", t.Name(), id, ps.LogStartOffset, end, stable, open,
				ps.Size, ps.Segments, policy, point, ratio, readerCol)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	out := []string{lines[0]}
	lines = lines[1:]
	for i, t := range ts {
		out = append(out, lines[:rows[i]]...)
		lines = lines[rows[i]:]
		if lags := groupLag[t.Name()]; len(lags) > 0 {
			var b strings.Builder
			b.WriteString("  groups (total lag):")
			for _, name := range slices.Sorted(maps.Keys(lags)) {
				shown := name
				if name == "" || strings.ContainsAny(name, " \t\n=\"") {
					shown = strconv.Quote(name) // a group id is any string
				}
				fmt.Fprintf(&b, " %s=%d", shown, lags[name])
			}
			out = append(out, b.String()+"\n")
		}
	}
	_, err = io.WriteString(g.io.out, strings.Join(out, ""))
	return err
}

// groupLags returns, by topic and group, the lag of each consumer group that has committed
// positions in the topic, summed over its partitions. A store without the groups' log has none
// (and is not given one).
func groupLags(s *commitlog.Store) (map[string]map[string]int64, error) {
	ids, err := groupIDs(s)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int64{}
	for _, id := range ids {
		d, err := s.DescribeGroup(id)
		if errors.Is(err, commitlog.ErrGroupIDNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range d.Positions {
			if p.Lag < 0 {
				continue // a topic the store no longer holds
			}
			if out[p.Topic] == nil {
				out[p.Topic] = map[string]int64{}
			}
			out[p.Topic][id] += p.Lag
		}
	}
	return out, nil
}

// joinedErrors returns the errors err joins (errors.Join), err alone, or none for nil.
func joinedErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// topicsReadOnly is topics for a store another process holds: it opens the store read-only
// (openStoreReadOnly) and shows "?" in the columns only the writer knows.
func topicsReadOnly(g *globals, names []string) error {
	s, err := g.openStoreReadOnly(commitlog.WithPollInterval(-1))
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(g.io.err, "the store in %s is open in another process: read-only view (STABLE, OPEN TXNS, CLEANER POINT, DIRTY RATIO and groups are that process's)\n", s.Dir())
	if len(names) == 0 {
		names = s.Topics()
	}
	readers, err := s.Readers()
	if err != nil {
		return err
	}
	positions := map[string]map[string]map[int32]int64{} // reader → topic → partition → offset
	for _, name := range readers {
		pos, err := s.CommittedPositions(name)
		if err != nil {
			fmt.Fprintf(g.io.err, "commitlog topics: reader %s: %s\n", name, oneLine(err.Error()))
			continue
		}
		positions[name] = pos
	}
	if len(names) == 0 {
		fmt.Fprintf(g.io.err, "no topics in %s\n", s.Dir())
		return nil
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSTART\tEND\tSTABLE\tOPEN TXNS\tSIZE\tSEGMENTS\tPOLICY\tCLEANER POINT\tDIRTY RATIO\tREADERS (lag)")
	for _, name := range names {
		n, err := s.PartitionCount(name)
		if errors.Is(err, commitlog.ErrUnknownTopic) {
			return fmt.Errorf("unknown topic %q in %s (topics: %s)", name, s.Dir(), strings.Join(s.Topics(), ", "))
		}
		if err != nil {
			return err
		}
		cfg, err := s.TopicConfig(name)
		if err != nil {
			return err
		}
		for id := range n {
			start, end, err := s.Offsets(name, id)
			if err != nil {
				return err
			}
			segs, size, err := s.Segments(name, id)
			if err != nil {
				return err
			}
			var lags []string
			for _, r := range slices.Sorted(maps.Keys(positions)) {
				if off, ok := positions[r][name][id]; ok {
					lags = append(lags, r+"="+strconv.FormatInt(max(end-max(off, start), 0), 10))
				}
			}
			readerCol := "-"
			if len(lags) > 0 {
				readerCol = strings.Join(lags, " ")
			}
			point := "-"
			if cfg.CleanupPolicy.Compact() {
				point = "?"
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t?\t?\t%d\t%d\t%s\t%s\t%s\t%s\n", name, id, start, end, size, segs, cfg.CleanupPolicy, point, point, readerCol)
		}
	}
	return w.Flush()
}
