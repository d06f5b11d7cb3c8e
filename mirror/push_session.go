package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/commitlog-go/commitlog"
)

// A session is one connection of a Pusher to the cluster: it fences older producers of the
// mirror's transactional.id, loads the positions committed on the cluster, and ships from them,
// one transaction at a time, until an error or the end of its context. Every failure ends the
// session; the next one starts again from what the cluster committed.
type pushSession struct {
	p      *Pusher
	cl     *kgo.Client
	adm    *kadm.Client
	txnID  string
	group  string
	topics []*pushTopic
	murmur commitlog.Partitioner

	lastTopicCheck time.Time
}

// pushTopic is a local topic being shipped.
type pushTopic struct {
	name, dest string
	local      *commitlog.Topic
	id         string // the local topic's ID, in the positions' metadata
	destCount  int32
	reader     *commitlog.Reader
	parts      []*pushPart
}

// pushPart is a local partition being shipped.
type pushPart struct {
	t    *pushTopic
	id   int32
	part *commitlog.Partition
	// group and key say where the partition's position is committed on the cluster (see
	// pushPositionKey).
	group string
	key   int32
	// committed is the position the cluster holds; dirty says it must be committed in the next
	// transaction even if unchanged (it is not yet where pushPositionKey puts it).
	committed int64
	dirty     bool
}

// pushChunk is how many records a batch takes from one topic before it looks at the next.
const pushChunk = 512

// pushIdleWait bounds a wait for local appends, so that new topics and partitions are seen.
const pushIdleWait = time.Second

// pushNowCtx is a context already done: Reader.Next with it returns a record it has, or
// context.Canceled at once when it has none.
var pushNowCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// pushMaxVersions caps the requests whose newer versions are KIP-890 part 2 (Produce 12,
// EndTxn 5, TxnOffsetCommit 5): the mirror commits its positions with its own AddOffsetsToTxn
// and TxnOffsetCommit, which must agree with the producer on the transaction protocol, and
// part 1 (transaction.version 1) is what every transactional Kafka since 0.11 speaks.
func pushMaxVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return v
}

// pushPositionKey returns where the position of local partition p, shipped to dest of destCount
// partitions, is committed: in the mirror's group base under (dest, p) when dest has a partition
// p (a group's offsets can only name partitions the cluster has), else in the group base.<p>
// under (dest, 0). Counts only grow, so a partition's key moves at most once, from base.<p> to
// base; loadPositions looks in both.
func pushPositionKey(base, dest string, destCount, p int32) (group string, key int32) {
	if p < destCount {
		return base, p
	}
	return pushOverflowGroup(base, p), 0
}

func pushOverflowGroup(base string, p int32) string { return base + "." + strconv.Itoa(int(p)) }

// pushPositionMetadata is the metadata committed with a position: the local topic's name and ID, so
// that a position of a topic deleted and created again under its name is not taken for the new
// topic's.
func pushPositionMetadata(t *pushTopic) string {
	return "commitlog-mirror-push topic=" + t.name + " topic-id=" + t.id
}

// pushMetadataTopicID returns the topic ID in a position's metadata, "" when it has none (a position
// set by another tool, such as kafka-consumer-groups --reset-offsets).
func pushMetadataTopicID(meta string) string {
	for f := range strings.FieldsSeq(meta) {
		if id, ok := strings.CutPrefix(f, "topic-id="); ok {
			return id
		}
	}
	return ""
}

