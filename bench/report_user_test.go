package main

import (
	"strings"
	"testing"
	"time"
)

// rate is a result of n records in one second.
func rate(n int64) Result {
	return Result{Records: n, Bytes: n * (keySize + 100), Seconds: 1, CPU: float64(n) * 2e-6, PeakRSS: 20 << 20}
}

// userReport is a report of the user-path workloads over the given results.
func userReport(t *testing.T, results map[string]map[string][]Result) string {
	t.Helper()
	p := newParams(1, 2*time.Second, 1<<30, "")
	systems, err := selectSystems("commitlog,commitlog-Scan,commitlog-Reader,commitlog-Topic,bufio,groupsync")
	if err != nil {
		t.Fatal(err)
	}
	wls, err := selectWorkloads(workloads(p), "reader,producers,scale")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Command: "cd bench && go run . -workloads=reader,producers,scale", Started: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC),
		Params: p, Runs: 3, Systems: systems, Workloads: wls, Results: results}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hasLines fails t for every line of want that the report lacks.
func hasLines(t *testing.T, report string, want ...string) {
	t.Helper()
	lines := map[string]bool{}
	for l := range strings.Lines(report) {
		lines[strings.TrimSuffix(l, "\n")] = true
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("report lacks the line\n%s\nreport:\n%s", w, report)
		}
	}
}

func TestReportUserPaths(t *testing.T) {
	scale := func(createMS, closeMS, reopenMS float64, fds, seg int, rss int64) Result {
		return Result{Records: 10_000, CPU: 3, PeakRSS: rss + 1<<20, Scale: &ScaleResult{Partitions: 10_000, Created: 10_000,
			CreateMS: createMS, CreateEachMS: 6 * createMS, LayoutMS: 4 * createMS, CloseMS: closeMS, ReopenMS: reopenMS, FDs: fds, SegmentFDs: seg, RSS: rss, FDLimit: 20_000, MaxOpenFiles: 1024}}
	}
	out := userReport(t, map[string]map[string][]Result{
		"reader": {
			"commitlog-Scan":        {rate(10_000_000), rate(9_000_000), rate(11_000_000)},
			"commitlog-Reader":      {rate(8_000_000), rate(8_000_000), {Err: "boom"}},
			"commitlog-Reader.Scan": {rate(7_000_000)},
			"commitlog":             {rate(12_000_000)},
			"bufio":                 {rate(5_000_000)},
		},
		"producers1":  {"commitlog-Topic": {rate(3_000)}, "commitlog": {rate(6_000)}},
		"producers16": {"commitlog-Topic": {rate(50_000)}, "commitlog": {rate(60_000)}, "groupsync": {rate(30_000)}},
		"producers64": {"commitlog-Topic": {{Err: "disk full"}}},
		"scale": {"commitlog-Topic": {
			scale(4000, 1500, 900, 3100, 3000, 100<<20),
			scale(5000, 2500, 1100, 3100, 3000, 120<<20),
			scale(6000, 1000, 1000, 3100, 3000, 110<<20),
		}},
		"scalekill": {"commitlog-Topic": {{Err: "the writer failed: create failed after 6,660 of 10,000 partitions (19,990 descriptors open at most, 19,980 of them segment files; limit 20,000): creating topic t00666: commitlog: topic t00666 partition 0: open t00666-0/00000000000000000000.txnindex: too many open files",
			Scale: &ScaleResult{Partitions: 10_000, Created: 6660, FDs: 19_990, SegmentFDs: 19_980, RSS: 300 << 20, FDLimit: 20_000, MaxOpenFiles: 1024}}}},
	})
	hasLines(t, out,
		// The targets summary: each target of the owner of each workload, and of the reader's
		// zero-copy mode.
		"| (reader) | Reader.Records ≥0.8× Partition.Scan | 0.80× | met |",
		"| (reader) | Reader.Scan (the zero-copy mode) ≥0.8× Partition.Scan | 0.70× | **missed** |",
		"| (producers) 1 goroutine | ≥3.5k records/s (no slower than before coalescing) | 3.0k records/s | **missed** |",
		"| (producers) 16 goroutines | ≥45.2k records/s (4× the 11.3k before coalescing) | 50.0k records/s | met |",
		"| (scale) | create (one CreateTopics call) <10.00 s | 5.00 s | met |",
		"| (scale) | clean close <2.00 s | 1.50 s | met |",
		"| (scale) | reopen after a clean close <2.00 s | 1.00 s | met |",
		"| (scale) | reopen after SIGKILL <10.00 s | failed | **missed** |",
		"| (scale) | segment files open ≤ WithMaxOpenFiles (1,024) | 19,980 | **missed** |",
		"| (scale) | VmRSS <256 MiB | 300 MiB | **missed** |",
		// The reader table: × over Partition.Scan, CPU per record, a failed run noted.
		"| system | records/s | MB/s | CPU µs/record | allocs/record | peak RSS | × commitlog-Scan | target |",
		"| **commitlog** | 12.00M ±0% | 1392.0 | 2.00 | 0.000 | 20 MiB | 1.20 |  |",
		"| **commitlog-Scan** | 10.00M ±20% | 1160.0 | 2.00 | 0.000 | 20 MiB | 1.00 |  |",
		"| **commitlog-Reader** | 8.00M ±0% | 928.0 | 2.00 | 0.000 | 20 MiB | 0.80 | Reader.Records ≥0.8× Partition.Scan: 0.80× **met** |",
		"| ↳ 1 of 3 runs failed | boom | | | | | | |",
		"| bufio | 5.00M ±0% | 580.0 | 2.00 | 0.000 | 20 MiB | 0.50 |  |",
		// The producers tables: × over the Log's group commit; a failed case is a row.
		"| **commitlog-Topic** | 50.0k ±0% | 5.8 | 2.00 | 0.000 | 20 MiB | 0.83 | ≥45.2k records/s (4× the 11.3k before coalescing): 50.0k records/s **met** |",
		"| groupsync | 30.0k ±0% | 3.5 | 2.00 | 0.000 | 20 MiB | 0.50 |  |",
		"| **commitlog-Topic** | failed: disk full | | | | | | |",
		// The scale table.
		"| create: Open, 1,000 topics in one CreateTopics call, one record in each of their 10,000 partitions | 5.00 s ±40% | create (one CreateTopics call) <10.00 s: 5.00 s **met** |",
		"| create as above, one CreateTopic call a topic (in a store of its own; the target is the CreateTopics call's) | 30.00 s ±40% | |",
		"| the file system's share of create, alone: the same 10,000 folders made and 50,000 files written (a few bytes each, no fsync) by os.Mkdir and os.WriteFile from 16 goroutines, just before the CreateTopics call | 20.00 s ±40% | |",
		"| clean close (Store.Close) | 1.50 s ±100% | clean close <2.00 s: 1.50 s **met** |",
		"| reopen after the clean close (Open) | 1.00 s ±20% | reopen after a clean close <2.00 s: 1.00 s **met** |",
		"| reopen after SIGKILL (Open) | failed: the writer failed: create failed after 6,660 of 10,000 partitions (19,990 descriptors open at most, 19,980 of them segment files; limit 20,000): creating topic t00666: commitlog: topic t00666 partition 0: open t00666-0/00000000000000000000.txnindex: too many open files | reopen after SIGKILL <10.00 s: failed **missed** |",
		"| descriptors open, most seen (of them segment files): create and clean reopen; reopen after SIGKILL | 3,100 (3,000); 19,990 (19,980) | segment files open ≤ WithMaxOpenFiles (1,024): 19,980 **missed** |",
		"| VmRSS, most seen (VmHWM): create and clean reopen; reopen after SIGKILL | 120 MiB (peak 121 MiB); 300 MiB | VmRSS <256 MiB: 300 MiB **missed** |",
		"| CPU (user + system): create, close and reopen; reopen after SIGKILL | 3.00 s; — | |",
		"| descriptor limit of the process (soft RLIMIT_NOFILE) | 20,000 | |",
	)
	for _, section := range []string{
		"## (reader) Reader.Records against Partition.Scan: 1,000,000 records of 100-byte values from one partition",
		"## (producers) durable single-record Topic.Append for 2s, 4 partitions, 100-byte values",
		"## (scale) 1,000 topics × 10 partitions (10,000 partitions), one record each",
		"| commitlog-Topic | this repository (Store, file store) |",
	} {
		if !strings.Contains(out, section) {
			t.Errorf("report lacks %q", section)
		}
	}
}

