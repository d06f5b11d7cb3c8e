package group

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Coordinator defaults, Kafka's (GroupCoordinatorConfig).
const (
	// DefaultMinSessionTimeout is group.min.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
	// DefaultMaxSessionTimeout is group.max.session.timeout.ms.
	DefaultMaxSessionTimeout = 30 * time.Minute
	// DefaultInitialRebalanceDelay is group.initial.rebalance.delay.ms.
	DefaultInitialRebalanceDelay = 3 * time.Second
	// DefaultNewMemberJoinTimeout is how long a new member may wait in its first JoinGroup
	// before it is removed (Kafka's group.classic.new.member.join.timeout.ms, 5 minutes): it has
	// no session yet, so its session timeout does not apply.
	DefaultNewMemberJoinTimeout = 5 * time.Minute
)

// Config configures a Coordinator. The zero value of a field means its Kafka default.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session timeout (Kafka's
	// group.min.session.timeout.ms, 6 s, and group.max.session.timeout.ms, 30 min): a JoinGroup
	// outside them gets ErrInvalidSessionTimeout.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3 s): the first rebalance of an
	// empty group waits this long for more members, again after each new one, up to the
	// rebalance timeout. Negative means none.
	InitialRebalanceDelay time.Duration
	// NewMemberJoinTimeout is how long a new member's first JoinGroup may wait (5 min).
	NewMemberJoinTimeout time.Duration
	// ReservedPrefix, when not empty, begins no group id: Join and CommitOffsets refuse such ids
	// with ErrInvalidGroupID (the store keeps other records under it in the same log).
	ReservedPrefix string
	// MaxSize is group.max.size: the most members a group holds; 0 means no limit (Kafka's
	// default is Integer.MAX_VALUE).
	MaxSize int
	// Storage keeps the group's state durably; nil keeps it in memory only.
	Storage Storage
	// Clock gives time and timers; nil means SystemClock.
	Clock Clock
	// Logger receives rebalance and expiry events; nil means slog.Default().
	Logger *slog.Logger
}

// Coordinator is a classic consumer group coordinator (Kafka's GroupCoordinator with
// GroupMetadataManager, the protocol of JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit and OffsetFetch): it keeps each group's members and generation, runs rebalances,
// and keeps the group's committed offsets. The assignment itself is computed by the member it
// chooses as leader, as in Kafka's classic protocol, so that clients of any language (their own
// assignors) and the in-process members share one coordinator. A Coordinator is safe for
// concurrent use.
type Coordinator struct {
	cfg    Config
	clock  Clock
	logger *slog.Logger

	mu     sync.Mutex
	groups map[string]*group
	closed bool
	// txnGroups are, by producer id, the groups holding offsets that producer's open
	// transaction committed (Kafka's openGroupsForProducer); guarded by mu.
	txnGroups map[int64]map[string]struct{}
	// seq numbers the offset records in the order the storage holds them (the group's lock
	// orders a group's appends), standing for Kafka's record offset when a transaction's
	// offsets meet the committed ones (txn_offsets.go).
	seq atomic.Uint64
}