func (p *Pusher) session(ctx context.Context) (progressed bool, err error) {
	names := p.cfg.Topics
	if len(names) == 0 {
		names = p.store.Topics()
	}
	s := &pushSession{p: p, txnID: PushIDPrefix + p.cfg.Name, group: PushIDPrefix + p.cfg.Name,
		murmur: commitlog.Murmur2Partitioner(), lastTopicCheck: time.Now()}
	opts := append(clientOpts(p.cluster, p.log),
		kgo.TransactionalID(s.txnID),
		kgo.TransactionTimeout(p.cfg.TransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxVersions(pushMaxVersions()),
	)
	opts = append(opts, p.cfg.ClientOptions...)
	s.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return false, pushLocal(fmt.Errorf("mirror: kgo client: %w", err))
	}
	defer s.cl.Close()
	s.adm = kadm.NewClient(s.cl)
	defer func() {
		for _, t := range s.topics {
			if t.reader != nil {
				t.reader.Close()
			}
		}
	}()

	// InitProducerId: fences every older producer of the transactional id (a process killed,
	// or a session abandoned) and aborts its open transaction, so the positions read next are
	// final.
	if _, _, err := s.cl.ProducerID(ctx); err != nil {
		return false, fmt.Errorf("mirror: InitProducerId for %s: %w", s.txnID, err)
	}
	if err := s.resolveTopics(ctx, names); err != nil {
		return false, err
	}
	if err := s.loadPositions(ctx); err != nil {
		return false, err
	}
	if err := s.openReaders(); err != nil {
		return false, err
	}
	s.publish()
	p.log.Info("mirror: push connected", "name", p.cfg.Name, "transactional_id", s.txnID, "topics", len(s.topics))

	for {
		if err := s.checkTopics(); err != nil {
			return progressed, err
		}
		wake := s.changed()
		b, err := s.fill()
		if err != nil {
			return progressed, err
		}
		if len(b.recs) == 0 && len(b.positions) == 0 {
			if !pushWaitAny(ctx, wake, pushIdleWait) {
				return progressed, ctx.Err()
			}
			continue
		}
		if err := s.ship(ctx, b); err != nil {
			return progressed, err
		}
		progressed = true
	}
}

// resolveTopics finds the local topics and their destinations, creating the destinations the
// cluster lacks with the local partition count and cleanup.policy.
func (s *pushSession) resolveTopics(ctx context.Context, names []string) error {
	var dests []string
	for _, name := range names {
		t, err := s.p.store.Topic(name)
		if errors.Is(err, commitlog.ErrUnknownTopic) && len(s.p.cfg.Topics) == 0 {
			continue // deleted since it was listed
		}
		if err != nil {
			return pushLocal(fmt.Errorf("mirror: local topic %q: %w", name, err))
		}
		dest := s.p.cfg.Rename.Apply(name)
		if err := commitlog.CheckTopicName(dest); err != nil {
			return pushLocal(fmt.Errorf("mirror: destination of %q: %w", name, err))
		}
		s.topics = append(s.topics, &pushTopic{name: name, dest: dest, local: t, id: t.ID().String()})
		dests = append(dests, dest)
	}
	if len(dests) == 0 {
		return nil
	}
	details, err := s.adm.ListTopics(ctx, dests...)
	if err != nil {
		return fmt.Errorf("mirror: metadata of %v: %w", dests, err)
	}
	for _, t := range s.topics {
		d, ok := details[t.dest]
		if ok && d.Err == nil && len(d.Partitions) > 0 {
			t.destCount = int32(len(d.Partitions))
			continue
		}
		if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("mirror: metadata of %s: %w", t.dest, d.Err)
		}
		if t.destCount, err = s.createTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// createTopic creates t's destination with t's partition count and cleanup.policy and the
// cluster's default replication factor, and returns its partition count.
func (s *pushSession) createTopic(ctx context.Context, t *pushTopic) (int32, error) {
	n := t.local.PartitionCount()
	policy := t.local.Config().KafkaConfigs()["cleanup.policy"]
	resp, err := s.adm.CreateTopic(ctx, n, -1, map[string]*string{"cleanup.policy": &policy}, t.dest)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		details, lerr := s.adm.ListTopics(ctx, t.dest)
		if lerr != nil {
			return 0, fmt.Errorf("mirror: metadata of %s: %w", t.dest, lerr)
		}
		d := details[t.dest]
		if d.Err != nil || len(d.Partitions) == 0 {
			return 0, fmt.Errorf("mirror: metadata of %s: %w (%d partitions)", t.dest, d.Err, len(d.Partitions))
		}
		return int32(len(d.Partitions)), nil
	}
	if err != nil {
		return 0, fmt.Errorf("mirror: creating %s: %w", t.dest, err)
	}
	s.p.log.Info("mirror: created the destination topic", "name", s.p.cfg.Name, "topic", t.dest,
		"partitions", n, "cleanup.policy", policy)
	return n, nil
}

