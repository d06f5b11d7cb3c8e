package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// Batching: records are appended up to this many, or this many bytes of keys and values, per
// Topic.Append, so that one fsync covers many records.
const (
	defaultBatchRecords = 1000
	defaultBatchBytes   = 1 << 20
)

type produceFlags struct {
	topic          string
	partitions     int32
	keyDelim       string
	keyField       string
	timeField      string
	timeLayout     string
	format         string
	sync           string
	syncInterval   time.Duration
	compression    string
	segmentBytes   string
	retention      string
	retentionBytes string
	printOffsets   bool
	batchRecords   int
	batchBytes     string
	create         bool
	headers        []string
	nullEmpty      bool
	// compaction
	cleanupPolicy    string
	dirtyRatio       float64
	deleteRetention  string
	minCompactionLag string
	maxCompactionLag string
	cleanerThreads   int
}

func newProduceCommand(g *globals) *cobra.Command {
	f := &produceFlags{}
	cmd := &cobra.Command{
		Use:   "produce --topic T [flags] [FILE...]",
		Short: "Append records read from files or standard input, one per line",
		Long: `Append records to a topic, one per input line, from the files given (standard input when
none, or "-"); gzip-compressed input is read transparently. A missing topic is created, with the
partition count and configuration given, when the first record is appended (at once with
--create): input that fails before any record, or no input, creates nothing. An existing topic
keeps its own configuration.

As kcat's producer: -H name=value adds a header to every record (repeatable), -Z makes an empty
value a null one (a tombstone on a compacted topic), -K is the key delimiter.

Formats:
  lines  the key is the text before the first --key-delim and the value the text after it
         (kcat's -K); without --key-delim, or on a line without it, the key is null and the value
         the whole line
  jsonl  one JSON object a line; --key-field and --time-field name fields (dotted names reach
         into nested objects: properties.net); the value is the line as read
  csv    a header line names the columns, each later line is a record; --key-field and
         --time-field name columns; the value is the line as read (the header is not a record);
         an empty key field is a null key; quoted fields may not span lines

A time field holds epoch milliseconds or an RFC 3339 time, or the layout given with
--time-layout in Go's reference-time notation ("2006/01/02 15:04"; without a zone, UTC). Without
--time-field records are stamped with the time they are appended.

Records are appended in batches: an append takes up to --batch-records records or
--batch-bytes bytes for each partition of the topic, sooner when the input pauses. A record is acknowledged when its append returned, under
the --sync policy: "always" (the default) fsyncs before that, "interval" flushes every
--sync-interval, "never" leaves it to the OS; under every policy an acknowledged record survives
the process being killed. With --print-offsets each record's "partition offset" is printed, in
input order, once it is acknowledged. A summary goes to standard error at the end; on a
terminal a progress bar shows while it runs.

Retention runs while produce does (every 5 minutes, as Kafka's broker): a topic created with
Kafka's default --retention 7d drops sealed segments whose records are all older than 7 days by
their timestamps. For historical data give --retention forever: records older than the topic's
retention.ms get a warning (once) on standard error, since the next retention check deletes
them.

Compaction (Kafka's cleanup.policy): a topic created with --cleanup-policy compact keeps at
least the latest record of every key and removes older ones (compact,delete also deletes by
retention); it refuses records without a key. While produce runs, --cleaner-threads background
cleaners clean its partitions once their dirty ratio reaches --min-cleanable-dirty-ratio;
'commitlog compact' cleans on demand.`,
		Example: `  commitlog produce --topic flights --partitions 8 --format csv --key-field origin \
      --time-field time_ms flights-3m.csv.gz
  tail -f app.log | commitlog produce --topic app --sync interval
  printf 'user-1:login\nuser-2:logout\n' | commitlog produce --topic events --key-delim : --print-offsets`,
		RunE: runE(func(cmd *cobra.Command, args []string) error { return produce(cmd, g, f, args) }),
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.topic, "topic", "t", "", "topic to append to (required)")
	fl.Int32Var(&f.partitions, "partitions", 1, "partitions of the topic when it is created")
	fl.StringVarP(&f.keyDelim, "key-delim", "K", "", "lines: the key is the text before this delimiter")
	fl.StringVar(&f.keyField, "key-field", "", "jsonl, csv: the field holding the key")
	fl.StringVar(&f.timeField, "time-field", "", "jsonl, csv: the field holding the record's time")
	fl.StringVar(&f.timeLayout, "time-layout", "", `layout of the time field in Go's reference-time notation (e.g. "2006/01/02 15:04")`)
	fl.StringVarP(&f.format, "format", "f", formatLines, "input format: lines, jsonl or csv")
	fl.StringVar(&f.sync, "sync", "always", "when appends are fsynced: always, interval or never")
	fl.DurationVar(&f.syncInterval, "sync-interval", time.Second, "flush period with --sync interval")
	fl.StringVar(&f.compression, "compression", "none", "compression of a new topic: none, gzip, snappy, lz4 or zstd")
	fl.StringVar(&f.segmentBytes, "segment-bytes", "1GiB", "segment.bytes of a new topic (1GiB = Kafka's default)")
	fl.StringVar(&f.retention, "retention", "7d", "retention.ms of a new topic: a duration (36h, 7d) or forever")
	fl.StringVar(&f.retentionBytes, "retention-bytes", "-1", "retention.bytes of a new topic per partition (-1: no limit)")
	fl.BoolVar(&f.printOffsets, "print-offsets", false, `print "partition offset" for each record once it is acknowledged`)
	fl.IntVar(&f.batchRecords, "batch-records", defaultBatchRecords, "most records per append, per partition of the topic")
	fl.StringVar(&f.batchBytes, "batch-bytes", "1MiB", "most bytes of keys and values per append, per partition of the topic")
	fl.BoolVar(&f.create, "create", false, "create the topic at once when it is missing, even if no record is appended")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "a header name=value on every record (kcat's -H; repeatable)")
	fl.BoolVarP(&f.nullEmpty, "null-empty", "Z", false, "an empty value is a null value (kcat's -Z)")
	fl.StringVar(&f.cleanupPolicy, "cleanup-policy", "delete", "cleanup.policy of a new topic: delete, compact or compact,delete")
	fl.Float64Var(&f.dirtyRatio, "min-cleanable-dirty-ratio", commitlog.DefaultMinCleanableDirtyRatio, "min.cleanable.dirty.ratio of a new topic: the dirty fraction, in (0, 1], at which the background cleaner cleans a partition")
	fl.StringVar(&f.deleteRetention, "delete-retention", "24h", "delete.retention.ms of a new topic: how long a tombstone stays after the clean that first kept it (a duration, 0: removed by the next clean)")
	fl.StringVar(&f.minCompactionLag, "min-compaction-lag", "0", "min.compaction.lag.ms of a new topic: records younger than this are not cleaned yet (a duration)")
	fl.StringVar(&f.maxCompactionLag, "max-compaction-lag", "unlimited", "max.compaction.lag.ms of a new topic: a partition whose oldest dirty record is older is cleaned whatever its dirty ratio (a duration or unlimited)")
	fl.IntVar(&f.cleanerThreads, "cleaner-threads", commitlog.DefaultCleanerThreads, "log.cleaner.threads: background cleaners of compacted topics while produce runs (0: none)")
	cmd.MarkFlagRequired("topic")
	return cmd
}

