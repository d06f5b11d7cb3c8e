package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		s, layout string
		want      int64
		err       bool
	}{
		{"978307260000", "", 978307260000, false},
		{"2001-01-01T00:01:00Z", "", 978307260000, false},
		{"2001-01-01T01:01:00+01:00", "", 978307260000, false},
		{"2001/01/01 00:01", "2006/01/02 15:04", 978307260000, false},
		{"2001/01/01 00:01", "", 0, true},
		{"yesterday", "", 0, true},
		{"2001-01-01", "2006/01/02", 0, true},
	} {
		got, err := parseTime(c.s, c.layout)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseTime(%q, %q) = %d, %v; want %d, error %t", c.s, c.layout, got, err, c.want, c.err)
		}
	}
}

func TestSplitCSV(t *testing.T) {
	for _, c := range []struct {
		line string
		want string
		err  bool
	}{
		{"a,b,c", "[a b c]", false},
		{"a,,c,", "[a  c ]", false},
		{`"x, y",z`, "[x, y z]", false},
		{`"say ""hi""",2`, `[say "hi" 2]`, false},
		{`"open,2`, "", true},
	} {
		fields, err := splitCSV([]byte(c.line), nil)
		var s []string
		for _, f := range fields {
			s = append(s, string(f))
		}
		if (err != nil) != c.err || !c.err && fmt.Sprint(s) != c.want {
			t.Errorf("splitCSV(%q) = %v, %v; want %s, error %t", c.line, s, err, c.want, c.err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	f, err := parseFormat(`%t/%p/%o %k=%s %T [%h] %K:%S 5%%\t\n`)
	if err != nil {
		t.Fatal(err)
	}
	rec := &commitlog.Record{Topic: "t", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte("v"),
		Timestamp: time.UnixMilli(1234), Headers: []commitlog.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}}
	if got, want := string(f.append(nil, rec)), "t/2/7 k=v 1234 [a=1,b=2] 1:1 5%\t\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"%", "%x", "100%"} {
		if _, err := parseFormat(bad); err == nil {
			t.Errorf("parseFormat(%q): no error", bad)
		}
	}
}

func TestParseFrom(t *testing.T) {
	for _, c := range []struct {
		s    string
		want from
		err  bool
	}{
		{"beginning", from{start: commitlog.Earliest}, false},
		{"end", from{start: commitlog.Latest}, false},
		{"42", from{start: commitlog.AtOffset, offset: 42}, false},
		{"-10", from{start: commitlog.Latest, relative: 10}, false},
		{"@978307260000", from{start: commitlog.AtTime, time: time.UnixMilli(978307260000)}, false},
		{"@2001-01-01T00:01:00Z", from{start: commitlog.AtTime, time: time.UnixMilli(978307260000).UTC()}, false},
		{"@soon", from{}, true},
		{"middle", from{}, true},
	} {
		got, err := parseFrom(c.s)
		if (err != nil) != c.err || !got.time.Equal(c.want.time) || got.start != c.want.start || got.offset != c.want.offset || got.relative != c.want.relative {
			t.Errorf("parseFrom(%q) = %+v, %v; want %+v", c.s, got, err, c.want)
		}
	}
}

func TestParseSizeAndRetention(t *testing.T) {
	for s, want := range map[string]int64{"1048576": 1 << 20, "64KiB": 64 << 10, "1GiB": 1 << 30, "2MB": 2e6, "-1": -1, "16K": 16 << 10} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "lots", "1.5GiB", "99999999999GiB"} {
		if _, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q): no error", s)
		}
	}
	for s, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "forever": -1, "-1": -1, "0.5d": 12 * time.Hour} {
		if got, err := parseRetention(s); err != nil || got != want {
			t.Errorf("parseRetention(%q) = %s, %v; want %s", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "soon", "-5h"} {
		if _, err := parseRetention(s); err == nil {
			t.Errorf("parseRetention(%q): no error", s)
		}
	}
}

// TestInProcess runs produce and consume inside the test, so that the race detector watches
// the producer's reading and appending goroutines and the consumer's idle timer.
func TestInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&in, `{"n":%d,"k":"k%d","ts":%d}`+"\n", i, i%13, 978307260000+int64(i)*1000)
	}
	var out, errb bytes.Buffer
	pr, pw := io.Pipe()
	go func() {
		// A slow writer: the producer hands over partial batches when the input pauses.
		s := in.String()
		for len(s) > 0 {
			n := min(len(s), 7000)
			pw.Write([]byte(s[:n]))
			s = s[n:]
			time.Sleep(time.Millisecond)
		}
		pw.Close()
	}()
	code := run(context.Background(), []string{"--dir", dir, "produce", "--topic", "p", "--partitions", "3",
		"--format", "jsonl", "--key-field", "k", "--time-field", "ts", "--print-offsets", "--sync", "never"},
		stdio{in: pr, out: &out, err: &errb})
	if code != 0 || len(outLines(out.String())) != 5000 {
		t.Fatalf("produce: exit %d, %d offsets printed\n%s", code, len(outLines(out.String())), errb.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"--dir", dir, "consume", "--topic", "p", "--reader", "r", "--exit-at-end", "--format", `%k %T\n`},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 || len(outLines(out.String())) != 5000 {
		t.Fatalf("consume: exit %d, %d records\n%s", code, len(outLines(out.String())), errb.String())
	}
	// An interrupted consume that waits at the end stops cleanly and commits.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out.Reset()
	if code := run(ctx, []string{"--dir", dir, "consume", "--topic", "p", "--reader", "r"}, stdio{out: &out, err: &errb}); code != 0 || out.Len() != 0 {
		t.Fatalf("interrupted consume: exit %d, printed %q\n%s", code, out.String(), errb.String())
	}
}

