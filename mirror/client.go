package mirror

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clientOpts returns the kgo options that reach c: its bootstrap brokers, TLS, SASL and client
// id ("commitlog-mirror" when empty), with kgo's warnings and errors logged to log.
func clientOpts(c Cluster, log *slog.Logger) []kgo.Opt {
	id := c.ClientID
	if id == "" {
		id = "commitlog-mirror"
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(id),
		kgo.WithLogger(kgoLogger{logger(log)}),
	}
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.Clone()))
	}
	if c.SASL != nil {
		opts = append(opts, kgo.SASL(c.SASL))
	}
	return opts
}

// kgoLogger passes kgo's warnings and errors to an slog.Logger; kgo's info and debug lines
// (every request, every transaction) are left out.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
	default:
		return
	}
	k.l.Log(context.Background(), lv, "kgo: "+msg, keyvals...)
}
