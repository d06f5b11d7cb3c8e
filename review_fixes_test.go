package commitlog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenFailsCleanlyOnCorruptTopicConfigs: a damaged topics file makes Open return ErrCorrupt
// (no panic) and release the directory, so a repaired store opens.
func TestOpenFailsCleanlyOnCorruptTopicConfigs(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	_, err = s.CreateTopic("orders", TopicConfig{})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	path := filepath.Join(dir, topicsFileName)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("garbage, not a checkpoint"), 0o644))
	s, err = Open(dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Nil(t, s)

	require.NoError(t, os.WriteFile(path, good, 0o644))
	s, err = Open(dir)
	require.NoError(t, err, "the failed Open released the lock")
	require.Equal(t, []string{"orders"}, s.Topics())
	require.NoError(t, s.Close())
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
