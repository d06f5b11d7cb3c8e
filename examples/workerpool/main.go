// Command workerpool runs a pool of workers that share a topic's partitions through a consumer
// group, on real US domestic flights (the project's shared flights data): the flights are
// appended to a topic of eight partitions keyed by origin airport, and four workers, members of
// one group with the cooperative-sticky assignor, aggregate each airport's flights and delays.
// Midway one worker leaves and another joins: the group rebalances, each partition moving with
// its committed position. The program prints every rebalance as the workers see it, each worker's
// count, the busiest airports, and checks that every flight was processed at least once and that
// the group's committed positions reached the end of every partition.
//
//	go run ./examples/workerpool [-records N] [-workers N] [flights-3m.csv.gz]
//
// The file is the shared flights data (CSV with the header
// time_ms,delay_min,distance_mi,origin,destination; gzip or not), by default
// ../shared/data/flights/flights-3m.csv.gz relative to the repository's root. The store lives in a
// temporary folder, removed at the end.
//
// How a worker stays correct (Kafka's consumer rules, at least once):
//   - it commits its positions periodically, and in OnRevoked, while it still owns the partitions
//     being taken away: the next owner starts exactly where it stopped;
//   - a commit refused because the group moved on (ErrIllegalGeneration, ErrRebalanceInProgress,
//     ErrUnknownMemberID) is dropped: the records since the last commit are processed again by
//     whoever owns their partition next, so the sink keys each result by partition and offset
//     and counts a flight once however often it is processed.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
)

const (
	defaultPath    = "../shared/data/flights/flights-3m.csv.gz"
	defaultRecords = 500_000
	topicName      = "flights"
	groupID        = "delay-stats"
	partitions     = 8
	batchSize      = 8192 // records per append

	// The members' timers: a heartbeat every 50 ms makes a rebalance take a few of them
	// (Kafka's default, 3 s, makes it take seconds).
	heartbeat   = 50 * time.Millisecond
	session     = 10 * time.Second
	commitEvery = 200 * time.Millisecond
	// idleWait is how long a worker's Next waits before the worker looks at its commit timer.
	idleWait = 100 * time.Millisecond
)

func main() {
	records := flag.Int("records", defaultRecords, "how many flights to load (0: all of the file)")
	workers := flag.Int("workers", 4, "workers at the start (one leaves and one joins midway)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./examples/workerpool [-records N] [-workers N] [flights-3m.csv.gz]")
		flag.PrintDefaults()
	}
	flag.Parse()
	path := defaultPath
	if flag.NArg() > 1 || *records < 0 || *workers < 2 {
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		path = flag.Arg(0)
	}
	if _, err := run(context.Background(), config{path: path, records: *records, workers: *workers}, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workerpool:", err)
		os.Exit(1)
	}
}

type config struct {
	path    string
	records int // 0: all
	workers int
}

// flight is the part of a line the workers aggregate.
type flight struct {
	delay  int64
	origin string
}

// parseFlight reads delay_min and origin from a CSV line.
func parseFlight(line []byte) (flight, error) {
	fields := bytes.SplitN(line, []byte{','}, 5)
	if len(fields) != 5 {
		return flight{}, fmt.Errorf("%d fields, want 5", len(fields))
	}
	delay, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return flight{}, fmt.Errorf("delay_min %q: %w", fields[1], err)
	}
	return flight{delay: delay, origin: string(fields[3])}, nil
}

// loadFlights returns the first n lines of the file at path (every line when n is 0), header
// left out, each with its timestamp.
func loadFlights(path string, n int) ([]*commitlog.Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s not found: pass the path of flights-3m.csv.gz (the project's shared flights data, "+
			"CSV with the header time_ms,delay_min,distance_mi,origin,destination) as the argument: "+
			"go run ./examples/workerpool PATH", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var in io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		in = zr
	}
	sc := bufio.NewScanner(in)
	var recs []*commitlog.Record
	for line := 0; sc.Scan() && (n == 0 || len(recs) < n); line++ {
		if line == 0 {
			if !strings.HasPrefix(sc.Text(), "time_ms,") {
				return nil, fmt.Errorf("%s: header %q, want time_ms,delay_min,distance_mi,origin,destination", path, sc.Text())
			}
			continue
		}
		fields := bytes.SplitN(sc.Bytes(), []byte{','}, 5)
		if len(fields) != 5 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 5", path, line+1, len(fields))
		}
		ms, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: time_ms %q: %w", path, line+1, fields[0], err)
		}
		recs = append(recs, &commitlog.Record{Key: bytes.Clone(fields[3]), Value: bytes.Clone(sc.Bytes()), Timestamp: time.UnixMilli(ms)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s holds %d flights; the example needs two at least", path, len(recs))
	}
	return recs, nil
}

