package commitlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/group"
)

// Group reader defaults, Kafka's consumer defaults.
const (
	// DefaultGroupSessionTimeout is session.timeout.ms (45 s, Kafka 3.0 and later).
	DefaultGroupSessionTimeout = 45 * time.Second
	// DefaultGroupHeartbeatInterval is heartbeat.interval.ms.
	DefaultGroupHeartbeatInterval = 3 * time.Second
	// DefaultGroupMaxPollInterval is max.poll.interval.ms.
	DefaultGroupMaxPollInterval = 5 * time.Minute
	// groupRetryBackoff is retry.backoff.ms: the pause before joining again after an error.
	groupRetryBackoff = 100 * time.Millisecond
)

// GroupReaderConfig configures a member of a consumer group: Kafka's consumer settings of the
// same names.
type GroupReaderConfig struct {
	// Group is the group id (group.id): readers of one group share the partitions of their
	// topics, each partition read by one member, and share committed positions.
	Group string
	// Topics are the topics to read (subscribe(topics)). Or:
	Topics []string
	// TopicPattern subscribes to every topic of the store whose name it matches, now and as
	// topics are created and deleted (subscribe(Pattern)); checked at each heartbeat.
	TopicPattern *regexp.Regexp
	// InstanceID is group.instance.id, which makes the member static (KIP-345): a member that
	// restarts with the same InstanceID within the session timeout gets its partitions back
	// without a rebalance; Close does not leave the group, the session timeout removes the
	// member. "" makes a dynamic member, which Close takes out of the group at once.
	InstanceID string
	// ClientID is client.id, shown by DescribeGroup and prefixed to the member id; "" means
	// "commitlog".
	ClientID string
	// SessionTimeout is session.timeout.ms (45 s): without a heartbeat for this long the member
	// is removed and its partitions reassigned. It must lie within the store's bounds
	// (WithGroupSessionTimeouts, 6 s to 30 min by default).
	SessionTimeout time.Duration
	// HeartbeatInterval is heartbeat.interval.ms (3 s): how often the member heartbeats, and so
	// how soon it learns of a rebalance. Keep it below a third of SessionTimeout.
	HeartbeatInterval time.Duration
	// MaxPollInterval is max.poll.interval.ms (5 min): the longest the program may take between
	// calls of Next. Past it the member leaves the group (a static member stops heartbeating),
	// its partitions are lost, and the next Next joins again. It is also the member's rebalance
	// timeout: how long the group waits for the member to rejoin once a rebalance starts.
	MaxPollInterval time.Duration
	// Assignors are partition.assignment.strategy, most preferred first; nil means Kafka's
	// default, group.RangeAssignor then group.CooperativeStickyAssignor. The members agree on
	// one that all of them list. When every assignor listed is cooperative the member follows
	// incremental cooperative rebalancing (KIP-429): it keeps reading the partitions that stay
	// with it during a rebalance. Otherwise it follows the eager protocol: it gives up all its
	// partitions (OnRevoked) before each rebalance.
	Assignors []group.Assignor
	// Start is auto.offset.reset for a partition the group has no committed position in:
	// Latest (the default, as Kafka's) or Earliest.
	Start StartPosition
	// Reset is what to do when a position falls out of range (see ResetPolicy).
	Reset ResetPolicy
	// Isolation is isolation.level: ReadUncommitted (the default) or ReadCommitted.
	Isolation IsolationLevel
	// MaxBytes is max.partition.fetch.bytes; 0 means DefaultReaderMaxBytes.
	MaxBytes int
	// AutoCommitInterval, when positive, commits the member's positions from Next this often
	// (enable.auto.commit with auto.commit.interval.ms), and before partitions are revoked, as
	// Kafka's consumer does; the records Next returned before are then taken as processed.
	// Zero means commits only by Commit.
	AutoCommitInterval time.Duration
	// OnAssigned, OnRevoked and OnLost are the rebalance listener (Kafka's
	// ConsumerRebalanceListener), each optional, each called from Next in the goroutine that
	// calls it, with Next's context, so that they never run while a record is being processed:
	//   - OnAssigned: partitions given to the member, before any of their records is returned.
	//   - OnRevoked: partitions taken from the member in a rebalance, while the member still
	//     owns them: the place to Commit their positions. Under the eager protocol every
	//     partition is revoked before each rebalance; under the cooperative one only those
	//     that move.
	//   - OnLost: partitions the member lost without a rebalance handing them over (it was
	//     removed from the group: its session or poll interval ran out, or it was fenced):
	//     another member may already read them, so their positions cannot be committed.
	OnAssigned func(ctx context.Context, partitions []TopicPartition)
	OnRevoked  func(ctx context.Context, partitions []TopicPartition)
	OnLost     func(ctx context.Context, partitions []TopicPartition)
}

