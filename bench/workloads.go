package main

import (
	"fmt"
	"strings"
	"time"
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

// Workload is one lettered workload of the report.
type Workload struct {
	Letter string
	Title  string
	// Meaning says what it measures, for the report.
	Meaning string
	Cases   []Case
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
	}
	if scale < 1 {
		p.Flights = n(3_000_000)
	}
	return p
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
	}
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
		return nil, fmt.Errorf("no workload in %q (have a, b, c, d, e, f, g)", list)
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