// produceConfig is the checked form of the flags.
type produceConfig struct {
	spec         parseSpec
	sync         commitlog.SyncPolicy
	topicCfg     commitlog.TopicConfig
	batchRecords int
	batchBytes   int
	// cleanerThreads is log.cleaner.threads for the store while produce runs.
	cleanerThreads int
	// policy is the topic's cleanup.policy: when it compacts, a line without a key is an error
	// (ErrKeylessRecord).
	policy commitlog.CleanupPolicy
	topic  string
	// headers are -H's, on every record; nullEmpty is -Z.
	headers   []commitlog.Header
	nullEmpty bool
}

func (f *produceFlags) check() (*produceConfig, error) {
	c := &produceConfig{spec: parseSpec{format: f.format, keyDelim: f.keyDelim, keyField: f.keyField,
		timeField: f.timeField, timeLayout: f.timeLayout}}
	switch f.format {
	case formatLines:
		if f.keyField != "" || f.timeField != "" {
			return nil, usageError("--key-field and --time-field need --format jsonl or csv; for lines use --key-delim")
		}
	case formatJSONL, formatCSV:
		if f.keyDelim != "" {
			return nil, usageError("--key-delim is for --format lines; for %s use --key-field", f.format)
		}
	default:
		return nil, usageError("--format %q: want lines, jsonl or csv", f.format)
	}
	if f.timeLayout != "" && f.timeField == "" {
		return nil, usageError("--time-layout needs --time-field")
	}
	if f.partitions < 1 || f.partitions > commitlog.MaxPartitions {
		return nil, usageError("--partitions %d: a topic has 1 to %d partitions (commitlog.MaxPartitions, Kafka's guidance per broker)", f.partitions, commitlog.MaxPartitions)
	}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, "=")
		if !ok || name == "" {
			return nil, usageError("--header %q: want name=value", h)
		}
		c.headers = append(c.headers, commitlog.Header{Key: name, Value: []byte(value)})
	}
	c.nullEmpty = f.nullEmpty
	switch f.sync {
	case "always":
		c.sync = commitlog.SyncAlways
	case "never":
		c.sync = commitlog.SyncNever
	case "interval":
		if f.syncInterval <= 0 {
			return nil, usageError("--sync-interval %s: want a positive duration", f.syncInterval)
		}
		c.sync = commitlog.SyncInterval(f.syncInterval)
	default:
		return nil, usageError("--sync %q: want always, interval or never", f.sync)
	}
	comp, err := commitlog.ParseCompression(f.compression)
	if err != nil {
		return nil, usageError("--compression %q: want none, gzip, snappy, lz4 or zstd", f.compression)
	}
	seg, err := parseSize(f.segmentBytes)
	if err != nil || seg < 1024 || seg > 1<<31-1 {
		return nil, usageError("--segment-bytes %q: want a size from 1KiB to 2GiB-1", f.segmentBytes)
	}
	ret, err := parseRetention(f.retention)
	if err != nil {
		return nil, usageError("--retention: %v", err)
	}
	retBytes, err := parseSize(f.retentionBytes)
	if err != nil {
		return nil, usageError("--retention-bytes: %v", err)
	}
	if retBytes <= 0 {
		retBytes = -1
	}
	if f.batchRecords < 1 {
		return nil, usageError("--batch-records %d: want at least 1", f.batchRecords)
	}
	bb, err := parseSize(f.batchBytes)
	if err != nil || bb < 1 || bb > 1<<30 {
		return nil, usageError("--batch-bytes %q: want a size from 1 byte to 1GiB", f.batchBytes)
	}
	c.batchRecords, c.batchBytes = f.batchRecords, int(bb)
	policy, err := commitlog.ParseCleanupPolicy(f.cleanupPolicy)
	if err != nil {
		return nil, usageError("--cleanup-policy %q: want delete, compact or compact,delete", f.cleanupPolicy)
	}
	if !(f.dirtyRatio > 0 && f.dirtyRatio <= 1) {
		return nil, usageError("--min-cleanable-dirty-ratio %v: want a fraction above 0, at most 1", f.dirtyRatio)
	}
	delRet, err := parseLag(f.deleteRetention, false)
	if err != nil {
		return nil, usageError("--delete-retention: %v", err)
	}
	if delRet > 0 && delRet < time.Millisecond {
		return nil, usageError("--delete-retention %q: want 0 or at least 1ms", f.deleteRetention)
	}
	if delRet == 0 {
		delRet = -1 // Kafka's delete.retention.ms=0; LogConfig's 0 is the 24-hour default
	}
	minLag, err := parseLag(f.minCompactionLag, false)
	if err != nil {
		return nil, usageError("--min-compaction-lag: %v", err)
	}
	maxLag, err := parseLag(f.maxCompactionLag, true)
	if err != nil {
		return nil, usageError("--max-compaction-lag: %v", err)
	}
	if maxLag > 0 && maxLag < time.Millisecond {
		return nil, usageError("--max-compaction-lag %q: want at least 1ms, or unlimited", f.maxCompactionLag)
	}
	if f.cleanerThreads < 0 {
		return nil, usageError("--cleaner-threads %d: want 0 (none) or more", f.cleanerThreads)
	}
	c.cleanerThreads = f.cleanerThreads
	c.topicCfg = commitlog.TopicConfig{Partitions: f.partitions, LogConfig: commitlog.LogConfig{
		SegmentBytes: seg, Compression: comp, RetentionDuration: ret, RetentionBytes: retBytes,
		CleanupPolicy: policy, MinCleanableDirtyRatio: f.dirtyRatio, DeleteRetention: delRet,
		MinCompactionLag: minLag, MaxCompactionLag: maxLag,
	}}
	return c, nil
}

