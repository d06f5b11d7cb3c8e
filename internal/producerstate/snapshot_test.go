package producerstate

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// twoEntries and twoEntriesBytes are a snapshot of two producers and its bytes, written out by
// hand from Kafka's layout; the CRC (bytes 2..5) is filled in by withCRC.
var twoEntries = []Entry{
	{ProducerID: 1000, Epoch: 3, CoordinatorEpoch: 7, LastTimestamp: 1_700_000_000_000, CurrentTxnFirstOffset: NoOffset,
		Batches: []BatchMetadata{
			{FirstSeq: 5, LastSeq: 9, FirstOffset: 90, LastOffset: 94, Timestamp: 1_699_999_999_000},
			{FirstSeq: 10, LastSeq: 14, FirstOffset: 100, LastOffset: 104, Timestamp: 1_700_000_000_000},
		}},
	{ProducerID: 2, Epoch: 0, CoordinatorEpoch: -1, LastTimestamp: 5, CurrentTxnFirstOffset: 42},
}

var twoEntriesBytes = []byte{
	0x00, 0x01, // version 1
	0x00, 0x00, 0x00, 0x00, // CRC, filled in
	0x00, 0x00, 0x00, 0x02, // 2 entries
	// producer 1000
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, // producer_id 1000
	0x00, 0x03, // epoch 3
	0x00, 0x00, 0x00, 0x0e, // last_sequence 14
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x68, // last_offset 104
	0x00, 0x00, 0x00, 0x04, // offset_delta 4
	0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // timestamp 1700000000000
	0x00, 0x00, 0x00, 0x07, // coordinator_epoch 7
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // current_txn_first_offset -1
	// producer 2, no batch
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, // producer_id 2
	0x00, 0x00, // epoch 0
	0xff, 0xff, 0xff, 0xff, // last_sequence -1
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // last_offset -1
	0x00, 0x00, 0x00, 0x00, // offset_delta 0
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, // timestamp 5
	0xff, 0xff, 0xff, 0xff, // coordinator_epoch -1
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // current_txn_first_offset 42
}

// withCRC returns a copy of b with the CRC-32C (Castagnoli) of bytes 6..end at bytes 2..5.
func withCRC(b []byte) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// snapshotBytes returns a snapshot of version v, the given count, and body, with a valid CRC.
func snapshotBytes(v int16, count int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(v))
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(count))
	return withCRC(append(b, body...))
}

// entryBytes returns one 46-byte snapshot entry.
func entryBytes(pid int64, epoch int16, lastSeq int32, lastOffset int64, delta int32, ts int64, coord int32, txnFirst int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(pid))
	b = binary.BigEndian.AppendUint16(b, uint16(epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
	b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(delta))
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = binary.BigEndian.AppendUint32(b, uint32(coord))
	return binary.BigEndian.AppendUint64(b, uint64(txnFirst))
}

func TestEncodeSnapshotBytes(t *testing.T) {
	want := withCRC(twoEntriesBytes)
	require.Len(t, want, 10+2*46)
	// The CRC as a literal: CRC-32C, not the IEEE CRC-32 (which would be 0x82236d44 here).
	require.Equal(t, []byte{0x49, 0x98, 0x72, 0x0f}, want[2:6])
	require.Equal(t, want, EncodeSnapshot(twoEntries))

	// An empty snapshot: the CRC-32C of four zero bytes.
	require.Equal(t, []byte{0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0x00, 0x00, 0x00, 0x00}, EncodeSnapshot(nil))
	require.Equal(t, uint32(0xe3069283), crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)))
}

func TestSnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Entry
		want Entry // what DecodeSnapshot gives back
	}{
		{
			"last of several batches",
			twoEntries[0],
			Entry{ProducerID: 1000, Epoch: 3, CoordinatorEpoch: 7, LastTimestamp: 1_700_000_000_000, CurrentTxnFirstOffset: NoOffset,
				Batches: []BatchMetadata{{FirstSeq: 10, LastSeq: 14, FirstOffset: 100, LastOffset: 104, Timestamp: 1_700_000_000_000}}},
		},
		{
			"no batch, open transaction",
			twoEntries[1],
			twoEntries[1],
		},
		{
			"sequence wrapped past MaxInt32",
			Entry{ProducerID: 7, Epoch: 1, CoordinatorEpoch: 2, LastTimestamp: 9, CurrentTxnFirstOffset: 300,
				Batches: []BatchMetadata{{FirstSeq: math.MaxInt32 - 2, LastSeq: 2, FirstOffset: 300, LastOffset: 305, Timestamp: 8}}},
			Entry{ProducerID: 7, Epoch: 1, CoordinatorEpoch: 2, LastTimestamp: 9, CurrentTxnFirstOffset: 300,
				Batches: []BatchMetadata{{FirstSeq: math.MaxInt32 - 2, LastSeq: 2, FirstOffset: 300, LastOffset: 305, Timestamp: 9}}},
		},
		{
			"sequence ending at MaxInt32",
			Entry{ProducerID: 8, Epoch: 0, LastTimestamp: 1, CurrentTxnFirstOffset: NoOffset,
				Batches: []BatchMetadata{{FirstSeq: math.MaxInt32 - 1, LastSeq: math.MaxInt32, FirstOffset: 0, LastOffset: 1, Timestamp: 1}}},
			Entry{ProducerID: 8, Epoch: 0, LastTimestamp: 1, CurrentTxnFirstOffset: NoOffset,
				Batches: []BatchMetadata{{FirstSeq: math.MaxInt32 - 1, LastSeq: math.MaxInt32, FirstOffset: 0, LastOffset: 1, Timestamp: 1}}},
		},
		{
			"extreme values",
			Entry{ProducerID: math.MaxInt64, Epoch: math.MaxInt16, CoordinatorEpoch: math.MaxInt32, LastTimestamp: math.MinInt64, CurrentTxnFirstOffset: math.MaxInt64,
				Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: math.MaxInt64, LastOffset: math.MaxInt64}}},
			Entry{ProducerID: math.MaxInt64, Epoch: math.MaxInt16, CoordinatorEpoch: math.MaxInt32, LastTimestamp: math.MinInt64, CurrentTxnFirstOffset: math.MaxInt64,
				Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: math.MaxInt64, LastOffset: math.MaxInt64, Timestamp: math.MinInt64}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeSnapshot([]Entry{tt.in})
			require.Len(t, b, 10+46)
			got, err := DecodeSnapshot(b)
			require.NoError(t, err)
			require.Equal(t, []Entry{tt.want}, got)
			require.Equal(t, b, EncodeSnapshot(got))
		})
	}

	t.Run("no batch writes -1, -1, 0", func(t *testing.T) {
		b := EncodeSnapshot([]Entry{{ProducerID: 5, Epoch: 2, CoordinatorEpoch: 1, LastTimestamp: 3, CurrentTxnFirstOffset: NoOffset}})
		require.Equal(t, snapshotBytes(1, 1, entryBytes(5, 2, -1, -1, 0, 3, 1, -1)), b)
	})

	t.Run("all entries, in order", func(t *testing.T) {
		in := []Entry{tests[2].in, tests[0].in, tests[1].in}
		got, err := DecodeSnapshot(EncodeSnapshot(in))
		require.NoError(t, err)
		require.Equal(t, []Entry{tests[2].want, tests[0].want, tests[1].want}, got)
	})

	t.Run("from a manager", func(t *testing.T) {
		m := NewManager(0)
		update(m, data(1, 0, 0, 4, 0, 4, 10), data(1, 0, 5, 6, 5, 6, 11), txn(2, 3, 0, 0, 7, 7, 12))
		m.CompleteTxn(Marker{ProducerID: 3, Epoch: 1, CoordinatorEpoch: 4, Offset: 8, Timestamp: 13})
		got, err := DecodeSnapshot(EncodeSnapshot(m.Entries()))
		require.NoError(t, err)
		require.Equal(t, []Entry{
			{ProducerID: 1, Epoch: 0, CoordinatorEpoch: -1, LastTimestamp: 11, CurrentTxnFirstOffset: NoOffset,
				Batches: []BatchMetadata{{FirstSeq: 5, LastSeq: 6, FirstOffset: 5, LastOffset: 6, Timestamp: 11}}},
			{ProducerID: 2, Epoch: 3, CoordinatorEpoch: -1, LastTimestamp: 12, CurrentTxnFirstOffset: 7,
				Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 0, FirstOffset: 7, LastOffset: 7, Timestamp: 12}}},
			{ProducerID: 3, Epoch: 1, CoordinatorEpoch: 4, LastTimestamp: 13, CurrentTxnFirstOffset: NoOffset},
		}, got)
	})
}

// TestDecodeSnapshotKafkaEntries reads entries as Kafka's readSnapshot does: a batch when
// last_offset is not negative, an open transaction when current_txn_first_offset is not.
func TestDecodeSnapshotKafkaEntries(t *testing.T) {
	tests := []struct {
		name  string
		entry []byte
		want  Entry
		same  bool // re-encodes to the same bytes
	}{
		{"batch without sequence numbers", entryBytes(1, 0, -1, 41, 1, 7, -1, -1),
			Entry{ProducerID: 1, CoordinatorEpoch: -1, LastTimestamp: 7, CurrentTxnFirstOffset: NoOffset,
				Batches: []BatchMetadata{{FirstSeq: NoSequence, LastSeq: NoSequence, FirstOffset: 40, LastOffset: 41, Timestamp: 7}}}, true},
		{"sequence without offset: no batch", entryBytes(1, 0, 5, -1, 0, 7, -1, -1),
			Entry{ProducerID: 1, CoordinatorEpoch: -1, LastTimestamp: 7, CurrentTxnFirstOffset: NoOffset}, false},
		{"current_txn_first_offset -2: none", entryBytes(1, 0, -1, -1, 0, 7, -1, -2),
			Entry{ProducerID: 1, CoordinatorEpoch: -1, LastTimestamp: 7, CurrentTxnFirstOffset: NoOffset}, false},
		{"current_txn_first_offset 0: open", entryBytes(1, 0, -1, -1, 0, 7, -1, 0),
			Entry{ProducerID: 1, CoordinatorEpoch: -1, LastTimestamp: 7, CurrentTxnFirstOffset: 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := snapshotBytes(1, 1, tt.entry)
			got, err := DecodeSnapshot(b)
			require.NoError(t, err)
			require.Equal(t, []Entry{tt.want}, got)
			require.Equal(t, tt.same, string(b) == string(EncodeSnapshot(got)))
		})
	}
}

