package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
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

// TestOpenKeepsWhatVerifyReports: a flipped byte in the CRC of a batch of the active segment,
// then the read-only topics command (which opens the store, and so recovers it): the
// .log is unchanged byte for byte, and verify afterwards reports the batch, one line naming file,
// position and offset, exit 1.
func TestOpenKeepsWhatVerifyReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, "k%d,%d,%s\n", i%7, 978307260000+int64(i)*60_000, strings.Repeat("v", 40))
	}
	mustCLI(t, strings.NewReader("key,ts,v\n"+in.String()), "--dir", dir, "produce", "--topic", "v",
		"--format", "csv", "--key-field", "key", "--time-field", "ts", "--segment-bytes", "16KiB", "--batch-records", "50")
	logs, err := filepath.Glob(filepath.Join(dir, "v-0", "*.log"))
	if err != nil || len(logs) < 2 {
		t.Fatalf("segments %v: %v; want at least 2", logs, err)
	}
	active := logs[len(logs)-1] // names sort by base offset
	data, err := os.ReadFile(active)
	if err != nil || len(data) < 100 {
		t.Fatalf("%s: %d bytes: %v", active, len(data), err)
	}
	// The batch a clean open scans from: the one the last offset index entry points at (the
	// first batch when the index is empty).
	var pos int64
	if idx, err := os.ReadFile(strings.TrimSuffix(active, ".log") + ".index"); err != nil {
		t.Fatal(err)
	} else if len(idx) >= 8 {
		pos = int64(binary.BigEndian.Uint32(idx[len(idx)-4:]))
	}
	offset := int64(binary.BigEndian.Uint64(data[pos:]))
	data[pos+17] ^= 0x01 // its CRC
	if err := os.WriteFile(active, data, 0o644); err != nil {
		t.Fatal(err)
	}

	if r := cli(t, nil, "--dir", dir, "topics"); r.code != 0 {
		t.Fatalf("topics: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after, err := os.ReadFile(active)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, data) {
		t.Fatalf("opening the store changed %s: %d bytes, were %d", active, len(after), len(data))
	}

	r := cli(t, nil, "--dir", dir, "verify")
	if r.code != 1 {
		t.Fatalf("verify: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := outLines(r.stdout)
	want := fmt.Sprintf("%s: position %d, offset %d: ", active, pos, offset)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "CRC") {
		t.Fatalf("verify found:\n%s\nwant one line beginning %q that names the CRC", r.stdout, want)
	}
}

// TestVerifyFindsMissingSegments: the files of a whole segment removed from a partition whose
// batches show no compaction: verify names the offsets that are in no segment, one line, exit 1.
func TestVerifyFindsMissingSegments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove int // index of the segment whose three files are removed; -1 the last
	}{
		{"a segment in the middle", 1},
		{"the first segment, against the checkpointed log start offset", 0},
		{"the last segment, against the checkpointed recovery point", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			var in strings.Builder
			for i := range 2000 {
				fmt.Fprintf(&in, "k%d,%d,%s\n", i%7, 978307260000+int64(i)*60_000, strings.Repeat("v", 40))
			}
			mustCLI(t, strings.NewReader("key,ts,v\n"+in.String()), "--dir", dir, "produce", "--topic", "v",
				"--format", "csv", "--key-field", "key", "--time-field", "ts", "--segment-bytes", "16KiB", "--batch-records", "50")
			if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
				t.Fatalf("verify of a sound store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			logs, err := filepath.Glob(filepath.Join(dir, "v-0", "*.log"))
			if err != nil || len(logs) < 3 {
				t.Fatalf("segments %v: %v; want at least 3", logs, err)
			}
			bases := make([]int64, len(logs))
			for i, l := range logs {
				if _, err := fmt.Sscanf(filepath.Base(l), "%020d.log", &bases[i]); err != nil {
					t.Fatal(err)
				}
			}
			remove := tc.remove
			if remove < 0 {
				remove = len(logs) - 1
			}
			for _, suf := range []string{".log", ".index", ".timeindex"} {
				if err := os.Remove(strings.TrimSuffix(logs[remove], ".log") + suf); err != nil {
					t.Fatal(err)
				}
			}

			r := cli(t, nil, "--dir", dir, "verify")
			if r.code != 1 {
				t.Fatalf("verify: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			var want string
			switch {
			case tc.remove < 0:
				// The clean close of produce checkpointed the log end offset, 2000.
				n := len(logs)
				want = fmt.Sprintf("%s: position 0, offset %d: offsets %d to 1999 are in no segment: the recovery point in recovery-point-offset-checkpoint is 2000 (every offset below it was flushed), past the log's end %d in %s (a segment file is missing, or a TruncateTo stopped before its checkpoint)",
					filepath.Join(dir, "recovery-point-offset-checkpoint"), bases[n-1], bases[n-1], bases[n-1], filepath.Base(logs[n-2]))
			case tc.remove == 0:
				next := logs[1]
				want = fmt.Sprintf("%s: position 0, offset 0: offsets 0 to %d are in no segment: the log start offset in log-start-offset-checkpoint is 0, below this first segment's base offset %d (a segment file is missing)",
					next, bases[1]-1, bases[1])
			default:
				want = fmt.Sprintf("offsets %d to %d are in no segment: a segment file is missing between %s and this one (no batch of the partition shows the holes that compaction leaves)",
					bases[1], bases[2]-1, filepath.Base(logs[0]))
				want = fmt.Sprintf("%s: position 0, offset %d: %s", logs[2], bases[1], want)
			}
			if lines := outLines(r.stdout); len(lines) != 1 || lines[0] != want {
				t.Fatalf("verify found:\n%s\nwant the one line\n%s", r.stdout, want)
			}
		})
	}
}

// TestVerifyAllowsCompactionGaps: a follower's copy of a compacted leader (batches whose offsets
// have holes) may end a segment short of the next one's base offset: not a problem.
func TestVerifyAllowsCompactionGaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, err := commitlog.OpenLog(dir, commitlog.LogConfig{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	// Each batch covers 20 offsets and holds 10 records, the even ones: what compaction leaves.
	for base := int64(0); base < 400; base += 100 {
		var b recordbatch.Builder
		b.Reset(recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 0, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
		for i := range int32(10) {
			b.AddRecord(recordbatch.Record{OffsetDelta: 2 * i, Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 100)})
		}
		batch, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsFollower(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(logs) < 2 {
		t.Fatalf("%d segments, want several", len(logs))
	}
	if r := cli(t, nil, "--dir", dir, "verify"); r.code != 0 {
		t.Fatalf("verify: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestVerifyTransactionFiles: a store written by a transactional producer (see
// transactionalStore) verifies clean, its coordinator's internal logs __transaction_state-0 and
// __consumer_offsets-0 verified as partitions and named in the summary; then one damage at a
// time to a producer snapshot (of the topic or of an internal log) or a .txnindex is reported,
// one line naming file, position and offset, exit 1, and nothing is changed.
func TestVerifyTransactionFiles(t *testing.T) {
	clean := transactionalStore(t, true)
	r := cli(t, nil, "--dir", clean, "verify")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Empty(t, r.stdout)
	require.Equal(t, fmt.Sprintf("verified 3 partitions (2 of them the transaction coordinator's internal logs), 3 segments, 12 batches, 13 records in %s: no problems\n", clean), r.stderr)

	for _, tc := range []struct {
		name   string
		file   string // under the store
		change func([]byte) []byte
		want   func(path string, before []byte) string
	}{
		{"a producer snapshot cut short", "out-0/00000000000000000006.snapshot",
			func(b []byte) []byte { return b[:40] }, func(path string, b []byte) string {
				stored, computed := snapshotCRCs(b[:40])
				return fmt.Sprintf("%s: position 0, offset 6: damaged producer snapshot: CRC %08x, computed %08x", path, stored, computed)
			}},
		{"an internal log's snapshot shorter than its header", "__transaction_state-0/00000000000000000007.snapshot",
			func(b []byte) []byte { return b[:9] }, func(path string, _ []byte) string {
				return path + ": position 0, offset 7: damaged producer snapshot: 9 bytes, shorter than the 10-byte header"
			}},
		{"a snapshot of another version", "out-0/00000000000000000006.snapshot",
			func(b []byte) []byte { return append([]byte{0, 2}, b[2:]...) }, func(path string, _ []byte) string {
				return path + ": position 0, offset 6: damaged producer snapshot: version 2, want 1"
			}},
		{"a txnindex cut short", "out-0/00000000000000000000.txnindex",
			func(b []byte) []byte { return b[:20] }, func(path string, _ []byte) string {
				return path + ": position 0, offset -: 20 bytes after the last whole 34-byte entry"
			}},
		{"a txnindex entry of another version", "out-0/00000000000000000000.txnindex",
			func(b []byte) []byte { return append([]byte{0, 1}, b[2:]...) }, func(path string, _ []byte) string {
				return path + ": position 0, offset -: entry 0: corrupt transaction index: version 1, not 0"
			}},
		// The ABORT marker's offset (lastOffset, at byte 18) moved to 99: outside the segment,
		// whose offsets are 0 to 5.
		{"a txnindex entry past the segment", "out-0/00000000000000000000.txnindex",
			func(b []byte) []byte {
				b = bytes.Clone(b)
				binary.BigEndian.PutUint64(b[18:], 99)
				return b
			}, func(path string, _ []byte) string {
				return path + ": position 0, offset 99: entry 0: ABORT marker offset 99 is outside the segment (offsets 0 to 5)"
			}},
		{"txnindex entries out of order", "out-0/00000000000000000000.txnindex",
			func(b []byte) []byte { return append(bytes.Clone(b), b...) }, func(path string, _ []byte) string {
				return path + ": position 34, offset 4: entry 1: ABORT marker offset 4 is not above the previous entry's 4"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := transactionalStore(t, true)
			path := filepath.Join(dir, filepath.FromSlash(tc.file))
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			patchFile(t, path, tc.change)
			want := tc.want(path, before)
			state := treeState(t, dir)
			r := cli(t, nil, "--dir", dir, "verify")
			require.Equal(t, state, treeState(t, dir), "verify changed the store")
			require.Equal(t, 1, r.code)
			require.Equal(t, []string{want}, outLines(r.stdout))
			require.Equal(t, []string{fmt.Sprintf("commitlog verify: verified 3 partitions (2 of them the transaction coordinator's internal logs), 3 segments, 12 batches, 13 records in %s: 1 problem", dir)},
				outLines(r.stderr))
		})
	}
}

// TestVerifyReservedTopicFolder: a store holding a topic named "commitlog-reader-zz" (made
// before the store reserved the prefix) verifies sound: its folder "commitlog-reader-zz-0" is
// checked as a partition, not read as reader "zz-0"'s positions file.
func TestVerifyReservedTopicFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCLI(t, strings.NewReader("a\nb\n"), "--dir", dir, "produce", "--topic", "orders")
	// A partition folder as Kafka lays it out, adopted by the store as topic commitlog-reader-zz.
	if err := os.CopyFS(filepath.Join(dir, "commitlog-reader-zz-0"), os.DirFS(filepath.Join(dir, "orders-0"))); err != nil {
		t.Fatal(err)
	}
	r := cli(t, nil, "--dir", dir, "verify")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "2 partitions")
}
