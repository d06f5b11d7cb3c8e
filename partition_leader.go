package commitlog

import (
	"context"
	"fmt"
	"time"
)

// replicaState is a leader's record of one follower (Kafka's Replica on the leader).
type replicaState struct {
	id           string
	leo          int64 // the offset of its last fetch; -1 before the first
	lastCaughtUp time.Time
	inSync       bool
	sentHW       int64 // the high watermark its last fetch response carried
	// The leader's log end offset and the time at its previous fetch, for Kafka's caught-up
	// rule: a follower that fetched, at that fetch, up to what the leader had at the one before
	// was caught up then, however fast the leader is writing.
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
}

// BecomeLeader makes the partition the leader of cfg.Epoch with cfg.Followers, as Kafka's
// controller does with a LeaderAndIsr request. The epoch starts at the log end offset, recorded
// durably in the leader-epoch-checkpoint before BecomeLeader returns; batches appended from now on
// carry it. Appends in flight under the old role finish first. The high watermark stays where it
// was (a follower's last known one) and moves on as the followers fetch; without followers it is
// the log end offset.
//
// ErrFencedLeaderEpoch when cfg.Epoch is older than the partition's epoch; ErrInvalidConfig for a
// follower ID that is empty or repeated; ErrClosed after the store closed; an error wrapping
// ErrSync when the epoch could not be recorded.
func (rep *Replica) BecomeLeader(cfg LeaderConfig) error {
	p := rep.p
	if cfg.LagTimeMax == 0 {
		cfg.LagTimeMax = DefaultLagTimeMax
	}
	seen := map[string]bool{}
	for _, id := range cfg.Followers {
		if id == "" || seen[id] {
			return fmt.Errorf("%w: follower ID %q empty or repeated", ErrInvalidConfig, id)
		}
		seen[id] = true
	}
	if cfg.LagTimeMax < 0 {
		return fmt.Errorf("%w: LagTimeMax %s", ErrInvalidConfig, cfg.LagTimeMax)
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	if err := rep.checkEpoch(cfg.Epoch); err != nil {
		return err
	}
	if err := p.log.startLeaderEpoch(cfg.Epoch); err != nil {
		return err
	}
	p.mu.Lock()
	now := p.log.now()
	leo := p.log.LogEndOffset()
	hw := p.HighWatermark()
	p.follower, p.epoch, p.epochStart, p.lagTimeMax = false, cfg.Epoch, leo, cfg.LagTimeMax
	p.roleGiven = true
	p.roleEpoch.Store(cfg.Epoch)
	p.replicas = p.replicas[:0]
	for _, id := range cfg.Followers {
		p.replicas = append(p.replicas, &replicaState{id: id, leo: -1, lastCaughtUp: now, inSync: true,
			sentHW: -1, lastFetchLeaderLEO: -1})
	}
	p.stopISRCheckLocked()
	if len(p.replicas) == 0 {
		p.replicated.Store(false)
	} else {
		p.hw.Store(hw)
		p.replicated.Store(true)
		p.startISRCheckLocked()
	}
	p.signalLocked()
	p.mu.Unlock()
	p.onChange()
	p.log.logger.Info("became leader", "topic", p.topicName, "partition", p.id, "leader_epoch", cfg.Epoch,
		"followers", cfg.Followers, "log_end_offset", leo, "high_watermark", hw)
	return p.log.saveState()
}

// BecomeFollower makes the partition a follower in epoch, as Kafka's controller does: appends
// return ErrNotLeader from now on (those in flight finish first, and AcksAll appends still
// waiting return ErrNotLeader), Fetch and EpochEndOffset too. The high watermark stays where it
// is until the fetch loop (Follow) has truncated the log to its leader's and applies the
// leader's: a follower never shows records its leader may not have.
//
// ErrFencedLeaderEpoch when epoch is older than the partition's; ErrClosed after the store
// closed.
func (rep *Replica) BecomeFollower(epoch int32) error {
	p := rep.p
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	if err := rep.checkEpoch(epoch); err != nil {
		return err
	}
	p.mu.Lock()
	hw := p.HighWatermark()
	p.follower, p.epoch, p.roleGiven = true, epoch, true
	p.roleEpoch.Store(epoch)
	p.replicas = nil
	p.stopISRCheckLocked()
	p.hw.Store(hw)
	p.replicated.Store(true)
	p.signalLocked()
	p.mu.Unlock()
	p.log.logger.Info("became follower", "topic", p.topicName, "partition", p.id, "leader_epoch", epoch,
		"high_watermark", hw)
	return p.log.saveState()
}

// checkEpoch refuses a role change to an epoch older than the current one, and a closed
// partition.
func (rep *Replica) checkEpoch(epoch int32) error {
	p := rep.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if epoch < p.epoch {
		return fmt.Errorf("%w: epoch %d is older than topic %s partition %d's epoch %d", ErrFencedLeaderEpoch, epoch, p.topicName, p.id, p.epoch)
	}
	return nil
}

// LeaderEpoch returns the partition's leader epoch: the one it leads or follows in.
func (rep *Replica) LeaderEpoch() int32 {
	p := rep.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// IsLeader reports whether the partition is a leader (with followers or on its own) rather than a
// follower.
func (rep *Replica) IsLeader() bool {
	p := rep.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.follower
}

// ISR returns the IDs of the followers in the in-sync replicas, in the order BecomeLeader gave
// them; the leader itself, always in sync, is not listed. Empty on a follower. Followers that
// have lagged past LagTimeMax are removed first.
func (rep *Replica) ISR() []string {
	p := rep.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkISRLocked()
	var ids []string
	for _, r := range p.replicas {
		if r.inSync {
			ids = append(ids, r.id)
		}
	}
	return ids
}

// Replicas returns the leader's view of each follower, in the order BecomeLeader gave them;
// empty on a follower. Followers that have lagged past LagTimeMax are removed from the ISR
// first.
func (rep *Replica) Replicas() []ReplicaState {
	p := rep.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkISRLocked()
	leo := p.log.LogEndOffset()
	out := make([]ReplicaState, 0, len(p.replicas))
	for _, r := range p.replicas {
		lag := leo
		if r.leo >= 0 {
			lag = leo - r.leo
		}
		out = append(out, ReplicaState{ID: r.id, LogEndOffset: r.leo, LastCaughtUp: r.lastCaughtUp, InSync: r.inSync, Lag: lag})
	}
	return out
}

// checkLeader refuses appends on a follower and, for AcksAll, while the in-sync replicas are
// fewer than min.insync.replicas. Callers hold roleMu.
func (p *Partition) checkLeader(acks Acks) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.follower {
		return fmt.Errorf("%w: topic %s partition %d follows in epoch %d", ErrNotLeader, p.topicName, p.id, p.epoch)
	}
	if acks != AcksAll {
		return nil
	}
	p.checkISRLocked()
	isr := 1
	for _, r := range p.replicas {
		if r.inSync {
			isr++
		}
	}
	if minISR := p.log.conf().MinInsyncReplicas; isr < minISR {
		return fmt.Errorf("%w: topic %s partition %d has %d in-sync replicas, min.insync.replicas is %d",
			ErrNotEnoughReplicas, p.topicName, p.id, isr, minISR)
	}
	return nil
}

// awaitHighWatermark waits until the high watermark reaches next. ErrNotLeader when the
// partition stops leading first, ErrClosed when it closes, ctx's error when ctx is done, and
// ErrNotEnoughReplicas when the high watermark got there with fewer in-sync replicas than
// min.insync.replicas (followers left the ISR after the write): committed, but with fewer
// copies than asked, as Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND says.
func (p *Partition) awaitHighWatermark(ctx context.Context, next int64) error {
	if p.HighWatermark() >= next {
		// Passed already (always, for a partition without followers): no channel to wait on.
		return p.checkInsyncAfterAppend(next)
	}
	for {
		ch := p.waitChan()
		if p.HighWatermark() >= next {
			return p.checkInsyncAfterAppend(next)
		}
		p.mu.Lock()
		follower, closed, epoch := p.follower, p.closed, p.epoch
		p.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if follower {
			return fmt.Errorf("%w: topic %s partition %d became a follower (epoch %d) before offset %d was committed",
				ErrNotLeader, p.topicName, p.id, epoch, next-1)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkInsyncAfterAppend returns ErrNotEnoughReplicas when the in-sync replicas, the leader
// included, are now fewer than min.insync.replicas.
func (p *Partition) checkInsyncAfterAppend(next int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.follower || len(p.replicas) == 0 {
		return nil
	}
	isr := 1
	for _, r := range p.replicas {
		if r.inSync {
			isr++
		}
	}
	if minISR := p.log.conf().MinInsyncReplicas; isr < minISR {
		return fmt.Errorf("%w: after the append: offsets below %d are committed with %d in-sync replicas of topic %s partition %d, min.insync.replicas is %d",
			ErrNotEnoughReplicas, next, isr, p.topicName, p.id, minISR)
	}
	return nil
}

// advanceHighWatermarkLocked moves a leader's high watermark to the smallest log end offset in
// the in-sync replicas, never back, and reports whether it moved. Callers hold mu.
func (p *Partition) advanceHighWatermarkLocked() bool {
	if p.follower || !p.replicated.Load() {
		return false
	}
	hw := p.log.LogEndOffset()
	for _, r := range p.replicas {
		if r.inSync {
			hw = min(hw, r.leo)
		}
	}
	if hw <= p.hw.Load() {
		return false
	}
	p.hw.Store(hw)
	return true
}

// checkISRLocked removes from the ISR the followers that have not caught up for longer than
// LagTimeMax (Kafka's maybeShrinkIsr), then moves the high watermark. Callers hold mu.
func (p *Partition) checkISRLocked() {
	if p.follower {
		return
	}
	now := p.log.now()
	shrunk := false
	for _, r := range p.replicas {
		if r.inSync && now.Sub(r.lastCaughtUp) > p.lagTimeMax {
			r.inSync = false
			shrunk = true
			p.log.stats.isrShrinks.Add(1)
			p.log.logger.Warn("follower left the in-sync replicas", "topic", p.topicName, "partition", p.id,
				"replica", r.id, "log_end_offset", r.leo, "last_caught_up", r.lastCaughtUp, "lag_time_max", p.lagTimeMax)
		}
	}
	if shrunk && p.advanceHighWatermarkLocked() {
		p.signalLocked()
		p.onChange()
	}
}

// startISRCheckLocked runs checkISRLocked every half LagTimeMax, as Kafka's isr-expiration task
// does, so that a silent follower leaves the ISR, and waiting AcksAll appends complete, even when
// nothing else happens. Callers hold mu.
func (p *Partition) startISRCheckLocked() {
	stop := make(chan struct{})
	p.stopCheck = stop
	every := max(p.lagTimeMax/2, time.Millisecond)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.checkISRLocked()
				p.mu.Unlock()
			}
		}
	}()
}

// stopISRCheckLocked stops the check started by startISRCheckLocked. Callers hold mu.
func (p *Partition) stopISRCheckLocked() {
	if p.stopCheck != nil {
		close(p.stopCheck)
		p.stopCheck = nil
	}
}

// Fetch serves a follower's fetch; Replica implements Leader with it, and a network transport
// calls it on the leader's side. req.Offset is taken as the follower's log end offset: it updates
// the follower's progress, the in-sync replicas (a follower that reaches the high watermark and
// this leader's epoch start joins them) and the high watermark, before the batches from
// req.Offset on (up to MaxBytes, whole batches, not limited by the high watermark) are read.
// When the follower is caught up and already knows the high watermark, Fetch waits up to
// req.MaxWait for either to change. Errors as the Leader contract says.
func (rep *Replica) Fetch(ctx context.Context, req FetchRequest) (FetchResponse, error) {
	p := rep.p
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	var timer *time.Timer
	expired := req.MaxWait <= 0
	recorded := false
	for {
		p.mu.Lock()
		r, err := rep.fetchReplicaLocked(req)
		if err != nil {
			p.mu.Unlock()
			stopTimer(timer)
			return FetchResponse{}, err
		}
		resp := FetchResponse{LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset()}
		if req.Offset < resp.LogStartOffset || req.Offset > resp.LogEndOffset {
			resp.HighWatermark = p.hw.Load()
			p.mu.Unlock()
			stopTimer(timer)
			return resp, fmt.Errorf("%w: replica %s fetches offset %d; topic %s partition %d holds [%d, %d)",
				ErrOffsetOutOfRange, req.ReplicaID, req.Offset, p.topicName, p.id, resp.LogStartOffset, resp.LogEndOffset)
		}
		moved := false
		if !recorded {
			moved = rep.recordFetchLocked(r, req.Offset, resp.LogEndOffset)
			recorded = true
		}
		resp.HighWatermark = p.hw.Load()
		var wait <-chan struct{}
		if !expired && req.Offset == resp.LogEndOffset && resp.HighWatermark <= r.sentHW {
			if p.changed == nil {
				p.changed = make(chan struct{})
			}
			wait = p.changed
		} else {
			r.sentHW = max(r.sentHW, resp.HighWatermark)
		}
		p.mu.Unlock()
		if moved {
			p.onChange()
		}
		if wait == nil {
			stopTimer(timer)
			b, err := p.log.ReadBatches(nil, req.Offset, maxBytes)
			if err == nil {
				p.log.stats.countFetch(b)
			}
			resp.Batches = b
			return resp, err
		}
		if timer == nil {
			timer = time.NewTimer(req.MaxWait)
		}
		select {
		case <-wait:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			timer.Stop()
			return FetchResponse{}, ctx.Err()
		}
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// fetchReplicaLocked checks a fetch against the role and epoch and returns the follower's state.
// Callers hold mu.
func (rep *Replica) fetchReplicaLocked(req FetchRequest) (*replicaState, error) {
	p := rep.p
	if p.closed {
		return nil, ErrClosed
	}
	if err := rep.checkRequestEpochLocked(req.LeaderEpoch); err != nil {
		return nil, err
	}
	for _, r := range p.replicas {
		if r.id == req.ReplicaID {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: %q is not a follower of topic %s partition %d (epoch %d)", ErrReplicaNotAvailable, req.ReplicaID, p.topicName, p.id, p.epoch)
}

// checkRequestEpochLocked checks that the partition leads and that epoch, unless undefined, is
// its own. Callers hold mu.
func (rep *Replica) checkRequestEpochLocked(epoch int32) error {
	p := rep.p
	switch {
	case p.follower:
		return fmt.Errorf("%w: topic %s partition %d follows in epoch %d", ErrNotLeader, p.topicName, p.id, p.epoch)
	case epoch == UndefinedEpoch || epoch == p.epoch:
		return nil
	case epoch < p.epoch:
		return fmt.Errorf("%w: request epoch %d, topic %s partition %d leads epoch %d", ErrFencedLeaderEpoch, epoch, p.topicName, p.id, p.epoch)
	default:
		return fmt.Errorf("%w: request epoch %d, topic %s partition %d leads epoch %d", ErrUnknownLeaderEpoch, epoch, p.topicName, p.id, p.epoch)
	}
}

// recordFetchLocked applies a fetch from offset to the follower's state, the ISR and the high
// watermark (Kafka's updateFollowerFetchState and maybeExpandIsr), and reports whether the high
// watermark moved. Callers hold mu.
func (rep *Replica) recordFetchLocked(r *replicaState, offset, leo int64) bool {
	p := rep.p
	now := p.log.now()
	switch {
	case offset >= leo:
		r.lastCaughtUp = now
	case offset >= r.lastFetchLeaderLEO && r.lastFetchLeaderLEO >= 0:
		r.lastCaughtUp = later(r.lastCaughtUp, r.lastFetchTime)
	}
	r.lastFetchLeaderLEO, r.lastFetchTime = leo, now
	r.leo = offset
	if !r.inSync && offset >= p.hw.Load() && offset >= p.epochStart {
		r.inSync = true
		p.log.stats.isrExpands.Add(1)
		p.log.logger.Info("follower joined the in-sync replicas", "topic", p.topicName, "partition", p.id,
			"replica", r.id, "log_end_offset", offset)
	}
	p.checkISRLocked()
	if p.advanceHighWatermarkLocked() {
		p.signalLocked()
		return true
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// EpochEndOffset answers a follower's OffsetsForLeaderEpoch from this leader's log; Replica
// implements Leader with it. See Leader.EpochEndOffset. ErrNotLeader on a follower, ErrClosed
// after the store closed.
func (rep *Replica) EpochEndOffset(ctx context.Context, epoch int32) (EpochEndOffset, error) {
	p := rep.p
	if err := ctx.Err(); err != nil {
		return EpochEndOffset{}, err
	}
	p.mu.Lock()
	closed, follower, cur := p.closed, p.follower, p.epoch
	p.mu.Unlock()
	if closed {
		return EpochEndOffset{}, ErrClosed
	}
	if follower {
		return EpochEndOffset{}, fmt.Errorf("%w: topic %s partition %d follows in epoch %d", ErrNotLeader, p.topicName, p.id, cur)
	}
	e, end := p.log.endOffsetForEpoch(epoch)
	return EpochEndOffset{LeaderEpoch: e, EndOffset: end}, nil
}
