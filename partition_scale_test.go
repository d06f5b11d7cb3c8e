package commitlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// descriptorsUnder returns the descriptors of the process open on files under dir but its lock
// file, or -1 where
// /proc/self/fd cannot tell (not Linux).
func descriptorsUnder(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) && filepath.Base(target) != lockFileName {
			n++
		}
	}
	return n
}

// TestMaxOpenFilesBoundsActiveSegments: a store of 50 partitions under WithMaxOpenFiles(12), room
// for four segments' files, keeps at most 12 segment files open after every append and every
// read, active segments included (their files are closed while idle and opened again by the
// next write or read), and reads every record back exactly, after a second round of appends too.
func TestMaxOpenFilesBoundsActiveSegments(t *testing.T) {
	const bound, topics, partitions = 12, 5, 10
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithMaxOpenFiles(bound), WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		c := s.o.caches.Files
		ctx := context.Background()
		check := func() {
			t.Helper()
			open, _, _ := c.Stats()
			require.LessOrEqual(t, open, bound)
			if !env.memory {
				// The portable build (no mmap) keeps a writable index's copy in memory and writes
				// it back through a duplicate of its file's descriptor (fsys's copyMapping): an
				// open segment there holds up to 5 descriptors for its 3 files.
				limit := bound
				if !osMappingsLive {
					limit = bound / filesPerSegment * (filesPerSegment + 2)
				}
				if n := descriptorsUnder(t, env.dir); n >= 0 {
					require.LessOrEqual(t, n, limit)
				}
			}
		}
		var parts []*Partition
		for i := range topics {
			tp, err := s.CreateTopic(fmt.Sprintf("t%d", i), TopicConfig{Partitions: partitions})
			require.NoError(t, err)
			parts = append(parts, tp.parts()...)
			check()
		}
		want := map[*Partition][]*Record{}
		for round := range 2 {
			for i, p := range parts {
				recs := workloadRecords(i*10+round*1000, 3)
				require.NoError(t, p.Append(ctx, recs...))
				want[p] = append(want[p], withOffsets(recs, int64(round*3))...)
				check()
			}
			for _, p := range parts {
				got, err := p.ReadRecords(0, 1<<20)
				require.NoError(t, err)
				requireSameRecords(t, want[p], got)
				check()
			}
		}
		_, _, evicted := c.Stats()
		require.Positive(t, evicted)
	})
}

// TestIdleActiveSegmentReopens: the active segment's files closed while idle (as the file cache
// closes them) are opened again by the next append, which lands at the log end offset, with index
// entries that point at its batches; a read finds every record, and so does the log reopened.
func TestIdleActiveSegmentReopens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "log")
		cfg := baseConfig()
		cfg.IndexIntervalBytes = 256
		l := openTestLog(t, fsy, dir, cfg, WithMaxOpenFiles(cacheLimit))
		want := appendBatches(t, l, 10, 3)
		entries := len(l.active().State().OffsetEntries)
		for round := range 3 {
			act := l.active()
			closed, err := act.CloseIdle()
			require.NoError(t, err)
			require.True(t, closed, "round %d", round)
			require.False(t, act.FilesOpen())

			want = append(want, appendBatches(t, l, 10, 3)...)
			require.Same(t, act, l.active(), "no roll")
			require.True(t, act.FilesOpen())
			require.Equal(t, int64(len(want)), l.LogEndOffset())
			requireIndexesWithin(t, l)
			offsetErr, timeErr := act.CheckIndexes()
			require.NoError(t, offsetErr)
			require.NoError(t, timeErr)
			st := act.State()
			require.Greater(t, len(st.OffsetEntries), entries, "round %d: the appends after the reopen are indexed", round)
			entries = len(st.OffsetEntries)
			for _, w := range want {
				var r Record
				require.NoError(t, l.ReadRecord(w.Offset, &r))
				requireSameRecords(t, []*Record{w}, []*Record{&r})
			}
		}
		got, err := l.ReadRecords(0, 1<<20)
		require.NoError(t, err)
		requireSameRecords(t, want, got)
		before := l.active().State()

		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg, WithMaxOpenFiles(cacheLimit))
		require.Equal(t, before.OffsetEntries, l.active().State().OffsetEntries)
		got, err = l.ReadRecords(0, 1<<20)
		require.NoError(t, err)
		requireSameRecords(t, want, got)
	})
}

