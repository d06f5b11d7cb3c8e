// Package recordbatch encodes and decodes Kafka's RecordBatch v2 (magic 2), the unit that Kafka
// producers send, brokers store in .log segment files, and consumers fetch.
//
// The layout is Kafka's (see org.apache.kafka.common.record.DefaultRecordBatch), all integers
// big-endian:
//
//	offset  size  field
//	     0     8  BaseOffset
//	     8     4  BatchLength (bytes after this field)
//	    12     4  PartitionLeaderEpoch
//	    16     1  Magic (2)
//	    17     4  CRC (CRC-32C of bytes 21..end)
//	    21     2  Attributes
//	    23     4  LastOffsetDelta
//	    27     8  BaseTimestamp (ms)
//	    35     8  MaxTimestamp (ms)
//	    43     8  ProducerId
//	    51     2  ProducerEpoch
//	    53     4  BaseSequence
//	    57     4  RecordCount
//	    61     …  Records
//
// Nothing in this package trusts its input: every length is checked against the bytes present
// before anything is allocated, decompression stops at a bound, and no byte sequence makes it
// panic.
//
// Writing: a Builder encodes one batch at a time without allocating per record (Reset, Add,
// Finish); Encode writes a batch from decoded records with the header's fields as given, for
// byte-exact re-encoding. Reading: Decode (or a reused Decoder) checks a whole batch, CRC and
// every record included, and returns a Batch whose records are read without copying; Validate
// adds the checks a broker applies to a producer's batch. ParseHeader, Check and the Set
// functions work on batch bytes in place, as a log does when it assigns offsets or recovers.
package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Field positions inside a batch header.
const (
	posBaseOffset      = 0
	posBatchLength     = 8
	posLeaderEpoch     = 12
	posMagic           = 16
	posCRC             = 17
	posAttributes      = 21
	posLastOffsetDelta = 23
	posBaseTimestamp   = 27
	posMaxTimestamp    = 35
	posProducerID      = 43
	posProducerEpoch   = 51
	posBaseSequence    = 53
	posRecordCount     = 57
)

const (
	// HeaderSize is the size in bytes of a RecordBatch v2 header, records excluded.
	HeaderSize = 61
	// LogOverhead is the size of the BaseOffset and BatchLength fields, which BatchLength does
	// not count: a batch occupies LogOverhead+BatchLength bytes.
	LogOverhead = 12
	// Magic is the only batch format version this package reads and writes.
	Magic = 2
	// minBatchLength is the BatchLength of a batch with no records.
	minBatchLength = HeaderSize - LogOverhead
)

// ErrCorrupt is returned for bytes that are not a well-formed RecordBatch v2: a length out of
// range, a magic other than 2, a CRC mismatch, records that disagree with the header.
var ErrCorrupt = errors.New("recordbatch: corrupt batch")

// ErrShort is returned when fewer bytes are present than a header or a batch's length needs;
// at the tail of a log this is a torn write, not corruption.
var ErrShort = errors.New("recordbatch: short batch")

// ErrTooLarge is returned when a batch or its decompressed records exceed the allowed size.
var ErrTooLarge = errors.New("recordbatch: batch too large")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Codec is the compression codec, bits 0-2 of the attributes.
type Codec int8

// Kafka's compression codec ids.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns Kafka's compression.type name: none, gzip, snappy, lz4 or zstd.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Attributes is the batch's 16-bit attribute field.
type Attributes int16

// Attribute bits (Kafka's DefaultRecordBatch).
const (
	codecMask            Attributes = 0x07
	timestampTypeBit     Attributes = 0x08
	transactionalBit     Attributes = 0x10
	controlBit           Attributes = 0x20
	deleteHorizonBit     Attributes = 0x40
	AttrLogAppendTime               = timestampTypeBit
	AttrTransactional               = transactionalBit
	AttrControl                     = controlBit
	AttrDeleteHorizonSet            = deleteHorizonBit
)

// Codec returns the compression codec (bits 0-2).
func (a Attributes) Codec() Codec { return Codec(a & codecMask) }

