//go:build linux

package commitlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The partition scale measurement: a store of many topics of several partitions each, one record
// appended to every partition under SyncNever, created (in one CreateTopics call; the time of
// one CreateTopic call a topic, in a store of its own, is printed first), closed, reopened after the clean close,
// and reopened after a SIGKILL of a process that held it open. It prints the time of each step,
// the descriptors the process holds (/proc/self/fd) and its resident memory (VmRSS of
// /proc/self/status). It is a measurement, not a test: it runs only when
// COMMITLOG_PARTITION_SCALE says how many topics and partitions ("1000x10"), never in CI:
//
//	COMMITLOG_PARTITION_SCALE=1000x10 go test -run TestPartitionScaleMeasure -v -count=1 .
//
// COMMITLOG_PARTITION_SCALE_MAX_OPEN_FILES sets WithMaxOpenFiles (default: the store's default).
// With -cpuprofile the profile covers every step.

const (
	partitionScaleEnv         = "COMMITLOG_PARTITION_SCALE"
	partitionScaleMaxFilesEnv = "COMMITLOG_PARTITION_SCALE_MAX_OPEN_FILES"
	partitionScaleChildEnv    = "COMMITLOG_PARTITION_SCALE_CHILD_DIR"
)

// partitionScaleShape returns the topics and partitions per topic COMMITLOG_PARTITION_SCALE asks
// for.
func partitionScaleShape(t testing.TB) (topics, partitions int) {
	v := os.Getenv(partitionScaleEnv)
	a, b, ok := strings.Cut(v, "x")
	topics, err1 := strconv.Atoi(a)
	partitions, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || topics < 1 || partitions < 1 {
		t.Fatalf("%s=%q: want <topics>x<partitions>, such as 1000x10", partitionScaleEnv, v)
	}
	return topics, partitions
}

// partitionScaleOptions are the options of every open of the measurement.
func partitionScaleOptions(t testing.TB) []Option {
	opts := []Option{WithSync(SyncNever), WithRetentionCheckInterval(-1)}
	if v := os.Getenv(partitionScaleMaxFilesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		opts = append(opts, WithMaxOpenFiles(n))
	}
	return opts
}

func partitionScaleTopic(i int) string { return fmt.Sprintf("topic-%05d", i) }

// openDescriptors returns the number of descriptors the process holds.
func openDescriptors(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// residentKiB returns VmRSS of /proc/self/status, KiB.
func residentKiB(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// appendEach appends one record to every partition of the store's topics and returns how many.
func appendEach(t testing.TB, s *Store, topics, partitions int, value string) {
	ctx := context.Background()
	for i := range topics {
		tp, err := s.Topic(partitionScaleTopic(i))
		require.NoError(t, err)
		for p := range int32(partitions) {
			part, err := tp.Partition(p)
			require.NoError(t, err)
			require.NoError(t, part.Append(ctx, &Record{Key: []byte(strconv.Itoa(int(p))), Value: []byte(value)}))
		}
	}
}

// checkEnds fails unless every partition's log end offset is want.
func checkEnds(t testing.TB, s *Store, topics, partitions int, want int64) {
	for i := range topics {
		tp, err := s.Topic(partitionScaleTopic(i))
		require.NoError(t, err)
		for p := range int32(partitions) {
			part, err := tp.Partition(p)
			require.NoError(t, err)
			require.Equal(t, want, part.LogEndOffset(), "%s-%d", tp.Name(), p)
		}
	}
}

func TestPartitionScaleMeasure(t *testing.T) {
	if dir := os.Getenv(partitionScaleChildEnv); dir != "" {
		partitionScaleChild(t, dir)
		return
	}
	if os.Getenv(partitionScaleEnv) == "" {
		t.Skipf("a measurement: set %s=<topics>x<partitions> to run it", partitionScaleEnv)
	}
	topics, partitions := partitionScaleShape(t)
	dir := filepath.Join(t.TempDir(), "store")
	opts := partitionScaleOptions(t)
	report := func(step string, d time.Duration) {
		t.Logf("%-22s %8.3f s  descriptors %6d  VmRSS %7.1f MiB", step, d.Seconds(), openDescriptors(t), float64(residentKiB(t))/1024)
	}
	t.Logf("%d topics x %d partitions = %d partitions, SyncNever, one record each; before: descriptors %d, VmRSS %.1f MiB",
		topics, partitions, topics*partitions, openDescriptors(t), float64(residentKiB(t))/1024)

	// One CreateTopic call a topic, in a store of its own, removed afterwards.
	loopDir := filepath.Join(t.TempDir(), "store-loop")
	start := time.Now()
	s, err := Open(loopDir, opts...)
	require.NoError(t, err)
	for i := range topics {
		_, err := s.CreateTopic(partitionScaleTopic(i), TopicConfig{Partitions: int32(partitions)})
		require.NoError(t, err)
	}
	report("create (each)", time.Since(start))
	require.NoError(t, s.Close())
	require.NoError(t, os.RemoveAll(loopDir))

	// Every topic in one CreateTopics call, as one Kafka CreateTopics request.
	start = time.Now()
	s, err = Open(dir, opts...)
	require.NoError(t, err)
	batch := make(map[string]TopicConfig, topics)
	for i := range topics {
		batch[partitionScaleTopic(i)] = TopicConfig{Partitions: int32(partitions)}
	}
	for name, r := range s.CreateTopics(batch) {
		require.NoError(t, r.Err, name)
	}
	report("create (batch)", time.Since(start))
	appendEach(t, s, topics, partitions, "created")
	report("create (batch)+append", time.Since(start))

	start = time.Now()
	require.NoError(t, s.Close())
	report("close", time.Since(start))

	start = time.Now()
	s, err = Open(dir, opts...)
	require.NoError(t, err)
	report("reopen (clean)", time.Since(start))
	checkEnds(t, s, topics, partitions, 1)
	require.NoError(t, s.Close())

	// A child opens the store, appends one more record to every partition and is killed.
	cmd := exec.Command(os.Args[0], "-test.run=^TestPartitionScaleMeasure$", "-test.count=1")
	cmd.Env = append(os.Environ(), partitionScaleChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "appended" {
			ready = true
			break
		}
	}
	require.True(t, ready, "the child did not append")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	start = time.Now()
	s, err = Open(dir, opts...)
	require.NoError(t, err)
	report("reopen (after kill)", time.Since(start))
	checkEnds(t, s, topics, partitions, 2)
	start = time.Now()
	require.NoError(t, s.Close())
	report("close", time.Since(start))
}

// partitionScaleChild opens the store in dir, appends one record to every partition, says
// "appended" on stdout and waits to be killed.
func partitionScaleChild(t *testing.T, dir string) {
	topics, partitions := partitionScaleShape(t)
	s, err := Open(dir, partitionScaleOptions(t)...)
	require.NoError(t, err)
	appendEach(t, s, topics, partitions, "before the kill")
	fmt.Println("appended")
	time.Sleep(time.Hour)
}
