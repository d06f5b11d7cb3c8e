package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// row is one input record as the test expects to find it.
type row struct {
	key   string
	ts    int64
	value string
}

// consumed is one record as consume printed it with the format '%p %o %k %T %s\n'.
type consumed struct {
	partition int32
	offset    int64
	key       string
	ts        int64
	value     string
}

func parseConsumed(t *testing.T, out string) []consumed {
	t.Helper()
	var recs []consumed
	for _, l := range outLines(out) {
		f := strings.SplitN(l, " ", 5)
		if len(f) != 5 {
			t.Fatalf("consume printed %q: want 5 fields", l)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		ts, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("consume printed %q", l)
		}
		recs = append(recs, consumed{int32(p), o, f[2], ts, f[4]})
	}
	return recs
}

// checkConsumedAll checks that recs (everything consume printed) are exactly the input rows:
// every key in one partition, each partition's records in input order at offsets 0, 1, ...,
// and the counts per key. It returns the input row of each partition's offsets.
func checkConsumedAll(t *testing.T, rows []row, recs []consumed) map[int32][]row {
	t.Helper()
	if len(recs) != len(rows) {
		t.Fatalf("consumed %d records, produced %d", len(recs), len(rows))
	}
	partOf := map[string]int32{}
	perPartition := map[int32][]consumed{}
	for _, r := range recs {
		if p, ok := partOf[r.key]; ok && p != r.partition {
			t.Fatalf("key %s is in partitions %d and %d", r.key, p, r.partition)
		}
		partOf[r.key] = r.partition
		perPartition[r.partition] = append(perPartition[r.partition], r)
	}
	wantCount, gotCount := map[string]int{}, map[string]int{}
	for _, r := range rows {
		wantCount[r.key]++
	}
	for _, r := range recs {
		gotCount[r.key]++
	}
	for k, n := range wantCount {
		if gotCount[k] != n {
			t.Errorf("key %s: consumed %d records, produced %d", k, gotCount[k], n)
		}
	}
	// Each partition holds its keys' rows in input order.
	expect := map[int32][]row{}
	for _, r := range rows {
		p := partOf[r.key]
		expect[p] = append(expect[p], r)
	}
	for p, got := range perPartition {
		slices.SortFunc(got, func(a, b consumed) int { return int(a.offset - b.offset) })
		for i, c := range got {
			w := expect[p][i]
			if c.offset != int64(i) || c.key != w.key || c.ts != w.ts || c.value != w.value {
				t.Fatalf("partition %d: record %d is (offset %d, %s, %d, %q), want (offset %d, %s, %d, %q)",
					p, i, c.offset, c.key, c.ts, c.value, i, w.key, w.ts, w.value)
			}
		}
	}
	return expect
}

// checkFromTime consumes from @at and checks that each partition returns exactly its records
// whose timestamp is at or after at (the input is in time order, so that is every record from
// the first such on).
func checkFromTime(t *testing.T, dir, topic string, at string, atMs int64, byPartition map[int32][]row) {
	t.Helper()
	out := mustCLI(t, nil, "--dir", dir, "consume", "--topic", topic, "--from", "@"+at, "--exit-at-end",
		"--format", `%p %o %k %T %s\n`).stdout
	got := map[int32][]consumed{}
	for _, c := range parseConsumed(t, out) {
		got[c.partition] = append(got[c.partition], c)
	}
	total := 0
	for p, rows := range byPartition {
		first := slices.IndexFunc(rows, func(r row) bool { return r.ts >= atMs })
		if first < 0 {
			first = len(rows)
		}
		want := rows[first:]
		total += len(want)
		if len(got[p]) != len(want) {
			t.Fatalf("--from @%s: partition %d returned %d records, want %d", at, p, len(got[p]), len(want))
		}
		for i, c := range got[p] {
			if c.offset != int64(first+i) || c.ts != want[i].ts || c.value != want[i].value {
				t.Fatalf("--from @%s: partition %d record %d is (offset %d, %d), want (offset %d, %d)", at, p, i, c.offset, c.ts, first+i, want[i].ts)
			}
			if c.ts < atMs {
				t.Fatalf("--from @%s: partition %d offset %d has timestamp %d, before %d", at, p, c.offset, c.ts, atMs)
			}
		}
	}
	if total == 0 {
		t.Fatalf("--from @%s selects nothing: a useless check", at)
	}
}

