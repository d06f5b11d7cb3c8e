package commitlog

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// Helpers of the Store, Topic, Partition and Reader tests. Their names begin with "st" so that
// they stay clear of the helpers of the log tests in the same package.

// stEpoch is the record time of these tests (ms precision survives the log unchanged).
var stEpoch = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// stOpen opens a store in dir; it is closed at the end of the test.
func stOpen(t *testing.T, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// stCreate creates a topic and returns it.
func stCreate(t *testing.T, s *Store, name string, cfg TopicConfig) *Topic {
	t.Helper()
	tp, err := s.CreateTopic(name, cfg)
	require.NoError(t, err)
	return tp
}

// stReader opens a reader; it is closed at the end of the test.
func stReader(t *testing.T, tp *Topic, cfg ReaderConfig) *Reader {
	t.Helper()
	r, err := tp.NewReader(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// stNext returns the reader's next record, failing the test when none comes within 5 s.
func stNext(t *testing.T, r *Reader) *Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := r.Next(ctx)
	require.NoError(t, err)
	require.NotNil(t, rec)
	return rec
}

// stNextN returns the reader's next n records.
func stNextN(t *testing.T, r *Reader, n int) []*Record {
	t.Helper()
	recs := make([]*Record, 0, n)
	for range n {
		recs = append(recs, stNext(t, r))
	}
	return recs
}

// stRequireIdle checks that the reader has nothing to return: Next blocks until its context ends.
func stRequireIdle(t *testing.T, r *Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec, err := r.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Nil(t, rec)
}

// stSeen is what a reader saw of a record: where it was and what it held.
type stSeen struct {
	Partition int32
	Offset    int64
	Value     string
}

func stSeenOf(recs []*Record) []stSeen {
	out := make([]stSeen, len(recs))
	for i, r := range recs {
		out[i] = stSeen{r.Partition, r.Offset, string(r.Value)}
	}
	return out
}

// stRecs returns records with the given values, no key, timestamps stEpoch + i s.
func stRecs(values ...string) []*Record {
	out := make([]*Record, len(values))
	for i, v := range values {
		out[i] = &Record{Value: []byte(v), Timestamp: stEpoch.Add(time.Duration(i) * time.Second)}
	}
	return out
}

// stTree returns every path under root (relative, "/"-separated) with its kind and, for regular
// files, its contents; symbolic links are listed with their target and not followed.
func stTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out[rel] = "symlink -> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = "file " + string(b)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// stEntries returns the names in dir, sorted.
func stEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// stPartitionRecords returns every record of partition id, in offset order.
func stPartitionRecords(t *testing.T, tp *Topic, id int32) []*Record {
	t.Helper()
	p, err := tp.Partition(id)
	require.NoError(t, err)
	var out []*Record
	for off := p.LogStartOffset(); off < p.HighWatermark(); {
		recs, err := p.ReadRecords(off, 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, recs)
		out = append(out, recs...)
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

// TestStoreTopicConfigPersisted: a topic's configuration is stored with it and used again when the
// store reopens; zero fields take Kafka's defaults.
func TestStoreTopicConfigPersisted(t *testing.T) {
	defaults := LogConfig{
		SegmentBytes: DefaultSegmentBytes, SegmentDuration: DefaultSegmentDuration,
		SegmentIndexBytes: DefaultSegmentIndexBytes, IndexIntervalBytes: DefaultIndexIntervalBytes,
		MaxMessageBytes: DefaultMaxMessageBytes, TimestampType: CreateTime,
		Compression: CompressionNone, Sync: SyncAlways,
		RetentionDuration: DefaultRetentionDuration, RetentionBytes: -1,
		FileDeleteDelay: DefaultFileDeleteDelay, TimestampAfterMax: DefaultTimestampAfterMax,
		MinInsyncReplicas: 1, MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio, DeleteRetention: DefaultDeleteRetention,
	}
	custom := LogConfig{
		SegmentBytes: 1 << 20, SegmentDuration: 3 * time.Hour, SegmentIndexBytes: 64 << 10,
		IndexIntervalBytes: 512, MaxMessageBytes: 100_000, TimestampType: LogAppendTime,
		Compression: CompressionZstd, Sync: SyncNever,
		RetentionDuration: -1, RetentionBytes: 1 << 30, FileDeleteDelay: -1, TimestampAfterMax: 5 * time.Minute,
		MinInsyncReplicas: 1, MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio, DeleteRetention: DefaultDeleteRetention,
	}
	appendTime := time.UnixMilli(1_714_557_600_123)
	clock := func() time.Time { return appendTime }
	tests := []struct {
		name      string
		cfg       TopicConfig
		want      TopicConfig
		codec     recordbatch.Codec
		appendTS  bool // LogAppendTime: records carry the log's clock
		tsOfFirst time.Time
	}{
		{"defaults", TopicConfig{}, TopicConfig{Partitions: 1, LogConfig: defaults}, recordbatch.CodecNone, false, stEpoch},
		{"custom", TopicConfig{Partitions: 3, LogConfig: custom}, TopicConfig{Partitions: 3, LogConfig: custom}, recordbatch.CodecZstd, true, appendTime},
		{"gzip-create-time", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 4096, Compression: CompressionGzip}},
			TopicConfig{Partitions: 2, LogConfig: func() LogConfig {
				c := defaults
				c.SegmentBytes, c.Compression = 4096, CompressionGzip
				return c
			}()}, recordbatch.CodecGzip, false, stEpoch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s, err := env.open(WithClock(clock))
				require.NoError(t, err)
				tp, err := s.CreateTopic("orders", tc.cfg)
				require.NoError(t, err)
				require.Equal(t, tc.want, tp.Config())
				require.Equal(t, tc.want.Partitions, tp.PartitionCount())
				p0, err := tp.Partition(0)
				require.NoError(t, err)
				require.NoError(t, p0.Append(ctx, stRecs("a", "b")...))
				require.NoError(t, s.Close())

				s = env.mustOpen(t, WithClock(clock))
				require.Equal(t, []string{"orders"}, s.Topics())
				tp, err = s.Topic("orders")
				require.NoError(t, err)
				require.Equal(t, tc.want, tp.Config())
				require.Equal(t, tc.want.Partitions, tp.PartitionCount())
				p0, err = tp.Partition(0)
				require.NoError(t, err)
				require.NoError(t, p0.Append(ctx, stRecs("c")...))

				// Both batches, the one before and the one after the reopen, were encoded under the
				// stored config.
				raw, err := p0.ReadBatches(nil, 0, 1<<20)
				require.NoError(t, err)
				var bases []int64
				for pos := 0; pos < len(raw); {
					h, err := recordbatch.ParseHeader(raw[pos:], 0)
					require.NoError(t, err)
					require.Equal(t, tc.codec, h.Attributes.Codec(), "batch at %d", h.BaseOffset)
					require.Equal(t, tc.appendTS, h.Attributes.LogAppendTime(), "batch at %d", h.BaseOffset)
					bases = append(bases, h.BaseOffset)
					pos += h.Size()
				}
				require.Equal(t, []int64{0, 2}, bases)
				recs := stPartitionRecords(t, tp, 0)
				require.Equal(t, []stSeen{{0, 0, "a"}, {0, 1, "b"}, {0, 2, "c"}}, stSeenOf(recs))
				require.Equal(t, tc.tsOfFirst.UnixMilli(), recs[0].Timestamp.UnixMilli())
			})
		})
	}
}

