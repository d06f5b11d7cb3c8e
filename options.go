package commitlog

import (
	"log/slog"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// Option configures how a log or store is opened.
type Option func(*options)

type options struct {
	logger *slog.Logger
	sync   SyncPolicy // WithSync's; SyncDefault when not given (see resolveSync)
	now    func() time.Time
	fs     fsys.FS

	retentionCheckInterval time.Duration
	maxOpenFiles           int   // 0: the default; negative: no bound
	positionCacheBytes     int64 // 0: the default; negative: no cache

	cleanerThreads int           // log.cleaner.threads; 0: none in the background
	cleanerDedupe  int64         // log.cleaner.dedupe.buffer.size, bytes, shared by the threads
	cleanerBackoff time.Duration // log.cleaner.backoff.ms

	producerIDExpiration time.Duration // producer.id.expiration.ms
	transactionTimeout   time.Duration // transaction.max.timeout.ms (the coordinator's bound)
	txnCheckInterval     time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms

	groupMinSession   time.Duration // group.min.session.timeout.ms; 0: Kafka's default
	groupMaxSession   time.Duration // group.max.session.timeout.ms; 0: Kafka's default
	groupInitialDelay time.Duration // group.initial.rebalance.delay.ms; 0: Kafka's default, negative: none
	groupMaxSize      int           // group.max.size; 0: no limit
	offsetsRetention  time.Duration // offsets.retention.minutes; 0: Kafka's default

	batchSize    int           // batch.size (WithBatchSize); 0: the default, -1: coalescing off
	linger       time.Duration // linger.ms (WithLinger)
	pollInterval time.Duration // OpenReadOnly's look at the store (WithPollInterval); 0: the default

	caches segment.Caches // the segments' open-file bound and record position cache, one per call
	// cleanerPoints is the store's cleaner-offset-checkpoint, set by Open for its partitions;
	// nil for a log opened on its own, whose cleaner point lives in memory only.
	cleanerPoints *cleanerPoints
	// logDir is the store's recovery point and log start offset checkpoints, set by Open;
	// logDirTP is the partition openPartition opens, whose log keeps its state there (a log
	// opened on its own, or an internal log, has none and keeps its state in its folder).
	logDir   *logDirCheckpoints
	logDirTP topicPartition
	// newFolderSyncedLater says that the log openPartition opens is a new partition's, whose
	// creator (writeNewPartitionFiles) fsyncs its folder once its files are all written: the
	// load leaves out the folder fsync after it creates the first segment.
	newFolderSyncedLater bool
	// openSyncedLater says that the logs are opened by Store.Open on a file system it syncs in one
	// call (fsys.FileSystemSyncer): what their recovery writes (the producer snapshot after a
	// replay, the leader epoch checkpoint under its temporary name) is left unsynced, and Open
	// syncs the file system, renames the epoch checkpoints into place and syncs it again, before
	// it writes the store's checkpoints or removes the clean shutdown marker (store_open_sync.go).
	openSyncedLater bool
	// parallelLogs is how many logs a store opens and closes at once (0: parallelLogs, see
	// log_workers.go); tests that replay a store's file operations in order set 1.
	parallelLogs int
}

func newOptions(opts []Option) options {
	o := options{now: time.Now, retentionCheckInterval: DefaultRetentionCheckInterval,
		cleanerThreads: DefaultCleanerThreads, cleanerDedupe: DefaultCleanerDedupeBufferSize, cleanerBackoff: DefaultCleanerBackoff,
		producerIDExpiration: DefaultProducerIDExpiration, transactionTimeout: DefaultTransactionMaxTimeout,
		txnCheckInterval: DefaultTransactionCheckInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.fs == nil {
		o.fs = fsys.OS()
	}
	// One cache per call: a store shares it among all its partitions, a log opened on its own
	// has its own.
	o.caches = newCaches(o.maxOpenFiles, o.positionCacheBytes, o.logger)
	return o
}

// WithLogger sets the logger for recovery, truncation and other events. By default nothing is
// logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSync sets the sync policy of every log whose LogConfig.Sync (a topic's TopicConfig.Sync)
// is SyncDefault, as Kafka's broker default log.flush.interval.ms applies to the topics without a
// flush.ms of their own: a log's own policy wins over it. Without it, or with SyncDefault, that
// default is SyncAlways. It is not stored: a store reopened with another WithSync gives its topics
// of SyncDefault the new policy. WithSync(SyncDefault) changes nothing, not even an earlier
// WithSync. A value that is not a SyncPolicy returns ErrInvalidConfig from the open of a log
// that takes it (and from CreateTopic). See SyncPolicy for the rule.
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

// WithMaxOpenFiles bounds the segment files (descriptors) a store keeps open across all its
// topics and partitions, or a log opened with OpenLog keeps open. Each open segment holds 3: its
// .log file and its two index files, whose mappings go with them. Sealed segments open their files
// on first use and, once more than n are open, the least recently used idle ones are closed. The
// active segments count and are closed too while idle (no append, truncation or flush of their
// log at work, no read using them): the next append or read opens them again, so a store of ten
// thousand partitions runs under the bound. A segment being written to or read stays open, so the
// bound is passed while every open segment is in use rather than failing a write or a read; the
// write or read that ends then closes idle segments until the files open are within n again.
//
// Without this option (or with n = 0) the bound is a quarter of the process's soft RLIMIT_NOFILE,
// at least 12 and at most DefaultMaxOpenFiles (1024): 4 partitions of thousands of segments then
// run under a limit of 256 descriptors. A negative n removes the bound: every segment opened stays
// open until Close, as a Kafka broker keeps them.
func WithMaxOpenFiles(n int) Option { return func(o *options) { o.maxOpenFiles = n } }

// WithRecordPositionCache bounds the memory, in bytes, that ReadRecord and Partition.ReadRecord
// keep across a store's partitions (or a log opened with OpenLog keeps) for the batches they have
// read: for each uncompressed batch of two records or more, the position of every 4th record
// (4 bytes each, 8 in a batch with offset gaps) and 256 bytes of bookkeeping, least recently used
// out first: about 11 KiB for each MiB of log of ~120-byte records in batches of hundreds. A
// batch in the cache has had its CRC and its records' framing checked: its reads check neither
// again, and step over at most 3 records to the one they want. A batch not in it is checked whole
// on its read.
//
// Without this option (or with bytes = 0) the bound is DefaultRecordPositionCacheBytes (32 MiB).
// A negative bytes keeps nothing: every ReadRecord checks the CRC of its whole batch and walks it
// from its first record, as ReadRecords does.
func WithRecordPositionCache(bytes int64) Option {
	return func(o *options) { o.positionCacheBytes = bytes }
}

// withFS replaces the file system; the in-memory store and fault-injection tests use it.
func withFS(fs fsys.FS) Option { return func(o *options) { o.fs = fs } }

// Kafka's defaults for the log cleaner's broker configs.
const (
	DefaultCleanerThreads          = 1                // log.cleaner.threads
	DefaultCleanerDedupeBufferSize = 128 << 20        // log.cleaner.dedupe.buffer.size, bytes
	DefaultCleanerBackoff          = 15 * time.Second // log.cleaner.backoff.ms
	// MinCleanerDedupeBufferSize is the least dedupe buffer a cleaner thread gets: enough for
	// the keys of one batch of the largest size.
	MinCleanerDedupeBufferSize = 1 << 20
)

// WithCleanerThreads sets log.cleaner.threads: how many goroutines of a store clean its
// compacted logs in the background (default 1). 0 or less runs none; Topic.Compact and
// Log.Compact still clean on demand.
func WithCleanerThreads(n int) Option { return func(o *options) { o.cleanerThreads = n } }

// WithCleanerDedupeBufferSize sets log.cleaner.dedupe.buffer.size: the memory, in bytes, of the
// key maps of all cleaner threads together (default 128 MiB), each thread's share at least
// MinCleanerDedupeBufferSize. A clean whose dirty keys do not fit runs in passes, as Kafka's.
// An on-demand Compact uses one thread's share.
func WithCleanerDedupeBufferSize(bytes int64) Option {
	return func(o *options) { o.cleanerDedupe = bytes }
}

// WithCleanerBackoff sets log.cleaner.backoff.ms: how long a cleaner thread that found no log
// due waits before it looks again (default 15 s).
func WithCleanerBackoff(d time.Duration) Option { return func(o *options) { o.cleanerBackoff = d } }

// WithProducerIDExpiration sets how long a producer id is remembered by a partition after its
// last write (Kafka's producer.id.expiration.ms, DefaultProducerIDExpiration, a day): a producer
// silent for longer loses its sequence state there, and its next batch is taken at any sequence.
// A producer with an open transaction never expires. d <= 0 keeps the default.
func WithProducerIDExpiration(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.producerIDExpiration = d
		}
	}
}

