package commitlog

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// producerBatch is a batch as an idempotent producer sends it: its own base offset (which the
// leader replaces), leader epoch, producer id, epoch and sequence, and the given codec.
func producerBatch(t *testing.T, base int64, codec recordbatch.Codec, recs []*Record) []byte {
	t.Helper()
	return encodeBatchWith(t, recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 7,
		Attributes: recordbatch.Attributes(0).WithCodec(codec), ProducerID: 4242, ProducerEpoch: 3,
		BaseSequence: 100}, recs)
}

// resign recomputes the CRC of the batch at the start of b after a test changed a covered field.
func resign(b []byte) {
	binary.BigEndian.PutUint32(b[17:], recordbatch.ComputeCRC(b[:binary.BigEndian.Uint32(b[8:])+12]))
}

func TestAppendAsLeader(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		want := appendBatches(t, l, 1, 10)

		b1 := producerBatch(t, 777, recordbatch.CodecNone, workloadRecords(10, 5))
		b2 := producerBatch(t, 3, recordbatch.CodecGzip, workloadRecords(15, 3))
		in := slices.Concat(b1, b2)
		orig := slices.Clone(in)
		first, last, err := l.AppendAsLeader(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, int64(10), first)
		require.Equal(t, int64(17), last)
		require.Equal(t, int64(18), l.LogEndOffset())

		stored, err := l.ReadBatches(nil, 10, 1<<20)
		require.NoError(t, err)
		require.Len(t, stored, len(orig))
		// Only the base offsets (bytes 0-7) and the leader epoch (bytes 12-15, the log's epoch
		// 0 over the producer's 7) changed, neither covered by the CRC.
		for _, b := range []struct {
			pos, size int
			base      int64
		}{{0, len(b1), 10}, {len(b1), len(b2), 15}} {
			got, src := stored[b.pos:b.pos+b.size], orig[b.pos:b.pos+b.size]
			require.Equal(t, uint64(b.base), binary.BigEndian.Uint64(got[:8]))
			requireSameBytes(t, src[8:12], got[8:12])
			require.Equal(t, uint32(0), binary.BigEndian.Uint32(got[12:16]))
			requireSameBytes(t, src[16:], got[16:])
			h, err := recordbatch.Check(got, 0)
			require.NoError(t, err)
			require.Equal(t, int64(4242), h.ProducerID)
			require.Equal(t, int32(0), h.PartitionLeaderEpoch)
		}
		want = append(want, withOffsets(workloadRecords(10, 8), 10)...)
		requireSameRecords(t, want, readAllRecords(t, l))

		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, baseConfig())
		again, err := l.ReadBatches(nil, 10, 1<<20)
		require.NoError(t, err)
		requireSameBytes(t, stored, again)
		recs := workloadRecords(18, 1)
		require.NoError(t, l.Append(context.Background(), recs...))
		require.Equal(t, int64(18), recs[0].Offset)
	})
}

func TestAppendAsFollower(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		appendBatches(t, l, 1, 10)

		// At the log end offset, then after a gap (compaction leaves gaps): stored byte for byte.
		b1 := producerBatch(t, 10, recordbatch.CodecNone, workloadRecords(10, 5))
		b2 := producerBatch(t, 20, recordbatch.CodecSnappy, workloadRecords(20, 2))
		in := slices.Concat(b1, b2)
		last, err := l.AppendAsFollower(context.Background(), slices.Clone(in))
		require.NoError(t, err)
		require.Equal(t, int64(21), last)
		require.Equal(t, int64(22), l.LogEndOffset())
		stored, err := l.ReadBatches(nil, 10, 1<<20)
		require.NoError(t, err)
		requireSameBytes(t, in, stored)
		// An offset in the gap reads the batch after it.
		got, err := l.ReadBatches(nil, 17, 1<<20)
		require.NoError(t, err)
		requireSameBytes(t, b2, got)

		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, baseConfig())
		require.Equal(t, int64(22), l.LogEndOffset())
		stored, err = l.ReadBatches(nil, 10, 1<<20)
		require.NoError(t, err)
		requireSameBytes(t, in, stored)
	})
}

