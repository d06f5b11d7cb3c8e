package commitlog

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestCleanerCheckpointBytes: the file is Kafka's OffsetCheckpointFile format, sorted, and
// reads back as written.
func TestCleanerCheckpointBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		require.NoError(t, fsy.MkdirAll(dir, 0o755))
		m := map[topicPartition]int64{{"orders", 1}: 42, {"orders", 0}: 7, {"accounts", 3}: 0}
		require.NoError(t, writeCleanerCheckpoint(fsy, dir, m))
		require.Equal(t, "0\n3\naccounts 3 0\norders 0 7\norders 1 42\n", string(fsReadFile(t, fsy, filepath.Join(dir, cleanerCheckpointName))))
		got, err := readCleanerCheckpoint(fsy, dir)
		require.NoError(t, err)
		require.Equal(t, m, got)
		empty, err := readCleanerCheckpoint(fsy, t.TempDir())
		require.NoError(t, err)
		require.Empty(t, empty)
	})
}

// TestDecodeOffsetCheckpointRejects: every malformed file is ErrCorrupt.
func TestDecodeOffsetCheckpointRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":           "",
		"no newline":      "0\n0",
		"version":         "1\n0\n",
		"count short":     "0\n2\nt 0 1\n",
		"count long":      "0\n0\nt 0 1\n",
		"count negative":  "0\n-1\n",
		"fields":          "0\n1\nt 0\n",
		"extra field":     "0\n1\nt 0 1 2\n",
		"bad topic":       "0\n1\n.. 0 1\n",
		"bad partition":   "0\n1\nt x 1\n",
		"partition range": "0\n1\nt 4000 1\n",
		"negative offset": "0\n1\nt 0 -1\n",
		"bad offset":      "0\n1\nt 0 1x\n",
		"duplicate":       "0\n2\nt 0 1\nt 0 2\n",
		"trailing":        "0\n0\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeOffsetCheckpoint([]byte(in))
			require.ErrorIs(t, err, ErrCorrupt)
		})
	}
	m, err := decodeOffsetCheckpoint([]byte("0\n0\n"))
	require.NoError(t, err)
	require.Empty(t, m)
}

// FuzzDecodeOffsetCheckpoint: no input panics, and whatever decodes encodes to the same bytes
// (the format has one spelling per map, up to the order of the lines).
func FuzzDecodeOffsetCheckpoint(f *testing.F) {
	f.Add([]byte("0\n1\ntopic 0 5\n"))
	f.Add([]byte("0\n2\na 1 2\nb 0 9223372036854775807\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeOffsetCheckpoint(b)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		again, err := decodeOffsetCheckpoint(encodeOffsetCheckpoint(m))
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}

// TestDecodeOffsetCheckpointExported: DecodeOffsetCheckpoint gives the offsets of Kafka's
// OffsetCheckpointFile by topic and partition, and ErrCorrupt, naming the file, for bad bytes.
func TestDecodeOffsetCheckpointExported(t *testing.T) {
	b := []byte("0\n3\nevents 0 12\nevents 3 7\norders 1 0\n")
	got, err := DecodeOffsetCheckpoint("recovery-point-offset-checkpoint", b)
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"events": {0: 12, 3: 7}, "orders": {1: 0}}, got)

	_, err = DecodeOffsetCheckpoint("log-start-offset-checkpoint", []byte("0\n2\nevents 0 12\n"))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "log-start-offset-checkpoint: count \"2\" for 1 entries")
}
