package producerstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// FuzzDecodeSnapshot decodes any bytes as a .snapshot file (seeds in
// testdata/fuzz/FuzzDecodeSnapshot). DecodeSnapshot must not panic, and must fail, with
// ErrCorruptSnapshot and no entries, exactly when the bytes are not a version 1 snapshot with a
// matching CRC and as many 46-byte entries as its count says.
//
// A decoded entry has at most one batch, which is all a snapshot holds of a producer, so
// EncodeSnapshot gives back the same bytes, except where decoding made a field canonical as
// Kafka's readSnapshot does: an entry with a negative last_offset has no batch, and is written
// back with last_sequence -1, last_offset -1, offset_delta 0; a negative
// current_txn_first_offset is no open transaction, written back as -1. The re-encoded bytes
// must equal the input with exactly those fields replaced (and the CRC recomputed), and must
// decode to the same entries.
//
// Each input is also tried with its CRC made to match, so that mutations of the entries reach
// the decoding past the CRC check.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeSnapshot(t, data)
		if len(data) >= snapshotHeaderSize {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[2:], crc32.Checksum(fixed[6:], castagnoliTable))
			checkDecodeSnapshot(t, fixed)
		}
	})
}

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

func checkDecodeSnapshot(t *testing.T, data []byte) {
	t.Helper()
	entries, err := DecodeSnapshot(data)

	valid := len(data) >= snapshotHeaderSize &&
		binary.BigEndian.Uint16(data) == SnapshotVersion &&
		binary.BigEndian.Uint32(data[2:]) == crc32.Checksum(data[6:], castagnoliTable)
	count := int64(0)
	if valid {
		count = int64(int32(binary.BigEndian.Uint32(data[6:])))
		valid = count >= 0 && count*snapshotEntrySize == int64(len(data)-snapshotHeaderSize)
	}
	if err != nil {
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("error %v does not wrap ErrCorruptSnapshot", err)
		}
		if entries != nil {
			t.Fatalf("entries %v with error %v", entries, err)
		}
		if valid {
			t.Fatalf("%d valid bytes refused: %v", len(data), err)
		}
		return
	}
	if !valid {
		t.Fatalf("invalid bytes %x decoded to %v", data, entries)
	}
	if int64(len(entries)) != count {
		t.Fatalf("%d entries, count %d", len(entries), count)
	}

	want := bytes.Clone(data)
	for i, e := range entries {
		if len(e.Batches) > 1 {
			t.Fatalf("entry %d: %d batches", i, len(e.Batches))
		}
		p := want[snapshotHeaderSize+i*snapshotEntrySize:]
		if int64(binary.BigEndian.Uint64(p[14:])) < 0 { // last_offset
			if len(e.Batches) != 0 {
				t.Fatalf("entry %d: a batch with a negative last_offset: %v", i, e)
			}
			binary.BigEndian.PutUint32(p[10:], 0xffffffff)         // last_sequence -1
			binary.BigEndian.PutUint64(p[14:], 0xffffffffffffffff) // last_offset -1
			binary.BigEndian.PutUint32(p[22:], 0)                  // offset_delta 0
		} else if len(e.Batches) != 1 {
			t.Fatalf("entry %d: no batch with last_offset %d", i, int64(binary.BigEndian.Uint64(p[14:])))
		}
		if int64(binary.BigEndian.Uint64(p[38:])) < 0 { // current_txn_first_offset
			binary.BigEndian.PutUint64(p[38:], 0xffffffffffffffff)
		}
	}
	binary.BigEndian.PutUint32(want[2:], crc32.Checksum(want[6:], castagnoliTable))

	out := EncodeSnapshot(entries)
	if !bytes.Equal(out, want) {
		t.Fatalf("re-encoded\n%x\nwant\n%x\nfrom\n%x", out, want, data)
	}
	again, err := DecodeSnapshot(out)
	if err != nil {
		t.Fatalf("re-encoded bytes refused: %v", err)
	}
	if len(again) != len(entries) {
		t.Fatalf("%d entries decoded again, %d first", len(again), len(entries))
	}
	for i := range entries {
		a, b := entries[i], again[i]
		if a.ProducerID != b.ProducerID || a.Epoch != b.Epoch || a.CoordinatorEpoch != b.CoordinatorEpoch ||
			a.LastTimestamp != b.LastTimestamp || a.CurrentTxnFirstOffset != b.CurrentTxnFirstOffset ||
			len(a.Batches) != len(b.Batches) || (len(a.Batches) == 1 && a.Batches[0] != b.Batches[0]) {
			t.Fatalf("entry %d decoded again as %v, first %v", i, b, a)
		}
	}
}