func TestRawAppendRejected(t *testing.T) {
	good := func(t *testing.T) []byte { return producerBatch(t, 0, recordbatch.CodecNone, workloadRecords(10, 5)) }
	tests := []struct {
		name     string
		follower bool
		maxBytes int // MaxMessageBytes, 0 for the default
		batches  func(t *testing.T) []byte
		err      error
	}{
		{"a flipped value byte", false, 0, func(t *testing.T) []byte {
			b := good(t)
			b[len(b)-20] ^= 0x10 // inside the last record's value
			return b
		}, ErrCorrupt},
		{"a flipped value byte, follower", true, 0, func(t *testing.T) []byte {
			b := producerBatch(t, 10, recordbatch.CodecNone, workloadRecords(10, 5))
			b[len(b)-20] ^= 0x10
			return b
		}, ErrCorrupt},
		{"a flipped byte in a compressed batch", false, 0, func(t *testing.T) []byte {
			b := producerBatch(t, 0, recordbatch.CodecLZ4, workloadRecords(10, 5))
			b[70] ^= 0x01
			return b
		}, ErrCorrupt},
		{"record count above the records, CRC valid", false, 0, func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint32(b[23:], 5) // last offset delta
			binary.BigEndian.PutUint32(b[57:], 6) // record count
			resign(b)
			return b
		}, ErrCorrupt},
		{"record count below the records, CRC valid", false, 0, func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint32(b[23:], 3)
			binary.BigEndian.PutUint32(b[57:], 4)
			resign(b)
			return b
		}, ErrCorrupt},
		{"record count below the records, follower", true, 0, func(t *testing.T) []byte {
			b := producerBatch(t, 10, recordbatch.CodecNone, workloadRecords(10, 5))
			binary.BigEndian.PutUint32(b[57:], 4)
			resign(b)
			return b
		}, ErrCorrupt},
		{"a good batch then a corrupt one", false, 0, func(t *testing.T) []byte {
			bad := good(t)
			bad[len(bad)-1] ^= 1
			return slices.Concat(good(t), bad)
		}, ErrCorrupt},
		{"a good batch then a torn one", false, 0, func(t *testing.T) []byte {
			return slices.Concat(good(t), good(t)[:100])
		}, ErrCorrupt},
		{"bytes shorter than a header", false, 0, func(t *testing.T) []byte { return good(t)[:60] }, ErrCorrupt},
		{"no bytes", false, 0, func(t *testing.T) []byte { return nil }, ErrCorrupt},
		{"a batch larger than max.message.bytes", false, 700, good, ErrRecordTooLarge},
		{"a batch larger than max.message.bytes, follower", true, 700, func(t *testing.T) []byte {
			return producerBatch(t, 10, recordbatch.CodecNone, workloadRecords(10, 5))
		}, ErrRecordTooLarge},
		{"follower: base offset at the last offset", true, 0, func(t *testing.T) []byte {
			return producerBatch(t, 9, recordbatch.CodecNone, workloadRecords(9, 2))
		}, ErrOffsetOutOfOrder},
		{"follower: base offset 0", true, 0, func(t *testing.T) []byte {
			return producerBatch(t, 0, recordbatch.CodecNone, workloadRecords(0, 1))
		}, ErrOffsetOutOfOrder},
		{"follower: second batch not above the first", true, 0, func(t *testing.T) []byte {
			return slices.Concat(producerBatch(t, 10, recordbatch.CodecNone, workloadRecords(10, 5)),
				producerBatch(t, 14, recordbatch.CodecNone, workloadRecords(14, 1)))
		}, ErrOffsetOutOfOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				if tt.maxBytes > 0 {
					cfg.MaxMessageBytes = tt.maxBytes
				}
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				want := appendBatches(t, l, 2, 5)
				size := fsFileSize(t, fsy, segPath(dir, 0, logSuffix))
				require.Equal(t, size, l.Size())

				var err error
				if tt.follower {
					_, err = l.AppendAsFollower(context.Background(), tt.batches(t))
				} else {
					_, _, err = l.AppendAsLeader(context.Background(), tt.batches(t))
				}
				require.ErrorIs(t, err, tt.err)
				require.Equal(t, int64(10), l.LogEndOffset())
				require.Equal(t, size, l.Size())
				require.Equal(t, size, fsFileSize(t, fsy, segPath(dir, 0, logSuffix)))
				require.Equal(t, []int64{0}, segmentBases(l))

				// The log takes the next good append at the same offset.
				first, last, err := l.AppendAsLeader(context.Background(), producerBatch(t, 0, recordbatch.CodecNone, workloadRecords(10, 1)))
				require.NoError(t, err)
				require.Equal(t, int64(10), first)
				require.Equal(t, int64(10), last)
				want = append(want, withOffsets(workloadRecords(10, 1), 10)...)
				requireSameRecords(t, want, readAllRecords(t, l))
			})
		})
	}
}

