package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/cleaner"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// openCompactStore opens a store on fsy at dir with the test clock and no background threads
// unless opts say otherwise.
func openCompactStore(t *testing.T, fsy fsys.FS, dir string, clock *repClock, opts ...Option) *Store {
	t.Helper()
	s, err := Open(dir, append([]Option{withFS(fsy), WithClock(clock.Now), WithCleanerThreads(0),
		WithRetentionCheckInterval(-1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fillTopic appends n records to partition 0 of t, keys cycling over keys.
func fillTopic(t *testing.T, tp *Topic, clock *repClock, n, keys int) {
	t.Helper()
	p, err := tp.Partition(0)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, p.Append(context.Background(), &Record{Key: fmt.Appendf(nil, "k%d", i%keys),
			Value: fmt.Appendf(nil, "value-%d", i), Timestamp: clock.Now()}))
	}
}

// TestStoreCleanerCheckpoint: a clean's cleaner point is written to the store's
// cleaner-offset-checkpoint in Kafka's format, read again at the next open, and dropped with the
// topic.
func TestStoreCleanerCheckpoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		clock := newRepClock()
		s := openCompactStore(t, fsy, dir, clock)
		tp, err := s.CreateTopic("table", TopicConfig{Partitions: 1, LogConfig: compactConfig()})
		require.NoError(t, err)
		fillTopic(t, tp, clock, 100, 7)
		res, err := tp.Compact(context.Background())
		require.NoError(t, err)
		p, err := tp.Partition(0)
		require.NoError(t, err)
		point := p.CompactionState().CleanerPoint
		require.Positive(t, point)
		require.Equal(t, point, res.CleanerPoint)
		require.Equal(t, fmt.Sprintf("0\n1\ntable 0 %d\n", point), string(fsReadFile(t, fsy, filepath.Join(dir, cleanerCheckpointName))))
		require.NoError(t, s.Close())

		s = openCompactStore(t, fsy, dir, clock)
		tp, err = s.Topic("table")
		require.NoError(t, err)
		p, err = tp.Partition(0)
		require.NoError(t, err)
		st := p.CompactionState()
		require.Equal(t, point, st.CleanerPoint)
		require.Zero(t, st.DirtyBytes)
		require.Positive(t, st.CleanBytes)
		require.False(t, st.Due, "nothing dirty since")

		require.NoError(t, s.DeleteTopic("table"))
		require.Equal(t, "0\n0\n", string(fsReadFile(t, fsy, filepath.Join(dir, cleanerCheckpointName))))
	})
}

// TestStoreTopicCompactRefusesDeletePolicy: Topic.Compact of a topic that does not compact is
// ErrInvalidConfig.
func TestStoreTopicCompactRefusesDeletePolicy(t *testing.T) {
	s := openCompactStore(t, fsys.NewMemory(), t.TempDir(), newRepClock())
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
	require.NoError(t, err)
	_, err = tp.Compact(context.Background())
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// TestStoreCleanFilthiest: the background cleaner's step cleans the due log of highest dirty
// ratio first, passes over logs not due and topics that do not compact, and finds nothing once
// all are clean.
func TestStoreCleanFilthiest(t *testing.T) {
	clock := newRepClock()
	s := openCompactStore(t, fsys.NewMemory(), t.TempDir(), clock)
	cfg := compactConfig()
	a, err := s.CreateTopic("a", TopicConfig{Partitions: 1, LogConfig: cfg})
	require.NoError(t, err)
	b, err := s.CreateTopic("b", TopicConfig{Partitions: 1, LogConfig: cfg})
	require.NoError(t, err)
	plain, err := s.CreateTopic("plain", TopicConfig{Partitions: 1})
	require.NoError(t, err)
	fillTopic(t, a, clock, 100, 3)
	fillTopic(t, b, clock, 100, 3)
	fillTopic(t, plain, clock, 100, 3)
	// Clean b once, then dirty it a little: a is the filthiest.
	_, err = b.Compact(context.Background())
	require.NoError(t, err)
	fillTopic(t, b, clock, 30, 3)
	pa, _ := a.Partition(0)
	pb, _ := b.Partition(0)
	require.True(t, pa.CompactionState().Due)
	require.Greater(t, pa.CompactionState().DirtyRatio, pb.CompactionState().DirtyRatio)

	var m *cleaner.OffsetMap
	ok, err := s.cleanFilthiest(context.Background(), &m)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, m)
	require.False(t, pa.CompactionState().Due, "a, the filthiest, was cleaned")
	bPoint := pb.CompactionState().CleanerPoint
	for pb.CompactionState().Due {
		ok, err = s.cleanFilthiest(context.Background(), &m)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err = s.cleanFilthiest(context.Background(), &m)
	require.NoError(t, err)
	require.False(t, ok, "nothing due")
	st := pb.CompactionState()
	require.Greater(t, st.CleanerPoint, bPoint, "b was cleaned too, after a")
	require.Equal(t, st.UncleanableOffset, st.CleanerPoint, "everything cleanable of b is clean")
}

// TestStoreBackgroundCleaner: a store's cleaner thread cleans a due compacted topic by itself,
// and Close stops it.
func TestStoreBackgroundCleaner(t *testing.T) {
	clock := newRepClock()
	s := openCompactStore(t, fsys.NewMemory(), t.TempDir(), clock, WithCleanerThreads(1),
		WithCleanerBackoff(time.Millisecond), WithCleanerDedupeBufferSize(MinCleanerDedupeBufferSize))
	tp, err := s.CreateTopic("table", TopicConfig{Partitions: 1, LogConfig: compactConfig()})
	require.NoError(t, err)
	fillTopic(t, tp, clock, 200, 5)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	// The thread polls every millisecond; this waits for its first clean, however slow the
	// machine (the test asserts what it did, not how fast).
	deadline := time.Now().Add(time.Minute)
	for p.CompactionState().CleanerPoint == 0 {
		require.True(t, time.Now().Before(deadline), "no clean within a minute")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, s.Close())
}
