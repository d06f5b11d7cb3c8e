package group

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	orders0 = TopicPartition{"orders", 0}
	orders1 = TopicPartition{"orders", 1}
	audit0  = TopicPartition{"audit", 0}
	audit1  = TopicPartition{"audit", 1}
)

func (h *harness) commit(groupID, memberID string, gen int32, offsets map[TopicPartition]OffsetAndMetadata) error {
	return h.c.CommitOffsets(context.Background(), CommitRequest{Group: groupID, MemberID: memberID, Generation: gen, Offsets: offsets})
}

func off(offset int64) OffsetAndMetadata { return OffsetAndMetadata{Offset: offset, LeaderEpoch: -1} }

func TestCommitFencesOlderGeneration(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	a, b := g1.ids["a"], g1.ids["b"]
	require.NoError(t, h.commit("g", b, 1, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 10, LeaderEpoch: 3, Metadata: "b@1"}}))

	// Generation 2; b's commit of generation 1 is a zombie's and is refused.
	g2 := h.completeJoins(h.join(g1.request["a"]), h.join(g1.request["b"]))
	h.syncAll("g", &g2)
	require.Equal(t, int32(2), h.generation("g"))
	err := h.commit("g", b, 1, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 99, LeaderEpoch: 4}})
	require.ErrorIs(t, err, ErrIllegalGeneration)
	got, err := h.c.FetchOffsets("g", []TopicPartition{orders0, orders1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(10), got[orders0].Offset)
	require.Equal(t, int32(3), got[orders0].LeaderEpoch)
	require.Equal(t, "b@1", got[orders0].Metadata)

	// A commit of a later generation is refused as well; the current one is taken.
	require.ErrorIs(t, h.commit("g", a, 3, map[TopicPartition]OffsetAndMetadata{orders0: off(98)}), ErrIllegalGeneration)
	require.NoError(t, h.commit("g", a, 2, map[TopicPartition]OffsetAndMetadata{orders0: off(20)}))
	got, err = h.c.FetchOffsets("g", []TopicPartition{orders0})
	require.NoError(t, err)
	require.Equal(t, int64(20), got[orders0].Offset)
	require.Equal(t, int32(-1), got[orders0].LeaderEpoch)
	require.Equal(t, h.clock.Now(), got[orders0].CommitTime)

	// A member that is not (or no longer) a member.
	require.ErrorIs(t, h.commit("g", "x", 2, map[TopicPartition]OffsetAndMetadata{orders0: off(97)}), ErrUnknownMemberID)
	require.ErrorIs(t, h.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", MemberID: a, InstanceID: "i", Generation: 2,
		Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(97)}}), ErrUnknownMemberID)
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, int64(20), got[orders0].Offset)
}

func TestCommitDuringCompletingRebalance(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.joinAll(joinReq("g", "a"), joinReq("g", "b"))
	require.Equal(t, CompletingRebalance, h.state("g"))
	err := h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders0: off(5)})
	require.ErrorIs(t, err, ErrRebalanceInProgress)
	got, err := h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestCommitDuringPreparingRebalanceCurrentGeneration(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"), joinReq("g", "b"))
	h.join(g1.request["a"])
	require.Equal(t, PreparingRebalance, h.state("g"))
	// b finishes its partitions before it rejoins: its generation is still the group's.
	require.NoError(t, h.commit("g", g1.ids["b"], 1, map[TopicPartition]OffsetAndMetadata{orders0: off(7)}))
	require.ErrorIs(t, h.commit("g", g1.ids["b"], 0, map[TopicPartition]OffsetAndMetadata{orders0: off(8)}), ErrIllegalGeneration)
	got, err := h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, int64(7), got[orders0].Offset)
}

