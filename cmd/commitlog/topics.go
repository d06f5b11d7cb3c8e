package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

func newTopicsCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "topics [TOPIC...]",
		Short: "List topics: per partition, offsets, open transactions, size, segments, compaction and each named reader's lag",
		Long: `List the store's topics (or those named): per partition, the log start offset (the oldest
record kept), the end offset (the next record's), the last stable offset when it is below the
end (STABLE: the first offset of the oldest transaction not yet committed or aborted, where a
ReadCommitted reader stops; "-" when there is none), the number of open transactions (OPEN
TXNS), the bytes of its segments, the number of segments, the topic's cleanup.policy (delete, compact or compact,delete), for a compacted topic
the partition's cleaner point (the first offset not yet cleaned) and dirty ratio (the share of
its cleanable bytes at or past the cleaner point, which the background cleaner compares with
min.cleanable.dirty.ratio), and for each named reader that committed positions in the topic its
lag: how many records lie between its committed position and the end (offsets a compaction
removed count too). The store must not be open in another process.`,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return topics(g, args) }),
	}
}

func topics(g *globals, names []string) error {
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
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
	var ts []*commitlog.Topic
	for _, name := range names {
		t, err := topicOf(s, name)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		fmt.Fprintf(g.io.err, "no topics in %s\n", s.Dir())
		return nil
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSTART\tEND\tSTABLE\tOPEN TXNS\tSIZE\tSEGMENTS\tPOLICY\tCLEANER POINT\tDIRTY RATIO\tREADERS (lag)")
	for _, t := range ts {
		policy := t.Config().CleanupPolicy
		for id := range t.PartitionCount() {
			p, _ := t.Partition(id)
			end := p.HighWatermark()
			var lags []string
			for _, name := range slices.Sorted(maps.Keys(positions)) {
				off, ok := positions[name][t.Name()][id]
				if !ok {
					continue
				}
				lags = append(lags, name+"="+strconv.FormatInt(max(end-max(off, p.LogStartOffset()), 0), 10))
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
			if lso := p.LastStableOffset(); lso != end {
				stable = strconv.FormatInt(lso, 10)
			}
			open := 0
			for _, ps := range p.Producers() {
				if ps.CurrentTxnFirstOffset >= 0 {
					open++
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", t.Name(), id, p.LogStartOffset(), end, stable, open,
				p.Size(), p.SegmentCount(), policy, point, ratio, readerCol)
		}
	}
	return w.Flush()
}
