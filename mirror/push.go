package mirror

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// The names Push uses on the cluster: the transactional.id of its producer and the consumer group
// holding its positions are both PushIDPrefix followed by PushConfig.Name.
const PushIDPrefix = "commitlog-mirror-push-"

// Push defaults, used for the zero values of PushConfig's fields.
const (
	// DefaultPushTransactionRecords is the most records one transaction ships.
	DefaultPushTransactionRecords = 10_000
	// DefaultPushTransactionBytes bounds the bytes (keys, values and headers) of one
	// transaction: it takes no more records once it holds this many.
	DefaultPushTransactionBytes = 16 << 20
	// DefaultPushTransactionTimeout is the producer's transaction.timeout.ms: how long the
	// cluster lets a transaction stay open before it aborts it.
	DefaultPushTransactionTimeout = time.Minute
	// DefaultPushRetryBackoff is the first wait after a failure; it doubles at each failure in a
	// row up to DefaultPushMaxRetryBackoff, and starts again after a transaction commits.
	DefaultPushRetryBackoff = 100 * time.Millisecond
	// DefaultPushMaxRetryBackoff is the longest wait between two attempts.
	DefaultPushMaxRetryBackoff = 10 * time.Second
)

// PushLossEvent is the message of the event Push logs, at slog.LevelError, when retention (or
// DeleteRecords) removed local records before they were shipped: the log start offset passed the
// position not yet shipped. Its attributes are name (PushConfig.Name), topic, partition, from
// and to (the offsets [from, to) are gone without being shipped) and lost (how many of them were
// not reported lost before, as after a retry that found the loss again; counted in offsets, so
// transaction markers count too). PushState.LossEvents and PushState.LostOffsets count them.
const PushLossEvent = "mirror: push lost records: the local log start offset passed the position not yet shipped"

// ErrPushRunning is returned by Run while another Run of the same Pusher is under way.
var ErrPushRunning = errors.New("mirror: the Pusher is already running")

// PushConfig configures a Pusher. The zero values of the optional fields take the defaults.
type PushConfig struct {
	// Name names the mirror (required): its transactional.id and the consumer group holding its
	// positions on the cluster are PushIDPrefix+Name. Two Pushers with one name fence each
	// other (each start aborts the other's open transaction); give each source store its own.
	Name string
	// Topics are the local topics to ship; empty means every topic the store holds, looked at
	// again about once a second so that new topics are picked up.
	Topics []string
	// Rename maps a local topic's name to its name on the cluster.
	Rename Rename
	// MaxTransactionRecords bounds the records of one transaction (DefaultPushTransactionRecords).
	MaxTransactionRecords int
	// MaxTransactionBytes bounds the key, value and header bytes of one transaction: it takes
	// no more records once it holds this many (DefaultPushTransactionBytes).
	MaxTransactionBytes int
	// TransactionTimeout is the producer's transaction.timeout.ms
	// (DefaultPushTransactionTimeout); it must not exceed the cluster's
	// transaction.max.timeout.ms (15 minutes by default).
	TransactionTimeout time.Duration
	// RetryBackoff is the first wait after a failure (DefaultPushRetryBackoff).
	RetryBackoff time.Duration
	// MaxRetryBackoff is the longest wait between attempts (DefaultPushMaxRetryBackoff).
	MaxRetryBackoff time.Duration
	// Logger receives the mirror's events (slog.Default when nil).
	Logger *slog.Logger
	// ClientOptions are added to the kgo client's options, after the mirror's own (for example
	// kgo.ProducerBatchCompression). Options that change transactions (TransactionalID,
	// TransactionTimeout, MaxVersions, RecordPartitioner) break the mirror's guarantee.
	ClientOptions []kgo.Opt
}

// PushPartitionState is one local partition's shipping state.
type PushPartitionState struct {
	// Topic and Partition name the local partition.
	Topic     string
	Partition int32
	// Destination is the topic the partition ships to on the cluster.
	Destination string
	// Shipped is the position committed on the cluster: every record below it has been
	// shipped, in a committed transaction; the next record shipped is the first at or after it.
	Shipped int64
	// LogStart and HighWatermark are the local log's start offset and high watermark now.
	LogStart      int64
	HighWatermark int64
	// Unshipped is HighWatermark - Shipped (0 when caught up, never negative): the offsets not
	// yet shipped, in records (transaction markers, and records of aborted local transactions,
	// count too: they are offsets the mirror has yet to pass).
	Unshipped int64
}

