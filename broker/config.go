package broker

import (
	"crypto/tls"
	"log/slog"
	"time"
)

// Defaults of Config, Kafka's broker defaults where Kafka has the setting.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes: the largest request frame taken.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxConnections bounds the open client connections (Kafka's max.connections is
	// unbounded by default; a process-embedded broker keeps to its descriptors).
	DefaultMaxConnections = 1000
	// DefaultIdleTimeout is connections.max.idle.ms: a connection with no request for this long
	// is closed.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds reading one request's frame once its first byte arrived, so a
	// slow writer (a slowloris) cannot hold a connection open with a trickle of bytes.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultPartitions is num.partitions: the partition count of a topic created without one
	// (CreateTopics with -1, or auto-created by Metadata).
	DefaultPartitions = 1
	// DefaultClusterID is the cluster id Metadata and DescribeCluster answer when Config has
	// none.
	DefaultClusterID = "commitlog"
)

// maxControlRequestBytes bounds every request but Produce: kmsg allocates a slice of structs
// for each array a request holds, several times the array's encoded size, and no request other
// than Produce carries bulk data. 8 MiB is ample for OffsetCommit of tens of thousands of
// partitions.
const maxControlRequestBytes = 8 << 20

// maxUnauthenticatedBytes bounds a frame before SASL authentication completes (Kafka's
// sasl.server.max.receive.size, 512 KiB).
const maxUnauthenticatedBytes = 512 << 10

// Config configures Serve. The zero value serves plaintext without authentication, advertising
// the listener's own address.
type Config struct {
	// NodeID is the broker id clients see in Metadata and FindCoordinator (Kafka's node.id); 0
	// by default.
	NodeID int32
	// AdvertisedHost and AdvertisedPort are the address clients are told to connect to (Kafka's
	// advertised.listeners). Empty and 0 take the listener's address; a listener on 0.0.0.0 or
	// [::] then advertises 127.0.0.1, which only local clients can reach.
	AdvertisedHost string
	AdvertisedPort int32
	// ClusterID is the cluster id answered in Metadata and DescribeCluster; DefaultClusterID
	// when empty.
	ClusterID string
	// AutoCreateTopics makes a Metadata request for an unknown topic create it with
	// DefaultPartitions partitions, as Kafka's auto.create.topics.enable (true in Kafka, false
	// here by default: a typo in a client's topic name should not make a topic).
	AutoCreateTopics bool
	// DefaultPartitions is num.partitions; DefaultPartitions when 0.
	DefaultPartitions int32
	// MaxRequestBytes is socket.request.max.bytes; DefaultMaxRequestBytes when 0. A larger
	// frame closes the connection with a logged reason.
	MaxRequestBytes int32
	// MaxConnections bounds the open connections; DefaultMaxConnections when 0. A connection
	// past it is closed at once with a logged reason.
	MaxConnections int
	// IdleTimeout is connections.max.idle.ms; DefaultIdleTimeout when 0. It also bounds the
	// writing of one response: a client that takes none of it for so long is closed.
	IdleTimeout time.Duration
	// RequestTimeout bounds the reading of one request frame once it began, and, once Serve's
	// context ended, the writing of each answer still owed; DefaultRequestTimeout when 0.
	RequestTimeout time.Duration
	// TLS, when set, serves TLS on the listener (Kafka's SSL listener): every connection does a
	// TLS handshake first.
	TLS *tls.Config
	// SASL, when set, requires every connection to authenticate with SASL (Kafka's
	// SASL_PLAINTEXT, or SASL_SSL with TLS) before any request but ApiVersions and the SASL
	// handshake.
	SASL *SASLConfig
	// Logger receives connection-level events: closed connections with their reason, refused
	// frames, and at debug level each request read. slog.Default() when nil.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.ClusterID == "" {
		c.ClusterID = DefaultClusterID
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = DefaultPartitions
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
