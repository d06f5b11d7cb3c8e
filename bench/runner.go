package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"
)

// childTimeout bounds one child process.
const childTimeout = 15 * time.Minute

// resultPrefix starts the line a child prints its Result on.
const resultPrefix = "RESULT "

// Runner runs every selected system in every selected case, each in its own child process,
// interleaved: run 1 of every system in a case, then run 2, and so on, so that a slow minute of
// the machine does not fall on one system only.
type Runner struct {
	exe       string
	params    Params
	childArgs []string // flags every child gets
	systems   []*System
	workloads []Workload
	runs      int
	runsOf    map[string]int // systems measured fewer times
	root      string         // parent of every log folder
	log       io.Writer      // progress
	// Results holds every run's result by case and system name.
	Results map[string]map[string][]Result
}

// runsFor is the number of runs of system s.
func (r *Runner) runsFor(s *System) int {
	if n, ok := r.runsOf[s.Name]; ok {
		return min(n, r.runs)
	}
	return r.runs
}

// takes reports whether any selected workload is one of letters.
func (r *Runner) takes(letters string) bool {
	for _, w := range r.workloads {
		if strings.Contains(letters, w.Letter) {
			return true
		}
	}
	return false
}

// Run measures everything.
func (r *Runner) Run() error {
	r.Results = map[string]map[string][]Result{}
	for run := 1; run <= r.runs; run++ {
		if err := r.runOnce(run); err != nil {
			return err
		}
	}
	return nil
}

// runOnce is one interleaved round over all cases and systems.
func (r *Runner) runOnce(run int) error {
	logs := map[string]string{} // system name: folder holding its workload a log
	defer func() {
		for _, d := range logs {
			os.RemoveAll(d)
		}
	}()
	for _, w := range r.workloads {
		for _, c := range w.Cases {
			for _, s := range r.systems {
				if !s.Takes(w.Letter) || run > r.runsFor(s) {
					continue
				}
				res, err := r.runOne(s, c, run, logs)
				if err != nil {
					return err
				}
				if r.Results[c.ID] == nil {
					r.Results[c.ID] = map[string][]Result{}
				}
				r.Results[c.ID][s.Name] = append(r.Results[c.ID][s.Name], res)
				fmt.Fprintf(r.log, "run %d/%d  %-7s %-22s %s\n", run, r.runsFor(s), c.ID, s.Name, summary(res))
			}
		}
	}
	return nil
}

// runOne runs system s in case c in a child and returns its result (with Err set when the
// child failed). Only a failure of the harness itself is returned as an error.
func (r *Runner) runOne(s *System, c Case, run int, logs map[string]string) (Result, error) {
	var dir string
	switch {
	case (c.ID == "d" || c.ID == "e") && s.Persistent:
		if logs[s.Name] == "" {
			// No workload a of this system ran in this round: build its log, not reported.
			d, err := r.newDir(s, run)
			if err != nil {
				return Result{}, err
			}
			logs[s.Name] = d
			if res := r.child(s, "a", d); res.Err != "" {
				return Result{Err: "building (a)'s log: " + res.Err}, nil
			}
		}
		dir = logs[s.Name]
	default:
		d, err := r.newDir(s, run)
		if err != nil {
			return Result{}, err
		}
		if c.ID == "a" && s.Persistent && r.takes("de") && (s.Takes("d") || s.Takes("e")) {
			logs[s.Name] = d
		} else {
			defer os.RemoveAll(d)
		}
		dir = d
	}
	return r.child(s, c.ID, dir), nil
}

// newDir makes an empty folder for one log.
func (r *Runner) newDir(s *System, run int) (string, error) {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(s.Name)
	return os.MkdirTemp(r.root, fmt.Sprintf("%s-run%d-", name, run))
}

// child runs one case in a child process and decodes its result.
func (r *Runner) child(s *System, c, dir string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	args := append([]string{"-child", c, "-system", s.Name, "-dir", dir}, r.childArgs...)
	cmd := exec.CommandContext(ctx, r.exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	for line := range strings.Lines(stdout.String()) {
		if js, ok := strings.CutPrefix(line, resultPrefix); ok {
			var res Result
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				return Result{Err: fmt.Sprintf("bad result line %q: %v", line, err)}
			}
			return res
		}
	}
	msg := strings.TrimSpace(stderr.String())
	if len(msg) > 300 {
		msg = msg[len(msg)-300:]
	}
	return Result{Err: fmt.Sprintf("child failed (%v): %s", errors.Join(runErr, ctx.Err()), msg)}
}

// childMain is the child's side: measure and print the result line. A failed measurement is
// a result with Err, not a failed process.
func childMain(s *System, c, dir string, p Params, cpuProfile string) error {
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := runCase(s, c, dir, p)
	if err != nil {
		res.Err = err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s%s\n", resultPrefix, b)
	return err
}

// summary is one progress line's figures.
func summary(r Result) string {
	switch {
	case r.Err != "":
		return "FAILED: " + r.Err
	case r.Scale != nil:
		sr := r.Scale
		var phases []string
		for _, ph := range []struct {
			name string
			ms   float64
		}{{"create (each)", sr.CreateEachMS}, {"file system alone", sr.LayoutMS}, {"create", sr.CreateMS}, {"close", sr.CloseMS}, {"reopen", sr.ReopenMS}} {
			if ph.ms > 0 {
				phases = append(phases, fmt.Sprintf("%s %.0f ms", ph.name, ph.ms))
			}
		}
		return fmt.Sprintf("%d partitions: %s, %d descriptors at most (%d segment files), VmRSS %.0f MiB",
			sr.Partitions, strings.Join(phases, ", "), sr.FDs, sr.SegmentFDs, mib(sr.RSS))
	case r.OpenMS > 0 || r.Written > 0:
		return fmt.Sprintf("reopen %.1f ms, %d records (written %d), peak RSS %.0f MiB", r.OpenMS, r.Records, r.Written, mib(r.PeakRSS))
	}
	return fmt.Sprintf("%s records/s, %.1f MB/s, %.3f allocs/record, peak RSS %.0f MiB",
		human(r.RecordsPerSec()), r.MBPerSec(), r.AllocsPerRecord(), mib(r.PeakRSS))
}

// mib converts bytes to MiB.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// human formats a rate with k/M suffixes.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// logRoot makes the folder every log of the run lives under, in the system's temporary folder.
func logRoot() (string, error) {
	return os.MkdirTemp("", "commitlog-bench-")
}
