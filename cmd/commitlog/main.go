// Command commitlog is the operator's tool for a commitlog store (a Kafka-style log directory):
// it produces records from files or standard input, consumes them with kcat-style formats, lists
// topics with their readers' and groups' lag, compaction state and open transactions, lists,
// describes, deletes and resets consumer groups as Kafka's kafka-consumer-groups does, compacts
// topics on demand, dumps segment, index and producer snapshot files as Kafka's kafka-dump-log
// does, verifies every segment, index and snapshot of a store without changing anything, and
// serves the store to Kafka clients as a single-node Kafka broker, and mirrors topics from a Kafka
// cluster into the store.
//
//	commitlog produce --topic T [flags] [FILE...]   records from lines, JSON lines or CSV
//	commitlog consume --topic T [flags]             records, formatted (%t %p %o %k %s %T %h)
//	commitlog topics [TOPIC...]                     offsets, open transactions, sizes, segments, compaction, readers' and groups' lag
//	commitlog describe TOPIC | --reader NAME        partitions, offsets, sizes, configs with their source; a reader's lag
//	commitlog groups [describe|delete|reset-offsets]  consumer groups: state, members, positions, lag
//	commitlog readers reset-offsets NAME ...        set a named reader's positions (as kafka-consumer-groups --reset-offsets)
//	commitlog alter-config TOPIC --add-config k=v   set or reset topic configs (kafka-configs --alter)
//	commitlog delete-records TOPIC -p P --before N  move a partition's log start offset (kafka-delete-records)
//	commitlog delete-topic TOPIC...                 delete topics (kafka-topics --delete)
//	commitlog compact [TOPIC...]                    clean compacted topics now (cleanup.policy compact)
//	commitlog dump [--records] FILE...              batches of .log files, entries of indexes and snapshots
//	commitlog verify                                every segment, index and snapshot under --dir
//	commitlog serve [--listen 127.0.0.1:9092]        a Kafka broker over the store (kcat, franz-go, librdkafka)
//	commitlog mirror pull --brokers H:P --topics T   follow a Kafka cluster's topics into the store, exactly once
//
// Every command works on the store in --dir (default ./commitlog-data). Exit codes: 0 success,
// 1 a data problem (a damaged file, an unknown topic or partition, a record that does not
// parse, an I/O error), 2 a usage error (a bad flag, argument or value); a produce, compact, dump
// or verify stopped by SIGINT or SIGTERM exits 130 (a produce after saying what it acknowledged).
// Errors are one line on standard error.
//
// The store is held by one process at a time (a directory lock): every command but verify and dump
// fails with a clear message while another process has it open; verify and dump only read files and
// run at any time.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes.
const (
	exitOK    = 0
	exitData  = 1
	exitUsage = 2
	// exitInterrupted is the shell's code for a process stopped by SIGINT (128+2).
	exitInterrupted = 130
)