// batch is a run of parsed records on its way to one append; its records' bytes live in arena.
type batch struct {
	recs  []commitlog.Record
	ptrs  []*commitlog.Record
	arena []byte
	bytes int64 // keys and values
	err   error // the input failed after these records (they are still appended)
}

func (b *batch) reset() {
	b.recs, b.ptrs, b.arena, b.bytes, b.err = b.recs[:0], b.ptrs[:0], b.arena[:0], 0, nil
}

// add copies p into the batch, with cfg's headers and, under -Z, an empty value made null.
func (b *batch) add(p *parsed, cfg *produceConfig) {
	start := len(b.arena)
	b.arena = append(b.arena, p.key...)
	b.arena = append(b.arena, p.value...)
	var key []byte
	if p.key != nil {
		key = b.arena[start : start+len(p.key) : start+len(p.key)]
	}
	value := b.arena[start+len(p.key) : len(b.arena) : len(b.arena)]
	if len(value) == 0 && cfg.nullEmpty {
		value = nil
	}
	rec := commitlog.Record{Key: key, Value: value, Headers: cfg.headers}
	if p.hasTime {
		rec.Timestamp = time.UnixMilli(p.ts)
	}
	b.recs = append(b.recs, rec)
	b.bytes += int64(len(p.key) + len(p.value))
}

