package commitlog

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// CreateTopics answers every topic of the call by name, as Kafka's CreateTopics answers each
// topic of a request: the ones CreateTopic would refuse fail alone with its error (an invalid
// name, a held name, a name differing from another of the call only in case, a config out of
// range), the others are created with their partitions, a topic ID each (one in every partition
// folder's partition.metadata) and their configuration, and are there after a reopen.
func TestCreateTopics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		_, err = s.CreateTopic("held", TopicConfig{})
		require.NoError(t, err)

		res := s.CreateTopics(map[string]TopicConfig{
			"orders":             {Partitions: 3},
			"payments":           {},
			"Payments":           {LogConfig: LogConfig{RetentionBytes: 4096}},
			"held":               {Partitions: 2},
			"bad/name":           {},
			"__consumer_OFFSETS": {},
			"too-many":           {Partitions: MaxPartitions + 1},
			"bad-config":         {LogConfig: LogConfig{SegmentBytes: -5}},
		})
		require.Len(t, res, 8)
		for name, want := range map[string]error{
			"held":               ErrTopicExists,
			"bad/name":           ErrInvalidTopicName,
			"__consumer_OFFSETS": ErrInvalidTopicName,
			"too-many":           ErrInvalidConfig,
			"bad-config":         ErrInvalidConfig,
		} {
			require.ErrorIs(t, res[name].Err, want, name)
			require.Nil(t, res[name].Topic, name)
		}
		// Of two names differing only in case, the first in sorted order is created.
		require.NoError(t, res["Payments"].Err)
		require.ErrorIs(t, res["payments"].Err, ErrTopicExists)
		require.Nil(t, res["payments"].Topic)
		require.NoError(t, res["orders"].Err)

		require.Equal(t, []string{"Payments", "held", "orders"}, s.Topics())
		orders, payments := res["orders"].Topic, res["Payments"].Topic
		require.Equal(t, int32(3), orders.PartitionCount())
		require.Equal(t, int32(1), payments.PartitionCount())
		require.NotEqual(t, orders.ID(), payments.ID())
		for _, tp := range []*Topic{orders, payments} {
			require.Same(t, tp, stMust(s.Topic(tp.Name())))
			require.Same(t, tp, stMust(s.TopicByID(tp.ID())))
			for p := range tp.PartitionCount() {
				id, err := readPartitionMetadata(fsy, filepath.Join(dir, partitionDirName(tp.Name(), p)))
				require.NoError(t, err)
				require.Equal(t, tp.ID(), id)
				rec := &Record{Value: []byte("v")}
				require.NoError(t, stMust(tp.Partition(p)).Append(context.Background(), rec))
				require.Equal(t, int64(0), rec.Offset)
			}
		}
		require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "the creation is finished")
		for _, name := range []string{"too-many", "bad-config", "payments"} {
			require.False(t, fsExists(t, fsy, filepath.Join(dir, partitionDirName(name, 0))), name)
		}
		require.False(t, fsExists(t, fsy, filepath.Join(dir, partitionDirName("held", 1))), "the held topic keeps its one partition")
		ids := map[string]TopicID{"orders": orders.ID(), "Payments": payments.ID()}
		require.NoError(t, s.Close())

		s, err = Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, []string{"Payments", "held", "orders"}, s.Topics())
		for name, id := range ids {
			tp := stMust(s.Topic(name))
			require.Equal(t, id, tp.ID())
			for p := range tp.PartitionCount() {
				require.Equal(t, int64(1), stMust(tp.Partition(p)).LogEndOffset())
			}
		}
		require.Equal(t, int64(4096), stMust(s.Topic("Payments")).Config().RetentionBytes)
	})
}

// A CreateTopics call with nothing to create, or after Close, creates nothing: every topic of
// a closed store's call fails with ErrClosed, whatever its name or configuration.
func TestCreateTopicsEmptyAndClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		require.Empty(t, s.CreateTopics(nil))
		require.Empty(t, s.CreateTopics(map[string]TopicConfig{}))
		require.NoError(t, s.Close())
		// ErrClosed before any other check: a bad name or configuration too.
		res := s.CreateTopics(map[string]TopicConfig{"a": {}, "b": {Partitions: 2}, "bad/name": {}, "neg": {Partitions: -1}})
		require.Len(t, res, 4)
		for _, name := range []string{"a", "b", "bad/name", "neg"} {
			require.ErrorIs(t, res[name].Err, ErrClosed, name)
			require.Nil(t, res[name].Topic)
			_, err := s.CreateTopic(name, TopicConfig{Partitions: -1})
			require.ErrorIs(t, err, ErrClosed, name)
		}
		require.Empty(t, slices.DeleteFunc(fsListDir(t, fsy, dir), func(n string) bool {
			return n != partitionDirName("a", 0) && n != partitionDirName("b", 0)
		}))
	})
}

