package commitlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The kill test runs a writer in a child process (this test binary, re-executed) and kills it
// with SIGKILL at random moments, over and over on the same directory. After every kill the
// parent reopens the log and checks what the crash model promises: every append the child
// acknowledged is there, byte for byte, offsets run from 0 without a hole, and every batch on disk
// is whole with a good CRC.
//
// The child writes "ack <first offset> <count>" to stdout, a pipe, after each Append returns;
// since its records are a pure function of their offset, the parent recomputes them, and also
// checks the records that reached the disk without being acknowledged.

const (
	killChildDirEnv  = "COMMITLOG_KILL_CHILD_DIR"
	killChildSeedEnv = "COMMITLOG_KILL_CHILD_SEED"
	killRounds       = 20
)

// killTestConfig is the child's and the parent's config: small segments so that rolls happen
// between kills, SyncAlways so that an acknowledgement means the bytes are on disk.
func killTestConfig() LogConfig {
	return LogConfig{
		SegmentBytes:       64 << 10,
		IndexIntervalBytes: 1024,
		SegmentIndexBytes:  64 << 10,
		Sync:               SyncAlways,
	}
}

// killRecord returns the record the kill test stores at offset: key, value, headers and
// timestamp all derived from the offset, values of varying length so batches vary in size.
func killRecord(offset int64) *Record {
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(offset))
	r := rand.New(rand.NewChaCha8([32]byte(bytes.Repeat(seed[:], 4))))
	value := make([]byte, r.IntN(300))
	for i := range value {
		value[i] = byte(r.Uint32())
	}
	rec := &Record{
		Key:       []byte("key-" + strconv.FormatInt(offset, 10)),
		Value:     value,
		Timestamp: time.UnixMilli(1_700_000_000_000 + offset),
		Offset:    offset,
		Headers: []Header{
			{Key: "offset", Value: []byte(strconv.FormatInt(offset, 10))},
			{Key: "n", Value: []byte{byte(offset), byte(offset >> 8)}},
		},
	}
	switch offset % 7 {
	case 3:
		rec.Key = nil // a null key
	case 5:
		rec.Headers = append(rec.Headers, Header{Key: "null"}) // a null header value
	}
	return rec
}

// killSameRecord reports how got differs from want, or "" when they are the same record.
func killSameRecord(got, want *Record) string {
	switch {
	case got.Offset != want.Offset:
		return fmt.Sprintf("offset %d, want %d", got.Offset, want.Offset)
	case (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Key, want.Key):
		return fmt.Sprintf("key %q, want %q", got.Key, want.Key)
	case !bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil):
		return fmt.Sprintf("value of %d bytes differs from the %d expected", len(got.Value), len(want.Value))
	case got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli():
		return fmt.Sprintf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli())
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range got.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
			return fmt.Sprintf("header %d is %q=%q, want %q=%q", i, g.Key, g.Value, w.Key, w.Value)
		}
	}
	return ""
}

// TestKillRecoveryChild is the writer the kill test runs in a child process; on its own it skips.
func TestKillRecoveryChild(t *testing.T) {
	dir := os.Getenv(killChildDirEnv)
	if dir == "" {
		t.Skip("run by TestKillRecovery in a child process")
	}
	seed, err := strconv.ParseUint(os.Getenv(killChildSeedEnv), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad seed:", err)
		os.Exit(2)
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	l, err := OpenLog(dir, killTestConfig())
	if err != nil {
		fail("open: %v", err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(l.LogEndOffset())))
	ctx := context.Background()
	// The deadline only stops a child the parent failed to kill.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		first := l.LogEndOffset()
		n := 1 + rng.IntN(20)
		recs := make([]*Record, n)
		for i := range recs {
			recs[i] = killRecord(first + int64(i))
		}
		if err := l.Append(ctx, recs...); err != nil {
			fail("append at %d: %v", first, err)
		}
		if recs[0].Offset != first {
			fail("append assigned offset %d, want %d", recs[0].Offset, first)
		}
		// One write per line: a pipe write this small is atomic, so the parent never sees half
		// an acknowledgement.
		if _, err := fmt.Fprintf(os.Stdout, "ack %d %d\n", first, n); err != nil {
			fail("stdout: %v", err)
		}
	}
	fail("not killed within the deadline")
}

