package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The behaviour tests of Store, Topic, Partition and Reader run against both kinds of store the
// package offers: a file store (Open on a fresh temporary directory) and an in-memory one
// (OpenInMemory). They reach the store's files, when they must (to damage a file, or to lay out
// a folder before the first open), through the same fsys.FS the store uses, so that one test body
// serves both. Tests that need what only a real disk has (symbolic links, Kafka folders written
// by other tools) stay file-only and say so.

// storeBackend is a kind of store the behaviour tests run on.
type storeBackend struct {
	name   string
	memory bool
}

var storeBackends = []storeBackend{
	{"file", false},
	{"memory", true},
}

// storeEnv is where one test's store lives, across reopens: a temporary directory, or the memory
// of an in-memory store.
type storeEnv struct {
	memory bool
	// root is the top of everything the store may touch: the temporary directory, or the root of
	// the memory file system.
	root string
	// dir is the store's directory, two levels below root (a topic name such as "../../x" that
	// escaped it would still land under root).
	dir string
	fs  fsys.FS // nil for a memory store until its first open (or FS)
}

// forEachStore runs fn as a subtest per store backend, each with a fresh environment.
func forEachStore(t *testing.T, fn func(t *testing.T, env *storeEnv)) {
	t.Helper()
	for _, b := range storeBackends {
		t.Run(b.name, func(t *testing.T) { fn(t, newStoreEnv(t, b)) })
	}
}

// newStoreEnv returns a fresh, empty environment of backend b.
func newStoreEnv(t *testing.T, b storeBackend) *storeEnv {
	t.Helper()
	if b.memory {
		return &storeEnv{memory: true, root: "/", dir: memoryDir}
	}
	root := t.TempDir()
	return &storeEnv{root: root, dir: filepath.Join(root, "a", "store"), fs: fsys.OS()}
}

// another returns a fresh, empty environment of the same backend, for a test that needs two
// stores.
func (e *storeEnv) another(t *testing.T) *storeEnv {
	t.Helper()
	return newStoreEnv(t, storeBackend{memory: e.memory})
}

// FS returns the file system the environment's store uses. For a memory store not yet opened it
// creates the memory, so that a test can lay out files before the first open (which then opens
// them with Open on that memory rather than with OpenInMemory).
func (e *storeEnv) FS() fsys.FS {
	if e.fs == nil {
		e.fs = fsys.NewMemory()
	}
	return e.fs
}

// open opens the environment's store. A memory store is opened with OpenInMemory the first time;
// later opens model a restart of the process that kept the memory, with Open on the same memory
// file system (OpenInMemory itself always starts empty).
func (e *storeEnv) open(opts ...Option) (*Store, error) {
	if !e.memory {
		return Open(e.dir, opts...)
	}
	if e.fs == nil {
		s, err := OpenInMemory(opts...)
		if err == nil {
			e.fs = s.o.fs
		}
		return s, err
	}
	return Open(e.dir, append(slices.Clone(opts), withFS(e.fs))...)
}

// mustOpen opens the environment's store; it is closed at the end of the test.
func (e *storeEnv) mustOpen(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := e.open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// path returns the path of name inside the store's directory.
func (e *storeEnv) path(name ...string) string {
	return filepath.Join(append([]string{e.dir}, name...)...)
}

// entries returns the names in the store's directory (or one below it), sorted.
func (e *storeEnv) entries(t *testing.T, sub ...string) []string {
	t.Helper()
	return fsListDir(t, e.FS(), e.path(sub...))
}

// tree returns every path under root (relative, "/"-separated) with its kind and, for regular
// files, its contents, as stTree does for a real directory.
func (e *storeEnv) tree(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		entries, err := e.FS().ReadDir(dir)
		require.NoError(t, err)
		for _, ent := range entries {
			p, r := filepath.Join(dir, ent.Name()), ent.Name()
			if rel != "" {
				r = rel + "/" + ent.Name()
			}
			info, err := e.FS().Lstat(p)
			require.NoError(t, err)
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				out[r] = "symlink"
			case info.IsDir():
				out[r] = "dir"
				walk(p, r)
			default:
				out[r] = "file " + string(fsReadFile(t, e.FS(), p))
			}
		}
	}
	walk(e.root, "")
	return out
}

