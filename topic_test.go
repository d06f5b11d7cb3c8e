package commitlog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusedAppendLeavesRecordsUnchanged: when a manual partitioner names a partition the topic
// lacks, the call writes nothing and sets no field of any record, the valid ones included.
func TestRefusedAppendLeavesRecordsUnchanged(t *testing.T) {
	s, err := OpenInMemory()
	require.NoError(t, err)
	defer s.Close()
	tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 3})
	require.NoError(t, err)
	tp.SetPartitioner(ManualPartitioner())
	ok := &Record{Partition: 1, Value: []byte("fine")}
	bad := &Record{Partition: 9, Value: []byte("no such partition")}
	require.ErrorIs(t, tp.Append(context.Background(), ok, bad), ErrUnknownTopic)
	require.Equal(t, &Record{Partition: 1, Value: []byte("fine")}, ok)
	p1, err := tp.Partition(1)
	require.NoError(t, err)
	require.Equal(t, int64(0), p1.LogEndOffset())

	require.NoError(t, tp.Append(context.Background(), ok))
	require.Equal(t, "orders", ok.Topic)
	require.Equal(t, int64(0), ok.Offset)
	require.Equal(t, int64(1), p1.LogEndOffset())
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