// fetchStable returns the offsets committed in group, waiting while a transaction holding some
// of them is not yet complete (UNSTABLE_OFFSET_COMMIT, KIP-447).
func (s *pushSession) fetchStable(ctx context.Context, group string) (kadm.OffsetResponses, error) {
	wait := 10 * time.Millisecond
	for {
		offs, err := s.adm.FetchOffsets(kadm.RequireStable(ctx), group)
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if err == nil && o.Err != nil {
					err = o.Err
				}
			})
		}
		if err == nil {
			return offs, nil
		}
		if errors.Is(err, kerr.GroupIDNotFound) {
			// No group yet: nothing was committed (kfake and newer coordinators say so for a
			// group they do not hold, where others answer with no offsets).
			return kadm.OffsetResponses{}, nil
		}
		if !errors.Is(err, kerr.UnstableOffsetCommit) {
			return nil, fmt.Errorf("mirror: OffsetFetch of group %s: %w", group, err)
		}
		if !pushSleep(ctx, wait) {
			return nil, ctx.Err()
		}
		wait = min(2*wait, time.Second)
	}
}

// loadPositions sets every partition's position from the cluster's group offsets; a partition
// with none (nothing shipped yet) starts at its log start offset.
func (s *pushSession) loadPositions(ctx context.Context) error {
	base, err := s.fetchStable(ctx, s.group)
	if err != nil {
		return err
	}
	overflow := map[string]kadm.OffsetResponses{}
	for _, t := range s.topics {
		n := t.local.PartitionCount()
		// Partition 0's position is always in the base group, and the first transaction of a
		// topic commits every partition's: without it, nothing was shipped, and the overflow
		// groups need no look.
		_, shipped := base.Lookup(t.dest, 0)
		for id := range n {
			part, err := t.local.Partition(id)
			if err != nil {
				return pushLocal(err)
			}
			pp := &pushPart{t: t, id: id, part: part}
			pp.group, pp.key = pushPositionKey(s.group, t.dest, t.destCount, id)
			var found kadm.OffsetResponse
			var ok bool
			where := s.group
			if id < t.destCount {
				found, ok = base.Lookup(t.dest, id)
			}
			if !ok && shipped && id > 0 {
				g := pushOverflowGroup(s.group, id)
				offs, have := overflow[g]
				if !have {
					if offs, err = s.fetchStable(ctx, g); err != nil {
						return err
					}
					overflow[g] = offs
				}
				found, ok = offs.Lookup(t.dest, 0)
				where = g
			}
			if ok && found.At < 0 {
				ok = false
			}
			if ok {
				if id := pushMetadataTopicID(found.Metadata); id != "" && id != t.id {
					s.p.log.Warn("mirror: the position on the cluster is of another topic of that name (deleted and created again); shipping from the log start",
						"name", s.p.cfg.Name, "topic", t.name, "partition", pp.id, "position", found.At,
						"position_topic_id", id, "topic_id", t.id)
					ok = false
				}
			}
			if ok {
				pp.committed = found.At
				pp.dirty = where != pp.group
			} else {
				pp.committed = part.LogStartOffset()
				pp.dirty = true
			}
			t.parts = append(t.parts, pp)
		}
	}
	return nil
}

// openReaders opens a read_committed reader of each topic at the positions loaded.
func (s *pushSession) openReaders() error {
	for _, t := range s.topics {
		ids := make([]int32, len(t.parts))
		for i, pp := range t.parts {
			ids[i] = pp.id
		}
		r, err := t.local.NewReader(commitlog.ReaderConfig{Partitions: ids, Start: commitlog.Earliest,
			Reset: commitlog.ResetNone, Isolation: commitlog.ReadCommitted})
		if err != nil {
			return pushLocal(err)
		}
		t.reader = r
		for _, pp := range t.parts {
			if err := r.Seek(pp.id, pp.committed); err != nil {
				return pushLocal(err)
			}
		}
	}
	return nil
}

