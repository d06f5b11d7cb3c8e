// Package txnindex is Kafka's aborted-transaction index: the ".txnindex" file beside each segment
// ("00000000000000000000.txnindex"), Kafka's
// org.apache.kafka.storage.internals.log.TransactionIndex, which lists the transactions aborted
// in the segment so that a fetch at read_committed can hand the consumer the aborted ranges to
// drop.
//
// # Byte layout
//
// The file is entries back to back, nothing before or between them; one entry (Kafka's
// org.apache.kafka.storage.internals.log.AbortedTxn) is 34 bytes, big-endian:
//
//	offset  size  field
//	     0     2  version           int16, always 0 (Version)
//	     2     8  producerId        int64
//	    10     8  firstOffset       int64, the transaction's first offset
//	    18     8  lastOffset        int64, the offset of its ABORT marker
//	    26     8  lastStableOffset  int64, the log's last stable offset when it was aborted
//
// Entries are in the order the markers were written: lastOffset strictly increases from one to
// the next. The file is created on the first Append (Kafka's TransactionIndex opens its file
// lazily): a segment with no aborted transaction has none, and a missing file is an empty index.
//
// The package imports only the standard library and the file-system seam, internal/fsys.
package txnindex

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EntrySize is the size of one entry of a .txnindex file, bytes (Kafka's AbortedTxn.TOTAL_SIZE):
// version int16, producerId int64, firstOffset int64, lastOffset int64, lastStableOffset int64.
const EntrySize = 34

// Version is the only entry version Kafka writes and reads (AbortedTxn.CURRENT_VERSION), the int16
// at the start of every 34-byte entry.
const Version = 0

// The field offsets within an entry (Kafka's AbortedTxn.*_OFFSET).
const (
	versionAt          = 0
	producerIDAt       = 2
	firstOffsetAt      = 10
	lastOffsetAt       = 18
	lastStableOffsetAt = 26
)

// ErrCorrupt is wrapped by every error about bytes that are not a valid .txnindex (Kafka's
// CorruptIndexException for a TransactionIndex): a length that is not a whole number of 34-byte
// entries, or an entry whose version int16 is not 0. The wrapping text names the file (where
// there is one) and the entry and byte position.
var ErrCorrupt = errors.New("txnindex: corrupt transaction index")

// ErrOutOfOrder is wrapped by the error of an Append whose entry's LastOffset is not above the
// last entry's, which Kafka's TransactionIndex.append refuses: "The last offset of appended
// transactions must increase sequentially".
var ErrOutOfOrder = errors.New("txnindex: the last offset of appended transactions must increase sequentially")

// AbortedTxn is one entry of a .txnindex file, Kafka's
// org.apache.kafka.storage.internals.log.AbortedTxn: a transaction of ProducerID that started at
// FirstOffset and was aborted by the ABORT marker at LastOffset, when the log's last stable offset
// was LastStableOffset. On disk it is 34 bytes, big-endian: version int16 (0), producerId int64,
// firstOffset int64, lastOffset int64, lastStableOffset int64 (see AppendTo).
type AbortedTxn struct {
	ProducerID       int64 // producerId: the producer whose transaction was aborted
	FirstOffset      int64 // firstOffset: the transaction's first offset in the log
	LastOffset       int64 // lastOffset: the offset of the ABORT control record
	LastStableOffset int64 // lastStableOffset: the last stable offset when the marker was written
}

// AppendTo appends a's 34-byte entry (EntrySize) to dst and returns the result, as Kafka's
// AbortedTxn buffer holds it: version int16 = 0 at byte 0, producerId int64 at 2, firstOffset
// int64 at 10, lastOffset int64 at 18, lastStableOffset int64 at 26, all big-endian.
func (a AbortedTxn) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, Version)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.LastStableOffset))
}

// String describes a as Kafka's AbortedTxn.toString does.
func (a AbortedTxn) String() string {
	return fmt.Sprintf("AbortedTxn(version=%d, producerId=%d, firstOffset=%d, lastOffset=%d, lastStableOffset=%d)",
		Version, a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
}

// Decode returns the entries of b, the bytes of a .txnindex file: 34-byte entries (EntrySize),
// each version int16, producerId int64, firstOffset int64, lastOffset int64, lastStableOffset
// int64, big-endian. It is strict: a length that is not a whole number of entries, or an entry
// whose version is not 0 (Version), is an error wrapping ErrCorrupt that names the entry and its
// byte position. It does not check the order of the entries (Index.Append keeps them in order).
// It never allocates more than len(b)/34 entries; an empty b gives no entries and no error.
func Decode(b []byte) ([]AbortedTxn, error) {
	if len(b)%EntrySize != 0 {
		return nil, lengthError(int64(len(b)))
	}
	if len(b) == 0 {
		return nil, nil
	}
	out := make([]AbortedTxn, 0, len(b)/EntrySize)
	for pos := 0; pos < len(b); pos += EntrySize {
		e := b[pos : pos+EntrySize]
		if v := int16(binary.BigEndian.Uint16(e[versionAt:])); v != Version {
			return nil, fmt.Errorf("%w: entry %d at byte %d: version %d, not %d", ErrCorrupt, pos/EntrySize, pos, v, Version)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[producerIDAt:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[firstOffsetAt:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[lastOffsetAt:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[lastStableOffsetAt:])),
		})
	}
	return out, nil
}

// lengthError is the ErrCorrupt of a file or buffer of size bytes, not a whole number of entries:
// it names the partial entry and where it starts.
func lengthError(size int64) error {
	n := size / EntrySize
	return fmt.Errorf("%w: %d bytes are not a whole number of %d-byte entries (entry %d at byte %d has %d bytes)",
		ErrCorrupt, size, EntrySize, n, n*EntrySize, size-n*EntrySize)
}
