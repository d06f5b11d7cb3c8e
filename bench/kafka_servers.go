package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
)

// The servers of the Kafka workloads (k). Each runs in a child process of the bench binary
// (-kafka-serve NAME), so that its heap, CPU time and peak RSS are its own and the client in the
// parent is the same for all: the child listens on a loopback port, prints it on a line
// "LISTEN host:port", and serves until its standard input ends.

// listenPrefix starts the line a server child prints its address on.
const listenPrefix = "LISTEN "

// oursKafka is the name of the system the Kafka targets are checked for: the broker under the
// store's default durability.
const oursKafka = "broker"

// KafkaSystem is one server of the Kafka workloads.
type KafkaSystem struct {
	// Name is the name used by -systems and in the tables.
	Name string
	// Kind says whether this is ours, a peer or a baseline.
	Kind Kind
	// Version is the module and version measured.
	Version string
	// Config says how the server is configured, for the report.
	Config string
	// Cases lists the cases it takes part in, separated by commas ("" for all).
	Cases string
	// serve serves on ln with its data (if any) in dir until ctx ends; fill is the records each
	// partition of the discard server holds from the start.
	serve func(ctx context.Context, ln net.Listener, dir string, fill int64) error
}

// kafkaSystems returns the servers in table order: ours, the peer, the ceiling.
func kafkaSystems() []*KafkaSystem {
	return []*KafkaSystem{
		{Name: oursKafka, Kind: KindOurs, Version: "this repository (broker.Serve over commitlog.Open)",
			Config: "file store in a temporary folder, the store's default durability: SyncAlways (fdatasync before the answer, group commit)",
			serve:  brokerServe()},
		{Name: "broker-syncnever", Kind: KindOurs, Version: "this repository (broker.Serve over commitlog.Open)",
			Config: "as broker, with commitlog.WithSync(commitlog.SyncNever): flushing left to the OS (Kafka's default)",
			serve:  brokerServe(commitlog.WithSync(commitlog.SyncNever))},
		{Name: "kfake", Kind: KindPeer, Version: "github.com/twmb/franz-go/pkg/kfake " + moduleVersion("github.com/twmb/franz-go/pkg/kfake"),
			Config: "kfake.NewCluster(NumBrokers(1)), in memory",
			serve:  kfakeServe},
		{Name: "discard", Kind: KindBaseline, Version: "bench/kafka_discard.go",
			Config: "answers Produce at once and drops the records; Fetch from one stored 1,000-record batch, re-based per copy; InitProducerID, Metadata, ListOffsets, CreateTopics",
			serve:  discardServe(true)},
		{Name: "discard-nopid", Kind: KindBaseline, Version: "bench/kafka_discard.go", Cases: "p1,p4,steady",
			Config: "as discard, without InitProducerID: kgo then produces without a producer id, so with one produce request in flight instead of five, as against a broker that does not serve InitProducerID",
			serve:  discardServe(false)},
	}
}

// Takes reports whether s takes part in case c.
func (s *KafkaSystem) Takes(c string) bool {
	return s.Cases == "" || slices.Contains(strings.Split(s.Cases, ","), c)
}

// brokerServe serves a store opened in dir with opts.
func brokerServe(opts ...commitlog.Option) func(ctx context.Context, ln net.Listener, dir string, _ int64) error {
	return func(ctx context.Context, ln net.Listener, dir string, _ int64) error {
		quiet := slog.New(slog.DiscardHandler)
		s, err := commitlog.Open(dir, append([]commitlog.Option{commitlog.WithLogger(quiet)}, opts...)...)
		if err != nil {
			return err
		}
		err = broker.Serve(ctx, ln, s, broker.Config{Logger: quiet})
		return errors.Join(err, s.Close())
	}
}

// kfakeServe serves a one-broker kfake cluster on ln.
func kfakeServe(ctx context.Context, ln net.Listener, _ string, _ int64) error {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(func(string, string) (net.Listener, error) { return ln, nil }))
	if err != nil {
		return err
	}
	<-ctx.Done()
	c.Close()
	return nil
}

// discardServe serves the discard server on ln, with InitProducerID when pids is set.
func discardServe(pids bool) func(ctx context.Context, ln net.Listener, _ string, fill int64) error {
	return func(ctx context.Context, ln net.Listener, _ string, fill int64) error {
		s, err := newDiscardServer(ln.Addr(), fill, pids)
		if err != nil {
			return err
		}
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		return s.serve(ln)
	}
}

// kafkaSystemByName returns the Kafka server called name.
func kafkaSystemByName(name string) (*KafkaSystem, error) {
	for _, s := range kafkaSystems() {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("unknown Kafka system %q", name)
}

// kafkaServeMain is the server child's side: listen, say where, serve until standard input
// ends, answering the parent's requests for its CPU time and peak RSS (and writing a CPU profile
// of the timed part into cpuProfile when set) meanwhile.
func kafkaServeMain(name, dir string, fill int64, cpuProfile string) error {
	s, err := kafkaSystemByName(name)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln, dir, fill) }()
	fmt.Printf("%s%s\n", listenPrefix, ln.Addr())
	go func() {
		answerStats(os.Stdin, os.Stdout, cpuProfile)
		cancel()
	}()
	select {
	case err = <-done:
		if err == nil {
			err = errors.New("the server stopped before its standard input ended")
		}
		return err
	case <-ctx.Done():
	}
	return <-done
}

// answerStats answers the parent's requests on in until it ends. "mark" starts the timed part:
// it resets the process's peak RSS (VmHWM, where the kernel allows), starts the CPU profile into
// cpuProfile when one is asked for, and answers "CPU ns", the process's user and system CPU time
// so far. "stat" ends it: it stops the profile and answers "STAT ns rss", the CPU time and the
// peak RSS in bytes.
func answerStats(in io.Reader, out io.Writer, cpuProfile string) {
	var prof *os.File
	stopProfile := func() {
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			prof = nil
		}
	}
	defer stopProfile()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "mark":
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
			if cpuProfile != "" && prof == nil {
				f, err := os.Create(cpuProfile)
				if err == nil && pprof.StartCPUProfile(f) != nil {
					f.Close()
					f = nil
				}
				prof = f
			}
			fmt.Fprintf(out, "CPU %d\n", processCPU())
		case "stat":
			stopProfile()
			fmt.Fprintf(out, "STAT %d %d\n", processCPU(), peakRSS())
		}
	}
}

// processCPU returns this process's user and system CPU time so far, in ns (0 where getrusage
// fails).
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// moduleVersion is the version of module path built into this binary, "(unknown)" when the
// build information does not say.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "(unknown)"
}
