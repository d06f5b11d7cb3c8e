package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// TestPartitionCountCeiling: a topic has 1 to MaxPartitions partitions; a count outside is
// ErrInvalidConfig naming the field and value, from CreateTopic and from a stored config, and
// nothing is created.
func TestPartitionCountCeiling(t *testing.T) {
	for _, tc := range []struct {
		n       int32
		wantErr string
	}{
		{1, ""},
		{3, ""},
		{MaxPartitions + 1, "commitlog: invalid config: Partitions = 4001 (1 to 4000)"},
		{1 << 30, "commitlog: invalid config: Partitions = 1073741824 (1 to 4000)"},
		{-1, "commitlog: invalid config: Partitions = -1 (1 to 4000)"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp, err := s.CreateTopic("events", TopicConfig{Partitions: tc.n})
				if tc.wantErr == "" {
					require.NoError(t, err)
					require.Equal(t, tc.n, tp.PartitionCount())
					return
				}
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Empty(t, s.Topics())
				require.Equal(t, []string{".lock"}, env.entries(t))

				// The same count in a stored config: the store refuses to open rather than
				// creating that many folders.
				require.NoError(t, s.Close())
				b, err := encodeTopicConfigs(map[string]TopicConfig{"events": {Partitions: tc.n}})
				require.NoError(t, err)
				require.NoError(t, checkpoint.Write(env.FS(), env.path(topicsFileName), b))
				_, err = env.open()
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tc.wantErr)
			})
		})
	}
}

// TestAppendNilRecord: a nil record, alone or among others, is ErrInvalidRecord naming its place,
// from every append of records, and nothing of the call is written.
func TestAppendNilRecord(t *testing.T) {
	rec := func() *Record { return &Record{Key: []byte("k"), Value: []byte("v")} }
	for _, tc := range []struct {
		name    string
		append  func(ctx context.Context, tp *Topic) error
		wantErr string
	}{
		{"topic/nil", func(ctx context.Context, tp *Topic) error { return tp.Append(ctx, nil) },
			"commitlog: invalid record: record 0 of 1 is nil"},
		{"topic/nil-among", func(ctx context.Context, tp *Topic) error { return tp.Append(ctx, rec(), nil, rec()) },
			"commitlog: invalid record: record 1 of 3 is nil"},
		{"topic-acks/nil", func(ctx context.Context, tp *Topic) error { return tp.AppendAcks(ctx, AcksLeader, rec(), nil) },
			"commitlog: invalid record: record 1 of 2 is nil"},
		{"partition/nil", func(ctx context.Context, tp *Topic) error {
			return stMust(tp.Partition(1)).Append(ctx, nil)
		}, "commitlog: invalid record: record 0 of 1 is nil"},
		{"partition-acks/nil-among", func(ctx context.Context, tp *Topic) error {
			return stMust(tp.Partition(1)).AppendAcks(ctx, AcksNone, rec(), rec(), nil)
		}, "commitlog: invalid record: record 2 of 3 is nil"},
		{"log/nil", func(ctx context.Context, tp *Topic) error {
			return stMust(tp.Partition(0)).log.Append(ctx, rec(), nil)
		}, "commitlog: invalid record: record 1 of 2 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 2})
				err := tc.append(context.Background(), tp)
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrInvalidRecord)
				for id := range tp.PartitionCount() {
					require.Equal(t, int64(0), stMust(tp.Partition(id)).LogEndOffset())
				}
			})
		})
	}
}

// TestOutOfRangeEnums: StartPosition, ResetPolicy, Acks and Compression values outside their
// constants are ErrInvalidConfig naming the field and the value.
func TestOutOfRangeEnums(t *testing.T) {
	ctx := context.Background()
	rec := &Record{Value: []byte("v")}
	for _, tc := range []struct {
		name    string
		do      func(s *Store, tp *Topic) error
		wantErr string
	}{
		{"start", func(s *Store, tp *Topic) error { _, err := tp.NewReader(ReaderConfig{Start: 9}); return err },
			"commitlog: invalid config: ReaderConfig.Start = 9 (Latest, Earliest, AtOffset or AtTime)"},
		{"start/negative", func(s *Store, tp *Topic) error { _, err := tp.NewReader(ReaderConfig{Start: -1}); return err },
			"commitlog: invalid config: ReaderConfig.Start = -1 (Latest, Earliest, AtOffset or AtTime)"},
		{"reset", func(s *Store, tp *Topic) error { _, err := tp.NewReader(ReaderConfig{Reset: 3}); return err },
			"commitlog: invalid config: ReaderConfig.Reset = 3 (ResetNone, ResetEarliest or ResetLatest)"},
		{"reset/named", func(s *Store, tp *Topic) error {
			_, err := tp.NewReader(ReaderConfig{Name: "loader", Reset: -2})
			return err
		}, "commitlog: invalid config: ReaderConfig.Reset = -2 (ResetNone, ResetEarliest or ResetLatest)"},
		{"acks/topic", func(s *Store, tp *Topic) error {
			return tp.AppendAcks(ctx, 5, rec, &Record{Key: []byte("other"), Value: []byte("v")})
		}, "commitlog: invalid config: acks 5 (0, 1 or -1)"},
		{"acks/topic-empty", func(s *Store, tp *Topic) error { return tp.AppendAcks(ctx, 2) },
			"commitlog: invalid config: acks 2 (0, 1 or -1)"},
		{"acks/partition", func(s *Store, tp *Topic) error { return stMust(tp.Partition(0)).AppendAcks(ctx, -3, rec) },
			"commitlog: invalid config: acks -3 (0, 1 or -1)"},
		{"compression", func(s *Store, tp *Topic) error {
			_, err := s.CreateTopic("other", TopicConfig{LogConfig: LogConfig{Compression: 9}})
			return err
		}, "commitlog: invalid config: Compression = codec(9)"},
		{"compression/negative", func(s *Store, tp *Topic) error {
			_, err := s.CreateTopic("other", TopicConfig{LogConfig: LogConfig{Compression: -1}})
			return err
		}, "commitlog: invalid config: Compression = codec(-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 2})
				err := tc.do(s, tp)
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Equal(t, []string{"events"}, s.Topics())
				// A refused named reader did not take its name.
				r, err := tp.NewReader(ReaderConfig{Name: "loader"})
				require.NoError(t, err)
				require.NoError(t, r.Close())
			})
		})
	}
}

