package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

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

func TestReadBatchesMaxBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, l, 5, 10)
		all, err := l.ReadBatches(nil, 0, math.MaxInt32)
		require.NoError(t, err)
		hs := batchHeaders(t, all)
		require.Len(t, hs, 5)
		b := hs[0].Size()
		for _, h := range hs {
			require.Equal(t, b, h.Size(), "the workload's batches of 10 all have one size")
		}
		tests := []struct {
			name       string
			offset     int64
			maxBytes   int
			firstBatch int
			batches    int
		}{
			{"zero bytes still gives the first batch", 0, 0, 0, 1},
			{"one byte still gives the first batch", 0, 1, 0, 1},
			{"one byte short of the batch", 0, b - 1, 0, 1},
			{"exactly one batch", 0, b, 0, 1},
			{"one byte short of two", 0, 2*b - 1, 0, 1},
			{"exactly two", 0, 2 * b, 0, 2},
			{"two and a half", 0, 2*b + b/2, 0, 2},
			{"everything", 0, 5 * b, 0, 5},
			{"more than everything", 0, 100 * b, 0, 5},
			{"from the middle of batch 2", 15, 2 * b, 1, 2},
			{"from the last offset of batch 2", 19, 1, 1, 1},
			{"from the first offset of batch 3", 20, 3*b - 1, 2, 2},
			{"from the last batch", 49, 100 * b, 4, 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := l.ReadBatches(nil, tt.offset, tt.maxBytes)
				require.NoError(t, err)
				start := tt.firstBatch * b
				requireSameBytes(t, all[start:start+tt.batches*b], got)
				// dst is appended to.
				got, err = l.ReadBatches([]byte{1, 2, 3}, tt.offset, tt.maxBytes)
				require.NoError(t, err)
				requireSameBytes(t, append([]byte{1, 2, 3}, all[start:start+tt.batches*b]...), got)
			})
		}
	})
}

func TestEmptyLogResumesAtCheckpointedStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		require.NoError(t, fsy.MkdirAll(dir, 0o755))
		writeTestState(t, fsy, dir, logState{logStartOffset: 100, recoveryPoint: 100, clean: true})
		l := openTestLog(t, fsy, dir, baseConfig())
		require.Equal(t, int64(100), l.LogStartOffset())
		require.Equal(t, int64(100), l.LogEndOffset())
		require.Equal(t, []int64{100}, logFileBases(t, fsy, dir))
		recs := workloadRecords(0, 3)
		require.NoError(t, l.Append(context.Background(), recs...))
		require.Equal(t, int64(100), recs[0].Offset)
		for _, off := range []int64{0, 99} {
			_, err := l.ReadBatches(nil, off, 1<<20)
			require.ErrorIs(t, err, ErrOffsetOutOfRange)
		}
		requireSameRecords(t, withOffsets(workloadRecords(0, 3), 100), readAllRecords(t, l))
		require.ErrorIs(t, l.TruncateTo(99), ErrOffsetOutOfRange)
		require.Equal(t, int64(103), l.LogEndOffset())
	})
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

// timedLog appends, one record per batch or several, records whose timestamps rise, tie and
// fall, over several segments, and returns each record's timestamp by offset.
func timedLog(t *testing.T, l *Log) []int64 {
	t.Helper()
	pattern := [][]int64{
		{10}, {20, 20}, {20}, {15, 30}, {5}, {30}, {40, 35, 45}, {45}, {44}, {60}, {50, 55},
		{60}, {70, 10}, {10}, {80}, {75}, {79, 81}, {100}, {90}, {90, 99, 101}, {200}, {150},
	}
	var ts []int64
	for _, call := range pattern {
		var recs []*Record
		for _, m := range call {
			r := workloadRecord(len(ts) + len(recs))
			r.Timestamp = testEpoch.Add(time.Duration(m) * time.Millisecond)
			recs = append(recs, r)
		}
		require.NoError(t, l.Append(context.Background(), recs...))
		ts = append(ts, call...)
	}
	return ts
}

// bruteForceOffsetForTime is the first offset, in offset order, whose timestamp is >= ts, or
// end.
func bruteForceOffsetForTime(ts []int64, t int64, end int64) int64 {
	for off, v := range ts {
		if v >= t {
			return int64(off)
		}
	}
	return end
}

func TestOffsetForTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 1000 // about 5 small batches per segment
		cfg.IndexIntervalBytes = 1
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		ts := timedLog(t, l)
		require.Greater(t, l.SegmentCount(), 3)
		end := l.LogEndOffset()
		require.Equal(t, int64(len(ts)), end)

		// A few answers worked out by hand from the pattern.
		hand := []struct {
			ms   int64
			want int64
		}{
			{math.MinInt64, 0}, {0, 0}, {10, 0}, {11, 1}, {20, 1}, {21, 5}, {30, 5},
			{31, 8}, {45, 10}, {46, 13}, {61, 17}, {101, 28}, {102, 29}, {150, 29}, {151, 29},
			{200, 29}, {201, end}, {math.MaxInt64, end},
		}
		check := func() {
			t.Helper()
			for _, h := range hand {
				got, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + h.ms))
				if h.ms == math.MinInt64 || h.ms == math.MaxInt64 {
					got, err = l.OffsetForTime(time.UnixMilli(h.ms))
				}
				require.NoError(t, err)
				require.Equal(t, h.want, got, "ts %d", h.ms)
			}
			for ms := int64(-2); ms <= 202; ms++ {
				got, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + ms))
				require.NoError(t, err)
				require.Equal(t, bruteForceOffsetForTime(ts, ms, end), got, "ts %d", ms)
			}
		}
		check()
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		check()
	})
}

func TestTruncateTo(t *testing.T) {
	// Four segments of three batches of 10 records: [0,30) [30,60) [60,90) [90,120).
	tests := []struct {
		name     string
		offset   int64
		leo      int64
		segments []int64
		err      error
	}{
		{"inside a batch of the active segment", 105, 100, []int64{0, 30, 60, 90}, nil},
		{"at a batch boundary of the active segment", 110, 110, []int64{0, 30, 60, 90}, nil},
		{"at the active segment's base", 90, 90, []int64{0, 30, 60, 90}, nil},
		{"at a sealed segment's base", 60, 60, []int64{0, 30, 60}, nil},
		{"inside a batch of a sealed segment", 45, 40, []int64{0, 30}, nil},
		{"inside the first batch", 3, 0, []int64{0}, nil},
		{"to zero", 0, 0, []int64{0}, nil},
		{"at the log end offset changes nothing", 120, 120, []int64{0, 30, 60, 90}, nil},
		{"past the log end offset changes nothing", 1000, 120, []int64{0, 30, 60, 90}, nil},
		{"below the log start offset", -1, 120, []int64{0, 30, 60, 90}, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
				appendBatches(t, probe, 1, 10)
				b := probe.Size()
				require.NoError(t, probe.Close())

				cfg := baseConfig()
				cfg.SegmentBytes = 3 * b
				cfg.IndexIntervalBytes = 1
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				want := appendBatches(t, l, 12, 10)
				require.Equal(t, []int64{0, 30, 60, 90}, segmentBases(l))

				err := l.TruncateTo(tt.offset)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, tt.leo, l.LogEndOffset())
				require.Equal(t, tt.segments, segmentBases(l))
				require.Equal(t, tt.segments, logFileBases(t, fsy, dir))
				for _, name := range fsListDir(t, fsy, dir) {
					for _, suf := range []string{indexSuffix, timeIndexSuffix} {
						if base, ok := parseSegmentName(name, suf); ok {
							require.Contains(t, tt.segments, base, "index file %s of a removed segment", name)
						}
					}
				}
				last := tt.segments[len(tt.segments)-1]
				require.Equal(t, (tt.leo-last)/10*b, fsFileSize(t, fsy, segPath(dir, last, logSuffix)))
				require.Equal(t, tt.leo/10*b, l.Size())
				requireIndexesWithin(t, l)
				requireSameRecords(t, want[:tt.leo], readAllRecords(t, l))
				_, err = l.ReadBatches(nil, tt.leo+1, 1<<20)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)

				// Appending continues at the new log end offset, and a reopen keeps all of it.
				more := workloadRecords(500, 10)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, tt.leo, more[0].Offset)
				want = append(want[:tt.leo:tt.leo], withOffsets(workloadRecords(500, 10), tt.leo)...)
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())
				l = openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tt.leo+10, l.LogEndOffset())
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
			})
		})
	}
}

func TestTruncateToCrashRecovery(t *testing.T) {
	// A crash after a truncation (the log killed while open) must not bring the removed records
	// back, nor lose the ones appended after it.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 4000
		cfg.IndexIntervalBytes = 1
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		want := appendBatches(t, l, 12, 10)
		require.Greater(t, l.SegmentCount(), 2)
		require.NoError(t, l.TruncateTo(25))
		require.Equal(t, int64(20), l.LogEndOffset())
		more := appendBatches(t, l, 2, 10)
		want = append(want[:20:20], more...)
		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, fsy, dir, crash)
		require.NoError(t, l.Close())

		l = openTestLog(t, fsy, crash, cfg)
		require.Equal(t, int64(40), l.LogEndOffset())
		requireSameRecords(t, want, readAllRecords(t, l))
	})
}

func TestDirectoryLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		want := appendBatches(t, l, 3, 10)
		before := fsSnapshot(t, fsy, dir)

		for range 2 {
			l2, err := OpenLog(dir, baseConfig(), withFS(fsy))
			require.ErrorIs(t, err, ErrLocked)
			require.Nil(t, l2)
		}
		require.Equal(t, before, fsSnapshot(t, fsy, dir), "a refused open changes nothing")
		// The first log still works.
		more := workloadRecords(30, 1)
		require.NoError(t, l.Append(context.Background(), more...))
		require.Equal(t, int64(30), more[0].Offset)
		want = append(want, withOffsets(workloadRecords(30, 1), 30)...)

		require.NoError(t, l.Close())
		l2 := openTestLog(t, fsy, dir, baseConfig())
		requireSameRecords(t, want, readAllRecords(t, l2))
		_, err := OpenLog(dir, baseConfig(), withFS(fsy))
		require.ErrorIs(t, err, ErrLocked)
	})
}

// openFDs counts this process's open file descriptors; -1 where the system does not list them.
func openFDs(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestFailedOpenLeavesNothingOpen(t *testing.T) {
	// A log whose segments overlap: segment 0 ends at offset 9, past the base offset 5 of the
	// next. The open fails after it took the lock, opened both segments and mapped their
	// indexes.
	overlapping := func(t *testing.T, fsy fsys.FS) string {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		appendBatches(t, l, 1, 10)
		require.NoError(t, l.Close())
		fsWriteFile(t, fsy, segPath(dir, 5, logSuffix), encodeBatch(t, 5, workloadRecords(5, 2)))
		return dir
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, fsy fsys.FS) string
		cfg   LogConfig
		err   error
	}{
		{"invalid config", func(t *testing.T, fsy fsys.FS) string { return t.TempDir() },
			LogConfig{SegmentBytes: 10}, ErrInvalidConfig},
		{"the directory is a file", func(t *testing.T, fsy fsys.FS) string {
			parent := t.TempDir()
			require.NoError(t, fsy.MkdirAll(parent, 0o755))
			p := filepath.Join(parent, "file")
			fsWriteFile(t, fsy, p, []byte("not a directory"))
			return p
		}, baseConfig(), nil},
		{"overlapping segments", overlapping, baseConfig(), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := tt.setup(t, fsy)
				runtime.GC() // finalizers of earlier tests' files
				fds := openFDs(t)
				l, err := OpenLog(dir, tt.cfg, withFS(fsy))
				require.Error(t, err)
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				}
				require.Nil(t, l)
				require.Equal(t, fds, openFDs(t), "descriptors left open by a failed open")
				// No lock is left behind: the lock file can be taken.
				if fi, serr := fsy.Stat(dir); serr == nil && fi.IsDir() {
					u, err := fsy.Lock(filepath.Join(dir, lockFileName))
					require.NoError(t, err)
					require.NoError(t, u.Close())
				}
			})
		})
	}
}

func TestClosedLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, l, 2, 10)
		raw := encodeBatch(t, 0, workloadRecords(0, 1))
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "a second Close returns nil")

		ctx := context.Background()
		require.ErrorIs(t, l.Append(ctx, workloadRecord(1)), ErrClosed)
		_, _, err := l.AppendAsLeader(ctx, slices.Clone(raw))
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.AppendAsFollower(ctx, encodeBatch(t, 20, workloadRecords(20, 1)))
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.ReadBatches(nil, 0, 1<<20)
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.ReadRecords(0, 1<<20)
		require.ErrorIs(t, err, ErrClosed)
		_, err = l.OffsetForTime(time.UnixMilli(0))
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, l.TruncateTo(5), ErrClosed)
		require.ErrorIs(t, l.Sync(), ErrClosed)
		require.NoError(t, l.Close())
		// The read-only accessors still answer.
		require.Equal(t, int64(20), l.LogEndOffset())
		require.Equal(t, int64(0), l.LogStartOffset())
	})
}

func TestConcurrentReadersSeeWholeBatches(t *testing.T) {
	// Readers running while appends go on see only whole batches, in order, below the log end
	// offset they observed.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 8000
		l := openTestLog(t, fsy, t.TempDir(), cfg)
		done := make(chan struct{})
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for {
					select {
					case <-done:
						errs <- nil
						return
					default:
					}
					end := l.LogEndOffset()
					for off := int64(0); off < end; {
						recs, err := l.ReadRecords(off, 4096)
						if err != nil {
							errs <- err
							return
						}
						for _, r := range recs {
							if r.Offset != off || string(r.Key) != string(workloadRecord(int(off)).Key) {
								errs <- errors.New("record out of place")
								return
							}
							off++
						}
					}
				}
			}()
		}
		appendBatches(t, l, 60, 5)
		close(done)
		for range 4 {
			require.NoError(t, <-errs)
		}
		require.Greater(t, l.SegmentCount(), 3)
	})
}