func produce(cmd *cobra.Command, g *globals, f *produceFlags, args []string) error {
	cfg, err := f.check()
	if err != nil {
		return err
	}
	ins, err := openInputs(args, g.io.in)
	if err != nil {
		return err
	}
	defer func() {
		for _, in := range ins {
			in.close()
		}
	}()
	s, err := g.openStore(true, commitlog.WithSync(cfg.sync), commitlog.WithCleanerThreads(cfg.cleanerThreads))
	if err != nil {
		return err
	}
	defer s.Close()
	// A missing topic is created with the first append (or now, with --create), so that input
	// that fails first, or none, leaves no topic behind.
	create := func() (*commitlog.Topic, error) {
		t, err := s.CreateTopic(f.topic, cfg.topicCfg)
		if errors.Is(err, commitlog.ErrInvalidTopicName) || errors.Is(err, commitlog.ErrInvalidConfig) {
			return nil, usageError("%s", oneLine(err.Error()))
		}
		return t, err
	}
	// A new topic stores only the configs given (kafka-configs --describe: DYNAMIC_TOPIC_CONFIG);
	// the flags' defaults are Kafka's, which a zero field takes.
	retention := cfg.topicCfg.RetentionDuration
	for flag, field := range map[string]func(*commitlog.TopicConfig){
		"segment-bytes":             func(c *commitlog.TopicConfig) { c.SegmentBytes = 0 },
		"retention":                 func(c *commitlog.TopicConfig) { c.RetentionDuration = 0 },
		"retention-bytes":           func(c *commitlog.TopicConfig) { c.RetentionBytes = 0 },
		"min-cleanable-dirty-ratio": func(c *commitlog.TopicConfig) { c.MinCleanableDirtyRatio = 0 },
		"delete-retention":          func(c *commitlog.TopicConfig) { c.DeleteRetention = 0 },
		"min-compaction-lag":        func(c *commitlog.TopicConfig) { c.MinCompactionLag = 0 },
		"max-compaction-lag":        func(c *commitlog.TopicConfig) { c.MaxCompactionLag = 0 },
	} {
		if !cmd.Flags().Changed(flag) {
			field(&cfg.topicCfg)
		}
	}
	topicCfg := cfg.topicCfg
	t, err := s.Topic(f.topic)
	switch {
	case errors.Is(err, commitlog.ErrUnknownTopic):
		if err := commitlog.CheckTopicName(f.topic); err != nil {
			return usageError("%s", oneLine(err.Error()))
		}
		t, err = nil, nil
		if f.create {
			t, err = create()
		}
	case err == nil:
		warnKeptConfig(g, cmd, t, cfg.topicCfg)
	}
	if err != nil {
		return err
	}
	if t != nil {
		topicCfg = t.Config()
		retention = topicCfg.RetentionDuration
	}
	cfg.policy, cfg.topic = topicCfg.CleanupPolicy, f.topic
	n := int(topicCfg.Partitions)
	if t != nil {
		n = int(t.PartitionCount())
	}
	cfg.batchRecords = min(cfg.batchRecords*n, 1<<20)
	cfg.batchBytes = min(cfg.batchBytes*n, 1<<30)

	var readBytes atomic.Int64
	var bar *progressbar.ProgressBar
	if g.io.errIsTerm {
		total := int64(0)
		for _, in := range ins {
			if !in.regular {
				total = -1
				break
			}
			total += in.size
		}
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(g.io.err),
			progressbar.OptionSetDescription("producing to "+f.topic),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetRenderBlankState(true),
		)
	}

	// One goroutine reads and parses, the other appends: parsing the next batch overlaps the
	// append (and fsync) of the previous one. Batches cycle through free.
	ctx := cmd.Context()
	full := make(chan *batch, 2)
	free := make(chan *batch, 4)
	for range cap(free) {
		free <- &batch{}
	}
	maxLine := topicCfg.MaxMessageBytes
	if maxLine == 0 {
		maxLine = commitlog.DefaultMaxMessageBytes
	}
	old := oldRecords{retention: retention, log: g.logger(), topic: f.topic}
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		defer close(full)
		readInputs(readCtx, ins, cfg, maxLine, &readBytes, free, full)
	}()

	out := bufio.NewWriterSize(g.io.out, 64<<10)
	var records, bytes int64
	start := time.Now()
	var inputErr error
	var line []byte
	interrupted := false
