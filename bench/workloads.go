package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/commitlog-go/commitlog"
)

// Case is one measured configuration: a workload letter may have several (c runs with 1 and 16
// goroutines, f after a clean close and after a kill).
type Case struct {
	// ID names the case on the child's command line: a, b, c1, c16, d, e, fclean, fkill, g.
	ID string
	// Workload is the letter the case belongs to.
	Workload string
	// Title heads the case's table or column.
	Title string
}

// Workload is one workload of the report: lettered (a-g) or named (reader, producers, scale).
type Workload struct {
	// Letter is the workload's letter or name, as -workloads takes it.
	Letter string
	Title  string
	// Meaning says what it measures, for the report.
	Meaning string
	Cases   []Case
	// Base is the system the table's × column divides by; "" for ours.
	Base string
	// Owner is the system the workload's targets are for; "" for ours.
	Owner string
	// AlsoTargeted are other systems whose targets the Targets summary shows beside the owner's
	// (the reader's zero-copy mode, which the issue accepts when owned records fall short).
	AlsoTargeted []string
}

// targeted is the systems whose targets the Targets summary shows: the owner, then AlsoTargeted.
func (w Workload) targeted() []string {
	return append([]string{w.owner()}, w.AlsoTargeted...)
}

// owner is the system w's targets are for.
func (w Workload) owner() string {
	if w.Owner == "" {
		return ours
	}
	return w.Owner
}

// Params are the sizes of every workload after -scale.
type Params struct {
	Scale       float64
	SmallN      int           // a: records of 100-byte values
	LargeN      int           // b: records of 1 KiB values
	Batch       int           // a, b: records per append
	Duration    time.Duration // c: how long each run appends
	Goroutines  []int         // c: writers
	RandomReads int           // e: reads by offset
	ReopenBytes int64         // f: payload bytes in the log before the reopen
	ReopenValue int           // f: value size
	Flights     int           // g: flights appended (0: all)
	FlightBatch int           // g: records per append
	Partitions  int           // g: partitions
	FlightsPath string        // g: the data file ("" when absent)
	// ProducerGoroutines are the producers workload's writers, one case each.
	ProducerGoroutines []int
	// ScaleTopics and ScalePartitions are the scale workload's topics and partitions a topic;
	// ScaleMaxOpenFiles is its store's WithMaxOpenFiles.
	ScaleTopics, ScalePartitions, ScaleMaxOpenFiles int
}

// newParams returns the workloads' sizes at scale.
func newParams(scale float64, dur time.Duration, reopenBytes int64, flightsPath string) Params {
	n := func(full int) int { return max(1000, int(float64(full)*scale)) }
	p := Params{
		Scale:       scale,
		SmallN:      n(1_000_000),
		LargeN:      n(200_000),
		Batch:       1000,
		Duration:    dur,
		Goroutines:  []int{1, 16},
		RandomReads: n(100_000),
		ReopenBytes: max(1<<20, int64(float64(reopenBytes)*scale)),
		ReopenValue: 1024,
		FlightBatch: 8192,
		Partitions:  8,
		FlightsPath: flightsPath,

		ProducerGoroutines: []int{1, 16, 64},
		ScaleTopics:        max(10, int(1000*scale)),
		ScalePartitions:    10,
		ScaleMaxOpenFiles:  1024,
	}
	if scale < 1 {
		p.Flights = n(3_000_000)
	}
	return p
}

// setScale applies the scale workload's flags: topics (0 keeps the size from -scale),
// partitions a topic (1 to commitlog.MaxPartitions) and the store's WithMaxOpenFiles.
func (p *Params) setScale(topics, partitions, maxOpenFiles int) error {
	if topics < 0 || partitions < 1 || partitions > commitlog.MaxPartitions {
		return fmt.Errorf("-scale-topics must be 0 or more and -scale-partitions 1 to %d", commitlog.MaxPartitions)
	}
	if topics > 0 {
		p.ScaleTopics = topics
	}
	p.ScalePartitions, p.ScaleMaxOpenFiles = partitions, maxOpenFiles
	return nil
}

