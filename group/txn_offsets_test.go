package group

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// txnLog is a storage that keeps what __consumer_offsets-0 would hold, in order: the
// coordinator's own records (Append), the transactional offset commits CommitTxnOffsets hands
// its write (tagged with the producer), and the markers the test writes (mark).
type txnLog struct {
	mu      sync.Mutex
	entries []logEntry
	err     error // the next write fails with it
}

type logEntry struct {
	pid        int64 // -1 for the coordinator's own records
	marker     bool
	commit     bool
	key, value []byte
}

func (l *txnLog) Append(_ context.Context, recs []StorageRecord) error { return l.add(-1, recs) }

func (l *txnLog) add(pid int64, recs []StorageRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		err := l.err
		l.err = nil
		return err
	}
	for _, r := range recs {
		l.entries = append(l.entries, logEntry{pid: pid, key: slices.Clone(r.Key), value: cloneValue(r.Value)})
	}
	return nil
}

// write is the write of producer pid's transactional batch.
func (l *txnLog) write(pid int64) func(context.Context, []StorageRecord) error {
	return func(_ context.Context, recs []StorageRecord) error { return l.add(pid, recs) }
}

func (l *txnLog) mark(pid int64, commit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, logEntry{pid: pid, marker: true, commit: commit})
}

func (l *txnLog) snapshot() []logEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// replay loads entries into a new coordinator, as the store loads __consumer_offsets-0.
func replay(t *testing.T, entries []logEntry) *Coordinator {
	t.Helper()
	c := NewCoordinator(Config{Clock: newFakeClock(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(c.Close)
	for _, e := range entries {
		switch {
		case e.marker:
			c.ReplayTxnMarker(e.pid, e.commit)
		case e.pid >= 0:
			require.NoError(t, c.ReplayTxnOffset(e.pid, e.key, e.value))
		default:
			require.NoError(t, c.Replay(e.key, e.value))
		}
	}
	c.Start()
	return c
}

// compact is what the log cleaner leaves of entries with no transaction open: the records of
// aborted transactions go, then of each key only the last record stays (and no tombstone once
// dropTombstones, past the delete horizon); every marker stays.
func compact(entries []logEntry, dropTombstones bool) []logEntry {
	aborted := map[int]bool{}
	for i, e := range entries {
		if e.marker || e.pid < 0 {
			continue
		}
		for _, m := range entries[i+1:] {
			if m.marker && m.pid == e.pid {
				aborted[i] = !m.commit
				break
			}
		}
	}
	last := map[string]int{}
	for i, e := range entries {
		if !e.marker && !aborted[i] {
			last[string(e.key)] = i
		}
	}
	var out []logEntry
	for i, e := range entries {
		switch {
		case e.marker:
			out = append(out, e)
		case aborted[i] || last[string(e.key)] != i:
		case e.value == nil && dropTombstones:
		default:
			out = append(out, e)
		}
	}
	return out
}

// newTxnHarness is newHarness over a txnLog.
func newTxnHarness(t *testing.T) (*harness, *txnLog) {
	t.Helper()
	log := &txnLog{}
	h := &harness{t: t, clock: newFakeClock(), store: &memStorage{}}
	h.c = NewCoordinator(Config{Clock: h.clock, Storage: log, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(h.c.Close)
	return h, log
}

func (h *harness) txnCommit(log *txnLog, pid int64, groupID, memberID string, gen int32, offsets map[TopicPartition]OffsetAndMetadata) error {
	return h.c.CommitTxnOffsets(context.Background(), TxnCommitRequest{Group: groupID, MemberID: memberID, Generation: gen,
		ProducerID: pid, Offsets: offsets}, log.write(pid))
}

// end writes pid's marker and completes its offsets, as the transaction coordinator does.
func (h *harness) end(log *txnLog, pid int64, commit bool) {
	log.mark(pid, commit)
	h.c.CompleteTxnOffsets(pid, commit)
}

func (h *harness) fetch(c *Coordinator, groupID string) map[TopicPartition]OffsetAndMetadata {
	h.t.Helper()
	got, err := c.FetchOffsets(groupID, nil)
	require.NoError(h.t, err)
	return got
}

func offsetsOf(pairs ...any) map[TopicPartition]OffsetAndMetadata {
	out := map[TopicPartition]OffsetAndMetadata{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(TopicPartition)] = pairs[i+1].(OffsetAndMetadata)
	}
	return out
}

// TestTxnCommitValidation: a transactional commit is checked as Kafka's
// ClassicGroup.validateOffsetCommit checks one with isTransactional: the generation and member
// when given (KIP-447), but a commit without a member id is taken from a group with members, and
// one in CompletingRebalance is not refused, where CommitOffsets refuses both.
func TestTxnCommitValidation(t *testing.T) {
	h, log := newTxnHarness(t)
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	a := g1.ids["a"]
	o := map[TopicPartition]OffsetAndMetadata{orders0: off(1)}
	for _, tc := range []struct {
		name   string
		group  string
		member string
		gen    int32
		want   error
	}{
		{"no member id, group with members", "g", "", -1, nil},
		{"member of the generation", "g", a, 1, nil},
		{"older generation", "g", a, 0, ErrIllegalGeneration},
		{"later generation", "g", a, 2, ErrIllegalGeneration},
		{"unknown member", "g", "x", 1, ErrUnknownMemberID},
		{"member id with generation -1", "g", a, -1, ErrIllegalGeneration},
		{"new group, generation -1", "fresh", "", -1, nil},
		{"no group, generation 0", "none", "", 0, ErrIllegalGeneration},
		{"empty group id", "", "", -1, ErrInvalidGroupID},
	} {
		err := h.txnCommit(log, 7, tc.group, tc.member, tc.gen, o)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, tc.want, tc.name)
		}
	}
	require.ErrorIs(t, h.commit("g", "", -1, o), ErrUnknownMemberID, "CommitOffsets refuses what the transactional one takes")

	// CompletingRebalance: b rejoins with a, the join phase completes, nobody syncs.
	g2 := h.completeJoins(h.join(g1.request["a"]), h.join(g1.request["b"]))
	require.Equal(t, CompletingRebalance, h.state("g"))
	require.ErrorIs(t, h.commit("g", a, g2.id, o), ErrRebalanceInProgress)
	require.NoError(t, h.txnCommit(log, 7, "g", a, g2.id, o))

	// A write that fails leaves nothing pending.
	log.err = errors.New("disk gone")
	require.ErrorContains(t, h.txnCommit(log, 8, "g", a, g2.id, map[TopicPartition]OffsetAndMetadata{orders1: off(5)}), "disk gone")
	require.False(t, h.c.HasPendingTxnOffsets("g", orders1))
	h.end(log, 8, true)
	require.Empty(t, h.fetch(h.c, "g"))

	// What producer 7 wrote: one batch per accepted call, each the offset records of the group.
	var got []string
	for _, e := range log.snapshot() {
		if e.pid == 7 {
			id, tp, _, err := parseOffsetRecord(e.key, e.value)
			require.NoError(t, err)
			got = append(got, id+"/"+tp.Topic)
		}
	}
	require.Equal(t, []string{"g/orders", "g/orders", "fresh/orders", "g/orders"}, got)
}

// TestTxnOffsetsPendingUntilMarker: a transaction's offsets are not the group's until its
// COMMIT; an ABORT drops them, leaving what the group had.
func TestTxnOffsetsPendingUntilMarker(t *testing.T) {
	h, log := newTxnHarness(t)
	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders1: off(3)}))
	committedAt := h.clock.Now()
	h.clock.Advance(time.Second)
	require.NoError(t, h.txnCommit(log, 1, "g", "", -1, map[TopicPartition]OffsetAndMetadata{
		orders0: {Offset: 10, LeaderEpoch: 2, Metadata: "m"}, orders1: off(11)}))
	txnAt := h.clock.Now()
	require.NoError(t, h.txnCommit(log, 2, "g", "", -1, map[TopicPartition]OffsetAndMetadata{audit0: off(20)}))
	want := offsetsOf(orders1, OffsetAndMetadata{Offset: 3, LeaderEpoch: -1, CommitTime: committedAt})
	require.Equal(t, want, h.fetch(h.c, "g"))
	for _, tp := range []TopicPartition{orders0, orders1, audit0} {
		require.True(t, h.c.HasPendingTxnOffsets("g", tp), "%v", tp)
	}
	require.False(t, h.c.HasPendingTxnOffsets("g", audit1))
	require.False(t, h.c.HasPendingTxnOffsets("nope", orders0))

	h.end(log, 2, false)
	require.Equal(t, want, h.fetch(h.c, "g"))
	require.False(t, h.c.HasPendingTxnOffsets("g", audit0))
	h.end(log, 1, true)
	require.Equal(t, offsetsOf(
		orders0, OffsetAndMetadata{Offset: 10, LeaderEpoch: 2, Metadata: "m", CommitTime: txnAt},
		orders1, OffsetAndMetadata{Offset: 11, LeaderEpoch: -1, CommitTime: txnAt},
	), h.fetch(h.c, "g"))
	require.False(t, h.c.HasPendingTxnOffsets("g", orders0))
	// A marker with nothing pending changes nothing.
	h.end(log, 1, true)
	h.end(log, 3, false)
	require.Len(t, h.fetch(h.c, "g"), 2)
	require.Equal(t, h.fetch(h.c, "g"), h.fetch(replay(t, log.snapshot()), "g"))
}

