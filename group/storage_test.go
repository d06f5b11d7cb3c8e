package group

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeGroupValue decodes a stored GroupMetadata value.
func decodeGroupValue(t *testing.T, b []byte) kmsg.GroupMetadataValue {
	t.Helper()
	var v kmsg.GroupMetadataValue
	require.NoError(t, v.ReadFrom(b))
	return v
}

// replayAll replays recs into a new harness's coordinator.
func replayAll(t *testing.T, recs []StorageRecord) *harness {
	t.Helper()
	h := newHarness(t, Config{})
	for _, r := range recs {
		require.NoError(t, h.c.Replay(r.Key, r.Value))
	}
	return h
}

func TestReplayRestoresState(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()

	// "simple": commits without a generation; one overwritten, one deleted.
	require.NoError(t, h.commit("simple", "", -1, map[TopicPartition]OffsetAndMetadata{
		orders0: {Offset: 5, LeaderEpoch: 3, Metadata: "first"}, orders1: {Offset: 6, LeaderEpoch: -1}, audit0: off(1)}))
	h.clock.Advance(1500 * time.Millisecond)
	require.NoError(t, h.commit("simple", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: {Offset: 7, LeaderEpoch: 4, Metadata: "second"}}))
	_, err := h.c.DeleteOffsets(ctx, "simple", []TopicPartition{audit0})
	require.NoError(t, err)

	// "g": a Stable group of a dynamic and a static member, with offsets.
	h.clock.Advance(time.Second)
	g1 := h.form(joinReq("g", "a", "orders", "audit"), staticReq("g", "s", "inst-s", "orders"))
	require.NoError(t, h.commit("g", g1.ids["s"], 1, map[TopicPartition]OffsetAndMetadata{audit1: {Offset: 11, LeaderEpoch: 1, Metadata: "s"}}))

	// "gone": committed, then deleted.
	require.NoError(t, h.commit("gone", "", -1, map[TopicPartition]OffsetAndMetadata{orders0: off(3)}))
	require.NoError(t, h.c.DeleteGroup(ctx, "gone"))

	wantOffsets := map[string]map[TopicPartition]OffsetAndMetadata{}
	for _, id := range []string{"simple", "g"} {
		o, err := h.c.FetchOffsets(id, nil)
		require.NoError(t, err)
		wantOffsets[id] = o
	}
	require.Equal(t, OffsetAndMetadata{Offset: 7, LeaderEpoch: 4, Metadata: "second", CommitTime: clockStart.Add(1500 * time.Millisecond)},
		wantOffsets["simple"][orders0])
	require.Len(t, wantOffsets["simple"], 2)
	wantDesc := h.describe("g")

	h2 := replayAll(t, h.store.records())
	for id, want := range wantOffsets {
		got, err := h2.c.FetchOffsets(id, nil)
		require.NoError(t, err)
		require.Equal(t, want, got, id)
	}
	require.Equal(t, wantDesc, h2.describe("g"))
	require.Equal(t, int32(1), wantDesc.Generation)
	require.Equal(t, g1.ids["a"], wantDesc.Leader)
	require.Equal(t, "range", wantDesc.Protocol)
	require.Len(t, wantDesc.Members, 2)
	for _, m := range wantDesc.Members {
		require.Equal(t, g1.assign[m.MemberID], m.Assignment)
	}
	_, err = h2.c.DescribeGroup("gone")
	require.ErrorIs(t, err, ErrGroupIDNotFound)
	got, err := h2.c.FetchOffsets("gone", nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, []ListedGroup{{Group: "g", ProtocolType: ConsumerProtocolType, State: Stable}, {Group: "simple", State: Empty}},
		h2.c.ListGroups())

	// Start: the loaded members' sessions run; silent, they expire, and the group is Empty at
	// generation 2.
	h2.c.Start()
	h2.clock.Advance(testSession - time.Millisecond)
	require.Equal(t, Stable, h2.state("g"))
	h2.clock.Advance(time.Millisecond)
	d := h2.describe("g")
	require.Equal(t, Empty, d.State)
	require.Equal(t, int32(2), d.Generation)
	require.Empty(t, d.Members)
	recs := h2.store.records()
	require.Len(t, recs, 1)
	v := decodeGroupValue(t, recs[0].Value)
	require.Equal(t, int32(2), v.Generation)
	require.Empty(t, v.Members)
	// The offsets stay.
	got, err = h2.c.FetchOffsets("g", nil)
	require.NoError(t, err)
	require.Equal(t, wantOffsets["g"], got)
}

