package commitlog

import (
	"context"
	"fmt"
	"time"
)

// Replica is the replication side of a Partition (Partition.Replica): the API a controller, a
// fetch loop and a network transport use, kept apart from the plain partition API that appends
// and reads. It follows Kafka's model (Partition.scala and ReplicaManager on the broker).
//
// A partition has one leader and any number of followers, each a Partition in some store (this
// process's or another's). The leader takes appends and stamps its leader epoch on every batch;
// followers copy its log offset for offset by fetching (Fetch), and the offset each follower
// fetches from tells the leader the follower's log end offset. The followers whose log end offset
// kept up within LeaderConfig.LagTimeMax, with the leader, are the in-sync replicas (ISR); the
// high watermark is the smallest log end offset among them, and readers read only below it
// (Partition.HighWatermark). An AcksAll append returns once the high watermark has passed it:
// every in-sync replica holds it, so any of them can take over without losing it.
//
// Roles are set from outside, as Kafka's controller sets them: BecomeLeader and BecomeFollower,
// each with a leader epoch that grows with every change of leader. A follower runs a fetch loop
// (Follow, or a network transport's own with AppendAsFollower) against a Leader, which *Replica
// implements. Before it fetches, a follower truncates its log where it stops agreeing with its
// leader's, by leader epochs (EpochEndOffset, Kafka's OffsetsForLeaderEpoch, KIP-101); readers
// check their committed positions against the same epochs (KIP-320).
//
// The role, the epoch of the last role and the high watermark survive a restart: the partition
// checkpoints them (see the commitlog-replication file), and a partition that was replicated
// reopens as a follower of no leader yet, readable up to its high watermark. A Replica is safe for
// concurrent use; it is valid as long as its Partition.
type Replica struct {
	p *Partition
}

// Replica returns the partition's replication API; every call returns the same *Replica.
func (p *Partition) Replica() *Replica { return &p.replica }

// Leader is what a follower needs from its partition's leader. *Replica implements it; a
// network transport implements it on the follower's side by sending each call to the leader's
// process, where it calls the leader Replica's method of the same name, and returns what that
// returned (errors compared with errors.Is must survive the trip: send them as Kafka's error
// codes, say, and map them back to this package's sentinels).
//
// The contract, which Follow relies on:
//   - Calls come from one follower one at a time, in order; a transport must not reorder them.
//   - Fetch answers with batches starting at req.Offset, in order, whole, never past the
//     leader's log end offset, and with the leader's high watermark, log start offset and log
//     end offset as of the answer. The request itself is the follower's acknowledgement: it
//     holds every offset below req.Offset.
//   - Errors: ErrNotLeader when the partition is not (or no longer) the leader;
//     ErrFencedLeaderEpoch when req.LeaderEpoch is older than the leader's (the follower must
//     be given the new epoch); ErrUnknownLeaderEpoch when it is newer (retry later);
//     ErrOffsetOutOfRange, with LogStartOffset and LogEndOffset filled in the response, when
//     req.Offset is outside them; ErrReplicaNotAvailable for an ID the leader does not know;
//     ErrClosed when the leader's store closed. Any other error, a transport's timeout
//     included, is retried by the follower after a back-off: Fetch and EpochEndOffset change
//     nothing on the leader but the follower's recorded progress, so a retry is always safe.
//   - A call returns when ctx is done, with ctx's error.
type Leader interface {
	// Fetch returns the leader's batches from req.Offset on; see FetchRequest.
	Fetch(ctx context.Context, req FetchRequest) (FetchResponse, error)
	// EpochEndOffset answers Kafka's OffsetsForLeaderEpoch: the largest leader epoch at most
	// epoch that the leader's log knows, and the offset where the epoch after it begins (the
	// leader's log end offset when that epoch is the current one). A follower whose latest
	// epoch is epoch truncates its log there before it fetches: whatever it holds past that
	// offset the leader never had. EpochEndOffset{UndefinedEpoch, -1} when the leader knows no
	// epoch at most epoch.
	EpochEndOffset(ctx context.Context, epoch int32) (EpochEndOffset, error)
}

