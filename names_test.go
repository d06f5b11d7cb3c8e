package commitlog

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// stBadNames are names no topic or reader may have; each would be a path outside the rule or,
// for some, outside the store.
var stBadNames = []struct {
	label, name string
}{
	{"empty", ""},
	{"dot", "."},
	{"dotdot", ".."},
	{"traversal", "../../etc"},
	{"slash", "a/b"},
	{"backslash", `a\b`},
	{"nul", "a\x00b"},
	{"250-chars", strings.Repeat("a", 250)},
	{"space", "a b"},
	{"absolute", "/etc/passwd"},
}

// TestStoreBadTopicNames: every bad name is refused and nothing is created anywhere.
func TestStoreBadTopicNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		// The store's directory is two levels below env.root: "../../x" from it would land in root.
		s := env.mustOpen(t, WithSync(SyncNever))
		stCreate(t, s, "orders", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentIndexBytes: 4096}})
		before := env.tree(t)
		for _, tc := range stBadNames {
			t.Run(tc.label, func(t *testing.T) {
				_, err := s.CreateTopic(tc.name, TopicConfig{})
				require.ErrorIs(t, err, ErrInvalidTopicName)
				_, err = s.Topic(tc.name)
				require.ErrorIs(t, err, ErrUnknownTopic)
				require.ErrorIs(t, s.DeleteTopic(tc.name), ErrUnknownTopic)
				require.Equal(t, before, env.tree(t))
			})
		}
		t.Run("case-collision", func(t *testing.T) {
			for _, name := range []string{"Orders", "ORDERS", "oRdErS"} {
				_, err := s.CreateTopic(name, TopicConfig{})
				require.ErrorIs(t, err, ErrTopicExists, name)
			}
			require.Equal(t, before, env.tree(t))
		})
		t.Run("249-chars-is-legal", func(t *testing.T) {
			long := strings.Repeat("x", 249)
			tp := stCreate(t, s, long, TopicConfig{})
			require.Equal(t, long, tp.Name())
			require.True(t, fsExists(t, env.FS(), env.path(long+"-0")))
			require.NoError(t, s.DeleteTopic(long))
			require.Equal(t, before, env.tree(t))
		})
		require.Equal(t, []string{"orders"}, s.Topics())
	})
}

// TestStoreBadReaderNames: every bad reader name is refused by NewReader, DeleteReader and
// CommittedPositions, and nothing is created.
func TestStoreBadReaderNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentIndexBytes: 4096}})
		require.NoError(t, tp.Append(context.Background(), stRecs("a")...))
		before := env.tree(t)
		names := append(slices.Clone(stBadNames[1:]), // "" is the anonymous reader
			struct{ label, name string }{"temp-suffix", "fraud.tmp"})
		for _, tc := range names {
			t.Run(tc.label, func(t *testing.T) {
				r, err := tp.NewReader(ReaderConfig{Name: tc.name, Start: Earliest})
				require.ErrorIs(t, err, ErrInvalidReaderName)
				require.Nil(t, r)
				require.ErrorIs(t, s.DeleteReader(tc.name), ErrInvalidReaderName)
				_, err = s.CommittedPositions(tc.name)
				require.ErrorIs(t, err, ErrInvalidReaderName)
				require.Equal(t, before, env.tree(t))
			})
		}
		// An anonymous reader has nothing to commit.
		anon := stReader(t, tp, ReaderConfig{Start: Earliest})
		require.ErrorIs(t, anon.Commit(context.Background()), ErrInvalidReaderName)
		require.Equal(t, before, env.tree(t))
		readers, err := s.Readers()
		require.NoError(t, err)
		require.Empty(t, readers)
	})
}

// TestStoreReaderNameTempSuffix: a reader name ending in the checkpoint's temporary suffix would
// share its file with another reader's temporary file and be swept away at every open.
func TestStoreReaderNameTempSuffix(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "orders", TopicConfig{})
		_, err := tp.NewReader(ReaderConfig{Name: "loader" + checkpoint.TempSuffix})
		require.ErrorIs(t, err, ErrInvalidReaderName)
		_, err = tp.NewReader(ReaderConfig{Name: "loader.tmp2"})
		require.NoError(t, err)
	})
}

// TestReaderNameLength: reader names longer than 200 characters are refused before any file is
// named after them; 200 works, commits and resumes.
func TestReaderNameLength(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	tp, err := s.CreateTopic("orders", TopicConfig{})
	require.NoError(t, err)
	_, err = tp.NewReader(ReaderConfig{Name: strings.Repeat("r", 201)})
	require.ErrorIs(t, err, ErrInvalidReaderName)

	name := strings.Repeat("r", 200)
	r, err := tp.NewReader(ReaderConfig{Name: name, Start: Earliest})
	require.NoError(t, err)
	require.NoError(t, tp.Append(context.Background(), &Record{Value: []byte("v")}))
	rec, err := r.Next(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(0), rec.Offset)
	require.NoError(t, r.Commit(context.Background()))
	require.NoError(t, r.Close())
	pos, err := s.CommittedPositions(name)
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 1}}, pos)
}

// TestCheckTopicNameMessage: the error names the character that breaks the rule, a non-ASCII
// one whole (not its first byte), with its byte position, and the rule itself.
func TestCheckTopicNameMessage(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"café", `commitlog: invalid topic name: "café": character 'é' at byte 3 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"a b", `commitlog: invalid topic name: "a b": character ' ' at byte 1 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"日本", `commitlog: invalid topic name: "日本": character '日' at byte 0 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"a\xffb", `commitlog: invalid topic name: "a\xffb": character '�' at byte 1 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		// Each internal topic is named for the coordinator that keeps it.
		{"__transaction_state", `commitlog: invalid topic name: "__transaction_state" is an internal topic of the store's transaction coordinator`},
		{"__consumer_offsets", `commitlog: invalid topic name: "__consumer_offsets" is an internal topic of the store's group coordinator (consumer groups' members and committed positions)`},
	} {
		err := CheckTopicName(tc.name)
		require.ErrorIs(t, err, ErrInvalidTopicName, tc.name)
		require.EqualError(t, err, tc.want, tc.name)
	}
}

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
