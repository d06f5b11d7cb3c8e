package mirror

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// DefaultPullMaxRecords is how many source records one local transaction of a Pull holds at
// most when PullConfig.MaxRecords is 0.
const DefaultPullMaxRecords = 10_000

// DefaultPullName is the mirror name a Pull uses when PullConfig.Name is empty.
const DefaultPullName = "default"

// PullLossEvent is the message of the Error-level log record a Pull writes when the cluster's
// log start offset of a partition passed the position pulled: the cluster deleted records
// (retention, or a DeleteRecords) before they were pulled. Its attributes are the source
// topic and partition, the position ("from"), the cluster's log start offset ("to", where
// pulling continues) and the count of offsets lost ("lost", to - from; an offset may have held
// a transaction marker or an aborted record rather than a record a read_committed consumer
// would have seen).
const PullLossEvent = "mirror pull: records lost: the cluster deleted them before they were pulled"

// pullNamePrefix begins a Pull's transactional id and positions topic.
const pullNamePrefix = "commitlog-mirror-pull-"

// PullPositionsTopic returns the local topic in which the Pull named name keeps its positions
// in the cluster's partitions: "commitlog-mirror-pull-<name>", compacted, one partition. The
// Pull's local transactional id is the same string.
func PullPositionsTopic(name string) string { return pullNamePrefix + name }

// ErrPullRunning is returned by Puller.Run while another Run of the same Puller is under way.
var ErrPullRunning = errors.New("mirror: the Puller is already running")

// PullConfig configures a Pull. Only Topics is required.
type PullConfig struct {
	// Name names the mirror (DefaultPullName, "default", when empty). It names the local
	// transactional id and the positions topic (PullPositionsTopic), so it is what makes a
	// later Pull resume where this one stopped; two Pulls of one store with the same Name
	// fence each other, and a Pull that follows another cluster, or renames differently,
	// needs a Name of its own. Name follows Kafka's topic-name rule, at most 227 characters.
	Name string
	// Topics are the cluster's topics to follow, every partition of each.
	Topics []string
	// Rename gives each topic's local name (the prefix rule; the same name when empty).
	Rename Rename
	// MaxRecords bounds one local transaction: at most this many source records (and their
	// positions) are appended and committed together. 0 means DefaultPullMaxRecords.
	MaxRecords int
	// Logger receives the Pull's events (topics created, loss events, retries) and kgo's
	// warnings; slog.Default() when nil.
	Logger *slog.Logger
}

// Puller follows a Kafka cluster's topics into a local store, exactly once: Run does the work,
// State tells how far it got. NewPuller makes one; Pull is NewPuller and Run in one call.
//
// Each cluster partition is read from the position stored locally, with a read_committed
// consumer that assigns itself the partitions (no consumer group: nothing on the cluster side
// has to agree). The records of a poll, at most MaxRecords, are appended to the local topics
// and the next position of every source partition read is appended to the positions topic
// (PullPositionsTopic, one record per partition, key "<topic>/<partition>", value the next
// offset in decimal), all in one transaction of a local transactional producer; the store
// commits it whole or not at all. A new Run starts a producer with the same transactional id,
// which fences an older one still alive and aborts what a killed one left open, then reads the
// positions back with a read_committed reader (the last value per key) and fetches from there;
// a partition without a position starts at the cluster's log start offset. So a local
// read_committed reader sees every committed source record exactly once, however often the
// process is killed; records of a killed run's open transaction stay in the log as aborted
// records, as in Kafka.
type Puller struct {
	store   *commitlog.Store
	cluster Cluster
	cfg     PullConfig
	log     *slog.Logger

	running atomic.Bool

	mu    sync.Mutex
	state pullCounters
	parts map[pullTP]*PullPartitionState
}

// pullCounters are the totals of PullState.
type pullCounters struct {
	records, bytes, txns, lossEvents, lostOffsets int64
}