// TestStoreTopicErrors: unknown topics and partitions, duplicate and invalid creations.
func TestStoreTopicErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2})

		_, err := s.Topic("payments")
		require.ErrorIs(t, err, ErrUnknownTopic)
		require.ErrorIs(t, s.DeleteTopic("payments"), ErrUnknownTopic)
		for _, id := range []int32{-1, 2, 100} {
			_, err := tp.Partition(id)
			require.ErrorIs(t, err, ErrUnknownTopic, "partition %d", id)
		}
		_, err = tp.NewReader(ReaderConfig{Partitions: []int32{0, 2}})
		require.ErrorIs(t, err, ErrUnknownTopic)

		_, err = s.CreateTopic("orders", TopicConfig{Partitions: 2})
		require.ErrorIs(t, err, ErrTopicExists)
		_, err = s.CreateTopic("orders", TopicConfig{Partitions: 5})
		require.ErrorIs(t, err, ErrTopicExists)

		for _, cfg := range []TopicConfig{
			{Partitions: -1},
			{LogConfig: LogConfig{SegmentBytes: 10}},
			{LogConfig: LogConfig{TimestampType: 7}},
			{LogConfig: LogConfig{Compression: 9}},
		} {
			_, err := s.CreateTopic("invalid", cfg)
			require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
		}
		require.Equal(t, []string{"orders"}, s.Topics())
		require.False(t, fsExists(t, env.FS(), filepath.Join(s.Dir(), "invalid-0")))

		got, err := s.Topic("orders")
		require.NoError(t, err)
		require.Same(t, tp, got)
	})
}

// TestStoreDeleteTopic: the folders go, readers of the topic get ErrClosed, and a reopen does not
// bring the topic back; a delete that a crash interrupted is finished on the next open.
func TestStoreDeleteTopic(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open(WithSync(SyncNever))
		require.NoError(t, err)
		orders := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
		keep := stCreate(t, s, "keep", TopicConfig{})
		require.NoError(t, orders.Append(ctx, stRecs("o1", "o2", "o3")...))
		require.NoError(t, keep.Append(ctx, stRecs("k1")...))

		named, err := orders.NewReader(ReaderConfig{Name: "loader", Start: Latest})
		require.NoError(t, err)
		anon, err := orders.NewReader(ReaderConfig{Start: Latest})
		require.NoError(t, err)
		type result struct {
			rec *Record
			err error
		}
		blocked := make(chan result, 2)
		for _, r := range []*Reader{named, anon} {
			go func() {
				rec, err := r.Next(ctx)
				blocked <- result{rec, err}
			}()
		}
		time.Sleep(20 * time.Millisecond) // let both block

		require.NoError(t, s.DeleteTopic("orders"))
		for range 2 {
			select {
			case res := <-blocked:
				require.ErrorIs(t, res.err, ErrClosed)
				require.Nil(t, res.rec)
			case <-time.After(30 * time.Second):
				t.Fatal("a Next blocked on a deleted topic did not return") // a hang, not a slow machine
			}
		}
		_, err = named.Next(ctx)
		require.ErrorIs(t, err, ErrClosed)
		_, err = orders.NewReader(ReaderConfig{Start: Earliest})
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, orders.Append(ctx, stRecs("late")...), ErrClosed)
		_, err = s.Topic("orders")
		require.ErrorIs(t, err, ErrUnknownTopic)
		require.ErrorIs(t, s.DeleteTopic("orders"), ErrUnknownTopic)
		require.Equal(t, []string{"keep"}, s.Topics())
		for _, e := range env.entries(t) {
			require.False(t, strings.HasPrefix(e, "orders-"), "left behind: %s", e)
		}
		require.NoError(t, named.Close())
		require.NoError(t, anon.Close())
		require.NoError(t, s.Close())

		// A delete interrupted after the rename: the "-delete" folder is removed on open.
		require.NoError(t, env.FS().MkdirAll(env.path("gone-0-delete"), 0o755))
		fsWriteFile(t, env.FS(), env.path("gone-0-delete", segmentName(0)+".log"), []byte("x"))

		s = env.mustOpen(t, WithSync(SyncNever))
		require.Equal(t, []string{"keep"}, s.Topics())
		require.False(t, fsExists(t, env.FS(), env.path("gone-0-delete")))
		_, err = s.Topic("orders")
		require.ErrorIs(t, err, ErrUnknownTopic)
		keep, err = s.Topic("keep")
		require.NoError(t, err)
		require.Equal(t, []stSeen{{0, 0, "k1"}}, stSeenOf(stPartitionRecords(t, keep, 0)))

		// The name is free again, and the new topic starts empty.
		orders = stCreate(t, s, "orders", TopicConfig{Partitions: 1})
		p0, err := orders.Partition(0)
		require.NoError(t, err)
		require.Equal(t, int64(0), p0.LogEndOffset())
		require.NoError(t, orders.Append(ctx, stRecs("new")...))
		require.Equal(t, []stSeen{{0, 0, "new"}}, stSeenOf(stPartitionRecords(t, orders, 0)))
	})
}