// PushState is a snapshot of a Pusher: its partitions (the ones a session has loaded the
// positions of, by topic then partition) and its counters since NewPusher.
type PushState struct {
	Partitions []PushPartitionState
	// Records and Bytes (keys, values and headers) are the records shipped in committed
	// transactions.
	Records, Bytes int64
	// Transactions is the number of committed transactions.
	Transactions int64
	// Retries counts the failures retried: each one closes the client and starts again from the
	// positions committed on the cluster.
	Retries int64
	// LossEvents and LostOffsets count the PushLossEvent events and the offsets they reported.
	LossEvents, LostOffsets int64
	// Running is true while Run is under way; Connected while a session is shipping (it has
	// fenced older producers and loaded its positions).
	Running, Connected bool
	// LastError is the last failure retried, nil before any.
	LastError error
}

// Unshipped returns the sum of the partitions' Unshipped.
func (s PushState) Unshipped() int64 {
	var n int64
	for _, p := range s.Partitions {
		n += p.Unshipped
	}
	return n
}

// Pusher ships local topics to a Kafka cluster, exactly once, until its Run's context ends; see
// the package documentation for the scheme. A Pusher is safe for concurrent use: State may be
// called while Run runs.
type Pusher struct {
	store   *commitlog.Store
	cluster Cluster
	cfg     PushConfig
	log     *slog.Logger
	running atomic.Bool

	mu        sync.Mutex
	parts     map[pushTP]*pushPartState
	state     PushState // counters only; Partitions is built by State
	connected bool
}

type pushTP struct {
	topic     string
	partition int32
}

// pushPartState is what the Pusher keeps of a partition across sessions.
type pushPartState struct {
	part    *commitlog.Partition
	dest    string
	shipped int64
	// [lossFrom, lossTo) are the offsets reported lost, so that a loss seen again after a retry
	// is not counted twice.
	lossFrom, lossTo int64
}

// NewPusher returns a Pusher of cfg's topics of store to cluster. It checks the configuration
// only; Run connects. Errors: a missing Name, no Brokers, a negative bound or duration.
func NewPusher(store *commitlog.Store, cluster Cluster, cfg PushConfig) (*Pusher, error) {
	switch {
	case store == nil:
		return nil, errors.New("mirror: Push needs a store")
	case cfg.Name == "":
		return nil, errors.New("mirror: PushConfig.Name is required (it names the transactional.id and the group)")
	case len(cluster.Brokers) == 0:
		return nil, errors.New("mirror: Cluster.Brokers is empty")
	case cfg.MaxTransactionRecords < 0, cfg.MaxTransactionBytes < 0, cfg.TransactionTimeout < 0,
		cfg.RetryBackoff < 0, cfg.MaxRetryBackoff < 0:
		return nil, errors.New("mirror: PushConfig bounds and durations must not be negative")
	}
	if cfg.MaxTransactionRecords == 0 {
		cfg.MaxTransactionRecords = DefaultPushTransactionRecords
	}
	if cfg.MaxTransactionBytes == 0 {
		cfg.MaxTransactionBytes = DefaultPushTransactionBytes
	}
	if cfg.TransactionTimeout == 0 {
		cfg.TransactionTimeout = DefaultPushTransactionTimeout
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultPushRetryBackoff
	}
	if cfg.MaxRetryBackoff == 0 {
		cfg.MaxRetryBackoff = DefaultPushMaxRetryBackoff
	}
	cfg.MaxRetryBackoff = max(cfg.MaxRetryBackoff, cfg.RetryBackoff)
	cfg.Topics = slices.Clone(cfg.Topics)
	return &Pusher{store: store, cluster: cluster, cfg: cfg, log: logger(cfg.Logger), parts: map[pushTP]*pushPartState{}}, nil
}

