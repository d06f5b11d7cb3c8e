package commitlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Known topic IDs. The first three are Kafka's: Uuid.ZERO_UUID, Uuid.ONE_UUID (METADATA_TOPIC_ID)
// and the ID UuidTest parses; "cUJmH6vmRW2UJ2dGbGMkyw" is the ID of the Kafka folders of
// TestStoreAdoptsKafkaFolders. The last is new Uuid(34L, 98L) of UuidTest.testSignificantBits,
// its string worked out from Uuid.toString (the two longs big-endian, URL-safe base64 without
// padding): it pins the byte order.
var tidVectors = []struct {
	s  string
	id TopicID
}{
	{"AAAAAAAAAAAAAAAAAAAAAA", TopicID{}},
	{"AAAAAAAAAAAAAAAAAAAAAQ", TopicID{15: 1}},
	{"UXyU9i5ARn6W00ON2taeWA", TopicID{0x51, 0x7c, 0x94, 0xf6, 0x2e, 0x40, 0x46, 0x7e, 0x96, 0xd3, 0x43, 0x8d, 0xda, 0xd6, 0x9e, 0x58}},
	{"cUJmH6vmRW2UJ2dGbGMkyw", TopicID{0x71, 0x42, 0x66, 0x1f, 0xab, 0xe6, 0x45, 0x6d, 0x94, 0x27, 0x67, 0x46, 0x6c, 0x63, 0x24, 0xcb}},
	{"AAAAAAAAACIAAAAAAAAAYg", TopicID{7: 34, 15: 98}},
}

// tidKnown is the ID the file tests write.
var tidKnown = tidVectors[2].id

// TestTopicIDStringAndParse: String writes Kafka's Uuid.toString form and ParseTopicID reads it
// back, for Kafka's known IDs; ParseTopicID refuses what Uuid.fromString refuses.
func TestTopicIDStringAndParse(t *testing.T) {
	for _, v := range tidVectors {
		require.Equal(t, v.s, v.id.String())
		got, err := ParseTopicID(v.s)
		require.NoError(t, err, v.s)
		require.Equal(t, v.id, got)
		// Java's URL decoder takes the padded form too.
		got, err = ParseTopicID(v.s + "==")
		require.NoError(t, err, v.s)
		require.Equal(t, v.id, got)
	}
	require.Equal(t, metadataTopicID, tidVectors[1].id)
	// The 4 bits past the 128th are not checked, as Java's decoder does not check them.
	id, err := ParseTopicID("AAAAAAAAAAAAAAAAAAAAAB")
	require.NoError(t, err)
	require.Equal(t, TopicID{}, id)

	for _, s := range []string{
		"",
		base64.RawURLEncoding.EncodeToString(make([]byte, 32)), // UuidTest's oversize string
		base64.RawURLEncoding.EncodeToString(make([]byte, 4)),  // UuidTest's undersize string
		"UXyU9i5ARn6W00ON2taeW",                                // 21 characters
		"UXyU9i5ARn6W00ON2taeWAA",                              // 23 characters: 17 bytes
		"UXyU9i5ARn6W00ON2taeWA=",                              // half the padding
		"UXyU9i5ARn6W00ON2taeWA===",                            // longer than 24
		"UXyU9i5ARn6W00ON2ta+WA",                               // standard base64, not URL-safe
		"UXyU9i5ARn6W00ON2ta/WA",
		"UXyU9i5ARn6W00ON2ta WA",
		"not-a-uuid",
	} {
		_, err := ParseTopicID(s)
		require.ErrorIs(t, err, ErrInvalidTopicID, "%q", s)
	}
}

// TestNewTopicID: new IDs follow Kafka's Uuid.randomUuid: version 4, variant 2, never zero or
// ONE_UUID, never a string starting with '-' (drawn again then).
func TestNewTopicID(t *testing.T) {
	// Deterministic draws: the first would print "-Pj4-Pj4..." and is drawn again.
	draws := [][]byte{
		bytes.Repeat([]byte{0xf8}, 16),
		bytes.Repeat([]byte{0xff}, 16),
	}
	id := newTopicIDFrom(func(b []byte) {
		copy(b, draws[0])
		draws = draws[1:]
	})
	require.Empty(t, draws)
	want := TopicID(bytes.Repeat([]byte{0xff}, 16))
	want[6], want[8] = 0x4f, 0xbf
	require.Equal(t, want, id)
	require.Equal(t, "________T_-__________w", id.String())

	// A fill of zeros is neither zero nor ONE_UUID once the version and variant are set.
	id = newTopicIDFrom(func(b []byte) { clear(b) })
	require.Equal(t, TopicID{6: 0x40, 8: 0x80}, id)

	for range 1000 {
		id := newTopicID()
		require.NotEqual(t, TopicID{}, id)
		require.NotEqual(t, metadataTopicID, id)
		require.NotEqual(t, byte('-'), id.String()[0])
		require.Equal(t, byte(0x40), id[6]&0xf0, "version 4")
		require.Equal(t, byte(0x80), id[8]&0xc0, "variant 2")
	}
}