// TestTxnOffsetLaterRecordWins: at the COMMIT, a transaction's offset replaces the group's only
// when its record is the later one (Kafka's OffsetMetadataManager keeps the most recent).
func TestTxnOffsetLaterRecordWins(t *testing.T) {
	h, log := newTxnHarness(t)
	// The transaction's record first, a plain commit after it: the plain one stays.
	require.NoError(t, h.txnCommit(log, 1, "g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(10)}))
	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(20)}))
	h.end(log, 1, true)
	require.Equal(t, int64(20), h.fetch(h.c, "g")[orders0].Offset)
	// A plain commit first, the transaction's after it: the transaction's wins.
	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders1: off(30)}))
	require.NoError(t, h.txnCommit(log, 2, "g", "", -1, map[TopicPartition]OffsetAndMetadata{orders1: off(5)}))
	h.end(log, 2, true)
	// Two transactions, the later record's committed first: it stays.
	require.NoError(t, h.txnCommit(log, 3, "g", "", -1, map[TopicPartition]OffsetAndMetadata{audit0: off(40)}))
	require.NoError(t, h.txnCommit(log, 4, "g", "", -1, map[TopicPartition]OffsetAndMetadata{audit0: off(50)}))
	h.end(log, 4, true)
	h.end(log, 3, true)
	got := h.fetch(h.c, "g")
	require.Equal(t, map[TopicPartition]int64{orders0: 20, orders1: 5, audit0: 50}, offsetValues(got))
	for _, entries := range [][]logEntry{log.snapshot(), compact(log.snapshot(), false), compact(log.snapshot(), true)} {
		require.Equal(t, got, h.fetch(replay(t, entries), "g"))
	}
}