// airport is an aggregate.
type airport struct {
	flights, delay int64
}

// sink collects the workers' results, keyed by partition and offset: a flight processed twice
// (at least once) counts once.
type sink struct {
	mu       sync.Mutex
	times    [partitions][]uint8 // times[p][offset]: how often the record was processed
	airports map[string]*airport
	distinct int
	done     chan struct{} // closed when want distinct flights are in
	want     int
	repeats  int
}

func newSink() *sink { return &sink{airports: map[string]*airport{}} }

// expect arms done to close once n distinct flights are in.
func (s *sink) expect(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want, s.done = n, make(chan struct{})
	if s.distinct >= n {
		close(s.done)
	}
	return s.done
}

func (s *sink) add(partition int32, offset int64, f flight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.times[partition]
	for int64(len(*t)) <= offset {
		*t = append(*t, 0)
	}
	(*t)[offset]++
	if (*t)[offset] > 1 {
		s.repeats++
		return
	}
	a := s.airports[f.origin]
	if a == nil {
		a = &airport{}
		s.airports[f.origin] = a
	}
	a.flights++
	a.delay += f.delay
	s.distinct++
	if s.distinct == s.want {
		close(s.done)
	}
}

// worker is one member of the group.
type worker struct {
	name string
	gr   *commitlog.GroupReader
	log  *printer

	processed  int64 // flights this worker processed, repeats included
	rebalances int   // listener calls
	dirty      bool  // processed since the last commit
	lastCommit time.Time
	final      []commitlog.TopicPartition // the partitions it had when it stopped
}

// printer serializes the workers' lines.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