// TestPartitionMetadataBytes: the file is byte for byte what Kafka's PartitionMetadataFile
// writes (PartitionMetadata.encode: no newline after the ID), written through the file-system
// seam with nothing left beside it, and read back.
func TestPartitionMetadataBytes(t *testing.T) {
	want := []byte("version: 0\ntopic_id: UXyU9i5ARn6W00ON2taeWA")
	require.Equal(t, want, encodePartitionMetadata(tidKnown))
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		fsy := env.FS()
		dir := env.path("orders-0")
		require.NoError(t, fsy.MkdirAll(dir, 0o755))
		require.NoError(t, writePartitionMetadata(fsy, dir, tidKnown))
		require.Equal(t, []string{"partition.metadata"}, fsListDir(t, fsy, dir))
		require.Equal(t, want, fsReadFile(t, fsy, filepath.Join(dir, "partition.metadata")))
		id, err := readPartitionMetadata(fsy, dir)
		require.NoError(t, err)
		require.Equal(t, tidKnown, id)

		// A temporary file a crash left is removed by the read.
		fsWriteFile(t, fsy, filepath.Join(dir, "partition.metadata.tmp"), []byte("version: 0\n"))
		id, err = readPartitionMetadata(fsy, dir)
		require.NoError(t, err)
		require.Equal(t, tidKnown, id)
		require.Equal(t, []string{"partition.metadata"}, fsListDir(t, fsy, dir))
	})
}

// TestDecodePartitionMetadata: the file is read by the rules of Kafka's
// PartitionMetadataReadBuffer.
func TestDecodePartitionMetadata(t *testing.T) {
	const id = "UXyU9i5ARn6W00ON2taeWA"
	for _, s := range []string{
		"version: 0\ntopic_id: " + id,
		"version: 0\ntopic_id: " + id + "\n", // what PartitionMetadataReadBufferTest reads
		"version: 0\r\ntopic_id: " + id + "\r\n",
		"version: 0\rtopic_id: " + id,
		"version:   0\ntopic_id:\t" + id,
		"version: 1\ntopic_id: " + id, // a later version: Kafka reads it, for a downgrade
		"version: +0\ntopic_id: " + id,
		"version: 0\ntopic_id: " + id + "==",
		"version: 0\ntopic_id: " + id + "\nwhatever follows\n",
	} {
		got, err := decodePartitionMetadata([]byte(s))
		require.NoError(t, err, "%q", s)
		require.Equal(t, tidKnown, got, "%q", s)
	}
	for _, s := range []string{
		"",
		"version: 0\n",
		"version: 0",
		"version: 0\ntopic_id: not-a-uuid\n",
		"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", // the zero ID
		"version: 0\ntopic_id: \n",
		"version: 0\ntopic_id " + id,
		"version: 0\ntopic_id:" + id,
		"version: 0\n\ntopic_id: " + id,
		"version:0\ntopic_id: " + id,
		"version: -1\ntopic_id: " + id,
		"version: x\ntopic_id: " + id,
		"version: 99999999999\ntopic_id: " + id,
		"topic_id: " + id + "\nversion: 0\n",
		" version: 0\ntopic_id: " + id,
		"version: 0\ntopic: " + id,
		"version: 0\ntopic_id: " + id + "\xff",
		"commitlog-checkpoint 1\n",
	} {
		_, err := decodePartitionMetadata([]byte(s))
		require.Error(t, err, "%q", s)
	}
}

// tidFile returns the path of partition p's partition.metadata of topic in env's store.
func tidFile(env *storeEnv, topic string, p int32) string {
	return env.path(partitionDirName(topic, p), partitionMetadataFileName)
}

// tidRequireFiles checks that every partition folder of topic holds Kafka's bytes for id.
func tidRequireFiles(t *testing.T, env *storeEnv, topic string, n int32, id TopicID) {
	t.Helper()
	for p := range n {
		require.Equal(t, "version: 0\ntopic_id: "+id.String(), string(fsReadFile(t, env.FS(), tidFile(env, topic, p))), "partition %d", p)
	}
}