// TestKillRecovery kills a writing child process with SIGKILL 20 times on the same directory and
// checks the log after each kill. The seed is printed; set COMMITLOG_KILL_SEED to replay one.
func TestKillRecovery(t *testing.T) {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		t.Skipf("SIGKILL of a child process is a unix test (GOOS %s)", runtime.GOOS)
	}
	if testing.Short() {
		t.Skip("kills child processes for several seconds; skipped in -short mode")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMMITLOG_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("COMMITLOG_KILL_SEED: %v", err)
		}
	}
	t.Logf("seed %d (replay with COMMITLOG_KILL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	acked := map[int64]int{} // first offset -> record count, every acknowledged append so far
	var ackedEnd int64       // one past the last acknowledged offset
	var maxSegments int
	for round := range killRounds {
		// Mostly kill mid-stream; now and then during the child's open and recovery.
		delay := time.Duration(20+rng.IntN(400)) * time.Millisecond
		lines, stderr, err := runKillChild(t, dir, rng.Uint64(), delay)
		if err != nil {
			t.Fatalf("round %d: %v\nchild stderr:\n%s", round, err, stderr)
		}
		for _, ln := range lines {
			var first int64
			var n int
			if _, err := fmt.Sscanf(ln, "ack %d %d", &first, &n); err != nil {
				t.Fatalf("round %d: child wrote %q: %v", round, ln, err)
			}
			acked[first] = n
			ackedEnd = max(ackedEnd, first+int64(n))
		}
		segs := verifyKilledLog(t, dir, acked, ackedEnd)
		maxSegments = max(maxSegments, segs)
		t.Logf("round %d: killed after %v, %d appends acknowledged (%d records in all), %d segments",
			round, delay, len(lines), ackedEnd, segs)
	}
	if ackedEnd == 0 {
		t.Fatal("no append was acknowledged in any round")
	}
	if maxSegments < 2 {
		t.Errorf("the log never rolled (%d segment): the test did not exercise rolls", maxSegments)
	}
}

// runKillChild starts the child writer on dir, kills it with SIGKILL after delay and returns the
// acknowledgement lines it wrote before dying.
func runKillChild(t *testing.T, dir string, seed uint64, delay time.Duration) (lines []string, stderr string, err error) {
	t.Helper()
	return killChild("TestKillRecoveryChild",
		[]string{killChildDirEnv + "=" + dir, killChildSeedEnv + "=" + strconv.FormatUint(seed, 10)},
		func(ln string) bool { return strings.HasPrefix(ln, "ack ") }, delay)
}

// killChild runs the test named test of this binary as a child process with env added, kills it
// with SIGKILL after delay, and returns the lines of its standard output that keep accepts,
// written before it died. It fails unless the child died of the kill.
func killChild(test string, env []string, keep func(string) bool, delay time.Duration) (lines []string, stderr string, err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	done := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if ln := sc.Text(); keep(ln) {
				got = append(got, ln)
			}
		}
		done <- got
	}()
	time.Sleep(delay)
	// Process.Kill is SIGKILL on unix: no deferred function, no Close, no flush runs.
	killErr := cmd.Process.Kill()
	lines = <-done // the pipe reaches EOF once the child is gone
	waitErr := cmd.Wait()
	if killErr != nil && !errors.Is(killErr, os.ErrProcessDone) {
		return lines, errBuf.String(), fmt.Errorf("kill: %w", killErr)
	}
	// The child must have died of the kill, not exited on an error of its own.
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.Exited() {
		return lines, errBuf.String(), fmt.Errorf("child did not die of SIGKILL: %v", waitErr)
	}
	return lines, errBuf.String(), nil
}

