package commitlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Kafka's defaults for a follower's fetches.
const (
	DefaultReplicaFetchMaxBytes = 1 << 20                // replica.fetch.max.bytes
	DefaultReplicaFetchWaitMax  = 500 * time.Millisecond // replica.fetch.wait.max.ms
	DefaultReplicaFetchBackoff  = time.Second            // replica.fetch.backoff.ms
)

// FollowerConfig configures Follow.
type FollowerConfig struct {
	// ReplicaID is this follower's ID, as the leader's LeaderConfig.Followers names it. Required.
	ReplicaID string
	// MaxBytes is replica.fetch.max.bytes; 0 means DefaultReplicaFetchMaxBytes.
	MaxBytes int
	// MaxWait is replica.fetch.wait.max.ms, how long the leader may hold a fetch while there is
	// nothing new; 0 means DefaultReplicaFetchWaitMax.
	MaxWait time.Duration
	// Backoff is replica.fetch.backoff.ms, the pause after a failed call before the next; 0 means
	// DefaultReplicaFetchBackoff.
	Backoff time.Duration
}

// ReplicaFetcher is a follower's fetch loop, started by Follow: Kafka's ReplicaFetcherThread for
// one partition. It runs until Close, until the partition stops being a follower (BecomeLeader),
// or until the follower's log fails or closes.
type ReplicaFetcher struct {
	p      *Partition
	leader Leader
	cfg    FollowerConfig
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	lastErr error
}

// Follow starts copying leader's log into this partition, which must be a follower
// (BecomeFollower first) without a running fetch loop, in a goroutine:
//  1. Before it fetches, and again whenever its epoch changes or the logs are found to differ,
//     the follower asks the leader where its own latest leader epoch ends (EpochEndOffset) and
//     truncates its log there (Kafka's KIP-101 truncation): whatever it holds past that point
//     the leader never had.
//  2. It fetches from its log end offset, appends the leader's batches byte for byte with their
//     offsets and epochs (durable by its own sync policy before the next fetch reports them),
//     and only then takes the leader's high watermark, capped at its own log end offset.
//  3. When the leader's log starts past everything it holds (retention deleted those offsets),
//     it deletes its log and starts over empty at the leader's log start offset.
//
// A restarted follower resumes from its own log end offset. Errors from the leader are retried
// after cfg.Backoff; see Err. ErrInvalidConfig without a ReplicaID or a leader, when the
// partition leads, and while another fetch loop runs on it.
func (rep *Replica) Follow(leader Leader, cfg FollowerConfig) (*ReplicaFetcher, error) {
	p := rep.p
	if cfg.ReplicaID == "" {
		return nil, fmt.Errorf("%w: FollowerConfig.ReplicaID is empty", ErrInvalidConfig)
	}
	if leader == nil {
		return nil, fmt.Errorf("%w: no leader to follow", ErrInvalidConfig)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultReplicaFetchMaxBytes
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultReplicaFetchWaitMax
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultReplicaFetchBackoff
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &ReplicaFetcher{p: p, leader: leader, cfg: cfg, cancel: cancel, done: make(chan struct{})}
	p.mu.Lock()
	switch {
	case !p.follower:
		p.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("%w: topic %s partition %d is a leader; BecomeFollower first", ErrInvalidConfig, p.topicName, p.id)
	case p.fetcher != nil:
		p.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("%w: topic %s partition %d already follows; Close its fetcher first", ErrInvalidConfig, p.topicName, p.id)
	}
	p.fetcher = f
	p.mu.Unlock()
	go f.run(ctx)
	return f, nil
}

// Close stops the fetch loop and waits for it to end. The partition stays a follower.
func (f *ReplicaFetcher) Close() error {
	f.cancel()
	<-f.done
	return nil
}

// Done is closed when the fetch loop has ended: after Close, when the partition became a leader,
// or when its log failed or closed (Err says which).
func (f *ReplicaFetcher) Done() <-chan struct{} { return f.done }

// Err returns the error of the loop's last step: nil while fetches succeed, the leader's or the
// transport's error while it backs off, and the reason it ended once Done is closed.
func (f *ReplicaFetcher) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

func (f *ReplicaFetcher) setErr(err error) {
	f.mu.Lock()
	changed := (err == nil) != (f.lastErr == nil) || (err != nil && err.Error() != f.lastErr.Error())
	f.lastErr = err
	f.mu.Unlock()
	if err != nil && changed {
		f.p.log.logger.Warn("replica fetch failed; retrying", "topic", f.p.topicName, "partition", f.p.id,
			"replica", f.cfg.ReplicaID, "err", err)
	}
}

// errRoleChanged stops a step whose epoch is no longer the partition's.
var errRoleChanged = errors.New("commitlog: follower's epoch or role changed")

func (f *ReplicaFetcher) run(ctx context.Context) {
	p := f.p
	defer func() {
		p.mu.Lock()
		if p.fetcher == f {
			p.fetcher = nil
		}
		p.mu.Unlock()
		close(f.done)
	}()
	epoch, truncated := UndefinedEpoch, false
	for ctx.Err() == nil {
		cur, follower := f.followerEpoch()
		if !follower {
			f.setErr(fmt.Errorf("%w: topic %s partition %d leads; fetching stopped", ErrNotLeader, p.topicName, p.id))
			return
		}
		if cur != epoch {
			epoch, truncated = cur, false
		}
		if !truncated {
			if err := f.truncate(ctx, epoch); err != nil {
				if f.fatal(ctx, err) {
					return
				}
				f.backoff(ctx, err)
				continue
			}
			truncated = true
		}
		leo := p.log.LogEndOffset()
		resp, err := f.leader.Fetch(ctx, FetchRequest{ReplicaID: f.cfg.ReplicaID, LeaderEpoch: epoch, Offset: leo,
			MaxBytes: f.cfg.MaxBytes, MaxWait: f.cfg.MaxWait})
		if errors.Is(err, ErrOffsetOutOfRange) && leo < resp.LogStartOffset {
			err = f.startOverAt(epoch, resp.LogStartOffset)
		} else if errors.Is(err, ErrOffsetOutOfRange) {
			truncated = false // past the leader's end: the logs differ
		} else if err == nil && len(resp.Batches) > 0 {
			err = f.appendFromLeader(ctx, epoch, leo, resp.Batches)
			if errors.Is(err, ErrOffsetOutOfOrder) {
				truncated = false
			}
		}
		if err == nil && resp.LogStartOffset > p.log.LogStartOffset() {
			err = f.followLogStartOffset(epoch, resp.LogStartOffset)
		}
		if err == nil {
			f.followHighWatermark(epoch, resp.HighWatermark)
			f.setErr(nil)
			continue
		}
		if f.fatal(ctx, err) {
			return
		}
		f.backoff(ctx, err)
	}
	f.setErr(ctx.Err())
}

// fatal reports whether err ends the loop: the loop was stopped, or this partition's log closed
// or failed (it refuses writes until reopened).
func (f *ReplicaFetcher) fatal(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		f.setErr(ctx.Err())
		return true
	}
	if werr := f.p.log.checkWritable(); werr != nil {
		f.setErr(fmt.Errorf("follower log of topic %s partition %d: %w", f.p.topicName, f.p.id, werr))
		return true
	}
	return false
}

