package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
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

// TestDumpTransactionFiles dumps the files of a partition written by a transactional producer
// (a committed and an aborted transaction, and another producer's transaction left open; see
// transactionalStore): the .log with --records prints every batch's producer fields and each
// marker as COMMIT or ABORT with its coordinator epoch; the producer snapshot taken at the close
// (named by the log end offset, 6) every producer's state; the segment's .txnindex the aborted
// transaction, 3 to its ABORT marker at 4.
func TestDumpTransactionFiles(t *testing.T) {
	dir := filepath.Join(transactionalStore(t, true), "out-0")
	r := cliIn(t, dir, nil, "dump", "--records", "00000000000000000000.log", "00000000000000000006.snapshot", "00000000000000000000.txnindex")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, []string{
		"Dumping 00000000000000000000.log",
		"Log starting offset: 0",
		"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 0 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: 79 magic: 2 compresscodec: none crc: 6ecb2412 crcValid: true",
		"| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: 0 headerKeys: [] payload: c1",
		"| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: 1 headerKeys: [] payload: c2",
		"baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true position: 79 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 8d8aa938 crcValid: true",
		"| offset: 2 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0",
		"baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 2 lastSequence: 2 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 157 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: 70 magic: 2 compresscodec: none crc: cd695e42 crcValid: true",
		"| offset: 3 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: 2 headerKeys: [] payload: a1",
		"baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true position: 227 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 79b47f70 crcValid: true",
		"| offset: 4 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0",
		"baseOffset: 5 lastOffset: 5 count: 1 baseSequence: 0 lastSequence: 0 producerId: 4242 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 305 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: 72 magic: 2 compresscodec: none crc: 508de1e1 crcValid: true",
		"| offset: 5 CreateTime: 1700000000000 keySize: -1 valueSize: 4 sequence: 0 headerKeys: [] payload: open",
		"Dumping 00000000000000000006.snapshot",
		"Snapshot offset: 6",
		// etl: its last batch a1 at 3 (a marker is no batch), no transaction open.
		"producerId: 0 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: -1 lastTimestamp: 1700000000000 firstSequence: 2 lastSequence: 2 lastOffset: 3 offsetDelta: 0 timestamp: 1700000000000",
		// The other producer: no marker yet (coordinator epoch -1), its transaction open at 5.
		"producerId: 4242 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: 5 lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 0 lastOffset: 5 offsetDelta: 0 timestamp: 1700000000000",
		"Dumping 00000000000000000000.txnindex",
		// Aborted: a1 at 3 by the marker at 4; the last stable offset then was 5, past the marker.
		"version: 0 producerId: 0 firstOffset: 3 lastOffset: 4 lastStableOffset: 5",
	}, outLines(r.stdout))
}

// TestDumpDamagedTransactionFiles: a producer snapshot or a .txnindex that does not decode, and
// a control record that is no marker, print what is wrong naming the file, and dump exits 1
// counting the damage; the dump of the file's sound parts goes on.
func TestDumpDamagedTransactionFiles(t *testing.T) {
	store := transactionalStore(t, true)
	snap, err := os.ReadFile(filepath.Join(store, "out-0", "00000000000000000006.snapshot"))
	require.NoError(t, err)
	txn, err := os.ReadFile(filepath.Join(store, "out-0", "00000000000000000000.txnindex"))
	require.NoError(t, err)
	require.Len(t, txn, 34)
	stored, computed := snapshotCRCs(snap[:40])

	// A control batch of two records: a COMMIT whose value is 3 bytes (an EndTxnMarker is 6),
	// and a KRaft SNAPSHOT_HEADER record, which is not a marker and not damage.
	var b recordbatch.Builder
	b.Reset(recordbatch.Header{BaseOffset: 7, PartitionLeaderEpoch: 0, Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
		ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1})
	b.Add(txnClockMs, []byte{0, 0, 0, 1}, []byte{0, 0, 7}, nil)
	b.Add(txnClockMs, []byte{0, 0, 0, 3}, []byte{0, 0}, nil)
	control, err := b.Finish()
	require.NoError(t, err)
	h, err := recordbatch.ParseHeader(control, 0)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, file string
		data       []byte
		want       []string
	}{
		{"snapshot shorter than its header", "00000000000000000006.snapshot", snap[:9], []string{
			"Dumping 00000000000000000006.snapshot",
			"Snapshot offset: 6",
			"damaged: 00000000000000000006.snapshot: corrupt producer snapshot: 9 bytes, shorter than the 10-byte header",
		}},
		{"snapshot cut short", "00000000000000000006.snapshot", snap[:40], []string{
			"Dumping 00000000000000000006.snapshot",
			"Snapshot offset: 6",
			fmt.Sprintf("damaged: 00000000000000000006.snapshot: corrupt producer snapshot: CRC %08x, computed %08x", stored, computed),
		}},
		{"txnindex cut short", "00000000000000000000.txnindex", txn[:20], []string{
			"Dumping 00000000000000000000.txnindex",
			"damaged: 00000000000000000000.txnindex: corrupt transaction index: 20 bytes are not a whole number of 34-byte entries (entry 0 at byte 0 has 20 bytes)",
		}},
		{"txnindex entry of another version, then a sound one", "00000000000000000000.txnindex", append(append([]byte{0, 1}, txn[2:]...), txn...), []string{
			"Dumping 00000000000000000000.txnindex",
			"damaged: 00000000000000000000.txnindex: entry 0 at byte 0: corrupt transaction index: version 1, not 0",
			"version: 0 producerId: 0 firstOffset: 3 lastOffset: 4 lastStableOffset: 5",
		}},
		{"control record that is no marker", "00000000000000000007.log", control, []string{
			"Dumping 00000000000000000007.log",
			"Log starting offset: 7",
			fmt.Sprintf("baseOffset: 7 lastOffset: 8 count: 2 baseSequence: -1 lastSequence: -1 producerId: 9 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true position: 0 CreateTime: 1700000000000 baseTimestamp: 1700000000000 size: %d magic: 2 compresscodec: none crc: %08x crcValid: true", len(control), h.CRC),
			`| offset: 7 CreateTime: 1700000000000 keySize: 4 valueSize: 3 sequence: -1 headerKeys: [] damaged: the COMMIT marker's value is not an EndTxnMarker (version int16, coordinator epoch int32): 3 bytes key: "\x00\x00\x00\x01" payload: "\x00\x00\a"`,
			"| offset: 8 CreateTime: 1700000000000 keySize: 4 valueSize: 2 sequence: -1 headerKeys: [] controlType: SNAPSHOT_HEADER(3)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), tc.data, 0o644))
			r := cliIn(t, dir, nil, "dump", "--records", tc.file)
			require.Equal(t, 1, r.code)
			require.Equal(t, tc.want, outLines(r.stdout))
			require.Equal(t, "commitlog dump: 1 damaged place found (see the output)\n", r.stderr)
		})
	}
}