func TestDecodeSnapshotCorrupt(t *testing.T) {
	one := entryBytes(1, 0, 4, 4, 4, 0, -1, -1)
	valid := snapshotBytes(1, 1, one)
	badCRC := append([]byte(nil), valid...)
	badCRC[20] ^= 0x01
	badCRCField := append([]byte(nil), valid...)
	badCRCField[5] ^= 0x80

	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"1 byte", []byte{0}},
		{"9 bytes", valid[:9]},
		{"version 0", snapshotBytes(0, 1, one)},
		{"version 2", snapshotBytes(2, 1, one)},
		{"version -1", snapshotBytes(-1, 1, one)},
		{"CRC mismatch in an entry", badCRC},
		{"CRC mismatch in the CRC", badCRCField},
		{"torn entry", withCRC(valid[:len(valid)-1])},
		{"count larger than the bytes", snapshotBytes(1, 2, one)},
		{"count 1, no entry", snapshotBytes(1, 1, nil)},
		{"count smaller than the bytes", snapshotBytes(1, 0, one)},
		{"negative count", snapshotBytes(1, -1, one)},
		{"count MinInt32", snapshotBytes(1, math.MinInt32, nil)},
		{"trailing byte", snapshotBytes(1, 1, append(append([]byte(nil), one...), 0))},
		{"count 0x7fffffff", snapshotBytes(1, math.MaxInt32, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSnapshot(tt.b)
			require.ErrorIs(t, err, ErrCorruptSnapshot)
			require.Nil(t, got)
		})
	}

	t.Run("count 0x7fffffff allocates nothing for it", func(t *testing.T) {
		b := snapshotBytes(1, math.MaxInt32, nil)
		require.Len(t, b, 10)
		// The error's formatting allocates a little (and under the race detector fmt's pool
		// drops its buffers at random, so a count of allocations is not fixed); what matters is
		// that the 2^31-entry count reserves nothing, so the bound is on bytes.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeSnapshot(b)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrCorruptSnapshot)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
	})

	t.Run("the same bytes with a valid count decode", func(t *testing.T) {
		got, err := DecodeSnapshot(valid)
		require.NoError(t, err)
		require.Equal(t, []Entry{{ProducerID: 1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: NoOffset,
			Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 4, FirstOffset: 0, LastOffset: 4}}}}, got)
		got, err = DecodeSnapshot(snapshotBytes(1, 0, nil))
		require.NoError(t, err)
		require.Equal(t, []Entry{}, got)
	})
}

func TestSnapshotName(t *testing.T) {
	require.Equal(t, "00000000000000000042.snapshot", SnapshotName(42))
	require.Equal(t, "00000000000000000000.snapshot", SnapshotName(0))
	require.Equal(t, "09223372036854775807.snapshot", SnapshotName(math.MaxInt64))

	tests := []struct {
		name string
		off  int64
		ok   bool
	}{
		{"00000000000000000042.snapshot", 42, true},
		{"00000000000000000000.snapshot", 0, true},
		{"09223372036854775807.snapshot", math.MaxInt64, true},
		{"09223372036854775808.snapshot", 0, false}, // past MaxInt64
		{"99999999999999999999.snapshot", 0, false},
		{"0000000000000000042.snapshot", 0, false},   // 19 digits
		{"000000000000000000042.snapshot", 0, false}, // 21 digits
		{"42.snapshot", 0, false},
		{".snapshot", 0, false},
		{"00000000000000000042.log", 0, false},
		{"00000000000000000042.index", 0, false},
		{"00000000000000000042.snapshot.deleted", 0, false},
		{"00000000000000000042.snapshot.tmp", 0, false},
		{"00000000000000000042", 0, false},
		{"00000000000000000042.SNAPSHOT", 0, false},
		{"-0000000000000000042.snapshot", 0, false},
		{"-0000000000000000000.snapshot", 0, false},
		{"+0000000000000000042.snapshot", 0, false},
		{"0000000000000000004a.snapshot", 0, false},
		{" 0000000000000000042.snapshot", 0, false},
		{"0000000000_000000042.snapshot", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, ok := ParseSnapshotName(tt.name)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.off, off)
			if ok {
				require.Equal(t, tt.name, SnapshotName(off))
			}
		})
	}
}

func TestDecodeSnapshotErrorsWrap(t *testing.T) {
	_, err := DecodeSnapshot([]byte{0, 1})
	require.True(t, errors.Is(err, ErrCorruptSnapshot))
	require.Equal(t, "commitlog: corrupt producer snapshot: 2 bytes, shorter than the 10-byte header", err.Error())
}