// TestStoreCloseWakesReaders: closing a reader or the store wakes every blocked Next with
// ErrClosed within a second, and every method called afterwards returns ErrClosed.
func TestStoreCloseWakesReaders(t *testing.T) {
	tests := []struct {
		name       string
		closeStore bool
	}{
		{"reader-close", false},
		{"store-close", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s, err := env.open(WithSync(SyncNever))
				require.NoError(t, err)
				defer s.Close()
				tp := stCreate(t, s, "orders", TopicConfig{Partitions: 3})
				require.NoError(t, tp.Append(ctx, stRecs("a", "b")...))
				named, err := tp.NewReader(ReaderConfig{Name: "fraud", Start: Latest})
				require.NoError(t, err)
				anon, err := tp.NewReader(ReaderConfig{Start: Latest})
				require.NoError(t, err)

				// Two goroutines block on each reader.
				type result struct {
					rec *Record
					err error
				}
				results := make(chan result, 4)
				for _, r := range []*Reader{named, anon, named, anon} {
					go func() {
						rec, err := r.Next(ctx)
						results <- result{rec, err}
					}()
				}
				time.Sleep(20 * time.Millisecond)
				if tc.closeStore {
					require.NoError(t, s.Close())
				} else {
					require.NoError(t, named.Close())
					require.NoError(t, anon.Close())
				}
				for range 4 {
					select {
					case res := <-results:
						require.ErrorIs(t, res.err, ErrClosed)
						require.Nil(t, res.rec)
					case <-time.After(30 * time.Second):
						t.Fatal("a blocked Next did not return after Close (waited 30 s)")
					}
				}

				for _, r := range []*Reader{named, anon} {
					_, err := r.Next(ctx)
					require.ErrorIs(t, err, ErrClosed)
					require.ErrorIs(t, r.Seek(0, 0), ErrClosed)
					require.ErrorIs(t, r.SeekToTime(stEpoch), ErrClosed)
					require.ErrorIs(t, r.SeekToEarliest(), ErrClosed)
					require.ErrorIs(t, r.SeekToLatest(), ErrClosed)
					_, err = r.Position(0)
					require.ErrorIs(t, err, ErrClosed)
					for rec, err := range r.Records(ctx) {
						require.Nil(t, rec)
						require.ErrorIs(t, err, ErrClosed)
					}
					require.NoError(t, r.Close(), "a second Close returns nil")
				}
				require.ErrorIs(t, named.Commit(ctx), ErrClosed)

				// The name is free once its reader closed (while the store is open).
				if !tc.closeStore {
					again, err := tp.NewReader(ReaderConfig{Name: "fraud", Start: Earliest})
					require.NoError(t, err)
					require.Equal(t, []stSeen{{0, 0, "a"}, {0, 1, "b"}}, stSeenOf(stNextN(t, again, 2)))
					require.NoError(t, again.Close())
					require.NoError(t, s.Close())
				}

				// After the store closed: every method says ErrClosed, none panics.
				_, err = s.Topic("orders")
				require.ErrorIs(t, err, ErrClosed)
				_, err = s.CreateTopic("other", TopicConfig{})
				require.ErrorIs(t, err, ErrClosed)
				require.ErrorIs(t, s.DeleteTopic("orders"), ErrClosed)
				require.ErrorIs(t, s.DeleteReader("fraud"), ErrClosed)
				_, err = s.Readers()
				require.ErrorIs(t, err, ErrClosed)
				_, err = s.CommittedPositions("fraud")
				require.ErrorIs(t, err, ErrClosed)
				_, err = tp.NewReader(ReaderConfig{})
				require.ErrorIs(t, err, ErrClosed)
				require.ErrorIs(t, tp.Append(ctx, stRecs("late")...), ErrClosed)
				p0, err := tp.Partition(0)
				require.NoError(t, err)
				require.ErrorIs(t, p0.Append(ctx, stRecs("late")...), ErrClosed)
				_, err = p0.ReadBatches(nil, 0, 1<<20)
				require.ErrorIs(t, err, ErrClosed)
				_, err = p0.ReadRecords(0, 1<<20)
				require.ErrorIs(t, err, ErrClosed)
				_, err = p0.OffsetForTime(stEpoch)
				require.ErrorIs(t, err, ErrClosed)
				require.ErrorIs(t, p0.TruncateTo(0), ErrClosed)
				require.NoError(t, s.Close(), "a second Close returns nil")
			})
		})
	}
}