// TestReaderNameCaseCollision: reader names that differ only in case would share one positions
// file on a case-insensitive file system; the second is refused with ErrReaderExists, whether
// the first is live or only committed, as topic names are (ErrTopicExists).
func TestReaderNameCaseCollision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string
		commit  bool // the first commits and closes, else it stays live
		second  string
		wantErr string
	}{
		{"live", "Loader", false, "loader", `commitlog: a reader with this name is open: "loader" collides with "Loader" on case-insensitive file systems`},
		{"committed", "loader", true, "LOADER", `commitlog: a reader with this name is open: "LOADER" collides with "loader" on case-insensitive file systems`},
		{"same-name-committed", "loader", true, "loader", ""},
		{"other-name", "loader", false, "loader2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{})
				r := stReader(t, tp, ReaderConfig{Name: tc.first})
				if tc.commit {
					require.NoError(t, r.Commit(context.Background()))
					require.NoError(t, r.Close())
				}
				r2, err := tp.NewReader(ReaderConfig{Name: tc.second})
				if tc.wantErr == "" {
					require.NoError(t, err)
					require.NoError(t, r2.Close())
					return
				}
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrReaderExists)
				require.Nil(t, r2)
			})
		})
	}
}

// TestDeleteTopicRemovesReaderPositions: deleting a topic removes its committed positions from
// every reader's file, keeping those of other topics; a file left with none is removed (Kafka
// drops a deleted topic's committed offsets from every group). A topic created again under the
// name starts its readers afresh, and a live reader of the deleted topic does not write its
// positions back when it closes.
func TestDeleteTopicRemovesReaderPositions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readers   map[string][]string // reader -> topics it commits
		wantFiles map[string]map[string]map[int32]int64
	}{
		{"only-topic", map[string][]string{"loader": {"events"}}, map[string]map[string]map[int32]int64{}},
		{"two-topics", map[string][]string{"loader": {"events", "audit"}},
			map[string]map[string]map[int32]int64{"loader": {"audit": {0: 1}}}},
		{"two-readers", map[string][]string{"loader": {"events"}, "auditor": {"audit", "events"}},
			map[string]map[string]map[int32]int64{"auditor": {"audit": {0: 1}}}},
		{"other-topic-only", map[string][]string{"auditor": {"audit"}},
			map[string]map[string]map[int32]int64{"auditor": {"audit": {0: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t)
				topics := map[string]*Topic{}
				for _, name := range []string{"events", "audit"} {
					topics[name] = stCreate(t, s, name, TopicConfig{})
					require.NoError(t, topics[name].Append(ctx, stRecs("a", "b")...))
				}
				for reader, ts := range tc.readers {
					for _, topic := range ts {
						r := stReader(t, topics[topic], ReaderConfig{Name: reader, Start: Earliest})
						stNext(t, r)
						require.NoError(t, r.Commit(ctx))
						require.NoError(t, r.Close())
					}
				}
				// A live auto-committing reader of the topic, closed after the delete.
				live := stReader(t, topics["events"], ReaderConfig{Name: "tail", Start: Earliest, AutoCommitInterval: time.Hour})
				stNext(t, live)

				require.NoError(t, s.DeleteTopic("events"))
				require.NoError(t, live.Close())
				got := map[string]map[string]map[int32]int64{}
				for _, name := range stMust(s.Readers()) {
					got[name] = stMust(s.CommittedPositions(name))
				}
				require.Equal(t, tc.wantFiles, got)

				// The same name again: every reader starts where its config says.
				tp := stCreate(t, s, "events", TopicConfig{})
				require.NoError(t, tp.Append(ctx, stRecs("new")...))
				for reader := range tc.readers {
					r := stReader(t, tp, ReaderConfig{Name: reader, Start: Earliest})
					require.Equal(t, int64(0), stMust(r.Position(0)), reader)
					require.NoError(t, r.Close())
				}
			})
		})
	}
}
