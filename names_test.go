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
