package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog"
)

// tailWriterDirEnv names the store the writer child of TestConsumeTailsLiveWriter writes.
const tailWriterDirEnv = "COMMITLOG_TAIL_WRITER_DIR"

// tailWriterRecords is how many records the writer child appends, over both partitions.
const tailWriterRecords = 3000

// TestTailWriterChild is the writer TestConsumeTailsLiveWriter runs in a child process; on its
// own it skips. It appends tailWriterRecords records to the two partitions of topic "tail" in
// turn, with segments of 1 KiB and 4 KiB of retention per partition, retention checked every
// 10 ms, and prints "ack PARTITION OFFSET VALUE" once each append returned, then "done". It
// closes the store once its standard input ends, and exits 0.
func TestTailWriterChild(t *testing.T) {
	dir := os.Getenv(tailWriterDirEnv)
	if dir == "" {
		t.Skip("run by TestConsumeTailsLiveWriter in a child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	s, err := commitlog.Open(dir, commitlog.WithRetentionCheckInterval(10*time.Millisecond), commitlog.WithSync(commitlog.SyncNever))
	if err != nil {
		fail("open: %v", err)
	}
	tp, err := s.CreateTopic("tail", commitlog.TopicConfig{Partitions: 2,
		LogConfig: commitlog.LogConfig{SegmentBytes: 1024, RetentionBytes: 4096}})
	if err != nil {
		fail("create: %v", err)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := range tailWriterRecords {
		p, _ := tp.Partition(int32(i % 2))
		rec := &commitlog.Record{Value: fmt.Appendf(nil, "value-%d-%s", i, strings.Repeat("x", i%40))}
		if err := p.Append(context.Background(), rec); err != nil {
			fail("append %d: %v", i, err)
		}
		fmt.Fprintf(w, "ack %d %d %s\n", rec.Partition, rec.Offset, rec.Value)
		if i%10 == 0 {
			w.Flush()
			time.Sleep(2 * time.Millisecond) // the reader catches up now and then, and falls behind
		}
	}
	fmt.Fprintln(w, "done")
	w.Flush()
	// Open until the parent closes standard input: it looks at the live store meanwhile.
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fail("close: %v", err)
	}
	os.Exit(0)
}

// TestConsumeTailsLiveWriter runs the two terminals of the README: a writer process appending
// (rolling 1 KiB segments, retention deleting them under 4 KiB per partition) and `commitlog
// consume` following it from the beginning in another process. Every acknowledged record is
// printed once, in order, with its value, but those retention deleted before consume reached
// them: in each partition consume prints a run of consecutive offsets after every jump, and every
// jump lands at or below the log start offset the writer left (records below it were deleted).
// Then, the writer stopped, a read-only open, consume and verify change no byte of the store.
func TestConsumeTailsLiveWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writer := exec.Command(os.Args[0], "-test.run=^TestTailWriterChild$", "-test.count=1")
	writer.Env = append(os.Environ(), tailWriterDirEnv+"="+dir)
	var writerErr strings.Builder
	writer.Stderr = &writerErr
	wout, err := writer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	win, err := writer.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{} // "partition offset" → value
	ends := map[string]int64{}   // partition → log end offset
	firstAck := make(chan struct{})
	allAcked := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(wout)
		n := 0
		for sc.Scan() {
			if sc.Text() == "done" {
				close(allAcked)
				continue
			}
			f := strings.SplitN(sc.Text(), " ", 4)
			if len(f) != 4 || f[0] != "ack" {
				continue // the test framework's own lines
			}
			acked[f[1]+" "+f[2]] = f[3]
			off, _ := strconv.ParseInt(f[2], 10, 64)
			ends[f[1]] = off + 1
			if n++; n == 200 {
				close(firstAck) // retention has had segments to delete by now
			}
		}
		writerDone <- writer.Wait()
	}()
	select {
	case <-firstAck:
	case err := <-writerDone:
		t.Fatalf("writer ended early: %v\n%s", err, writerErr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("writer acknowledged nothing within 30 s")
	}

	// topics shows the live store read-only, "?" where only the writer knows.
	top := mustCLI(t, nil, "--dir", dir, "topics")
	rows := tableRows(t, top.stdout, topicsHeader)
	if len(rows) != 2 || rows[0][0] != "tail" || rows[1][1] != "1" || rows[0][4] != "?" {
		t.Fatalf("topics of the live store printed\n%s%s", top.stdout, top.stderr)
	}
	if !strings.Contains(top.stderr, "read-only view") {
		t.Fatalf("topics of the live store said nothing of its read-only view: %q", top.stderr)
	}

	// consume follows it from the beginning: the store is open in the writer.
	consumer := exec.Command(command(t), "--dir", dir, "consume", "--topic", "tail", "--from", "beginning", "--format", `%p %o %s\n`)
	var consumerErr strings.Builder
	consumer.Stderr = &consumerErr
	cout, err := consumer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	defer consumer.Process.Kill()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(cout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	select {
	case <-allAcked:
	case err := <-writerDone:
		t.Fatalf("writer ended early: %v\n%s", err, writerErr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("writer did not finish within 60 s")
	}
	if len(acked) != tailWriterRecords {
		t.Fatalf("writer acknowledged %d records, want %d", len(acked), tailWriterRecords)
	}

	// What consume prints, until it printed each partition's last record.
	seen := map[string][]int64{} // partition → offsets printed, in order
	first := true
	for done := 0; done < len(ends); {
		var l string
		select {
		case got, ok := <-lines:
			if !ok {
				t.Fatalf("consume ended: %v\n%s", consumer.Wait(), consumerErr.String())
			}
			l = got
		case <-time.After(30 * time.Second):
			t.Fatalf("consume printed no record for 30 s; printed up to %v, writer ended at %v\n%s", lastOf(seen), ends, consumerErr.String())
		}
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			t.Fatalf("consume printed %q", l)
		}
		if want, ok := acked[f[0]+" "+f[1]]; !ok || want != f[2] {
			t.Fatalf("consume printed %q; the writer acknowledged %q there (found %v)", l, want, ok)
		}
		off, _ := strconv.ParseInt(f[1], 10, 64)
		if prev := seen[f[0]]; len(prev) > 0 && off <= prev[len(prev)-1] {
			t.Fatalf("partition %s: offset %d printed after %d", f[0], off, prev[len(prev)-1])
		}
		seen[f[0]] = append(seen[f[0]], off)
		if off == ends[f[0]]-1 {
			done++
		}
		first = false
	}
	if first {
		t.Fatal("consume printed nothing")
	}

	// The writer closes the store.
	win.Close()
	select {
	case err := <-writerDone:
		if err != nil {
			t.Fatalf("writer: %v\n%s", err, writerErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writer did not close within 30 s")
	}

	// The log start offsets the writer left: every record consume skipped lies below them.
	ro, err := commitlog.OpenReadOnly(dir, commitlog.WithPollInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	jumps := 0
	for p, offs := range seen {
		id, _ := strconv.ParseInt(p, 10, 32)
		logStart, end, err := ro.Offsets("tail", int32(id))
		if err != nil {
			t.Fatal(err)
		}
		if end != ends[p] {
			t.Fatalf("partition %s: log end offset %d, the writer acknowledged up to %d", p, end, ends[p])
		}
		if logStart == 0 {
			t.Fatalf("partition %s: retention deleted nothing (log start offset 0)", p)
		}
		prev := int64(-1)
		for _, off := range offs {
			if off != prev+1 {
				// Records prev+1 .. off-1 were skipped: retention must have deleted them.
				if off > logStart {
					t.Fatalf("partition %s: consume jumped from %d to %d, but the log starts at %d: records %d..%d were not deleted",
						p, prev, off, logStart, max(prev+1, logStart), off-1)
				}
				jumps++
			}
			prev = off
		}
		t.Logf("partition %s: %d records printed, log [%d, %d)", p, len(offs), logStart, end)
	}
	t.Logf("%d jumps to the log start offset", jumps)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	consumer.Process.Signal(os.Interrupt)
	if err := consumer.Wait(); err != nil {
		t.Fatalf("consume after Ctrl-C: %v\n%s", err, consumerErr.String())
	}

	// The writer stopped: reading changes no byte of its store.
	before := treeState(t, dir)
	ro, err = commitlog.OpenReadOnly(dir, commitlog.WithPollInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ro.NewReader("tail", commitlog.ReaderConfig{Start: commitlog.Earliest})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, nil, "--dir", dir, "consume", "--topic", "tail", "--from", "beginning", "--exit-at-end")
	mustCLI(t, nil, "--dir", dir, "verify")
	if after := treeState(t, dir); after != before {
		t.Fatalf("reading changed the store:\n%s\nbecame\n%s", before, after)
	}
}

// lastOf returns the last offset printed in each partition.
func lastOf(seen map[string][]int64) map[string]int64 {
	out := map[string]int64{}
	for p, offs := range seen {
		out[p] = offs[len(offs)-1]
	}
	return out
}
