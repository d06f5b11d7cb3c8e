package group

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// DefaultOffsetsRetention is Kafka's offsets.retention.minutes (7 days, KIP-186).
const DefaultOffsetsRetention = 7 * 24 * time.Hour

// ExpireOffsets removes the committed offsets that have outlived retention at now, as Kafka's
// coordinator does every offsets.retention.check.interval.ms (KIP-211,
// ClassicGroup.offsetExpirationCondition): an Empty group's offsets expire retention after the
// group became Empty (all together); a Stable consumer group's offsets of topics its members no
// longer subscribe to expire retention after their commit; a group without a protocol type (its
// offsets committed from outside any membership) has each offset expire retention after its
// commit. Offsets of a group in a rebalance are kept. An Empty group left without offsets is
// deleted. Tombstones are stored first. It returns how many offsets it removed.
func (c *Coordinator) ExpireOffsets(ctx context.Context, now time.Time, retention time.Duration) (int, error) {
	gs := c.allGroups()
	n := 0
	for _, g := range gs {
		removed, err := c.expireGroupOffsets(ctx, g, now, retention)
		n += removed
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *Coordinator) expireGroupOffsets(ctx context.Context, g *group, now time.Time, retention time.Duration) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		return 0, nil
	}
	var expired []TopicPartition
	switch {
	case g.protocolType == "" && len(g.members) == 0:
		for tp, o := range g.offsets {
			if !o.CommitTime.Add(retention).After(now) {
				expired = append(expired, tp)
			}
		}
	case g.state == Empty:
		if !g.stateTime.Add(retention).After(now) {
			for tp := range g.offsets {
				expired = append(expired, tp)
			}
		}
	case g.state == Stable && g.protocolType == ConsumerProtocolType:
		subscribed := g.subscribedTopics()
		for tp, o := range g.offsets {
			if _, ok := subscribed[tp.Topic]; !ok && !o.CommitTime.Add(retention).After(now) {
				expired = append(expired, tp)
			}
		}
	}
	// An offset an open transaction also committed stays until the transaction ends, and so
	// does its group (Kafka's OffsetMetadataManager.cleanupExpiredOffsets).
	expired = slices.DeleteFunc(expired, g.hasTxnOffset)
	deleteGroup := g.state == Empty && len(g.members) == 0 && len(g.offsets) == len(expired) && len(g.txnOffsets) == 0
	if len(expired) == 0 && !deleteGroup {
		return 0, nil
	}
	if c.cfg.Storage != nil {
		recs := offsetTombstones(g.id, expired)
		if deleteGroup {
			recs = append(recs, StorageRecord{Key: groupKey(g.id)})
		}
		if err := c.cfg.Storage.Append(ctx, recs); err != nil {
			return 0, fmt.Errorf("group %s: expired offsets not removed: %w", g.id, err)
		}
	}
	for _, tp := range expired {
		g.removeOffset(tp)
	}
	if len(expired) > 0 {
		c.logger.Info("group offsets expired", "group", g.id, "offsets", len(expired), "retention", retention)
	}
	if deleteGroup {
		c.stopGroupTimers(g)
		g.dead = true
		g.transition(Dead, now)
		c.mu.Lock()
		if c.groups[g.id] == g {
			delete(c.groups, g.id)
		}
		c.mu.Unlock()
	}
	return len(expired), nil
}
