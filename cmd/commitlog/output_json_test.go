package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopicsJSON: topics --output json has the table's fields, per partition and per topic.
func TestTopicsJSON(t *testing.T) {
	dir, _ := adminStore(t)
	mustCLI(t, nil, "--dir", dir, "consume", "-t", "events", "-p", "1", "-r", "audit", "-c", "1")
	r := mustCLI(t, nil, "--dir", dir, "topics", "--output", "json")
	var doc topicsDocument
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.Topics, 2)
	ev := doc.Topics[0]
	require.Equal(t, "events", ev.Topic)
	require.Equal(t, "delete", ev.CleanupPolicy)
	require.Equal(t, map[string]int64{}, ev.GroupLag)
	require.Equal(t, []partitionSummary{
		{Partition: 0, LogStartOffset: 0, HighWatermark: 10, LastStableOffset: 10, Size: 710, Segments: 1, ReaderLag: map[string]int64{}},
		{Partition: 1, LogStartOffset: 0, HighWatermark: 4, LastStableOffset: 4, Size: 284, Segments: 1, ReaderLag: map[string]int64{"audit": 3}},
	}, ev.Partitions)
	keys := doc.Topics[1]
	require.Equal(t, "keys", keys.Topic)
	require.Equal(t, "compact", keys.CleanupPolicy)
	require.NotNil(t, keys.Partitions[0].CleanerPoint)
	require.Equal(t, int64(0), *keys.Partitions[0].CleanerPoint)

	r = mustCLI(t, nil, "--dir", dir, "topics", "keys", "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.Topics, 1)
	r = cli(t, nil, "--dir", dir, "topics", "--output", "xml")
	require.Equal(t, 2, r.code)
}

// TestVerifyJSON: verify --output json has the counts and the problems, and exits 1 with them.
func TestVerifyJSON(t *testing.T) {
	dir, _ := adminStore(t)
	r := mustCLI(t, nil, "--dir", dir, "verify", "--output", "json")
	var rep verifyReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, verifyReport{Dir: dir, Partitions: 3, Segments: 3, Batches: 15, Records: 15, Problems: []verifyProblem{}}, rep)

	seg := filepath.Join(dir, "events-1", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 4})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r = cli(t, nil, "--dir", dir, "verify", "--output", "json")
	require.Equal(t, 1, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Problems, 1)
	require.Equal(t, seg, rep.Problems[0].File)
	require.Equal(t, int64(284), rep.Problems[0].Position)
	require.Len(t, outLines(r.stderr), 1)
}
