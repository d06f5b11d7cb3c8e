package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

func newReadersCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "readers",
		Short: "List named readers; reset a reader's committed positions (kafka-consumer-groups --reset-offsets)",
		Long: `List the store's named readers (those that committed positions: 'consume --reader NAME', or a
program's ReaderConfig.Name) with the topics they have positions in. 'commitlog describe
--reader NAME' shows a reader's positions and lag; the subcommand reset-offsets sets them.`,
		Example: `  commitlog readers
  commitlog readers reset-offsets audit --topic events --to-datetime 2001-01-01T00:00:00.000 --execute`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return listReaders(g) }),
	}
	cmd.AddCommand(newReadersResetCommand(g))
	return cmd
}

func listReaders(g *globals) error {
	s, err := g.openForReading()
	if err != nil {
		return err
	}
	defer s.Close()
	names, err := s.Readers()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "READER\tTOPICS")
	for _, name := range names {
		pos, err := s.CommittedPositions(name)
		if err != nil {
			return fmt.Errorf("reader %s: %w", name, err)
		}
		fmt.Fprintf(w, "%s\t%s\n", name, dash(strings.Join(slices.Sorted(maps.Keys(pos)), ",")))
	}
	return w.Flush()
}

func newReadersResetCommand(g *globals) *cobra.Command {
	f := &resetFlags{}
	cmd := &cobra.Command{
		Use:   "reset-offsets NAME (--topic T[:P,...]... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N) [--execute]",
		Short: "Set a named reader's committed positions (a dry run unless --execute)",
		Long: `Set a named reader's committed positions as kafka-consumer-groups.sh --reset-offsets sets a
group's (the same flags as 'commitlog groups reset-offsets'): in every partition of the topics
given (--topic T, or --topic T:0,2; or --all-topics, those the reader has positions in), to the
log start offset (--to-earliest), the end (--to-latest), an offset (--to-offset N), the first
offset at or after a time (--to-datetime), or the committed position moved by N (--shift-by N).
An offset outside a partition's start and end is brought within them, with a warning.

It prints the plan (READER TOPIC PARTITION CURRENT-OFFSET NEW-OFFSET). Without --execute it is a
dry run: nothing changes. With --execute the positions are committed, as the reader's own Commit
does; a reader named for the first time is created with them. The reader must not be running
(the store is held by one process at a time).`,
		Example: `  commitlog readers reset-offsets audit --topic events --to-earliest
  commitlog readers reset-offsets audit --all-topics --shift-by -100 --execute`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			f.toOffsetSet, f.shiftBySet = cmd.Flags().Changed("to-offset"), cmd.Flags().Changed("shift-by")
			return resetReader(cmd.Context(), g, args[0], f)
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.topics, "topic", nil, "a topic to reset, T or T:P,P for some partitions (repeatable)")
	fl.BoolVar(&f.allTopics, "all-topics", false, "reset every topic the reader has committed positions in")
	resetTargetFlags(cmd, f)
	return cmd
}

func resetReader(ctx context.Context, g *globals, name string, f *resetFlags) error {
	specs, err := f.check()
	if err != nil {
		return err
	}
	s, err := g.openStore(false)
	if err != nil {
		return err
	}
	defer s.Close()
	committed, err := s.CommittedPositions(name)
	if errors.Is(err, commitlog.ErrInvalidReaderName) {
		return usageError("%s", oneLine(err.Error()))
	}
	if err != nil {
		return err
	}
	if f.allTopics {
		if len(committed) == 0 {
			return fmt.Errorf("reader %s has no committed positions: name the topics with --topic", name)
		}
		for _, topic := range slices.Sorted(maps.Keys(committed)) {
			specs = append(specs, topicSpec{topic: topic})
		}
	}
	current := map[commitlog.TopicPartition]int64{}
	for topic, parts := range committed {
		for id, off := range parts {
			current[commitlog.TopicPartition{Topic: topic, Partition: id}] = off
		}
	}
	plan, err := resetPlan(g, s, specs, f, current)
	if err != nil {
		return err
	}

	if f.execute {
		// One reader per topic, of the partitions reset, sought and committed.
		for i := 0; i < len(plan); {
			j := i
			var ids []int32
			for ; j < len(plan) && plan[j].tp.Topic == plan[i].tp.Topic; j++ {
				ids = append(ids, plan[j].tp.Partition)
			}
			r, err := plan[i].topic.NewReader(commitlog.ReaderConfig{Name: name, Partitions: ids,
				Start: commitlog.Earliest, Reset: commitlog.ResetEarliest})
			if errors.Is(err, commitlog.ErrInvalidReaderName) {
				return usageError("%s", oneLine(err.Error()))
			}
			if err != nil {
				return err
			}
			for _, c := range plan[i:j] {
				if err := r.Seek(c.tp.Partition, c.off); err != nil {
					r.Close()
					return fmt.Errorf("%s-%d: %w", c.tp.Topic, c.tp.Partition, err)
				}
			}
			err = r.Commit(ctx)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("commit the positions of reader %s in %s: %w", name, plan[i].tp.Topic, err)
			}
			i = j
		}
	}
	w := tabwriter.NewWriter(g.io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "READER\tTOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
	for _, c := range plan {
		cur := "-"
		if c.hasCur {
			cur = fmt.Sprint(c.cur)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\n", name, c.tp.Topic, c.tp.Partition, cur, c.off)
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
