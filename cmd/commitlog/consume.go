package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commitlog-go/commitlog"
	"github.com/spf13/cobra"
)

type consumeFlags struct {
	topic          string
	from           []string
	json           bool
	keyDelim       string
	nullStr        bool
	partition      int32
	reader         string
	count          int64
	exitAtEnd      bool
	format         string
	reset          string
	commitInterval time.Duration
}

func newConsumeCommand(g *globals) *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume --topic T [flags]",
		Short: "Print a topic's records, formatted",
		Long: `Print a topic's records, in offset order within each partition, taking a record from each
partition in turn. It waits at the end of the log for more unless --exit-at-end or --count says
when to stop; Ctrl-C stops it cleanly.

Without --reader (and without -o e@TIME) the store is opened read-only: consume writes nothing to
it and runs while another process writes it (produce, serve), showing that process's records as
they are appended (within about 100 ms); retention deleting records ahead of it moves it to the
oldest record kept (--reset says otherwise).

--from (-o) says where to begin in each partition: beginning (the oldest record kept), end (only
records appended from now on), an offset (the same in every partition), -N (the last N records
of each partition), or @TIME: the first record whose timestamp is at or after TIME, given as
RFC 3339 (@2001-01-01T08:00:00Z) or epoch milliseconds (@978336000000); kcat's s@MS is @MS. A
second -o e@TIME (kcat's end timestamp) stops each partition before its first record at or after
TIME, and consume exits there. An offset past a partition's end is said on standard error, with
where the log ends and where --reset moves the reader.

As kcat: -J prints each record as a JSON object (topic, partition, offset, tstype, ts, broker
(-1: no broker), headers (["name","value",...], when the record has any), key, payload; a null
key or value is null); -K DELIM prints key DELIM value; -Z prints a null key or value as NULL.

With --reader NAME positions are committed under that name (at exit and every
--commit-interval), so a later consume with the same name continues where this one stopped;
--from then applies only to partitions where the reader never committed. Committing writes to
the store, so with --reader (or -o e@TIME) the store must not be open in another process.

--format uses kcat's tokens: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp
(ms), %h headers (name=value,...), %K and %S key and value sizes, %% a percent sign; \n newline,
\t tab.

An unknown topic or partition is a data problem: exit code 1.`,
		Example: `  commitlog produce --topic flights           # in one terminal: type records
  commitlog consume --topic flights            # in another: they appear as they are appended
  commitlog consume --topic flights --from beginning --exit-at-end --format '%p %o %k %s\n'
  commitlog consume --topic flights --from @2001-03-01T08:00:00Z --partition 2 --count 10
  commitlog consume --topic events --reader audit --exit-at-end`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return consume(cmd.Context(), g, f) }),
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.topic, "topic", "t", "", "topic to read (required)")
	fl.StringArrayVarP(&f.from, "from", "o", []string{"beginning"}, "where to begin: beginning, end, OFFSET, -N, @RFC3339, @EPOCH_MS or s@EPOCH_MS; again with e@TIME where to stop")
	fl.BoolVarP(&f.json, "json", "J", false, "print each record as kcat's -J JSON envelope")
	fl.StringVarP(&f.keyDelim, "key-delim", "K", "", "print key DELIM value (kcat's -K); the default format then is %k DELIM %s\\n")
	fl.BoolVarP(&f.nullStr, "null", "Z", false, `print a null key or value as NULL (kcat's -Z)`)
	fl.Int32VarP(&f.partition, "partition", "p", -1, "read only this partition (default all)")
	fl.StringVarP(&f.reader, "reader", "r", "", "a named reader whose positions are committed and resumed")
	fl.Int64VarP(&f.count, "count", "c", 0, "stop after this many records (0: no limit)")
	fl.BoolVarP(&f.exitAtEnd, "exit-at-end", "e", false, "stop at the end of the log (as it was when consume began) instead of waiting")
	fl.StringVarP(&f.format, "format", "f", defaultFormat, "output format (kcat's tokens, see above)")
	fl.StringVar(&f.reset, "reset", "earliest", "when a position is out of range (records deleted by retention) or past a truncation (the log diverged): earliest, latest (both move to the divergence point after a truncation) or none")
	fl.DurationVar(&f.commitInterval, "commit-interval", 5*time.Second, "how often a named reader commits while it reads")
	cmd.MarkFlagRequired("topic")
	return cmd
}