// NewCoordinator returns a coordinator configured by cfg, with no groups: Replay loads the ones
// its storage holds, Start then starts their timers.
func NewCoordinator(cfg Config) *Coordinator {
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout == 0 {
		cfg.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	} else if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.NewMemberJoinTimeout == 0 {
		cfg.NewMemberJoinTimeout = DefaultNewMemberJoinTimeout
	}
	c := &Coordinator{cfg: cfg, clock: cfg.Clock, logger: cfg.Logger, groups: map[string]*group{},
		txnGroups: map[int64]map[string]struct{}{}}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// State is a group's state, Kafka's ClassicGroupState.
type State int8

const (
	// Empty: no members; the group may hold committed offsets.
	Empty State = iota
	// PreparingRebalance: the join phase; the coordinator waits for every member to rejoin.
	PreparingRebalance
	// CompletingRebalance: the sync phase; the coordinator waits for the leader's assignment.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: the group was deleted.
	Dead
)

// String returns Kafka's name of the state, as DescribeGroups and ListGroups give it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// Protocol is one protocol a member supports, with its metadata (for consumers, an assignor
// name and an encoded Subscription), in the member's order of preference.
type Protocol struct {
	Name     string
	Metadata []byte
}

// group is one classic group (Kafka's ClassicGroup). mu guards everything below it.
type group struct {
	id string

	mu             sync.Mutex
	state          State
	prevState      State
	stateTime      time.Time // when state was entered
	generation     int32
	protocolType   string
	protocol       string // the chosen protocol, "" while none
	leader         string // member id, "" when none
	members        map[string]*member
	static         map[string]string   // group.instance.id -> member id
	pending        map[string]*member  // member ids handed out by MEMBER_ID_REQUIRED, not yet joined
	pendingSync    map[string]struct{} // members of the generation that have not sent SyncGroup
	awaitingJoin   int                 // members with a pending JoinGroup
	newMemberAdded bool                // during the initial delay: a member joined since it started
	joinTimer      Timer
	syncTimer      Timer
	timerSeq       uint64 // identifies the group's current join and sync timers
	offsets        map[TopicPartition]OffsetAndMetadata
	// offsetSeq is the Coordinator.seq of the record of each committed offset.
	offsetSeq map[TopicPartition]uint64
	// txnOffsets are the offsets of open transactions, by producer id, until their marker
	// (Kafka's pendingTransactionalOffsetCommits).
	txnOffsets map[int64]map[TopicPartition]txnOffset
	dead       bool
}

// member is a group member (Kafka's ClassicGroupMember).
type member struct {
	id, instanceID       string
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocolType         string
	protocols            []Protocol
	assignment           []byte
	joinCh               chan joinResult // non-nil while a JoinGroup waits
	syncCh               chan syncResult // non-nil while a SyncGroup waits
	isNew                bool
	timer                Timer
	timerSeq             uint64
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetAndMetadata is a group's committed position in one partition (Kafka's
// OffsetAndMetadata): the offset of the next record to read, the leader epoch of the record
// before it (-1 when unknown), the committer's metadata string and when it was committed.
type OffsetAndMetadata struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitTime  time.Time
}

// newMemberID returns a member id as Kafka makes them: the client id (or the group.instance.id
// of a static member), a dash and a random UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// allGroups returns the coordinator's groups, to be locked one at a time.
func (c *Coordinator) allGroups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.groups))
}

// offsetTombstones returns the tombstones of group's offsets of tps, ordered by topic and
// partition.
func offsetTombstones(group string, tps []TopicPartition) []StorageRecord {
	recs := make([]StorageRecord, 0, len(tps)+1)
	for _, tp := range sortedPartitions(sliceSet(tps)) {
		recs = append(recs, StorageRecord{Key: offsetKey(group, tp)})
	}
	return recs
}

// getGroup returns the group of id, creating an empty one when create is set; nil when there is
// none. ErrCoordinatorNotAvailable once closed.
func (c *Coordinator) getGroup(id string, create bool) (*group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrCoordinatorNotAvailable
	}
	g := c.groups[id]
	if g == nil && create {
		g = newGroup(id, c.clock.Now())
		c.groups[id] = g
	}
	return g, nil
}

func newGroup(id string, now time.Time) *group {
	return &group{id: id, stateTime: now, members: map[string]*member{}, static: map[string]string{},
		pending: map[string]*member{}, pendingSync: map[string]struct{}{}, offsets: map[TopicPartition]OffsetAndMetadata{},
		offsetSeq: map[TopicPartition]uint64{}, txnOffsets: map[int64]map[TopicPartition]txnOffset{}}
}

// lockGroup returns the group of id locked, or an error: ErrCoordinatorNotAvailable once closed
// or for a deleted group, notFound when there is none.
func (c *Coordinator) lockGroup(id string, create bool, notFound error) (*group, error) {
	for {
		g, err := c.getGroup(id, create)
		if err != nil {
			return nil, err
		}
		if g == nil {
			return nil, notFound
		}
		g.mu.Lock()
		if !g.dead {
			return g, nil
		}
		// Deleted between the lookup and the lock: look again (a new one may be made).
		g.mu.Unlock()
		if !create {
			return nil, notFound
		}
	}
}

func (g *group) transition(s State, now time.Time) {
	g.prevState, g.state, g.stateTime = g.state, s, now
}

// hasAllMembersJoined is Kafka's ClassicGroup.hasAllMembersJoined.
func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pending) == 0
}