// TestStoreDirectoryLock: a second Open of the directory gets ErrLocked until the first closes.
func TestStoreDirectoryLock(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s, err := env.open()
		require.NoError(t, err)
		stCreate(t, s, "orders", TopicConfig{})
		before := env.tree(t)

		s2, err := env.open()
		require.ErrorIs(t, err, ErrLocked)
		require.Nil(t, s2)
		require.Equal(t, before, env.tree(t), "a refused Open changes nothing")

		require.NoError(t, s.Close())
		s2 = env.mustOpen(t)
		require.Equal(t, []string{"orders"}, s2.Topics())
	})
}

// TestStoreSymlinkPartitionFolder: a partition folder that is a symbolic link leading out of the
// store is never opened, written or created through.
//
// File store only: symbolic links exist on a real disk only; the memory file system has none.
func TestStoreSymlinkPartitionFolder(t *testing.T) {
	tests := []struct {
		name string
		// prepare fills dir and returns the folder the link must lead to (outside dir).
		prepare func(t *testing.T, dir, outside string)
	}{
		{"folder-without-config", func(t *testing.T, dir, outside string) {
			l, err := OpenLog(outside, LogConfig{SegmentIndexBytes: 4096})
			require.NoError(t, err)
			require.NoError(t, l.Append(context.Background(), stRecs("outside")...))
			require.NoError(t, l.Close())
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "orders-0")))
		}},
		{"configured-topic", func(t *testing.T, dir, outside string) {
			s, err := Open(dir, WithSync(SyncNever))
			require.NoError(t, err)
			tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentIndexBytes: 4096}})
			p1, err := tp.Partition(1)
			require.NoError(t, err)
			require.NoError(t, p1.Append(context.Background(), stRecs("inside")...))
			require.NoError(t, s.Close())
			// The folder is moved out and a link left in its place.
			require.NoError(t, os.Rename(filepath.Join(dir, "orders-1"), outside))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "orders-1")))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir, outside := filepath.Join(root, "store"), filepath.Join(root, "outside")
			tc.prepare(t, dir, outside)
			outsideBefore := stTree(t, outside)

			s := stOpen(t, dir, WithSync(SyncNever))
			require.Empty(t, s.Topics())
			_, err := s.Topic("orders")
			require.ErrorIs(t, err, ErrUnknownTopic)
			_, err = s.CreateTopic("orders", TopicConfig{Partitions: 2})
			require.ErrorIs(t, err, ErrInvalidTopicName)
			require.Empty(t, s.Topics())

			// Other topics are served.
			other := stCreate(t, s, "other", TopicConfig{})
			require.NoError(t, other.Append(context.Background(), stRecs("x")...))
			require.Equal(t, []stSeen{{0, 0, "x"}}, stSeenOf(stPartitionRecords(t, other, 0)))
			require.Equal(t, outsideBefore, stTree(t, outside))
			require.NoError(t, s.Close())
			require.Equal(t, outsideBefore, stTree(t, outside), "nothing written outside the store")
			require.Equal(t, []string{"outside", "store"}, stEntries(t, root))
		})
	}
}