// TestOpenInMemoryWritesNothingToDisk: a full life of an in-memory store (topics, appends, rolls,
// named readers and commits, retention, a topic deletion, close) leaves the working directory, the
// home directory and the temporary directory empty, and creates no store directory on disk.
func TestOpenInMemoryWritesNothingToDisk(t *testing.T) {
	home, tmp, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	t.Chdir(cwd)
	_, err := os.Lstat(memoryDir)
	require.ErrorIs(t, err, fs.ErrNotExist, "%s exists on disk before the test", memoryDir)

	ctx := context.Background()
	now := testEpoch
	s, err := OpenInMemory(WithClock(func() time.Time { return now }), WithRetentionCheckInterval(-1))
	require.NoError(t, err)
	tp, err := s.CreateTopic("orders", TopicConfig{Partitions: 2, LogConfig: LogConfig{
		SegmentBytes: 1 << 10, SegmentIndexBytes: 4 << 10, RetentionDuration: time.Hour, FileDeleteDelay: time.Second,
	}})
	require.NoError(t, err)
	for i := range 200 {
		require.NoError(t, tp.Append(ctx, &Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: bytes.Repeat([]byte{byte(i)}, 50)}))
	}
	r, err := tp.NewReader(ReaderConfig{Name: "loader", Start: Earliest})
	require.NoError(t, err)
	for range 50 {
		_, err := r.Next(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, r.Commit(ctx))
	now = now.Add(2 * time.Hour)
	n, err := s.ApplyRetentionAt(now)
	require.NoError(t, err)
	require.Positive(t, n)
	other, err := s.CreateTopic("scratch", TopicConfig{})
	require.NoError(t, err)
	require.NoError(t, other.Append(ctx, &Record{Value: []byte("x")}))
	require.NoError(t, s.DeleteTopic("scratch"))
	require.NoError(t, s.Close())

	for _, d := range []string{home, tmp, cwd} {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		require.Empty(t, entries, "the in-memory store wrote to %s", d)
	}
	_, err = os.Lstat(memoryDir)
	require.ErrorIs(t, err, fs.ErrNotExist, "the in-memory store created %s on disk", memoryDir)
}

// TestOpenInMemoryStoresAreIndependent: two in-memory stores open at once share nothing (no lock,
// no topic, no record, no reader commit); closing one leaves the other working; a store opened
// after both closed starts empty.
func TestOpenInMemoryStoresAreIndependent(t *testing.T) {
	ctx := context.Background()
	a, err := OpenInMemory()
	require.NoError(t, err)
	defer a.Close()
	b, err := OpenInMemory()
	require.NoError(t, err, "a second in-memory store is not locked out by the first")
	defer b.Close()

	ta, err := a.CreateTopic("orders", TopicConfig{Partitions: 1})
	require.NoError(t, err)
	tb, err := b.CreateTopic("orders", TopicConfig{Partitions: 3})
	require.NoError(t, err, "the same topic name in another in-memory store")
	require.Equal(t, int32(1), ta.PartitionCount())
	require.Equal(t, int32(3), tb.PartitionCount())
	_, err = b.CreateTopic("payments", TopicConfig{})
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, a.Topics())
	require.Equal(t, []string{"orders", "payments"}, b.Topics())

	require.NoError(t, ta.Append(ctx, stRecs("a0", "a1", "a2")...))
	tb.SetPartitioner(ManualPartitioner())
	require.NoError(t, tb.Append(ctx, stRecs("b0")...))
	require.Equal(t, []stSeen{{0, 0, "a0"}, {0, 1, "a1"}, {0, 2, "a2"}}, stSeenOf(stPartitionRecords(t, ta, 0)))
	require.Equal(t, []stSeen{{0, 0, "b0"}}, stSeenOf(stPartitionRecords(t, tb, 0)))

	// Reader names and commits are per store.
	ra, err := ta.NewReader(ReaderConfig{Name: "loader", Start: Earliest})
	require.NoError(t, err)
	rb, err := tb.NewReader(ReaderConfig{Name: "loader", Start: Earliest})
	require.NoError(t, err, "the same reader name in another in-memory store")
	stNextN(t, ra, 2)
	require.NoError(t, ra.Commit(ctx))
	committed, err := a.CommittedPositions("loader")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 2}}, committed)
	committed, err = b.CommittedPositions("loader")
	require.NoError(t, err)
	require.Empty(t, committed)
	require.NoError(t, rb.Close())

	// Closing one leaves the other working.
	require.NoError(t, a.Close())
	require.NoError(t, tb.Append(ctx, stRecs("b1")...))
	require.Equal(t, []stSeen{{0, 0, "b0"}, {0, 1, "b1"}}, stSeenOf(stPartitionRecords(t, tb, 0)))
	require.NoError(t, b.Close())

	c, err := OpenInMemory()
	require.NoError(t, err)
	defer c.Close()
	require.Empty(t, c.Topics())
	readers, err := c.Readers()
	require.NoError(t, err)
	require.Empty(t, readers)
}