// maxRebalanceTimeout is the largest rebalance timeout of the members: the join phase's bound.
func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: a member may join when its
// protocol type is the group's and it shares a protocol with every member.
func (g *group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	candidates := g.candidateProtocols()
	for _, p := range protocols {
		if _, ok := candidates[p.Name]; ok {
			return true
		}
	}
	return false
}

// candidateProtocols returns the protocols every member supports.
func (g *group) candidateProtocols() map[string]struct{} {
	counts := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			counts[p.Name]++
		}
	}
	out := map[string]struct{}{}
	for name, n := range counts {
		if n == len(g.members) {
			out[name] = struct{}{}
		}
	}
	return out
}

// selectProtocol is Kafka's ClassicGroup.selectProtocol: each member votes for the first of its
// protocols that every member supports; the most votes win (ties go to the smaller name, where
// Kafka's choice is arbitrary).
func (g *group) selectProtocol() string {
	candidates := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if _, ok := candidates[p.Name]; ok {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] > bestVotes {
			best, bestVotes = name, votes[name]
		}
	}
	return best
}

// metadataFor returns m's metadata of protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// matchesProtocols reports whether protocols are m's, names and metadata alike.
func (m *member) matchesProtocols(protocols []Protocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b Protocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// validateMember is Kafka's ClassicGroup.validateMember: a static member's instance id must map
// to memberID (else ErrFencedInstanceID), a dynamic member must be a member.
func (g *group) validateMember(memberID, instanceID string) error {
	if instanceID != "" {
		existing, ok := g.static[instanceID]
		if !ok {
			return fmt.Errorf("%w: group %s instance %s", ErrUnknownMemberID, g.id, instanceID)
		}
		if existing != memberID {
			return fmt.Errorf("%w: group %s instance %s is member %s, not %s", ErrFencedInstanceID, g.id, instanceID, existing, memberID)
		}
		return nil
	}
	if _, ok := g.members[memberID]; !ok {
		return fmt.Errorf("%w: group %s member %q", ErrUnknownMemberID, g.id, memberID)
	}
	return nil
}

// add makes m a member.
func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if m.joinCh != nil {
		g.awaitingJoin++
	}
}

// remove takes m out of the group (Kafka's ClassicGroup.remove), stopping its session timer. A
// SyncGroup it has waiting is answered with ErrUnknownMemberID.
func (g *group) remove(m *member) {
	delete(g.members, m.id)
	delete(g.pending, m.id)
	delete(g.pendingSync, m.id)
	if m.joinCh != nil {
		g.awaitingJoin--
	}
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
	if m.syncCh != nil {
		m.syncCh <- syncResult{err: fmt.Errorf("%w: group %s member %s was removed", ErrUnknownMemberID, g.id, m.id)}
		m.syncCh = nil
	}
	if g.leader == m.id {
		g.leader = ""
		// Kafka takes the first member of its map; the smallest id is as good and repeatable.
		if len(g.members) > 0 {
			g.leader = slices.Min(slices.Collect(maps.Keys(g.members)))
		}
	}
	// An Empty group keeps its protocol type, as Kafka's does: ListGroups shows it, and offset
	// expiry tells a consumer group from offsets committed outside any membership.
}

// completeJoin answers m's waiting JoinGroup with r.
func (g *group) completeJoin(m *member, r joinResult) {
	if m.joinCh == nil {
		return
	}
	m.joinCh <- r
	m.joinCh = nil
	g.awaitingJoin--
}

