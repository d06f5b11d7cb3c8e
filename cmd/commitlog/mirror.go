package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/mirror"
)

// saslPasswordEnv is read for the SASL password when --sasl-password is not given, so that the
// password need not be on the command line (where ps shows it).
const saslPasswordEnv = "COMMITLOG_SASL_PASSWORD"

// mirrorFlags are the flags of mirror push and mirror pull.
type mirrorFlags struct {
	brokers       string
	topics        string
	name          string
	prefix        string
	clientID      string
	tls           bool
	tlsCA         string
	saslMechanism string
	saslUser      string
	saslPassword  string
	exitAtEnd     bool
}

func newMirrorCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror push|pull [flags]",
		Short: "Mirror topics to a Kafka cluster (push) or from one (pull), exactly once",
		Long: `Mirror topics between the store in --dir and a Kafka cluster, exactly once across restarts and
kill -9: 'mirror push' ships local topics to the cluster, 'mirror pull' follows the cluster's topics
into the store. Each runs until Ctrl-C (SIGINT) or SIGTERM, which stop it cleanly (a transaction
begun is finished first; exit code 0), and the next run with the same --name resumes where it
stopped. On a terminal a progress line shows the records mirrored, the rate and the lag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("missing command: push or pull")
		},
	}
	cmd.AddCommand(newMirrorPushCommand(g), newMirrorPullCommand(g))
	return cmd
}

// clusterHelp is the part of both commands' help about reaching the cluster.
const clusterHelp = `--brokers lists the cluster's bootstrap brokers (host:port, comma-separated). --tls connects
with TLS, trusting the system's certificate authorities, or those in --tls-ca (a PEM file, which
implies --tls). --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) authenticates as
--sasl-user with --sasl-password, or with the password in the environment variable
` + saslPasswordEnv + ` when the flag is not given (the command line is visible to other users).`

func newMirrorPullCommand(g *globals) *cobra.Command {
	f := &mirrorFlags{}
	cmd := &cobra.Command{
		Use:   "pull --brokers host:port --topics a,b [flags]",
		Short: "Follow a Kafka cluster's topics into the store, exactly once",
		Long: `Follow the cluster's --topics into the store in --dir (created when missing), exactly once: a
read_committed consumer that assigns itself every partition (no consumer group) appends what it
reads to the local topics and the next positions to the local topic commitlog-mirror-pull-<name>
in one local transaction. A later run with the same --name resumes at those positions, after a
kill -9 too; records of a transaction a kill interrupted stay aborted, unseen by read_committed
readers.

A local topic is --prefix followed by the source topic's name. It is created when missing, with
the source's partition count, cleanup.policy (a compacted topic stays compacted) and
max.message.bytes; partition p goes to partition p, or, when an existing local topic has another
partition count, each record where Kafka's Java client would put its key (murmur2). While the
cluster is down the command waits and retries. A position the cluster's retention deleted before
it was pulled is logged as a loss (level ERROR, with the offsets) and pulling goes on from the
cluster's log start offset.

` + clusterHelp + `

--exit-at-end stops once every partition is caught up with the cluster (for a one-off copy).`,
		Example: `  commitlog mirror pull --brokers kafka-1:9092,kafka-2:9092 --topics orders,payments --prefix dc1.
  commitlog mirror pull --brokers kafka:9093 --topics orders --tls-ca ca.pem \
      --sasl-mechanism SCRAM-SHA-512 --sasl-user replica   # password in COMMITLOG_SASL_PASSWORD`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return mirrorPull(cmd.Context(), g, f) }),
	}
	f.register(cmd, "the cluster's topics to follow (comma-separated; required)",
		"prefix of the local topics' names (MirrorMaker's \"source.\" style: the local name is PREFIX+topic)")
	return cmd
}