func offsetValues(m map[TopicPartition]OffsetAndMetadata) map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for tp, o := range m {
		out[tp] = o.Offset
	}
	return out
}

// TestTombstonesDropTxnOffsets: DeleteOffsets, DeleteTopicOffsets and DeleteGroup write a
// tombstone for a partition only a transaction holds, and drop the transaction's offset, which
// its COMMIT then does not bring back (Kafka's OffsetMetadataManager); live, replayed, and
// replayed after compaction with or without the tombstones.
func TestTombstonesDropTxnOffsets(t *testing.T) {
	h, log := newTxnHarness(t)
	ctx := context.Background()
	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(1)}))
	require.NoError(t, h.txnCommit(log, 1, "g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(2), orders1: off(3), audit0: off(4), audit1: off(5)}))

	n := len(log.snapshot())
	errs, err := h.c.DeleteOffsets(ctx, "g", []TopicPartition{orders1})
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]error{orders1: nil}, errs)
	require.NoError(t, h.c.DeleteTopicOffsets(ctx, "audit"))
	require.Equal(t, []logEntry{{pid: -1, key: offsetKey("g", orders1)}, {pid: -1, key: offsetKey("g", audit0)}, {pid: -1, key: offsetKey("g", audit1)}},
		log.snapshot()[n:])
	require.True(t, h.c.HasPendingTxnOffsets("g", orders0))
	require.False(t, h.c.HasPendingTxnOffsets("g", orders1))
	h.end(log, 1, true)
	require.Equal(t, map[TopicPartition]int64{orders0: 2}, offsetValues(h.fetch(h.c, "g")))

	// DeleteGroup of an Empty group with a transaction's offset: tombstones for it too.
	require.NoError(t, h.txnCommit(log, 2, "d", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(7)}))
	require.NoError(t, h.commit("d", "", -1, map[TopicPartition]OffsetAndMetadata{orders1: off(8)}))
	n = len(log.snapshot())
	require.NoError(t, h.c.DeleteGroup(ctx, "d"))
	require.Equal(t, []logEntry{{pid: -1, key: offsetKey("d", orders0)}, {pid: -1, key: offsetKey("d", orders1)}, {pid: -1, key: groupKey("d")}},
		log.snapshot()[n:])
	h.end(log, 2, true)
	require.Empty(t, h.fetch(h.c, "d"))
	require.Equal(t, []string{"g"}, listedIDs(h.c))

	live := h.fetch(h.c, "g")
	for i, entries := range [][]logEntry{log.snapshot(), compact(log.snapshot(), false), compact(log.snapshot(), true)} {
		c := replay(t, entries)
		require.Equal(t, live, h.fetch(c, "g"), "variant %d", i)
		require.Empty(t, h.fetch(c, "d"), "variant %d", i)
		require.Equal(t, []string{"g"}, listedIDs(c), "variant %d", i)
	}
}

