package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatusBytes(t *testing.T) {
	const status = "Name:\tbench\nVmPeak:\t  123456 kB\nVmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\nThreads:\t5\nBad:\tx kB\n"
	for _, tc := range []struct {
		field string
		want  int64
	}{
		{"VmRSS", 20480 << 10},
		{"VmHWM", 40960 << 10},
		{"VmPeak", 123456 << 10},
		{"VmSwap", 0},        // missing
		{"Bad", 0},           // not a number
		{"Threads", 5 << 10}, // no unit: read as kB, as the file's Vm fields are
		{"Vm", 0},            // a prefix of a field is not the field
	} {
		if got := parseStatusBytes(strings.NewReader(status), tc.field); got != tc.want {
			t.Errorf("parseStatusBytes(%s) = %d, want %d", tc.field, got, tc.want)
		}
	}
}

func TestIsSegmentFile(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/tmp/s/t00001-3/00000000000000000000.log", true},
		{"/tmp/s/t00001-3/00000000000000000000.index", true},
		{"/tmp/s/t00001-3/00000000000000000000.timeindex", true},
		{"/tmp/s/t00001-3/00000000000000000000.txnindex", true},
		{"/tmp/s/t00001-3/00000000000000000000.log (deleted)", true},
		{"/tmp/s/t00001-3/leader-epoch-checkpoint", false},
		{"/tmp/s/t00001-3/00000000000000000000.snapshot", false},
		{"socket:[12345]", false},
		{"/dev/null", false},
		{"/tmp/s/catalog.log.tmp", false},
	} {
		if got := isSegmentFile(tc.path); got != tc.want {
			t.Errorf("isSegmentFile(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// countFDs sees the files opened, tells a segment file from another, and counts the same
// through a /proc/self/fd it is given as through one it opens.
func TestCountFDs(t *testing.T) {
	dir := t.TempDir()
	all0, seg0 := countFDs(nil)
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seg, err := os.Create(filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	other, err := os.Create(filepath.Join(dir, "leader-epoch-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, through := range []*os.File{nil, d, d} { // d twice: it is rewound
		all, segs := countFDs(through)
		if all != all0+3 || segs != seg0+1 {
			t.Errorf("after opening /proc/self/fd, a segment file and another: %d descriptors, %d segment files; want %d and %d", all, segs, all0+3, seg0+1)
		}
	}
}

// The scale case creates, closes and reopens a small store, checks it, and says what it held.
func TestRunScale(t *testing.T) {
	p := newParams(1, time.Second, 1<<30, "")
	if err := p.setScale(3, 2, 64); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := runScale(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	sr := r.Scale
	if sr == nil {
		t.Fatal("no scale figures")
	}
	if sr.CreateEachMS <= 0 || sr.LayoutMS <= 0 {
		t.Errorf("create (each) %v ms, file system alone %v ms: want both timed", sr.CreateEachMS, sr.LayoutMS)
	}
	// The one-call-a-topic store and the file system's folders are gone; the store stays.
	left, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != filepath.Base(dir) {
		t.Errorf("beside the store: %v, want only %s", left, filepath.Base(dir))
	}
	if sr.Partitions != 6 || sr.Created != 6 || sr.MaxOpenFiles != 64 {
		t.Errorf("partitions %d, created %d, max open files %d; want 6, 6, 64", sr.Partitions, sr.Created, sr.MaxOpenFiles)
	}
	// Every partition has its active segment open: a .log, .index and .timeindex each.
	if sr.SegmentFDs < 18 || sr.FDs < sr.SegmentFDs || sr.RSS <= 0 || sr.FDLimit <= 0 {
		t.Errorf("descriptors %d (segment files %d), RSS %d, limit %d", sr.FDs, sr.SegmentFDs, sr.RSS, sr.FDLimit)
	}
	if sr.CreateMS <= 0 || sr.CloseMS <= 0 || sr.ReopenMS <= 0 {
		t.Errorf("create %g ms, close %g ms, reopen %g ms", sr.CreateMS, sr.CloseMS, sr.ReopenMS)
	}
}

// A store that cannot be created is a failed case that says where it failed, not a crash.
func TestRunScaleFails(t *testing.T) {
	dir := t.TempDir()
	// The store's folder is a file: Open fails.
	path := filepath.Join(dir, "store")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newParams(1, time.Second, 1<<30, "")
	if err := p.setScale(2, 2, 64); err != nil {
		t.Fatal(err)
	}
	r, err := runScale(path, p)
	if err == nil {
		t.Fatal("runScale on a file succeeded")
	}
	if !strings.HasPrefix(err.Error(), "create failed after 0 of 4 partitions (") || !strings.Contains(err.Error(), " descriptors open at most, 0 of them segment files; limit ") ||
		r.Scale == nil || r.Scale.Created != 0 {
		t.Errorf("error %q, result %+v", err, r.Scale)
	}
}

func TestSetScale(t *testing.T) {
	p := newParams(0.1, time.Second, 1<<30, "")
	if p.ScaleTopics != 100 || p.ScalePartitions != 10 || p.ScaleMaxOpenFiles != 1024 {
		t.Fatalf("at -scale=0.1: %d topics × %d, max open files %d; want 100 × 10, 1024", p.ScaleTopics, p.ScalePartitions, p.ScaleMaxOpenFiles)
	}
	if err := p.setScale(0, 4, -1); err != nil || p.ScaleTopics != 100 || p.ScalePartitions != 4 || p.ScaleMaxOpenFiles != -1 {
		t.Errorf("setScale(0, 4, -1) = %v: %d × %d, %d", err, p.ScaleTopics, p.ScalePartitions, p.ScaleMaxOpenFiles)
	}
	for _, bad := range [][2]int{{-1, 10}, {10, 0}, {10, 4001}} {
		if err := p.setScale(bad[0], bad[1], 0); err == nil {
			t.Errorf("setScale(%d, %d) accepted", bad[0], bad[1])
		}
	}
	if got := strings.Join(scaleArgs(Params{ScaleTopics: 7, ScalePartitions: 3, ScaleMaxOpenFiles: 99}), " "); got != "-scale-topics 7 -scale-partitions 3 -scale-max-open-files 99" {
		t.Errorf("scaleArgs = %q", got)
	}
}