// FuzzDump: no bytes make the dump of a .log, .index, .timeindex, .txnindex or .snapshot file
// panic, and the scan always moves forward to the end.
func FuzzDump(f *testing.F) {
	for _, name := range fixtureFiles {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if len(b) > 70 {
			c := bytes.Clone(b)
			c[70] ^= 0xff
			f.Add(c)
			f.Add(b[:len(b)-7])
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var end int64
		err := scanLog(r, int64(len(data)), func(ev *batchEvent) error {
			if ev.pos < end || ev.size <= 0 {
				t.Fatalf("scan went back or stood still: event at %d of %d bytes after %d", ev.pos, ev.size, end)
			}
			end = ev.pos + ev.size
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && end != int64(len(data)) {
			t.Fatalf("scan ended at %d of %d bytes", end, len(data))
		}
		dumpLog(io.Discard, r, int64(len(data)), true)
		dumpOffsetIndex(io.Discard, r, int64(len(data)), 0, true)
		dumpTimeIndex(io.Discard, r, int64(len(data)), 1<<40, true)
		dumpTxnIndex(io.Discard, r, int64(len(data)), "f.txnindex")
		dumpSnapshot(io.Discard, r, int64(len(data)), "f.snapshot")
	})
}

// TestCount: a count's noun agrees with its number.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{count(0, "record", ""), "0 records"},
		{count(1, "record", ""), "1 record"},
		{count(int64(2), "record", ""), "2 records"},
		{count(int32(1), "batch", "batches"), "1 batch"},
		{count(3, "batch", "batches"), "3 batches"},
		{count(1, "unused entry", "unused entries"), "1 unused entry"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestLoggerShowsDeletedData: by default the command's logger shows the store's warnings and
// the segments retention deleted (records gone), not its other informational events; -v shows
// them all, -q none.
func TestLoggerShowsDeletedData(t *testing.T) {
	for _, c := range []struct {
		verbose, quiet bool
		deleted        bool
	}{
		{deleted: true},
		{verbose: true, deleted: true},
		{quiet: true},
	} {
		var errb bytes.Buffer
		g := &globals{verbose: c.verbose, quiet: c.quiet, io: stdio{err: &errb}}
		now := time.UnixMilli(1_000_000_000_000)
		s, err := commitlog.Open(filepath.Join(t.TempDir(), "store"), commitlog.WithLogger(g.logger()),
			commitlog.WithClock(func() time.Time { return now }), commitlog.WithRetentionCheckInterval(-1))
		if err != nil {
			t.Fatal(err)
		}
		tp, err := s.CreateTopic("old", commitlog.TopicConfig{Partitions: 1, LogConfig: commitlog.LogConfig{
			RetentionDuration: time.Hour, SegmentBytes: 1024}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			rec := &commitlog.Record{Value: bytes.Repeat([]byte{'x'}, 100), Timestamp: now.Add(-2*time.Hour + time.Duration(i)*time.Millisecond)}
			if err := tp.Append(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.ApplyRetention()
		if err != nil || n == 0 {
			t.Fatalf("ApplyRetention = %d, %v; want segments deleted", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		out := errb.String()
		if got := strings.Count(out, `level=INFO msg="retention deleted segment"`); (got == n) != c.deleted || (got == 0) == c.deleted {
			t.Errorf("verbose %t quiet %t: %d lines of deleted segments (of %d deleted), want them: %t\n%s", c.verbose, c.quiet, got, n, c.deleted, out)
		}
		if got := strings.Contains(out, `msg="log start offset advanced"`) || strings.Contains(out, "msg=\"became leader\""); got && !c.verbose {
			t.Errorf("verbose %t quiet %t: other informational events shown\n%s", c.verbose, c.quiet, out)
		}
	}
}