// TestStoreAdoptsKafkaFolders: partition folders written without a store configuration, beside
// Kafka's own files, open as a topic with the default configuration; Kafka's files are left
// byte for byte as they were.
//
// File store only: it is about folders a broker or another tool left on disk, which an in-memory
// store, empty at every OpenInMemory, never meets.
func TestStoreAdoptsKafkaFolders(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	want := map[int32][]stSeen{
		0: {{0, 0, "order-1"}, {0, 1, "order-2"}, {0, 2, "order-3"}},
		1: {{1, 0, "order-4"}, {1, 1, "order-5"}},
	}
	for p, seen := range want {
		l, err := OpenLog(filepath.Join(dir, partitionDirName("orders", p)), LogConfig{})
		require.NoError(t, err)
		for _, sn := range seen {
			require.NoError(t, l.Append(ctx, &Record{Key: []byte("cart"), Value: []byte(sn.Value), Timestamp: stEpoch}))
		}
		require.NoError(t, l.Close())
	}
	kafkaFiles := map[string][]byte{
		"meta.properties": []byte("#\n#Wed May 01 10:00:00 UTC 2024\n" +
			"cluster.id=q1Sh-9_ISia_zwGINzRvyQ\nnode.id=1\ndirectory.id=7Eq5Y3IWTkS3J1jHkSL-Kg\nversion=1\n"),
		"recovery-point-offset-checkpoint":       []byte("0\n2\norders 0 3\norders 1 2\n"),
		"replication-offset-checkpoint":          []byte("0\n2\norders 0 3\norders 1 2\n"),
		"log-start-offset-checkpoint":            []byte("0\n2\norders 0 0\norders 1 0\n"),
		"cleaner-offset-checkpoint":              []byte("0\n0\n"),
		".kafka_cleanshutdown":                   []byte(`{"version":0,"brokerEpoch":42}`),
		"orders-0/partition.metadata":            []byte("version: 0\ntopic_id: cUJmH6vmRW2UJ2dGbGMkyw\n"),
		"orders-1/partition.metadata":            []byte("version: 0\ntopic_id: cUJmH6vmRW2UJ2dGbGMkyw\n"),
		"orders-0/leader-epoch-checkpoint":       []byte("0\n1\n0 0\n"),
		"orders-1/leader-epoch-checkpoint":       []byte("0\n1\n0 0\n"),
		"orders-0/00000000000000000000.snapshot": {0, 1, 0x9c, 0x41, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
		"orders-1/00000000000000000000.snapshot": {0, 1, 0x11, 0x22, 0x33, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	}
	for name, b := range kafkaFiles {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	// Kafka's recovery points, log start offsets and clean shutdown marker are the store's own
	// (log_dir_checkpoints.go): read at open, the marker removed once the logs are open, all
	// written at close. Every other file of Kafka's is left as it is.
	storeOwned := map[string]bool{recoveryPointCheckpointName: true, logStartCheckpointName: true, cleanShutdownName: true}
	requireKafkaFiles := func() {
		t.Helper()
		for name, b := range kafkaFiles {
			if storeOwned[name] {
				continue
			}
			got, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err, name)
			require.Equal(t, b, got, name)
		}
	}

	s, err := Open(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, s.Topics())
	tp, err := s.Topic("orders")
	require.NoError(t, err)
	require.Equal(t, TopicConfig{Partitions: 2, LogConfig: LogConfig{
		SegmentBytes: DefaultSegmentBytes, SegmentDuration: DefaultSegmentDuration,
		SegmentIndexBytes: DefaultSegmentIndexBytes, IndexIntervalBytes: DefaultIndexIntervalBytes,
		MaxMessageBytes: DefaultMaxMessageBytes, Sync: SyncAlways,
		RetentionDuration: DefaultRetentionDuration, RetentionBytes: -1,
		FileDeleteDelay: DefaultFileDeleteDelay, TimestampAfterMax: DefaultTimestampAfterMax,
		MinInsyncReplicas: 1, MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio, DeleteRetention: DefaultDeleteRetention,
	}}, tp.Config())
	// The topic ID is Kafka's, from its partition.metadata (whose trailing newline Kafka's reader
	// takes).
	require.Equal(t, "cUJmH6vmRW2UJ2dGbGMkyw", tp.ID().String())
	requireKafkaFiles()
	for p, seen := range want {
		require.Equal(t, seen, stSeenOf(stPartitionRecords(t, tp, p)))
	}
	r := stReader(t, tp, ReaderConfig{Start: Earliest})
	require.Equal(t, []stSeen{want[0][0], want[1][0], want[0][1], want[1][1], want[0][2]}, stSeenOf(stNextN(t, r, 5)))
	stRequireIdle(t, r)
	require.NoError(t, r.Close())
	// New records go on after Kafka's.
	require.NoError(t, tp.Append(ctx, &Record{Key: []byte("cart"), Value: []byte("order-6"), Timestamp: stEpoch}))
	require.NoError(t, s.Close())
	requireKafkaFiles()
	rp, err := os.ReadFile(filepath.Join(dir, recoveryPointCheckpointName))
	require.NoError(t, err)
	require.Contains(t, []string{"0\n2\norders 0 4\norders 1 2\n", "0\n2\norders 0 3\norders 1 3\n"}, string(rp))
	require.FileExists(t, filepath.Join(dir, cleanShutdownName))

	// Reopened, the adopted topic keeps its configuration and records.
	s = stOpen(t, dir)
	tp, err = s.Topic("orders")
	require.NoError(t, err)
	require.Equal(t, int32(2), tp.PartitionCount())
	total := len(stPartitionRecords(t, tp, 0)) + len(stPartitionRecords(t, tp, 1))
	require.Equal(t, 6, total)
	requireKafkaFiles()
}

// TestStoreRestartResumesCommittedPositions: a named reader's commit survives the store closing;
// reopened under the same name it returns exactly the records after its commit, whatever its
// configured start.
func TestStoreRestartResumesCommittedPositions(t *testing.T) {
	tests := []struct {
		name  string
		start ReaderConfig
	}{
		{"start-latest", ReaderConfig{Name: "loader", Start: Latest}},
		{"start-earliest", ReaderConfig{Name: "loader", Start: Earliest}},
		{"start-offset", ReaderConfig{Name: "loader", Start: AtOffset, StartOffset: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s, err := env.open()
				require.NoError(t, err)
				tp := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
				tp.SetPartitioner(ManualPartitioner())
				appendTo := func(p int32, values ...string) {
					recs := stRecs(values...)
					for _, r := range recs {
						r.Partition = p
					}
					require.NoError(t, tp.Append(ctx, recs...))
				}
				appendTo(0, "p0-0", "p0-1", "p0-2", "p0-3")
				appendTo(1, "p1-0", "p1-1")

				r, err := tp.NewReader(ReaderConfig{Name: "loader", Start: Earliest})
				require.NoError(t, err)
				require.Equal(t, []stSeen{
					{0, 0, "p0-0"}, {1, 0, "p1-0"}, {0, 1, "p0-1"}, {1, 1, "p1-1"}, {0, 2, "p0-2"}, {0, 3, "p0-3"},
				}, stSeenOf(stNextN(t, r, 6)))
				require.Equal(t, map[int32]int64{0: 4, 1: 2}, r.Positions())
				require.NoError(t, r.Commit(ctx))

				appendTo(0, "p0-4", "p0-5")
				appendTo(1, "p1-2", "p1-3")
				// Read on past the commit without committing: only the commit counts.
				require.Len(t, stNextN(t, r, 3), 3)
				require.NoError(t, s.Close()) // closes the reader too

				s = env.mustOpen(t)
				readers, err := s.Readers()
				require.NoError(t, err)
				require.Equal(t, []string{"loader"}, readers)
				committed, err := s.CommittedPositions("loader")
				require.NoError(t, err)
				require.Equal(t, map[string]map[int32]int64{"orders": {0: 4, 1: 2}}, committed)
				tp, err = s.Topic("orders")
				require.NoError(t, err)
				r = stReader(t, tp, tc.start)
				require.Equal(t, map[int32]int64{0: 4, 1: 2}, r.Positions())
				require.Equal(t, map[int32]int64{0: 2, 1: 2}, r.Lag())
				require.Equal(t, []stSeen{{0, 4, "p0-4"}, {1, 2, "p1-2"}, {0, 5, "p0-5"}, {1, 3, "p1-3"}}, stSeenOf(stNextN(t, r, 4)))
				stRequireIdle(t, r)
				require.Equal(t, map[int32]int64{0: 0, 1: 0}, r.Lag())
			})
		})
	}
}