// from is a parsed --from.
type from struct {
	start    commitlog.StartPosition
	offset   int64 // AtOffset
	relative int64 // > 0: this many before the end
	time     time.Time
}

func parseFrom(s string) (from, error) {
	switch s {
	case "beginning", "earliest", "oldest":
		return from{start: commitlog.Earliest}, nil
	case "end", "latest", "newest":
		return from{start: commitlog.Latest}, nil
	}
	t, ok := strings.CutPrefix(s, "@")
	if !ok {
		t, ok = strings.CutPrefix(s, "s@") // kcat's start timestamp
	}
	if ok {
		if ms, err := strconv.ParseInt(t, 10, 64); err == nil {
			return from{start: commitlog.AtTime, time: time.UnixMilli(ms)}, nil
		}
		tm, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return from{}, fmt.Errorf("--from %q: after @ give an RFC 3339 time or epoch milliseconds", s)
		}
		return from{start: commitlog.AtTime, time: tm}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return from{}, fmt.Errorf("--from %q: want beginning, end, an offset, -N or @TIME", s)
	}
	if n < 0 {
		return from{start: commitlog.Latest, relative: -n}, nil
	}
	return from{start: commitlog.AtOffset, offset: n}, nil
}

// parseFroms reads the -o values: one start (parseFrom), and at most one e@TIME, the time to stop
// at, returned non-zero.
func parseFroms(ss []string) (from, time.Time, error) {
	start, starts := from{start: commitlog.Earliest}, 0
	var end time.Time
	for _, s := range ss {
		if t, ok := strings.CutPrefix(s, "e@"); ok {
			if !end.IsZero() {
				return from{}, time.Time{}, fmt.Errorf("--from %q: one e@TIME at most", s)
			}
			f, err := parseFrom("@" + t)
			if err != nil {
				return from{}, time.Time{}, fmt.Errorf("--from %q: after e@ give an RFC 3339 time or epoch milliseconds", s)
			}
			end = f.time
			continue
		}
		if starts++; starts > 1 {
			return from{}, time.Time{}, fmt.Errorf("--from %q: one start at most (and one e@TIME)", s)
		}
		f, err := parseFrom(s)
		if err != nil {
			return from{}, time.Time{}, err
		}
		start = f
	}
	return start, end, nil
}

