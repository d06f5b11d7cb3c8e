package main

import (
	"strings"
	"testing"
	"time"
)

func TestProducerGoroutines(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int
		ok   bool
	}{
		{"producers1", 1, true},
		{"producers16", 16, true},
		{"producers64", 64, true},
		{"producers0", 0, false},
		{"producers", 0, false},
		{"producersx", 0, false},
		{"c16", 0, false},
	} {
		got, ok := producerGoroutines(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("producerGoroutines(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}

// Every producers case the workload lists is one runCase knows.
func TestProducersCases(t *testing.T) {
	w := producersWorkload(newParams(1, time.Second, 1<<30, ""))
	var ids []string
	for _, c := range w.Cases {
		if _, ok := producerGoroutines(c.ID); !ok {
			t.Errorf("case %q is not a producers case", c.ID)
		}
		ids = append(ids, c.ID+"="+c.Title)
	}
	if got, want := strings.Join(ids, ","), "producers1=1 goroutine,producers16=16 goroutines,producers64=64 goroutines"; got != want {
		t.Errorf("cases %s, want %s", got, want)
	}
}

func TestSelectWorkloadsByName(t *testing.T) {
	all := workloads(newParams(1, time.Second, 1<<30, ""))
	for _, tc := range []struct {
		list string
		want string
	}{
		{"reader,producers,scale", "reader,producers,scale"},
		{"a, scale", "a,scale"},
		{"all", "a,b,c,d,e,f,g,reader,producers,scale"},
	} {
		got, err := selectWorkloads(all, tc.list)
		if err != nil {
			t.Fatalf("%q: %v", tc.list, err)
		}
		var letters []string
		for _, w := range got {
			letters = append(letters, w.Letter)
		}
		if strings.Join(letters, ",") != tc.want {
			t.Errorf("selectWorkloads(%q) = %v, want %s", tc.list, letters, tc.want)
		}
	}
	if _, err := selectWorkloads(all, "read"); err == nil || !strings.Contains(err.Error(), workloadNames) {
		t.Errorf("selectWorkloads(read) = %v, want an error listing %s", err, workloadNames)
	}
}

// A named workload is not a run of letters: a system in "reader" takes no part in a, d or e.
func TestSystemTakes(t *testing.T) {
	for _, tc := range []struct {
		system string
		in     string
		out    string
	}{
		{"commitlog", "a,c,g,reader,producers", "scale"},
		{"commitlog-Scan", "reader", "a,d,e,r,producers,scale"},
		{"commitlog-Reader", "reader", "a,d,e,producers"},
		{"commitlog-Topic", "producers,scale", "a,c,e,s,reader"},
		{"groupsync", "producers", "a,c,d,e,s"},
		{"groupsync-4", "producers", "a,c,d,e,s,reader,scale"},
		{"bufio", "a,d,reader", "c,producers"},
		{"fdatasync", "c,producers", "a,reader"},
	} {
		s, err := systemByName(tc.system)
		if err != nil {
			t.Fatal(err)
		}
		for w := range strings.SplitSeq(tc.in, ",") {
			if !s.Takes(w) {
				t.Errorf("%s does not take %s", tc.system, w)
			}
		}
		for w := range strings.SplitSeq(tc.out, ",") {
			if s.Takes(w) {
				t.Errorf("%s takes %s", tc.system, w)
			}
		}
	}
	s, _ := systemByName("commitlog")
	if got, want := s.WorkloadList(), "abcdefg, reader, producers"; got != want {
		t.Errorf("WorkloadList() = %q, want %q", got, want)
	}
	s, _ = systemByName("groupsync")
	if got, want := s.WorkloadList(), "producers"; got != want {
		t.Errorf("WorkloadList() = %q, want %q", got, want)
	}
}

// The reader workload's cases read back exactly the records they wrote, through every system
// that takes part, and time the read only.
func TestRunReader(t *testing.T) {
	p := newParams(0.001, time.Second, 1<<30, "")
	p.SmallN, p.Batch = 2500, 1000
	for _, s := range allSystems() {
		if !s.Takes("reader") {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			r, err := runReader(s, t.TempDir(), p)
			if err != nil {
				t.Fatal(err)
			}
			if r.Records != 2500 || r.Bytes != 2500*(keySize+100) || r.Seconds <= 0 {
				t.Errorf("records %d, bytes %d, seconds %g; want 2500, %d, > 0", r.Records, r.Bytes, r.Seconds, 2500*(keySize+100))
			}
		})
	}
}
