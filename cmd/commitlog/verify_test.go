package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyFindsIndexAndStateProblems damages indexes and state files of a sound store, one
// thing each, and checks that verify names each, one line apiece, and changes nothing.
func TestVerifyFindsIndexAndStateProblems(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "k%d,%d,%s\n", i%7, 978307260000+int64(i)*60_000, strings.Repeat("v", 40))
	}
	mustCLI(t, strings.NewReader("key,ts,v\n"+in.String()), "--dir", dir, "produce", "--topic", "v", "--partitions", "2",
		"--format", "csv", "--key-field", "key", "--time-field", "ts", "--segment-bytes", "16KiB", "--batch-records", "50")
	if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
		t.Fatalf("verify of a sound store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	seg := filepath.Join(dir, "v-0", "00000000000000000000")
	patch := func(path string, at int, b []byte) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if at+len(b) > len(data) {
			t.Fatalf("%s has %d bytes, the test patches %d at %d", path, len(data), len(b), at)
		}
		copy(data[at:], b)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first offset index entry points one byte into its batch.
	idx, err := os.ReadFile(seg + ".index")
	if err != nil || len(idx) < 16 {
		t.Fatalf("index of %d bytes: %v", len(idx), err)
	}
	patch(seg+".index", 4, binary.BigEndian.AppendUint32(nil, binary.BigEndian.Uint32(idx[4:])+1))
	// The second time index entry claims a timestamp far above every record's.
	patch(seg+".timeindex", 12, binary.BigEndian.AppendUint64(nil, 1<<50))
	// The store's topic configurations fail their checksum; a partition folder is gone.
	patch(filepath.Join(dir, "commitlog-topics"), 50, []byte("X"))
	if err := os.RemoveAll(filepath.Join(dir, "v-1")); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)
	r := cli(t, nil, "--dir", dir, "verify")
	if after := treeState(t, dir); after != before {
		t.Fatal("verify changed the store")
	}
	if r.code != 1 {
		t.Fatalf("verify: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := outLines(r.stdout)
	for _, want := range []string{
		seg + ".index: position 0, offset ",
		seg + ".timeindex: position 12, offset ",
		filepath.Join(dir, "commitlog-topics") + ": position 0, offset -: damaged state file: checksum",
	} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no problem line beginning %q in:\n%s", want, r.stdout)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d problem lines, want 3 (the missing folder is not known while the configurations are damaged):\n%s", len(lines), r.stdout)
	}
	if !strings.Contains(r.stdout, "is not the start of a batch") || !strings.Contains(r.stdout, "above every record's") {
		t.Errorf("problems do not say what is wrong:\n%s", r.stdout)
	}
}
