package mirror

import (
	"crypto/tls"
	"log/slog"

	"github.com/twmb/franz-go/pkg/sasl"
)

// Cluster is how to reach the Kafka cluster on the other side of a mirror.
type Cluster struct {
	// Brokers are the bootstrap addresses, host:port (Kafka's bootstrap.servers).
	Brokers []string
	// TLS, when set, connects with TLS (Kafka's security.protocol SSL or SASL_SSL).
	TLS *tls.Config
	// SASL, when set, authenticates with it (franz-go's sasl/plain or sasl/scram mechanisms).
	SASL sasl.Mechanism
	// ClientID is the client.id the cluster sees; "commitlog-mirror" when empty.
	ClientID string
}

// Rename maps a source topic name to its name on the destination: Prefix is put before it
// (MirrorMaker 2's "source." style, with the dot given in Prefix), and an empty Rename keeps the
// name.
type Rename struct {
	Prefix string
}

// Apply returns the destination name of topic.
func (r Rename) Apply(topic string) string { return r.Prefix + topic }

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