// PullState is a snapshot of a Puller's progress in its current (or last) Run.
type PullState struct {
	// Partitions has one entry per source partition, by topic and partition; empty until Run
	// has found the cluster's topics.
	Partitions []PullPartitionState
	// Records is how many source records Run committed to the local store; Bytes their key,
	// value and header bytes.
	Records, Bytes int64
	// Transactions is how many local transactions Run committed (those that only moved
	// positions, past markers or a loss event, included).
	Transactions int64
	// LossEvents is how many times Run found a partition's position below the cluster's log
	// start offset (PullLossEvent); LostOffsets the offsets those events skipped in total.
	LossEvents, LostOffsets int64
}

// PullPartitionState is a source partition's progress.
type PullPartitionState struct {
	// Topic and Partition name the cluster's partition; LocalTopic is where its records go.
	Topic      string
	Partition  int32
	LocalTopic string
	// Position is the next offset of the partition to pull, as committed in the local store;
	// -1 while nothing is stored (pulling starts at the cluster's log start offset).
	Position int64
	// HighWatermark is the cluster's high watermark of the partition when last seen (in a
	// fetch response, or listed when Run began); -1 when not yet known.
	HighWatermark int64
	// Lag is the records not yet pulled: HighWatermark - Position (from the cluster's log
	// start offset while Position is -1), never below 0; -1 when not known. It counts
	// offsets, as Kafka's consumer lag does: transaction markers and aborted records are in it
	// until the position passes them.
	Lag int64
	// Lost is the offsets of the partition lost to loss events in this Run (see PullLossEvent).
	Lost int64

	logStart int64 // the cluster's log start offset when last seen; -1 unknown
}

// pullTP is a source partition.
type pullTP struct {
	topic     string
	partition int32
}

func (tp pullTP) key() string { return tp.topic + "/" + strconv.Itoa(int(tp.partition)) }

func (tp pullTP) compare(o pullTP) int {
	return cmp.Or(strings.Compare(tp.topic, o.topic), cmp.Compare(tp.partition, o.partition))
}

// NewPuller checks cfg and returns a Puller of cluster's topics into store. Nothing is
// contacted or created until Run.
//
// commitlog.ErrInvalidConfig (wrapped, saying why) for no Topics, a topic named twice, no
// Brokers, a negative MaxRecords, a Name or local topic name that is not a legal topic name, or
// a local name that is the positions topic.
func NewPuller(store *commitlog.Store, cluster Cluster, cfg PullConfig) (*Puller, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: mirror pull: no store", commitlog.ErrInvalidConfig)
	}
	if len(cluster.Brokers) == 0 {
		return nil, fmt.Errorf("%w: mirror pull: no brokers", commitlog.ErrInvalidConfig)
	}
	if cfg.Name == "" {
		cfg.Name = DefaultPullName
	}
	if err := commitlog.CheckTopicName(PullPositionsTopic(cfg.Name)); err != nil {
		return nil, fmt.Errorf("%w: mirror pull name %q: %w", commitlog.ErrInvalidConfig, cfg.Name, err)
	}
	if cfg.MaxRecords < 0 {
		return nil, fmt.Errorf("%w: mirror pull: MaxRecords %d", commitlog.ErrInvalidConfig, cfg.MaxRecords)
	}
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = DefaultPullMaxRecords
	}
	if len(cfg.Topics) == 0 {
		return nil, fmt.Errorf("%w: mirror pull: no topics", commitlog.ErrInvalidConfig)
	}
	seen := map[string]bool{}
	for _, t := range cfg.Topics {
		if seen[t] {
			return nil, fmt.Errorf("%w: mirror pull: topic %q named twice", commitlog.ErrInvalidConfig, t)
		}
		seen[t] = true
		if err := commitlog.CheckTopicName(t); err != nil {
			return nil, fmt.Errorf("%w: mirror pull: topic: %w", commitlog.ErrInvalidConfig, err)
		}
		local := cfg.Rename.Apply(t)
		if err := commitlog.CheckTopicName(local); err != nil {
			return nil, fmt.Errorf("%w: mirror pull: local name of topic %q: %w", commitlog.ErrInvalidConfig, t, err)
		}
		if local == PullPositionsTopic(cfg.Name) {
			return nil, fmt.Errorf("%w: mirror pull: local name of topic %q is the positions topic", commitlog.ErrInvalidConfig, t)
		}
	}
	cfg.Topics = slices.Clone(cfg.Topics)
	return &Puller{store: store, cluster: cluster, cfg: cfg, log: logger(cfg.Logger).With("mirror", "pull", "name", cfg.Name)}, nil
}