func TestFlightsCSV(t *testing.T) {
	src := sharedData(t, "flights/flights-3m.csv.gz")
	lines := gzipLines(t, src, 20001) // the header and 20,000 rows
	tmp := t.TempDir()
	input := filepath.Join(tmp, "flights-20k.csv")
	writeFile(t, input, lines)
	var rows []row
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		ts, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{key: f[3], ts: ts, value: l})
	}

	dir := filepath.Join(tmp, "store")
	r := mustCLI(t, nil, "--dir", dir, "produce", "--topic", "flights", "--partitions", "4", "--format", "csv",
		"--key-field", "origin", "--time-field", "time_ms", "--segment-bytes", "64KiB", input)
	if !strings.Contains(r.stderr, "produced 20000 records") {
		t.Errorf("produce's summary: %q", r.stderr)
	}

	// The brief's format: partition, offset, key.
	out := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "flights", "--from", "beginning", "--exit-at-end", "--format", `%p %o %k\n`).stdout
	perKey := map[string]int{}
	partOf := map[string]string{}
	for _, l := range outLines(out) {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("consume printed %q", l)
		}
		perKey[f[2]]++
		if p, ok := partOf[f[2]]; ok && p != f[0] {
			t.Fatalf("key %s in partitions %s and %s", f[2], p, f[0])
		}
		partOf[f[2]] = f[0]
	}
	want := map[string]int{}
	for _, r := range rows {
		want[r.key]++
	}
	if fmt.Sprint(perKey) != fmt.Sprint(want) {
		t.Fatalf("records per key: got %v\nwant %v", perKey, want)
	}

	// Everything, with timestamps and values.
	all := parseConsumed(t, mustCLI(t, nil, "--dir", dir, "consume", "--topic", "flights", "--exit-at-end",
		"--format", `%p %o %k %T %s\n`).stdout)
	byPartition := checkConsumedAll(t, rows, all)

	// From a time: one that many records share (minute resolution), given as epoch ms and as
	// RFC 3339; and one between records.
	atMs := rows[12345].ts
	checkFromTime(t, dir, "flights", strconv.FormatInt(atMs, 10), atMs, byPartition)
	checkFromTime(t, dir, "flights", time.UnixMilli(atMs).UTC().Format(time.RFC3339), atMs, byPartition)
	checkFromTime(t, dir, "flights", strconv.FormatInt(rows[777].ts+30_000, 10), rows[777].ts+30_000, byPartition)

	// verify: clean, then one flipped byte in a sealed segment.
	if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 || r.stdout != "" {
		t.Fatalf("verify of a sound store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sealed := filepath.Join(dir, "flights-0", "00000000000000000000.log")
	segs, _ := filepath.Glob(filepath.Join(dir, "flights-0", "*.log"))
	if len(segs) < 2 {
		t.Fatalf("partition 0 has %d segments; the test needs a sealed one", len(segs))
	}
	data, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	data[61+40] ^= 0x20 // inside the first batch's records, which its CRC covers
	if err := os.WriteFile(sealed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = cli(t, nil, "--dir", dir, "verify")
	if r.code != 1 {
		t.Fatalf("verify after a flipped byte: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	problems := outLines(r.stdout)
	if len(problems) != 1 || !strings.Contains(problems[0], sealed+": position 0, offset 0: CRC-32C mismatch") {
		t.Fatalf("verify's problems:\n%s\nwant one line naming %s, position 0, offset 0, the CRC", r.stdout, sealed)
	}
	if n := len(outLines(r.stderr)); n != 1 {
		t.Fatalf("verify's standard error has %d lines, want one:\n%s", n, r.stderr)
	}
}

func TestFlightsJSONLines(t *testing.T) {
	src := sharedData(t, "flights/flights-20k.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var objs []json.RawMessage
	if err := json.Unmarshal(b, &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 20000 {
		t.Fatalf("%s holds %d objects, want 20000", src, len(objs))
	}
	var lines []string
	var rows []row
	for _, o := range objs {
		var buf bytes.Buffer
		if err := json.Compact(&buf, o); err != nil {
			t.Fatal(err)
		}
		var f struct{ Date, Origin string }
		if err := json.Unmarshal(o, &f); err != nil {
			t.Fatal(err)
		}
		ts, err := time.Parse("2006/01/02 15:04", f.Date)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, buf.String())
		rows = append(rows, row{key: f.Origin, ts: ts.UnixMilli(), value: buf.String()})
	}
	tmp := t.TempDir()
	input := filepath.Join(tmp, "flights-20k.jsonl")
	writeFile(t, input, lines)
	dir := filepath.Join(tmp, "store")
	mustCLI(t, nil, "--dir", dir, "produce", "--topic", "flights", "--partitions", "3", "--format", "jsonl",
		"--key-field", "origin", "--time-field", "date", "--time-layout", "2006/01/02 15:04", "--compression", "zstd",
		"--segment-bytes", "128KiB", input)
	all := parseConsumed(t, mustCLI(t, nil, "--dir", dir, "consume", "--topic", "flights", "--exit-at-end",
		"--format", `%p %o %k %T %s\n`).stdout)
	byPartition := checkConsumedAll(t, rows, all)
	at := "2001-02-15T12:00:00Z"
	atTime, _ := time.Parse(time.RFC3339, at)
	checkFromTime(t, dir, "flights", at, atTime.UnixMilli(), byPartition)
	if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