func consume(ctx context.Context, g *globals, f *consumeFlags) error {
	start, endTime, err := parseFroms(f.from)
	if err != nil {
		return usageError("%v", err)
	}
	formatFlag := f.format
	if f.keyDelim != "" && formatFlag == defaultFormat {
		formatFlag = "%k" + strings.ReplaceAll(f.keyDelim, "%", "%%") + "%s\\n"
	}
	format, err := parseFormat(formatFlag)
	if err != nil {
		return usageError("--format: %v", err)
	}
	if f.count < 0 {
		return usageError("--count %d: want 0 or more", f.count)
	}
	if f.partition < -1 {
		return usageError("--partition %d: want a partition number, or -1 for all", f.partition)
	}
	if f.commitInterval <= 0 {
		return usageError("--commit-interval %s: want a positive duration", f.commitInterval)
	}
	var reset commitlog.ResetPolicy
	switch f.reset {
	case "earliest":
		reset = commitlog.ResetEarliest
	case "latest":
		reset = commitlog.ResetLatest
	case "none":
		reset = commitlog.ResetNone
	default:
		return usageError("--reset %q: want earliest, latest or none", f.reset)
	}

	if f.reader == "" && endTime.IsZero() {
		return consumeReadOnly(ctx, g, f, start, format, reset)
	}
	// A named reader commits its positions into the store, and e@TIME asks the writable store
	// for offsets by time: both need the store to this process.
	s, err := g.openStore(false)
	if errors.As(err, new(storeBusyError)) {
		return fmt.Errorf("%w; --reader and -o e@TIME need the store to themselves: stop the writer, or drop them to tail it", err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	t, err := topicOf(s, f.topic)
	if err != nil {
		return err
	}
	cfg := commitlog.ReaderConfig{Name: f.reader, Start: start.start, StartOffset: start.offset,
		StartTime: start.time, Reset: reset}
	if f.partition >= 0 {
		if _, err := t.Partition(f.partition); err != nil {
			return fmt.Errorf("topic %s has no partition %d (it has %d)", f.topic, f.partition, t.PartitionCount())
		}
		cfg.Partitions = []int32{f.partition}
	}
	var committed map[int32]int64
	if f.reader != "" {
		all, err := s.CommittedPositions(f.reader)
		if errors.Is(err, commitlog.ErrInvalidReaderName) {
			return usageError("--reader: %s", oneLine(err.Error()))
		}
		if err != nil {
			return err
		}
		committed = all[f.topic]
	}
	r, err := t.NewReader(cfg)
	if errors.Is(err, commitlog.ErrInvalidReaderName) {
		return usageError("--reader: %s", oneLine(err.Error()))
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if start.relative > 0 {
		for p := range r.Positions() {
			if _, ok := committed[p]; ok {
				continue
			}
			part, _ := t.Partition(p)
			if err := r.Seek(p, max(part.LogStartOffset(), part.HighWatermark()-start.relative)); err != nil {
				return err
			}
		}
	}

	if start.start == commitlog.AtOffset {
		pastEnd(g, t, r, committed, start.offset, f.reset)
	}

	c := &consumer{r: r, appendRec: format.append, out: bufio.NewWriterSize(g.io.out, 64<<10),
		flushEach: g.io.outIsTerm, named: f.reader != "", commitInterval: f.commitInterval, nullStr: f.nullStr}
	if f.json {
		c.appendRec = jsonEnvelope(t.Config().TimestampType)
	}
	if f.exitAtEnd || !endTime.IsZero() {
		c.targets, c.unchecked = map[int32]int64{}, map[int32]bool{}
		c.stopAtTarget = !endTime.IsZero()
		for p, pos := range r.Positions() {
			part, _ := t.Partition(p)
			c.targets[p] = part.HighWatermark()
			if c.stopAtTarget {
				off, err := part.OffsetForTime(endTime)
				switch {
				case errors.Is(err, commitlog.ErrNoOffsetForTime):
					// No record at or after e@TIME: the partition stops at its end.
				case err != nil:
					return err
				default:
					c.targets[p] = min(off, c.targets[p])
				}
			}
			if pos > c.targets[p] {
				// Past the end: a truncation overtook a committed position. Where the reader
				// really stands is known once it has looked (its reset policy, or
				// ErrLogTruncated); see atEnd.
				c.unchecked[p] = true
			}
		}
	}
	return endConsume(c.run(ctx, f.count))
}

// endConsume is the error consume exits with.
func endConsume(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		// The reader of standard output went away (consume | head): the end, not a failure.
		// Nothing more is committed: what was lost in the pipe is read again next time.
		return nil
	}
	return err
}

// consumeReadOnly is consume without --reader: the store is opened read-only
// (openStoreReadOnly), so consume tails a store another process writes, and writes nothing.
func consumeReadOnly(ctx context.Context, g *globals, f *consumeFlags, start from, format recordFormat, reset commitlog.ResetPolicy) error {
	if err := commitlog.CheckTopicName(f.topic); err != nil {
		return usageError("%s", oneLine(err.Error())) // no topic could have the name
	}
	s, err := g.openStoreReadOnly()
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := s.PartitionCount(f.topic)
	if errors.Is(err, commitlog.ErrUnknownTopic) {
		list := "none"
		if have := s.Topics(); len(have) > 0 {
			list = strings.Join(have, ", ")
		}
		return fmt.Errorf("unknown topic %q in %s (topics: %s)", f.topic, s.Dir(), list)
	}
	if err != nil {
		return err
	}
	cfg := commitlog.ReaderConfig{Start: start.start, StartOffset: start.offset, StartTime: start.time, Reset: reset}
	if f.partition >= 0 {
		if f.partition >= n {
			return fmt.Errorf("topic %s has no partition %d (it has %d)", f.topic, f.partition, n)
		}
		cfg.Partitions = []int32{f.partition}
	}
	r, err := s.NewReader(f.topic, cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	for p := range r.Positions() {
		logStart, end, err := s.Offsets(f.topic, p)
		if err != nil {
			return err
		}
		if start.relative > 0 {
			if err := r.Seek(p, max(logStart, end-start.relative)); err != nil {
				return err
			}
		}
		if start.start == commitlog.AtOffset {
			sayPastEnd(g, f.topic, p, start.offset, logStart, end, f.reset)
		}
	}
	c := &consumer{r: r, appendRec: format.append, out: bufio.NewWriterSize(g.io.out, 64<<10),
		flushEach: g.io.outIsTerm, commitInterval: f.commitInterval, nullStr: f.nullStr}
	if f.json {
		tc, err := s.TopicConfig(f.topic)
		if err != nil {
			return err
		}
		c.appendRec = jsonEnvelope(tc.TimestampType)
	}
	if f.exitAtEnd {
		c.targets, c.unchecked = map[int32]int64{}, map[int32]bool{}
		for p, pos := range r.Positions() {
			_, end, err := s.Offsets(f.topic, p)
			if err != nil {
				return err
			}
			c.targets[p] = end
			if pos > end {
				c.unchecked[p] = true // see consume
			}
		}
	}
	return endConsume(c.run(ctx, f.count))
}

// recordReader is what consumer reads from: a *commitlog.Reader, or a
// *commitlog.ReadOnlyReader, which commits nothing (consumer commits only named readers).
type recordReader interface {
	Next(ctx context.Context) (*commitlog.Record, error)
	Positions() map[int32]int64
	Seek(partition int32, offset int64) error
	Commit(ctx context.Context) error
}

// consumer prints a reader's records. Its positions are committed only between records, after
// the records read so far are written out, so a commit never covers a record not yet printed.
type consumer struct {
	r         recordReader
	appendRec func(dst []byte, r *commitlog.Record) []byte
	nullStr   bool // -Z: a null key or value printed as NULL
	// stopAtTarget (e@TIME): records at or past a partition's target are not printed, and a
	// named reader's position is set back to the target before it commits.
	stopAtTarget   bool
	out            *bufio.Writer
	flushEach      bool
	named          bool
	commitInterval time.Duration
	targets        map[int32]int64 // --exit-at-end: the end offsets to reach; nil otherwise
	// unchecked holds, under --exit-at-end, the partitions whose position began past their
	// target, until the reader has returned a record of theirs or found nothing anywhere.
	unchecked map[int32]bool

	pos        map[int32]int64
	dirty      bool // records printed since the last commit
	lastCommit time.Time
}

// idleWait is how long Next may wait before the consumer flushes its output and commits: the
// log has nothing new for now.
const idleWait = 100 * time.Millisecond

func (c *consumer) run(ctx context.Context, limit int64) error {
	c.pos = c.r.Positions()
	c.lastCommit = time.Now()
	c.dirty = c.named // a named reader commits where it stands at exit even when it read nothing
	var n int64
	var buf []byte
	// waitCtx is cancelled idleWait after a Next began, unless it returned: the timer is reset
	// for every Next and a fresh context made after one fired.
	waitCtx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(time.Hour, cancel)
	timer.Stop()
	defer func() { timer.Stop(); cancel() }()

	var err error
	for {
		if limit > 0 && n >= limit || c.atEnd() {
			break
		}
		if waitCtx.Err() != nil {
			waitCtx, cancel = context.WithCancel(ctx)
			timer = time.AfterFunc(idleWait, cancel)
		} else {
			timer.Reset(idleWait)
		}
		rec, nerr := c.r.Next(waitCtx)
		timer.Stop()
		if nerr != nil {
			if ctx.Err() != nil {
				break // interrupted: stop cleanly
			}
			if waitCtx.Err() != nil && errors.Is(nerr, context.Canceled) {
				// Idle: nothing new for a while. Write out what was read, commit, and, with
				// --exit-at-end, stop if every partition reached the end (control batches at the
				// end of a log leave no record to say so).
				if err = c.checkpoint(); err != nil {
					break
				}
				if c.targets != nil {
					// An idle Next looked at every partition: the positions are checked now.
					clear(c.unchecked)
					c.pos = c.r.Positions()
					if c.atEnd() {
						break
					}
				}
				continue
			}
			err = nerr
			break
		}
		c.pos[rec.Partition] = rec.Offset + 1
		delete(c.unchecked, rec.Partition)
		if c.stopAtTarget && rec.Offset >= c.targets[rec.Partition] {
			continue
		}
		n++
		if c.nullStr && (rec.Key == nil || rec.Value == nil) {
			shown := *rec
			if shown.Key == nil {
				shown.Key = nullText
			}
			if shown.Value == nil {
				shown.Value = nullText
			}
			rec = &shown
		}
		buf = c.appendRec(buf[:0], rec)
		if _, werr := c.out.Write(buf); werr != nil {
			return fmt.Errorf("standard output: %w", werr)
		}
		c.dirty = true
		if c.flushEach {
			if werr := c.out.Flush(); werr != nil {
				return fmt.Errorf("standard output: %w", werr)
			}
		}
		if c.named && time.Since(c.lastCommit) >= c.commitInterval {
			if err = c.checkpoint(); err != nil {
				break
			}
		}
	}
	if c.stopAtTarget && c.named {
		// Records past e@TIME were read but not printed: the committed position is the target.
		for p, end := range c.targets {
			if c.pos[p] > end {
				if serr := c.r.Seek(p, end); serr != nil && err == nil {
					err = serr
				}
			}
		}
	}
	if cerr := c.checkpoint(); err == nil {
		err = cerr
	}
	return err
}

// nullText is -Z's NULL.
var nullText = []byte("NULL")

// pastEnd says on standard error, for each partition where --from OFFSET begins past the log's
// end (and the reader has no committed position), where the log ends and where the reset policy
// moves the reader, since nothing is printed from there.
func pastEnd(g *globals, t *commitlog.Topic, r *commitlog.Reader, committed map[int32]int64, offset int64, reset string) {
	for p := range r.Positions() {
		if _, ok := committed[p]; ok {
			continue
		}
		part, err := t.Partition(p)
		if err != nil {
			continue
		}
		sayPastEnd(g, t.Name(), p, offset, part.LogStartOffset(), part.HighWatermark(), reset)
	}
}

// sayPastEnd writes, when offset is past a partition's end, where its log starts and ends and
// what --reset does about it.
func sayPastEnd(g *globals, topic string, p int32, offset, start, end int64, reset string) {
	if offset <= end {
		return
	}
	then := "the reader stops with an error (--reset none)"
	switch reset {
	case "earliest":
		then = fmt.Sprintf("reading from the log start offset %d (--reset earliest)", start)
	case "latest":
		then = fmt.Sprintf("reading from the end, %d (--reset latest)", end)
	}
	fmt.Fprintf(g.io.err, "commitlog consume: %s-%d: offset %d is past the end of the log (log end offset %d, log start offset %d); %s\n",
		topic, p, offset, end, start, then)
}

// atEnd reports whether, under --exit-at-end, every partition reached its target. A position
// that began past its target does not count until the reader has checked it: after a truncation
// the reader moves it back to where the log diverged (or reports ErrLogTruncated), and the
// records from there are still to be printed.
func (c *consumer) atEnd() bool {
	if c.targets == nil || len(c.unchecked) > 0 {
		return false
	}
	for p, end := range c.targets {
		if c.pos[p] < end {
			return false
		}
	}
	return true
}

// checkpoint flushes the output and commits a named reader's positions when records were
// printed since the last commit.
func (c *consumer) checkpoint() error {
	if err := c.out.Flush(); err != nil {
		return fmt.Errorf("standard output: %w", err)
	}
	if !c.named || !c.dirty {
		return nil
	}
	if err := c.r.Commit(context.Background()); err != nil {
		return fmt.Errorf("commit reader positions: %w", err)
	}
	c.dirty = false
	c.lastCommit = time.Now()
	return nil
}
