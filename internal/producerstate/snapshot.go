package producerstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
)

// SnapshotSuffix is the suffix of a producer snapshot file, named by the 20-digit offset it was
// taken at (Kafka's LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX).
const SnapshotSuffix = ".snapshot"

// SnapshotVersion is the snapshot format version written and read (Kafka's
// PRODUCER_SNAPSHOT_VERSION).
const SnapshotVersion = 1

// ErrCorruptSnapshot is returned for a snapshot file that is not a whole, version 1 snapshot
// with a matching CRC (Kafka's CorruptSnapshotException).
var ErrCorruptSnapshot = errors.New("commitlog: corrupt producer snapshot")

const (
	snapshotHeaderSize = 2 + 4 + 4 // version, crc, entry count
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotName returns the file name of the snapshot taken at offset.
func SnapshotName(offset int64) string { return fmt.Sprintf("%020d%s", offset, SnapshotSuffix) }

// ParseSnapshotName returns the offset a snapshot file name holds, and whether name is one.
func ParseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		// Digits only: ParseInt would take a sign ("+0000000000000000042", "-0000000000000000000").
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return off, true
}

// EncodeSnapshot returns entries in Kafka's snapshot layout (see the package doc), in the order
// given. Each entry's last batch gives last_sequence, last_offset and offset_delta; an entry
// with no batch writes -1, -1 and 0, as Kafka writes one.
func EncodeSnapshot(entries []Entry) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(entries)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b[0:], SnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for i := range entries {
		e := &entries[i]
		lastSeq, lastOffset, delta := NoSequence, NoOffset, int32(0)
		if n := len(e.Batches); n > 0 {
			bm := e.Batches[n-1]
			lastSeq, lastOffset, delta = bm.LastSeq, bm.LastOffset, int32(bm.LastOffset-bm.FirstOffset)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(delta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// DecodeSnapshot reads a snapshot file's bytes. Anything but a whole version 1 snapshot whose
// CRC matches and whose entry count fits the bytes returns an error wrapping ErrCorruptSnapshot;
// nothing is allocated beyond what the bytes hold. As in Kafka's readSnapshot, an entry has a
// batch when its last_offset is not negative (a batch written without sequence numbers has
// last_sequence -1 and FirstSeq NoSequence), and a negative current_txn_first_offset is no open
// transaction (NoOffset).
func DecodeSnapshot(b []byte) ([]Entry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorruptSnapshot, len(b), snapshotHeaderSize)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorruptSnapshot, v, SnapshotVersion)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: CRC %08x, computed %08x", ErrCorruptSnapshot, want, got)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[6:])))
	body := b[snapshotHeaderSize:]
	if n < 0 || n*snapshotEntrySize != int64(len(body)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes (%d each)", ErrCorruptSnapshot, n, len(body), snapshotEntrySize)
	}
	out := make([]Entry, n)
	for i := range out {
		p := body[i*snapshotEntrySize:]
		e := Entry{
			ProducerID:            int64(binary.BigEndian.Uint64(p[0:])),
			Epoch:                 int16(binary.BigEndian.Uint16(p[8:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(p[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(p[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(p[38:])),
		}
		if e.CurrentTxnFirstOffset < 0 {
			e.CurrentTxnFirstOffset = NoOffset
		}
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		if lastOffset >= 0 {
			firstSeq := NoSequence
			if lastSeq >= 0 {
				firstSeq = decrementSequence(lastSeq, delta)
			}
			e.Batches = []BatchMetadata{{FirstSeq: firstSeq, LastSeq: lastSeq, FirstOffset: lastOffset - int64(delta),
				LastOffset: lastOffset, Timestamp: e.LastTimestamp}}
		}
		out[i] = e
	}
	return out, nil
}

// decrementSequence returns the sequence dec before seq, wrapping below 0 to math.MaxInt32
// (Kafka's DefaultRecordBatch.decrementSequence).
func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}