func listedIDs(c *Coordinator) []string {
	var ids []string
	for _, g := range c.ListGroups() {
		ids = append(ids, g.Group)
	}
	return ids
}

// TestExpiryKeepsTxnOffsets: an offset an open transaction also committed does not expire, nor
// does its group go, until the transaction ends.
func TestExpiryKeepsTxnOffsets(t *testing.T) {
	h, log := newTxnHarness(t)
	ctx := context.Background()
	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(1), orders1: off(2)}))
	require.NoError(t, h.txnCommit(log, 1, "g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(3)}))
	require.NoError(t, h.txnCommit(log, 2, "t", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(4)}))
	later := h.clock.Now().Add(2 * DefaultOffsetsRetention)
	n, err := h.c.ExpireOffsets(ctx, later, DefaultOffsetsRetention)
	require.NoError(t, err)
	require.Equal(t, 1, n, "orders1 only")
	require.Equal(t, map[TopicPartition]int64{orders0: 1}, offsetValues(h.fetch(h.c, "g")))
	require.Equal(t, []string{"g", "t"}, listedIDs(h.c), "t holds only a transaction's offset, and stays")

	h.end(log, 1, false)
	h.end(log, 2, false)
	n, err = h.c.ExpireOffsets(ctx, later, DefaultOffsetsRetention)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, listedIDs(h.c))
	require.Empty(t, listedIDs(replay(t, log.snapshot())))
}

// TestReplayTxnRecords: the replay of transactions: pending until the marker, a transactional
// tombstone drops the producer's offset, an open transaction stays pending, and a record that is
// no offset commit is ErrBadRecord.
func TestReplayTxnRecords(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	val := func(o int64) []byte {
		return offsetValue(OffsetAndMetadata{Offset: o, LeaderEpoch: 1, Metadata: "x", CommitTime: at})
	}
	c := replay(t, []logEntry{
		{pid: -1, key: offsetKey("g", orders0), value: val(1)},
		{pid: 5, key: offsetKey("g", orders0), value: val(2)},
		{pid: 5, key: offsetKey("g", orders1), value: val(3)},
		{pid: 5, key: offsetKey("g", orders1)},
		{pid: 6, key: offsetKey("g", audit0), value: val(4)},
		{pid: 7, key: offsetKey("h", audit0), value: val(9)},
		{pid: 5, marker: true, commit: true},
		{pid: 7, marker: true},
	})
	got, err := c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, offsetsOf(orders0, OffsetAndMetadata{Offset: 2, LeaderEpoch: 1, Metadata: "x", CommitTime: at}), got)
	require.True(t, c.HasPendingTxnOffsets("g", audit0), "producer 6's transaction is open")
	require.False(t, c.HasPendingTxnOffsets("h", audit0))
	require.Equal(t, []string{"g", "h"}, listedIDs(c), "an aborted transaction's group exists, as it did live")
	c.CompleteTxnOffsets(6, true)
	got, err = c.FetchOffsets("g", []TopicPartition{audit0})
	require.NoError(t, err)
	require.Equal(t, int64(4), got[audit0].Offset)

	for _, key := range [][]byte{nil, {0}, groupKey("g"), {0, 9, 0, 0}} {
		require.ErrorIs(t, c.ReplayTxnOffset(1, key, val(1)), ErrBadRecord, "%x", key)
	}
	require.ErrorIs(t, c.ReplayTxnOffset(1, offsetKey("g", orders0), []byte{0, 3}), ErrBadRecord)
}