// TestOpenInMemorySharedOptions: in-memory stores opened at once from one options slice (with room
// to spare, as a slice built by append has) are still each their own: none is locked out by
// another, none sees another's topics.
func TestOpenInMemorySharedOptions(t *testing.T) {
	opts := make([]Option, 0, 8)
	opts = append(opts, WithSync(SyncNever), WithRetentionCheckInterval(-1))
	const stores = 8
	errs := make(chan error, stores)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			errs <- func() error {
				s, err := OpenInMemory(opts...)
				if err != nil {
					return err
				}
				defer s.Close()
				name := fmt.Sprintf("topic-%d", i)
				if _, err := s.CreateTopic(name, TopicConfig{}); err != nil {
					return err
				}
				time.Sleep(10 * time.Millisecond) // let the others create theirs
				if got := s.Topics(); !slices.Equal(got, []string{name}) {
					return fmt.Errorf("store %d holds %v", i, got)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	requireNoErrs(t, errs)
	require.Len(t, opts, 2, "the caller's slice is left as it was")
}

// TestFileAndMemoryStoresStoreTheSameBytes: the same appends under the same fixed clock give the
// same batch bytes, byte for byte, in a file store and an in-memory store: records encoded by the
// store under every codec, producer batches (AppendAsLeader), a leader's batches with a gap
// (AppendAsFollower), across segment rolls, and after retention and truncation.
func TestFileAndMemoryStoresStoreTheSameBytes(t *testing.T) {
	ctx := context.Background()
	codecs := []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}
	run := func(t *testing.T, env *storeEnv) map[string][]byte {
		s := env.mustOpen(t, WithClock(fixedClock), WithSync(SyncNever), WithRetentionCheckInterval(-1))
		out := map[string][]byte{}
		for _, codec := range codecs {
			tp := stCreate(t, s, "events-"+codec.String(), TopicConfig{Partitions: 2, LogConfig: LogConfig{
				SegmentBytes: 2 << 10, SegmentIndexBytes: 4 << 10, IndexIntervalBytes: 256, Compression: codec,
				RetentionBytes: 6 << 10, FileDeleteDelay: -1,
			}})
			for i := 0; i < 120; i += 6 {
				recs := workloadRecords(i, 6)
				if i%12 == 0 {
					for _, r := range recs {
						r.Timestamp = time.Time{} // set to the store's clock
					}
				}
				require.NoError(t, tp.Append(ctx, recs...))
			}
			p1 := stMust(tp.Partition(1))
			first, last, err := p1.AppendAsLeader(ctx, AcksAll, encodeBatch(t, 0, workloadRecords(500, 4)))
			require.NoError(t, err)
			require.Equal(t, 3, int(last-first))
			next := p1.LogEndOffset() + 10
			_, err = p1.Replica().AppendAsFollower(ctx, encodeBatch(t, next, workloadRecords(600, 3)))
			require.NoError(t, err)
			for p := range tp.PartitionCount() {
				part := stMust(tp.Partition(p))
				out[fmt.Sprintf("%s/%d/before-retention", tp.Name(), p)] = readAllPartitionBatches(t, part)
			}
			_, err = tp.ApplyRetentionAt(testEpoch)
			require.NoError(t, err)
			require.NoError(t, stMust(tp.Partition(0)).TruncateTo(stMust(tp.Partition(0)).LogEndOffset()-5))
			for p := range tp.PartitionCount() {
				part := stMust(tp.Partition(p))
				key := fmt.Sprintf("%s/%d/after-retention", tp.Name(), p)
				out[key] = readAllPartitionBatches(t, part)
				out[key+"/offsets"] = fmt.Appendf(nil, "start %d end %d segments %d size %d",
					part.LogStartOffset(), part.LogEndOffset(), part.SegmentCount(), part.Size())
			}
		}
		return out
	}
	file := run(t, newStoreEnv(t, storeBackends[0]))
	memory := run(t, newStoreEnv(t, storeBackends[1]))
	require.Equal(t, slices.Sorted(maps.Keys(file)), slices.Sorted(maps.Keys(memory)))
	for k, want := range file {
		require.NotEmpty(t, want, k)
		requireSameBytes(t, want, memory[k], k)
	}
	// Retention did delete segments, so the comparison covers a moved log start offset.
	require.NotContains(t, string(file["events-none/0/after-retention/offsets"]), "start 0 ")
}

// readAllPartitionBatches returns the bytes of every batch of p from its log start offset on.
func readAllPartitionBatches(t *testing.T, p *Partition) []byte {
	t.Helper()
	return readAllBatches(t, p.log, p.LogStartOffset())
}
