package commitlog

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TopicID is a topic's ID (KIP-516): the 16 bytes of Kafka's org.apache.kafka.common.Uuid, its
// most significant 64 bits first, each half big-endian, as the Kafka protocol sends it (the
// "uuid" field type of Metadata v10 and on, Fetch v13 and on). The zero value is Kafka's
// Uuid.ZERO_UUID, which no topic has: the protocol uses it for "no ID".
//
// A topic's ID is given at CreateTopic and kept in Kafka's file partition.metadata in every
// partition folder (see Open); a topic deleted and created again under its name gets a new one.
type TopicID [16]byte

// metadataTopicID is Kafka's Uuid.ONE_UUID (METADATA_TOPIC_ID, the KRaft metadata topic's ID),
// which, with the zero ID, Uuid.randomUuid never returns.
var metadataTopicID = TopicID{15: 1}

// String returns the ID as Kafka's Uuid.toString writes it: the 16 bytes in URL-safe base64
// without padding, 22 characters of [A-Za-z0-9_-] ("AAAAAAAAAAAAAAAAAAAAAA" for the zero ID).
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID parses an ID in the form String writes, by the rules of Kafka's Uuid.fromString:
// at most 24 characters of URL-safe base64, with or without its "==" padding, that decode to
// exactly 16 bytes (bits past the 128th are ignored, as Java's decoder ignores them). The zero ID
// parses. Anything else is an error wrapping ErrInvalidTopicID.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	if len(s) > 24 {
		return id, fmt.Errorf("%w: %q is longer than 24 characters", ErrInvalidTopicID, s[:24]+"...")
	}
	enc := base64.RawURLEncoding
	if strings.HasSuffix(s, "=") {
		enc = base64.URLEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return id, fmt.Errorf("%w: %q is not URL-safe base64: %v", ErrInvalidTopicID, s, err)
	}
	if len(b) != len(id) {
		return id, fmt.Errorf("%w: %q decodes to %d bytes, not 16", ErrInvalidTopicID, s, len(b))
	}
	copy(id[:], b)
	return id, nil
}

// newTopicID returns a random topic ID, as Kafka's Uuid.randomUuid: see newTopicIDFrom. The
// bytes come from crypto/rand.
func newTopicID() TopicID { return newTopicIDFrom(func(b []byte) { rand.Read(b) }) }

// newTopicIDFrom returns a topic ID made from the bytes fill gives, by Kafka's Uuid.randomUuid
// rules: a version 4, variant 2 (RFC 4122) UUID, as java.util.UUID.randomUUID makes (the high
// nibble of byte 6 is 4, the top two bits of byte 8 are 10), drawn again while it is one of
// Kafka's reserved IDs (zero, Uuid.ONE_UUID) or its string starts with '-', which a command-line
// tool would take for an option.
func newTopicIDFrom(fill func([]byte)) TopicID {
	for {
		var id TopicID
		fill(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id != (TopicID{}) && id != metadataTopicID && id.String()[0] != '-' {
			return id
		}
	}
}

// partitionMetadataFileName is Kafka's file of a partition's topic ID, in the partition folder
// (PartitionMetadataFile).
const partitionMetadataFileName = "partition.metadata"

// maxPartitionMetadataBytes bounds the read of a partition.metadata: the file Kafka writes is
// under 40 bytes.
const maxPartitionMetadataBytes = 64 << 10

// encodePartitionMetadata returns the bytes of the partition.metadata of a topic of ID id, byte
// for byte what Kafka's PartitionMetadataFile writes (PartitionMetadata.encode, version 0):
// "version: 0\ntopic_id: <id>", with no newline after the ID.
func encodePartitionMetadata(id TopicID) []byte {
	return []byte("version: 0\ntopic_id: " + id.String())
}

// decodePartitionMetadata returns the topic ID of a partition.metadata's bytes, read by the
// rules of Kafka's PartitionMetadataReadBuffer: a first line "version" then ':', whitespace and a
// decimal int32 of at least 0 (a version above 0 is read as 0 is, as Kafka reads it, for a
// downgrade); a second line "topic_id", ':', whitespace and an ID that ParseTopicID takes and that
// is not zero. Lines end at "\n", "\r" or "\r\n" (Java's readLine); what follows the second line is
// not read. The file must be UTF-8. Any other file is an error saying what is wrong (the caller
// names the file).
func decodePartitionMetadata(b []byte) (TopicID, error) {
	if !utf8.Valid(b) {
		return TopicID{}, errors.New("not UTF-8")
	}
	rest := string(b)
	line := func() (string, bool) {
		if rest == "" {
			return "", false
		}
		i := strings.IndexAny(rest, "\r\n")
		if i < 0 {
			l := rest
			rest = ""
			return l, true
		}
		l := rest[:i]
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			i++
		}
		rest = rest[i+1:]
		return l, true
	}
	field := func(key string) (string, error) {
		l, ok := line()
		if !ok {
			return "", fmt.Errorf("no %q line", key)
		}
		k, v, ok := splitMetadataLine(l)
		if !ok || k != key {
			return "", fmt.Errorf("malformed line %q, want %q", l, key+": <value>")
		}
		return v, nil
	}
	v, err := field("version")
	if err != nil {
		return TopicID{}, err
	}
	version, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return TopicID{}, fmt.Errorf("malformed version %q", v)
	}
	if version < 0 {
		return TopicID{}, fmt.Errorf("unrecognized version %d", version)
	}
	v, err = field("topic_id")
	if err != nil {
		return TopicID{}, err
	}
	id, err := ParseTopicID(v)
	if err != nil {
		return TopicID{}, fmt.Errorf("malformed topic_id: %w", err)
	}
	if id == (TopicID{}) {
		return TopicID{}, fmt.Errorf("invalid topic ID %s (zero)", id)
	}
	return id, nil
}