// TestStoreCorruptPositions: a damaged positions file stops only its own reader, with ErrCorrupt;
// the store opens, other readers resume, and DeleteReader resets the damaged one. A file torn or
// failing its checksum, as a power loss leaves an unsynced commit (see Reader.Commit), does not
// stop the reader: it starts at its Start, as one that never committed, and its next commit
// replaces the file. CommittedPositions reports either damage with ErrCorrupt.
func TestStoreCorruptPositions(t *testing.T) {
	damages := []struct {
		name   string
		torn   bool // the checkpoint is torn or fails its checksum, rather than holding bad positions
		damage func(t *testing.T, fsy fsys.FS, path string)
	}{
		{"flip-payload-byte", true, func(t *testing.T, fsy fsys.FS, path string) {
			b := fsReadFile(t, fsy, path)
			b[len(b)-2] ^= 0x01
			fsWriteFile(t, fsy, path, b)
		}},
		{"flip-header-byte", true, func(t *testing.T, fsy fsys.FS, path string) {
			b := fsReadFile(t, fsy, path)
			b[3] ^= 0x20
			fsWriteFile(t, fsy, path, b)
		}},
		{"truncate-by-one", true, func(t *testing.T, fsy fsys.FS, path string) {
			fsTruncate(t, fsy, path, fsFileSize(t, fsy, path)-1)
		}},
		{"truncate-into-header", true, func(t *testing.T, fsy fsys.FS, path string) { fsTruncate(t, fsy, path, 10) }},
		{"truncate-to-empty", true, func(t *testing.T, fsy fsys.FS, path string) { fsTruncate(t, fsy, path, 0) }},
		{"trailing-garbage", true, func(t *testing.T, fsy fsys.FS, path string) {
			fsPatch(t, fsy, path, fsFileSize(t, fsy, path), []byte{'}'})
		}},
		{"checksummed-not-json", false, func(t *testing.T, fsy fsys.FS, path string) {
			require.NoError(t, checkpoint.Write(fsy, path, []byte("orders 0 4")))
		}},
		{"checksummed-negative-offset", false, func(t *testing.T, fsy fsys.FS, path string) {
			require.NoError(t, checkpoint.Write(fsy, path, []byte(`{"orders":{"0":-4}}`)))
		}},
		{"checksummed-bad-partition", false, func(t *testing.T, fsy fsys.FS, path string) {
			require.NoError(t, checkpoint.Write(fsy, path, []byte(`{"orders":{"zero":4}}`)))
		}},
	}
	for _, tc := range damages {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s, err := env.open(WithSync(SyncNever))
				require.NoError(t, err)
				tp := stCreate(t, s, "orders", TopicConfig{})
				require.NoError(t, tp.Append(ctx, stRecs("r0", "r1", "r2", "r3", "r4", "r5")...))
				for name, n := range map[string]int{"loader": 4, "audit": 2} {
					r, err := tp.NewReader(ReaderConfig{Name: name, Start: Earliest})
					require.NoError(t, err)
					stNextN(t, r, n)
					require.NoError(t, r.Commit(ctx))
					require.NoError(t, r.Close())
				}
				require.NoError(t, s.Close())

				tc.damage(t, env.FS(), env.path(readerFilePrefix+"loader"))

				s = env.mustOpen(t, WithSync(SyncNever))
				tp, err = s.Topic("orders")
				require.NoError(t, err)
				r, err := tp.NewReader(ReaderConfig{Name: "loader", Start: Earliest})
				if tc.torn {
					require.NoError(t, err)
					require.Equal(t, map[int32]int64{0: 0}, r.Positions())
					require.NoError(t, r.Close())
				} else {
					require.ErrorIs(t, err, ErrCorrupt)
				}
				_, err = s.CommittedPositions("loader")
				require.ErrorIs(t, err, ErrCorrupt)
				readers, err := s.Readers()
				require.NoError(t, err)
				require.Equal(t, []string{"audit", "loader"}, readers)

				// Others work: the named one resumes at its commit, an anonymous one reads.
				audit := stReader(t, tp, ReaderConfig{Name: "audit", Start: Earliest})
				require.Equal(t, []stSeen{{0, 2, "r2"}}, stSeenOf(stNextN(t, audit, 1)))
				anon := stReader(t, tp, ReaderConfig{Start: AtOffset, StartOffset: 5})
				require.Equal(t, []stSeen{{0, 5, "r5"}}, stSeenOf(stNextN(t, anon, 1)))

				require.NoError(t, s.DeleteReader("loader"))
				committed, err := s.CommittedPositions("loader")
				require.NoError(t, err)
				require.Empty(t, committed)
				readers, err = s.Readers()
				require.NoError(t, err)
				require.Equal(t, []string{"audit"}, readers)
				loader := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
				require.Equal(t, []stSeen{{0, 0, "r0"}}, stSeenOf(stNextN(t, loader, 1)))
				require.NoError(t, loader.Commit(ctx))
				committed, err = s.CommittedPositions("loader")
				require.NoError(t, err)
				require.Equal(t, map[string]map[int32]int64{"orders": {0: 1}}, committed)
			})
		})
	}
}