// Pull follows cluster's topics into store until ctx ends: NewPuller(store, cluster, cfg) and
// its Run.
func Pull(ctx context.Context, store *commitlog.Store, cluster Cluster, cfg PullConfig) error {
	p, err := NewPuller(store, cluster, cfg)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// State returns the Puller's progress: per source partition the position pulled, the
// cluster's high watermark and the lag, and the totals of the current or last Run. Safe to
// call at any time, from any goroutine.
func (p *Puller) State() PullState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PullState{Records: p.state.records, Bytes: p.state.bytes, Transactions: p.state.txns,
		LossEvents: p.state.lossEvents, LostOffsets: p.state.lostOffsets}
	for _, tp := range slices.SortedFunc(maps.Keys(p.parts), pullTP.compare) {
		ps := *p.parts[tp]
		ps.Lag = -1
		from := ps.Position
		if from < 0 {
			from = ps.logStart
		}
		if ps.HighWatermark >= 0 && from >= 0 {
			ps.Lag = max(0, ps.HighWatermark-from)
		}
		st.Partitions = append(st.Partitions, ps)
	}
	return st
}

// Run pulls until ctx ends, then returns nil; a transaction begun is finished first (committed,
// or aborted when it failed), so a stop loses and repeats nothing. It first looks up the
// topics on the cluster (retrying, with the lookup failures logged, until they exist and the
// cluster answers; a failed SASL authentication, a refused authorization or an untrusted
// certificate ends Run with the error instead), creates the local topics that are missing (the source's partition count and
// cleanup.policy, so a compacted topic stays compacted, and its max.message.bytes; timestamps
// are not checked against the clock, as Kafka's default message.timestamp.after.max.ms does
// not), and the positions topic; it sets each local topic's partitioner to
// commitlog.ManualPartitioner, which places every record itself.
//
// Partition mapping: a source partition goes to the same partition number when the local topic
// has as many partitions as the source topic, else each record goes where Kafka's Java client
// would put its key (commitlog.Murmur2Partitioner; null keys spread). Partitions added on the
// cluster after Run began are picked up by the next Run.
//
// While the cluster is down or slow Run waits: kgo retries with backoff, nothing is skipped.
// A position below the cluster's log start offset (retention deleted records not yet pulled)
// is a loss event: logged at Error as PullLossEvent, counted in State, and the position moves
// to the log start offset in a local transaction of its own. A position past the cluster's
// high watermark (the topic was deleted and created again, or is another cluster's) stops Run
// with commitlog.ErrOffsetOutOfRange: pulling from anywhere would skip or repeat records.
//
// Other errors end Run: the local store's (the transaction is aborted; what it held is pulled
// again by the next Run), an existing local topic that refuses the records (keyless records
// into a compacted topic, a record over its max.message.bytes, a timestamp too far ahead), and
// commitlog.ErrProducerFenced when another Pull of the same Name started. Run may be called
// again after it returned; ErrPullRunning while another Run of the Puller is under way.
func (p *Puller) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrPullRunning
	}
	defer p.running.Store(false)
	p.mu.Lock()
	p.state, p.parts = pullCounters{}, map[pullTP]*PullPartitionState{}
	p.mu.Unlock()
	r := &pullRun{Puller: p, routes: map[string]*pullRoute{}, pos: map[pullTP]int64{}}
	err := r.run(ctx)
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil
	}
	return err
}

// pullRoute is where a source topic's records go.
type pullRoute struct {
	local string
	// srcPartitions and localPartitions are the partition counts; same says they are equal
	// (partition p goes to p).
	srcPartitions, localPartitions int32
	same                           bool
	hash                           commitlog.Partitioner // Murmur2Partitioner, when !same
}

// partition returns the local partition of rec, read from source partition p.
func (rt *pullRoute) partition(rec *commitlog.Record, p int32) int32 {
	if rt.same {
		return p
	}
	return rt.hash.Partition(rec, rt.localPartitions)
}

// pullRun is one Run's working state.
type pullRun struct {
	*Puller
	adm    *kadm.Client
	cons   *kgo.Client
	prod   *commitlog.Producer
	routes map[string]*pullRoute
	// pos is the committed position of each source partition; absent: none stored.
	pos map[pullTP]int64
}

