//go:build linux

package commitlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Descriptor tests: they count the process's descriptors in /proc/self/fd and its mappings in
// /proc/self/maps, so they are Linux's (fd_limit_other_test.go skips them elsewhere).

const (
	fdLimitChildEnv = "COMMITLOG_FDLIMIT_CHILD_DIR"
	// fdLimit is the child's RLIMIT_NOFILE: the limit a small container or an old distribution
	// gives a process.
	fdLimit = 256
	// fdLimitReadTime is how long the child reads and seeks after its appends.
	fdLimitReadTime = 5 * time.Second
	// fdLimitBytes is the record bytes the child appends over its 4 partitions of 4 KiB segments:
	// thousands of segments, each holding 3 descriptors while open.
	fdLimitBytes = 10 << 20
	fdLimitValue = 1000 // bytes per record value
)

// fileMappings returns the lines of /proc/self/maps that map a file. Anonymous mappings come and
// go with the Go heap whatever the store does, so they are not compared.
func fileMappings(t testing.TB) []string {
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	var out []string
	for ln := range strings.Lines(string(b)) {
		// address perms offset dev inode path
		f := strings.Fields(ln)
		if len(f) >= 6 && strings.HasPrefix(f[5], "/") {
			out = append(out, strings.TrimSpace(ln))
		}
	}
	return out
}

// mappingsUnder returns the lines of maps that map a file under dir.
func mappingsUnder(maps []string, dir string) []string {
	var out []string
	for _, ln := range maps {
		if strings.Contains(ln, dir+string(filepath.Separator)) {
			out = append(out, ln)
		}
	}
	return out
}

// fdValue returns the value of the record keyed i in the descriptor tests.
func fdValue(i int) []byte {
	v := bytes.Repeat([]byte{byte(i), byte(i >> 8), byte(i >> 16)}, fdLimitValue/3+1)
	return v[:fdLimitValue]
}

// fdCheckRecord reports how rec differs from the record its key names.
func fdCheckRecord(rec *Record) error {
	i, err := strconv.Atoi(strings.TrimPrefix(string(rec.Key), "k-"))
	if err != nil {
		return fmt.Errorf("%s partition %d offset %d: key %q", rec.Topic, rec.Partition, rec.Offset, rec.Key)
	}
	if !bytes.Equal(rec.Value, fdValue(i)) {
		return fmt.Errorf("%s partition %d offset %d: value of record %d differs", rec.Topic, rec.Partition, rec.Offset, i)
	}
	return nil
}

// fdAppend appends records from..to-1 of the descriptor tests' workload to tp, n per call.
func fdAppend(ctx context.Context, tp *Topic, from, to, n int) error {
	for i := from; i < to; i += n {
		recs := make([]*Record, 0, n)
		for j := i; j < min(i+n, to); j++ {
			recs = append(recs, &Record{Key: fmt.Appendf(nil, "k-%d", j), Value: fdValue(j)})
		}
		if err := tp.Append(ctx, recs...); err != nil {
			return fmt.Errorf("append records %d..%d: %w", i, i+len(recs)-1, err)
		}
	}
	return nil
}

