package main

import (
	"bufio"
	"bytes"
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
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka workloads (k), run with -workloads=kafka: one kgo client in this process against each
// server in a child process (kafka_servers.go), case by case, interleaved over the runs as the
// other workloads are.

// KafkaCase is one measured configuration of the Kafka workloads.
type KafkaCase struct {
	// ID names the case: p1, p4, consume, steady.
	ID    string
	Title string
	// Partitions of the case's topic.
	Partitions int32
	// Records produced (p1, p4, steady) or consumed (consume).
	Records int
	// Rate is the steady case's records/s (0: as fast as the client goes).
	Rate float64
}

// kafkaSteadyRate is the rate of the steady case: records/s, below every server's saturation.
const kafkaSteadyRate = 100_000

// kafkaCases returns the cases at scale.
func kafkaCases(scale float64) []KafkaCase {
	n := func(full int) int { return max(4000, int(float64(full)*scale)/4000*4000) }
	steady := n(5 * kafkaSteadyRate) // 5 s
	return []KafkaCase{
		{ID: "p1", Title: fmt.Sprintf("produce %s records to 1 partition", count(n(1_000_000))), Partitions: 1, Records: n(1_000_000)},
		{ID: "p4", Title: fmt.Sprintf("produce %s records to 4 partitions", count(n(2_000_000))), Partitions: 4, Records: n(2_000_000)},
		{ID: "consume", Title: fmt.Sprintf("consume %s records of 4 partitions from the earliest offsets", count(n(2_000_000))), Partitions: 4, Records: n(2_000_000)},
		{ID: "steady", Title: fmt.Sprintf("produce at %s records/s for %s to 4 partitions", count(kafkaSteadyRate), time.Duration(float64(steady)/kafkaSteadyRate*float64(time.Second))),
			Partitions: 4, Records: steady, Rate: kafkaSteadyRate},
	}
}

// selectKafkaCases returns the cases named in list (comma-separated; "all" or empty for all).
func selectKafkaCases(all []KafkaCase, list string) ([]KafkaCase, error) {
	if list == "" || list == "all" {
		return all, nil
	}
	var out []KafkaCase
	for _, c := range all {
		for id := range strings.SplitSeq(list, ",") {
			if strings.TrimSpace(id) == c.ID {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Kafka case in %q (have p1, p4, consume, steady)", list)
	}
	return out, nil
}

// KafkaResult is what one case measured against one server.
type KafkaResult struct {
	Records int64
	Bytes   int64 // key and value bytes
	Seconds float64
	// P50, P99 and P999 are the produce latencies in ms (produce cases).
	P50, P99, P999 float64
	// Requests is the number of Produce requests of the timed part, ReqP50, ReqP99 and ReqMax
	// their round trips in ms.
	Requests               int
	ReqP50, ReqP99, ReqMax float64
	// LagP99 and LagMax say how late the steady case's Produce calls were against their due
	// times, in ms: the client's own delays.
	LagP99, LagMax float64
	// ServerCPU and ClientCPU are the user and system CPU seconds of the server's process and of
	// this one during the timed part.
	ServerCPU, ClientCPU float64
	// ServerRSS is the server process's peak RSS during the timed part (on top of what it
	// already held).
	ServerRSS int64
	// Idempotent says that the producer got a producer id (InitProducerID).
	Idempotent bool
	Err        string
}

// RecordsPerSec is the throughput of the timed part.
func (r *KafkaResult) RecordsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Records) / r.Seconds
}

// kafkaRun is the state of one -workloads=kafka run.
type kafkaRun struct {
	exe        string
	root       string
	gen        *Gen
	cpuProfile string // prefix of the servers' CPU profiles ("" for none)
	log        io.Writer
	// Results holds every run's result by case and system name.
	Results map[string]map[string][]KafkaResult
}

// runKafka runs the Kafka workloads and writes their section of the report.
func runKafka(f *flags) error {
	all := kafkaSystems()
	systems := all
	if f.systems != "" && f.systems != "all" {
		systems = nil
		for name := range strings.SplitSeq(f.systems, ",") {
			s, err := kafkaSystemByName(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			systems = append(systems, s)
		}
	}
	if f.cpuProfile != "" {
		if _, err := os.Stat(filepath.Dir(f.cpuProfile)); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	runs := f.runs
	if !f.runsSet {
		runs = 1
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	root, err := logRoot()
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	cases, err := selectKafkaCases(kafkaCases(f.scale), f.cases)
	if err != nil {
		return err
	}
	rep := &KafkaReport{Command: command(), Started: time.Now(), Machine: describeMachine(root), Scale: f.scale, Runs: runs,
		Systems: systems, Cases: cases, LoadBefore: loadAverage()}
	kr := &kafkaRun{exe: exe, root: root, gen: NewGen(100), cpuProfile: f.cpuProfile, log: os.Stderr,
		Results: map[string]map[string][]KafkaResult{}}
	for run := 1; run <= runs; run++ {
		for _, c := range rep.Cases {
			for _, s := range systems {
				if !s.Takes(c.ID) {
					continue
				}
				res := kr.runCase(s, c, run)
				if kr.Results[c.ID] == nil {
					kr.Results[c.ID] = map[string][]KafkaResult{}
				}
				kr.Results[c.ID][s.Name] = append(kr.Results[c.ID][s.Name], res)
				fmt.Fprintf(kr.log, "run %d/%d  %-8s %-17s %s\n", run, runs, c.ID, s.Name, kafkaProgress(res))
			}
		}
	}
	rep.Results, rep.Elapsed, rep.LoadAfter = kr.Results, time.Since(rep.Started), loadAverage()
	out := f.out
	if !f.outSet {
		out = "-"
	}
	return writeKafkaReport(rep, out)
}

// writeKafkaReport writes rep to path, or to standard output for "-".
func writeKafkaReport(rep *KafkaReport, path string) error {
	if path == "-" {
		return rep.Write(os.Stdout)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(rep.Write(out), out.Close())
}

// kafkaProgress is one progress line's figures.
func kafkaProgress(r KafkaResult) string {
	if r.Err != "" {
		return "FAILED: " + r.Err
	}
	s := fmt.Sprintf("%s records/s, %.1f MB/s", human(r.RecordsPerSec()), float64(r.Bytes)/1e6/r.Seconds)
	if r.P50 > 0 {
		s += fmt.Sprintf(", p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms", r.P50, r.P99, r.P999)
	}
	if r.LagMax > 0 {
		s += fmt.Sprintf(", Produce calls late by p99 %.1f ms, max %.1f ms", r.LagP99, r.LagMax)
	}
	if r.Requests > 0 {
		s += fmt.Sprintf(", %d requests (%.0f records each, round trip p50 %.1f ms, p99 %.1f ms, max %.1f ms)", r.Requests, float64(r.Records)/float64(r.Requests), r.ReqP50, r.ReqP99, r.ReqMax)
	}
	return s + fmt.Sprintf(", server %.2f µs/record, client %.2f µs/record", 1e6*r.ServerCPU/float64(r.Records), 1e6*r.ClientCPU/float64(r.Records))
}

// runCase measures case c against a new server s; a failure is the result's Err.
func (kr *kafkaRun) runCase(s *KafkaSystem, c KafkaCase, run int) KafkaResult {
	dir, err := os.MkdirTemp(kr.root, fmt.Sprintf("%s-%s-run%d-", s.Name, c.ID, run))
	if err != nil {
		return KafkaResult{Err: err.Error()}
	}
	defer os.RemoveAll(dir)
	var fill int64
	if s.Kind == KindBaseline && c.ID == "consume" {
		fill = int64(c.Records) / int64(c.Partitions)
	}
	args := []string{"-kafka-serve", s.Name, "-dir", dir, "-discard-fill", strconv.FormatInt(fill, 10)}
	if kr.cpuProfile != "" {
		args = append(args, "-cpuprofile", fmt.Sprintf("%s-%s-%s-run%d.pprof", kr.cpuProfile, s.Name, c.ID, run))
	}
	srv, err := startKafkaServer(kr.exe, args...)
	if err != nil {
		return KafkaResult{Err: err.Error()}
	}
	res, err := kr.measure(srv, s, c)
	if err = errors.Join(err, srv.stop()); err != nil {
		res.Err = err.Error()
	}
	return res
}

// measure runs case c against the server srv.
func (kr *kafkaRun) measure(srv *serverProc, s *KafkaSystem, c KafkaCase) (KafkaResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	topic := "bench-" + c.ID
	reqs := &requestTimes{}
	cl, err := newKafkaClient(srv.addr, kgo.DefaultProduceTopic(topic), kgo.WithHooks(reqs))
	if err != nil {
		return KafkaResult{}, err
	}
	closeClient := sync.OnceFunc(cl.Close)
	defer closeClient()
	if err := createKafkaTopic(ctx, cl, topic, c.Partitions); err != nil {
		return KafkaResult{}, err
	}
	res := KafkaResult{Records: int64(c.Records), Bytes: int64(c.Records) * (keySize + 100)}
	if id, _, err := cl.ProducerID(ctx); err == nil && id >= 0 {
		res.Idempotent = true
	}
	if c.ID == "consume" {
		if s.Kind != KindBaseline {
			// The topic is filled first, not timed.
			if _, err := produceRecords(ctx, cl, kr.gen, 0, c.Records, 0); err != nil {
				return res, fmt.Errorf("filling the topic: %w", err)
			}
		}
		closeClient()
		srvCPU, cliCPU, err := srv.mark()
		if err != nil {
			return res, err
		}
		d, err := consumeRecords(ctx, srv.addr, topic, kr.gen, int64(c.Records))
		if err != nil {
			return res, err
		}
		res.Seconds = d.Seconds()
		return res, kr.finish(srv, &res, srvCPU, cliCPU)
	}
	// One record first, not timed, so that the topic's metadata and the producer id are loaded
	// before the clock starts.
	if _, err := produceRecords(ctx, cl, kr.gen, 0, 1, 0); err != nil {
		return res, fmt.Errorf("the first record: %w", err)
	}
	srvCPU, cliCPU, err := srv.mark()
	if err != nil {
		return res, err
	}
	reqs.reset()
	p, err := produceRecords(ctx, cl, kr.gen, 1, c.Records, c.Rate)
	if err != nil {
		return res, err
	}
	res.Seconds = p.elapsed.Seconds()
	res.P50, res.P99, res.P999 = percentile(p.latencies, 0.5), percentile(p.latencies, 0.99), percentile(p.latencies, 0.999)
	if len(p.lags) > 0 {
		res.LagP99, res.LagMax = percentile(p.lags, 0.99), percentile(p.lags, 1)
	}
	rt := reqs.sorted()
	res.Requests, res.ReqP50, res.ReqP99, res.ReqMax = len(rt), percentile(rt, 0.5), percentile(rt, 0.99), percentile(rt, 1)
	if err := kr.finish(srv, &res, srvCPU, cliCPU); err != nil {
		return res, err
	}
	end, err := endOffsets(ctx, cl, topic, c.Partitions)
	if err == nil && end != int64(c.Records)+1 {
		err = fmt.Errorf("the topic ends at offsets summing to %d after %d records acknowledged", end, c.Records+1)
	}
	return res, err
}

// finish takes the server's and the client's CPU time and the server's peak RSS at the end of
// the timed part.
func (kr *kafkaRun) finish(srv *serverProc, res *KafkaResult, srvCPU, cliCPU int64) error {
	cli := processCPU()
	f, err := srv.ask("stat", "STAT ")
	if err != nil {
		return err
	}
	res.ServerCPU = float64(f[0]-srvCPU) / 1e9
	res.ClientCPU = float64(cli-cliCPU) / 1e9
	res.ServerRSS = f[1]
	return nil
}

// serverProc is a server child process.
type serverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its standard output, line by line
	stderr *lockedBuffer
	done   chan error
	addr   string
}

// startKafkaServer starts a server child with args and waits for its address.
func startKafkaServer(exe string, args ...string) (*serverProc, error) {
	cmd := exec.Command(exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody asked: dropped
			}
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	select {
	case line, ok := <-p.lines:
		if addr, found := strings.CutPrefix(line, listenPrefix); ok && found {
			p.addr = addr
			return p, nil
		}
		p.stop()
		return nil, fmt.Errorf("server child: no address (%q): %s", line, p.stderrTail())
	case <-time.After(time.Minute):
		p.stop()
		return nil, errors.New("server child: no address within a minute")
	}
}

// mark starts the timed part: it returns the server's and this process's CPU time so far.
func (p *serverProc) mark() (server, client int64, err error) {
	f, err := p.ask("mark", "CPU ")
	if err != nil {
		return 0, 0, err
	}
	return f[0], processCPU(), nil
}

// ask sends cmd to the child and returns the numbers of its answer line, which starts with
// prefix.
func (p *serverProc) ask(cmd, prefix string) ([]int64, error) {
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		return nil, fmt.Errorf("server child: %w: %s", err, p.stderrTail())
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return nil, fmt.Errorf("server child exited: %s", p.stderrTail())
			}
			rest, found := strings.CutPrefix(line, prefix)
			if !found {
				continue
			}
			var out []int64
			for f := range strings.FieldsSeq(rest) {
				v, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("server child: bad answer %q", line)
				}
				out = append(out, v)
			}
			return out, nil
		case <-timeout:
			return nil, fmt.Errorf("server child: no answer to %q within a minute", cmd)
		}
	}
}

// stop ends the child (its standard input closes) and waits for it; after a minute it is killed.
func (p *serverProc) stop() error {
	p.stdin.Close()
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("server child: %w: %s", err, p.stderrTail())
		}
		return nil
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.done
		return errors.New("server child did not stop within a minute of its input's end: killed")
	}
}

// stderrTail is the end of the child's standard error so far.
func (p *serverProc) stderrTail() string {
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	return s
}

// loadAverage is the machine's 1-minute load average ("" where unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
