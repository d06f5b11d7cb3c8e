package commitlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestGroupOffsetsExpireAfterRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		s := openGroupStore(t, fsy, dir)
		fillGroupTopic(t, s, "events", 2, 5)

		// A simple group: positions set from outside any membership, each expiring retention
		// after its commit.
		require.NoError(t, s.SetGroupPositions(ctx, "audit", map[TopicPartition]int64{{Topic: "events", Partition: 0}: 3}))
		// A consumer group whose only member read and left: its positions expire together,
		// retention after it became Empty.
		gr, err := s.NewGroupReader(fastGroup("workers", "events"))
		require.NoError(t, err)
		readN(t, gr, 10)
		require.NoError(t, gr.Commit(ctx))
		require.NoError(t, gr.Close())
		d, err := s.DescribeGroup("workers")
		require.NoError(t, err)
		require.Equal(t, group.Empty, d.State)
		require.Len(t, d.Positions, 2)
		groups, err := s.ListGroups()
		require.NoError(t, err)
		require.Equal(t, []group.ListedGroup{
			{Group: "audit", State: group.Empty},
			{Group: "workers", ProtocolType: group.ConsumerProtocolType, State: group.Empty},
		}, groups)

		n, err := s.ExpireGroupOffsetsAt(ctx, time.Now().Add(group.DefaultOffsetsRetention-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "nothing is older than the retention yet")
		n, err = s.ExpireGroupOffsetsAt(ctx, time.Now().Add(group.DefaultOffsetsRetention+time.Minute))
		require.NoError(t, err)
		require.Equal(t, 3, n)
		groups, err = s.ListGroups()
		require.NoError(t, err)
		require.Empty(t, groups, "empty groups left without positions are deleted")
		_, err = s.DescribeGroup("workers")
		require.ErrorIs(t, err, ErrGroupIDNotFound)

		// Durable: the tombstones are in __consumer_offsets-0.
		require.NoError(t, s.Close())
		s = openGroupStore(t, fsy, dir)
		defer s.Close()
		groups, err = s.ListGroups()
		require.NoError(t, err)
		require.Empty(t, groups)
	})
}

func TestDeleteTopicRemovesGroupPositions(t *testing.T) {
	ctx := context.Background()
	s := openGroupStore(t, fsys.NewMemory(), "store")
	defer s.Close()
	fillGroupTopic(t, s, "a", 1, 3)
	fillGroupTopic(t, s, "b", 1, 3)
	require.NoError(t, s.SetGroupPositions(ctx, "g", map[TopicPartition]int64{
		{Topic: "a", Partition: 0}: 2, {Topic: "b", Partition: 0}: 1}))
	require.NoError(t, s.DeleteTopic("a"))
	d, err := s.DescribeGroup("g")
	require.NoError(t, err)
	require.Equal(t, []GroupPosition{{Topic: "b", Partition: 0, Offset: 1, LeaderEpoch: 0,
		CommitTime: d.Positions[0].CommitTime, HighWatermark: 3, Lag: 2}}, d.Positions)
	err = s.SetGroupPositions(ctx, "g", map[TopicPartition]int64{{Topic: "a", Partition: 0}: 1})
	require.ErrorIs(t, err, ErrUnknownTopic)
}

func TestGroupIDRule(t *testing.T) {
	s := openGroupStore(t, fsys.NewMemory(), "store")
	defer s.Close()
	fillGroupTopic(t, s, "events", 1, 1)
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"empty", "", false},
		{"longest", strings.Repeat("g", group.MaxGroupIDLen), true},
		{"too long", strings.Repeat("g", group.MaxGroupIDLen+1), false},
		{"the readers' transactional prefix", readerGroupPrefix + "x", false},
		{"other bytes", "\x00odd", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.SetGroupPositions(context.Background(), tc.id, map[TopicPartition]int64{{Topic: "events", Partition: 0}: 1})
			gr, rerr := s.NewGroupReader(fastGroup(tc.id, "events"))
			if tc.ok {
				require.NoError(t, err)
				require.NoError(t, rerr)
				require.NoError(t, gr.Close())
				return
			}
			require.ErrorIs(t, err, ErrInvalidGroupID)
			require.ErrorIs(t, rerr, ErrInvalidGroupID)
		})
	}
}