// defaultDir is where the store lives unless --dir says otherwise.
const defaultDir = "./commitlog-data"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first SIGINT or SIGTERM asks the command to stop cleanly (each long command watches
	// ctx); then the signals take their default action again, so that a second one ends the
	// process at once, whatever it is doing.
	go func() { <-ctx.Done(); stop() }()
	// A closed pipe on standard output (consume | head) is then a write error, which consume
	// takes as the end, closing the store cleanly, rather than a signal that kills the process.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], stdio{
		in: os.Stdin, out: os.Stdout, err: os.Stderr,
		outIsTerm: isTerminal(os.Stdout), errIsTerm: isTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// stdio is what a command reads and writes; tests pass their own.
type stdio struct {
	in        io.Reader
	out, err  io.Writer
	outIsTerm bool // standard output is a terminal: flush every record
	errIsTerm bool // standard error is a terminal: show progress
}

// exitError carries a command's error and the exit code it means.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake in the command line: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// dataError is a problem with the data or the store: exit code 1.
func dataError(err error) error {
	var e *exitError
	if errors.As(err, &e) {
		return err
	}
	return &exitError{code: exitData, err: err}
}

// errInterrupted reports a command stopped by a signal (after it finished what it had begun).
var errInterrupted = &exitError{code: exitInterrupted, err: errors.New("interrupted")}

// globals are the flags every command has.
type globals struct {
	dir     string
	verbose bool
	quiet   bool
	io      stdio
}

// logger returns the library's logger (WithLogger) and the command's: warnings (a recovery that
// cut bytes, a corrupt batch, a retention that deleted records, records older than retention.ms)
// on standard error, informational events too with --verbose, nothing with --quiet.
func (g *globals) logger() *slog.Logger {
	if g.quiet {
		return slog.New(slog.DiscardHandler)
	}
	h := slog.NewTextHandler(g.io.err, &slog.HandlerOptions{Level: slog.LevelInfo})
	if g.verbose {
		return slog.New(h)
	}
	return slog.New(&warnHandler{Handler: h})
}

// deletedData are the messages of the store's informational events that delete records: the
// command shows them by default, with the warnings, since they change what a reader can read.
var deletedData = map[string]bool{
	"retention deleted segment": true, // retention.go: retention.ms or retention.bytes
}

// warnHandler passes warnings and errors, and the informational events in deletedData.
type warnHandler struct{ slog.Handler }

func (h *warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && !deletedData[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &warnHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	return &warnHandler{Handler: h.Handler.WithGroup(name)}
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, sio stdio) int {
	out := &pipeWriter{w: sio.out}
	sio.out = out
	g := &globals{io: sio}
	root := newRootCommand(g)
	root.SetArgs(args)
	root.SetIn(sio.in)
	root.SetOut(sio.out)
	root.SetErr(sio.err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil || out.closed.Load() && errors.Is(err, syscall.EPIPE) {
		// A closed standard output (dump | head) ends the command quietly, as it ends cat.
		return exitOK
	}
	code := exitUsage // errors cobra returns itself are about the command line
	var e *exitError
	if errors.As(err, &e) {
		code = e.code
	}
	if code == exitInterrupted {
		return code
	}
	name := "commitlog"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	msg := oneLine(err.Error())
	if code == exitUsage {
		msg += fmt.Sprintf(" (see '%s --help')", name)
	}
	fmt.Fprintf(sio.err, "%s: %s\n", name, msg)
	return code
}

// pipeWriter is standard output, noting whether a write found it closed (EPIPE: the reader of a
// pipe went away), which ends a command quietly rather than as a failure.
type pipeWriter struct {
	w      io.Writer
	closed atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.closed.Store(true)
	}
	return n, err
}

// oneLine joins the lines of a multi-line message (errors.Join's) with "; " and drops the
// library's "commitlog: " prefix, which the command's name already says.
func oneLine(s string) string {
	s = strings.TrimPrefix(s, "commitlog: ")
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

func newRootCommand(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "commitlog",
		Short: "Produce, consume, inspect and verify a commitlog store (Kafka's on-disk format)",
		Long: `commitlog works on a store: a Kafka-style log directory holding topics, one folder per
partition ("<topic>-<partition>") of .log segments with .index and .timeindex files, a .txnindex
beside a segment holding an aborted transaction, and producer .snapshot files. A store whose
producers use transactions has the transaction coordinator's internal logs too, in the folders
__transaction_state-0 and __consumer_offsets-0; consumer groups keep their members and committed
positions in __consumer_offsets-0 (the groups command shows them). The serve command serves the
store to Kafka clients (kcat, franz-go, librdkafka, the Java client) as a single-node broker.

Exit codes: 0 success, 1 a data problem (damaged files, unknown topic, unparsable input, I/O
error), 2 a usage error, 130 a produce, compact, dump or verify that SIGINT or SIGTERM stopped
before it finished (consume, serve and mirror stop at a signal as their normal end: exit 0).
Errors are one line on standard error.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("missing command: one of produce, consume, topics, describe, groups, readers, alter-config, delete-records, delete-topic, compact, dump, verify, serve, mirror")
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if g.dir == "" {
			return usageError("--dir is empty: give the store's directory")
		}
		return nil
	}
	root.PersistentFlags().StringVar(&g.dir, "dir", defaultDir, "the store's directory")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log informational events of the store (recovery, retention) to standard error, beside its warnings")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "log nothing of the store's, not even its warnings (errors are still reported)")
	root.MarkFlagsMutuallyExclusive("verbose", "quiet")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	root.AddCommand(newProduceCommand(g), newConsumeCommand(g), newTopicsCommand(g), newGroupsCommand(g), newCompactCommand(g), newDumpCommand(g), newVerifyCommand(g), newServeCommand(g), newMirrorCommand(g))
	root.AddCommand(newDescribeCommand(g), newDeleteTopicCommand(g), newAlterConfigCommand(g), newDeleteRecordsCommand(g), newReadersCommand(g))
	return root
}

// runE adapts a command's function so that every error it returns carries an exit code: an
// error from cobra itself (flags, arguments) is then recognisable as a usage error.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		return dataError(err)
	}
}
