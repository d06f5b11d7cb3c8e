package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
	"github.com/spf13/cobra"
)

// defaultListen is where serve listens unless --listen says otherwise: Kafka's port, on the
// loopback interface only, so that a broker started without flags is not reachable from other
// machines.
const defaultListen = "127.0.0.1:9092"

type serveFlags struct {
	listen          string
	advertise       string
	nodeID          int32
	clusterID       string
	autoCreate      bool
	partitions      int32
	maxConnections  int
	maxRequestBytes string
	tlsCert         string
	tlsKey          string
	saslCredentials string
	saslMechanisms  string
	metricsAddr     string
}

func newServeCommand(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the store to Kafka clients over Kafka's wire protocol (a single-node Kafka broker)",
		Long: `Serve the store in --dir (created when missing) to Kafka clients — franz-go, librdkafka and
kcat, the Java client, kafkajs — over Kafka's wire protocol, as a single-node Kafka cluster: this
node leads every partition and is the only replica. Records produced are appended to the store's
topics in Kafka's on-disk format, and fetches send the stored batches unchanged.

It listens on --listen (the loopback interface by default: give 0.0.0.0:9092 to take clients
from other machines) and tells clients to connect to --advertise (Kafka's
advertised.listeners; the listen address by default, 127.0.0.1 for a listener on every
interface). One line on standard error names the address once the listener is open (with port 0
the port the system chose).

Topics are created by clients (CreateTopics, as kafka-topics.sh --create or kadm do), by
'commitlog produce' before serving, or, with --auto-create-topics, when a client asks for an
unknown topic's metadata (a producer's first send; Kafka's auto.create.topics.enable). It is off
by default, unlike Kafka's, so that a topic name mistyped in a client's configuration is an
UNKNOWN_TOPIC_OR_PARTITION error instead of a new topic. --partitions is num.partitions: the
partition count of a topic created without one (auto-created, or CreateTopics with -1).

Retention and the log cleaner run while it serves, as in a Kafka broker. Ctrl-C (SIGINT) or
SIGTERM stops it cleanly: no new connections or requests are taken, the requests already read
are answered, the connections are closed, then the store is closed; the exit code is 0. The
store must not be open in another process. Warnings (a connection refused past
--max-connections, an append that failed in the store) go to standard error; with --verbose also
each connection closed for a reason (a frame past --max-request-bytes, an idle connection).

--tls-cert and --tls-key (PEM files) serve TLS on the listener (Kafka's SSL listener). With
--sasl-credentials every client must authenticate with SASL first (SASL_PLAINTEXT, or SASL_SSL
with TLS), by one of --sasl-mechanisms (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 by default). The
credentials file has one user a line, "user:password" or "user:SCRAM-SHA-256=[salt=...,
stored_key=...,server_key=...,iterations=...]" as kafka-configs prints SCRAM credentials, with
# comments; PLAIN over plaintext sends the password in the clear, so pair it with TLS.

--metrics-addr (off by default) serves Prometheus metrics over HTTP at /metrics on that address,
under the names the JMX exporter gives Kafka's broker metrics (kafka_log_log_logendoffset,
kafka_server_brokertopicmetrics_messagesin_total, ...) and kafka-exporter's consumer lag
(kafka_consumergroup_lag); a line on standard error names its address before the broker's.`,
		Example: `  commitlog serve
  commitlog serve --dir /var/lib/commitlog --listen 0.0.0.0:9092 --advertise kafka.internal:9092
  commitlog serve --auto-create-topics --partitions 3
  commitlog serve --tls-cert server.pem --tls-key server-key.pem --sasl-credentials users.txt
  commitlog serve --metrics-addr 127.0.0.1:9308`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return serve(cmd.Context(), g, f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", defaultListen, "host:port to take Kafka connections on (port 0: a free port)")
	fl.StringVar(&f.advertise, "advertise", "", "host:port clients are told to connect to (advertised.listeners; default: the listen address)")
	fl.Int32Var(&f.nodeID, "node-id", 0, "the broker id clients see (node.id)")
	fl.StringVar(&f.clusterID, "cluster-id", broker.DefaultClusterID, "the cluster id clients see in Metadata and DescribeCluster")
	fl.BoolVar(&f.autoCreate, "auto-create-topics", false, "create a topic when a client asks for an unknown one's metadata (auto.create.topics.enable; off so that a mistyped topic name is an error, not a new topic)")
	fl.Int32Var(&f.partitions, "partitions", broker.DefaultPartitions, "num.partitions: the partition count of a topic created without one (auto-created, or CreateTopics with -1)")
	fl.IntVar(&f.maxConnections, "max-connections", broker.DefaultMaxConnections, "the most client connections open at once; one past it is closed at once")
	fl.StringVar(&f.maxRequestBytes, "max-request-bytes", "100MiB", "socket.request.max.bytes: the largest request frame taken (a larger one closes its connection)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve TLS with; needs --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&f.saslCredentials, "sasl-credentials", "", "credentials file: require SASL authentication of every client (user:password lines, or SCRAM credentials)")
	fl.StringVar(&f.saslMechanisms, "sasl-mechanisms", "", "comma-separated SASL mechanisms to offer with --sasl-credentials (default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "host:port to serve Prometheus metrics on, at /metrics (e.g. 127.0.0.1:9308; default: none)")
	return cmd
}

// config checks the flags and returns the broker's configuration (without its logger).
func (f *serveFlags) config() (broker.Config, error) {
	var cfg broker.Config
	if _, _, err := splitHostPort(f.listen, true); err != nil {
		return cfg, usageError("--listen %q: %v", f.listen, err)
	}
	if f.metricsAddr != "" {
		if _, _, err := splitHostPort(f.metricsAddr, true); err != nil {
			return cfg, usageError("--metrics-addr %q: %v", f.metricsAddr, err)
		}
	}
	if f.advertise != "" {
		host, port, err := splitHostPort(f.advertise, false)
		if err != nil {
			return cfg, usageError("--advertise %q: %v", f.advertise, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			// Kafka refuses the meta-address in advertised.listeners too: no client can
			// connect to it.
			return cfg, usageError("--advertise %q: a host clients can connect to, not %q", f.advertise, host)
		}
		cfg.AdvertisedHost, cfg.AdvertisedPort = host, port
	}
	if f.nodeID < 0 {
		return cfg, usageError("--node-id %d: must be 0 or more", f.nodeID)
	}
	if f.clusterID == "" {
		return cfg, usageError("--cluster-id must not be empty")
	}
	if f.partitions < 1 || f.partitions > commitlog.MaxPartitions {
		return cfg, usageError("--partitions %d: must be 1 to %d", f.partitions, commitlog.MaxPartitions)
	}
	if f.maxConnections < 1 {
		return cfg, usageError("--max-connections %d: must be 1 or more", f.maxConnections)
	}
	n, err := parseSize(f.maxRequestBytes)
	if err != nil {
		return cfg, usageError("--max-request-bytes: %v", err)
	}
	// A frame holds at least its 8-byte header; a request of a few hundred bytes (ApiVersions,
	// Metadata) must fit. Kafka's own limit is an int32.
	if n < 1024 || n > 1<<31-1 {
		return cfg, usageError("--max-request-bytes %s: must be 1KiB to 2GiB-1", f.maxRequestBytes)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return cfg, usageError("--tls-cert and --tls-key go together")
	}
	if f.tlsCert != "" {
		if cfg.TLS, err = broker.LoadTLSConfig(f.tlsCert, f.tlsKey); err != nil {
			return cfg, usageError("%v", err)
		}
	}
	if f.saslMechanisms != "" && f.saslCredentials == "" {
		return cfg, usageError("--sasl-mechanisms needs --sasl-credentials")
	}
	if f.saslCredentials != "" {
		var mechs []string
		if f.saslMechanisms != "" {
			mechs = strings.Split(f.saslMechanisms, ",")
		}
		if cfg.SASL, err = broker.LoadSASLConfig(f.saslCredentials, mechs); err != nil {
			return cfg, usageError("%v", err)
		}
	}
	cfg.NodeID = f.nodeID
	cfg.ClusterID = f.clusterID
	cfg.AutoCreateTopics = f.autoCreate
	cfg.DefaultPartitions = f.partitions
	cfg.MaxConnections = f.maxConnections
	cfg.MaxRequestBytes = int32(n)
	return cfg, nil
}

// splitHostPort splits a host:port, with a port in [1, 65535] (or 0 when zeroPort).
func splitHostPort(s string, zeroPort bool) (string, int32, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, errors.New("not a host:port (like 127.0.0.1:9092)")
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || (port == 0 && !zeroPort) {
		return "", 0, fmt.Errorf("port %q: must be 1 to 65535", p)
	}
	return host, int32(port), nil
}

// serve runs the broker until ctx ends (Ctrl-C or SIGTERM), then closes the store.
func serve(ctx context.Context, g *globals, f *serveFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	log := g.logger()
	cfg.Logger = log.With("component", "broker")
	s, err := g.openStore(true)
	if err != nil {
		return err
	}
	var metrics *metricsServer
	if f.metricsAddr != "" {
		if metrics, err = startMetrics(f.metricsAddr, s, log.With("component", "metrics")); err != nil {
			s.Close()
			return fmt.Errorf("metrics: listen on %s: %w", f.metricsAddr, err)
		}
		fmt.Fprintf(g.io.err, "commitlog serve: metrics on http://%s/metrics\n", metrics.Addr())
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		if metrics != nil {
			metrics.stop()
		}
		s.Close()
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	advertised := net.JoinHostPort(cfg.AdvertisedHost, strconv.Itoa(int(cfg.AdvertisedPort)))
	if cfg.AdvertisedHost == "" {
		advertised = advertisedDefault(ln.Addr())
	}
	fmt.Fprintf(g.io.err, "commitlog serve: Kafka broker listening on %s (advertised as %s, node %d, cluster %s), store %s\n",
		ln.Addr(), advertised, cfg.NodeID, cfg.ClusterID, s.Dir())
	serveErr := broker.Serve(ctx, ln, s, cfg)
	if metrics != nil {
		if err := metrics.stop(); err != nil {
			log.Warn("metrics server stopped with an error", "err", err)
		}
	}
	closeErr := s.Close()
	if serveErr != nil {
		return serveErr
	}
	if closeErr != nil {
		return fmt.Errorf("closing the store: %w", closeErr)
	}
	fmt.Fprintf(g.io.err, "commitlog serve: stopped; store %s closed\n", s.Dir())
	return nil
}

// advertisedDefault is the address broker.Serve advertises for a listener at addr when Config
// names none: the listener's, with 127.0.0.1 for an unspecified host (0.0.0.0 or [::]).
func advertisedDefault(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