func partitionList(tps []commitlog.TopicPartition) string {
	var s []string
	for _, tp := range tps {
		s = append(s, strconv.Itoa(int(tp.Partition)))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// startWorker makes a member of the group and runs it until ctx ends; errc gets its end.
func startWorker(ctx context.Context, s *commitlog.Store, name string, out *printer, sk *sink, errc chan<- error) (*worker, error) {
	wk := &worker{name: name, log: out, lastCommit: time.Now()}
	cfg := commitlog.GroupReaderConfig{
		Group: groupID, Topics: []string{topicName}, ClientID: name, Start: commitlog.Earliest,
		Assignors:      []group.Assignor{group.CooperativeStickyAssignor()},
		SessionTimeout: session, HeartbeatInterval: heartbeat,
		// The listener runs in the worker's goroutine, inside Next: never while a flight is
		// being processed.
		OnAssigned: func(ctx context.Context, parts []commitlog.TopicPartition) {
			wk.rebalances++
			gen, _ := wk.gr.Generation()
			out.printf("  generation %d: %s assigned partitions %s\n", gen, name, partitionList(parts))
		},
		OnRevoked: func(ctx context.Context, parts []commitlog.TopicPartition) {
			wk.rebalances++
			gen, _ := wk.gr.Generation()
			// Still the owner: commit, so that the next owner starts where this one stopped.
			note := "positions committed"
			if err := wk.commit(context.WithoutCancel(ctx)); err != nil {
				note = "commit refused (" + err.Error() + "): the next owner processes the last ones again"
			}
			out.printf("  generation %d: %s revoked partitions %s, %s\n", gen, name, partitionList(parts), note)
		},
		OnLost: func(ctx context.Context, parts []commitlog.TopicPartition) {
			wk.rebalances++
			out.printf("  %s lost partitions %s without a rebalance (no commit possible)\n", name, partitionList(parts))
		},
	}
	gr, err := s.NewGroupReader(cfg)
	if err != nil {
		return nil, err
	}
	wk.gr = gr
	go func() { errc <- wk.run(ctx, sk) }()
	return wk, nil
}

// run processes flights until ctx ends, committing every commitEvery while it has processed
// some; then it commits a last time and leaves the group.
func (wk *worker) run(ctx context.Context, sk *sink) (err error) {
	defer func() {
		wk.final = wk.gr.Assignment()
		if cerr := wk.commit(context.Background()); cerr != nil && err == nil && !refused(cerr) {
			err = cerr
		}
		// Close leaves the group at once (a dynamic member): its partitions go to the others
		// without waiting for its session timeout.
		if cerr := wk.gr.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", wk.name, err)
		}
	}()
	for {
		nctx, cancel := context.WithTimeout(ctx, idleWait)
		rec, err := wk.gr.Next(nctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			f, err := parseFlight(rec.Value)
			if err != nil {
				return fmt.Errorf("partition %d offset %d: %w", rec.Partition, rec.Offset, err)
			}
			sk.add(rec.Partition, rec.Offset, f)
			wk.processed++
			wk.dirty = true
		case !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		if wk.dirty && time.Since(wk.lastCommit) >= commitEvery {
			if err := wk.commit(ctx); err != nil && !refused(err) {
				return err
			}
		}
	}
}

// commit commits the worker's positions when it processed flights since its last commit.
func (wk *worker) commit(ctx context.Context) error {
	if !wk.dirty {
		return nil
	}
	if err := wk.gr.Commit(ctx); err != nil {
		return err
	}
	wk.dirty, wk.lastCommit = false, time.Now()
	return nil
}

// refused reports whether a commit failed because the group moved on: the member's partitions
// may have gone to another; the records since its last commit will be processed again.
func refused(err error) bool {
	return errors.Is(err, commitlog.ErrIllegalGeneration) || errors.Is(err, commitlog.ErrRebalanceInProgress) ||
		errors.Is(err, commitlog.ErrUnknownMemberID)
}

// result is what run found, for the test.
type result struct {
	Flights   int              // loaded
	Distinct  int              // processed at least once
	Processed int64            // processed, repeats included
	Airports  map[string]int64 // flights per origin, each counted once
	Delay     int64            // the delay minutes of all flights, each counted once
	PerWorker map[string]int64
}

func run(ctx context.Context, cfg config, w io.Writer) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs, err := loadFlights(cfg.path, cfg.records)
	if err != nil {
		return result{}, err
	}
	dir, err := os.MkdirTemp("", "commitlog-workerpool-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	// The group's first rebalance waits 250 ms (group.initial.rebalance.delay.ms, 3 s by
	// default) for the workers that start together, so that they share the first assignment.
	s, err := commitlog.Open(dir, commitlog.WithSync(commitlog.SyncInterval(time.Second)),
		commitlog.WithGroupInitialRebalanceDelay(250*time.Millisecond))
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	t, err := s.CreateTopic(topicName, commitlog.TopicConfig{Partitions: partitions})
	if err != nil {
		return result{}, err
	}
	appendAll := func(recs []*commitlog.Record) error {
		for i := 0; i < len(recs); i += batchSize {
			if err := t.Append(ctx, recs[i:min(i+batchSize, len(recs))]...); err != nil {
				return err
			}
		}
		return nil
	}
	out := &printer{w: w}
	sk := newSink()
	half := len(recs) / 2
	if err := appendAll(recs[:half]); err != nil {
		return result{}, err
	}
	out.printf("appended %d flights (the first half of %d from %s) to topic %q: %d partitions keyed by origin airport\n",
		half, len(recs), cfg.path, topicName, partitions)
	out.printf("%d workers join group %q (cooperative-sticky); each commits every %s and when partitions are revoked\n",
		cfg.workers, groupID, commitEvery)

	errc := make(chan error, cfg.workers+1)
	workers := map[string]*worker{}
	stops := map[string]context.CancelFunc{}
	var order []string
	start := func(name string) error {
		wctx, stop := context.WithCancel(ctx)
		wk, err := startWorker(wctx, s, name, out, sk, errc)
		if err != nil {
			stop()
			return err
		}
		workers[name], stops[name] = wk, stop
		order = append(order, name)
		return nil
	}
	running := 0
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
		for ; running > 0; running-- {
			<-errc
		}
	}
	defer stopAll()
	for i := range cfg.workers {
		if err := start(fmt.Sprintf("w%d", i+1)); err != nil {
			return result{}, err
		}
		running++
	}
	wait := func(what string, done <-chan struct{}) error {
		select {
		case <-done:
			return nil
		case err := <-errc:
			running--
			return fmt.Errorf("%s: a worker ended: %w", what, err)
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("%s: not within 2 minutes", what)
		}
	}
	if err := wait("the first half", sk.expect(half)); err != nil {
		return result{}, err
	}
	out.printf("the first half is processed\n")

	// One worker leaves: it commits and closes (a dynamic member leaves the group at once).
	leaver := order[1]
	out.printf("%s leaves\n", leaver)
	stops[leaver]()
	if err := <-errc; err != nil {
		return result{}, err
	}
	running--
	if err := wait("the rebalance after "+leaver+" left", settled(ctx, s, cfg.workers-1)); err != nil {
		return result{}, err
	}
	joiner := fmt.Sprintf("w%d", cfg.workers+1)
	out.printf("%s joins\n", joiner)
	if err := start(joiner); err != nil {
		return result{}, err
	}
	running++
	if err := wait("the rebalance after "+joiner+" joined", settled(ctx, s, cfg.workers)); err != nil {
		return result{}, err
	}

	if err := appendAll(recs[half:]); err != nil {
		return result{}, err
	}
	out.printf("appended the second half: %d flights\n", len(recs)-half)
	if err := wait("every flight", sk.expect(len(recs))); err != nil {
		return result{}, err
	}
	// Every flight is processed; the workers' next commits bring the group's positions to the
	// end of every partition.
	if err := wait("the commits", committedToEnd(ctx, s, t)); err != nil {
		return result{}, err
	}
	out.printf("every flight is processed and the group's committed positions are at the end of every partition\n\n")
	stopAll()

	res := result{Flights: len(recs), Airports: map[string]int64{}, PerWorker: map[string]int64{}}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "worker\tflights processed\tlistener calls\tpartitions at the end")
	for _, name := range order {
		wk := workers[name]
		label := name
		switch name {
		case leaver:
			label += " (left midway)"
		case joiner:
			label += " (joined midway)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", label, wk.processed, wk.rebalances, partitionList(wk.final))
		res.PerWorker[name] = wk.processed
		res.Processed += wk.processed
	}
	if err := tw.Flush(); err != nil {
		return res, err
	}

	sk.mu.Lock()
	res.Distinct = sk.distinct
	repeats := sk.repeats
	names := make([]string, 0, len(sk.airports))
	for name, a := range sk.airports {
		names = append(names, name)
		res.Airports[name] = a.flights
		res.Delay += a.delay
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(sk.airports[b].flights, sk.airports[a].flights), cmp.Compare(a, b))
	})
	fmt.Fprintf(w, "\n%d flights processed by the workers: %d distinct, %d again after a rebalance (at least once)\n",
		res.Processed, res.Distinct, repeats)
	fmt.Fprintf(w, "busiest of %d airports (each flight counted once):\n", len(names))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  airport\tflights\tmean delay (min)")
	for _, name := range names[:min(5, len(names))] {
		a := sk.airports[name]
		fmt.Fprintf(tw, "  %s\t%d\t%.1f\n", name, a.flights, float64(a.delay)/float64(a.flights))
	}
	sk.mu.Unlock()
	if err := tw.Flush(); err != nil {
		return res, err
	}
	if err := verify(w, s, t, sk, len(recs)); err != nil {
		return res, err
	}
	return res, nil
}