// publish makes the session's partitions the Pusher's state, keeping what it knew of losses.
func (s *pushSession) publish() {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := map[pushTP]*pushPartState{}
	for _, t := range s.topics {
		for _, pp := range t.parts {
			tp := pushTP{t.name, pp.id}
			ps := &pushPartState{part: pp.part, dest: t.dest, shipped: pp.committed}
			if old := p.parts[tp]; old != nil {
				ps.lossFrom, ps.lossTo = old.lossFrom, old.lossTo
			}
			parts[tp] = ps
		}
	}
	p.parts = parts
	p.connected = true
}

// checkTopics ends the session (errPushRestart) when the local topics changed: partitions
// added to a topic, or, shipping every topic, a topic created or deleted.
func (s *pushSession) checkTopics() error {
	for _, t := range s.topics {
		if t.local.PartitionCount() != int32(len(t.parts)) {
			return errPushRestart
		}
	}
	if len(s.p.cfg.Topics) > 0 || time.Since(s.lastTopicCheck) < pushIdleWait {
		return nil
	}
	s.lastTopicCheck = time.Now()
	names := s.p.store.Topics()
	if len(names) != len(s.topics) {
		return errPushRestart
	}
	for i, t := range s.topics {
		if names[i] != t.name {
			return errPushRestart
		}
	}
	return nil
}

// changed returns the channels closed at the next change of a partition read: taken before a
// fill, so that an append after it is not missed.
func (s *pushSession) changed() []<-chan struct{} {
	var chans []<-chan struct{}
	for _, t := range s.topics {
		for _, pp := range t.parts {
			chans = append(chans, pp.part.Changed())
		}
	}
	return chans
}

// pushWaitAny waits for one of chans to close, for d, or for ctx; false when ctx ended.
func pushWaitAny(ctx context.Context, chans []<-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen != 0
}

func pushSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// pushBatch is one transaction's content: the records, and the positions to commit with them.
type pushBatch struct {
	recs      []*kgo.Record
	bytes     int64
	read      []*pushPart // the partitions records were read from
	positions map[*pushPart]int64
}

// fill reads the next batch: the records the local topics have now, in turn, up to the
// transaction's bounds, and the readers' positions after them (every partition whose position
// moved, or must be committed anyway).
func (s *pushSession) fill() (*pushBatch, error) {
	cfg := &s.p.cfg
	b := &pushBatch{positions: map[*pushPart]int64{}}
	for _, t := range s.topics {
		if err := s.checkPositions(t); err != nil {
			return nil, err
		}
	}
	full := func() bool {
		return len(b.recs) >= cfg.MaxTransactionRecords || b.bytes >= int64(cfg.MaxTransactionBytes)
	}
	readFrom := map[*pushPart]bool{}
fill:
	for {
		got := false
		for _, t := range s.topics {
			outOfRange := 0
			for n := 0; n < pushChunk; n++ {
				if full() {
					break fill
				}
				rec, err := t.reader.Next(pushNowCtx)
				if err == context.Canceled {
					break // nothing more now
				}
				var trunc *commitlog.LogTruncatedError
				switch {
				case err == nil:
				case errors.Is(err, commitlog.ErrOffsetOutOfRange) && outOfRange < 3:
					outOfRange++
					if err := s.checkPositions(t); err != nil {
						return nil, err
					}
					continue
				case errors.As(err, &trunc):
					if err := s.truncated(t, trunc); err != nil {
						return nil, err
					}
					continue
				default:
					if _, terr := s.p.store.Topic(t.name); errors.Is(terr, commitlog.ErrUnknownTopic) && len(cfg.Topics) == 0 {
						return nil, errPushRestart // deleted, while shipping every topic
					}
					return nil, pushLocal(fmt.Errorf("mirror: reading %s: %w", t.name, err))
				}
				got = true
				kr, size := s.convert(t, rec)
				b.recs = append(b.recs, kr)
				b.bytes += int64(size)
				if rec.Partition < 0 || int(rec.Partition) >= len(t.parts) {
					return nil, pushLocal(fmt.Errorf("mirror: reading %s: a record of partition %d, not read", t.name, rec.Partition))
				}
				pp := t.parts[rec.Partition]
				if !readFrom[pp] {
					readFrom[pp] = true
					b.read = append(b.read, pp)
				}
			}
		}
		if !got {
			break
		}
	}
	for _, t := range s.topics {
		for _, pp := range t.parts {
			pos, err := t.reader.Position(pp.id)
			if err != nil {
				return nil, pushLocal(err)
			}
			if pos != pp.committed || pp.dirty {
				b.positions[pp] = pos
			}
		}
	}
	return b, nil
}

