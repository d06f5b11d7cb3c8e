package commitlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// createTopicsCrashSteps are the calls of the creation crash workload, in order: a CreateTopics
// of few partitions (each partition's files fsynced), one of more partitions than the workers
// run at once (the partitions' files made durable by two syncs of the file system), and a
// CreateTopic.
var createTopicsCrashSteps = []map[string]TopicConfig{
	{"alpha": {Partitions: 3}, "beta": {Partitions: 2}, "gamma": {}},
	{"delta": {Partitions: 10}, "epsilon": {Partitions: 9}},
	{"zeta": {Partitions: 2}},
}

// createTopicsCrashOptions are the options of every open of the workload: one worker, so that
// the file operations come in the same order every run.
func createTopicsCrashOptions(fsy fsys.FS) []Option {
	return []Option{withFS(fsy), WithRetentionCheckInterval(-1), WithLogger(quietLog), withParallelLogs(1)}
}

// createTopicsCrashWorkload opens the store in dir on fsy and runs createTopicsCrashSteps until
// one fails; it returns how many were acknowledged (every topic of the call created).
func createTopicsCrashWorkload(fsy fsys.FS, dir string) (acked int, err error) {
	s, err := Open(dir, createTopicsCrashOptions(fsy)...)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	for i, step := range createTopicsCrashSteps {
		if len(step) == 1 {
			for name, cfg := range step {
				if _, err := s.CreateTopic(name, cfg); err != nil {
					return i, err
				}
			}
			continue
		}
		var errs []error
		for _, r := range s.CreateTopics(step) {
			errs = append(errs, r.Err)
		}
		if err := errors.Join(errs...); err != nil {
			return i, err
		}
	}
	return len(createTopicsCrashSteps), nil
}

// checkCreateTopicsCrash opens the store left in img after a crash during step inflight (steps
// before it acknowledged) and checks that every topic of an acknowledged call is there, those
// of the call in flight all there or none of them, no other topic, each with its partitions,
// an empty log each, one ID in every partition.metadata, no creation marker left, and an append
// taking offset 0; then that a second open finds the same.
func checkCreateTopicsCrash(img fsys.FS, dir string, inflight int) error {
	s, err := Open(dir, createTopicsCrashOptions(img)...)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	var want []string
	for i, step := range createTopicsCrashSteps {
		if i > inflight {
			break
		}
		names := slices.Sorted(maps.Keys(step))
		held := 0
		for _, name := range names {
			if _, err := s.Topic(name); err == nil {
				held++
			}
		}
		switch {
		case i < inflight && held != len(names), i == inflight && held != 0 && held != len(names):
			s.Close()
			return fmt.Errorf("call %d (%v, acknowledged %v): %d of its topics opened", i, names, i < inflight, held)
		case held > 0:
			want = append(want, names...)
		}
	}
	slices.Sort(want)
	if got := s.Topics(); !slices.Equal(got, want) {
		s.Close()
		return fmt.Errorf("topics %v, want %v", got, want)
	}
	if _, err := img.Lstat(filepath.Join(dir, creatingFileName)); !errors.Is(err, fs.ErrNotExist) {
		s.Close()
		return fmt.Errorf("creation marker left after the open: %v", err)
	}
	ids := map[string]TopicID{}
	for i, step := range createTopicsCrashSteps {
		for name, cfg := range step {
			if !slices.Contains(want, name) {
				continue
			}
			t, err := s.Topic(name)
			if err != nil {
				return err
			}
			if n := t.PartitionCount(); n != max(cfg.Partitions, 1) {
				s.Close()
				return fmt.Errorf("call %d: topic %s has %d partitions, want %d", i, name, n, max(cfg.Partitions, 1))
			}
			ids[name] = t.ID()
			for p := range t.PartitionCount() {
				id, err := readPartitionMetadata(img, filepath.Join(dir, partitionDirName(name, p)))
				if err != nil || id != t.ID() {
					s.Close()
					return fmt.Errorf("%s-%d: partition.metadata %v (%v), topic ID %v", name, p, id, err, t.ID())
				}
				part, err := t.Partition(p)
				if err != nil {
					return err
				}
				if leo := part.LogEndOffset(); leo != 0 {
					s.Close()
					return fmt.Errorf("%s-%d: log end offset %d, want 0", name, p, leo)
				}
				rec := &Record{Value: []byte(name)}
				if err := part.Append(context.Background(), rec); err != nil || rec.Offset != 0 {
					s.Close()
					return fmt.Errorf("%s-%d: append: offset %d, %v", name, p, rec.Offset, err)
				}
			}
		}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	s, err = Open(dir, createTopicsCrashOptions(img)...)
	if err != nil {
		return fmt.Errorf("second open: %w", err)
	}
	defer s.Close()
	if got := s.Topics(); !slices.Equal(got, want) {
		return fmt.Errorf("second open: topics %v, want %v", got, want)
	}
	for name, id := range ids {
		t, err := s.Topic(name)
		if err != nil {
			return fmt.Errorf("second open: %w", err)
		}
		if t.ID() != id {
			return fmt.Errorf("second open: topic %s has ID %v, first open %v", name, t.ID(), id)
		}
		for p := range t.PartitionCount() {
			if leo := stMust(t.Partition(p)).LogEndOffset(); leo != 1 {
				return fmt.Errorf("second open: %s-%d: log end offset %d, want 1", name, p, leo)
			}
		}
	}
	return nil
}

// TestCreateTopicsCrashPoints crashes the creation workload (two CreateTopics calls, one of few
// partitions and one of more than the workers run at once, then a CreateTopic) at every one of
// its file operations, as a process kill and as each kind of power loss in turn, and checks
// that the reopened store holds every topic of each acknowledged call, all or none of the
// topics of the call in flight (each complete: its partitions, one topic ID written in every
// partition folder, an empty log taking appends), and nothing else.
func TestCreateTopicsCrashPoints(t *testing.T) {
	const dir = "/store"
	counting := newFaultFS(t, fsys.NewMemory(), dir)
	acked, err := createTopicsCrashWorkload(counting, dir)
	require.NoError(t, err)
	require.Equal(t, len(createTopicsCrashSteps), acked)
	ops := counting.Ops()
	require.NotEmpty(t, opsOn(ops, dir, faultfs.SyncFS), "the large call syncs the file system")

	modes := append([]faultfs.Mode{faultfs.ProcessKill}, powerLossModes...)
	for point := range ops {
		inner := fsys.NewMemory()
		require.NoError(t, inner.MkdirAll(dir, 0o755))
		ffs := faultfs.New(inner, uint64(point))
		ffs.Inject(faultfs.CrashAt(point))
		inflight, err := createTopicsCrashWorkload(ffs, dir)
		require.True(t, ffs.Crashed(), "point %d (%s): no crash", point, ops[point])
		if inflight < len(createTopicsCrashSteps) {
			require.ErrorIs(t, err, faultfs.ErrCrashed, "point %d (%s)", point, ops[point])
		}
		mode := modes[point%len(modes)]
		img, err := ffs.CrashImage(mode)
		require.NoError(t, err)
		require.NoError(t, checkCreateTopicsCrash(img, dir, inflight), "crash at operation %d (%s) during call %d, %s", point, ops[point], inflight, mode)
		ffs.Release()
	}
}
