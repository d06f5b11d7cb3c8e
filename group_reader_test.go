package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// groupTestOptions are store options for group tests: session timeouts down to 10 ms and no
// initial rebalance delay, so that rebalances take milliseconds.
func groupTestOptions(fsy fsys.FS) []Option {
	return []Option{withFS(fsy), WithGroupSessionTimeouts(10*time.Millisecond, time.Hour), WithGroupInitialRebalanceDelay(-1)}
}

// groupWait bounds the waits of the group tests for a rebalance or a read to be seen: a hang,
// not a slow machine, should fail them (with the race and no-mmap tests run at once on two cores,
// TestGroupTopicPatternFollowsTopics once missed a bound of 10 s).
const groupWait = 30 * time.Second

// fastGroup is a GroupReaderConfig with short timers for tests.
func fastGroup(groupID string, topics ...string) GroupReaderConfig {
	return GroupReaderConfig{Group: groupID, Topics: topics, Start: Earliest, SessionTimeout: 2 * time.Second,
		HeartbeatInterval: 20 * time.Millisecond, MaxPollInterval: 10 * time.Second}
}

func openGroupStore(t *testing.T, fsy fsys.FS, dir string) *Store {
	t.Helper()
	s, err := Open(dir, groupTestOptions(fsy)...)
	require.NoError(t, err)
	return s
}

// fillGroupTopic creates topic with parts partitions and appends n records to each, values
// "<partition>-<i>".
func fillGroupTopic(t *testing.T, s *Store, topic string, parts int32, n int) *Topic {
	t.Helper()
	tp, err := s.CreateTopic(topic, TopicConfig{Partitions: parts})
	require.NoError(t, err)
	for p := range parts {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		recs := make([]*Record, n)
		for i := range recs {
			recs[i] = &Record{Key: []byte(fmt.Sprint(i)), Value: fmt.Appendf(nil, "%d-%d", p, i)}
		}
		require.NoError(t, part.Append(context.Background(), recs...))
	}
	return tp
}

// readN returns the next n records of gr, failing after 10 s.
func readN(t *testing.T, gr *GroupReader, n int) []*Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := make([]*Record, 0, n)
	for len(out) < n {
		rec, err := gr.Next(ctx)
		require.NoError(t, err, "after %d of %d records", len(out), n)
		out = append(out, rec)
	}
	return out
}

func TestGroupReaderReadsEveryPartitionAndResumesAfterReopen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		s := openGroupStore(t, fsy, dir)
		fillGroupTopic(t, s, "events", 4, 10)
		gr, err := s.NewGroupReader(fastGroup("workers", "events"))
		require.NoError(t, err)
		recs := readN(t, gr, 24)
		seen := map[TopicPartition]int64{}
		for _, r := range recs {
			tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
			require.Equal(t, seen[tp], r.Offset, "records of a partition come in offset order from 0")
			seen[tp] = r.Offset + 1
		}
		require.Equal(t, []TopicPartition{{Topic: "events", Partition: 0}, {Topic: "events", Partition: 1}, {Topic: "events", Partition: 2}, {Topic: "events", Partition: 3}}, gr.Assignment())
		require.NoError(t, gr.Commit(context.Background()))
		require.NoError(t, gr.Close())
		require.NoError(t, s.Close())

		s = openGroupStore(t, fsy, dir)
		defer s.Close()
		d, err := s.DescribeGroup("workers")
		require.NoError(t, err)
		require.Equal(t, group.Empty, d.State)
		require.Len(t, d.Positions, 4)
		for _, p := range d.Positions {
			require.Equal(t, seen[TopicPartition{Topic: p.Topic, Partition: p.Partition}], p.Offset)
			require.Equal(t, int64(10), p.HighWatermark)
			require.Equal(t, 10-p.Offset, p.Lag)
		}
		gr, err = s.NewGroupReader(fastGroup("workers", "events"))
		require.NoError(t, err)
		defer gr.Close()
		rest := readN(t, gr, 40-24)
		for _, r := range rest {
			tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
			require.Equal(t, seen[tp], r.Offset, "resumed at the commit, nothing skipped or repeated")
			seen[tp] = r.Offset + 1
		}
		for p := range int32(4) {
			require.Equal(t, int64(10), seen[TopicPartition{Topic: "events", Partition: p}])
		}
	})
}

func TestGroupReadersSharePartitionsAndTakeOverOnClose(t *testing.T) {
	for _, assignors := range [][]group.Assignor{
		{group.RangeAssignor()}, {group.RoundRobinAssignor()}, {group.CooperativeStickyAssignor()},
	} {
		t.Run(assignors[0].Name(), func(t *testing.T) {
			s := openGroupStore(t, fsys.NewMemory(), "store")
			defer s.Close()
			fillGroupTopic(t, s, "events", 6, 5)
			cfg := fastGroup("workers", "events")
			cfg.Assignors = assignors
			a, err := s.NewGroupReader(cfg)
			require.NoError(t, err)
			b, err := s.NewGroupReader(cfg)
			require.NoError(t, err)
			// Each reads until the two together hold all 6 partitions, 3 each.
			require.Eventually(t, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				defer cancel()
				a.Next(ctx)
				b.Next(ctx)
				return len(a.Assignment()) == 3 && len(b.Assignment()) == 3
			}, groupWait, time.Millisecond)
			all := map[TopicPartition]bool{}
			for _, tp := range append(a.Assignment(), b.Assignment()...) {
				require.False(t, all[tp], "partition %v read by both", tp)
				all[tp] = true
			}
			require.Len(t, all, 6)
			require.NoError(t, a.Close())
			require.Eventually(t, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				defer cancel()
				b.Next(ctx)
				return len(b.Assignment()) == 6
			}, groupWait, time.Millisecond)
			require.NoError(t, b.Close())
		})
	}
}

func TestGroupReaderCommitFromAnOldGenerationIsRefused(t *testing.T) {
	s := openGroupStore(t, fsys.NewMemory(), "store")
	defer s.Close()
	fillGroupTopic(t, s, "events", 2, 5)
	a, err := s.NewGroupReader(fastGroup("workers", "events"))
	require.NoError(t, err)
	defer a.Close()
	readN(t, a, 3)
	require.NoError(t, a.Commit(context.Background()))
	before, err := s.DescribeGroup("workers")
	require.NoError(t, err)
	var sum int64
	for _, p := range before.Positions {
		sum += p.Offset
	}
	require.Equal(t, int64(3), sum, "3 records read and committed")
	gen, member := a.Generation()
	c, err := s.GroupCoordinator()
	require.NoError(t, err)
	// A commit of the member's identity with the generation before: a zombie's.
	err = c.CommitOffsets(context.Background(), group.CommitRequest{Group: "workers", MemberID: member, Generation: gen - 1,
		Offsets: map[TopicPartition]group.OffsetAndMetadata{{Topic: "events", Partition: 0}: {Offset: 0, LeaderEpoch: -1}}})
	require.ErrorIs(t, err, ErrIllegalGeneration)
	after, err := s.DescribeGroup("workers")
	require.NoError(t, err)
	require.Equal(t, gen, after.Generation)
	require.Equal(t, before.Positions, after.Positions, "the refused commit moved nothing")
}
