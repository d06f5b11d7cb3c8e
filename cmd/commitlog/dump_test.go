package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog"
)

var update = flag.Bool("update", false, "rewrite the dump fixture and golden files in testdata/dump")

const fixtureDir = "testdata/dump"

var fixtureFiles = []string{"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"}

// writeFixture writes a small segment with the library: two uncompressed batches and two gzip
// ones, keys null and not, headers, a binary value, fixed timestamps (an earthquake a minute),
// and an index entry per batch.
func writeFixture(t *testing.T) {
	dir := t.TempDir()
	base := time.UnixMilli(1517966773840)
	appendBatch := func(codec commitlog.Compression, recs ...*commitlog.Record) {
		l, err := commitlog.OpenLog(dir, commitlog.LogConfig{IndexIntervalBytes: 1, Compression: codec, RetentionDuration: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := l.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
	}
	at := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	appendBatch(commitlog.CompressionNone,
		&commitlog.Record{Key: []byte("ci"), Value: []byte(`{"id":"ci37868143","mag":2}`), Timestamp: at(0),
			Headers: []commitlog.Header{{Key: "source", Value: []byte("usgs")}}},
		&commitlog.Record{Key: []byte("nc"), Value: []byte(`{"id":"nc72962161","mag":1.1}`), Timestamp: at(1)},
		&commitlog.Record{Value: []byte("no key"), Timestamp: at(2)})
	appendBatch(commitlog.CompressionNone,
		&commitlog.Record{Key: []byte("ak"), Value: []byte(`{"id":"ak18287302","mag":1.7}`), Timestamp: at(3)})
	appendBatch(commitlog.CompressionGzip,
		&commitlog.Record{Key: []byte("ci"), Value: []byte{0, 1, 2, 'x', 0xff}, Timestamp: at(5)},
		&commitlog.Record{Key: []byte("us"), Value: nil, Timestamp: at(4)})
	appendBatch(commitlog.CompressionGzip,
		&commitlog.Record{Key: []byte("hv"), Value: []byte("tab\there"), Timestamp: at(6),
			Headers: []commitlog.Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}})
	if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range fixtureFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fixtureDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// golden compares got with the golden file name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(fixtureDir, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Dump -update to write it)", err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestDumpGolden(t *testing.T) {
	if *update {
		writeFixture(t)
	}
	args := append([]string{"dump", "--records"}, fixtureFiles...)
	r := cliIn(t, fixtureDir, nil, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("dump: exit %d\n%s", r.code, r.stderr)
	}
	golden(t, "segment.golden", r.stdout)

	// Without --records: the batch lines only, exactly.
	r = cliIn(t, fixtureDir, nil, "dump", fixtureFiles[0])
	var want []string
	for _, l := range outLines(golden2lines(t, "segment.golden")) {
		if strings.HasPrefix(l, "|") {
			continue
		}
		if strings.HasPrefix(l, "Dumping") && !strings.HasSuffix(l, ".log") {
			break
		}
		want = append(want, l)
	}
	if got := outLines(r.stdout); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump without --records:\n%s\nwant\n%s", r.stdout, strings.Join(want, "\n"))
	}
}

func golden2lines(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDumpDamaged dumps copies of the fixture with a flipped byte in the second batch, with the
// first batch's length field broken, and cut short: each damage is reported where it is, and
// the dump goes on with the next whole batch.
func TestDumpDamaged(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtureDir, fixtureFiles[0]))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The second batch begins where the first ends: 12 + its length field.
	first := 12 + int(uint32(data[8])<<24|uint32(data[9])<<16|uint32(data[10])<<8|uint32(data[11]))
	flipped := bytes.Clone(data)
	flipped[first+70] ^= 0x01
	write("00000000000000000000.log", flipped)
	badLength := bytes.Clone(data)
	badLength[9] = 0x7f // the first batch's length: 2 GiB
	write("00000000000000000001.log", badLength)
	write("00000000000000000002.log", data[:len(data)-10])
	write("00000000000000000003.index", []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	r := cliIn(t, dir, nil, "dump", "00000000000000000000.log", "00000000000000000001.log", "00000000000000000002.log", "00000000000000000003.index")
	if r.code != 1 {
		t.Fatalf("dump of damaged files: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := outLines(r.stderr); len(got) != 1 || !strings.Contains(got[0], "4 damaged places") {
		t.Fatalf("standard error: %q, want one line counting 4 damaged places", r.stderr)
	}
	golden(t, "damaged.golden", r.stdout)
}

func TestDumpUsage(t *testing.T) {
	for _, args := range [][]string{{"dump"}, {"dump", "notes.txt"}} {
		r := cli(t, nil, args...)
		if r.code != 2 || len(outLines(r.stderr)) != 1 || r.stdout != "" {
			t.Errorf("commitlog %s: exit %d, stderr %q, stdout %q; want 2 and one line", strings.Join(args, " "), r.code, r.stderr, r.stdout)
		}
	}
	r := cli(t, nil, "dump", filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if r.code != 1 || len(outLines(r.stderr)) != 1 {
		t.Errorf("dump of a missing file: exit %d, stderr %q", r.code, r.stderr)
	}
}
