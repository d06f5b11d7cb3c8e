package mirror

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pullDefaultClientID is the client.id a Pull's clients give when Cluster.ClientID is empty.
const pullDefaultClientID = "commitlog-mirror"

// pullClientOpts returns the kgo options that reach cluster: its bootstrap brokers, TLS and
// SASL when set, its client id, and log as kgo's logger (kgo's warnings and errors: a broker
// that cannot be reached, a request retried).
func pullClientOpts(cluster Cluster, log *slog.Logger) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cluster.Brokers...),
		kgo.WithLogger(pullKgoLogger{log: log}),
	}
	id := cluster.ClientID
	if id == "" {
		id = pullDefaultClientID
	}
	opts = append(opts, kgo.ClientID(id))
	if cluster.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cluster.TLS))
	}
	if cluster.SASL != nil {
		opts = append(opts, kgo.SASL(cluster.SASL))
	}
	return opts
}

// pullKgoLogger passes kgo's log lines at warning level and above to a slog.Logger.
type pullKgoLogger struct{ log *slog.Logger }

func (l pullKgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l pullKgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelInfo
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	case kgo.LogLevelDebug:
		lv = slog.LevelDebug
	}
	l.log.Log(context.Background(), lv, "kgo: "+msg, keyvals...)
}
