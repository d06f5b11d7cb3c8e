package commitlog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

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