// TestTopicIDCreateAndReopen: CreateTopic gives a topic a random non-zero ID, written to every
// partition folder, which TopicByID finds and a reopened store keeps; each topic has its own.
func TestTopicIDCreateAndReopen(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		orders := stCreate(t, s, "orders", TopicConfig{Partitions: 3})
		users := stCreate(t, s, "users", TopicConfig{})
		id := orders.ID()
		require.NotEqual(t, TopicID{}, id)
		require.NotEqual(t, id, users.ID())
		tidRequireFiles(t, env, "orders", 3, id)
		tidRequireFiles(t, env, "users", 1, users.ID())
		got, err := s.TopicByID(id)
		require.NoError(t, err)
		require.Same(t, orders, got)
		require.NoError(t, orders.Append(context.Background(), &Record{Key: []byte("k"), Value: []byte("v"), Timestamp: stEpoch}))
		before := env.tree(t)
		require.NoError(t, s.Close())

		s, err = env.open()
		require.NoError(t, err)
		defer s.Close()
		orders, err = s.Topic("orders")
		require.NoError(t, err)
		require.Equal(t, id, orders.ID())
		got, err = s.TopicByID(id)
		require.NoError(t, err)
		require.Same(t, orders, got)
		got, err = s.TopicByID(users.ID())
		require.NoError(t, err)
		require.Equal(t, "users", got.Name())
		// The files that agree are not rewritten.
		after := env.tree(t)
		for p := range int32(3) {
			name := partitionDirName("orders", p) + "/" + partitionMetadataFileName
			require.Equal(t, before[name], after[name])
		}
	})
}

// TestTopicIDMissingFiles: a partition folder without partition.metadata is given the topic's ID;
// a topic with the file nowhere (made before topic IDs) is given a new ID, written everywhere and
// kept from then on.
func TestTopicIDMissingFiles(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		id := stCreate(t, s, "orders", TopicConfig{Partitions: 3}).ID()
		require.NoError(t, s.Close())

		require.NoError(t, env.FS().Remove(tidFile(env, "orders", 0)))
		require.NoError(t, env.FS().Remove(tidFile(env, "orders", 2)))
		s, err = env.open()
		require.NoError(t, err)
		tp, err := s.Topic("orders")
		require.NoError(t, err)
		require.Equal(t, id, tp.ID(), "partition 1's")
		tidRequireFiles(t, env, "orders", 3, id)
		require.NoError(t, s.Close())

		for p := range int32(3) {
			require.NoError(t, env.FS().Remove(tidFile(env, "orders", p)))
		}
		s, err = env.open()
		require.NoError(t, err)
		tp, err = s.Topic("orders")
		require.NoError(t, err)
		fresh := tp.ID()
		require.NotEqual(t, TopicID{}, fresh)
		require.NotEqual(t, id, fresh)
		tidRequireFiles(t, env, "orders", 3, fresh)
		_, err = s.TopicByID(id)
		require.ErrorIs(t, err, ErrUnknownTopic)
		require.NoError(t, s.Close())

		s, err = env.open()
		require.NoError(t, err)
		defer s.Close()
		tp, err = s.Topic("orders")
		require.NoError(t, err)
		require.Equal(t, fresh, tp.ID())
	})
}

// TestTopicIDDisagreement: partitions whose files name different IDs take partition 0's; the
// others are rewritten, with a warning naming the ID they held.
func TestTopicIDDisagreement(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		id := stCreate(t, s, "orders", TopicConfig{Partitions: 2}).ID()
		require.NoError(t, s.Close())
		fsWriteFile(t, env.FS(), tidFile(env, "orders", 1), encodePartitionMetadata(tidKnown))

		var logs bytes.Buffer
		s, err = env.open(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
		defer s.Close()
		tp, err := s.Topic("orders")
		require.NoError(t, err)
		require.Equal(t, id, tp.ID())
		tidRequireFiles(t, env, "orders", 2, id)
		require.Contains(t, logs.String(), "level=WARN")
		require.Contains(t, logs.String(), "file_topic_id="+tidKnown.String())
		require.Contains(t, logs.String(), "topic_id="+id.String())
	})
}

// TestTopicIDCopiedFolders: a topic whose folders carry the ID of a topic opened before it (its
// folders copied under another name) is given a new ID, so that TopicByID finds one topic.
func TestTopicIDCopiedFolders(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		stCreate(t, s, "a", TopicConfig{})
		b := stCreate(t, s, "b", TopicConfig{})
		bID := b.ID()
		require.NoError(t, s.Close())
		fsWriteFile(t, env.FS(), tidFile(env, "b", 0), encodePartitionMetadata(tidKnown))
		fsWriteFile(t, env.FS(), tidFile(env, "a", 0), encodePartitionMetadata(tidKnown))

		s, err = env.open()
		require.NoError(t, err)
		defer s.Close()
		a, err := s.Topic("a")
		require.NoError(t, err)
		b, err = s.Topic("b")
		require.NoError(t, err)
		require.Equal(t, tidKnown, a.ID(), "the first by name keeps it")
		require.NotEqual(t, tidKnown, b.ID())
		require.NotEqual(t, bID, b.ID())
		tidRequireFiles(t, env, "b", 1, b.ID())
		got, err := s.TopicByID(tidKnown)
		require.NoError(t, err)
		require.Same(t, a, got)
	})
}