// settled returns a channel closed once the group is Stable with n members that share every
// partition, each with one at least.
func settled(ctx context.Context, s *commitlog.Store, n int) <-chan struct{} {
	return poll(ctx, func() bool {
		d, err := s.DescribeGroup(groupID)
		if err != nil || d.State != group.Stable || len(d.Members) != n {
			return false
		}
		assigned := 0
		for _, m := range d.Members {
			if len(m.Assignment) == 0 {
				return false
			}
			assigned += len(m.Assignment)
		}
		return assigned == partitions
	})
}

// committedToEnd returns a channel closed once the group's committed position in every
// partition is the partition's log end offset.
func committedToEnd(ctx context.Context, s *commitlog.Store, t *commitlog.Topic) <-chan struct{} {
	return poll(ctx, func() bool {
		d, err := s.DescribeGroup(groupID)
		if err != nil || len(d.Positions) != partitions {
			return false
		}
		for _, p := range d.Positions {
			part, _ := t.Partition(p.Partition)
			if p.Offset != part.LogEndOffset() {
				return false
			}
		}
		return true
	})
}

// poll returns a channel closed once cond holds, checking every 10 ms until ctx ends.
func poll(ctx context.Context, cond func() bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		close(done)
	}()
	return done
}

// verify checks, and prints, that every record of every partition was processed at least once
// and that the group's committed positions are the log end offsets.
func verify(w io.Writer, s *commitlog.Store, t *commitlog.Topic, sk *sink, flights int) error {
	d, err := s.DescribeGroup(groupID)
	if err != nil {
		return err
	}
	committed := map[int32]int64{}
	for _, p := range d.Positions {
		committed[p.Partition] = p.Offset
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\npartition\tlog end offset\tcommitted\tprocessed at least once")
	var problems []string
	var total int64
	for id := range int32(partitions) {
		p, _ := t.Partition(id)
		end := p.LogEndOffset()
		total += end
		once := int64(0)
		for _, n := range sk.times[id] {
			if n > 0 {
				once++
			}
		}
		if int64(len(sk.times[id])) > end {
			problems = append(problems, fmt.Sprintf("partition %d: offsets processed past its end %d", id, end))
		}
		if once != end {
			problems = append(problems, fmt.Sprintf("partition %d: %d of its %d records processed", id, once, end))
		}
		if committed[id] != end {
			problems = append(problems, fmt.Sprintf("partition %d: committed %d, log end offset %d", id, committed[id], end))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\n", id, end, committed[id], once)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total != int64(flights) {
		problems = append(problems, fmt.Sprintf("the partitions hold %d records, %d flights were appended", total, flights))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	fmt.Fprintf(w, "verified: each of the %d flights was processed at least once, and the group's committed positions are the log end offsets\n", flights)
	return nil
}