// LogAppendTime reports whether the timestamp type bit is set: the broker's append time, held in
// MaxTimestamp, is every record's timestamp.
func (a Attributes) LogAppendTime() bool { return a&timestampTypeBit != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (a Attributes) Transactional() bool { return a&transactionalBit != 0 }

// Control reports whether the batch holds control records (transaction markers), which
// consumers never see.
func (a Attributes) Control() bool { return a&controlBit != 0 }

// WithCodec returns a with its codec bits replaced by c.
func (a Attributes) WithCodec(c Codec) Attributes { return a&^codecMask | Attributes(c)&codecMask }

// Header is a decoded batch header. Field names are Kafka's.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	BaseTimestamp        int64 // milliseconds since the Unix epoch
	MaxTimestamp         int64 // milliseconds since the Unix epoch
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the number of bytes the batch occupies: LogOverhead + BatchLength.
func (h *Header) Size() int { return LogOverhead + int(h.BatchLength) }

// LastOffset is the offset of the batch's last record: BaseOffset + LastOffsetDelta.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch: LastOffset + 1.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// ParseHeader decodes the header at the start of b without checking the CRC.
//
// It returns ErrShort when b holds fewer than HeaderSize bytes, and ErrCorrupt when the magic is
// not 2, BatchLength is smaller than an empty batch, LastOffsetDelta or RecordCount is negative,
// RecordCount exceeds LastOffsetDelta+1, or BaseOffset is negative or BaseOffset+LastOffsetDelta
// overflows. BatchLength larger than maxBatchSize-LogOverhead (maxBatchSize <= 0 means no limit
// beyond int32) is an error matching both ErrTooLarge and ErrCorrupt. It never looks past the
// header, so b may be a prefix read from a file.
func ParseHeader(b []byte, maxBatchSize int) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, ErrShort
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[posBaseOffset:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[posBatchLength:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[posLeaderEpoch:]))
	h.Magic = int8(b[posMagic])
	h.CRC = binary.BigEndian.Uint32(b[posCRC:])
	h.Attributes = Attributes(binary.BigEndian.Uint16(b[posAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[posLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[posBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[posMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[posProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[posProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[posBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[posRecordCount:]))

	switch {
	case h.Magic != Magic:
		return h, fmt.Errorf("%w: magic %d, want %d", ErrCorrupt, h.Magic, Magic)
	case h.BatchLength < minBatchLength:
		return h, fmt.Errorf("%w: batch length %d below the header's %d", ErrCorrupt, h.BatchLength, minBatchLength)
	case maxBatchSize > 0 && int64(h.BatchLength) > int64(maxBatchSize)-LogOverhead:
		// Too large for the caller, and, to a log reader, as damaged as any bad length: Kafka's
		// log reader throws CorruptRecordException for it. Matches both sentinels.
		return h, fmt.Errorf("%w (%w): batch length %d above the limit %d", ErrTooLarge, ErrCorrupt, h.BatchLength, maxBatchSize-LogOverhead)
	case h.LastOffsetDelta < 0:
		return h, fmt.Errorf("%w: last offset delta %d", ErrCorrupt, h.LastOffsetDelta)
	case h.RecordCount < 0:
		return h, fmt.Errorf("%w: record count %d", ErrCorrupt, h.RecordCount)
	case int64(h.RecordCount) > int64(h.LastOffsetDelta)+1:
		// Records have distinct offsets within the batch's range; compaction can only leave
		// fewer records than the range holds, never more.
		return h, fmt.Errorf("%w: record count %d above the %d offsets of last offset delta %d", ErrCorrupt, h.RecordCount, int64(h.LastOffsetDelta)+1, h.LastOffsetDelta)
	case h.BaseOffset < 0 || h.BaseOffset > h.BaseOffset+int64(h.LastOffsetDelta):
		return h, fmt.Errorf("%w: base offset %d", ErrCorrupt, h.BaseOffset)
	}
	return h, nil
}

// ComputeCRC returns the CRC-32C (Castagnoli) of b[21:], the range Kafka's batch CRC covers.
// b must hold at least HeaderSize bytes.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[posAttributes:], castagnoli) }

// Check parses the header of the batch that starts b and verifies its CRC. b must hold the whole
// batch: ErrShort when it holds less; the batch's size is h.Size(), and bytes after it are ignored.
// maxBatchSize is as for ParseHeader.
func Check(b []byte, maxBatchSize int) (Header, error) {
	h, err := ParseHeader(b, maxBatchSize)
	if err != nil {
		return h, err
	}
	if len(b) < h.Size() {
		return h, ErrShort
	}
	if got := ComputeCRC(b[:h.Size()]); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return h, nil
}

// SetBaseOffset overwrites the BaseOffset of the batch starting b. The CRC does not cover it, so
// the batch stays valid: this is how a log assigns offsets to a producer's batch.
func SetBaseOffset(b []byte, baseOffset int64) {
	binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(baseOffset))
}

// PartitionLeaderEpochOf returns the PartitionLeaderEpoch of the batch starting b, which must
// hold at least HeaderSize bytes.
func PartitionLeaderEpochOf(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[posLeaderEpoch:]))
}

// RecordCountOf returns the RecordCount of the batch starting b, whose header the caller has
// checked (len(b) >= HeaderSize).
func RecordCountOf(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[posRecordCount:]))
}

// SizeOf returns the bytes the batch starting b occupies, LogOverhead + BatchLength, unchecked
// (len(b) >= HeaderSize): a walk over batches already checked (the log's own, as a read returns
// them) takes it instead of parsing each header. Negative for a negative BatchLength.
func SizeOf(b []byte) int64 {
	return LogOverhead + int64(int32(binary.BigEndian.Uint32(b[posBatchLength:])))
}

// SetPartitionLeaderEpoch overwrites the PartitionLeaderEpoch of the batch starting b; the CRC
// does not cover it.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[posLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime sets the timestamp-type bit and MaxTimestamp of the batch starting b to ts
// (ms) and recomputes the CRC, as a broker does for topics with message.timestamp.type
// LogAppendTime. b must hold the whole batch.
func SetLogAppendTime(b []byte, ts int64) {
	a := binary.BigEndian.Uint16(b[posAttributes:]) | uint16(timestampTypeBit)
	binary.BigEndian.PutUint16(b[posAttributes:], a)
	binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[posCRC:], ComputeCRC(b))
}

// PutHeader writes h into b[:HeaderSize] as is, CRC included; callers that change covered fields
// recompute the CRC with ComputeCRC afterwards.
func PutHeader(b []byte, h *Header) {
	_ = b[HeaderSize-1]
	binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[posBatchLength:], uint32(h.BatchLength))
	binary.BigEndian.PutUint32(b[posLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[posMagic] = byte(h.Magic)
	binary.BigEndian.PutUint32(b[posCRC:], h.CRC)
	binary.BigEndian.PutUint16(b[posAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[posLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[posBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[posProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[posProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[posBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[posRecordCount:], uint32(h.RecordCount))
}
