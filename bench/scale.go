package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/commitlog-go/commitlog"
)

// The partition scale workload: one store of p.ScaleTopics topics of p.ScalePartitions
// partitions, one record in each partition. Case "scale" creates it (its topics in one
// Store.CreateTopics call; first, in another store, with one Store.CreateTopic call a topic, for
// comparison), closes it and opens it again in one process; case "scalekill" has a grandchild
// (the bench binary in -fill-scale mode) create it and kills it with SIGKILL, then opens the folder as it was left. Both report the
// descriptors and the resident set of the process holding the store. A failure (typically
// "too many open files") ends the case with an error, which the report shows as a failed row.

// scaleSampleEvery is how many topics create makes between two samples of descriptors and RSS.
const scaleSampleEvery = 100

// ScaleResult is what a scale case measured.
type ScaleResult struct {
	// Partitions is the store's partition count (topics × partitions a topic).
	Partitions int `json:"partitions"`
	// Created is how many partitions were created, with their record, before a failure.
	Created int `json:"created"`
	// CreateMS, CloseMS and ReopenMS are the times of the phases, in milliseconds (0 for a phase
	// the case did not run). CreateMS creates every topic in one Store.CreateTopics call (as one
	// Kafka CreateTopics request), then appends.
	CreateMS float64 `json:"create_ms,omitempty"`
	// CreateEachMS is the same creation with one Store.CreateTopic call a topic, in a store of
	// its own (removed afterwards), in milliseconds; 0 when the case did not run it.
	CreateEachMS float64 `json:"create_each_ms,omitempty"`
	// LayoutMS is the file system's share, measured just before the CreateTopics call: the
	// same folders made and files written by plain os.Mkdir and os.WriteFile (one folder a
	// partition, Kafka's five small files in it, no fsync, 16 goroutines as the store's
	// workers), in a folder of its own, in milliseconds; 0 when the case did not run it.
	LayoutMS float64 `json:"layout_ms,omitempty"`
	CloseMS  float64 `json:"close_ms,omitempty"`
	ReopenMS float64 `json:"reopen_ms,omitempty"`
	// FDs is the most descriptors the process held while the store was open; SegmentFDs the
	// most of them that were segment files.
	FDs        int `json:"fds"`
	SegmentFDs int `json:"segment_fds"`
	// RSS is the most VmRSS seen while the store was open, in bytes.
	RSS int64 `json:"rss"`
	// FDLimit is the process's soft RLIMIT_NOFILE; MaxOpenFiles the store's WithMaxOpenFiles.
	FDLimit      int64 `json:"fd_limit"`
	MaxOpenFiles int   `json:"max_open_files"`
	// sampling is the time spent counting descriptors during create, taken out of CreateMS.
	sampling time.Duration
	// fdDir is /proc/self/fd, opened before the store so that counting needs no new descriptor
	// when the store has taken them all (nil: opened at each count).
	fdDir *os.File
}

// observe samples the process's descriptors and VmRSS, keeping the most seen.
func (sr *ScaleResult) observe() {
	t0 := time.Now()
	all, seg := countFDs(sr.fdDir)
	sr.FDs, sr.SegmentFDs = max(sr.FDs, all), max(sr.SegmentFDs, seg)
	sr.RSS = max(sr.RSS, statusBytes("VmRSS"))
	sr.sampling += time.Since(t0)
}

// scaleOptions are the scale store's options.
func scaleOptions(p Params) []commitlog.Option {
	return []commitlog.Option{commitlog.WithSync(commitlog.SyncNever), commitlog.WithMaxOpenFiles(p.ScaleMaxOpenFiles)}
}

// scaleTopic names topic i.
func scaleTopic(i int) string { return fmt.Sprintf("t%05d", i) }

// scaleRecord is the record of partition id of topic i: its names as key, 100 bytes of gen's.
func scaleRecord(gen *Gen, i int, id int32) *commitlog.Record {
	return &commitlog.Record{Key: fmt.Appendf(nil, "%s/%d", scaleTopic(i), id), Value: gen.Value(int64(i)*1000 + int64(id))}
}

