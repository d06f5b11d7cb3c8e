package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StorageRecord is one record of Kafka's __consumer_offsets topic: Key and Value in Kafka's
// formats (an OffsetCommit key, version 1, with an OffsetCommit value, version 3; or a
// GroupMetadata key, version 2, with a GroupMetadata value, version 3). A nil Value is a
// tombstone: the key's offset or group was deleted.
type StorageRecord struct {
	Key, Value []byte
}

// Storage keeps a coordinator's state durably: the store's internal log __consumer_offsets-0
// (compacted, so one record per key survives).
type Storage interface {
	// Append durably appends recs, in order, as one write: when it returns nil every record is
	// durable; otherwise none is taken as written.
	Append(ctx context.Context, recs []StorageRecord) error
}

// ErrBadRecord is returned by Replay for a key or value that is not one of Kafka's
// __consumer_offsets formats.
var ErrBadRecord = errors.New("group: malformed __consumer_offsets record")

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, tp.Topic, tp.Partition
	return k.AppendTo(nil)
}

func offsetValue(o OffsetAndMetadata) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = 3, o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTime.UnixMilli()
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return k.AppendTo(nil)
}

// storeGroup stores the group's membership and assignment (Kafka's storeGroup, at the leader's
// SyncGroup and when a rebalance empties the group), so that it survives a restart of the
// coordinator. Callers hold g.mu.
func (c *Coordinator) storeGroup(g *group) error {
	if c.cfg.Storage == nil {
		return nil
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = g.protocolType, g.generation, g.stateTime.UnixMilli()
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	for _, m := range g.memberSummaries() {
		mm := g.members[m.MemberID]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = mm.id, mm.clientID, mm.clientHost
		if mm.instanceID != "" {
			id := mm.instanceID
			vm.InstanceID = &id
		}
		vm.RebalanceTimeoutMillis = int32(min(mm.rebalanceTimeout.Milliseconds(), 1<<31-1))
		vm.SessionTimeoutMillis = int32(min(mm.sessionTimeout.Milliseconds(), 1<<31-1))
		vm.Subscription, vm.Assignment = m.Metadata, mm.assignment
		v.Members = append(v.Members, vm)
	}
	return c.cfg.Storage.Append(context.Background(), []StorageRecord{{Key: groupKey(g.id), Value: v.AppendTo(nil)}})
}

// Replay applies one record of the coordinator's storage, in the order they were appended: the
// loading of Kafka's GroupMetadataManager. An offset record sets (or, as a tombstone, deletes) a
// committed offset; a group record sets the group's generation, protocol, leader and members
// (each with its subscription and assignment), or deletes the group. Call it for every record
// of the storage's non-transactional batches before Start, and ReplayTxnOffset and
// ReplayTxnMarker for those of transactions, in the same order. Returns ErrBadRecord for a
// record that does not decode; nothing is applied of it.
func (c *Coordinator) Replay(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	switch version := int16(binary.BigEndian.Uint16(key)); version {
	case 0, 1:
		id, tp, o, err := parseOffsetRecord(key, value)
		if err != nil {
			return err
		}
		g := c.groups[id]
		if o == nil {
			// A tombstone: the committed offset goes, and so do those of open transactions,
			// committed before it (Kafka's OffsetMetadataManager.replay).
			if g != nil {
				g.removeOffset(tp)
			}
			return nil
		}
		if g == nil {
			g = newGroup(id, now)
			c.groups[id] = g
		}
		g.offsets[tp], g.offsetSeq[tp] = *o, c.seq.Add(1)
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: group key: %w", ErrBadRecord, err)
		}
		if value == nil {
			// Kafka deletes the group with its offsets (their tombstones come first).
			delete(c.groups, k.Group)
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: group value of %s: %w", ErrBadRecord, k.Group, err)
		}
		g := c.groups[k.Group]
		if g == nil {
			g = newGroup(k.Group, now)
			c.groups[k.Group] = g
		}
		g.members, g.static = map[string]*member{}, map[string]string{}
		g.protocolType, g.generation, g.leader, g.protocol = v.ProtocolType, v.Generation, "", ""
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		// Versions 0 and 1 have no state timestamp: it reads as -1.
		g.stateTime = now
		if v.CurrentStateTimestamp >= 0 {
			g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
		}
		for _, vm := range v.Members {
			// Version 0 has no rebalance timeout (it reads as -1), and Kafka's replay then
			// takes the session timeout; so for any value not positive here, as Join does for
			// a JoinGroup without one. A join phase bounded by no time ends before members can
			// rejoin, and, with only static members that did not, re-arms at once forever.
			rebalanceTimeout := vm.RebalanceTimeoutMillis
			if rebalanceTimeout <= 0 {
				rebalanceTimeout = vm.SessionTimeoutMillis
			}
			m := &member{id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				rebalanceTimeout: time.Duration(rebalanceTimeout) * time.Millisecond,
				protocolType:     v.ProtocolType, assignment: vm.Assignment}
			if vm.InstanceID != nil {
				m.instanceID = *vm.InstanceID
				g.static[m.instanceID] = m.id
			}
			if g.protocol != "" {
				m.protocols = []Protocol{{Name: g.protocol, Metadata: vm.Subscription}}
			}
			g.members[m.id] = m
		}
		if g.members[g.leader] == nil {
			// No leader (the field is nullable), or one that is not a member: elect one as
			// remove does. A group with members must have a leader, or its next join phase
			// completes with none (electJoinedLeader) and no member is asked to assign.
			g.leader = ""
			if len(g.members) > 0 {
				g.leader = slices.Min(slices.Collect(maps.Keys(g.members)))
			}
		}
		if len(g.members) == 0 {
			g.state = Empty
		} else {
			g.state = Stable
		}
	default:
		return fmt.Errorf("%w: key version %d", ErrBadRecord, version)
	}
	return nil
}

// parseOffsetRecord decodes an offset record (key version 0 or 1): its group, its partition and
// its offset, nil for a tombstone. ErrBadRecord when it does not decode.
func parseOffsetRecord(key, value []byte) (string, TopicPartition, *OffsetAndMetadata, error) {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return "", TopicPartition{}, nil, fmt.Errorf("%w: offset key: %w", ErrBadRecord, err)
	}
	tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
	if value == nil {
		return k.Group, tp, nil, nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return "", TopicPartition{}, nil, fmt.Errorf("%w: offset value of group %s: %w", ErrBadRecord, k.Group, err)
	}
	epoch := v.LeaderEpoch
	if v.Version < 3 {
		epoch = -1
	}
	return k.Group, tp, &OffsetAndMetadata{Offset: v.Offset, LeaderEpoch: epoch, Metadata: v.Metadata, CommitTime: time.UnixMilli(v.CommitTimestamp)}, nil
}

// Start starts the session timers of the members Replay loaded, as Kafka's coordinator does
// when it loads a group: a member that does not heartbeat within its session timeout is removed
// and the group rebalances; a static member that rejoins in time keeps its assignment.
func (c *Coordinator) Start() {
	gs := c.allGroups()
	for _, g := range gs {
		g.mu.Lock()
		for _, m := range g.members {
			c.scheduleSession(g, m, m.sessionTimeout)
		}
		g.mu.Unlock()
	}
}