// GroupReader is a member of a consumer group: it reads the partitions the group assigns it,
// from the group's committed positions, and its Commit moves them. Kafka's KafkaConsumer with
// subscribe: a background goroutine joins the group, heartbeats and follows rebalances; Next
// hands out records and runs the rebalance listener. Call Next (and Records) from one goroutine
// only, as Kafka's consumer is used from one thread: it runs the listener in order; Commit, Assignment, Positions and Close may be called from any goroutine.
//
// A partition is read by one member at a time within a generation; across a rebalance a member
// that lost its membership (a zombie) may still return the records it had fetched, but its
// commits are refused (ErrIllegalGeneration), so the group's positions never move backwards
// through it. Processing is at least once: a record returned and not committed is returned
// again, to this member or another, after a rebalance or restart.
type GroupReader struct {
	s         *Store
	coord     *group.Coordinator
	cfg       GroupReaderConfig
	assignors map[string]group.Assignor
	eager     bool

	mu         sync.Mutex
	memberID   string
	generation int32
	protocol   string
	// assigned is the member's assignment as the background goroutine knows it: what it owns
	// in the group, the partitions Next reads converge to it.
	assigned map[TopicPartition]struct{}
	// readers reads the partitions Next reads, one anonymous Reader per topic.
	readers map[string]*Reader
	topics  []string // the reading order of readers
	cursor  int
	events  []groupEvent
	wake    chan struct{} // closed and replaced when an event arrives
	inNext  bool
	// lastPoll is when Next last returned or was called; pollExpired says the member left for
	// MaxPollInterval, and resumed is closed by the next Next.
	lastPoll    time.Time
	pollExpired bool
	resumed     chan struct{}
	lastCommit  time.Time
	// subscribed is the subscription the member last joined with, metadata the partition counts
	// the leader last assigned from (nil for a follower).
	subscribed []string
	metadata   map[string]int32
	err        error // a failure that ends the member: Next returns it
	closed     bool
	stopped    bool          // Close has dropped the readers: commits return ErrClosed
	done       chan struct{} // closed by Close
	nudge      chan struct{} // asks the background goroutine to heartbeat now
	// rejoin asks the background goroutine to join again at its next heartbeat: a topic the
	// member read was deleted (and may be created again with the same partition count, which no
	// metadata check tells apart).
	rejoin bool
	cancel context.CancelFunc
	bgDone chan struct{}
}

type groupEventKind int8

const (
	eventAssigned groupEventKind = iota
	eventRevoked
	eventLost
)

// groupEvent is a change of the partitions the member reads, made by Next: the listener runs in
// Next's goroutine. ack, for a revocation, is closed once Next has stopped reading them.
type groupEvent struct {
	kind  groupEventKind
	parts []TopicPartition
	ack   chan struct{}
}