// workloads returns every workload in report order, described with p's sizes.
func workloads(p Params) []Workload {
	return []Workload{
		{Letter: "a", Title: fmt.Sprintf("(a) append %s records of 100-byte values, batches of %d, no fsync", count(p.SmallN), p.Batch),
			Meaning: "Throughput of batched appends without fsync: each append call carries one batch; the timer stops after the last call returns (Sync and Close come after it).",
			Cases:   []Case{{ID: "a", Workload: "a"}}},
		{Letter: "b", Title: fmt.Sprintf("(b) append %s records of 1 KiB values, batches of %d, no fsync", count(p.LargeN), p.Batch),
			Meaning: "The same with 1 KiB values: bytes rather than records dominate.",
			Cases:   []Case{{ID: "b", Workload: "b"}}},
		{Letter: "c", Title: fmt.Sprintf("(c) durable single-record appends for %s, 100-byte values", p.Duration),
			Meaning: "Every append is one record and returns only once durable (the system's fsync-every-write mode); writers loop for a fixed time and the records are counted. The fdatasync row is the disk itself: one pwrite and one fdatasync per record.",
			Cases: []Case{{ID: "c1", Workload: "c", Title: "1 goroutine"},
				{ID: "c16", Workload: "c", Title: "16 goroutines"}}},
		{Letter: "d", Title: fmt.Sprintf("(d) sequential read of (a) after a reopen (%s records)", count(p.SmallN)),
			Meaning: "The log written by (a) is opened again in a new process (not timed) and read from its first record to its last; every record's key and value are compared with the ones written.",
			Cases:   []Case{{ID: "d", Workload: "d"}}},
		{Letter: "e", Title: fmt.Sprintf("(e) %s random reads by offset in (a)'s log", count(p.RandomReads)),
			Meaning: "Reads of single records at seeded random offsets of (a)'s log (batches of 1,000), each checked. A log that returns whole batches reads the whole batch holding the offset.",
			Cases:   []Case{{ID: "e", Workload: "e"}}},
		{Letter: "f", Title: fmt.Sprintf("(f) reopen of a %s log of 1 KiB values", sizeString(p.ReopenBytes)),
			Meaning: "Time from Open to a log that knows its last record and has read it back (checked). The log holds 63/64 of the size in keys and values, so that with its framing it stays in one 1 GiB segment (Kafka's default segment.bytes): a kill then leaves the whole unflushed segment to recover. Clean: after Close. Kill: a child process appends without fsync, says when the log holds the size, keeps appending, and is killed with SIGKILL at once; the folder is then opened as it was left. The page cache is warm in both.",
			Cases: []Case{{ID: "fclean", Workload: "f", Title: "after a clean close"},
				{ID: "fkill", Workload: "f", Title: "after SIGKILL"}}},
		{Letter: "g", Title: g(p),
			Meaning: "Real data: US domestic flights (Jan-Jun 2001, US Bureau of Transportation Statistics), key = origin airport (229 keys, skewed), value = the CSV line, appended in batches into 8 partitions by xxhash64(key) mod 8. Systems without partitions get one log per partition, the batch split the same way and the parts appended in parallel, as this library's Topic.Append does. Parsing is not timed. This library's topic keeps Kafka's defaults: a partition rolls a segment every 7 days of record time (segment.ms), 192 rolls in all here, each making a .log, .index and .timeindex file, and every rolled segment is flushed in the background (Kafka's flush on roll), so its fsyncs fall inside the timed loop; the peers without fsync write one or two files a partition and leave every byte to the kernel's writeback, after the loop. On this machine's ext4 (no journal) a file's creation costs 0.3-0.8 ms once many files were deleted in the last minutes, as in a busy temporary folder.",
			Cases:   []Case{{ID: "g", Workload: "g"}}},
		readerWorkload(p),
		producersWorkload(p),
		scaleWorkload(p),
	}
}

// workloadNames lists every workload as -workloads takes it.
const workloadNames = "a, b, c, d, e, f, g, reader, producers, scale"

// readerWorkload is the user's read path against the engine's, on the same records.
func readerWorkload(p Params) Workload {
	return Workload{Letter: "reader", Base: "commitlog-Scan", Owner: "commitlog-Reader", AlsoTargeted: []string{"commitlog-Reader.Scan"},
		Title: fmt.Sprintf("(reader) Reader.Records against Partition.Scan: %s records of 100-byte values from one partition", count(p.SmallN)),
		Meaning: "Each system writes the same records as (a) (batches of 1,000, no fsync, not timed), closes, opens its folder again in the same process (not timed) and reads every record from the first, checking each key and value. " +
			"commitlog-Reader is the application's path: Topic.NewReader from the earliest offset, drained with Reader.Records, each record its own (the caller's to keep); commitlog-Reader.Scan the same Reader in its zero-copy mode (Reader.Scan, a record valid for one loop turn); " +
			"commitlog-Scan is Partition.Scan on the same store (zero-copy, records valid for one loop turn); commitlog is Log.Scan and commitlog-ReadRecords Log.ReadRecords (1 MiB at a time) on a Log opened on its own. " +
			"× is records/s over Partition.Scan's.",
		Cases: []Case{{ID: "reader", Workload: "reader"}}}
}

