// Command bench compares this library with the Go logs a user would pick instead, and with
// plain-Go baselines, on the same workloads in the same run, and writes BENCHMARKS.md at the
// repository's root:
//
//	cd bench && go run .                        # everything, 3 interleaved runs (about 15 minutes)
//	cd bench && go run . -scale=0.1 -runs=1     # a quick, small version
//	cd bench && go run . -workloads=a,d -systems=commitlog,bufio -out=-
//	cd bench && go run . -workloads=kafka       # the Kafka wire server (k), printed (about 2 minutes)
//	cd bench && go run . -workloads=reader,producers,scale -runs=1 -out=-   # the user paths alone
//	cd bench && go run . -workloads=scale -scale-topics=100 -runs=1 -out=-  # a small partition scale run
//
// Every system × workload runs in a child process of this binary (-child), so each figure has a
// fresh heap and its own peak RSS; see BENCHMARKS.md for the method.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// flags are the command's flags.
type flags struct {
	runs        int
	workloads   string
	systems     string
	out         string
	scale       float64
	dur         time.Duration
	reopenBytes int64
	flights     string
	runsOf      string
	// The child's side.
	child  string
	fill   bool
	system string
	dir    string
	// cpuProfile is where a child writes its CPU profile ("" for none).
	cpuProfile string
	// kafkaServe names the Kafka server a child serves (-workloads=kafka's children).
	kafkaServe string
	// discardFill is the records every partition of the discard server holds from the start.
	discardFill int64
	// cases are the Kafka cases to run (-workloads=kafka).
	cases string
	// scaleTopics, scalePartitions and scaleMaxOpenFiles size the scale workload.
	scaleTopics, scalePartitions, scaleMaxOpenFiles int
	// fillScale is the scale workload's grandchild: create the store and wait to be killed.
	fillScale bool
	// runsSet and outSet say that -runs and -out were given.
	runsSet, outSet bool
}

func parseFlags() *flags {
	f := &flags{}
	flag.IntVar(&f.runs, "runs", 3, "interleaved runs of every system × workload (the median is reported)")
	flag.StringVar(&f.workloads, "workloads", "all", "workloads to run: all, or letters a-g and the names reader, producers, scale separated by commas; or kafka, the Kafka wire server's section (k) alone (one run unless -runs is given; printed unless -out is given)")
	flag.StringVar(&f.systems, "systems", "all", "systems to run: all, or names separated by commas")
	flag.StringVar(&f.out, "out", "../BENCHMARKS.md", "where to write the report (- for standard output)")
	flag.Float64Var(&f.scale, "scale", 1, "multiply every workload's size by this (0.1 for a quick run)")
	flag.DurationVar(&f.dur, "dur", 2*time.Second, "how long each durable-append run (c) lasts")
	flag.Int64Var(&f.reopenBytes, "reopen-bytes", 1<<30, "payload bytes of the log reopened in (f), before -scale")
	flag.StringVar(&f.flights, "flights", "", "the flights CSV (gzip) for (g); default ../shared/data/flights/flights-3m.csv.gz from the repository root")
	flag.StringVar(&f.runsOf, "runs-of", "", "fewer runs for some systems, as name=n,name=n (slow peers)")
	flag.IntVar(&f.scaleTopics, "scale-topics", 0, "topics of the scale workload (0: 1,000 × -scale, at least 10)")
	flag.IntVar(&f.scalePartitions, "scale-partitions", 10, "partitions of each topic of the scale workload")
	flag.IntVar(&f.scaleMaxOpenFiles, "scale-max-open-files", 1024, "the scale workload's store's WithMaxOpenFiles (its descriptor target)")
	flag.BoolVar(&f.fillScale, "fill-scale", false, "internal: create the scale workload's store in -dir and wait to be killed")
	flag.StringVar(&f.child, "child", "", "internal: measure one case in this process")
	flag.BoolVar(&f.fill, "fill", false, "internal: fill a log until killed (workload f)")
	flag.StringVar(&f.system, "system", "", "internal: the system of -child or -fill")
	flag.StringVar(&f.dir, "dir", "", "internal: the log folder of -child or -fill")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "with -child: write the case's CPU profile (go tool pprof) to this file; with -workloads=kafka: a prefix, each server's profile of each timed case goes to PREFIX-server-case-runN.pprof")
	flag.StringVar(&f.cases, "cases", "all", "with -workloads=kafka: the cases to run, all or p1,p4,consume,steady")
	flag.StringVar(&f.kafkaServe, "kafka-serve", "", "internal: serve this Kafka server in this process")
	flag.Int64Var(&f.discardFill, "discard-fill", 0, "internal: with -kafka-serve discard, the records each partition holds from the start")
	flag.Parse()
	flag.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "runs":
			f.runsSet = true
		case "out":
			f.outSet = true
		}
	})
	return f
}

