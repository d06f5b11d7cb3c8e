package commitlog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReservedTopicNames: a topic name beginning with "commitlog-", in any case, is refused with
// ErrInvalidTopicName saying it is reserved, and nothing is created: its partition folder
// "<topic>-<n>" would sit among the store's own files, all named "commitlog-...", and one
// such as "commitlog-reader-zz-0" would be taken for reader "zz-0"'s positions file.
func TestReservedTopicNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		stCreate(t, s, "orders", TopicConfig{})
		before := env.tree(t)
		for _, name := range []string{
			"commitlog-reader-zz", "commitlog-reader-", "commitlog-topics", "commitlog-creating",
			"commitlog-state", "commitlog-replication", "commitlog-producer-ids",
			"commitlog-sync-failed", "commitlog-", "Commitlog-Reader-zz", "COMMITLOG-topics",
		} {
			require.ErrorIs(t, CheckTopicName(name), ErrInvalidTopicName, name)
			_, err := s.CreateTopic(name, TopicConfig{})
			require.ErrorIs(t, err, ErrInvalidTopicName, name)
			require.ErrorContains(t, err, `reserved for the store's own files`, name)
			require.Equal(t, before, env.tree(t), name)
		}
		require.Equal(t, []string{"orders"}, s.Topics())
	})
}

// TestKafkaFileNamesAreLegalTopics: Kafka's files in a log directory (its checkpoints and
// meta.properties) end in no "-<n>", so no partition folder "<topic>-<n>" can be one of them;
// topics named after them, or containing "commitlog-" past the start, are legal, as Kafka
// leaves them, and live beside a reader's positions without being taken for them.
func TestKafkaFileNamesAreLegalTopics(t *testing.T) {
	names := []string{
		"cleaner-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
		"replication-offset-checkpoint", "meta.properties", "commitlog", "commitlogs",
		"my-commitlog-reader-zz", "commitlog_reader",
	}
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open(WithSync(SyncNever))
		require.NoError(t, err)
		for _, name := range names {
			require.NoError(t, CheckTopicName(name), name)
			tp := stCreate(t, s, name, TopicConfig{})
			require.NoError(t, tp.Append(ctx, stRecs("a", "b")...))
		}
		for _, name := range names {
			_, _, ok := parsePartitionDirName(name)
			require.False(t, ok, name)
		}
		require.NoError(t, s.Close())

		s = env.mustOpen(t, WithSync(SyncNever))
		require.ElementsMatch(t, names, s.Topics())
		for _, name := range names {
			tp := stMust(s.Topic(name))
			r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
			require.Equal(t, []stSeen{{0, 0, "a"}}, stSeenOf(stNextN(t, r, 1)))
			require.NoError(t, r.Commit(ctx))
			require.NoError(t, r.Close())
		}
		require.Equal(t, []string{"loader"}, stMust(s.Readers()))
		committed := stMust(s.CommittedPositions("loader"))
		require.Len(t, committed, len(names))
		for _, name := range names {
			require.Equal(t, map[int32]int64{0: 1}, committed[name], name)
		}
	})
}

// TestStoreOpensReservedTopicFolder: a store holding a topic whose name is now reserved (a
// partition folder "commitlog-reader-zz-0", from a store made before names were reserved or
// copied in) still opens, with a warning, and the topic is read and written as before. Its
// folder is not taken for a reader's positions: Readers lists only real readers, other readers
// commit and resume, and the reader whose positions file the folder would be ("zz-0") is
// refused with ErrInvalidReaderName naming the folder, rather than ErrCorrupt.
func TestStoreOpensReservedTopicFolder(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open(WithSync(SyncNever))
		require.NoError(t, err)
		orders := stCreate(t, s, "orders", TopicConfig{})
		require.NoError(t, orders.Append(ctx, stRecs("o0", "o1")...))
		require.NoError(t, s.Close())
		require.NoError(t, env.FS().MkdirAll(env.path("commitlog-reader-zz-0"), 0o755))

		s = env.mustOpen(t, WithSync(SyncNever))
		require.Equal(t, []string{"commitlog-reader-zz", "orders"}, s.Topics())
		zz := stMust(s.Topic("commitlog-reader-zz"))
		require.NoError(t, zz.Append(ctx, stRecs("z0")...))
		for _, tp := range []*Topic{orders, zz} {
			tp = stMust(s.Topic(tp.Name()))
			r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
			stNextN(t, r, 1)
			require.NoError(t, r.Commit(ctx))
			require.NoError(t, r.Close())
		}
		require.Equal(t, []string{"loader"}, stMust(s.Readers()))
		require.Equal(t, map[string]map[int32]int64{"orders": {0: 1}, "commitlog-reader-zz": {0: 1}},
			stMust(s.CommittedPositions("loader")))

		_, err = zz.NewReader(ReaderConfig{Name: "zz-0", Start: Earliest})
		require.ErrorIs(t, err, ErrInvalidReaderName)
		require.ErrorContains(t, err, "commitlog-reader-zz-0")
		_, err = s.CommittedPositions("zz-0")
		require.ErrorIs(t, err, ErrInvalidReaderName)
		require.ErrorIs(t, s.DeleteReader("zz-0"), ErrInvalidReaderName)
		require.True(t, fsExists(t, env.FS(), env.path("commitlog-reader-zz-0")))
	})
}