// WithTransactionMaxTimeout sets the largest transaction timeout a transactional producer may ask
// for (Kafka's transaction.max.timeout.ms, DefaultTransactionMaxTimeout, 15 minutes): NewProducer
// with a larger ProducerConfig.TransactionTimeout returns ErrInvalidConfig. d <= 0 keeps the
// default.
func WithTransactionMaxTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.transactionTimeout = d
		}
	}
}

// WithTransactionCheckInterval sets how often the store's transaction coordinator looks for
// transactions open longer than their timeout and aborts them (Kafka's
// transaction.abort.timed.out.transaction.cleanup.interval.ms, DefaultTransactionCheckInterval,
// 10 s). d <= 0 keeps the default.
func WithTransactionCheckInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.txnCheckInterval = d
		}
	}
}

// WithGroupSessionTimeouts sets the bounds of a group member's session timeout (Kafka's broker
// group.min.session.timeout.ms, 6 s, and group.max.session.timeout.ms, 30 min): a member whose
// GroupReaderConfig.SessionTimeout lies outside them is refused with ErrInvalidSessionTimeout. Zero
// keeps a bound's default.
func WithGroupSessionTimeouts(minTimeout, maxTimeout time.Duration) Option {
	return func(o *options) { o.groupMinSession, o.groupMaxSession = minTimeout, maxTimeout }
}

// WithGroupInitialRebalanceDelay sets Kafka's group.initial.rebalance.delay.ms (3 s): the first
// rebalance of an empty group waits this long for more members to join, again after each one
// that does, up to the rebalance timeout, so that a group whose members start together is
// assigned once rather than once per member. Negative means no delay; zero keeps the default.
func WithGroupInitialRebalanceDelay(d time.Duration) Option {
	return func(o *options) { o.groupInitialDelay = d }
}

// WithGroupMaxSize sets Kafka's group.max.size: the most members one group holds; a member
// joining a full group gets ErrGroupMaxSizeReached. Zero (the default) means no limit.
func WithGroupMaxSize(n int) Option { return func(o *options) { o.groupMaxSize = n } }

// WithGroupOffsetsRetention sets Kafka's offsets.retention.minutes (7 days, KIP-211): how long a
// group's committed positions outlive the group's last member (or, for positions of topics a
// live group no longer reads, their last commit). They are removed at the log retention checks
// (WithRetentionCheckInterval; Store.ExpireGroupOffsets); an empty group left without positions
// is deleted. Zero keeps the default.
func WithGroupOffsetsRetention(d time.Duration) Option {
	return func(o *options) { o.offsetsRetention = d }
}