// TestStoreCloseReleasesDescriptorsAndMappings opens a store on the OS file system, creates
// topics, appends across many segments (more than the bound keeps open), reads, lets retention
// retire segments, and closes: the process then holds exactly the descriptors and file mappings
// it held before Open.
func TestStoreCloseReleasesDescriptorsAndMappings(t *testing.T) {
	const bound = 8 * filesPerSegment
	run := func(t *testing.T, dir string) (openFiles, mapped int) {
		s, err := Open(dir, WithMaxOpenFiles(bound), WithRetentionCheckInterval(-1))
		require.NoError(t, err)
		ctx := context.Background()
		cfg := smallSegmentConfig()
		cfg.SegmentBytes = 4096
		var topics []*Topic
		for i, name := range []string{"orders", "payments", "audit"} {
			c := cfg
			if i == 2 {
				c.RetentionBytes = 16 << 10 // retention retires most of its segments
			}
			tp, err := s.CreateTopic(name, TopicConfig{Partitions: 2, LogConfig: c})
			require.NoError(t, err)
			require.NoError(t, fdAppend(ctx, tp, 0, 240, 6))
			topics = append(topics, tp)
		}
		for _, tp := range topics {
			r, err := tp.NewReader(ReaderConfig{Name: "fd-" + tp.Name(), Start: Earliest})
			require.NoError(t, err)
			for range 240 {
				rec, err := r.Next(ctx)
				require.NoError(t, err)
				require.NoError(t, fdCheckRecord(rec))
			}
			require.NoError(t, r.Commit(ctx))
			require.NoError(t, r.SeekToTime(time.UnixMilli(0)))
			require.NoError(t, r.Close())
			// Reads by offset map the .log files they read.
			var rec Record
			for _, p := range tp.parts() {
				for off := p.LogStartOffset(); off < p.LogEndOffset(); off += 7 {
					require.NoError(t, p.ReadRecord(off, &rec))
					require.NoError(t, fdCheckRecord(&rec))
				}
			}
		}
		deleted, err := s.ApplyRetention()
		require.NoError(t, err)
		require.Positive(t, deleted)
		segments := 0
		for _, tp := range topics {
			for _, p := range tp.parts() {
				segments += p.SegmentCount()
			}
		}
		require.Greater(t, segments*filesPerSegment, 2*bound, "the workload must pass the bound")
		openFiles, _, _ = s.o.caches.Files.Stats()
		mapped = len(mappingsUnder(fileMappings(t), dir))
		require.NoError(t, s.Close())
		return openFiles, mapped
	}
	// The first file a process opens sets up the runtime's poller, whose descriptors live as long
	// as the process: a first run, on another directory, makes the counts compare like with like.
	run(t, t.TempDir())

	dir := t.TempDir()
	fds, maps := openFDs(t), fileMappings(t)
	openFiles, mapped := run(t, dir)
	require.Equal(t, bound, openFiles)
	if osMappingsLive {
		require.Positive(t, mapped, "no index of %s was mapped while the store was open", dir)
	}
	// An open segment maps its two indexes and, once ReadRecord has read it, its .log file.
	require.LessOrEqual(t, mapped, bound, "more files mapped than the bound allows")
	require.Equal(t, fds, openFDs(t), "descriptors before Open and after Close")
	after := fileMappings(t)
	require.Empty(t, mappingsUnder(after, dir), "mappings of the store's files after Close")
	require.Equal(t, maps, after, "file mappings before Open and after Close")
}

// TestDescriptorLimit runs a store in a child process whose RLIMIT_NOFILE is 256: 4 partitions of
// 4 KiB segments take 10 MiB of appends (thousands of segments, three descriptors each when open),
// then readers read and seek at random for 5 seconds. The child must meet no EMFILE, and reports
// what it did.
func TestDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 10 MiB and reads for 5 seconds in a child process; skipped in -short mode")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDescriptorLimitChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	require.NoError(t, err, "child failed\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var report string
	for ln := range strings.Lines(stdout.String()) {
		if strings.HasPrefix(ln, "fdlimit ") {
			report = strings.TrimSpace(ln)
		}
	}
	require.NotEmpty(t, report, "no report line\nstdout:\n%s", stdout.String())
	t.Logf("child ran %v: %s", time.Since(start).Round(time.Millisecond), report)
	var limit, bound, segments, appended, reads, seeks, peakFiles, peakFDs int
	_, err = fmt.Sscanf(report, "fdlimit limit=%d bound=%d segments=%d appended=%d reads=%d seeks=%d peak-segment-files=%d peak-fds=%d",
		&limit, &bound, &segments, &appended, &reads, &seeks, &peakFiles, &peakFDs)
	require.NoError(t, err, report)
	require.Equal(t, fdLimit, limit)
	require.Equal(t, fdLimit/4, bound, "the default bound is a quarter of the descriptor limit")
	require.Equal(t, fdLimitBytes/fdLimitValue, appended)
	require.Greater(t, segments, 2000)
	require.Positive(t, reads)
	require.Positive(t, seeks)
	require.Less(t, peakFDs, fdLimit)
	// The bound, plus one segment per goroutine that may hold one open beyond it.
	require.LessOrEqual(t, peakFiles, bound+8*filesPerSegment)
}