// pullBackoff is the wait between attempts of a lookup the cluster did not answer, doubled
// from pullBackoffMin up to pullBackoffMax.
const (
	pullBackoffMin = 250 * time.Millisecond
	pullBackoffMax = 5 * time.Second
)

// pullTxnTimeout bounds one local transaction once begun: it is finished even after ctx ends.
const pullTxnTimeout = 30 * time.Second

// pullSleep waits d or until ctx ends, and reports whether ctx is still live.
func pullSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// pullPermanent reports whether err is the cluster's refusal of the mirror itself, which
// retrying does not mend: a failed SASL authentication, a refused authorization, a certificate
// the TLS client does not trust.
func pullPermanent(err error) bool {
	for _, e := range []*kerr.Error{kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState,
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host)
}

// retry runs f until it succeeds, fails for good (pullPermanent) or ctx ends, logging each failure with what, waiting with
// backoff between attempts.
func (r *pullRun) retry(ctx context.Context, what string, f func() error) error {
	wait := pullBackoffMin
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if pullPermanent(err) {
			return fmt.Errorf("mirror pull: %s: %w", what, err)
		}
		r.log.Warn("mirror pull: "+what+" failed; retrying", "err", err, "in", wait)
		if !pullSleep(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, pullBackoffMax)
	}
}

