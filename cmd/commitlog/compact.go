package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

func newCompactCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "compact [TOPIC...]",
		Short: "Compact topics now: keep the latest record of every key (cleanup.policy compact)",
		Long: `Clean the compacted topics named (every topic whose cleanup.policy is compact or
compact,delete when none is named) now, whatever their dirty ratio, as Kafka's log cleaner does
when it picks a partition: in each partition everything from the cleaner point up to the active
segment is cleaned, keeping the latest record of every key and tombstones younger than
delete.retention.ms, and the records' offsets (a cleaned log has gaps; a read at a removed
offset returns the next record).

It prints one line per topic, summed over its partitions: the cleaning passes (more than one
when the keys did not fit the dedupe buffer at once), the bytes read and written, the records
read and removed, the segments replaced and the segments they became, and the cleaner point
after the clean (the highest of its partitions'; 'commitlog topics' shows each partition's).

A named topic whose cleanup.policy does not compact is an error, and nothing is cleaned. Ctrl-C
drops the clean in progress (its partition stays as it was). The store must not be open in
another process.`,
		Example: `  commitlog compact
  commitlog compact users prices`,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return compact(cmd.Context(), g, args) }),
	}
}

func compact(ctx context.Context, g *globals, names []string) error {
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var ts []*commitlog.Topic
	if len(names) == 0 {
		for _, name := range s.Topics() {
			t, err := topicOf(s, name)
			if err != nil {
				return err
			}
			if t.Config().CleanupPolicy.Compact() {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			fmt.Fprintf(g.io.err, "no compacted topics in %s\n", s.Dir())
			return nil
		}
	}
	for _, name := range names {
		t, err := topicOf(s, name)
		if err != nil {
			return err
		}
		if p := t.Config().CleanupPolicy; !p.Compact() {
			return notCompacted(t.Name(), p)
		}
		ts = append(ts, t)
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPASSES\tBYTES READ\tBYTES WRITTEN\tRECORDS READ\tRECORDS REMOVED\tSEGMENTS\tCLEANER POINT")
	for _, t := range ts {
		r, err := t.Compact(ctx)
		if err != nil {
			w.Flush()
			switch {
			case ctx.Err() != nil:
				fmt.Fprintf(g.io.err, "commitlog compact: interrupted while cleaning %s; its partition in progress is as it was\n", t.Name())
				return errInterrupted
			case errors.Is(err, commitlog.ErrInvalidConfig):
				return notCompacted(t.Name(), t.Config().CleanupPolicy)
			}
			return fmt.Errorf("compact %s: %w", t.Name(), err)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d -> %d\t%d\n", t.Name(), r.Passes, r.BytesRead, r.BytesWritten,
			r.RecordsRead, r.RecordsRemoved, r.SegmentsBefore, r.SegmentsAfter, r.CleanerPoint)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return s.Close()
}

// notCompacted is the error for a topic named to compact whose policy does not.
func notCompacted(topic string, p commitlog.CleanupPolicy) error {
	return fmt.Errorf("topic %q has cleanup.policy %s, which does not compact (a topic is created compacted with produce --cleanup-policy compact)", topic, p)
}