// TestReplayMatchesLive: a mix of groups, transactions committed, aborted and open, plain
// commits and deletions: the coordinator replayed from its log has the live one's offsets and
// groups, and so has one replayed from the log compacted (aborted transactions gone, the last
// record of each key kept) once no transaction is open.
func TestReplayMatchesLive(t *testing.T) {
	h, log := newTxnHarness(t)
	ctx := context.Background()
	g1 := h.form(joinReq("members", "a"))
	a := g1.ids["a"]
	tx := func(pid int64, groupID, member string, gen int32, offsets map[TopicPartition]OffsetAndMetadata) {
		require.NoError(t, h.txnCommit(log, pid, groupID, member, gen, offsets))
		h.clock.Advance(time.Millisecond)
	}
	plain := func(groupID, member string, gen int32, offsets map[TopicPartition]OffsetAndMetadata) {
		require.NoError(t, h.commit(groupID, member, gen, offsets))
		h.clock.Advance(time.Millisecond)
	}
	tx(1, "members", a, 1, map[TopicPartition]OffsetAndMetadata{orders0: off(10)})
	plain("simple", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(1), orders1: off(1)})
	tx(2, "simple", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(2), orders1: off(2)})
	tx(3, "simple", "", -1, map[TopicPartition]OffsetAndMetadata{audit0: off(3)})
	plain("simple", "", -1, map[TopicPartition]OffsetAndMetadata{orders1: off(4)})
	h.end(log, 1, true)
	tx(4, "aborted", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(5)})
	h.end(log, 3, false)
	h.end(log, 2, true)
	h.end(log, 4, false)
	tx(5, "members", a, 1, map[TopicPartition]OffsetAndMetadata{orders1: off(6)})
	_, err := h.c.DeleteOffsets(ctx, "simple", []TopicPartition{orders0})
	require.NoError(t, err)
	tx(6, "simple", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(7)})
	h.end(log, 6, true)
	h.end(log, 5, true)
	tx(7, "open", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(8)})

	groups := []string{"aborted", "members", "open", "simple"}
	live := map[string]map[TopicPartition]OffsetAndMetadata{}
	for _, id := range groups {
		live[id] = h.fetch(h.c, id)
	}
	require.Equal(t, map[string]map[TopicPartition]int64{
		"aborted": {}, "members": {orders0: 10, orders1: 6}, "open": {}, "simple": {orders0: 7, orders1: 4},
	}, map[string]map[TopicPartition]int64{"aborted": offsetValues(live["aborted"]), "members": offsetValues(live["members"]),
		"open": offsetValues(live["open"]), "simple": offsetValues(live["simple"])})

	c := replay(t, log.snapshot())
	for _, id := range groups {
		require.Equal(t, live[id], h.fetch(c, id), id)
	}
	require.Equal(t, listedIDs(h.c), listedIDs(c))
	require.True(t, c.HasPendingTxnOffsets("open", orders0))

	// Compaction runs with no transaction open: producer 7's aborted first, as the store's
	// open aborts it.
	h.end(log, 7, false)
	live["open"] = h.fetch(h.c, "open")
	for _, drop := range []bool{false, true} {
		c := replay(t, compact(log.snapshot(), drop))
		for _, id := range groups {
			require.Equal(t, live[id], h.fetch(c, id), "%s, tombstones dropped %v", id, drop)
		}
	}
	require.Equal(t, []string{"aborted", "members", "open", "simple"}, slices.Sorted(maps.Keys(live)))
}