// createScale opens a store in dir and creates every topic with one record a partition,
// calling sample every scaleSampleEvery topics. The topics are created in one
// Store.CreateTopics call, or with each set in one Store.CreateTopic call a topic, then the
// records appended. It returns the store (nil when Open failed) and the partitions created
// before an error.
func createScale(dir string, p Params, gen *Gen, sample func(), each bool) (*commitlog.Store, int, error) {
	s, err := commitlog.Open(dir, scaleOptions(p)...)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the store: %w", err)
	}
	cfg := commitlog.TopicConfig{Partitions: int32(p.ScalePartitions)}
	topics := make([]*commitlog.Topic, p.ScaleTopics)
	if each {
		for i := range topics {
			if topics[i], err = s.CreateTopic(scaleTopic(i), cfg); err != nil {
				return s, i * p.ScalePartitions, fmt.Errorf("creating topic %s: %w", scaleTopic(i), err)
			}
			if (i+1)%scaleSampleEvery == 0 {
				sample()
			}
		}
	} else {
		batch := make(map[string]commitlog.TopicConfig, p.ScaleTopics)
		for i := range topics {
			batch[scaleTopic(i)] = cfg
		}
		res := s.CreateTopics(batch)
		for i := range topics {
			r := res[scaleTopic(i)]
			if r.Err != nil {
				return s, 0, fmt.Errorf("creating topic %s: %w", scaleTopic(i), r.Err)
			}
			topics[i] = r.Topic
		}
		sample()
	}
	ctx := context.Background()
	created := 0
	for i, t := range topics {
		for id := range t.PartitionCount() {
			part, err := t.Partition(id)
			if err == nil {
				err = part.Append(ctx, scaleRecord(gen, i, id))
			}
			if err != nil {
				return s, created, fmt.Errorf("appending to partition %d of topic %s: %w", id, scaleTopic(i), err)
			}
			created++
		}
		if (i+1)%scaleSampleEvery == 0 {
			sample()
		}
	}
	return s, created, nil
}

// timedCreateEach times createScale with one CreateTopic call a topic, in a folder beside dir,
// into sr.CreateEachMS. It returns that folder, for the caller to remove once the case's timed
// phases are done (a removal of tens of thousands of files would slow the next phase).
func timedCreateEach(dir string, p Params, gen *Gen, sr *ScaleResult) (string, error) {
	each, err := os.MkdirTemp(filepath.Dir(dir), "scale-each-")
	if err != nil {
		return "", err
	}
	// Not sampled: the descriptors and memory reported are those of the store the case keeps.
	t0 := time.Now()
	s, _, err := createScale(each, p, gen, func() {}, true)
	sr.CreateEachMS = ms(time.Since(t0))
	if err != nil {
		err = scaleFailure(sr, "create (one CreateTopic call a topic)", each, err)
	}
	if s != nil {
		err = errors.Join(err, s.Close())
	}
	return each, err
}

// layoutFiles are the files of a new partition's folder in Kafka's layout, as the store writes
// them: its first segment, the segment's two indexes, and the partition's two state files.
var layoutFiles = []string{"00000000000000000000.log", "00000000000000000000.index",
	"00000000000000000000.timeindex", "partition.metadata", "leader-epoch-checkpoint"}