// producersWorkload is the user's single-record durable append from many goroutines.
func producersWorkload(p Params) Workload {
	w := Workload{Letter: "producers", Base: ours, Owner: "commitlog-Topic",
		Title: fmt.Sprintf("(producers) durable single-record Topic.Append for %s, %d partitions, 100-byte values", p.Duration, producerPartitions),
		Meaning: fmt.Sprintf("Writers loop for a fixed time, each call appending one record and returning once it is durable, as (c). "+
			"commitlog-Topic is the application's path: Topic.Append(ctx, rec) on a topic of %d partitions of a Store opened with its defaults (SyncAlways: fsync before the acknowledgement, appends that wait together share one fsync), keys spread by the default partitioner. "+
			"commitlog is the engine's group commit: a Log opened on its own with SyncAlways. groupsync is a bufio.Writer and fdatasync shared by whoever waits (see Systems), groupsync-4 the same on %d files, each append going to the file its key hashes to: the ceiling of one group fsync per partition file, as Topic.Append has; fdatasync one pwrite and one fdatasync per append; the peers are in their fsync-every-write modes. "+
			"× is records/s over commitlog's (Log). CPU µs/record is the process's user and system time per record.", producerPartitions, groupSyncFiles)}
	for _, g := range p.ProducerGoroutines {
		title := fmt.Sprintf("%d goroutines", g)
		if g == 1 {
			title = "1 goroutine"
		}
		w.Cases = append(w.Cases, Case{ID: fmt.Sprintf("producers%d", g), Workload: "producers", Title: title})
	}
	return w
}

// scaleWorkload is a store of many partitions: create, close, reopen, and what it holds.
func scaleWorkload(p Params) Workload {
	return Workload{Letter: "scale", Owner: "commitlog-Topic",
		Title: fmt.Sprintf("(scale) %s topics × %d partitions (%s partitions), one record each", count(p.ScaleTopics), p.ScalePartitions, count(p.ScaleTopics*p.ScalePartitions)),
		Meaning: fmt.Sprintf("One store opened with WithSync(SyncNever) and WithMaxOpenFiles(%d). Create: Open, then every topic in one Store.CreateTopics call (as one Kafka CreateTopics request; Kafka's defaults), then one record appended to each partition (Partition.Append); the same with one Store.CreateTopic call a topic is timed first, in a store of its own, for comparison. "+
			"Close: Store.Close after that. Reopen: Open of the folder after the clean close, in the same process; after SIGKILL: a child process creates the same store, says so, and is killed with SIGKILL, and the folder is opened as it was left. "+
			"Each reopen is checked untimed: every topic is there and every partition holds its one record (its last record read back for the first and last topic). "+
			"Descriptors are the entries of /proc/self/fd while the store is open (the most seen: sampled every %d topics during create and after each open), those of segment files (.log, .index, .timeindex, .txnindex) apart; "+
			"RSS is VmRSS at the same moments (the most seen), peak RSS VmHWM. Times are medians over the runs, ± their spread (max−min)/median; descriptors and RSS the most seen in any run. A case that fails (\"too many open files\" under the process's descriptor limit, shown) is a failed row, not the end of the bench.",
			p.ScaleMaxOpenFiles, scaleSampleEvery),
		Cases: []Case{{ID: "scale", Workload: "scale", Title: "create, close, reopen after a clean close"},
			{ID: "scalekill", Workload: "scale", Title: "reopen after SIGKILL"}}}
}

func g(p Params) string {
	n := "3,000,000"
	if p.Flights > 0 {
		n = count(p.Flights)
	}
	return fmt.Sprintf("(g) %s real flights keyed by origin into %d partitions, batches of %d, no fsync", n, p.Partitions, p.FlightBatch)
}

// selectWorkloads returns the workloads named in list ("all", or letters separated by commas).
func selectWorkloads(all []Workload, list string) ([]Workload, error) {
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Workload
	for _, w := range all {
		for l := range strings.SplitSeq(list, ",") {
			if strings.TrimSpace(l) == w.Letter {
				out = append(out, w)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no workload in %q (have %s)", list, workloadNames)
	}
	return out, nil
}

// count formats n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sizeString formats a byte count in MiB or GiB.
func sizeString(b int64) string {
	if b >= 1<<30 && b%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
