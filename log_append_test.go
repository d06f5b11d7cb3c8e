package commitlog

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// producerBatch is a batch as an idempotent producer sends it: its own base offset (which the
// leader replaces), leader epoch, producer id, epoch and sequence, and the given codec.
func producerBatch(t *testing.T, base int64, codec recordbatch.Codec, recs []*Record) []byte {
	t.Helper()
	return producerBatchSeq(t, base, 100, codec, recs)
}

// producerBatchSeq is producerBatch with base sequence seq: a producer's batches that follow
// each other carry sequences that do.
func producerBatchSeq(t *testing.T, base int64, seq int32, codec recordbatch.Codec, recs []*Record) []byte {
	t.Helper()
	return encodeBatchWith(t, recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: 7,
		Attributes: recordbatch.Attributes(0).WithCodec(codec), ProducerID: 4242, ProducerEpoch: 3,
		BaseSequence: seq}, recs)
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
		b2 := producerBatchSeq(t, 3, 105, recordbatch.CodecGzip, workloadRecords(15, 3))
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
		b2 := producerBatchSeq(t, 20, 105, recordbatch.CodecSnappy, workloadRecords(20, 2))
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
		require.ErrorIs(t, err, ErrNoOffsetForTime)
		require.Equal(t, int64(-1), off)
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
			in = append(in, producerBatchSeq(t, 0, int32(i), recordbatch.CodecNone, recs)...)
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

// roundTripCalls are the appends of the round-trip test: one call per batch, covering null and
// empty keys, values and header values, repeated header names, zero timestamps (set to the append
// time) and timestamps going backwards.
func roundTripCalls() [][]*Record {
	calls := [][]*Record{
		workloadRecords(0, 10),
		{
			{Key: nil, Value: []byte("null key")},
			{Key: []byte{}, Value: []byte("empty key")},
			{Key: []byte("null value"), Value: nil},
			{Key: []byte("empty value"), Value: []byte{}},
			{Key: nil, Value: nil},
		},
		{
			{Key: []byte("repeated"), Value: []byte("v"), Headers: []Header{
				{Key: "h", Value: []byte("1")}, {Key: "other", Value: nil}, {Key: "h", Value: []byte("2")},
				{Key: "h", Value: []byte{}}, {Key: "", Value: []byte("nameless")},
			}, Timestamp: testEpoch.Add(-time.Hour)},
			{Key: []byte("older"), Value: []byte("v"), Timestamp: testEpoch.Add(-2 * time.Hour)},
			{Key: []byte("newer"), Value: []byte("v"), Timestamp: testEpoch.Add(time.Hour)},
		},
		workloadRecords(10, 1),
	}
	return calls
}