// verifyKilledLog reopens the log in dir after a kill and checks it; it returns the number of
// segments.
func verifyKilledLog(t *testing.T, dir string, acked map[int64]int, ackedEnd int64) int {
	t.Helper()
	l, err := OpenLog(dir, killTestConfig())
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if got := l.LogStartOffset(); got != 0 {
		t.Fatalf("log start offset %d, want 0", got)
	}
	leo := l.LogEndOffset()
	if leo < ackedEnd {
		t.Fatalf("log end offset %d after a kill, but offsets up to %d were acknowledged", leo, ackedEnd-1)
	}

	// Every record in the log, acknowledged or not, is the one the child wrote at its offset, and
	// offsets run from 0 to the log end offset without a hole.
	batchesByBase := map[int64]recordbatch.Header{} // base offset -> header
	next := int64(0)
	for next < leo {
		b, err := l.ReadBatches(nil, next, 256<<10)
		if err != nil {
			t.Fatalf("read batches at %d: %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("no batch at offset %d, below the log end offset %d", next, leo)
		}
		for pos := 0; pos < len(b); {
			h, err := recordbatch.Check(b[pos:], 0)
			if err != nil {
				t.Fatalf("batch at offset %d: %v", next, err)
			}
			if h.BaseOffset != next {
				t.Fatalf("batch with base offset %d where offset %d was due", h.BaseOffset, next)
			}
			batchesByBase[h.BaseOffset] = h
			recs, err := DecodeRecords(nil, b[pos:pos+h.Size()], 0, 0)
			if err != nil {
				t.Fatalf("decode batch at %d: %v", next, err)
			}
			if len(recs) != int(h.LastOffsetDelta)+1 {
				t.Fatalf("batch at %d holds %d records for %d offsets", next, len(recs), h.LastOffsetDelta+1)
			}
			for _, r := range recs {
				if d := killSameRecord(r, killRecord(next)); d != "" {
					t.Fatalf("record at offset %d: %s", next, d)
				}
				next++
			}
			pos += h.Size()
		}
	}
	if next != leo {
		t.Fatalf("records end at %d, log end offset is %d", next, leo)
	}
	// Every acknowledged append is one whole batch where the child said.
	for first, n := range acked {
		h, ok := batchesByBase[first]
		if !ok {
			t.Fatalf("acknowledged append of %d records at %d is not a batch of the log", n, first)
		}
		if int(h.LastOffsetDelta)+1 != n || int(h.RecordCount) != n {
			t.Fatalf("acknowledged append at %d had %d records, its batch holds %d", first, n, h.RecordCount)
		}
	}
	// The files themselves: every .log is whole batches with good CRCs, each segment starting at
	// its base offset and ending where the next begins.
	killVerifySegmentFiles(t, dir, leo)
	return l.SegmentCount()
}

// killVerifySegmentFiles scans the .log files of dir directly, without the log, checking every batch.
func killVerifySegmentFiles(t *testing.T, dir string, leo int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	next := int64(-1)
	for _, name := range names {
		base, ok := parseSegmentName(filepath.Base(name), logSuffix)
		if !ok {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if next >= 0 && base != next {
			t.Fatalf("segment %s starts at %d, the previous one ended before %d", filepath.Base(name), base, next)
		}
		next = base
		for pos := 0; pos < len(data); {
			h, err := recordbatch.Check(data[pos:], 0)
			if err != nil {
				t.Fatalf("%s position %d: %v", filepath.Base(name), pos, err)
			}
			if h.BaseOffset != next {
				t.Fatalf("%s position %d: base offset %d, want %d", filepath.Base(name), pos, h.BaseOffset, next)
			}
			next = h.NextOffset()
			pos += h.Size()
		}
	}
	if next >= 0 && next != leo {
		t.Fatalf("segment files end at offset %d, the log end offset is %d", next, leo)
	}
}