// TestStoreReaderNameInUse: two live readers of a topic may not share a name (readers of other
// topics may: see TestReaderNameOnSeveralTopics); the name is free once the first closes.
func TestStoreReaderNameInUse(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		orders := stCreate(t, s, "orders", TopicConfig{Partitions: 2})
		payments := stCreate(t, s, "payments", TopicConfig{})
		require.NoError(t, orders.Append(ctx, stRecs("a")...))

		first, err := orders.NewReader(ReaderConfig{Name: "fraud", Start: Earliest})
		require.NoError(t, err)
		r, err := orders.NewReader(ReaderConfig{Name: "fraud", Start: Earliest})
		require.ErrorIs(t, err, ErrReaderExists)
		require.ErrorContains(t, err, `reader "fraud" is open on topic orders`)
		require.Nil(t, r)
		onPayments := stReader(t, payments, ReaderConfig{Name: "fraud", Start: Earliest})
		require.NoError(t, onPayments.Close())
		require.ErrorIs(t, s.DeleteReader("fraud"), ErrReaderExists)
		rec := stNext(t, first)
		require.NoError(t, first.Commit(ctx))
		require.NoError(t, first.Close())

		second := stReader(t, orders, ReaderConfig{Name: "fraud", Start: Earliest})
		require.Equal(t, rec.Offset+1, stMust(second.Position(rec.Partition)))
		// Another name is independent.
		other := stReader(t, orders, ReaderConfig{Name: "audit", Start: Earliest})
		require.Equal(t, []stSeen{{rec.Partition, 0, "a"}}, stSeenOf(stNextN(t, other, 1)))
	})
}

func stMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

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

// TestMissingPartitionFolder: a partition folder missing for a topic that commitlog-topics lists
// fails Open with ErrPartitionMissing, changing nothing, unless the topic was being created (the
// creation is finished: empty partitions) or deleted (the deletion is finished). An empty folder
// put in its place by the operator accepts the loss: it opens as an empty log.
func TestMissingPartitionFolder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		setup := func(t *testing.T) string {
			dir := closedOrdersStore(t, fsy)
			require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "no creation left marked")
			return dir
		}

		t.Run("folder gone", func(t *testing.T) {
			dir := setup(t)
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-1")))
			before, topics := fsListDir(t, fsy, dir), fsReadFile(t, fsy, filepath.Join(dir, topicsFileName))
			_, err := Open(dir, withFS(fsy))
			require.ErrorIs(t, err, ErrPartitionMissing)
			require.Equal(t, fmt.Sprintf("%s: topic orders partition 1: folder %s",
				ErrPartitionMissing, filepath.Join(dir, "orders-1")), err.Error())
			require.Equal(t, before, fsListDir(t, fsy, dir), "a failed Open changes nothing")
			require.Equal(t, topics, fsReadFile(t, fsy, filepath.Join(dir, topicsFileName)))

			// An empty folder in its place: the operator accepts the loss.
			require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "orders-1"), 0o755))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			tp, err := s.Topic("orders")
			require.NoError(t, err)
			p1, err := tp.Partition(1)
			require.NoError(t, err)
			require.Equal(t, int64(0), p1.LogEndOffset())
			require.NoError(t, s.Close())
		})

		t.Run("creation in progress", func(t *testing.T) {
			// A crash after CreateTopic made its configuration durable, before the folders.
			dir := setup(t)
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-0")))
			require.NoError(t, fsy.RemoveAll(filepath.Join(dir, "orders-1")))
			require.NoError(t, checkpoint.Write(fsy, filepath.Join(dir, creatingFileName), []byte("orders")))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			tp, err := s.Topic("orders")
			require.NoError(t, err)
			require.Equal(t, int32(2), tp.PartitionCount())
			for id := range int32(2) {
				p, err := tp.Partition(id)
				require.NoError(t, err)
				require.Equal(t, int64(0), p.LogEndOffset())
				require.True(t, fsExists(t, fsy, filepath.Join(dir, partitionDirName("orders", id))))
			}
			require.False(t, fsExists(t, fsy, filepath.Join(dir, creatingFileName)), "the creation is finished")
			require.NoError(t, s.Close())
		})

		t.Run("deletion in progress", func(t *testing.T) {
			// A crash after DeleteTopic renamed the first folder, before the second and before
			// the configuration went.
			dir := setup(t)
			require.NoError(t, fsy.Rename(filepath.Join(dir, "orders-0"), filepath.Join(dir, deleteDirName("orders", 0))))
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			_, err = s.Topic("orders")
			require.ErrorIs(t, err, ErrUnknownTopic)
			require.NotContains(t, fsListDir(t, fsy, dir), "orders-1", "the deletion is finished")
			require.NotContains(t, fsListDir(t, fsy, dir), deleteDirName("orders", 0))
			require.NoError(t, s.Close())
			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
		})
	})
}