// NewGroupReader joins the group cfg names as a new member and returns it; the join runs in the
// background, and Next waits for the member's first partitions. Returns ErrInvalidGroupID,
// ErrInvalidConfig for a config without topics, with both Topics and TopicPattern, with an
// assignor name twice, a Start other than Latest or Earliest, or timeouts out of order
// (HeartbeatInterval must be below SessionTimeout); ErrClosed after Close. Errors of the join
// itself (ErrInvalidSessionTimeout, ErrInconsistentGroupProtocol, ErrGroupMaxSizeReached) come
// from Next.
func (s *Store) NewGroupReader(cfg GroupReaderConfig) (*GroupReader, error) {
	if err := s.groups.CheckGroupID(cfg.Group); err != nil {
		return nil, err
	}
	if (len(cfg.Topics) == 0) == (cfg.TopicPattern == nil) {
		return nil, fmt.Errorf("%w: GroupReaderConfig needs Topics or TopicPattern, one of them", ErrInvalidConfig)
	}
	if cfg.Start != Latest && cfg.Start != Earliest {
		return nil, fmt.Errorf("%w: GroupReaderConfig.Start = %d (Latest or Earliest)", ErrInvalidConfig, cfg.Start)
	}
	if cfg.Reset < ResetNone || cfg.Reset > ResetLatest {
		return nil, fmt.Errorf("%w: GroupReaderConfig.Reset = %d", ErrInvalidConfig, cfg.Reset)
	}
	if cfg.Isolation != ReadUncommitted && cfg.Isolation != ReadCommitted {
		return nil, fmt.Errorf("%w: GroupReaderConfig.Isolation = %d", ErrInvalidConfig, cfg.Isolation)
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "commitlog"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultGroupSessionTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = min(DefaultGroupHeartbeatInterval, cfg.SessionTimeout/3)
	}
	if cfg.MaxPollInterval <= 0 {
		cfg.MaxPollInterval = DefaultGroupMaxPollInterval
	}
	if cfg.HeartbeatInterval >= cfg.SessionTimeout {
		return nil, fmt.Errorf("%w: HeartbeatInterval %v must be below SessionTimeout %v", ErrInvalidConfig, cfg.HeartbeatInterval, cfg.SessionTimeout)
	}
	if cfg.Assignors == nil {
		cfg.Assignors = []group.Assignor{group.RangeAssignor(), group.CooperativeStickyAssignor()}
	}
	if len(cfg.Assignors) == 0 {
		return nil, fmt.Errorf("%w: no assignor", ErrInvalidConfig)
	}
	gr := &GroupReader{s: s, cfg: cfg, assignors: map[string]group.Assignor{}, generation: -1,
		assigned: map[TopicPartition]struct{}{}, readers: map[string]*Reader{}, wake: make(chan struct{}),
		done: make(chan struct{}), nudge: make(chan struct{}, 1), bgDone: make(chan struct{})}
	for _, a := range cfg.Assignors {
		if _, dup := gr.assignors[a.Name()]; dup {
			return nil, fmt.Errorf("%w: assignor %q listed twice", ErrInvalidConfig, a.Name())
		}
		gr.assignors[a.Name()] = a
		if a.Protocol() != group.Cooperative {
			// Kafka's ConsumerCoordinator follows the protocol every assignor supports.
			gr.eager = true
		}
	}
	coord, err := s.GroupCoordinator()
	if err != nil {
		return nil, err
	}
	gr.coord = coord
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.members[gr] = struct{}{}
	s.mu.Unlock()
	now := time.Now()
	gr.lastPoll, gr.lastCommit = now, now
	ctx, cancel := context.WithCancel(context.Background())
	gr.cancel = cancel
	go gr.run(ctx)
	return gr, nil
}