// checkPositions moves t's readers that fell out of the local log back into it: below the log
// start offset (retention deleted records not yet shipped: a PushLossEvent) to the log start,
// past the log end (the log lost records already shipped) to the log end.
func (s *pushSession) checkPositions(t *pushTopic) error {
	for _, pp := range t.parts {
		pos, err := t.reader.Position(pp.id)
		if err != nil {
			return pushLocal(err)
		}
		if start := pp.part.LogStartOffset(); pos < start {
			s.p.loss(pushTP{t.name, pp.id}, pos, start)
			if err := t.reader.Seek(pp.id, start); err != nil {
				return pushLocal(err)
			}
		} else if end := pp.part.LogEndOffset(); pos > end {
			s.p.log.Error("mirror: the position shipped is past the local log end; shipping from the log end",
				"name", s.p.cfg.Name, "topic", t.name, "partition", pp.id, "position", pos, "log_end", end)
			if err := t.reader.Seek(pp.id, end); err != nil {
				return pushLocal(err)
			}
		}
	}
	return nil
}

// truncated handles a local log truncated below the reader's position: the records from the
// divergence point on were replaced; ship the log's new history from there.
func (s *pushSession) truncated(t *pushTopic, e *commitlog.LogTruncatedError) error {
	s.p.log.Error("mirror: the local log was truncated below the position read; shipping its new history from the divergence point",
		"name", s.p.cfg.Name, "topic", t.name, "partition", e.Partition, "position", e.CommittedOffset,
		"divergence", e.TruncatedOffset)
	return pushLocal(t.reader.Seek(e.Partition, e.TruncatedOffset))
}

// convert returns rec as the record shipped, and its size (key, value and headers).
func (s *pushSession) convert(t *pushTopic, rec *commitlog.Record) (*kgo.Record, int) {
	kr := &kgo.Record{Topic: t.dest, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp}
	size := len(rec.Key) + len(rec.Value)
	if len(rec.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(rec.Headers))
		for i, h := range rec.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
			size += len(h.Key) + len(h.Value)
		}
	}
	if t.destCount == int32(len(t.parts)) {
		kr.Partition = rec.Partition
	} else {
		kr.Partition = s.murmur.Partition(rec, t.destCount)
	}
	return kr, size
}

// ship runs one transaction: the batch's records produced to the destinations, the local
// partitions read synced (so the cluster is never ahead of what the local log keeps), the
// positions after them committed into the mirror's group, and the transaction committed. Any
// failure aborts it (best effort: the next session's InitProducerId aborts it anyway) and ends
// the session.
func (s *pushSession) ship(ctx context.Context, b *pushBatch) (err error) {
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("mirror: BeginTransaction: %w", err)
	}
	offsetsOnly := len(b.recs) == 0
	defer func() {
		if err != nil {
			s.abort(offsetsOnly)
		}
	}()
	var (
		mu   sync.Mutex
		perr error
	)
	for _, r := range b.recs {
		s.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if perr == nil {
					perr = fmt.Errorf("mirror: producing to %s[%d]: %w", r.Topic, r.Partition, err)
				}
				mu.Unlock()
			}
		})
	}
	if err := s.cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	err = perr
	mu.Unlock()
	if err != nil {
		return err
	}
	for _, pp := range b.read {
		if err := pp.part.Sync(); err != nil {
			return pushLocal(fmt.Errorf("mirror: syncing %s[%d]: %w", pp.t.name, pp.id, err))
		}
	}
	if err := s.commitPositions(ctx, b.positions); err != nil {
		return err
	}
	// The commit is not cut short by ctx: a commit cancelled half-way leaves its outcome unknown
	// until the next session reads the positions.
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.cfg.TransactionTimeout)
	defer cancel()
	if offsetsOnly {
		// kgo ends no transaction it produced nothing in; the positions alone are committed
		// with an EndTxn of ours, and kgo's EndTransaction then only resets its state.
		if err := s.endTxn(endCtx, true); err != nil {
			return err
		}
	}
	if err := s.cl.EndTransaction(endCtx, kgo.TryCommit); err != nil {
		return fmt.Errorf("mirror: EndTxn (commit): %w", err)
	}
	s.committed(b)
	return nil
}