// A static member that rejoins a loaded group before its session expires keeps its assignment.
func TestReplayedStaticMemberRejoins(t *testing.T) {
	h := newHarness(t, Config{})
	g1 := h.form(staticReq("g", "c1", "i1"), staticReq("g", "c2", "i2"))
	h2 := replayAll(t, h.store.records())
	h2.c.Start()
	h2.clock.Advance(testSession / 2)
	resp := h2.join(staticReq("g", "c2", "i2")).ok()
	require.Equal(t, int32(1), resp.Generation)
	require.Equal(t, g1.ids["c1"], resp.Leader)
	s, err := h2.sync(SyncRequest{Group: "g", MemberID: resp.MemberID, InstanceID: "i2", Generation: 1}).result()
	require.NoError(t, err)
	require.Equal(t, g1.assign[g1.ids["c2"]], s.Assignment)
	// i1 stays silent and expires; i2 heartbeats.
	h2.keepAlive("g", testSession/2, time.Second, resp.MemberID)
	h2.requireMembers("g", resp.MemberID)
	require.Equal(t, PreparingRebalance, h2.state("g"))
}

// A loaded group record whose leader is not one of its members (Kafka's leader field is
// nullable) still gets a leader: else no member would ever be told to assign.
func TestReplayGroupWithoutLeader(t *testing.T) {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, ConsumerProtocolType, 4
	p := "range"
	v.Protocol = &p
	for _, id := range []string{"m-b", "m-a"} {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.SessionTimeoutMillis, m.RebalanceTimeoutMillis = id, "c", 10000, 60000
		m.Subscription = subscription("orders")
		v.Members = append(v.Members, m)
	}
	h := newHarness(t, Config{})
	require.NoError(t, h.c.Replay(groupKey("g"), v.AppendTo(nil)))
	h.c.Start()
	require.Equal(t, "m-a", h.describe("g").Leader)

	// m-b's subscription changes: a rebalance; the leader assigns.
	jb := h.join(rejoin(joinReq("g", "cb", "orders", "audit"), "m-b"))
	require.Equal(t, PreparingRebalance, h.state("g"))
	ja := h.join(rejoin(joinReq("g", "ca"), "m-a"))
	g5 := h.completeJoins(ja, jb)
	require.Equal(t, int32(5), g5.id)
	require.Equal(t, "m-a", g5.leader)
	require.Len(t, g5.resps["ca"].Members, 2)
	require.Empty(t, g5.resps["cb"].Members)
	h.syncAll("g", &g5)
}

func TestReplayGarbage(t *testing.T) {
	okKey := offsetKey("g", orders0)
	okValue := offsetValue(OffsetAndMetadata{Offset: 1, LeaderEpoch: 2, Metadata: "m", CommitTime: clockStart})
	gKey := groupKey("g")
	gValue := kmsg.NewGroupMetadataValue()
	gValue.Version = 3
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID = "m"
	gValue.Members = append(gValue.Members, m)
	gv := gValue.AppendTo(nil)
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"nil key", nil, okValue},
		{"one-byte key", []byte{0}, okValue},
		{"key version 3", []byte{0, 3, 0, 1, 'g'}, okValue},
		{"key version -1", []byte{0xff, 0xff, 0, 1, 'g'}, okValue},
		{"truncated offset key", okKey[:len(okKey)-2], okValue},
		{"offset key of version 0 cut after the version", okKey[:2], okValue},
		{"truncated offset value", okKey, okValue[:len(okValue)-3]},
		{"empty offset value", okKey, []byte{}},
		{"truncated group key", gKey[:3], gv},
		{"truncated group value", gKey, gv[:len(gv)-2]},
		{"offset value for a group key", gKey, []byte{0, 3, 1}},
		{"garbage", []byte("not a key"), []byte("not a value")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			err := h.c.Replay(tc.key, tc.value)
			require.ErrorIs(t, err, ErrBadRecord)
			require.Empty(t, h.c.ListGroups())
		})
	}
}

// seedRecords are valid __consumer_offsets records of the package's encoders.
func seedRecords() []StorageRecord {
	var v = kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation, v.CurrentStateTimestamp = 3, ConsumerProtocolType, 7, clockStart.UnixMilli()
	p, l, inst := "range", "m-1", "inst-2"
	v.Protocol, v.Leader = &p, &l
	for i, id := range []string{"m-1", "m-2"} {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = id, "client", "/10.0.0.1"
		m.SessionTimeoutMillis, m.RebalanceTimeoutMillis = int32(10000*(i+1)), 60000
		m.Subscription, m.Assignment = subscription("orders"), assignmentFor(i)
		if i == 1 {
			m.InstanceID = &inst
		}
		v.Members = append(v.Members, m)
	}
	empty := kmsg.NewGroupMetadataValue()
	empty.Version, empty.ProtocolType, empty.Generation = 3, ConsumerProtocolType, 8
	// Version 0: no rebalance timeout, no state timestamp. And version 3 with the rebalance
	// timeout at its default, -1, for a static member too.
	v0 := v
	v0.Version = 0
	noRebalance := v
	noRebalance.Members = slices.Clone(v.Members)
	for i := range noRebalance.Members {
		noRebalance.Members[i].RebalanceTimeoutMillis = -1
	}
	return []StorageRecord{
		{Key: offsetKey("g", orders0), Value: offsetValue(OffsetAndMetadata{Offset: 42, LeaderEpoch: 3, Metadata: "meta", CommitTime: clockStart})},
		{Key: offsetKey("g", orders0)},
		{Key: groupKey("g"), Value: v.AppendTo(nil)},
		{Key: groupKey("g"), Value: empty.AppendTo(nil)},
		{Key: groupKey("g")},
		{Key: groupKey("g"), Value: v0.AppendTo(nil)},
		{Key: groupKey("g"), Value: noRebalance.AppendTo(nil)},
	}
}