loop:
	for {
		var b *batch
		var ok bool
		select {
		case b, ok = <-full:
		case <-ctx.Done():
			interrupted = true
			break loop
		}
		if !ok {
			break
		}
		if len(b.recs) > 0 {
			b.ptrs = b.ptrs[:0]
			for i := range b.recs {
				b.ptrs = append(b.ptrs, &b.recs[i])
			}
			if t == nil {
				if t, err = create(); err != nil {
					return err
				}
			}
			old.check(b.recs, time.Now())
			// Not ctx: an append that began is finished, so that what it acknowledges is known.
			if err := t.Append(context.WithoutCancel(ctx), b.ptrs...); err != nil {
				return fmt.Errorf("append to %s: %w", f.topic, err)
			}
			records += int64(len(b.recs))
			bytes += b.bytes
			if f.printOffsets {
				for _, r := range b.ptrs {
					line = strconv.AppendInt(line[:0], int64(r.Partition), 10)
					line = append(line, ' ')
					line = strconv.AppendInt(line, r.Offset, 10)
					line = append(line, '\n')
					out.Write(line)
				}
				if err := out.Flush(); err != nil {
					return fmt.Errorf("standard output: %w", err)
				}
			}
			if bar != nil {
				bar.Set64(readBytes.Load())
			}
		}
		if b.err != nil {
			inputErr = b.err
			break
		}
		b.reset()
		free <- b
	}
	stopReading()
	if bar != nil {
		bar.Finish()
	}
	elapsed := time.Since(start)
	if err := s.Close(); err != nil {
		return err
	}
	rate := float64(records) / max(elapsed.Seconds(), 1e-9)
	shown := elapsed.Round(time.Millisecond)
	if elapsed < time.Second {
		shown = elapsed.Round(10 * time.Microsecond)
	}
	fmt.Fprintf(g.io.err, "produced %s (%s) to %s in %s: %.0f records/s, %s/s\n",
		count(records, "record", ""), formatBytes(bytes), f.topic, shown, rate, formatBytes(int64(float64(bytes)/max(elapsed.Seconds(), 1e-9))))
	if inputErr != nil {
		return inputErr
	}
	if interrupted {
		fmt.Fprintln(g.io.err, "commitlog produce: interrupted; the records counted above are acknowledged, later input was not read or not appended")
		return errInterrupted
	}
	return nil
}