func run() error {
	f := parseFlags()
	if f.scale <= 0 || f.runs < 1 {
		return errors.New("-scale must be positive and -runs at least 1")
	}
	if f.kafkaServe != "" {
		return kafkaServeMain(f.kafkaServe, f.dir, f.discardFill, f.cpuProfile)
	}
	if f.workloads == "kafka" {
		return runKafka(f)
	}
	p := newParams(f.scale, f.dur, f.reopenBytes, findFlights(f.flights))
	if err := p.setScale(f.scaleTopics, f.scalePartitions, f.scaleMaxOpenFiles); err != nil {
		return err
	}
	if f.fillScale {
		return fillScaleUntilKilled(f.dir, p)
	}
	if f.child != "" || f.fill {
		s, err := systemByName(f.system)
		if err != nil {
			return err
		}
		if f.fill {
			return fillUntilKilled(s, f.dir, p)
		}
		return childMain(s, f.child, f.dir, p, f.cpuProfile)
	}
	return runAll(f, p)
}

// runAll runs every selected workload and system and writes the report.
func runAll(f *flags, p Params) error {
	systems, err := selectSystems(f.systems)
	if err != nil {
		return err
	}
	wls, err := selectWorkloads(workloads(p), f.workloads)
	if err != nil {
		return err
	}
	runsOf, err := parseRunsOf(f.runsOf)
	if err != nil {
		return err
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
	rep := &Report{Command: command(), Started: time.Now(), Machine: describeMachine(root), Params: p,
		Runs: f.runs, RunsOf: runsOf, Systems: systems, Workloads: wls, Skipped: skippedSystems()}
	if p.FlightsPath == "" && slicesHas(wls, "g") {
		fmt.Fprintln(os.Stderr, "bench: skipping (g): the flights data ../shared/data/flights/flights-3m.csv.gz (from the repository root) is absent; pass -flights PATH")
		rep.Notes = append(rep.Notes, "(g) was skipped: the flights data was not found.")
	}
	r := &Runner{exe: exe, params: p, systems: systems, workloads: withoutG(wls, p.FlightsPath == ""), runs: f.runs, runsOf: runsOf,
		root: root, log: os.Stderr, childArgs: []string{
			"-scale", strconv.FormatFloat(f.scale, 'g', -1, 64), "-dur", f.dur.String(),
			"-reopen-bytes", strconv.FormatInt(f.reopenBytes, 10), "-flights", p.FlightsPath}}
	r.childArgs = append(r.childArgs, scaleArgs(p)...)
	if err := r.Run(); err != nil {
		return err
	}
	rep.Results, rep.Elapsed = r.Results, time.Since(rep.Started)
	return writeReport(rep, f.out)
}

// writeReport writes rep to path, or to standard output for "-".
func writeReport(rep *Report, path string) error {
	if path == "-" {
		return rep.Write(os.Stdout)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.Write(out); err != nil {
		return errors.Join(err, out.Close())
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: wrote", path)
	return nil
}

// parseRunsOf reads -runs-of.
func parseRunsOf(s string) (map[string]int, error) {
	out := map[string]int{}
	if s == "" {
		return out, nil
	}
	for kv := range strings.SplitSeq(s, ",") {
		name, n, ok := strings.Cut(kv, "=")
		runs, err := strconv.Atoi(n)
		if !ok || err != nil || runs < 1 {
			return nil, fmt.Errorf("-runs-of: %q is not name=n", kv)
		}
		if _, err := systemByName(name); err != nil {
			return nil, fmt.Errorf("-runs-of: %w", err)
		}
		out[name] = runs
	}
	return out, nil
}

// command is the command line that regenerates the report, as run from the repository root.
func command() string {
	args := []string{"cd bench && go run ."}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"$") {
			a = strconv.Quote(a)
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// slicesHas reports whether wls holds workload letter.
func slicesHas(wls []Workload, letter string) bool {
	for _, w := range wls {
		if w.Letter == letter {
			return true
		}
	}
	return false
}

// withoutG returns wls without workload g when drop is set.
func withoutG(wls []Workload, drop bool) []Workload {
	var out []Workload
	for _, w := range wls {
		if !drop || w.Letter != "g" {
			out = append(out, w)
		}
	}
	return out
}