// Next returns the next record of the member's partitions, blocking until one is appended, the
// member is given partitions, ctx is done (ctx's error) or the member or its store is closed
// (ErrClosed). Before it looks for records it runs the rebalance listener for what changed
// since the last call, and, with AutoCommitInterval, commits when due. Returns the error that
// ended the member (ErrFencedInstanceID, ErrInvalidSessionTimeout, ErrInconsistentGroupProtocol,
// ErrGroupMaxSizeReached, ...), and the read errors of Reader.Next.
func (gr *GroupReader) Next(ctx context.Context) (*Record, error) {
	gr.mu.Lock()
	// lastPoll is not read while inNext is set: it is stamped on the way out only.
	gr.inNext = true
	if gr.pollExpired {
		gr.pollExpired = false
		close(gr.resumed)
	}
	gr.mu.Unlock()
	defer func() {
		gr.mu.Lock()
		gr.inNext, gr.lastPoll = false, time.Now()
		gr.mu.Unlock()
	}()
	for {
		if err := gr.handleEvents(ctx); err != nil {
			return nil, err
		}
		if err := gr.maybeAutoCommit(ctx); err != nil {
			gr.s.o.logger.Warn("group auto commit failed", "group", gr.cfg.Group, "err", err)
		}
		rec, waits, err := gr.poll()
		if rec != nil || err != nil {
			return rec, err
		}
		if waits == nil {
			continue // events to handle
		}
		cases := make([]reflect.SelectCase, 0, len(waits)+3)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(gr.done)})
		for _, w := range waits {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
		}
		switch i, _, _ := reflect.Select(cases); i {
		case 0:
			return nil, ctx.Err()
		case 1:
			return nil, ErrClosed
		}
	}
}