func TestAppendReadRoundTrip(t *testing.T) {
	for _, codec := range []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.Compression = codec
				l := openTestLog(t, fsy, t.TempDir(), cfg)
				require.Equal(t, int64(0), l.LogStartOffset())
				require.Equal(t, int64(0), l.LogEndOffset())

				var want []*Record
				var callFirst []int64
				for _, recs := range roundTripCalls() {
					zeroTS := make([]bool, len(recs))
					for i, r := range recs {
						zeroTS[i] = r.Timestamp.IsZero()
					}
					first := int64(len(want))
					require.NoError(t, l.Append(context.Background(), recs...))
					for i, r := range recs {
						require.Equal(t, first+int64(i), r.Offset, "Record.Offset set by Append")
						if zeroTS[i] {
							require.Equal(t, testEpoch, r.Timestamp, "a zero timestamp becomes the append time")
						}
					}
					callFirst = append(callFirst, first)
					want = append(want, withOffsets(recs, first)...)
				}
				require.Equal(t, int64(len(want)), l.LogEndOffset())

				got, err := l.ReadRecords(0, math.MaxInt32)
				require.NoError(t, err)
				requireSameRecords(t, want, got)
				requireSameRecords(t, want, readAllRecords(t, l))

				// From inside a batch: the batch is returned whole, its records before the
				// offset are skipped.
				got, err = l.ReadRecords(13, math.MaxInt32)
				require.NoError(t, err)
				requireSameRecords(t, want[13:], got)

				// Every batch decodes with franz-go's kmsg, an independent reader.
				all, err := l.ReadBatches(nil, 0, math.MaxInt32)
				require.NoError(t, err)
				hs := batchHeaders(t, all)
				require.Len(t, hs, len(callFirst))
				for i, h := range hs {
					end := int64(len(want))
					if i+1 < len(callFirst) {
						end = callFirst[i+1]
					}
					requireKmsgBatch(t, all[h.pos:h.pos+int64(h.Size())], codec, want[callFirst[i]:end], false)
				}

				// At the log end offset: nothing, and dst comes back as it was.
				dst := []byte("prefix")
				out, err := l.ReadBatches(dst, l.LogEndOffset(), 1<<20)
				require.NoError(t, err)
				require.Equal(t, []byte("prefix"), out)
				recs, err := l.ReadRecords(l.LogEndOffset(), 1<<20)
				require.NoError(t, err)
				require.Empty(t, recs)

				for _, off := range []int64{-1, math.MinInt64, l.LogEndOffset() + 1, math.MaxInt64} {
					out, err := l.ReadBatches(dst, off, 1<<20)
					require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
					require.Equal(t, []byte("prefix"), out)
					_, err = l.ReadRecords(off, 1<<20)
					require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
				}

				// Reopened, the same records.
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, l.Dir(), cfg)
				require.Equal(t, int64(len(want)), l.LogEndOffset())
				requireSameRecords(t, want, readAllRecords(t, l))
				again, err := l.ReadBatches(nil, 0, math.MaxInt32)
				require.NoError(t, err)
				requireSameBytes(t, all, again)
			})
		})
	}
}

// requireKmsgBatch decodes batch with kmsg and checks every header field against what was
// appended; for uncompressed batches, every record too.
func requireKmsgBatch(t *testing.T, batch []byte, codec Compression, recs []*Record, logAppendTime bool) {
	t.Helper()
	var kb kmsg.RecordBatch
	require.NoError(t, kb.ReadFrom(batch))
	firstTS, maxTS := recs[0].Timestamp.UnixMilli(), recs[0].Timestamp.UnixMilli()
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp.UnixMilli())
	}
	attrs := int16(codec)
	if logAppendTime {
		attrs |= int16(recordbatch.AttrLogAppendTime)
	}
	require.Equal(t, recs[0].Offset, kb.FirstOffset)
	require.Equal(t, int32(len(batch)-12), kb.Length)
	require.Equal(t, int32(0), kb.PartitionLeaderEpoch, "a log on its own leads epoch 0")
	require.Equal(t, int8(2), kb.Magic)
	require.Equal(t, crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)), uint32(kb.CRC))
	require.Equal(t, attrs, kb.Attributes)
	require.Equal(t, int32(len(recs)-1), kb.LastOffsetDelta)
	require.Equal(t, firstTS, kb.FirstTimestamp)
	require.Equal(t, maxTS, kb.MaxTimestamp)
	require.Equal(t, int64(-1), kb.ProducerID)
	require.Equal(t, int16(-1), kb.ProducerEpoch)
	require.Equal(t, int32(-1), kb.FirstSequence)
	require.Equal(t, int32(len(recs)), kb.NumRecords)
	if codec != CompressionNone {
		return
	}
	raw := kb.Records
	for i, r := range recs {
		length, n := binary.Varint(raw)
		require.Greater(t, n, 0, "record %d", i)
		one := raw[:n+int(length)]
		var kr kmsg.Record
		require.NoError(t, kr.ReadFrom(one), "record %d", i)
		require.Equal(t, int32(i), kr.OffsetDelta)
		require.Equal(t, r.Timestamp.UnixMilli()-firstTS, kr.TimestampDelta64)
		require.Equal(t, r.Key == nil, kr.Key == nil, "record %d null key", i)
		require.Equal(t, r.Key, kr.Key)
		require.Equal(t, r.Value == nil, kr.Value == nil, "record %d null value", i)
		require.Equal(t, r.Value, kr.Value)
		require.Len(t, kr.Headers, len(r.Headers))
		for j, h := range r.Headers {
			require.Equal(t, h.Key, kr.Headers[j].Key)
			require.Equal(t, h.Value == nil, kr.Headers[j].Value == nil, "record %d header %d null value", i, j)
			require.Equal(t, h.Value, kr.Headers[j].Value)
		}
		raw = raw[len(one):]
	}
	require.Empty(t, raw, "nothing after the last record")
}

func TestRollBySegmentBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		// The size of one batch of 10 workload records.
		probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, probe, 1, 10)
		b := probe.Size()
		require.NoError(t, probe.Close())

		tests := []struct {
			name         string
			segmentBytes int64
			bases        []int64
		}{
			// A batch goes to the active segment when the segment stays at most segment.bytes.
			{"three batches fit exactly", 3 * b, []int64{0, 30, 60, 90}},
			{"one byte less: two fit", 3*b - 1, []int64{0, 20, 40, 60, 80, 100}},
			{"one byte more: still three", 3*b + 1, []int64{0, 30, 60, 90}},
			{"smaller than a batch: one per segment", b - 1, []int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cfg := baseConfig()
				cfg.SegmentBytes = tt.segmentBytes
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				want := appendBatches(t, l, 11, 10)
				require.Equal(t, tt.bases, segmentBases(l))
				require.Equal(t, tt.bases, logFileBases(t, fsy, dir))
				for i, base := range tt.bases[:len(tt.bases)-1] {
					size := fsFileSize(t, fsy, segPath(dir, base, logSuffix))
					require.Equal(t, (tt.bases[i+1]-base)/10*b, size, "segment %d", base)
					require.LessOrEqual(t, size, max(tt.segmentBytes, b))
				}
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tt.bases, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))
				appendBatches(t, l, 1, 10)
				require.Equal(t, int64(120), l.LogEndOffset())
			})
		}
	})
}

func TestRollBySegmentDuration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentDuration = time.Second
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		appendAt := func(ms ...int64) {
			t.Helper()
			// One batch of one or more records; the batch's max timestamp is what counts.
			var recs []*Record
			for _, m := range ms {
				r := workloadRecord(int(l.LogEndOffset()) + len(recs))
				r.Timestamp = testEpoch.Add(time.Duration(m) * time.Millisecond)
				recs = append(recs, r)
			}
			require.NoError(t, l.Append(context.Background(), recs...))
		}
		appendAt(0)          // offset 0: the segment's roll time is 0
		appendAt(999)        // 1
		appendAt(1000)       // 2: exactly segment.ms later: no roll (Kafka rolls when the gap is larger)
		appendAt(1001)       // 3: rolls; the new segment's roll time is 1001
		appendAt(500)        // 4: time going backwards does not roll
		appendAt(-5000)      // 5
		appendAt(2001)       // 6: 1000 after 1001: no roll
		appendAt(100, 2002)  // 7-8: the batch's max timestamp is 2002: rolls
		appendAt(3002, 3003) // 9-10: 1001 after 2002: rolls
		require.Equal(t, []int64{0, 3, 7, 9}, segmentBases(l))

		// The roll time of the active segment is its first batch's max timestamp, recovered on
		// open.
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		appendAt(4003) // offset 11: 1000 after 3003, the active segment's first batch's max: no roll
		require.Equal(t, []int64{0, 3, 7, 9}, segmentBases(l))
		appendAt(4004) // offset 12: 1001 after 3003: rolls
		require.Equal(t, []int64{0, 3, 7, 9, 12}, segmentBases(l))
		require.Equal(t, int64(13), l.LogEndOffset())
		require.Len(t, readAllRecords(t, l), 13)
	})
}