// A scale run at other sizes says its targets are set for 1,000 × 10; scale cases that did not
// run leave their targets n/a.
func TestScaleVerdictsNotRun(t *testing.T) {
	p := newParams(0.1, time.Second, 1<<30, "")
	rep := &Report{Params: p, Results: map[string]map[string][]Result{}}
	var got []string
	for _, v := range rep.scaleVerdicts() {
		got = append(got, v.Target+": "+v.State())
	}
	want := []string{
		"create (one CreateTopics call) <10.00 s (set for 1,000 × 10): n/a",
		"clean close <2.00 s (set for 1,000 × 10): n/a",
		"reopen after a clean close <2.00 s (set for 1,000 × 10): n/a",
		"reopen after SIGKILL <10.00 s (set for 1,000 × 10): n/a",
		"segment files open ≤ WithMaxOpenFiles (1,024): n/a",
		"VmRSS <256 MiB (set for 1,000 × 10): n/a",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSummarizeScale(t *testing.T) {
	s := summarizeScale([]Result{
		{CPU: 2, PeakRSS: 50 << 20, Scale: &ScaleResult{Partitions: 40, CreateMS: 30, CloseMS: 10, ReopenMS: 5, FDs: 130, SegmentFDs: 120, RSS: 40 << 20, FDLimit: 1000, MaxOpenFiles: 64}},
		{CPU: 4, PeakRSS: 60 << 20, Scale: &ScaleResult{Partitions: 40, CreateMS: 10, CloseMS: 20, ReopenMS: 15, FDs: 125, SegmentFDs: 120, RSS: 45 << 20, FDLimit: 1000, MaxOpenFiles: 64}},
		{Err: "too many open files", Scale: &ScaleResult{Partitions: 40, FDs: 999, SegmentFDs: 990, RSS: 30 << 20, FDLimit: 1000, MaxOpenFiles: 64}},
		{Err: "child failed"},
	})
	want := ScaleSummary{Runs: 2, Failed: 2, Err: "child failed", Partitions: 40, CreateMS: 20, CloseMS: 15, ReopenMS: 10,
		CreateSpread: 1, CloseSpread: 10.0 / 15, ReopenSpread: 1, FDs: 999, SegmentFDs: 990, RSS: 45 << 20, PeakRSS: 60 << 20,
		FDLimit: 1000, MaxOpenFiles: 64, CPU: 3}
	if *s != want {
		t.Errorf("summarizeScale = %+v\nwant %+v", *s, want)
	}
}

func TestLongCellText(t *testing.T) {
	long := strings.Repeat("x", 700)
	for _, tc := range []struct{ in, want string }{
		{"a|b\nc", "a\\|b c"},
		{strings.Repeat("y", 300), strings.Repeat("y", 300)},
		{long, long[:600] + "…"},
	} {
		if got := longCellText(tc.in); got != tc.want {
			t.Errorf("longCellText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