// register defines the flags on cmd.
func (f *mirrorFlags) register(cmd *cobra.Command, topicsHelp, prefixHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&f.brokers, "brokers", "", "the cluster's bootstrap brokers, host:port, comma-separated (required)")
	fl.StringVar(&f.topics, "topics", "", topicsHelp)
	fl.StringVar(&f.name, "name", "default", "the mirror's name: a run resumes where the last run of this name stopped")
	fl.StringVar(&f.prefix, "prefix", "", prefixHelp)
	fl.StringVar(&f.clientID, "client-id", "commitlog-mirror", "the client.id the cluster sees")
	fl.BoolVar(&f.tls, "tls", false, "connect with TLS (the system's certificate authorities unless --tls-ca)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of the certificate authorities to trust (implies --tls)")
	fl.StringVar(&f.saslMechanism, "sasl-mechanism", "", "authenticate with SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fl.StringVar(&f.saslUser, "sasl-user", "", "the SASL user")
	fl.StringVar(&f.saslPassword, "sasl-password", "", "the SASL password (default: $"+saslPasswordEnv+")")
	fl.BoolVar(&f.exitAtEnd, "exit-at-end", false, "stop once caught up instead of running until interrupted")
}

// topicList returns the comma-separated topics of --topics, checked.
func (f *mirrorFlags) topicList() ([]string, error) {
	if strings.TrimSpace(f.topics) == "" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(f.topics, ",") {
		t = strings.TrimSpace(t)
		if err := commitlog.CheckTopicName(t); err != nil {
			return nil, usageError("--topics: %v", strings.TrimPrefix(err.Error(), "commitlog: "))
		}
		out = append(out, t)
	}
	return out, nil
}

