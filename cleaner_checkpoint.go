package commitlog

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// cleanerCheckpointName is the store's file of cleaner points, named as Kafka names it in a log
// directory.
const cleanerCheckpointName = "cleaner-offset-checkpoint"

// maxCheckpointBytes bounds the cleaner-offset-checkpoint read: a line per partition, each at
// most a topic name (249 bytes), two numbers and two spaces.
const maxCheckpointBytes = checkpoint.MaxPayload

// topicPartition names a partition of the store, as Kafka's TopicPartition.
type topicPartition struct {
	topic     string
	partition int32
}

// encodeOffsetCheckpoint returns m in the format of Kafka's OffsetCheckpointFile (CheckpointFile
// with version 0): the line "0", the line with the number of entries, then one line
// "<topic> <partition> <offset>" per entry, here sorted by topic and partition so that equal maps
// give equal bytes.
func encodeOffsetCheckpoint(m map[topicPartition]int64) []byte {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b topicPartition) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k.topic, k.partition, m[k])
	}
	return b.Bytes()
}

// decodeOffsetCheckpoint reads the format encodeOffsetCheckpoint writes, strictly, as Kafka's
// CheckpointFile reader: a version other than 0, a count that disagrees with the lines, a line
// that is not a valid topic name, a partition in [0, MaxPartitions) and an offset >= 0, a
// partition listed twice, or anything after the last line is an error wrapping ErrCorrupt. The
// map is sized by the lines present, never by the count.
func decodeOffsetCheckpoint(b []byte) (map[topicPartition]int64, error) {
	return decodeOffsetCheckpointFile(cleanerCheckpointName, b)
}

// DecodeOffsetCheckpoint decodes b, the bytes of the file named name (for its errors), in the
// format of Kafka's OffsetCheckpointFile, as a store keeps its log directory's
// recovery-point-offset-checkpoint, log-start-offset-checkpoint and cleaner-offset-checkpoint:
// the line "0", the number of entries, then "<topic> <partition> <offset>" per entry. It returns
// the offsets by topic and partition. A version other than 0, a count that disagrees with the
// lines, a bad topic name, partition or offset, a partition listed twice, or anything after the
// last line is an error wrapping ErrCorrupt; the maps are sized by the lines present, never by
// the count.
func DecodeOffsetCheckpoint(name string, b []byte) (map[string]map[int32]int64, error) {
	m, err := decodeOffsetCheckpointFile(name, b)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for tp, off := range m {
		if out[tp.topic] == nil {
			out[tp.topic] = map[int32]int64{}
		}
		out[tp.topic][tp.partition] = off
	}
	return out, nil
}

// decodeOffsetCheckpointFile is decodeOffsetCheckpoint of the file named name (in its errors).
func decodeOffsetCheckpointFile(name string, b []byte) (map[topicPartition]int64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, bad("not ended by a newline")
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	if len(lines) < 2 {
		return nil, bad("%d lines, want a version and a count", len(lines))
	}
	if lines[0] != "0" {
		return nil, bad("version %q, want 0", lines[0])
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count < 0 || count != len(lines)-2 {
		return nil, bad("count %q for %d entries", lines[1], len(lines)-2)
	}
	m := make(map[topicPartition]int64, len(lines)-2)
	for i, line := range lines[2:] {
		f := strings.Split(line, " ")
		if len(f) != 3 {
			return nil, bad("entry %d: %q is not \"<topic> <partition> <offset>\"", i, line)
		}
		if err := checkTopicName(f[0]); err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		p, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil || p < 0 || p >= MaxPartitions {
			return nil, bad("entry %d: partition %q", i, f[1])
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return nil, bad("entry %d: offset %q", i, f[2])
		}
		tp := topicPartition{topic: f[0], partition: int32(p)}
		if _, dup := m[tp]; dup {
			return nil, bad("entry %d: %s-%d listed twice", i, f[0], p)
		}
		m[tp] = off
	}
	return m, nil
}

// readCleanerCheckpoint reads the cleaner-offset-checkpoint of the store in dir: an empty map
// when there is none.
func readCleanerCheckpoint(fsy fsys.FS, dir string) (map[topicPartition]int64, error) {
	b, err := readWholeFile(fsy, filepath.Join(dir, cleanerCheckpointName), maxCheckpointBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[topicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeOffsetCheckpoint(b)
}

// writeCleanerCheckpoint replaces the store's cleaner-offset-checkpoint with m, atomically and
// durably (temporary file, fsync, rename, directory fsync).
func writeCleanerCheckpoint(fsy fsys.FS, dir string, m map[topicPartition]int64) error {
	return checkpoint.WriteRaw(fsy, filepath.Join(dir, cleanerCheckpointName), encodeOffsetCheckpoint(m))
}