func (r *pullRun) run(ctx context.Context) error {
	admCl, err := kgo.NewClient(clientOpts(r.cluster, r.log)...)
	if err != nil {
		return fmt.Errorf("mirror pull: %w", err)
	}
	defer admCl.Close()
	r.adm = kadm.NewClient(admCl)

	counts, err := r.sourcePartitions(ctx)
	if err != nil {
		return err
	}
	// The producer first: it fences an older Pull of the name and finishes or aborts what it
	// left open, so the positions read below are the last committed ones.
	r.prod, err = r.store.NewProducer(ctx, commitlog.ProducerConfig{TransactionalID: PullPositionsTopic(r.cfg.Name)})
	if err != nil {
		return fmt.Errorf("mirror pull: local producer: %w", err)
	}
	defer r.prod.Close()
	if err := r.localTopics(ctx, counts); err != nil {
		return err
	}
	if r.pos, err = pullReadPositions(ctx, r.store, PullPositionsTopic(r.cfg.Name), counts); err != nil {
		return err
	}

	starts := map[string]map[int32]kgo.Offset{}
	r.mu.Lock()
	for topic, n := range counts {
		starts[topic] = map[int32]kgo.Offset{}
		for p := range n {
			tp := pullTP{topic, p}
			ps := &PullPartitionState{Topic: topic, Partition: p, LocalTopic: r.routes[topic].local,
				Position: -1, HighWatermark: -1, logStart: -1}
			starts[topic][p] = kgo.NewOffset().AtStart()
			if pos, ok := r.pos[tp]; ok {
				ps.Position = pos
				starts[topic][p] = kgo.NewOffset().At(pos)
			}
			r.parts[tp] = ps
		}
	}
	r.mu.Unlock()
	r.listWatermarks(ctx)

	opts := append(clientOpts(r.cluster, r.log),
		kgo.ConsumePartitions(starts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Markers come as control records, so that the position passes them as the
		// consumer's does (HighWatermark - Position is 0 when caught up); they are not copied.
		kgo.KeepControlRecords(),
		// Never move a position by itself: an out-of-range position is a loss event or an
		// error (outOfRange), not a silent reset.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// Kafka's Java consumer's fetch.max.wait.ms (kgo's default is 5 s): a partition
		// assigned again (after a loss event or a fetch error) waits at most this for the fetch
		// in flight to the same broker.
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	r.cons, err = kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("mirror pull: %w", err)
	}
	defer r.cons.Close()
	r.log.Info("mirror pull: pulling", "topics", r.cfg.Topics, "positions", len(r.pos))

	for {
		fs := r.cons.PollRecords(ctx, r.cfg.MaxRecords)
		if ctx.Err() != nil {
			return nil
		}
		if fs.IsClientClosed() {
			return fmt.Errorf("mirror pull: %w", kgo.ErrClientClosed)
		}
		b := r.collect(fs)
		if len(b.pos) > 0 {
			if err := r.commit(ctx, b); err != nil {
				return err
			}
		}
		for _, pe := range b.errs {
			if err := r.partitionError(ctx, pe.tp, pe.err); err != nil {
				return err
			}
		}
	}
}

// sourcePartitions looks the topics up on the cluster and returns their partition counts,
// retrying until every topic exists.
func (r *pullRun) sourcePartitions(ctx context.Context) (map[string]int32, error) {
	counts := map[string]int32{}
	err := r.retry(ctx, "listing the topics on the cluster", func() error {
		details, err := r.adm.ListTopics(ctx, r.cfg.Topics...)
		if err != nil {
			return err
		}
		for _, t := range r.cfg.Topics {
			d, ok := details[t]
			switch {
			case !ok:
				return fmt.Errorf("topic %s: %w", t, kerr.UnknownTopicOrPartition)
			case d.Err != nil:
				return fmt.Errorf("topic %s: %w", t, d.Err)
			case len(d.Partitions) == 0:
				return fmt.Errorf("topic %s: no partitions", t)
			}
			counts[t] = int32(len(d.Partitions))
		}
		return nil
	})
	return counts, err
}

// localTopics creates the positions topic and the missing local topics, sets each local topic's
// partitioner, and fills r.routes.
func (r *pullRun) localTopics(ctx context.Context, counts map[string]int32) error {
	posTopic := PullPositionsTopic(r.cfg.Name)
	if _, err := r.store.Topic(posTopic); errors.Is(err, commitlog.ErrUnknownTopic) {
		cfg := commitlog.TopicConfig{Partitions: 1}
		cfg.CleanupPolicy = commitlog.CleanupCompact
		// Small segments, so that the cleaner keeps the topic near one record per partition.
		cfg.SegmentBytes = 1 << 20
		if _, err := r.store.CreateTopic(posTopic, cfg); err != nil && !errors.Is(err, commitlog.ErrTopicExists) {
			return fmt.Errorf("mirror pull: creating the positions topic: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("mirror pull: positions topic: %w", err)
	}
	var missing []string
	for _, t := range r.cfg.Topics {
		if _, err := r.store.Topic(r.cfg.Rename.Apply(t)); errors.Is(err, commitlog.ErrUnknownTopic) {
			missing = append(missing, t)
		} else if err != nil {
			return fmt.Errorf("mirror pull: local topic %s: %w", r.cfg.Rename.Apply(t), err)
		}
	}
	configs := map[string]map[string]string{}
	if len(missing) > 0 {
		err := r.retry(ctx, "describing the topics' configs on the cluster", func() error {
			rcs, err := r.adm.DescribeTopicConfigs(ctx, missing...)
			if err != nil {
				return err
			}
			for _, t := range missing {
				rc, err := rcs.On(t, nil)
				if err == nil {
					err = rc.Err
				}
				if err != nil {
					return fmt.Errorf("topic %s: %w", t, err)
				}
				configs[t] = map[string]string{}
				for _, c := range rc.Configs {
					if c.Value != nil {
						configs[t][c.Key] = *c.Value
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, t := range r.cfg.Topics {
		local := r.cfg.Rename.Apply(t)
		if c, ok := configs[t]; ok {
			cfg, err := pullLocalConfig(counts[t], c)
			if err != nil {
				return fmt.Errorf("mirror pull: topic %s: %w", t, err)
			}
			if _, err := r.store.CreateTopic(local, cfg); err != nil && !errors.Is(err, commitlog.ErrTopicExists) {
				return fmt.Errorf("mirror pull: creating local topic %s: %w", local, err)
			}
			r.log.Info("mirror pull: created local topic", "topic", local, "source", t,
				"partitions", counts[t], "cleanup.policy", cfg.CleanupPolicy.String())
		}
		lt, err := r.store.Topic(local)
		if err != nil {
			return fmt.Errorf("mirror pull: local topic %s: %w", local, err)
		}
		lt.SetPartitioner(commitlog.ManualPartitioner())
		rt := &pullRoute{local: local, srcPartitions: counts[t], localPartitions: lt.PartitionCount()}
		rt.same = rt.srcPartitions == rt.localPartitions
		if !rt.same {
			rt.hash = commitlog.Murmur2Partitioner()
			r.log.Info("mirror pull: partition counts differ; records placed by key (murmur2)",
				"topic", t, "partitions", rt.srcPartitions, "local", local, "local_partitions", rt.localPartitions)
		}
		r.routes[t] = rt
	}
	return nil
}

// pullLocalConfig returns the configuration of a local topic made for a source topic of n
// partitions with the configs described: its cleanup.policy and max.message.bytes, and no
// check of timestamps against the clock (Kafka's default message.timestamp.after.max.ms).
func pullLocalConfig(n int32, configs map[string]string) (commitlog.TopicConfig, error) {
	cfg := commitlog.TopicConfig{Partitions: n}
	var err error
	if cfg, err = cfg.SetKafkaConfig("message.timestamp.after.max.ms", "9223372036854775807"); err != nil {
		return cfg, err
	}
	for _, name := range []string{"cleanup.policy", "max.message.bytes"} {
		if v, ok := configs[name]; ok {
			if cfg, err = cfg.SetKafkaConfig(name, v); err != nil {
				return cfg, fmt.Errorf("%s %q: %w", name, v, err)
			}
		}
	}
	return cfg, nil
}

// listWatermarks lists the cluster's high watermarks and log start offsets once, for State;
// failures are left to the fetches, which report both.
func (r *pullRun) listWatermarks(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := r.adm.ListEndOffsets(lctx, r.cfg.Topics...)
	if err != nil {
		return
	}
	starts, _ := r.adm.ListStartOffsets(lctx, r.cfg.Topics...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for tp, ps := range r.parts {
		if o, ok := ends.Lookup(tp.topic, tp.partition); ok && o.Err == nil {
			ps.HighWatermark = o.Offset
		}
		if o, ok := starts.Lookup(tp.topic, tp.partition); ok && o.Err == nil {
			ps.logStart = o.Offset
		}
	}
}

// pullBatch is what one poll brought: the local records by local topic, the new positions, and
// the partitions' errors.
type pullBatch struct {
	recs       map[string][]*commitlog.Record
	pos        map[pullTP]int64
	records    int64
	bytes      int64
	errs       []pullPartErr
	watermarks map[pullTP]int64
	logStarts  map[pullTP]int64
}

type pullPartErr struct {
	tp  pullTP
	err error
}

// collect turns a poll's fetches into a batch. A record below the partition's position (one
// fetched again) is dropped: a record is pulled once.
func (r *pullRun) collect(fs kgo.Fetches) *pullBatch {
	b := &pullBatch{recs: map[string][]*commitlog.Record{}, pos: map[pullTP]int64{},
		watermarks: map[pullTP]int64{}, logStarts: map[pullTP]int64{}}
	for _, f := range fs {
		for _, ft := range f.Topics {
			rt := r.routes[ft.Topic]
			if rt == nil {
				continue // an injected error of the client, not a partition's
			}
			for _, fp := range ft.Partitions {
				tp := pullTP{ft.Topic, fp.Partition}
				if fp.HighWatermark >= 0 {
					b.watermarks[tp] = fp.HighWatermark
				}
				if fp.LogStartOffset >= 0 {
					b.logStarts[tp] = fp.LogStartOffset
				}
				next, ok := b.pos[tp]
				if !ok {
					next, ok = r.pos[tp]
					if !ok {
						next = -1
					}
				}
				for _, kr := range fp.Records {
					if kr.Offset < next {
						continue
					}
					next = kr.Offset + 1
					b.pos[tp] = next
					if kr.Attrs.IsControl() {
						continue
					}
					rec := &commitlog.Record{Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
					if len(kr.Headers) > 0 {
						rec.Headers = make([]commitlog.Header, len(kr.Headers))
						for i, h := range kr.Headers {
							rec.Headers[i] = commitlog.Header(h)
							b.bytes += int64(len(h.Key) + len(h.Value))
						}
					}
					rec.Partition = rt.partition(rec, fp.Partition)
					b.recs[rt.local] = append(b.recs[rt.local], rec)
					b.records++
					b.bytes += int64(len(kr.Key) + len(kr.Value))
				}
				if fp.Err != nil {
					b.errs = append(b.errs, pullPartErr{tp, fp.Err})
				}
			}
		}
	}
	r.mu.Lock()
	for tp, hw := range b.watermarks {
		if ps := r.parts[tp]; ps != nil {
			ps.HighWatermark = hw
		}
	}
	for tp, ls := range b.logStarts {
		if ps := r.parts[tp]; ps != nil {
			ps.logStart = ls
		}
	}
	r.mu.Unlock()
	return b
}

// commit appends b's records and positions in one local transaction and commits it. Once
// begun, the transaction is finished (committed, or aborted on an error) even if ctx ends.
func (r *pullRun) commit(ctx context.Context, b *pullBatch) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pullTxnTimeout)
	defer cancel()
	if err := r.prod.Begin(); err != nil {
		return fmt.Errorf("mirror pull: local transaction: %w", err)
	}
	err := func() error {
		for _, local := range slices.Sorted(maps.Keys(b.recs)) {
			if err := r.prod.Append(tctx, local, b.recs[local]...); err != nil {
				return fmt.Errorf("appending to local topic %s: %w", local, err)
			}
		}
		if err := r.appendPositions(tctx, b.pos); err != nil {
			return err
		}
		return r.prod.Commit(tctx)
	}()
	if err != nil {
		if aerr := r.prod.Abort(tctx); aerr != nil && !errors.Is(aerr, commitlog.ErrInvalidTxnState) {
			r.log.Error("mirror pull: aborting the local transaction failed", "err", aerr)
		}
		return fmt.Errorf("mirror pull: local transaction: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for tp, pos := range b.pos {
		r.pos[tp] = pos
		if ps := r.parts[tp]; ps != nil {
			ps.Position = pos
		}
	}
	r.state.records += b.records
	r.state.bytes += b.bytes
	r.state.txns++
	return nil
}

// appendPositions appends pos to the positions topic, in the open transaction.
func (r *pullRun) appendPositions(ctx context.Context, pos map[pullTP]int64) error {
	recs := make([]*commitlog.Record, 0, len(pos))
	for _, tp := range slices.SortedFunc(maps.Keys(pos), pullTP.compare) {
		recs = append(recs, &commitlog.Record{Key: []byte(tp.key()), Value: strconv.AppendInt(nil, pos[tp], 10)})
	}
	if err := r.prod.Append(ctx, PullPositionsTopic(r.cfg.Name), recs...); err != nil {
		return fmt.Errorf("appending positions: %w", err)
	}
	return nil
}

// partitionError handles a partition's fetch error: an offset out of range is checked against
// the cluster's offsets (outOfRange); any other error is logged and the partition fetched
// again from its position after a pause.
func (r *pullRun) partitionError(ctx context.Context, tp pullTP, err error) error {
	if errors.Is(err, kerr.OffsetOutOfRange) {
		return r.outOfRange(ctx, tp)
	}
	r.log.Error("mirror pull: fetch failed; fetching again", "topic", tp.topic, "partition", tp.partition, "err", err)
	if !pullSleep(ctx, pullBackoffMax) {
		return nil
	}
	r.reassign(tp)
	return nil
}

// reassign makes the consumer fetch tp again from its committed position (the cluster's log
// start offset with none).
func (r *pullRun) reassign(tp pullTP) {
	off := kgo.NewOffset().AtStart()
	if pos, ok := r.pos[tp]; ok {
		off = kgo.NewOffset().At(pos)
	}
	r.cons.RemoveConsumePartitions(map[string][]int32{tp.topic: {tp.partition}})
	r.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{tp.topic: {tp.partition: off}})
}

// outOfRange handles a fetch of tp refused with OFFSET_OUT_OF_RANGE: below the cluster's log
// start offset it is a loss event, and the position moves to the log start offset in a local
// transaction; past the high watermark it is an error; inside (the cluster moved meanwhile) the
// partition is fetched again from its position.
func (r *pullRun) outOfRange(ctx context.Context, tp pullTP) error {
	var start, end int64
	err := r.retry(ctx, "listing the offsets of "+tp.key(), func() error {
		starts, err := r.adm.ListStartOffsets(ctx, tp.topic)
		if err != nil {
			return err
		}
		ends, err := r.adm.ListEndOffsets(ctx, tp.topic)
		if err != nil {
			return err
		}
		s, ok1 := starts.Lookup(tp.topic, tp.partition)
		e, ok2 := ends.Lookup(tp.topic, tp.partition)
		switch {
		case !ok1 || !ok2:
			return fmt.Errorf("partition %s: %w", tp.key(), kerr.UnknownTopicOrPartition)
		case s.Err != nil:
			return s.Err
		case e.Err != nil:
			return e.Err
		}
		start, end = s.Offset, e.Offset
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	pos, ok := r.pos[tp]
	switch {
	case !ok || (pos >= start && pos <= end):
	case pos > end:
		return fmt.Errorf("%w: mirror pull: position %d of %s is past the cluster's high watermark %d (was the topic deleted and created again?)",
			commitlog.ErrOffsetOutOfRange, pos, tp.key(), end)
	default: // pos < start: the cluster deleted records not yet pulled
		r.log.Error(PullLossEvent, "event", "loss", "topic", tp.topic, "partition", tp.partition,
			"from", pos, "to", start, "lost", start-pos)
		if err := r.commit(ctx, &pullBatch{pos: map[pullTP]int64{tp: start}}); err != nil {
			return err
		}
		r.mu.Lock()
		r.state.lossEvents++
		r.state.lostOffsets += start - pos
		if ps := r.parts[tp]; ps != nil {
			ps.Lost += start - pos
		}
		r.mu.Unlock()
	}
	r.reassign(tp)
	return nil
}

// pullReadPositions reads the positions committed in the positions topic: the last value of
// each key "<topic>/<partition>" of a source partition in counts, read with a read_committed
// reader up to the topic's last stable offset.
func pullReadPositions(ctx context.Context, s *commitlog.Store, topic string, counts map[string]int32) (map[pullTP]int64, error) {
	pos := map[pullTP]int64{}
	t, err := s.Topic(topic)
	if err != nil {
		return nil, fmt.Errorf("mirror pull: positions topic: %w", err)
	}
	err = pullReadCommitted(ctx, t, 0, func(rec *commitlog.Record) error {
		tp, off, ok := pullParsePosition(rec.Key, rec.Value)
		if !ok {
			return fmt.Errorf("%w: positions topic %s offset %d: key %q value %q",
				commitlog.ErrCorrupt, topic, rec.Offset, rec.Key, rec.Value)
		}
		if n, known := counts[tp.topic]; known && tp.partition < n {
			pos[tp] = off
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mirror pull: reading positions: %w", err)
	}
	return pos, nil
}

// pullReadCommitted calls fn with each record of partition p of t that a read_committed
// reader sees, from the log start offset up to the last stable offset as it is when called.
func pullReadCommitted(ctx context.Context, t *commitlog.Topic, p int32, fn func(*commitlog.Record) error) error {
	part, err := t.Partition(p)
	if err != nil {
		return err
	}
	end := part.LastStableOffset()
	rd, err := t.NewReader(commitlog.ReaderConfig{Partitions: []int32{p}, Start: commitlog.Earliest,
		Isolation: commitlog.ReadCommitted, Reset: commitlog.ResetEarliest})
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		if at, err := rd.Position(p); err != nil {
			return err
		} else if at >= end {
			return nil
		}
		// Next waits at the end of the log; markers (or aborted records) at the end leave no
		// record to return, so each Next is given a moment, after which the position tells
		// whether the end is reached (Next passed over them before it began to wait).
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		rec, err := rd.Next(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return err
		}
		if rec.Offset >= end {
			return nil
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// pullParsePosition parses a positions record: key "<topic>/<partition>", value a decimal
// offset.
func pullParsePosition(key, value []byte) (pullTP, int64, bool) {
	k := string(key)
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return pullTP{}, 0, false
	}
	p, err := strconv.ParseInt(k[i+1:], 10, 32)
	if err != nil || p < 0 {
		return pullTP{}, 0, false
	}
	off, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil || off < 0 {
		return pullTP{}, 0, false
	}
	return pullTP{k[:i], int32(p)}, off, true
}