// Records returns an iterator over the records Next returns: it yields each record with a nil
// error, and stops after yielding the first error (ctx's when it ends).
func (gr *GroupReader) Records(ctx context.Context) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for {
			rec, err := gr.Next(ctx)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// poll returns a record of the partitions read, taking each topic in turn; or, when none has
// one, the channels that signal a change: appends to the topics read, a seek, an event. nil
// channels and no record mean that events are waiting (Next runs the listener and looks again).
func (gr *GroupReader) poll() (*Record, []<-chan struct{}, error) {
	rec, again, err := gr.pollOnce(nil)
	if rec != nil || err != nil || again {
		return rec, nil, err
	}
	// Nothing: take the wake-up channels, then look again, so that an append between the
	// look and the wait is never missed.
	var waits []<-chan struct{}
	rec, again, err = gr.pollOnce(&waits)
	if rec != nil || err != nil || again {
		return rec, nil, err
	}
	return nil, waits, nil
}

// pollOnce looks for a record in each topic read, in turn from the cursor; with waits, it
// appends the event channel and each topic's append and seek channels, taken before looking.
// again says that Next must handle events and look anew: events are queued, or a reader was
// dropped (its topic deleted, or the member lost its partitions) while it fetched.
//
// The readers fetch and decode without mu, so that the background goroutine, which needs mu to
// heartbeat, is never held up by a fetch. Only Next's goroutine changes the readers, but for a
// loss or Close, which drop them all: a record fetched from a reader dropped meanwhile is
// discarded, never returned.
func (gr *GroupReader) pollOnce(waits *[]<-chan struct{}) (rec *Record, again bool, err error) {
	gr.mu.Lock()
	if gr.closed {
		gr.mu.Unlock()
		return nil, false, ErrClosed
	}
	if len(gr.events) > 0 {
		gr.mu.Unlock()
		return nil, true, nil
	}
	if gr.err != nil {
		err := gr.err
		gr.mu.Unlock()
		return nil, false, err
	}
	if waits != nil {
		*waits = append(*waits, gr.wake)
	}
	var tbuf [4]string
	var rbuf [4]*Reader
	topics, readers, cursor := append(tbuf[:0], gr.topics...), rbuf[:0], gr.cursor
	for _, t := range topics {
		readers = append(readers, gr.readers[t])
	}
	gr.mu.Unlock()
	n := len(topics)
	for i := range n {
		idx := (cursor + i) % n
		t, r := topics[idx], readers[idx]
		if waits != nil {
			*waits = append(*waits, r.topic.appendedChan())
		}
		rec, moved, err := r.poll()
		gr.mu.Lock()
		if gr.readers[t] != r {
			// Dropped while it fetched: the loss queued its event.
			gr.mu.Unlock()
			return nil, true, nil
		}
		if errors.Is(err, ErrClosed) && !r.closed {
			// The topic was deleted (or the store is closing): its partitions are lost (their
			// positions went with it) and the member joins again, so that a topic created
			// again under the name is assigned anew.
			gr.dropTopicLocked(t)
			gr.dropDeletedTopicLocked(t)
			gr.mu.Unlock()
			return nil, true, nil
		}
		if err != nil {
			gr.mu.Unlock()
			return nil, false, err
		}
		if waits != nil {
			*waits = append(*waits, moved)
		}
		if rec != nil {
			gr.cursor = (idx + 1) % n
			gr.mu.Unlock()
			return rec, false, nil
		}
		gr.mu.Unlock()
	}
	return nil, false, nil
}

// dropTopicLocked stops reading topic t. Callers hold mu.
func (gr *GroupReader) dropTopicLocked(t string) {
	if r := gr.readers[t]; r != nil {
		r.Close()
		delete(gr.readers, t)
		gr.topics = slices.DeleteFunc(gr.topics, func(s string) bool { return s == t })
		gr.cursor = 0
	}
}

// dropDeletedTopicLocked takes the partitions of deleted topic t out of the member's
// assignment, runs OnLost with them, and asks for a rejoin. Callers hold mu.
func (gr *GroupReader) dropDeletedTopicLocked(t string) {
	var lost []TopicPartition
	for tp := range gr.assigned {
		if tp.Topic == t {
			lost = append(lost, tp)
			delete(gr.assigned, tp)
		}
	}
	if len(lost) > 0 {
		slices.SortFunc(lost, compareTP)
		gr.postLocked(groupEvent{kind: eventLost, parts: lost})
	}
	gr.rejoin = true
	gr.nudgeLocked()
}

func (gr *GroupReader) nudgeLocked() {
	select {
	case gr.nudge <- struct{}{}:
	default:
	}
}

// handleEvents applies the changes of the member's partitions in order, running the listener.
func (gr *GroupReader) handleEvents(ctx context.Context) error {
	for {
		gr.mu.Lock()
		if len(gr.events) == 0 || gr.closed {
			gr.mu.Unlock()
			return nil
		}
		ev := gr.events[0]
		gr.events = gr.events[1:]
		gr.mu.Unlock()
		switch ev.kind {
		case eventRevoked:
			if gr.cfg.AutoCommitInterval > 0 {
				if err := gr.commitPartitions(ctx, ev.parts); err != nil {
					gr.s.o.logger.Warn("group commit before revocation failed", "group", gr.cfg.Group, "err", err)
				}
			}
			if gr.cfg.OnRevoked != nil {
				gr.cfg.OnRevoked(ctx, ev.parts)
			}
			gr.mu.Lock()
			gr.removePartitionsLocked(ev.parts)
			gr.mu.Unlock()
			close(ev.ack)
		case eventAssigned:
			if err := gr.addPartitions(ev.parts); err != nil {
				return err
			}
			if gr.cfg.OnAssigned != nil {
				gr.cfg.OnAssigned(ctx, ev.parts)
			}
		case eventLost:
			if gr.cfg.OnLost != nil {
				gr.cfg.OnLost(ctx, ev.parts)
			}
		}
	}
}

// removePartitionsLocked stops reading parts. Callers hold mu.
func (gr *GroupReader) removePartitionsLocked(parts []TopicPartition) {
	for _, tp := range parts {
		r := gr.readers[tp.Topic]
		if r == nil {
			continue
		}
		r.removePartition(tp.Partition)
		if r.partitionCount() == 0 {
			gr.dropTopicLocked(tp.Topic)
		}
	}
}

// addPartitions starts reading parts from the group's committed positions. A partition of a
// topic the store no longer holds is skipped (the next rebalance takes it out).
func (gr *GroupReader) addPartitions(parts []TopicPartition) error {
	committed, err := gr.coord.FetchOffsets(gr.cfg.Group, parts)
	if err != nil {
		return err
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	for _, tp := range parts {
		if _, ok := gr.assigned[tp]; !ok {
			continue // lost or revoked again since
		}
		r := gr.readers[tp.Topic]
		if r == nil {
			t, err := gr.s.Topic(tp.Topic)
			if err != nil {
				if errors.Is(err, ErrClosed) {
					return err
				}
				continue
			}
			r, err = t.NewReader(ReaderConfig{Partitions: []int32{}, Start: gr.cfg.Start, Reset: gr.cfg.Reset,
				MaxBytes: gr.cfg.MaxBytes, Isolation: gr.cfg.Isolation})
			if err != nil {
				return err
			}
			gr.readers[tp.Topic] = r
			gr.topics = append(gr.topics, tp.Topic)
		}
		p, err := r.topic.Partition(tp.Partition)
		if err != nil {
			continue
		}
		var c *committedPosition
		if o, ok := committed[tp]; ok {
			c = &committedPosition{offset: o.Offset, leaderEpoch: o.LeaderEpoch}
		}
		if err := r.addPartition(p, c); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits the member's position in every partition it reads: the offset after the last
// record Next returned of it, with that record's leader epoch (Kafka's commitSync). Returns
// ErrIllegalGeneration or ErrUnknownMemberID when the member is no longer in the group's
// generation (its partitions may have moved; nothing is committed; the member rejoins),
// ErrRebalanceInProgress while the group waits for its assignment (try again after the next
// Next), ErrClosed after Close.
func (gr *GroupReader) Commit(ctx context.Context) error {
	return gr.commitPartitions(ctx, nil)
}

// commitPartitions commits the positions of parts, or of every partition read when parts is nil.
func (gr *GroupReader) commitPartitions(ctx context.Context, parts []TopicPartition) error {
	gr.mu.Lock()
	if gr.stopped {
		gr.mu.Unlock()
		return ErrClosed
	}
	offsets := map[TopicPartition]group.OffsetAndMetadata{}
	for tp, c := range gr.positionsLocked() {
		if parts == nil || slices.Contains(parts, tp) {
			offsets[tp] = group.OffsetAndMetadata{Offset: c.offset, LeaderEpoch: c.leaderEpoch}
		}
	}
	req := group.CommitRequest{Group: gr.cfg.Group, MemberID: gr.memberID, InstanceID: gr.cfg.InstanceID,
		Generation: gr.generation, Offsets: offsets}
	gr.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	err := gr.coord.CommitOffsets(ctx, req)
	if errors.Is(err, ErrIllegalGeneration) || errors.Is(err, ErrUnknownMemberID) {
		gr.mu.Lock()
		gr.nudgeLocked()
		gr.mu.Unlock()
	}
	if errors.Is(err, group.ErrCoordinatorNotAvailable) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// maybeAutoCommit commits when AutoCommitInterval has passed since the last commit.
func (gr *GroupReader) maybeAutoCommit(ctx context.Context) error {
	if gr.cfg.AutoCommitInterval <= 0 {
		return nil
	}
	gr.mu.Lock()
	due := time.Since(gr.lastCommit) >= gr.cfg.AutoCommitInterval
	if due {
		gr.lastCommit = time.Now()
	}
	gr.mu.Unlock()
	if !due {
		return nil
	}
	return gr.Commit(ctx)
}

// Assignment returns the partitions the member reads now, ordered by topic, then partition.
func (gr *GroupReader) Assignment() []TopicPartition {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return slices.SortedFunc(maps.Keys(gr.positionsLocked()), compareTP)
}

// Positions returns the member's position in each partition it reads: the offset of the next
// record Next returns of it.
func (gr *GroupReader) Positions() map[TopicPartition]int64 {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	out := map[TopicPartition]int64{}
	for tp, c := range gr.positionsLocked() {
		out[tp] = c.offset
	}
	return out
}

// positionsLocked returns the position, with its leader epoch, of every partition the member
// reads. Callers hold mu.
func (gr *GroupReader) positionsLocked() map[TopicPartition]committedPosition {
	out := map[TopicPartition]committedPosition{}
	for t, r := range gr.readers {
		for id, c := range r.committable() {
			out[TopicPartition{Topic: t, Partition: id}] = c
		}
	}
	return out
}

// Lag returns, per partition read, how many offsets are left to read, from the member's
// position (or the log start offset, when retention deleted the records at the position) to the
// high watermark (under ReadCommitted, the last stable offset); see Reader.Lag.
func (gr *GroupReader) Lag() map[TopicPartition]int64 {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	out := map[TopicPartition]int64{}
	for t, r := range gr.readers {
		for id, lag := range r.Lag() {
			out[TopicPartition{Topic: t, Partition: id}] = lag
		}
	}
	return out
}

// Generation returns the group generation the member is in and its member id; -1 and "" before
// it first joined.
func (gr *GroupReader) Generation() (generation int32, memberID string) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return gr.generation, gr.memberID
}

// Close stops the member: a blocked Next returns ErrClosed. With AutoCommitInterval it commits
// its positions first. A dynamic member then leaves the group at once (Kafka's LeaveGroup), so
// that its partitions are reassigned without waiting for its session timeout; a static member
// (InstanceID) stays until its session times out, so that a restart gets its partitions back.
// Close does not run OnRevoked: commit from the goroutine that calls Next before closing.
// Store.Close closes the store's members. Later calls return nil.
func (gr *GroupReader) Close() error {
	if !gr.halt() {
		return nil
	}
	var err error
	if gr.cfg.AutoCommitInterval > 0 {
		if err = gr.commitPartitions(context.Background(), nil); errors.Is(err, ErrClosed) {
			err = nil
		}
	}
	id := gr.dropReaders()
	if id != "" && gr.cfg.InstanceID == "" {
		if _, lerr := gr.coord.Leave(gr.cfg.Group, []group.LeavingMember{{MemberID: id, Reason: "the member closed"}}); lerr != nil &&
			!errors.Is(lerr, ErrUnknownMemberID) && !errors.Is(lerr, group.ErrCoordinatorNotAvailable) {
			err = errors.Join(err, lerr)
		}
	}
	return err
}

// halt marks the member closed (Next returns ErrClosed), stops its background goroutine and
// takes it off the store's list; false when it was closed already.
func (gr *GroupReader) halt() bool {
	gr.mu.Lock()
	if gr.closed {
		gr.mu.Unlock()
		return false
	}
	gr.closed = true
	close(gr.done)
	gr.mu.Unlock()
	gr.cancel()
	<-gr.bgDone
	gr.s.mu.Lock()
	delete(gr.s.members, gr)
	gr.s.mu.Unlock()
	return true
}

// dropReaders closes the member's readers once Close has committed, after which commits return
// ErrClosed, and returns the member id.
func (gr *GroupReader) dropReaders() (memberID string) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	for t := range gr.readers {
		gr.dropTopicLocked(t)
	}
	gr.stopped = true
	return gr.memberID
}

// post queues ev for Next and wakes it. Callers hold mu.
func (gr *GroupReader) postLocked(ev groupEvent) {
	gr.events = append(gr.events, ev)
	close(gr.wake)
	gr.wake = make(chan struct{})
}

// loseLocked takes every partition from the member at once (it is no longer in the group's
// generation): Next stops returning their records now, and runs OnLost with them. Queued
// revocations are superseded. Callers hold mu.
func (gr *GroupReader) loseLocked(reason string) {
	lost := map[TopicPartition]struct{}{}
	maps.Copy(lost, gr.assigned)
	for tp := range gr.positionsLocked() {
		lost[tp] = struct{}{}
	}
	for t := range gr.readers {
		gr.dropTopicLocked(t)
	}
	for _, ev := range gr.events {
		if ev.ack != nil {
			close(ev.ack)
		}
	}
	gr.events = nil
	clear(gr.assigned)
	gr.generation = -1
	if len(lost) > 0 {
		parts := slices.SortedFunc(maps.Keys(lost), compareTP)
		gr.s.o.logger.Info("group member lost its partitions", "group", gr.cfg.Group, "member", gr.memberID, "partitions", len(parts), "reason", reason)
		gr.postLocked(groupEvent{kind: eventLost, parts: parts})
	}
}