// The creation marker names every topic of a CreateTopics call, one a line; a marker written
// before topics were created together (one name) reads as that one topic. An Open after a crash
// that left the configuration of a call's topics and none of their folders makes every folder.
func TestCreationMarkerNamesEveryTopic(t *testing.T) {
	require.Equal(t, "a\nb.c\nd_e", string(encodeCreating([]string{"a", "b.c", "d_e"})))
	require.Equal(t, map[string]bool{"a": true, "b.c": true, "d_e": true}, decodeCreating([]byte("a\nb.c\nd_e")))
	require.Equal(t, map[string]bool{"orders": true}, decodeCreating([]byte("orders")))
	require.Equal(t, map[string]bool{}, decodeCreating(nil))

	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		for name, r := range s.CreateTopics(map[string]TopicConfig{"a": {Partitions: 2}, "b": {}}) {
			require.NoError(t, r.Err, name)
		}
		require.NoError(t, s.Close())
		// What a crash after the configurations were durable, before the folders, leaves.
		for _, f := range []string{"a-0", "a-1", "b-0"} {
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, f)))
		}
		require.NoError(t, checkpoint.Write(fsy, filepath.Join(dir, creatingFileName), encodeCreating([]string{"a", "b"})))

		s, err = Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, []string{"a", "b"}, s.Topics())
		require.Equal(t, int32(2), stMust(s.Topic("a")).PartitionCount())
		for _, f := range []string{"a-0", "a-1", "b-0"} {
			require.True(t, fsExists(t, fsy, filepath.Join(dir, f)), f)
		}
		require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "the creation is finished")
	})
}

// A file system error in the rounds a CreateTopics call shares (here a full disk at the folder
// of its second topic, or at the partition.metadata of its last partition) fails every topic
// the checks let through with that error and leaves nothing of them: no folder, no
// configuration, no creation marker, and the next open opens without them. A topic refused by the checks keeps its own error.
func TestCreateTopicsFileSystemErrorFailsTheCall(t *testing.T) {
	for _, at := range []faultfs.Match{
		faultfs.Is(faultfs.MkdirAll, "/b-0"),
		faultfs.Is(faultfs.OpenFile, "/b-1/"+partitionMetadataFileName+".tmp"),
	} {
		forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
			dir := filepath.Join(t.TempDir(), "store")
			ffs := newFaultFS(t, fsy, dir)
			s, err := Open(dir, withFS(ffs), WithRetentionCheckInterval(-1), WithLogger(quietLog))
			require.NoError(t, err)
			_, err = s.CreateTopic("held", TopicConfig{})
			require.NoError(t, err)
			ffs.Inject(faultfs.Once(at, faultfs.Fault{Err: syscall.ENOSPC}))
			res := s.CreateTopics(map[string]TopicConfig{"a": {Partitions: 2}, "b": {Partitions: 2}, "held": {}})
			ffs.Inject(nil)
			require.ErrorIs(t, res["held"].Err, ErrTopicExists)
			for _, name := range []string{"a", "b"} {
				require.ErrorIs(t, res[name].Err, syscall.ENOSPC, name)
				require.Nil(t, res[name].Topic)
			}
			require.Equal(t, []string{"held"}, s.Topics())
			for _, f := range []string{"a-0", "a-1", "b-0", "b-1", creatingFileName} {
				require.False(t, fsExists(t, fsy, filepath.Join(dir, f)), f)
			}
			require.Equal(t, []string{"held"}, slices.Sorted(maps.Keys(stMust(readTopicConfigs(fsy, dir)))))
			require.NoError(t, s.Close())
			s, err = Open(dir, withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog))
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, []string{"held"}, s.Topics())
			// The names are free again.
			for name, r := range s.CreateTopics(map[string]TopicConfig{"a": {Partitions: 2}, "b": {}}) {
				require.NoError(t, r.Err, name)
			}
			require.Equal(t, []string{"a", "b", "held"}, s.Topics())
		})
	}
}