// timedLayout times the file system's share of createScale into sr.LayoutMS: one folder a
// partition beside dir, named as the store names it, each with layoutFiles written (a few
// bytes each, no fsync), by 16 goroutines. It returns that folder, for the caller to remove.
func timedLayout(dir string, p Params, sr *ScaleResult) (string, error) {
	root, err := os.MkdirTemp(filepath.Dir(dir), "scale-layout-")
	if err != nil {
		return "", err
	}
	n := p.ScaleTopics * p.ScalePartitions
	var next atomic.Int64
	errs := make([]error, 16)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				d := filepath.Join(root, fmt.Sprintf("%s-%d", scaleTopic(i/p.ScalePartitions), i%p.ScalePartitions))
				if err := os.Mkdir(d, 0o755); err != nil {
					errs[w] = err
					return
				}
				for _, f := range layoutFiles {
					if err := os.WriteFile(filepath.Join(d, f), []byte("0123456789"), 0o644); err != nil {
						errs[w] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	sr.LayoutMS = ms(time.Since(t0))
	return root, errors.Join(errs...)
}

// checkScale checks a reopened store: every topic there with its partitions, each holding one
// record, and the records of the first and last topics read back.
func checkScale(s *commitlog.Store, p Params, gen *Gen) error {
	if n := len(s.Topics()); n != p.ScaleTopics {
		return fmt.Errorf("reopened with %d topics, want %d", n, p.ScaleTopics)
	}
	var rec commitlog.Record
	for i := range p.ScaleTopics {
		t, err := s.Topic(scaleTopic(i))
		if err != nil {
			return err
		}
		if n := t.PartitionCount(); n != int32(p.ScalePartitions) {
			return fmt.Errorf("topic %s reopened with %d partitions, want %d", scaleTopic(i), n, p.ScalePartitions)
		}
		for id := range t.PartitionCount() {
			part, err := t.Partition(id)
			if err != nil {
				return err
			}
			if end := part.LogEndOffset(); end != 1 {
				return fmt.Errorf("partition %d of topic %s reopened with log end offset %d, want 1", id, scaleTopic(i), end)
			}
			if i != 0 && i != p.ScaleTopics-1 {
				continue
			}
			if err := part.ReadRecord(0, &rec); err != nil {
				return fmt.Errorf("reading partition %d of topic %s: %w", id, scaleTopic(i), err)
			}
			want := scaleRecord(gen, i, id)
			if string(rec.Key) != string(want.Key) || string(rec.Value) != string(want.Value) {
				return fmt.Errorf("partition %d of topic %s holds a record that differs from the one written", id, scaleTopic(i))
			}
		}
	}
	return nil
}

// scaleFailure describes where a scale case failed, with the most descriptors seen up to then;
// paths in err are made relative to the store's folder dir, to keep the report's cell short.
func scaleFailure(sr *ScaleResult, phase, dir string, err error) error {
	sr.observe()
	msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
	return fmt.Errorf("%s failed after %s of %s partitions (%s descriptors open at most, %s of them segment files; limit %s): %s",
		phase, count(sr.Created), count(sr.Partitions), count(sr.FDs), count(sr.SegmentFDs), count(int(sr.FDLimit)), msg)
}

// newScaleResult is the result of a scale case before it runs; close releases its descriptor.
func newScaleResult(p Params) (sr *ScaleResult, close func()) {
	sr = &ScaleResult{Partitions: p.ScaleTopics * p.ScalePartitions, FDLimit: fdLimit(), MaxOpenFiles: p.ScaleMaxOpenFiles}
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return sr, func() {}
	}
	sr.fdDir = f
	return sr, func() { f.Close() }
}

// runScale creates the store, closes it and opens it again, timing each (case "scale"); before
// that it times the creation with one CreateTopic call a topic, in another store.
func runScale(dir string, p Params) (Result, error) {
	gen := NewGen(100)
	sr, done := newScaleResult(p)
	defer done()
	r := Result{Scale: sr, Records: int64(sr.Partitions)}
	// First the one-call-a-topic loop, untimed by the meter, in a store of its own, then the
	// file system's share alone; both folders removed once the timed phases are done.
	each, err := timedCreateEach(dir, p, gen, sr)
	if each != "" {
		defer os.RemoveAll(each)
	}
	if err != nil {
		return r, err
	}
	layout, err := timedLayout(dir, p, sr)
	if layout != "" {
		defer os.RemoveAll(layout)
	}
	if err != nil {
		return r, fmt.Errorf("the file system's share: %w", err)
	}
	m := startMeter()
	t0 := time.Now()
	s, created, err := createScale(dir, p, gen, sr.observe, false)
	sr.Created = created
	sr.CreateMS = ms(time.Since(t0) - sr.sampling)
	sr.observe()
	if err != nil {
		err = scaleFailure(sr, "create", dir, err)
		m.stop(&r)
		if s != nil {
			err = errors.Join(err, s.Close())
		}
		return r, err
	}
	t1 := time.Now()
	err = s.Close()
	sr.CloseMS = ms(time.Since(t1))
	if err != nil {
		m.stop(&r)
		return r, fmt.Errorf("close: %w", err)
	}
	err = timedScaleReopen(dir, p, gen, sr)
	m.stop(&r)
	return r, err
}

// timedScaleReopen opens the store in dir, timed, samples descriptors and RSS, checks it and
// closes it.
func timedScaleReopen(dir string, p Params, gen *Gen, sr *ScaleResult) error {
	t0 := time.Now()
	s, err := commitlog.Open(dir, scaleOptions(p)...)
	sr.ReopenMS = ms(time.Since(t0))
	if err != nil {
		return scaleFailure(sr, "reopen", dir, err)
	}
	sr.observe()
	if err := checkScale(s, p, gen); err != nil {
		return errors.Join(fmt.Errorf("checking the reopened store: %w", err), s.Close())
	}
	sr.observe()
	return s.Close()
}

// runScaleKill has a grandchild create the store, kills it with SIGKILL once it says so, and
// times the reopen (case "scalekill").
func runScaleKill(dir string, p Params) (Result, error) {
	sr, done := newScaleResult(p)
	defer done()
	r := Result{Scale: sr, Records: int64(sr.Partitions)}
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.Command(exe, append([]string{"-fill-scale", "-dir", dir}, scaleArgs(p)...)...)
	cmd.Stderr = os.Stderr
	// The writer dies with this process, should the runner kill it first (its timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	line, readErr := bufio.NewReader(out).ReadString('\n')
	killErr := cmd.Process.Signal(syscall.SIGKILL)
	waitErr := cmd.Wait()
	if msg, failed := strings.CutPrefix(strings.TrimSpace(line), "failed "); failed {
		return r, fmt.Errorf("the writer failed: %s", msg)
	}
	if strings.TrimSpace(line) != "ready" {
		return r, fmt.Errorf("the writer did not get ready (%q, %v, kill: %v, wait: %v)", line, readErr, killErr, waitErr)
	}
	sr.Created = sr.Partitions
	m := startMeter()
	err = timedScaleReopen(dir, p, NewGen(100), sr)
	m.stop(&r)
	return r, err
}

// fillScaleUntilKilled is the grandchild of runScaleKill: it creates the store in dir, says
// "ready" on standard output (or "failed" and why), and waits to be killed.
func fillScaleUntilKilled(dir string, p Params) error {
	sr, done := newScaleResult(p)
	defer done()
	_, created, err := createScale(dir, p, NewGen(100), func() {}, false)
	if err != nil {
		sr.Created = created
		err = scaleFailure(sr, "create", dir, err)
		fmt.Printf("failed %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return err
	}
	if _, err := fmt.Println("ready"); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	return errors.New("not killed within an hour")
}

// scaleArgs are the flags that give a child process p's scale sizes.
func scaleArgs(p Params) []string {
	return []string{"-scale-topics", strconv.Itoa(p.ScaleTopics), "-scale-partitions", strconv.Itoa(p.ScalePartitions),
		"-scale-max-open-files", strconv.Itoa(p.ScaleMaxOpenFiles)}
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// countFDs returns the process's open descriptors and how many of them are segment files,
// reading /proc/self/fd through d when not nil (rewound first; it counts itself), else
// opening it for the call (0, 0 when that fails).
func countFDs(d *os.File) (all, segments int) {
	const dir = "/proc/self/fd"
	var names []string
	var err error
	if d != nil {
		if _, err = d.Seek(0, io.SeekStart); err == nil {
			names, err = d.Readdirnames(-1)
		}
	} else {
		var ents []os.DirEntry
		ents, err = os.ReadDir(dir)
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	if err != nil {
		return 0, 0
	}
	for _, name := range names {
		target, err := os.Readlink(filepath.Join(dir, name))
		if err != nil {
			continue // the descriptor ReadDir itself used, closed by now
		}
		all++
		if isSegmentFile(target) {
			segments++
		}
	}
	return all, segments
}

// isSegmentFile reports whether path is a segment's file: its .log, .index, .timeindex or
// .txnindex (a deleted file's link ends in " (deleted)").
func isSegmentFile(path string) bool {
	path = strings.TrimSuffix(path, " (deleted)")
	for _, ext := range []string{".log", ".index", ".timeindex", ".txnindex"} {
		if strings.HasSuffix(path, ext) {
			return true
		}
	}
	return false
}

// statusBytes returns a "kB" field of /proc/self/status (VmRSS, VmHWM) in bytes, 0 when missing.
func statusBytes(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseStatusBytes(f, field)
}

// parseStatusBytes reads field ("VmRSS") from the text of a /proc/PID/status file, whose
// values are in kB, and returns it in bytes; 0 when missing or malformed.
func parseStatusBytes(r io.Reader, field string) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil || kb < 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// fdLimit returns the process's soft RLIMIT_NOFILE, 0 when unknown.
func fdLimit() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int64(rl.Cur)
}
