package commitlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestCreatePartitionsRefused: a count not above the topic's, above MaxPartitions, or for a topic
// the store does not hold changes nothing. Both stores.
func TestCreatePartitionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		topic   string
		total   int32
		want    []error
		wantErr string
	}{
		{name: "same count", topic: "events", total: 3, want: []error{ErrInvalidPartitions},
			wantErr: "commitlog: invalid partition count: topic events currently has 3 partitions; the requested 3 must be more"},
		{name: "fewer", topic: "events", total: 2, want: []error{ErrInvalidPartitions},
			wantErr: "commitlog: invalid partition count: topic events currently has 3 partitions; the requested 2 must be more"},
		{name: "negative", topic: "events", total: -1, want: []error{ErrInvalidPartitions},
			wantErr: "commitlog: invalid partition count: topic events currently has 3 partitions; the requested -1 must be more"},
		{name: "above the ceiling", topic: "events", total: MaxPartitions + 1, want: []error{ErrInvalidPartitions, ErrInvalidConfig},
			wantErr: "commitlog: invalid partition count: topic events: commitlog: invalid config: Partitions = 4001 (1 to 4000)"},
		{name: "unknown topic", topic: "nope", total: 4, want: []error{ErrUnknownTopic},
			wantErr: `commitlog: unknown topic or partition: "nope"`},
		{name: "consumer offsets", topic: consumerOffsetsTopic, total: 60, want: []error{ErrUnknownTopic},
			wantErr: `commitlog: unknown topic or partition: "__consumer_offsets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp, err := s.CreateTopic("events", TopicConfig{Partitions: 3})
				require.NoError(t, err)
				before := env.entries(t)
				err = s.CreatePartitions(tc.topic, tc.total)
				for _, want := range tc.want {
					require.ErrorIs(t, err, want)
				}
				require.EqualError(t, err, tc.wantErr)
				require.Equal(t, int32(3), tp.PartitionCount())
				require.Equal(t, int32(3), tp.Config().Partitions)
				require.Equal(t, before, env.entries(t))
			})
		})
	}
	t.Run("closed", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, env *storeEnv) {
			s := env.mustOpen(t)
			_, err := s.CreateTopic("events", TopicConfig{})
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.ErrorIs(t, s.CreatePartitions("events", 2), ErrClosed)
		})
	})
}

// TestCreatePartitions: new partitions are empty, durable, visible, keep the topic's
// configuration, and the key partitioner spreads over the new count; the old partitions keep
// their records. Both stores.
func TestCreatePartitions(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		cfg := TopicConfig{Partitions: 2, LogConfig: LogConfig{SegmentBytes: 1 << 20, CleanupPolicy: CleanupCompactDelete}}
		tp, err := s.CreateTopic("events", cfg)
		require.NoError(t, err)
		for i := range 10 {
			require.NoError(t, tp.Append(ctx, &Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("before")}))
		}
		_, err = tp.Partition(2)
		require.ErrorIs(t, err, ErrUnknownTopic)

		require.NoError(t, s.CreatePartitions("events", 5))
		require.False(t, fsExists(t, env.FS(), env.path(creatingFileName)), "the creation is finished")
		check := func(t *testing.T, s *Store, fresh bool) *Topic {
			tp, err := s.Topic("events")
			require.NoError(t, err)
			require.Equal(t, int32(5), tp.PartitionCount())
			require.Equal(t, TopicConfig{Partitions: 5, LogConfig: cfg.LogConfig}, tp.StoredConfig())
			require.Equal(t, int32(5), tp.Config().Partitions)
			var before int64
			for id := range int32(5) {
				p, err := tp.Partition(id)
				require.NoError(t, err)
				require.Equal(t, id, p.ID())
				require.Equal(t, tp.Config().LogConfig, p.log.Config())
				if id >= 2 {
					require.True(t, fsExists(t, env.FS(), env.path(partitionDirName("events", id))))
				}
				// Every folder, old and new, carries the topic's ID.
				got, err := readPartitionMetadata(env.FS(), env.path(partitionDirName("events", id)))
				require.NoError(t, err)
				require.Equal(t, tp.ID(), got, "partition %d", id)
				if id >= 2 && fresh {
					require.Equal(t, int64(0), p.LogStartOffset())
					require.Equal(t, int64(0), p.LogEndOffset())
				} else if id < 2 {
					before += p.LogEndOffset()
				}
			}
			if fresh {
				require.Equal(t, int64(10), before, "the old partitions keep their records")
			}
			return tp
		}
		check(t, s, true)

		// The default partitioner hashes keys over five partitions now.
		part := KeyHashPartitioner()
		var recs []*Record
		for i := range 40 {
			recs = append(recs, &Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("after")})
		}
		require.NoError(t, tp.Append(ctx, recs...))
		counts := map[int32]int{}
		for _, r := range recs {
			require.Equal(t, part.Partition(r, 5), r.Partition, string(r.Key))
			counts[r.Partition]++
		}
		require.Len(t, counts, 5, "every partition got records: %v", counts)
		require.ErrorIs(t, tp.Append(ctx, &Record{Value: []byte("keyless")}), ErrKeylessRecord, "the new count keeps the config")

		require.NoError(t, s.Close())
		s = env.mustOpen(t, WithSync(SyncNever))
		tp = check(t, s, false)
		var n int64
		for _, p := range tp.parts() {
			n += p.LogEndOffset()
		}
		require.Equal(t, int64(50), n)

		require.NoError(t, s.CreatePartitions("events", 6))
		require.Equal(t, int32(6), tp.PartitionCount())
	})
}

// TestCreatePartitionsCrash: a crash after the new count was stored, before the new folders were
// made, opens with the new partitions created empty (the creation marker says they were never
// made); without the marker they are lost data, ErrPartitionMissing. Both stores.
func TestCreatePartitionsCrash(t *testing.T) {
	for _, marked := range []bool{true, false} {
		t.Run(fmt.Sprintf("marked %v", marked), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
				require.NoError(t, err)
				require.NoError(t, tp.Append(context.Background(), &Record{Value: []byte("v")}))
				require.NoError(t, s.CreatePartitions("events", 3))
				require.NoError(t, s.Close())
				for id := int32(1); id < 3; id++ {
					require.NoError(t, env.FS().RemoveAll(env.path(partitionDirName("events", id))))
				}
				if marked {
					require.NoError(t, checkpoint.Write(env.FS(), env.path(creatingFileName), []byte("events")))
				}
				s, err = env.open()
				if !marked {
					require.ErrorIs(t, err, ErrPartitionMissing)
					return
				}
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				tp, err = s.Topic("events")
				require.NoError(t, err)
				require.Equal(t, int32(3), tp.PartitionCount())
				for id, leo := range []int64{1, 0, 0} {
					p, err := tp.Partition(int32(id))
					require.NoError(t, err)
					require.Equal(t, leo, p.LogEndOffset())
				}
				require.False(t, fsExists(t, env.FS(), env.path(creatingFileName)))
			})
		})
	}
}

// mkdirFailFS fails MkdirAll of one path, as a full disk would.
type mkdirFailFS struct {
	fsys.FS
	path string
}

var errMkdir = errors.New("mkdir refused by the test")

func (f mkdirFailFS) MkdirAll(name string, perm fs.FileMode) error {
	if name == f.path {
		return errMkdir
	}
	return f.FS.MkdirAll(name, perm)
}

// TestCreatePartitionsFailure: a new partition that cannot be created leaves the topic as it
// was: no folder of the new partitions, the old count stored and live, no creation marker. A
// stray folder at a new partition's name is removed and the partition starts empty. Both stores.
func TestCreatePartitionsFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, inner fsys.FS) {
		dir := filepath.Join(t.TempDir(), "store")
		fsy := mkdirFailFS{FS: inner, path: filepath.Join(dir, partitionDirName("events", 3))}
		s, err := Open(dir, withFS(fsy), WithSync(SyncNever))
		require.NoError(t, err)
		defer s.Close()
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 2})
		require.NoError(t, err)
		before := fsListDir(t, fsy, dir)
		configs := fsReadFile(t, fsy, filepath.Join(dir, topicsFileName))

		err = s.CreatePartitions("events", 4)
		require.ErrorIs(t, err, errMkdir)
		require.Equal(t, int32(2), tp.PartitionCount())
		require.Equal(t, int32(2), tp.StoredConfig().Partitions)
		require.Equal(t, before, fsListDir(t, fsy, dir))
		require.Equal(t, configs, fsReadFile(t, fsy, filepath.Join(dir, topicsFileName)))

		// A stray folder, with a segment, where partition 2 goes.
		stray := filepath.Join(dir, partitionDirName("events", 2))
		require.NoError(t, fsy.MkdirAll(stray, 0o755))
		fsWriteFile(t, fsy, filepath.Join(stray, "00000000000000000000.log"), encodeBatch(t, 0, []*Record{{Value: []byte("stray")}}))
		require.NoError(t, s.CreatePartitions("events", 3))
		p, err := tp.Partition(2)
		require.NoError(t, err)
		require.Equal(t, int64(0), p.LogEndOffset())
		require.NoError(t, s.Close())

		s, err = Open(dir, withFS(fsy), WithSync(SyncNever))
		require.NoError(t, err)
		tp, err = s.Topic("events")
		require.NoError(t, err)
		require.Equal(t, int32(3), tp.PartitionCount())
	})
}

// TestCreatePartitionsSymlink: a new partition's folder that is a symbolic link is refused with
// ErrInvalidPartitions, nothing created. File store only (symbolic links).
func TestCreatePartitionsSymlink(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, WithSync(SyncNever))
	require.NoError(t, err)
	defer s.Close()
	tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
	require.NoError(t, err)
	link := filepath.Join(dir, partitionDirName("events", 1))
	require.NoError(t, os.Symlink(t.TempDir(), link))
	err = s.CreatePartitions("events", 2)
	require.ErrorIs(t, err, ErrInvalidPartitions)
	require.EqualError(t, err, fmt.Sprintf("commitlog: invalid partition count: topic events: partition folder %s is a symbolic link", link))
	require.Equal(t, int32(1), tp.PartitionCount())
	require.Equal(t, int32(1), tp.StoredConfig().Partitions)
}

// TestCreatePartitionsConcurrent: partitions added while appends, lookups and reader creation run
// lose no record, under the race detector. Both stores.
func TestCreatePartitionsConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		tp, err := s.CreateTopic("events", TopicConfig{Partitions: 1})
		require.NoError(t, err)
		const writers, perWriter = 4, 200
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers)
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					if err := tp.Append(ctx, &Record{Key: fmt.Appendf(nil, "w%d-%d", w, i), Value: []byte("v")}); err != nil {
						errs <- err
						return
					}
				}
			})
			wg.Go(func() {
				for range perWriter {
					n := tp.PartitionCount()
					if _, err := tp.Partition(n - 1); err != nil {
						errs <- err
						return
					}
					r, err := tp.NewReader(ReaderConfig{Start: Earliest})
					if err != nil {
						errs <- err
						return
					}
					if err := r.Close(); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		for n := int32(2); n <= 8; n++ {
			require.NoError(t, s.CreatePartitions("events", n))
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, int32(8), tp.PartitionCount())
		var total int64
		for _, p := range tp.parts() {
			total += p.LogEndOffset()
		}
		require.Equal(t, int64(writers*perWriter), total)
	})
}

// TestCreatePartitionsGroupReader: a group member reading a topic is assigned its new partitions
// (the leader sees the new count and rejoins) and reads them from the start.
func TestCreatePartitionsGroupReader(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		s := openGroupStore(t, fsy, t.TempDir())
		defer s.Close()
		tp := fillGroupTopic(t, s, "a", 1, 3)
		gr, err := s.NewGroupReader(fastGroup("g", "a"))
		require.NoError(t, err)
		defer gr.Close()
		require.Len(t, readN(t, gr, 3), 3)
		require.NoError(t, gr.Commit(context.Background()))

		require.NoError(t, s.CreatePartitions("a", 3))
		for id := int32(1); id < 3; id++ {
			p, err := tp.Partition(id)
			require.NoError(t, err)
			require.NoError(t, p.Append(context.Background(), &Record{Value: fmt.Appendf(nil, "%d-0", id)}, &Record{Value: fmt.Appendf(nil, "%d-1", id)}))
		}
		got := map[string]bool{}
		for _, r := range readN(t, gr, 4) {
			got[string(r.Value)] = true
		}
		require.Equal(t, map[string]bool{"1-0": true, "1-1": true, "2-0": true, "2-1": true}, got)
		require.Equal(t, partitionsOf("a", 3), gr.Assignment())
	})
}