// warnKeptConfig says, on standard error, which of the topic flags given differ from the
// existing topic's stored configuration, which is kept.
func warnKeptConfig(g *globals, cmd *cobra.Command, t *commitlog.Topic, want commitlog.TopicConfig) {
	have := t.Config()
	var differ []string
	check := func(flag string, same bool) {
		if cmd.Flags().Changed(flag) && !same {
			differ = append(differ, "--"+flag)
		}
	}
	check("partitions", have.Partitions == want.Partitions)
	check("segment-bytes", have.SegmentBytes == want.SegmentBytes)
	check("compression", have.Compression == want.Compression)
	check("retention", have.RetentionDuration == want.RetentionDuration || have.RetentionDuration < 0 && want.RetentionDuration < 0)
	check("retention-bytes", have.RetentionBytes == want.RetentionBytes || have.RetentionBytes < 0 && want.RetentionBytes < 0)
	check("cleanup-policy", have.CleanupPolicy == want.CleanupPolicy)
	check("min-cleanable-dirty-ratio", have.MinCleanableDirtyRatio == want.MinCleanableDirtyRatio)
	check("delete-retention", have.DeleteRetention == want.DeleteRetention || have.DeleteRetention < 0 && want.DeleteRetention < 0)
	check("min-compaction-lag", have.MinCompactionLag == want.MinCompactionLag)
	check("max-compaction-lag", have.MaxCompactionLag == want.MaxCompactionLag)
	if len(differ) > 0 {
		fmt.Fprintf(g.io.err, "commitlog produce: topic %s exists (%d partitions, %s, segment.bytes %d, cleanup.policy %s); its stored configuration is kept, %s ignored\n",
			t.Name(), have.Partitions, have.Compression, have.SegmentBytes, have.CleanupPolicy, strings.Join(differ, ", "))
	}
}

// readInputs parses every input's lines into batches, sending each when full, when the input
// would make it wait, and at the end. A parse error ends the reading: it rides on the last
// batch, after the records before it.
func readInputs(ctx context.Context, ins []*input, cfg *produceConfig, maxLine int, counter *atomic.Int64, free <-chan *batch, full chan<- *batch) {
	var b *batch
	take := func() bool {
		select {
		case b = <-free:
			return true
		case <-ctx.Done():
			return false
		}
	}
	send := func() bool {
		select {
		case full <- b:
			b = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !take() {
		return
	}
	var p parsed
	for _, in := range ins {
		lr, err := newLineReader(in, counter, maxLine)
		if err != nil {
			b.err = err
			send()
			return
		}
		parser := cfg.spec.newParser()
		for {
			if len(b.recs) > 0 && lr.wouldBlock() {
				if !send() || !take() {
					lr.close()
					return
				}
			}
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err == nil {
				var skip bool
				skip, err = parser.parse(line, &p)
				switch {
				case err != nil:
					err = fmt.Errorf("%s:%d: %w", lr.name, lr.line, err)
				case skip:
					continue
				case cfg.policy.Compact() && p.key == nil:
					// Refused here, with its line, rather than by the append of its batch: the
					// records before it are appended, as before a line that does not parse.
					err = &keylessError{fmt.Sprintf("%s:%d: a record without a key, which topic %s refuses (cleanup.policy %s keeps the latest record of every key)",
						lr.name, lr.line, cfg.topic, cfg.policy)}
				}
			}
			if err != nil {
				lr.close()
				b.err = err
				send()
				return
			}
			b.add(&p, cfg)
			if len(b.recs) >= cfg.batchRecords || len(b.arena) >= cfg.batchBytes {
				if !send() || !take() {
					lr.close()
					return
				}
			}
		}
		lr.close()
	}
	send()
}

// keylessError is a line without a key for a compacted topic: commitlog.ErrKeylessRecord, with
// the line's place in its message.
type keylessError struct{ msg string }

func (e *keylessError) Error() string { return e.msg }
func (e *keylessError) Unwrap() error { return commitlog.ErrKeylessRecord }

// oldRecords warns, once per produce, of records older than the topic's retention.ms: the next
// retention check (every 5 minutes while the store is open, as Kafka's
// log.retention.check.interval.ms) deletes the segments that hold only such records, as Kafka
// deletes them by their timestamps.
type oldRecords struct {
	retention time.Duration // retention.ms; negative: forever
	log       *slog.Logger
	topic     string
	warned    bool
}

// check warns if a record of recs, stamped by the input, is older than now minus retention.ms.
func (o *oldRecords) check(recs []commitlog.Record, now time.Time) {
	if o.warned || o.retention <= 0 {
		return
	}
	limit := now.Add(-o.retention)
	for i := range recs {
		ts := recs[i].Timestamp
		if !ts.IsZero() && ts.Before(limit) {
			o.warned = true
			o.log.Warn("records older than the topic's retention.ms: the next retention check deletes them (give --retention forever, or 'commitlog alter-config "+o.topic+" --add-config retention.ms=-1')",
				"topic", o.topic, "retention.ms", o.retention.Milliseconds(), "timestamp", ts.UTC().Format(time.RFC3339Nano))
			return
		}
	}
}