// backoff records err and sleeps cfg.Backoff or until the loop is stopped.
func (f *ReplicaFetcher) backoff(ctx context.Context, err error) {
	if errors.Is(err, errRoleChanged) {
		return
	}
	f.setErr(err)
	t := time.NewTimer(f.cfg.Backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// truncate cuts the follower's log where it stops agreeing with the leader's, by leader epochs
// (Kafka's OffsetsForLeaderEpoch truncation): it asks where the follower's latest epoch ends on
// the leader and keeps at most that much; when the leader knows only an older epoch, it keeps no
// more than the follower's own end of that epoch, and asks again. A log without epochs keeps
// what is below its high watermark, Kafka's rule before epochs.
func (f *ReplicaFetcher) truncate(ctx context.Context, epoch int32) error {
	p := f.p
	for {
		latest := p.log.latestEpoch()
		leo := p.log.LogEndOffset()
		if latest == UndefinedEpoch {
			return f.truncateAsFollower(epoch, p.HighWatermark())
		}
		eo, err := f.leader.EpochEndOffset(ctx, latest)
		if err != nil {
			return err
		}
		switch {
		case eo.EndOffset < 0:
			return f.truncateAsFollower(epoch, p.HighWatermark())
		case eo.LeaderEpoch == latest:
			return f.truncateAsFollower(epoch, min(eo.EndOffset, leo))
		}
		fe, fend := p.log.endOffsetForEpoch(eo.LeaderEpoch)
		if fe == eo.LeaderEpoch || fe == UndefinedEpoch {
			if fe == UndefinedEpoch {
				fend = leo
			}
			return f.truncateAsFollower(epoch, min(eo.EndOffset, fend))
		}
		// The follower never had the leader's epoch: drop back to the end of its own older
		// epoch and compare again from there.
		if err := f.truncateAsFollower(epoch, min(fend, leo)); err != nil {
			return err
		}
		if p.log.latestEpoch() >= latest {
			return fmt.Errorf("%w: truncation made no progress at epoch %d", ErrCorrupt, latest)
		}
	}
}

// followerEpoch returns the partition's epoch and whether it is a follower.
func (f *ReplicaFetcher) followerEpoch() (int32, bool) {
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch, p.follower
}

// lockFollower takes the role shared and checks that the partition still follows in epoch; the
// caller releases roleMu when it returns nil.
func (f *ReplicaFetcher) lockFollower(epoch int32) error {
	p := f.p
	p.roleMu.RLock()
	p.mu.Lock()
	ok := p.follower && p.epoch == epoch && !p.closed
	p.mu.Unlock()
	if !ok {
		p.roleMu.RUnlock()
		return errRoleChanged
	}
	return nil
}

// truncateAsFollower truncates the log to offset (nothing when offset is at or past its end), as
// a follower in epoch, and keeps the high watermark within it.
func (f *ReplicaFetcher) truncateAsFollower(epoch int32, offset int64) error {
	p := f.p
	if err := f.lockFollower(epoch); err != nil {
		return err
	}
	defer p.roleMu.RUnlock()
	if offset >= p.log.LogEndOffset() {
		return nil
	}
	offset = max(offset, p.log.LogStartOffset())
	p.log.logger.Info("follower truncating to its leader's log", "topic", p.topicName, "partition", p.id,
		"offset", offset, "log_end_offset", p.log.LogEndOffset(), "leader_epoch", epoch)
	err := p.log.TruncateTo(offset)
	p.logCut()
	return err
}

// startOverAt empties the follower's log to start at offset, the leader's log start offset.
func (f *ReplicaFetcher) startOverAt(epoch int32, offset int64) error {
	p := f.p
	if err := f.lockFollower(epoch); err != nil {
		return err
	}
	defer p.roleMu.RUnlock()
	p.log.logger.Info("follower behind its leader's log start offset; starting over", "topic", p.topicName,
		"partition", p.id, "log_end_offset", p.log.LogEndOffset(), "leader_log_start_offset", offset)
	err := p.log.truncateFullyAndStartAt(offset)
	p.logCut()
	return err
}

// followLogStartOffset moves the follower's log start offset up to its leader's, capped at its
// own log end offset: what retention deleted on the leader goes on the follower too.
func (f *ReplicaFetcher) followLogStartOffset(epoch int32, leaderStart int64) error {
	p := f.p
	if err := f.lockFollower(epoch); err != nil {
		return err
	}
	defer p.roleMu.RUnlock()
	return p.log.advanceLogStartOffset(min(leaderStart, p.log.LogEndOffset()))
}

// appendFromLeader appends the batches a fetch from leo returned, as a follower in epoch. Batches
// wholly below leo are skipped; one that starts below it but reaches past means the logs differ
// (ErrOffsetOutOfOrder).
func (f *ReplicaFetcher) appendFromLeader(ctx context.Context, epoch int32, leo int64, batches []byte) error {
	p := f.p
	for len(batches) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(batches, 0)
		if err != nil || h.Size() > len(batches) || h.LastOffset() >= leo {
			break
		}
		batches = batches[h.Size():]
	}
	if len(batches) == 0 {
		return nil
	}
	if err := f.lockFollower(epoch); err != nil {
		return err
	}
	_, err := p.log.AppendAsFollower(ctx, batches)
	p.roleMu.RUnlock()
	p.mu.Lock()
	p.signalLocked()
	p.mu.Unlock()
	p.onChange()
	return err
}

// followHighWatermark takes the leader's high watermark, capped at the follower's log end
// offset; it never moves back.
func (f *ReplicaFetcher) followHighWatermark(epoch int32, leaderHW int64) {
	p := f.p
	p.mu.Lock()
	if !p.follower || p.epoch != epoch {
		p.mu.Unlock()
		return
	}
	hw := min(leaderHW, p.log.LogEndOffset())
	moved := hw > p.hw.Load()
	if moved {
		p.hw.Store(hw)
		p.signalLocked()
	}
	p.mu.Unlock()
	if moved {
		p.onChange()
	}
}