// FetchRequest is a follower's fetch (Kafka's Fetch request from a replica).
type FetchRequest struct {
	// ReplicaID names the follower, as LeaderConfig.Followers names it.
	ReplicaID string
	// LeaderEpoch is the epoch the follower was given in BecomeFollower; UndefinedEpoch skips
	// the check.
	LeaderEpoch int32
	// Offset is the follower's log end offset: the first offset it wants.
	Offset int64
	// MaxBytes bounds the batches returned, except that the first batch comes whole however
	// large (Kafka's replica.fetch.max.bytes rule). 0 means 1 MiB.
	MaxBytes int
	// MaxWait is how long the leader may hold the request while it has nothing past Offset and
	// the follower already knows its high watermark (Kafka's replica.fetch.wait.max.ms). 0
	// answers at once.
	MaxWait time.Duration
}

// FetchResponse is the leader's answer to a FetchRequest.
type FetchResponse struct {
	// Batches are RecordBatch v2 bytes as the leader stores them, from the request's offset on;
	// empty when the follower is caught up. They are the caller's.
	Batches []byte
	// HighWatermark, LogStartOffset and LogEndOffset are the leader's at the time of the answer.
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
}

// EpochEndOffset is the answer to Leader.EpochEndOffset (Kafka's EpochEndOffset).
type EpochEndOffset struct {
	// LeaderEpoch is the largest epoch at most the one asked for that the leader knows, or
	// UndefinedEpoch.
	LeaderEpoch int32
	// EndOffset is where the epoch after LeaderEpoch starts: the first offset LeaderEpoch's
	// leader did not write. -1 with UndefinedEpoch.
	EndOffset int64
}

// Acks says when an append returns (Kafka's producer acks, with its numbers).
type Acks int8

const (
	// AcksNone returns once the records are in the leader's log, with offsets, before they are
	// flushed or copied: they may be lost to a crash of the leader (Kafka's acks=0 gives even
	// less).
	AcksNone Acks = 0
	// AcksLeader returns once the leader's log holds the records durably, by its sync policy
	// (Kafka's acks=1).
	AcksLeader Acks = 1
	// AcksAll returns once the high watermark has passed the records: every in-sync replica
	// holds them. Appends fail with ErrNotEnoughReplicas, writing nothing, while the in-sync
	// replicas are fewer than MinInsyncReplicas (Kafka's acks=all, the default since Kafka 3.0).
	AcksAll Acks = -1
)

// check returns ErrInvalidConfig for a value other than AcksNone, AcksLeader and AcksAll (Kafka
// answers INVALID_REQUIRED_ACKS).
func (a Acks) check() error {
	switch a {
	case AcksNone, AcksLeader, AcksAll:
		return nil
	}
	return fmt.Errorf("%w: acks %d (0, 1 or -1)", ErrInvalidConfig, a)
}

// DefaultLagTimeMax is Kafka's replica.lag.time.max.ms: a follower that has not caught up with
// the leader's log end offset for this long leaves the in-sync replicas.
const DefaultLagTimeMax = 30 * time.Second

// LeaderConfig is what BecomeLeader needs (Kafka's LeaderAndIsr request, for one partition).
type LeaderConfig struct {
	// Epoch is the leader epoch: at least the partition's current one. A higher epoch starts a
	// new epoch at the log end offset.
	Epoch int32
	// Followers are the IDs of the other replicas. All start in the in-sync set, as Kafka's
	// controller hands a new leader the current ISR; one that does not catch up within
	// LagTimeMax leaves it. Empty: the partition stands alone, and its high watermark is its log
	// end offset.
	Followers []string
	// LagTimeMax is replica.lag.time.max.ms; 0 means DefaultLagTimeMax.
	LagTimeMax time.Duration
}

// ReplicaState is the leader's view of one follower.
type ReplicaState struct {
	// ID is the follower's ID.
	ID string
	// LogEndOffset is the offset the follower last fetched from; -1 before its first fetch.
	LogEndOffset int64
	// LastCaughtUp is when the follower last held everything the leader had (Kafka's
	// lastCaughtUpTime): at the start of leadership for a follower that has not fetched yet.
	LastCaughtUp time.Time
	// InSync reports whether the follower is in the in-sync replicas.
	InSync bool
	// Lag is the leader's log end offset minus the follower's, in records (offsets).
	Lag int64
}