// Push ships cfg's topics of store to cluster until ctx ends: NewPusher and Run.
func Push(ctx context.Context, store *commitlog.Store, cluster Cluster, cfg PushConfig) error {
	p, err := NewPusher(store, cluster, cfg)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// Run ships until ctx ends, then returns nil; it may be called again later, and resumes where
// the cluster says it stopped (a new process does the same). A failure reaching the cluster, or
// of a transaction, is logged at slog.LevelWarn and retried with backoff from the positions
// committed on the cluster; the local log keeps accepting appends meanwhile. Run returns an
// error only for what retrying cannot mend: a local failure (the store closed, a topic missing
// or deleted, a corrupt batch) or the cluster's refusal of the mirror itself (an authorization
// or SASL failure, a record too large or invalid for it, a topic it will not create), wrapping
// the store's or the cluster's error (a *kerr.Error). ErrPushRunning while another Run is
// under way.
func (p *Pusher) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrPushRunning
	}
	defer p.running.Store(false)
	backoff := p.cfg.RetryBackoff
	for {
		progressed, err := p.session(ctx)
		p.setConnected(false)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errPushRestart) {
			continue
		}
		if err == nil {
			err = errors.New("mirror: push session ended without an error")
		}
		if pushPermanent(err) {
			p.log.Error("mirror: push stopped", "name", p.cfg.Name, "err", err)
			return err
		}
		if progressed {
			backoff = p.cfg.RetryBackoff
		}
		p.mu.Lock()
		p.state.Retries++
		p.state.LastError = err
		p.mu.Unlock()
		p.log.Warn("mirror: push failed; retrying from the positions committed on the cluster",
			"name", p.cfg.Name, "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, p.cfg.MaxRetryBackoff)
	}
}

// State returns the Pusher's state now: per partition the position shipped and the offsets not
// yet shipped (against the local high watermark read now), and the counters.
func (p *Pusher) State() PushState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state
	st.Running, st.Connected = p.running.Load(), p.connected
	st.Partitions = make([]PushPartitionState, 0, len(p.parts))
	for tp, ps := range p.parts {
		hw := ps.part.HighWatermark()
		st.Partitions = append(st.Partitions, PushPartitionState{
			Topic: tp.topic, Partition: tp.partition, Destination: ps.dest, Shipped: ps.shipped,
			LogStart: ps.part.LogStartOffset(), HighWatermark: hw, Unshipped: max(0, hw-ps.shipped),
		})
	}
	slices.SortFunc(st.Partitions, func(a, b PushPartitionState) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return st
}

func (p *Pusher) setConnected(c bool) {
	p.mu.Lock()
	p.connected = c
	p.mu.Unlock()
}

// errPushRestart ends a session so that the next one starts at once: the local topics changed
// (a topic or partitions added).
var errPushRestart = errors.New("mirror: local topics changed")

// pushLocalError marks a failure of the local store, which retrying does not mend.
type pushLocalError struct{ err error }

func (e pushLocalError) Error() string { return e.err.Error() }
func (e pushLocalError) Unwrap() error { return e.err }

func pushLocal(err error) error {
	if err == nil {
		return nil
	}
	return pushLocalError{err}
}

// pushPermanent reports whether err is one retrying cannot mend: a local failure, or the cluster
// refusing the mirror itself.
func pushPermanent(err error) bool {
	if errors.As(err, new(pushLocalError)) {
		return true
	}
	for _, e := range []*kerr.Error{
		kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed,
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.InvalidTopicException,
		kerr.PolicyViolation, kerr.InvalidReplicationFactor, kerr.InvalidConfig,
		kerr.UnsupportedForMessageFormat, kerr.OffsetMetadataTooLarge, kerr.UnsupportedVersion,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// loss records the loss of the offsets [from, to) of tp: logs PushLossEvent and counts the
// offsets not reported before.
func (p *Pusher) loss(tp pushTP, from, to int64) {
	if from >= to {
		return
	}
	p.mu.Lock()
	lost := to - from
	if ps := p.parts[tp]; ps != nil {
		if ps.lossTo > ps.lossFrom {
			lost = 0
			if from < ps.lossFrom {
				lost += min(to, ps.lossFrom) - from
			}
			if to > ps.lossTo {
				lost += to - max(from, ps.lossTo)
			}
			ps.lossFrom, ps.lossTo = min(from, ps.lossFrom), max(to, ps.lossTo)
		} else {
			ps.lossFrom, ps.lossTo = from, to
		}
	}
	if lost <= 0 {
		p.mu.Unlock()
		return
	}
	p.state.LossEvents++
	p.state.LostOffsets += lost
	p.mu.Unlock()
	p.log.Error(PushLossEvent, "name", p.cfg.Name, "topic", tp.topic, "partition", tp.partition,
		"from", from, "to", to, "lost", lost)
}
