package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillLosesNoPrintedOffset kills a produce with SIGKILL while it appends under --sync
// always --print-offsets, ten times, and checks that every offset it printed before dying holds
// the input line it was printed for: "printed" means acknowledged, and acknowledged means kept.
func TestKillLosesNoPrintedOffset(t *testing.T) {
	for round := range 10 {
		dir := filepath.Join(t.TempDir(), "store")
		killAfter := 50 + rand.IntN(3000)
		printed := killProduce(t, dir, killAfter)
		if len(printed) < killAfter {
			t.Fatalf("round %d: only %d offsets printed before the kill, waited for %d", round, len(printed), killAfter)
		}
		// verify reads the crashed store as it is, changing nothing (the recovery is the next
		// open's). The killed process's writes are whole, unless the kill cut one short: then
		// the only problem is a torn tail.
		before := treeState(t, dir)
		if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
			for _, l := range outLines(r.stdout) {
				if r.code != 1 || !strings.Contains(l, "a write cut short at the end of the log") {
					t.Fatalf("round %d: verify of the killed store: exit %d\n%s%s", round, r.code, r.stdout, r.stderr)
				}
			}
		}
		if after := treeState(t, dir); after != before {
			t.Fatalf("round %d: verify changed the store:\n%s\nbecame\n%s", round, before, after)
		}
		// What the store holds: consume reads it read-only, as the killed process left it (a
		// torn tail is not there yet), and changes nothing.
		out := mustCLI(t, nil, "--dir", dir, "consume", "--topic", "kills", "--exit-at-end", "--format", `%p %o %k:%s\n`).stdout
		if after := treeState(t, dir); after != before {
			t.Fatalf("round %d: consume changed the store:\n%s\nbecame\n%s", round, before, after)
		}
		stored := map[string]string{}
		for _, l := range outLines(out) {
			f := strings.SplitN(l, " ", 3)
			stored[f[0]+" "+f[1]] = f[2]
		}
		for i, pos := range printed {
			if got, want := stored[pos], inputLine(i); got != want {
				t.Fatalf("round %d: record %d was acknowledged at %q, which holds %q, want %q (%d printed, %d stored)",
					round, i, pos, got, want, len(printed), len(stored))
			}
		}
		// The next writer's open recovers the store (cuts a torn tail).
		mustCLI(t, strings.NewReader(""), "--dir", dir, "produce", "--topic", "kills")
		if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
			t.Fatalf("round %d: verify after recovery: exit %d\n%s%s", round, r.code, r.stdout, r.stderr)
		}
		t.Logf("round %d: killed after %d acknowledged records (waited for %d); %d stored", round, len(printed), killAfter, len(stored))
	}
}

// inputLine is the i-th line the test feeds produce: a key (17 of them, so three partitions
// all get records) and a value naming i.
func inputLine(i int) string {
	return fmt.Sprintf("key-%d:value-%d-%s", i%17, i, strings.Repeat("x", i%50))
}

// killProduce runs produce on an endless input, kills it with SIGKILL once it printed
// killAfter offsets, and returns every "partition offset" line it printed.
func killProduce(t *testing.T, dir string, killAfter int) []string {
	t.Helper()
	cmd := exec.Command(command(t), "--dir", dir, "produce", "--topic", "kills", "--partitions", "3",
		"--sync", "always", "--print-offsets", "--key-delim", ":")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Feed lines in bursts of random size with short pauses, so that batches vary and the
		// kill lands anywhere, until produce dies (the write then fails).
		w := bufio.NewWriter(stdin)
		for i := 0; ; {
			for range 1 + rand.IntN(400) {
				w.WriteString(inputLine(i))
				w.WriteByte('\n')
				i++
			}
			if w.Flush() != nil {
				return
			}
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		}
	}()
	var printed []string
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) != 2 || !isInt(f[0]) || !isInt(f[1]) {
			t.Fatalf("produce printed %q", line)
		}
		printed = append(printed, line)
		if !killed && len(printed) >= killAfter {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if !killed {
		t.Fatalf("produce ended by itself after %d offsets: %v\n%s", len(printed), err, stderr.String())
	}
	stdin.Close()
	return printed
}

// treeState describes every file under dir: name, size, modification time, content hash.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		fmt.Fprintf(&b, "%s %d %s %s\n", path, info.Size(), info.ModTime().Format(time.RFC3339Nano), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}
