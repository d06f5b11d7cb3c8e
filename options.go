package commitlog

import (
	"log/slog"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// Option configures how a log or store is opened.
type Option func(*options)

type options struct {
	logger *slog.Logger
	sync   SyncPolicy
	now    func() time.Time
	fs     fsys.FS

	retentionCheckInterval time.Duration
}

func newOptions(opts []Option) options {
	o := options{sync: SyncAlways, now: time.Now, retentionCheckInterval: DefaultRetentionCheckInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.fs == nil {
		o.fs = fsys.OS()
	}
	return o
}

// WithLogger sets the logger for recovery, truncation and other events. By default nothing is
// logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSync sets the default sync policy for logs whose config says SyncDefault. Without it the
// default is SyncAlways.
func WithSync(p SyncPolicy) Option {
	return func(o *options) {
		if p != SyncDefault {
			o.sync = p
		}
	}
}

// WithClock replaces time.Now as the source of append times and of the clock that segment rolls
// and timestamps are checked against; for deterministic tests.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithRetentionCheckInterval sets how often a store applies retention in the background (Kafka's
// log.retention.check.interval.ms, default 5 minutes). A negative d turns the background check off;
// ApplyRetention still runs it on demand.
func WithRetentionCheckInterval(d time.Duration) Option {
	return func(o *options) {
		if d != 0 {
			o.retentionCheckInterval = d
		}
	}
}

// withFS replaces the file system; the in-memory store and fault-injection tests use it.
func withFS(fs fsys.FS) Option { return func(o *options) { o.fs = fs } }
