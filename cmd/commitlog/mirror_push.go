package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/commitlog-go/commitlog/mirror"
)

func newMirrorPushCommand(g *globals) *cobra.Command {
	f := &mirrorFlags{}
	cmd := &cobra.Command{
		Use:   "push --brokers host:port [--topics a,b] [flags]",
		Short: "Ship the store's topics to a Kafka cluster, exactly once",
		Long: `Ship the store's --topics (every topic when not given, new ones included) to the cluster, exactly
once: a transactional producer ships the records, and the positions shipped are committed on the
cluster, in the same transaction, as the offsets of the consumer group
commitlog-mirror-push-<name>. A later run with the same --name resumes there, after a kill -9
too. The store keeps taking appends while the cluster is down; the command retries with backoff.
Records retention deletes before they were shipped are logged as a loss (level ERROR, with the
offsets).

A topic's name on the cluster is --prefix followed by its local name; a missing topic is created
with the local partition count and cleanup.policy.

` + clusterHelp + `

--exit-at-end stops once everything in the store is shipped (for a one-off copy).`,
		Example: `  commitlog mirror push --brokers kafka:9092 --topics quakes --prefix edge-7.
  commitlog mirror push --brokers kafka:9093 --tls --sasl-mechanism PLAIN --sasl-user edge-7`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return mirrorPush(cmd.Context(), g, f) }),
	}
	f.register(cmd, "the store's topics to ship (comma-separated; every topic when not given)",
		"prefix of the topics' names on the cluster (the name there is PREFIX+topic)")
	return cmd
}

func mirrorPush(ctx context.Context, g *globals, f *mirrorFlags) error {
	cluster, err := f.cluster()
	if err != nil {
		return err
	}
	topics, err := f.topicList()
	if err != nil {
		return err
	}
	if f.name == "" {
		return usageError("--name must not be empty")
	}
	if err := checkRenamed(f.prefix, topics, "cluster's"); err != nil {
		return err
	}
	s, err := g.openStore(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := mirror.NewPusher(s, cluster, mirror.PushConfig{Name: f.name, Topics: topics,
		Rename: mirror.Rename{Prefix: f.prefix}, Logger: g.logger()})
	if err != nil {
		return usageError("%s", strings.TrimPrefix(err.Error(), "mirror: "))
	}
	what := "every topic"
	if len(topics) > 0 {
		what = strings.Join(topics, ",")
	}
	fmt.Fprintf(g.io.err, "commitlog mirror push: shipping %s of %s to %s (prefix %q, name %s)\n",
		what, s.Dir(), strings.Join(cluster.Brokers, ","), f.prefix, f.name)
	job := mirrorJob{verb: "push", run: p.Run, progress: func() (int64, int64, bool) {
		st := p.State()
		lag := st.Unshipped()
		return st.Records, lag, st.Connected && len(st.Partitions) > 0 && lag == 0
	}}
	if err := runMirror(ctx, g, f, job); err != nil {
		return err
	}
	return s.Close()
}