// failRenameTo is a file system on which a rename onto the file named name fails, as a crash
// there would stop the caller.
// closedOrdersStore makes a store on fsy with the topic "orders" of 2 partitions, 5 records in
// partition 1, closes it cleanly and returns its folder.
func closedOrdersStore(t *testing.T, fsy fsys.FS) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, withFS(fsy))
	require.NoError(t, err)
	tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: baseConfig()})
	require.NoError(t, err)
	p1, err := tp.Partition(1)
	require.NoError(t, err)
	require.NoError(t, p1.Append(context.Background(), workloadRecords(0, 5)...))
	require.NoError(t, s.Close())
	return dir
}

type failRenameTo struct {
	fsys.FS
	name string
}

func (f failRenameTo) Rename(oldpath, newpath string) error {
	if newpath == f.name {
		return fmt.Errorf("rename %s: %w", newpath, syscall.EIO)
	}
	return f.FS.Rename(oldpath, newpath)
}

// TestUnfinishedTopicDeletion: a DeleteTopic that stopped after renaming a folder
// "<folder>-delete" is finished by the next Open, and by the one after when that Open stops
// before the configuration is saved, and when DeleteTopic itself could not save the configuration
// without the topic; a folder "-delete" whose name, cut to the folder name limit,
// is also another topic's, finishes only the deletion of the topic whose folder is gone.
func TestUnfinishedTopicDeletion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		t.Run("open stopped while finishing it", func(t *testing.T) {
			dir := closedOrdersStore(t, fsy)
			require.NoError(t, fsy.Rename(filepath.Join(dir, "orders-0"), filepath.Join(dir, deleteDirName("orders", 0))))

			_, err := Open(dir, withFS(failRenameTo{fsy, filepath.Join(dir, topicsFileName)}))
			require.ErrorIs(t, err, syscall.EIO)

			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			_, err = s.Topic("orders")
			require.ErrorIs(t, err, ErrUnknownTopic)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
			for _, name := range fsListDir(t, fsy, dir) {
				require.False(t, strings.HasPrefix(name, "orders"), name)
			}
		})

		t.Run("configuration not saved by DeleteTopic", func(t *testing.T) {
			dir := closedOrdersStore(t, fsy)

			s, err := Open(dir, withFS(failRenameTo{fsy, filepath.Join(dir, topicsFileName)}))
			require.NoError(t, err)
			require.ErrorIs(t, s.DeleteTopic("orders"), syscall.EIO)
			require.NoError(t, s.Close())
			// The configuration still names the topic: its renamed folders stay for the next
			// open to finish the deletion, rather than leave a configured topic without folders.
			require.ElementsMatch(t, []string{deleteDirName("orders", 0), deleteDirName("orders", 1)},
				slices.DeleteFunc(fsListDir(t, fsy, dir), func(n string) bool { return !strings.HasPrefix(n, "orders") }))

			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Empty(t, s.Topics())
			require.NoError(t, s.Close())
			for _, name := range fsListDir(t, fsy, dir) {
				require.False(t, strings.HasPrefix(name, "orders"), name)
			}
		})

		t.Run("another topic's folder of the same cut name", func(t *testing.T) {
			prefix := strings.Repeat("t", maxDirNameLength-len("-0"+deleteSuffix))
			gone, kept := prefix+"aaa", prefix+"bbb"
			require.Equal(t, deleteDirName(gone, 0), deleteDirName(kept, 0))
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(dir, withFS(fsy))
			require.NoError(t, err)
			for _, name := range []string{gone, kept} {
				_, err := s.CreateTopic(name, TopicConfig{Partitions: 1, LogConfig: baseConfig()})
				require.NoError(t, err)
			}
			tp, err := s.Topic(kept)
			require.NoError(t, err)
			p0, err := tp.Partition(0)
			require.NoError(t, err)
			require.NoError(t, p0.Append(context.Background(), workloadRecords(0, 5)...))
			require.NoError(t, s.Close())
			// DeleteTopic(gone) stopped after its rename.
			require.NoError(t, fsy.Rename(filepath.Join(dir, partitionDirName(gone, 0)), filepath.Join(dir, deleteDirName(gone, 0))))

			s, err = Open(dir, withFS(fsy))
			require.NoError(t, err)
			require.Equal(t, []string{kept}, s.Topics())
			tp, err = s.Topic(kept)
			require.NoError(t, err)
			p0, err = tp.Partition(0)
			require.NoError(t, err)
			require.Equal(t, int64(5), p0.LogEndOffset())
			recs, err := p0.ReadRecords(0, 1<<20)
			require.NoError(t, err)
			requireSameRecords(t, withOffsets(workloadRecords(0, 5), 0), recs)
			require.NoError(t, s.Close())
		})
	})
}