func TestRollByFullIndex(t *testing.T) {
	// segment.index.bytes 48: an offset index of 6 entries, a time index of 4, whose last slot
	// Kafka keeps for the entry written at roll (it is full at 3). With index.interval.bytes 1
	// every batch but a segment's first adds an offset index entry, and a time index entry when
	// its timestamp is the largest so far.
	tests := []struct {
		name   string
		tsStep int64 // timestamp increase per batch
		bases  []int64
	}{
		// Time index full after batches 2-4: rolls before the 5th.
		{"rising timestamps fill the time index", 1, []int64{0, 4, 8, 12, 16}},
		// Equal timestamps: one time index entry; the offset index is full after batches 2-7.
		{"equal timestamps fill the offset index", 0, []int64{0, 7, 14}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.SegmentIndexBytes = 48
				cfg.IndexIntervalBytes = 1
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				var want []*Record
				for i := range 20 {
					r := workloadRecord(i)
					r.Timestamp = testEpoch.Add(time.Duration(int64(i)*tt.tsStep) * time.Millisecond)
					require.NoError(t, l.Append(context.Background(), r))
					want = append(want, withOffsets([]*Record{r}, int64(i))...)
				}
				require.Equal(t, tt.bases, segmentBases(l))
				requireIndexesWithin(t, l)
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tt.bases, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))
			})
		})
	}
}

func TestRollByRelativeOffsetOverflow(t *testing.T) {
	tests := []struct {
		name string
		base int64 // of the second batch
		roll bool
	}{
		{"2^32 past the segment's base", 1<<32 + 10, true},
		{"just past a signed 32-bit relative offset", 1 << 31, true},
		{"the largest relative offset", 1<<31 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, baseConfig())
				last, err := l.AppendAsFollower(context.Background(), encodeBatch(t, 0, workloadRecords(0, 10)))
				require.NoError(t, err)
				require.Equal(t, int64(9), last)
				last, err = l.AppendAsFollower(context.Background(), encodeBatch(t, tt.base, workloadRecords(10, 1)))
				require.NoError(t, err)
				require.Equal(t, tt.base, last)
				require.Equal(t, tt.base+1, l.LogEndOffset())
				want := []int64{0}
				if tt.roll {
					want = []int64{0, tt.base}
				}
				require.Equal(t, want, segmentBases(l))
				require.Equal(t, want, logFileBases(t, fsy, dir))

				// The offsets in the gap read as the batch after it.
				for _, off := range []int64{10, tt.base - 1, tt.base} {
					recs, err := l.ReadRecords(off, 1<<20)
					require.NoError(t, err)
					requireSameRecords(t, withOffsets(workloadRecords(10, 1), tt.base), recs)
				}
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, dir, baseConfig())
				require.Equal(t, want, segmentBases(l))
				require.Equal(t, tt.base+1, l.LogEndOffset())
				recs := workloadRecords(11, 1)
				require.NoError(t, l.Append(context.Background(), recs...))
				require.Equal(t, tt.base+1, recs[0].Offset)
			})
		})
	}
}

// TestAppendAsLeaderRejectsUnderstatedMaxTimestamp: a producer batch whose header claims a max
// timestamp below one of its records' is refused, as Kafka's LogValidator refuses it, so a record
// from the future cannot slip past the timestamp check.
func TestAppendAsLeaderRejectsUnderstatedMaxTimestamp(t *testing.T) {
	l := openTestLog(t, fsys.OS(), t.TempDir(), baseConfig())
	now := testEpoch.UnixMilli()
	h := recordbatch.Header{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		BaseTimestamp: now, MaxTimestamp: now, LastOffsetDelta: 1}
	recs := []recordbatch.Record{
		{OffsetDelta: 0, Key: []byte("k"), Value: []byte("now")},
		{OffsetDelta: 1, TimestampDelta: 365 * 24 * 3600 * 1000, Key: []byte("k"), Value: []byte("a year ahead")},
	}
	b, err := recordbatch.Encode(nil, h, recs)
	require.NoError(t, err)
	_, _, err = l.AppendAsLeader(context.Background(), b)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, int64(0), l.LogEndOffset())
	require.Equal(t, int64(0), l.Size())
}