// cluster returns the cluster the flags describe.
func (f *mirrorFlags) cluster() (mirror.Cluster, error) {
	var c mirror.Cluster
	for _, b := range strings.Split(f.brokers, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if _, _, err := splitHostPort(b, false); err != nil {
			return c, usageError("--brokers %q: %v", b, err)
		}
		c.Brokers = append(c.Brokers, b)
	}
	if len(c.Brokers) == 0 {
		return c, usageError("--brokers is required (host:port of the cluster's bootstrap brokers)")
	}
	if f.clientID == "" {
		return c, usageError("--client-id must not be empty")
	}
	c.ClientID = f.clientID
	if f.tls || f.tlsCA != "" {
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if f.tlsCA != "" {
			pem, err := os.ReadFile(f.tlsCA)
			if err != nil {
				return c, usageError("--tls-ca: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return c, usageError("--tls-ca %s: no PEM certificate in it", f.tlsCA)
			}
			c.TLS.RootCAs = pool
		}
	}
	mech, err := f.sasl()
	if err != nil {
		return c, err
	}
	c.SASL = mech
	return c, nil
}

// sasl returns the SASL mechanism the flags ask for, nil for none.
func (f *mirrorFlags) sasl() (sasl.Mechanism, error) {
	password := f.saslPassword
	if password == "" {
		password = os.Getenv(saslPasswordEnv)
	}
	if f.saslMechanism == "" {
		if f.saslUser != "" || f.saslPassword != "" {
			return nil, usageError("--sasl-user and --sasl-password need --sasl-mechanism")
		}
		return nil, nil
	}
	if f.saslUser == "" {
		return nil, usageError("--sasl-mechanism needs --sasl-user")
	}
	if password == "" {
		return nil, usageError("--sasl-mechanism needs a password: --sasl-password or $%s", saslPasswordEnv)
	}
	switch strings.ToUpper(f.saslMechanism) {
	case "PLAIN":
		return plain.Auth{User: f.saslUser, Pass: password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: f.saslUser, Pass: password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: f.saslUser, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, usageError("--sasl-mechanism %q: one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", f.saslMechanism)
}

// mirrorJob is what the command runs: mirror.Puller or mirror.Pusher, seen through a progress
// summary.
type mirrorJob struct {
	verb string // "pull" or "push"
	run  func(ctx context.Context) error
	// progress returns the records mirrored so far, the lag (records not yet mirrored; -1
	// unknown) and whether the job is caught up.
	progress func() (records, lag int64, caughtUp bool)
}

func mirrorPull(ctx context.Context, g *globals, f *mirrorFlags) error {
	cluster, err := f.cluster()
	if err != nil {
		return err
	}
	topics, err := f.topicList()
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return usageError("--topics is required: the cluster's topics to follow")
	}
	// What NewPuller checks, checked before the store is opened (or created).
	if err := commitlog.CheckTopicName(mirror.PullPositionsTopic(f.name)); err != nil {
		return usageError("--name %q: it must make a topic name, %s: %v", f.name, mirror.PullPositionsTopic(f.name),
			strings.TrimPrefix(err.Error(), "commitlog: "))
	}
	if err := checkRenamed(f.prefix, topics, "local"); err != nil {
		return err
	}
	s, err := g.openStore(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := mirror.NewPuller(s, cluster, mirror.PullConfig{Name: f.name, Topics: topics,
		Rename: mirror.Rename{Prefix: f.prefix}, Logger: g.logger()})
	if errors.Is(err, commitlog.ErrInvalidConfig) {
		return usageError("%s", strings.TrimPrefix(err.Error(), "commitlog: "))
	} else if err != nil {
		return err
	}
	fmt.Fprintf(g.io.err, "commitlog mirror pull: following %s on %s into %s (prefix %q, name %s)\n",
		strings.Join(topics, ","), strings.Join(cluster.Brokers, ","), s.Dir(), f.prefix, f.name)
	job := mirrorJob{verb: "pull", run: p.Run, progress: func() (int64, int64, bool) {
		st := p.State()
		lag, caughtUp := int64(-1), false
		if len(st.Partitions) > 0 {
			lag, caughtUp = 0, true
		}
		for _, ps := range st.Partitions {
			if ps.Lag < 0 {
				lag, caughtUp = -1, false
				break
			}
			lag += ps.Lag
			caughtUp = caughtUp && ps.Lag == 0
		}
		return st.Records, lag, caughtUp
	}}
	if err := runMirror(ctx, g, f, job); err != nil {
		return err
	}
	return s.Close()
}

// mirrorProgressInterval is how often the progress line is redrawn.
const mirrorProgressInterval = time.Second

// runMirror runs job until ctx ends (SIGINT, SIGTERM), it fails, or, with --exit-at-end, it
// has caught up; on a terminal it redraws a progress line every second. A summary line ends it.
func runMirror(ctx context.Context, g *globals, f *mirrorFlags, job mirrorJob) error {
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- job.run(jctx) }()
	began := time.Now()
	lastTime, lastRecords := began, int64(0)
	drawn := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case now := <-tick.C:
			records, lag, caughtUp := job.progress()
			if f.exitAtEnd && caughtUp {
				stop()
				err = <-done
				break loop
			}
			if g.io.errIsTerm && now.Sub(lastTime) >= mirrorProgressInterval {
				rate := float64(records-lastRecords) / now.Sub(lastTime).Seconds()
				fmt.Fprintf(g.io.err, "\r\x1b[K%s: %s, %.0f records/s, lag %s", job.verb, count(records, "record", ""), rate, lagString(lag))
				drawn = true
				lastTime, lastRecords = now, records
			}
		}
	}
	if drawn {
		fmt.Fprint(g.io.err, "\r\x1b[K")
	}
	if err != nil {
		return err
	}
	records, lag, _ := job.progress()
	elapsed := time.Since(began)
	fmt.Fprintf(g.io.err, "commitlog mirror %s: stopped; %s in %s (%.0f records/s), lag %s\n",
		job.verb, count(records, "record", ""), elapsed.Round(time.Millisecond), float64(records)/max(elapsed.Seconds(), 1e-9), lagString(lag))
	return nil
}

// lagString prints a lag, "unknown" for -1.
func lagString(lag int64) string {
	if lag < 0 {
		return "unknown"
	}
	return fmt.Sprint(lag)
}

// checkRenamed checks that each of topics makes a legal topic name with prefix before it, on
// the side whose names they become ("local", "the cluster's"): a usage error naming the first
// that does not.
func checkRenamed(prefix string, topics []string, side string) error {
	for _, t := range topics {
		if err := commitlog.CheckTopicName(prefix + t); err != nil {
			return usageError("--prefix %q: the %s name of %s: %v", prefix, side, t, strings.TrimPrefix(err.Error(), "commitlog: "))
		}
	}
	return nil
}