// TestLogDirCheckpointFiles: the store keeps its partitions' recovery points and log start
// offsets in recovery-point-offset-checkpoint and log-start-offset-checkpoint, in the format of
// Kafka's OffsetCheckpointFile, and marks a clean close with .kafka_cleanshutdown, which the next
// open removes; the partition folders hold no commitlog-state.
func TestLogDirCheckpointFiles(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		a, err := s.CreateTopic("alpha", TopicConfig{Partitions: 2})
		require.NoError(t, err)
		b, err := s.CreateTopic("beta", TopicConfig{Partitions: 1})
		require.NoError(t, err)
		for i, n := range []int{3, 5} {
			p, err := a.Partition(int32(i))
			require.NoError(t, err)
			require.NoError(t, p.Append(ctx, workloadRecords(0, n)...))
		}
		pb, err := b.Partition(0)
		require.NoError(t, err)
		require.NoError(t, pb.Append(ctx, workloadRecords(0, 7)...))
		low, err := pb.DeleteRecords(ctx, 4)
		require.NoError(t, err)
		require.Equal(t, int64(4), low)
		require.Equal(t, "0\n3\nalpha 0 0\nalpha 1 0\nbeta 0 4\n", string(fsReadFile(t, env.FS(), env.path(logStartCheckpointName))),
			"DeleteRecords checkpoints the log start offset")
		require.NoError(t, s.Close())

		require.Equal(t, "0\n3\nalpha 0 3\nalpha 1 5\nbeta 0 7\n", string(fsReadFile(t, env.FS(), env.path(recoveryPointCheckpointName))))
		require.Equal(t, "0\n3\nalpha 0 0\nalpha 1 0\nbeta 0 4\n", string(fsReadFile(t, env.FS(), env.path(logStartCheckpointName))))
		require.Contains(t, env.entries(t), cleanShutdownName)
		require.Empty(t, fsReadFile(t, env.FS(), env.path(cleanShutdownName)))
		for _, dir := range []string{"alpha-0", "alpha-1", "beta-0"} {
			require.NotContains(t, env.entries(t, dir), stateFileName)
		}
		st, err := readLogDirState(env.FS(), env.dir)
		require.NoError(t, err)
		require.True(t, st.clean)
		require.Equal(t, map[topicPartition]int64{{"alpha", 0}: 3, {"alpha", 1}: 5, {"beta", 0}: 7}, st.recoveryPoints)

		s = env.mustOpen(t, WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		require.NotContains(t, env.entries(t), cleanShutdownName, "a crash from now on is unclean")
		b, err = s.Topic("beta")
		require.NoError(t, err)
		pb, err = b.Partition(0)
		require.NoError(t, err)
		require.Equal(t, int64(4), pb.LogStartOffset())
		require.Equal(t, int64(7), pb.LogEndOffset())
		require.NoError(t, s.DeleteTopic("alpha"))
		require.Equal(t, "0\n1\nbeta 0 7\n", string(fsReadFile(t, env.FS(), env.path(recoveryPointCheckpointName))))
		require.Equal(t, "0\n1\nbeta 0 4\n", string(fsReadFile(t, env.FS(), env.path(logStartCheckpointName))))
	})
}

// TestOpenStoreWithFolderStateFiles: a store written before it kept the log directory checkpoints
// has each partition's state in its folder's commitlog-state. It opens with that state (here a log
// start offset of 4 after a clean close), moves it to the store's files and removes the folder's
// file; the next open reads the store's files.
func TestOpenStoreWithFolderStateFiles(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1))
		tp, err := s.CreateTopic("old", TopicConfig{Partitions: 1})
		require.NoError(t, err)
		require.NoError(t, tp.Append(ctx, workloadRecords(0, 6)...))
		require.NoError(t, s.Close())
		// The store as the previous version left it.
		for _, name := range []string{recoveryPointCheckpointName, logStartCheckpointName, cleanShutdownName} {
			require.NoError(t, env.FS().Remove(env.path(name)))
		}
		pdir := env.path("old-0")
		require.NoError(t, checkpoint.Write(env.FS(), filepath.Join(pdir, stateFileName),
			logState{logStartOffset: 4, recoveryPoint: 6, clean: true}.encode()))

		for range 2 {
			s = env.mustOpen(t, WithSync(SyncNever), WithClock(fixedClock), WithRetentionCheckInterval(-1))
			tp, err = s.Topic("old")
			require.NoError(t, err)
			p, err := tp.Partition(0)
			require.NoError(t, err)
			require.Equal(t, int64(4), p.LogStartOffset())
			require.Equal(t, int64(6), p.LogEndOffset())
			got, err := p.ReadRecords(4, 1<<20)
			require.NoError(t, err)
			requireSameRecords(t, withOffsets(workloadRecords(4, 2), 4), got)
			require.NotContains(t, env.entries(t, "old-0"), stateFileName)
			require.Equal(t, "0\n1\nold 0 4\n", string(fsReadFile(t, env.FS(), env.path(logStartCheckpointName))))
			require.NoError(t, s.Close())
		}
	})
}