func TestLogAppendTime(t *testing.T) {
	now := testEpoch.Add(time.Hour)
	clock := WithClock(func() time.Time { return now })
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.TimestampType = LogAppendTime
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg, clock)

		// Records appended by the log: every timestamp is the append time.
		recs := workloadRecords(0, 5)
		require.NoError(t, l.Append(context.Background(), recs...))
		for _, r := range recs {
			require.Equal(t, now, r.Timestamp)
		}

		// A producer's batch: the type bit set, MaxTimestamp replaced, the CRC recomputed;
		// nothing else changes.
		in := producerBatch(t, 0, recordbatch.CodecNone, workloadRecords(5, 4))
		orig := slices.Clone(in)
		first, last, err := l.AppendAsLeader(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, int64(5), first)
		require.Equal(t, int64(8), last)

		all, err := l.ReadBatches(nil, 0, 1<<20)
		require.NoError(t, err)
		hs := batchHeaders(t, all) // verifies both CRCs
		require.Len(t, hs, 2)
		for _, h := range hs {
			require.True(t, h.Attributes.LogAppendTime(), "batch at %d", h.BaseOffset)
			require.Equal(t, now.UnixMilli(), h.MaxTimestamp, "batch at %d", h.BaseOffset)
		}
		requireKmsgBatch(t, all[:hs[1].pos], CompressionNone, withOffsets(recs, 0), true)
		got := all[hs[1].pos:]
		require.Len(t, got, len(orig))
		require.Equal(t, uint64(5), binary.BigEndian.Uint64(got[0:8]))
		requireSameBytes(t, orig[8:12], got[8:12])
		require.Equal(t, uint32(0), binary.BigEndian.Uint32(got[12:16]), "the log's leader epoch")
		requireSameBytes(t, orig[16:17], got[16:17])
		require.Equal(t, binary.BigEndian.Uint16(orig[21:])|uint16(recordbatch.AttrLogAppendTime), binary.BigEndian.Uint16(got[21:]))
		requireSameBytes(t, orig[23:35], got[23:35]) // last offset delta, base timestamp
		require.Equal(t, uint64(now.UnixMilli()), binary.BigEndian.Uint64(got[35:]))
		requireSameBytes(t, orig[43:], got[43:])

		for _, r := range readAllRecords(t, l) {
			require.Equal(t, now.UnixMilli(), r.Timestamp.UnixMilli(), "offset %d", r.Offset)
		}
		off, err := l.OffsetForTime(now)
		require.NoError(t, err)
		require.Equal(t, int64(0), off)
		off, err = l.OffsetForTime(time.UnixMilli(now.UnixMilli() + 1))
		require.NoError(t, err)
		require.Equal(t, int64(9), off)
	})
}

func TestAppendManyBatchesIntoSmallIndex(t *testing.T) {
	// One call carrying more batches than the active segment's indexes have entries left: the
	// call succeeds and the log keeps working.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentIndexBytes = 48 // 6 offset index entries, 4 time index entries
		cfg.IndexIntervalBytes = 1
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		var in []byte
		var want []*Record
		for i := range 12 {
			recs := workloadRecords(i, 1)
			in = append(in, producerBatch(t, 0, recordbatch.CodecNone, recs)...)
			want = append(want, withOffsets(recs, int64(i))...)
		}
		first, last, err := l.AppendAsLeader(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, int64(0), first)
		require.Equal(t, int64(11), last)
		requireIndexesWithin(t, l)
		more := workloadRecords(12, 1)
		require.NoError(t, l.Append(context.Background(), more...))
		require.Equal(t, int64(12), more[0].Offset)
		want = append(want, withOffsets(more, 12)...)
		requireSameRecords(t, want, readAllRecords(t, l))
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		requireSameRecords(t, want, readAllRecords(t, l))
		requireIndexesWithin(t, l)
	})
}