// fuzzSeeds are the seed inputs of FuzzReplay: seedRecords and truncations of them.
func fuzzSeeds() (out []StorageRecord) {
	for _, r := range seedRecords() {
		out = append(out, r, StorageRecord{Key: r.Key[:len(r.Key)/2], Value: r.Value})
		if len(r.Value) > 0 {
			out = append(out, StorageRecord{Key: r.Key, Value: r.Value[:len(r.Value)/2]}, StorageRecord{Key: r.Key, Value: r.Value[:len(r.Value)-1]})
		}
	}
	return out
}

// TestWriteFuzzReplaySeeds writes fuzzSeeds to testdata/fuzz/FuzzReplay when
// GROUP_WRITE_FUZZ_SEEDS is set.
func TestWriteFuzzReplaySeeds(t *testing.T) {
	if os.Getenv("GROUP_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set GROUP_WRITE_FUZZ_SEEDS=1 to write the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReplay")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for i, r := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nbool(%t)\n", r.Key, r.Value, r.Value == nil)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644))
	}
}

// FuzzReplay: Replay never panics on any key and value; an error is ErrBadRecord and applies
// nothing; after a record is applied, the coordinator's state can be read, started and run.
// Its seeds are testdata/fuzz/FuzzReplay (TestWriteFuzzReplaySeeds).
func FuzzReplay(f *testing.F) {
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		clock := newFakeClock()
		c := NewCoordinator(Config{Clock: clock, Storage: &memStorage{}, Logger: slog.New(slog.DiscardHandler)})
		defer c.Close()
		if err := c.Replay(key, value); err != nil {
			require.ErrorIs(t, err, ErrBadRecord)
			require.Empty(t, c.ListGroups())
			return
		}
		for _, l := range c.ListGroups() {
			_, err := c.DescribeGroup(l.Group)
			require.NoError(t, err)
			_, err = c.FetchOffsets(l.Group, nil)
			require.NoError(t, err)
		}
		c.Start()
		// Past the longest session and rebalance timeouts a record can hold (2^31-1 ms), twice:
		// every loaded member expires, unless that takes too many timers to run here (a static
		// member with a long session and a short rebalance timeout, say).
		if !clock.advance(2*(1<<31-1)*time.Millisecond, 10_000) {
			at := clock.elapsed()
			clock.advance(2*(1<<31-1)*time.Millisecond, 10_000)
			require.NotEqual(t, at, clock.elapsed(), "timers fire again and again with no time passing")
			return
		}
		for _, l := range c.ListGroups() {
			d, err := c.DescribeGroup(l.Group)
			require.NoError(t, err)
			require.Empty(t, d.Members, "group %s: every loaded member expires", l.Group)
		}
	})
}

// A GroupMetadata value of version 0 has no rebalance timeout (the field reads as its default,
// -1) nor state timestamp: as Kafka's replay does, a member's rebalance timeout is then its
// session timeout, so that a rebalance of the loaded group waits for its members to rejoin.
func TestReplayVersion0GroupRecord(t *testing.T) {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 0, ConsumerProtocolType, 3
	p, l := "range", "m-a"
	v.Protocol, v.Leader = &p, &l
	for _, id := range []string{"m-a", "m-b", "m-c"} {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.SessionTimeoutMillis = id, "c"+id, 10000
		m.Subscription = subscription("orders")
		v.Members = append(v.Members, m)
	}
	h := newHarness(t, Config{})
	require.NoError(t, h.c.Replay(groupKey("g"), v.AppendTo(nil)))
	d := h.describe("g")
	require.Equal(t, Stable, d.State)
	require.Equal(t, h.clock.Now(), d.StateTime)
	for _, m := range d.Members {
		require.Equal(t, testSession, m.SessionTimeout)
		require.Equal(t, testSession, m.RebalanceTimeout)
	}

	// m-c's session expires; the rebalance waits for m-a and m-b (up to 10 s).
	h.c.Start()
	h.keepAlive("g", testSession, time.Second, "m-a", "m-b")
	require.Equal(t, PreparingRebalance, h.state("g"))
	h.requireMembers("g", "m-a", "m-b")
	require.ErrorIs(t, h.heartbeat("g", "m-a", 3), ErrRebalanceInProgress)
	g4 := h.completeJoins(h.join(rejoin(joinReq("g", "cm-a"), "m-a")), h.join(rejoin(joinReq("g", "cm-b"), "m-b")))
	require.Equal(t, int32(4), g4.id)
	require.Equal(t, "m-a", g4.leader)
}