// memberSummaries returns the members with their metadata of the chosen protocol, ordered by
// member id: what the leader's JoinGroup response lists.
func (g *group) memberSummaries() []JoinMember {
	out := make([]JoinMember, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		out = append(out, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
	}
	return out
}

// scheduleSession (re)starts m's session timer: Kafka's rescheduleClassicGroupMemberHeartbeat.
// When it fires, m is removed unless it has satisfied the heartbeat (hasSatisfiedHeartbeat).
func (c *Coordinator) scheduleSession(g *group, m *member, d time.Duration) {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
	seq := m.timerSeq
	m.timer = c.clock.AfterFunc(d, func() { c.expireSession(g, m, seq) })
}

// expireSession is Kafka's expireClassicGroupMemberHeartbeat.
func (c *Coordinator) expireSession(g *group, m *member, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || m.timerSeq != seq {
		return
	}
	if _, ok := g.pending[m.id]; ok {
		c.logger.Info("pending group member removed after its session timeout", "group", g.id, "member", m.id)
		g.remove(m)
		if g.state == PreparingRebalance && g.hasAllMembersJoined() {
			c.completeJoinPhase(g)
		}
		return
	}
	if g.members[m.id] != m {
		return
	}
	// Kafka's ClassicGroupMember.hasSatisfiedHeartbeat: a new member can be expired while it
	// waits in its first join; a member waiting in a join or a sync counts as alive (the
	// coordinator holds its request); any other must have heartbeated.
	if !m.isNew && (m.joinCh != nil || m.syncCh != nil) {
		return
	}
	c.logger.Info("group member removed after its session timeout", "group", g.id, "member", m.id, "session_timeout", m.sessionTimeout)
	c.removeMemberAndUpdate(g, m, "session timeout")
}

// removeMemberAndUpdate is Kafka's removeMemberAndUpdateClassicGroup: a JoinGroup m has waiting
// is answered at once with ErrUnknownMemberID (so that a live client joins again as a new
// member, and stops reading meanwhile), m is removed, and the group rebalances.
func (c *Coordinator) removeMemberAndUpdate(g *group, m *member, reason string) {
	g.completeJoin(m, joinResult{err: fmt.Errorf("%w: group %s member %s was removed (%s)", ErrUnknownMemberID, g.id, m.id, reason)})
	g.remove(m)
	switch {
	case g.state == Stable || g.state == CompletingRebalance:
		c.prepareRebalance(g, "removing member "+m.id+" ("+reason+")")
	case g.state == PreparingRebalance && g.hasAllMembersJoined():
		c.completeJoinPhase(g)
	}
}

// prepareRebalance is Kafka's prepareRebalance: it ends the sync phase (waiting SyncGroups get
// ErrRebalanceInProgress), and starts the join phase, bounded by the members' largest rebalance
// timeout, or for an empty group by group.initial.rebalance.delay.ms (InitialDelayedJoin).
func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == CompletingRebalance {
		c.resetAssignments(g, fmt.Errorf("%w: group %s", ErrRebalanceInProgress, g.id))
	}
	c.stopGroupTimers(g)
	wasEmpty := g.state == Empty
	g.transition(PreparingRebalance, c.clock.Now())
	c.logger.Info("preparing to rebalance group", "group", g.id, "generation", g.generation, "reason", reason)
	seq := g.timerSeq
	if wasEmpty {
		delay := c.cfg.InitialRebalanceDelay
		remaining := max(g.maxRebalanceTimeout()-delay, 0)
		g.newMemberAdded = false
		g.joinTimer = c.clock.AfterFunc(delay, func() { c.initialDelayExpired(g, seq, delay, remaining) })
		return
	}
	g.joinTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.joinTimeoutExpired(g, seq) })
	if g.hasAllMembersJoined() {
		c.completeJoinPhase(g)
	}
}

// stopGroupTimers stops the join and sync phase timers.
func (c *Coordinator) stopGroupTimers(g *group) {
	g.timerSeq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

// initialDelayExpired is Kafka's tryCompleteInitialRebalanceElseSchedule: while members keep
// joining and the rebalance timeout is not spent, the delay is extended; then the join completes.
func (c *Coordinator) initialDelayExpired(g *group, seq uint64, delay, remaining time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || g.timerSeq != seq || g.state != PreparingRebalance {
		return
	}
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		next := min(c.cfg.InitialRebalanceDelay, remaining)
		left := max(remaining-delay, 0)
		g.joinTimer = c.clock.AfterFunc(next, func() { c.initialDelayExpired(g, seq, next, left) })
		return
	}
	c.completeJoinPhase(g)
}

// joinTimeoutExpired ends a join phase that reached the rebalance timeout (Kafka's DelayedJoin
// expiring): members that did not rejoin are removed.
func (c *Coordinator) joinTimeoutExpired(g *group, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || g.timerSeq != seq || g.state != PreparingRebalance {
		return
	}
	c.completeJoinPhase(g)
}