// abort ends the open transaction with an abort, best effort, within a few seconds.
func (s *pushSession) abort(offsetsOnly bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.cl.AbortBufferedRecords(ctx)
	if offsetsOnly {
		s.endTxn(ctx, false)
	}
	s.cl.EndTransaction(ctx, kgo.TryAbort)
}

// producerID returns the producer's id and epoch.
func (s *pushSession) producerID(ctx context.Context) (int64, int16, error) {
	id, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("mirror: producer id: %w", err)
	}
	return id, epoch, nil
}

// pushRetryConcurrent runs fn again while the coordinator answers CONCURRENT_TRANSACTIONS (the
// previous transaction's markers are still being written), as Kafka's producers do.
func pushRetryConcurrent(ctx context.Context, fn func() error) error {
	wait := 5 * time.Millisecond
	for {
		err := fn()
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
		if !pushSleep(ctx, wait) {
			return err
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// commitPositions commits the positions into the transaction: for each group they go to,
// AddOffsetsToTxn, then TxnOffsetCommit with generation -1 and no member (the positions are the
// mirror's own, not a group member's), which the cluster makes visible only if the
// transaction commits.
func (s *pushSession) commitPositions(ctx context.Context, positions map[*pushPart]int64) error {
	if len(positions) == 0 {
		return nil
	}
	id, epoch, err := s.producerID(ctx)
	if err != nil {
		return err
	}
	byGroup := map[string]map[string][]kmsg.TxnOffsetCommitRequestTopicPartition{}
	for pp, pos := range positions {
		topics := byGroup[pp.group]
		if topics == nil {
			topics = map[string][]kmsg.TxnOffsetCommitRequestTopicPartition{}
			byGroup[pp.group] = topics
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = pp.key, pos, -1
		meta := pushPositionMetadata(pp.t)
		rp.Metadata = &meta
		topics[pp.t.dest] = append(topics[pp.t.dest], rp)
	}
	for _, group := range slices.Sorted(maps.Keys(byGroup)) {
		err := pushRetryConcurrent(ctx, func() error {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = s.txnID, id, epoch, group
			resp, err := req.RequestWith(ctx, s.cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.ErrorCode)
		})
		if err != nil {
			return fmt.Errorf("mirror: AddOffsetsToTxn (group %s): %w", group, err)
		}
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = s.txnID, group, id, epoch
		req.Generation, req.MemberID = -1, ""
		for _, topic := range slices.Sorted(maps.Keys(byGroup[group])) {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.Partitions = topic, byGroup[group][topic]
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return fmt.Errorf("mirror: TxnOffsetCommit (group %s): %w", group, err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("mirror: TxnOffsetCommit (group %s, %s[%d]): %w", group, rt.Topic, rp.Partition, err)
				}
			}
		}
	}
	return nil
}

// endTxn sends EndTxn itself, for a transaction kgo did not produce in.
func (s *pushSession) endTxn(ctx context.Context, commit bool) error {
	id, epoch, err := s.producerID(ctx)
	if err != nil {
		return err
	}
	err = pushRetryConcurrent(ctx, func() error {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = s.txnID, id, epoch, commit
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err != nil {
		return fmt.Errorf("mirror: EndTxn (commit %v): %w", commit, err)
	}
	return nil
}

// committed records a committed transaction: its positions are the cluster's now.
func (s *pushSession) committed(b *pushBatch) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for pp, pos := range b.positions {
		pp.committed, pp.dirty = pos, false
		if ps := p.parts[pushTP{pp.t.name, pp.id}]; ps != nil {
			ps.shipped = pos
		}
	}
	p.state.Records += int64(len(b.recs))
	p.state.Bytes += b.bytes
	p.state.Transactions++
}