// splitMetadataLine splits a line of a partition.metadata as Kafka's pattern ":\s+" split with a
// limit of 2 does: at the first ':' followed by whitespace, the whitespace run dropped. ok is
// false when the line has no such ':'.
func splitMetadataLine(l string) (key, value string, ok bool) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' } // Java's \s within a line
	for i := 0; i+1 < len(l); i++ {
		if l[i] == ':' && isSpace(l[i+1]) {
			j := i + 1
			for j < len(l) && isSpace(l[j]) {
				j++
			}
			return l[:i], l[j:], true
		}
	}
	return "", "", false
}

// writePartitionMetadata writes the partition.metadata of the partition folder dir, saying topic
// ID id, in Kafka's bytes (encodePartitionMetadata), atomically and durably as Kafka's
// PartitionMetadataFile.maybeFlush does: "partition.metadata.tmp" written and fsynced, renamed
// over the file, and the folder fsynced (checkpoint.WriteRaw). Whatever code gives a topic a new
// partition folder calls it before the folder takes records.
func writePartitionMetadata(fsy fsys.FS, dir string, id TopicID) error {
	path := filepath.Join(dir, partitionMetadataFileName)
	if err := checkpoint.WriteRaw(fsy, path, encodePartitionMetadata(id)); err != nil {
		return fmt.Errorf("commitlog: write %s: %w", path, err)
	}
	return nil
}

// readPartitionMetadata returns the topic ID in the partition.metadata of the partition folder
// dir. A missing file (or folder) is an error wrapping fs.ErrNotExist; one that does not decode,
// or is larger than maxPartitionMetadataBytes, wraps ErrCorrupt and names the file. A
// "partition.metadata.tmp" left by a write a crash stopped is removed.
func readPartitionMetadata(fsy fsys.FS, dir string) (TopicID, error) {
	path := filepath.Join(dir, partitionMetadataFileName)
	fsy.Remove(path + checkpoint.TempSuffix)
	b, err := readWholeFile(fsy, path, maxPartitionMetadataBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
			return TopicID{}, err
		}
		return TopicID{}, fmt.Errorf("commitlog: read %s: %w", path, err)
	}
	id, err := decodePartitionMetadata(b)
	if err != nil {
		return TopicID{}, fmt.Errorf("%w: %s: not a partition.metadata of Kafka's format: %v "+
			"(once the file is removed, the next Open gives the partition the ID of the topic's other partitions, or a new one)",
			ErrCorrupt, path, err)
	}
	return id, nil
}