// completeJoinPhase is Kafka's completeClassicGroupJoin: dynamic members that have not rejoined
// are removed (static ones stay, their session timer decides), a joined member becomes leader
// if the leader did not rejoin, the generation advances, and every waiting JoinGroup is
// answered; each member's session timer starts over, and the sync phase begins, bounded by the
// rebalance timeout.
func (c *Coordinator) completeJoinPhase(g *group) {
	c.stopGroupTimers(g)
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if m.joinCh == nil && m.instanceID == "" {
			c.logger.Info("group member removed: it did not rejoin within the rebalance timeout", "group", g.id, "member", m.id)
			g.remove(m)
		}
	}
	if !c.electJoinedLeader(g) && len(g.members) > 0 {
		// No member rejoined: wait another rebalance timeout for the session timers to remove
		// the silent ones.
		c.logger.Warn("group could not complete its rebalance because no member rejoined", "group", g.id)
		seq := g.timerSeq
		g.joinTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.joinTimeoutExpired(g, seq) })
		return
	}
	g.generation++
	now := c.clock.Now()
	clear(g.pendingSync)
	if len(g.members) == 0 {
		g.protocol = ""
		g.transition(Empty, now)
		c.logger.Info("group is empty", "group", g.id, "generation", g.generation)
		if err := c.storeGroup(g); err != nil {
			c.logger.Error("group metadata not stored", "group", g.id, "err", err)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	c.logger.Info("group rebalanced; awaiting the leader's assignment", "group", g.id, "generation", g.generation,
		"protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	summaries := g.memberSummaries()
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		r := joinResult{resp: JoinResponse{MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
			Protocol: g.protocol, Leader: g.leader}}
		if m.id == g.leader {
			r.resp.Members = summaries
		}
		g.completeJoin(m, r)
		c.scheduleSession(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = struct{}{}
	}
	seq := g.timerSeq
	gen := g.generation
	g.syncTimer = c.clock.AfterFunc(g.maxRebalanceTimeout(), func() { c.syncTimeoutExpired(g, seq, gen) })
}

// electJoinedLeader is Kafka's maybeElectNewJoinedLeader: false when the leader did not rejoin
// and no other member did either.
func (c *Coordinator) electJoinedLeader(g *group) bool {
	if g.leader == "" {
		return true
	}
	if l := g.members[g.leader]; l != nil && l.joinCh != nil {
		return true
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if g.members[id].joinCh != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// syncTimeoutExpired is Kafka's expirePendingSync: members of the generation that did not send
// SyncGroup within the rebalance timeout are removed and the group rebalances.
func (c *Coordinator) syncTimeoutExpired(g *group, seq uint64, generation int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead || g.timerSeq != seq || g.generation != generation {
		return
	}
	if (g.state != CompletingRebalance && g.state != Stable) || len(g.pendingSync) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(g.pendingSync))
	for _, id := range ids {
		if m := g.members[id]; m != nil {
			c.logger.Info("group member removed: no SyncGroup within the rebalance timeout", "group", g.id, "member", id)
			g.remove(m)
		}
	}
	c.prepareRebalance(g, fmt.Sprintf("removing %v on pending sync expiration", ids))
}

// resetAssignments clears every member's assignment and answers every waiting SyncGroup with err
// (Kafka's resetAndPropagateAssignmentWithError). Each member answered gets its session timer
// again, as in Kafka's propagateAssignment: an expiry while it waited was ignored.
func (c *Coordinator) resetAssignments(g *group, err error) {
	for _, m := range g.members {
		m.assignment = nil
		if m.syncCh != nil {
			m.syncCh <- syncResult{err: err}
			m.syncCh = nil
			c.scheduleSession(g, m, m.sessionTimeout)
		}
	}
}

// ListedGroup is one group as ListGroups gives it.
type ListedGroup struct {
	Group        string
	ProtocolType string
	State        State
}

// ListGroups returns every group (with members or committed offsets), ordered by id; with
// states given, only the groups in one of them (KIP-518).
func (c *Coordinator) ListGroups(states ...State) []ListedGroup {
	gs := c.allGroups()
	var out []ListedGroup
	for _, g := range gs {
		g.mu.Lock()
		l := ListedGroup{Group: g.id, ProtocolType: g.protocolType, State: g.state}
		dead := g.dead
		g.mu.Unlock()
		if dead || (len(states) > 0 && !slices.Contains(states, l.State)) {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b ListedGroup) int { return cmp.Compare(a.Group, b.Group) })
	return out
}

// DescribedMember is one member as DescribeGroups gives it.
type DescribedMember struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Metadata is the member's metadata of the group's protocol (for consumers, an encoded
	// Subscription: DecodeSubscription).
	Metadata []byte
	// Assignment is the member's assignment (for consumers: DecodeAssignment); empty before
	// the leader's SyncGroup.
	Assignment []byte
	// SessionTimeout and RebalanceTimeout are the member's.
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
}

// Description is a group as DescribeGroups gives it, with its generation and leader besides.
type Description struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Leader       string
	// StateTime is when the group entered State.
	StateTime time.Time
	// Members are ordered by member id.
	Members []DescribedMember
}

// DescribeGroup returns the group's state and members. ErrGroupIDNotFound when there is no such
// group.
func (c *Coordinator) DescribeGroup(id string) (Description, error) {
	g, err := c.lockGroup(id, false, fmt.Errorf("%w: %s", ErrGroupIDNotFound, id))
	if err != nil {
		return Description{}, err
	}
	defer g.mu.Unlock()
	d := Description{Group: g.id, State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol,
		Generation: g.generation, Leader: g.leader, StateTime: g.stateTime}
	for _, mid := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[mid]
		d.Members = append(d.Members, DescribedMember{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, Metadata: m.metadataFor(g.protocol), Assignment: m.assignment,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout})
	}
	return d, nil
}

// DeleteGroup deletes an empty group and its committed offsets (Kafka's DeleteGroups): the
// offsets' and the group's tombstones are stored first. ErrGroupIDNotFound when there is no such
// group, ErrNonEmptyGroup while it has members.
func (c *Coordinator) DeleteGroup(ctx context.Context, id string) error {
	g, err := c.lockGroup(id, false, fmt.Errorf("%w: %s", ErrGroupIDNotFound, id))
	if err != nil {
		return err
	}
	defer g.mu.Unlock()
	if g.state != Empty {
		return fmt.Errorf("%w: group %s is %s with %d members", ErrNonEmptyGroup, id, g.state, len(g.members))
	}
	if c.cfg.Storage != nil {
		// The offsets of open transactions get tombstones too, so that a commit of theirs left
		// in the log cannot bring the group back when its tombstone is gone (Kafka's
		// OffsetMetadataManager.deleteAllOffsets).
		recs := append(offsetTombstones(g.id, g.offsetKeys(func(TopicPartition) bool { return true })), StorageRecord{Key: groupKey(g.id)})
		if err := c.cfg.Storage.Append(ctx, recs); err != nil {
			return fmt.Errorf("group %s: delete: %w", id, err)
		}
	}
	c.stopGroupTimers(g)
	g.dead = true
	g.transition(Dead, c.clock.Now())
	c.mu.Lock()
	if c.groups[id] == g {
		delete(c.groups, id)
	}
	c.mu.Unlock()
	return nil
}

// Close stops every timer and answers every waiting JoinGroup and SyncGroup with
// ErrCoordinatorNotAvailable; later calls return it too.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		c.stopGroupTimers(g)
		err := fmt.Errorf("%w: the coordinator closed", ErrCoordinatorNotAvailable)
		for _, m := range g.members {
			g.completeJoin(m, joinResult{err: err})
			if m.syncCh != nil {
				m.syncCh <- syncResult{err: err}
				m.syncCh = nil
			}
			if m.timer != nil {
				m.timer.Stop()
			}
			m.timerSeq++
		}
		for _, m := range g.pending {
			if m.timer != nil {
				m.timer.Stop()
			}
			m.timerSeq++
		}
		g.mu.Unlock()
	}
}

func sortedPartitions[V any](m map[TopicPartition]V) []TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// MaxGroupIDLen is the longest group id: Kafka's protocol strings carry an int16 length.
const MaxGroupIDLen = 1<<15 - 1

// CheckGroupID returns ErrInvalidGroupID for an id the coordinator refuses: empty, longer than
// MaxGroupIDLen bytes, or beginning with the configured reserved prefix. Join and CommitOffsets
// apply it; callers may check an id before a request.
func (c *Coordinator) CheckGroupID(id string) error {
	if id == "" || len(id) > MaxGroupIDLen {
		return fmt.Errorf("%w: %d bytes (1 to %d)", ErrInvalidGroupID, len(id), MaxGroupIDLen)
	}
	if c.cfg.ReservedPrefix != "" && strings.HasPrefix(id, c.cfg.ReservedPrefix) {
		return fmt.Errorf("%w: %q begins with a reserved prefix", ErrInvalidGroupID, id)
	}
	return nil
}
