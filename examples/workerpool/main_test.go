package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerPool runs the example on the first 20,000 flights of the shared data and checks its
// totals: every flight processed at least once and counted once, the airports' counts and the
// delay minutes those flights add up to (counted from the file here, and known: ORD 1,148, DFW
// 926, LAX 786 flights of 222 airports, 275,859 minutes).
func TestWorkerPool(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "data", "flights", "flights-3m.csv.gz")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("shared data %s not found (the project's ../shared/data folder beside the repository): %v", src, err)
	}
	const n = 20000
	recs, err := loadFlights(src, n)
	if err != nil {
		t.Fatal(err)
	}
	wantAirports := map[string]int64{}
	var wantDelay int64
	for _, r := range recs {
		f, err := parseFlight(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		wantAirports[f.origin]++
		wantDelay += f.delay
	}

	var out bytes.Buffer
	res, err := run(context.Background(), config{path: src, records: n, workers: 4}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.Flights != n || res.Distinct != n {
		t.Errorf("%d flights loaded, %d processed at least once; want %d and %d", res.Flights, res.Distinct, n, n)
	}
	if res.Delay != 275859 || wantDelay != 275859 {
		t.Errorf("delay minutes %d (the file's: %d), want 275859", res.Delay, wantDelay)
	}
	if len(res.Airports) != 222 || len(wantAirports) != 222 {
		t.Errorf("%d airports (the file's: %d), want 222", len(res.Airports), len(wantAirports))
	}
	for name, want := range wantAirports {
		if res.Airports[name] != want {
			t.Errorf("%s: %d flights, want %d", name, res.Airports[name], want)
		}
	}
	for name, want := range map[string]int64{"ORD": 1148, "DFW": 926, "LAX": 786} {
		if res.Airports[name] != want {
			t.Errorf("%s: %d flights, want %d", name, res.Airports[name], want)
		}
	}
	// Five workers took part (w2 left, w5 joined); their counts add up to what was processed,
	// every flight once at least.
	var sum int64
	for _, name := range []string{"w1", "w2", "w3", "w4", "w5"} {
		c, ok := res.PerWorker[name]
		if !ok {
			t.Errorf("no count for %s", name)
		}
		sum += c
	}
	if len(res.PerWorker) != 5 || sum != res.Processed || res.Processed < n {
		t.Errorf("per worker %v (sum %d), processed %d; want 5 workers adding up to %d or more", res.PerWorker, sum, res.Processed, n)
	}
	for _, s := range []string{
		"w2 leaves\n", "w5 joins\n",
		"20000 distinct",
		"verified: each of the 20000 flights was processed at least once, and the group's committed positions are the log end offsets\n",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestWorkerPoolMissingFile(t *testing.T) {
	_, err := run(context.Background(), config{path: filepath.Join(t.TempDir(), "flights-3m.csv.gz"), workers: 4}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "pass the path of flights-3m.csv.gz") {
		t.Fatalf("error %v, want one saying what to pass", err)
	}
}