// readTopicIDs reads the partition.metadata of each of a topic's partition folders dirs (partition
// i in dirs[i]): the ID each holds, zero where the file (or the folder) is missing. Nothing is
// written: a file that cannot be read fails it (readPartitionMetadata's error) before any file of
// the topic is changed.
func readTopicIDs(fsy fsys.FS, dirs []string) ([]TopicID, error) {
	ids := make([]TopicID, len(dirs))
	for i, dir := range dirs {
		id, err := readPartitionMetadata(fsy, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// pickTopicID returns the ID of a topic whose partitions' files hold ids (readTopicIDs):
// partition 0's, or when it has none the lowest partition's that has one; ok is false when no
// partition has one.
func pickTopicID(ids []TopicID) (id TopicID, ok bool) {
	for _, id := range ids {
		if id != (TopicID{}) {
			return id, true
		}
	}
	return TopicID{}, false
}

// settleTopicID makes every partition folder of topic (partition i in dirs[i], whose files held
// had, as readTopicIDs read them) say id: a missing file is written (logged at Info when another
// partition's file holds id; a new ID is the caller's to log), and a file holding another ID is
// rewritten, logged at Warn with the ID it held. Files that say id already are not touched.
func settleTopicID(fsy fsys.FS, logger *slog.Logger, topic string, dirs []string, had []TopicID, id TopicID) error {
	known := slices.Contains(had, id)
	for i, dir := range dirs {
		switch had[i] {
		case id:
			continue
		case TopicID{}:
			if !known {
				break
			}
			logger.Info("partition.metadata missing; written with the topic's ID", "topic", topic, "partition", i, "topic_id", id.String(), "folder", dir)
		default:
			logger.Warn("partition.metadata names another topic ID than the topic's; rewritten with the topic's",
				"topic", topic, "partition", i, "file_topic_id", had[i].String(), "topic_id", id.String(), "file", filepath.Join(dir, partitionMetadataFileName))
		}
		if err := writePartitionMetadata(fsy, dir, id); err != nil {
			return err
		}
	}
	return nil
}

// partitionDirs returns the folders of the n partitions of topic name in the store's directory.
func (s *Store) partitionDirs(name string, n int32) []string {
	dirs := make([]string, n)
	for p := range n {
		dirs[p] = filepath.Join(s.dir, partitionDirName(name, p))
	}
	return dirs
}

// loadTopicID gives the opened topic t the ID its partition folders hold (had, read with
// readTopicIDs before its logs opened), by the rules Open documents: partition 0's (or the lowest
// partition's that has one), a new one when none has one or when another topic of the store
// already has it (folders copied under another name); then every folder is made to say it
// (settleTopicID) and the store's index of IDs takes it. Called by load, which owns the store
// alone.
func (s *Store) loadTopicID(t *Topic, had []TopicID) error {
	id, ok := pickTopicID(had)
	old := id
	switch {
	case !ok:
		id = s.unusedTopicID()
		s.o.logger.Info("topic has no topic ID (no partition.metadata); given a new one", "topic", t.name, "topic_id", id.String())
	case s.byID[id] != nil:
		other := s.byID[id].name
		id = s.unusedTopicID()
		s.o.logger.Warn("topic has the topic ID of another topic (folders copied?); given a new one",
			"topic", t.name, "other_topic", other, "old_topic_id", old.String(), "topic_id", id.String())
	}
	if err := settleTopicID(s.o.fs, s.o.logger, t.name, s.partitionDirs(t.name, t.PartitionCount()), had, id); err != nil {
		return err
	}
	t.id = id
	s.byID[id] = t
	return nil
}

// unusedTopicID returns a new random topic ID that no topic of the store has. Callers hold mu
// (or own s alone).
func (s *Store) unusedTopicID() TopicID {
	for {
		if id := newTopicID(); s.byID[id] == nil {
			return id
		}
	}
}

// ID returns the topic's ID (Kafka's topic ID, KIP-516), fixed for the topic's life and kept in
// every partition folder's partition.metadata. Never zero.
func (t *Topic) ID() TopicID { return t.id }

// TopicByID returns the topic whose ID is id, or ErrUnknownTopic, naming the ID, when the store
// holds none (a Kafka broker answers UNKNOWN_TOPIC_ID). The internal topics (__transaction_state,
// __consumer_offsets) are not topics of the store and are not found. ErrClosed after Close.
func (s *Store) TopicByID(id TopicID) (*Topic, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: no topic has ID %s", ErrUnknownTopic, id)
	}
	return t, nil
}