// TestTopicIDCorruptFile: a partition.metadata that is not Kafka's format fails Open with an
// error naming the file, and changes nothing: no file is rewritten and the records stay. With
// the file removed the store opens, the partition taking the topic's ID.
func TestTopicIDCorruptFile(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
		id := tp.ID()
		tp.SetPartitioner(ManualPartitioner())
		require.NoError(t, tp.Append(context.Background(),
			&Record{Partition: 0, Value: []byte("p0"), Timestamp: stEpoch},
			&Record{Partition: 1, Value: []byte("p1"), Timestamp: stEpoch}))
		require.NoError(t, s.Close())

		for _, bad := range []string{"version: 0\n", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "garbage"} {
			fsWriteFile(t, env.FS(), tidFile(env, "orders", 1), []byte(bad))
			before := env.tree(t)
			_, err = env.open()
			require.ErrorIs(t, err, ErrCorrupt, bad)
			require.ErrorContains(t, err, tidFile(env, "orders", 1))
			require.Equal(t, before, env.tree(t), "nothing changed")
		}

		require.NoError(t, env.FS().Remove(tidFile(env, "orders", 1)))
		s, err = env.open()
		require.NoError(t, err)
		defer s.Close()
		tp, err = s.Topic("orders")
		require.NoError(t, err)
		require.Equal(t, id, tp.ID())
		tidRequireFiles(t, env, "orders", 2, id)
		for p, v := range []string{"p0", "p1"} {
			recs := stPartitionRecords(t, tp, int32(p))
			require.Len(t, recs, 1)
			require.Equal(t, v, string(recs[0].Value))
		}
	})
}

// TestTopicByID: an unknown ID is ErrUnknownTopic; a deleted topic's ID is forgotten, and the
// topic created again under its name has another; ErrClosed after Close.
func TestTopicByID(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		_, err = s.TopicByID(tidKnown)
		require.ErrorIs(t, err, ErrUnknownTopic)
		require.ErrorContains(t, err, tidKnown.String())
		_, err = s.TopicByID(TopicID{})
		require.ErrorIs(t, err, ErrUnknownTopic)

		old := stCreate(t, s, "orders", TopicConfig{Partitions: 2}).ID()
		_, err = s.TopicByID(old)
		require.NoError(t, err)
		require.NoError(t, s.DeleteTopic("orders"))
		_, err = s.TopicByID(old)
		require.ErrorIs(t, err, ErrUnknownTopic)

		tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
		require.NotEqual(t, old, tp.ID())
		tidRequireFiles(t, env, "orders", 2, tp.ID())
		got, err := s.TopicByID(tp.ID())
		require.NoError(t, err)
		require.Same(t, tp, got)

		require.NoError(t, s.Close())
		_, err = s.TopicByID(tp.ID())
		require.ErrorIs(t, err, ErrClosed)
	})
}

// TestTopicIDInternalTopics: the coordinator's internal logs get a partition.metadata too, made
// with the logs and kept across a reopen.
func TestTopicIDInternalTopics(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open()
		require.NoError(t, err)
		p, err := s.NewProducer(ctx, ProducerConfig{})
		require.NoError(t, err)
		require.NoError(t, p.Close())
		state, offsets := s.txn.stateID, s.txn.offsetsID
		require.NotEqual(t, TopicID{}, state)
		require.NotEqual(t, TopicID{}, offsets)
		require.NotEqual(t, state, offsets)
		tidRequireFiles(t, env, transactionStateTopic, 1, state)
		tidRequireFiles(t, env, consumerOffsetsTopic, 1, offsets)
		require.NoError(t, s.Close())

		s, err = env.open()
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, state, s.txn.stateID)
		require.Equal(t, offsets, s.txn.offsetsID)
		_, err = s.TopicByID(state)
		require.ErrorIs(t, err, ErrUnknownTopic, "not a topic of the store")
	})
}

// TestTopicIDStringAlphabet: String is 22 characters of URL-safe base64, no padding.
func TestTopicIDStringAlphabet(t *testing.T) {
	for range 100 {
		s := newTopicID().String()
		require.Len(t, s, 22)
		require.Equal(t, -1, strings.IndexFunc(s, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}), s)
	}
}