func TestCommitWithoutGeneration(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()

	// To a group that does not exist: accepted, creating an Empty group.
	require.NoError(t, h.c.CommitOffsets(ctx, CommitRequest{Group: "simple", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 1, LeaderEpoch: 2, Metadata: "m"}}}))
	d := h.describe("simple")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(0), d.Generation)
	require.Equal(t, []ListedGroup{{Group: "simple", State: Empty}}, h.c.ListGroups())
	// To an Empty group: accepted, with or without a member id.
	require.NoError(t, h.c.CommitOffsets(ctx, CommitRequest{Group: "simple", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{orders1: off(2)}}))
	require.NoError(t, h.c.CommitOffsets(ctx, CommitRequest{Group: "simple", MemberID: "admin", Generation: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(3)}}))
	got, err := h.c.FetchOffsets("simple", nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, int64(3), got[orders0].Offset)
	require.Equal(t, int64(2), got[orders1].Offset)

	// To a group with members: refused.
	g1 := h.form(joinReq("g", "a"))
	err = h.c.CommitOffsets(ctx, CommitRequest{Group: "g", Generation: -1, Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(4)}})
	require.ErrorIs(t, err, ErrUnknownMemberID)
	err = h.c.CommitOffsets(ctx, CommitRequest{Group: "g", MemberID: g1.ids["a"], Generation: -1, Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(4)}})
	require.ErrorIs(t, err, ErrIllegalGeneration)
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestCommitToNonexistentGroupWithGeneration(t *testing.T) {
	h := newHarness(t, Config{})
	for _, g := range []int32{0, 1} {
		err := h.c.CommitOffsets(context.Background(), CommitRequest{Group: "nope", MemberID: "m", Generation: g,
			Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(1)}})
		require.ErrorIs(t, err, ErrIllegalGeneration)
	}
	_, err := h.c.DescribeGroup("nope")
	require.ErrorIs(t, err, ErrGroupIDNotFound)
	require.Empty(t, h.store.records())

	err = h.c.CommitOffsets(context.Background(), CommitRequest{Generation: -1, Offsets: map[TopicPartition]OffsetAndMetadata{orders0: off(1)}})
	require.ErrorIs(t, err, ErrInvalidGroupID)
}

func TestFetchOffsets(t *testing.T) {
	h := newHarness(t, Config{})
	got, err := h.c.FetchOffsets("nope", nil)
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]OffsetAndMetadata{}, got)
	got, err = h.c.FetchOffsets("nope", []TopicPartition{orders0})
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]OffsetAndMetadata{}, got)

	require.NoError(t, h.commit("g", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 5, LeaderEpoch: 1, Metadata: "x"}, audit0: off(6)}))
	now := h.clock.Now()
	got, err = h.c.FetchOffsets("g", []TopicPartition{orders0, orders1})
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 5, LeaderEpoch: 1, Metadata: "x", CommitTime: now}}, got)
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]OffsetAndMetadata{
		orders0: {Offset: 5, LeaderEpoch: 1, Metadata: "x", CommitTime: now},
		audit0:  {Offset: 6, LeaderEpoch: -1, CommitTime: now},
	}, got)
}

func TestDeleteOffsets(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	_, err := h.c.DeleteOffsets(ctx, "nope", []TopicPartition{orders0})
	require.ErrorIs(t, err, ErrGroupIDNotFound)

	// A consumer group subscribed to "orders" has offsets of orders and audit.
	g1 := h.form(joinReq("g", "a", "orders"))
	require.NoError(t, h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders0: off(1), audit0: off(2), audit1: off(3)}))
	before := len(h.store.records())

	errs, err := h.c.DeleteOffsets(ctx, "g", []TopicPartition{orders0, audit0, {"audit", 7}})
	require.NoError(t, err)
	require.Len(t, errs, 3)
	require.ErrorIs(t, errs[orders0], ErrGroupSubscribedToTopic)
	require.NoError(t, errs[audit0])
	require.NoError(t, errs[TopicPartition{"audit", 7}])
	got, err := h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, []TopicPartition{audit1, orders0}, sortedPartitions(got))
	// One tombstone: of the offset that existed.
	recs := h.store.records()
	require.Equal(t, []StorageRecord{{Key: offsetKey("g", audit0)}}, recs[before:])

	// Once the group is Empty nothing is subscribed.
	_, err = h.c.Leave("g", []LeavingMember{{MemberID: g1.ids["a"]}})
	require.NoError(t, err)
	require.Equal(t, Empty, h.state("g"))
	errs, err = h.c.DeleteOffsets(ctx, "g", []TopicPartition{orders0})
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]error{orders0: nil}, errs)
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, []TopicPartition{audit1}, sortedPartitions(got))

	// A storage failure deletes nothing.
	h.store.fail(errDiskFull)
	_, err = h.c.DeleteOffsets(ctx, "g", []TopicPartition{audit1})
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, []TopicPartition{audit1}, sortedPartitions(got))
}

func TestCommitStorageFailure(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(joinReq("g", "a"))
	require.NoError(t, h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 5, LeaderEpoch: 2, Metadata: "ok"}}))
	committed := h.clock.Now()
	h.clock.Advance(time.Second)
	before := len(h.store.records())

	h.store.fail(errDiskFull)
	err := h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders0: off(6), orders1: off(1)})
	require.ErrorIs(t, err, ErrCoordinatorNotAvailable)
	require.ErrorIs(t, err, errDiskFull)
	got, err := h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 5, LeaderEpoch: 2, Metadata: "ok", CommitTime: committed}}, got)
	require.Len(t, h.store.records(), before)

	h.store.fail(nil)
	require.NoError(t, h.commit("g", g1.ids["a"], 1, map[TopicPartition]OffsetAndMetadata{orders0: off(6)}))
	got, err = h.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, int64(6), got[orders0].Offset)
}