// TestDescriptorLimitChild is the child of TestDescriptorLimit; on its own it skips.
func TestDescriptorLimitChild(t *testing.T) {
	dir := os.Getenv(fdLimitChildEnv)
	if dir == "" {
		t.Skip("run by TestDescriptorLimit in a child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	// First, before anything opens: the store's default bound is derived from this limit.
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: fdLimit, Max: fdLimit}); err != nil {
		fail("setrlimit: %v", err)
	}
	checkEMFILE := func(what string, err error) {
		if errors.Is(err, syscall.EMFILE) {
			fail("EMFILE: %s: %v", what, err)
		}
		if err != nil {
			fail("%s: %v", what, err)
		}
	}

	// Sample the descriptors held while the child works.
	var peakFDs atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
				peakFDs.Store(max(peakFDs.Load(), int64(len(entries))))
			}
			select {
			case <-stopSampling:
				return
			case <-tk.C:
			}
		}
	}()

	s, err := Open(dir, WithRetentionCheckInterval(-1))
	checkEMFILE("open", err)
	ctx := context.Background()
	tp, err := s.CreateTopic("fd", TopicConfig{Partitions: 4, LogConfig: LogConfig{
		SegmentBytes:       4 << 10,
		SegmentIndexBytes:  1 << 10,
		IndexIntervalBytes: 1 << 10,
		// Durability is not what this test is about; every roll still syncs the sealed segment.
		Sync: SyncNever,
	}})
	checkEMFILE("create topic", err)
	const total = fdLimitBytes / fdLimitValue
	// 12 records a call, 3 a partition: a batch of 3 KiB, so about one segment per batch.
	checkEMFILE("append", fdAppend(ctx, tp, 0, total, 12))
	segments := 0
	for _, p := range tp.parts() {
		segments += p.SegmentCount()
	}

	var reads, seeks atomic.Int64
	deadline := time.Now().Add(fdLimitReadTime)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			r, err := tp.NewReader(ReaderConfig{Start: Earliest, MaxBytes: 8 << 10})
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			for time.Now().Before(deadline) {
				p := tp.parts()[rng.IntN(len(tp.parts()))]
				switch rng.IntN(4) {
				case 0: // a time seek: every partition through its time index
					err = r.SeekToTime(time.UnixMilli(0))
					seeks.Add(1)
				case 1: // a raw read at a random offset
					var recs []*Record
					recs, err = p.ReadRecords(rng.Int64N(p.LogEndOffset()), 1)
					for _, rec := range recs {
						err = errors.Join(err, fdCheckRecord(rec))
					}
					reads.Add(1)
				default:
					err = r.Seek(p.ID(), rng.Int64N(p.LogEndOffset()))
					seeks.Add(1)
				}
				for range 3 {
					if err != nil {
						break
					}
					var rec *Record
					rctx, cancel := context.WithTimeout(ctx, time.Second)
					rec, err = r.Next(rctx)
					cancel()
					if errors.Is(err, context.DeadlineExceeded) {
						// Every partition read to its end: nothing to wait for.
						err = nil
						break
					}
					if err == nil {
						err = fdCheckRecord(rec)
						reads.Add(1)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		checkEMFILE("read", err)
	}
	_, peakFiles, _ := s.o.caches.Files.Stats()
	bound := s.o.caches.Files.Limit()
	checkEMFILE("close", s.Close())
	close(stopSampling)
	<-sampled
	var rl unix.Rlimit
	checkEMFILE("getrlimit", unix.Getrlimit(unix.RLIMIT_NOFILE, &rl))
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "fdlimit limit=%d bound=%d segments=%d appended=%d reads=%d seeks=%d peak-segment-files=%d peak-fds=%d\n",
		rl.Cur, bound, segments, total, reads.Load(), seeks.Load(), peakFiles, peakFDs.Load())
	w.Flush()
}
