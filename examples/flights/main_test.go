package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlightsSample runs the example on the first 20,000 flights of the shared data.
func TestFlightsSample(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "data", "flights", "flights-3m.csv.gz")
	f, err := os.Open(src)
	if err != nil {
		t.Skipf("shared data %s not found (the project's ../shared/data folder beside the repository): %v", src, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var sample bytes.Buffer
	sc := bufio.NewScanner(zr)
	for i := 0; i <= 20000 && sc.Scan(); i++ {
		sample.Write(sc.Bytes())
		sample.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "flights-20k.csv")
	if err := os.WriteFile(path, sample.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), path, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, s := range []string{"streamed 20000 flights", "into 8 partitions", "skew: the largest partition holds", "replay: ORD's busiest hour"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestFlightsMissingFile(t *testing.T) {
	err := run(context.Background(), filepath.Join(t.TempDir(), "flights-3m.csv.gz"), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "pass the path of flights-3m.csv.gz") {
		t.Fatalf("error %v, want one saying what to pass", err)
	}
}
