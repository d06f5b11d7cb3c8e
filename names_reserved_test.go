package commitlog

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReservedTopicNames: a topic name beginning with "commitlog-reader-", or naming one of the
// store's own files, in any case, is refused with ErrInvalidTopicName saying it is reserved, and
// nothing is created: the partition folder "commitlog-reader-zz-0" would be reader "zz-0"'s
// positions file.
func TestReservedTopicNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		stCreate(t, s, "orders", TopicConfig{})
		before := env.tree(t)
		for _, tc := range []struct{ name, why string }{
			{"commitlog-reader-zz", `names beginning with "commitlog-reader-" (in any case) are reserved for the store's reader positions files`},
			{"commitlog-reader-", `names beginning with "commitlog-reader-" (in any case) are reserved`},
			{"Commitlog-Reader-zz", `names beginning with "commitlog-reader-" (in any case) are reserved`},
			{"commitlog-topics", "the names of the store's own files (in any case) are reserved"},
			{"COMMITLOG-TOPICS", "the names of the store's own files (in any case) are reserved"},
			{"commitlog-creating", "the names of the store's own files"},
			{"commitlog-producer-ids", "the names of the store's own files"},
			{"commitlog-state", "the names of the store's own files"},
			{"commitlog-replication", "the names of the store's own files"},
			{"commitlog-sync-failed", "the names of the store's own files"},
		} {
			require.ErrorIs(t, CheckTopicName(tc.name), ErrInvalidTopicName, tc.name)
			_, err := s.CreateTopic(tc.name, TopicConfig{})
			require.ErrorIs(t, err, ErrInvalidTopicName, tc.name)
			require.ErrorContains(t, err, tc.why, tc.name)
			require.Equal(t, before, env.tree(t), tc.name)
		}
		require.Equal(t, []string{"orders"}, s.Topics())
	})
}

// TestUnreservedTopicNames: no partition folder "<topic>-<n>" of these names can be a file of
// the store's or of Kafka's (none of those ends in "-<n>"): Kafka's checkpoint file names, other
// names beginning with "commitlog-" (the mirror's positions topic "commitlog-mirror-pull-<name>")
// and names holding "commitlog-reader-" past the start are legal topics, and live beside a
// reader's positions without being taken for them.
func TestUnreservedTopicNames(t *testing.T) {
	names := []string{
		"cleaner-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
		"replication-offset-checkpoint", "meta.properties", "commitlog", "commitlog-mirror-pull-x",
		"commitlog-readers", "commitlog-topics-2", "my-commitlog-reader-zz",
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
		// No file of the store's or of Kafka's in the directory can be a partition folder.
		for _, name := range append(slices.Clone(storeFileNames), names[:5]...) {
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
