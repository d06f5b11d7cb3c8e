package commitlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// txnEntryBytes is one .txnindex entry as Kafka's TransactionIndex writes it, spelled out field
// by field: version (int16, 0), producer id, first offset, last offset (the marker's), last
// stable offset, big-endian: 34 bytes.
func txnEntryBytes(pid, first, last, lso int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	for _, v := range []int64{pid, first, last, lso} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// txnIndexBytes returns the bytes of the .txnindex file of dir's segment base, nil when there is
// none.
func txnIndexBytes(t *testing.T, fsy fsys.FS, dir string, base int64) []byte {
	t.Helper()
	path := segPath(dir, base, txnIndexSuffix)
	if !fsExists(t, fsy, path) {
		return nil
	}
	b := fsReadFile(t, fsy, path)
	if len(b) == 0 {
		return nil
	}
	return b
}

// txnStep is one append of the transaction tests: a batch (of producer pid, or none when pid
// is -1) or a marker (marker set, commit or abort).
type txnStep struct {
	pid    int64
	seq    int32
	n      int // records
	marker bool
	commit bool
	// lso is the log's last stable offset after the step.
	lso int64
}

// interleavedTxns are two producers' transactions interleaved with plain batches: A (pid 1)
// aborts while B (pid 2) is open, B commits, then each opens another transaction and commits,
// B first. The last stable offset is the first offset of the oldest open transaction, else
// the log end offset (Kafka's firstUnstableOffset).
var interleavedTxns = []txnStep{
	{pid: -1, n: 2, lso: 2},                       // 0-1
	{pid: 1, seq: 0, n: 2, lso: 2},                // 2-3: A opens at 2
	{pid: 2, seq: 0, n: 2, lso: 2},                // 4-5: B opens at 4
	{pid: 1, seq: 2, n: 1, lso: 2},                // 6
	{pid: 1, marker: true, lso: 4},                // 7: A ABORT; B is the oldest open
	{pid: 2, seq: 2, n: 1, lso: 4},                // 8
	{pid: 2, marker: true, commit: true, lso: 10}, // 9: B COMMIT; none open
	{pid: 2, seq: 3, n: 1, lso: 10},               // 10: B opens at 10
	{pid: 1, seq: 3, n: 1, lso: 10},               // 11: A opens at 11
	{pid: -1, n: 1, lso: 10},                      // 12
	{pid: 2, marker: true, commit: true, lso: 11}, // 13: B COMMIT; A is the oldest open
	{pid: 1, marker: true, commit: true, lso: 15}, // 14: A COMMIT
}

// runTxnSteps appends steps to l, checking each one's offsets and the last stable offset after
// it; coordinator epoch 3 for every marker.
func runTxnSteps(t *testing.T, l *Log, steps []txnStep) {
	t.Helper()
	ctx := context.Background()
	for i, st := range steps {
		leo := l.LogEndOffset()
		if st.marker {
			off, err := l.AppendMarker(ctx, st.pid, 0, st.commit, 3)
			require.NoError(t, err, "step %d", i)
			require.Equal(t, leo, off, "step %d", i)
		} else {
			recs := workloadRecords(int(leo), st.n)
			b := pidBatch(t, st.pid, 0, st.seq, st.pid >= 0, recs)
			if st.pid < 0 {
				b = encodeBatch(t, 0, recs)
			}
			first, last := mustAppendRaw(t, l, b)
			require.Equal(t, [2]int64{leo, leo + int64(st.n) - 1}, [2]int64{first, last}, "step %d", i)
		}
		require.Equal(t, st.lso, l.LastStableOffset(), "step %d", i)
	}
}

// TestLastStableOffsetAndTxnIndex: the last stable offset moves as Kafka's does with two
// producers' interleaved transactions; the ABORT writes one 34-byte .txnindex entry (its LSO the
// first offset of B's open transaction), the COMMITs none.
func TestLastStableOffsetAndTxnIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		runTxnSteps(t, l, interleavedTxns[:5])
		abortA := txnEntryBytes(1, 2, 7, 4)
		require.Len(t, abortA, txnindex.EntrySize)
		require.Equal(t, abortA, txnIndexBytes(t, fsy, dir, 0))
		runTxnSteps(t, l, interleavedTxns[5:])
		require.Equal(t, abortA, txnIndexBytes(t, fsy, dir, 0), "the COMMITs wrote nothing")
		require.Equal(t, []ProducerState{
			{ProducerID: 1, ProducerEpoch: 0, LastSequence: 3, LastOffset: 11, LastTimestamp: testEpoch.UnixMilli(), CoordinatorEpoch: 3, CurrentTxnFirstOffset: -1},
			{ProducerID: 2, ProducerEpoch: 0, LastSequence: 3, LastOffset: 10, LastTimestamp: testEpoch.UnixMilli(), CoordinatorEpoch: 3, CurrentTxnFirstOffset: -1},
		}, l.Producers(), "the markers' timestamp is the log's clock")

		// Reopened, and copied as a crash leaves it with the .txnindex deleted: the replay writes
		// the entry again.
		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, fsy, dir, crash)
		require.NoError(t, fsy.Remove(segPath(crash, 0, txnIndexSuffix)))
		c := openTestLog(t, fsy, crash, baseConfig())
		require.Equal(t, int64(15), c.LastStableOffset())
		require.Equal(t, abortA, txnIndexBytes(t, fsy, crash, 0))
		require.Equal(t, l.Producers(), c.Producers())

		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, baseConfig())
		require.Equal(t, int64(15), l.LastStableOffset())
		require.Equal(t, abortA, txnIndexBytes(t, fsy, dir, 0))
	})
}

// TestAbortMarkerInLaterSegment: a transaction whose data is in one segment and whose ABORT
// marker lands in a later one is recorded in the .txnindex of the marker's segment (Kafka's
// LogSegment.updateTxnIndex on the segment the marker is appended to); a crash image missing
// that file gets it back from the replay, which starts at the roll's snapshot that knows the
// transaction open.
func TestAbortMarkerInLaterSegment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, rollConfig())
		mustAppendRaw(t, l, pidBatch(t, 1, 0, 0, true, workloadRecords(0, 5))) // 0-4
		appendBatches(t, l, 2, 5)                                              // 5-14
		require.Equal(t, []int64{0, 10}, segmentBases(l))
		require.Equal(t, int64(0), l.LastStableOffset())
		off, err := l.AppendMarker(ctx, 1, 0, false, 0)
		require.NoError(t, err)
		require.Equal(t, int64(15), off)
		require.Equal(t, int64(16), l.LastStableOffset())

		entry := txnEntryBytes(1, 0, 15, 16)
		require.Nil(t, txnIndexBytes(t, fsy, dir, 0))
		require.Equal(t, entry, txnIndexBytes(t, fsy, dir, 10))
		got, err := l.abortedTxns(nil, 0, 16)
		require.NoError(t, err)
		require.Equal(t, []txnindex.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 15, LastStableOffset: 16}}, got)

		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, fsy, dir, crash)
		require.Equal(t, []int64{10}, snapshotOffsets(t, fsy, crash))
		require.NoError(t, fsy.Remove(segPath(crash, 10, txnIndexSuffix)))
		c := openTestLog(t, fsy, crash, rollConfig())
		require.Equal(t, entry, txnIndexBytes(t, fsy, crash, 10))
		require.Nil(t, txnIndexBytes(t, fsy, crash, 0))
		require.Equal(t, int64(16), c.LastStableOffset())
	})
}

// TestTxnBatchesDecodeWithKmsg: every batch of a segment holding plain batches, transactional
// batches of two producers, COMMIT and ABORT markers decodes with franz-go's kmsg as a Kafka
// client decodes it: attribute bits 0x10 (transactional) and 0x20 (control), producer id, epoch
// and base sequence as sent, and each marker's one record a ControlRecordKey (version 0, type 0
// ABORT or 1 COMMIT) with an EndTxnMarker value (version 0, the coordinator epoch).
func TestTxnBatchesDecodeWithKmsg(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		runTxnSteps(t, l, interleavedTxns)
		require.NoError(t, l.Sync())
		file := fsReadFile(t, fsy, segPath(dir, 0, logSuffix))

		var next int64
		pos := 0
		for i, st := range interleavedTxns {
			require.GreaterOrEqual(t, len(file)-pos, 12, "batch %d", i)
			size := 12 + int(binary.BigEndian.Uint32(file[pos+8:]))
			batch := file[pos : pos+size]
			pos += size
			var kb kmsg.RecordBatch
			require.NoError(t, kb.ReadFrom(batch), "batch %d", i)
			require.Equal(t, next, kb.FirstOffset, "batch %d", i)
			require.Equal(t, int8(2), kb.Magic)
			require.Equal(t, crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)), uint32(kb.CRC), "batch %d", i)
			txn, ctl := kb.Attributes&0x10 != 0, kb.Attributes&0x20 != 0
			switch {
			case st.marker:
				require.True(t, txn, "batch %d: a marker is transactional", i)
				require.True(t, ctl, "batch %d", i)
				require.Equal(t, st.pid, kb.ProducerID)
				require.Equal(t, int16(0), kb.ProducerEpoch)
				require.Equal(t, int32(-1), kb.FirstSequence)
				require.Equal(t, int32(0), kb.LastOffsetDelta)
				require.Equal(t, int32(1), kb.NumRecords)
				length, n := binary.Varint(kb.Records)
				require.Greater(t, n, 0)
				require.Len(t, kb.Records, n+int(length), "batch %d: one record", i)
				var kr kmsg.Record
				require.NoError(t, kr.ReadFrom(kb.Records))
				var key kmsg.ControlRecordKey
				require.NoError(t, key.ReadFrom(kr.Key))
				require.Equal(t, int16(0), key.Version)
				wantType := kmsg.ControlRecordKeyTypeAbort
				if st.commit {
					wantType = kmsg.ControlRecordKeyTypeCommit
				}
				require.Equal(t, wantType, key.Type, "batch %d", i)
				var val kmsg.EndTxnMarker
				require.NoError(t, val.ReadFrom(kr.Value))
				require.Equal(t, int16(0), val.Version)
				require.Equal(t, int32(3), val.CoordinatorEpoch)
				next++
			case st.pid >= 0:
				require.True(t, txn, "batch %d", i)
				require.False(t, ctl, "batch %d", i)
				require.Equal(t, st.pid, kb.ProducerID)
				require.Equal(t, int16(0), kb.ProducerEpoch)
				require.Equal(t, st.seq, kb.FirstSequence)
				require.Equal(t, int32(st.n), kb.NumRecords)
				next += int64(st.n)
			default:
				require.False(t, txn, "batch %d", i)
				require.False(t, ctl, "batch %d", i)
				require.Equal(t, int64(-1), kb.ProducerID)
				require.Equal(t, int16(-1), kb.ProducerEpoch)
				require.Equal(t, int32(-1), kb.FirstSequence)
				next += int64(st.n)
			}
		}
		require.Equal(t, len(file), pos, "nothing after the last batch")
		require.Equal(t, int64(15), next)
	})
}

// keyedTxn is a batch of one keyed record at testEpoch from producer pid (none when -1),
// transactional when pid is set.
func keyedTxn(t *testing.T, pid int64, seq int32, key, value string) []byte {
	t.Helper()
	recs := []*Record{{Key: []byte(key), Value: []byte(value), Timestamp: testEpoch}}
	if pid < 0 {
		return encodeBatch(t, 0, recs)
	}
	return pidBatch(t, pid, 0, seq, true, recs)
}

// TestCompactionStopsAtFirstUnstableOffset: with a transaction open, the uncleanable offset is
// the base of the segment holding its first offset (Kafka's firstUncleanableDirtyOffset takes the
// first unstable offset), and a clean leaves everything from there on as it was; once the
// transaction is committed, the clean reaches the active segment.
func TestCompactionStopsAtFirstUnstableOffset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, compactConfig())
		fill := func(n int) {
			for i := range n {
				first, _ := mustAppendRaw(t, l, keyedTxn(t, -1, 0, fmt.Sprint("k", i%3), "vvvvvvvvvvvvvvvvvvvv"))
				require.Equal(t, first+1, l.LogEndOffset())
			}
		}
		fill(40)
		first, _ := mustAppendRaw(t, l, keyedTxn(t, 9, 0, "k0", "in-txn"))
		fill(60)
		bases := segmentBases(l)
		require.Greater(t, len(bases), 3)
		var txnSeg int64
		for _, b := range bases {
			if b <= first {
				txnSeg = b
			}
		}
		require.Greater(t, txnSeg, int64(0))
		require.Equal(t, first, l.LastStableOffset())

		st := l.CompactionState()
		require.Equal(t, txnSeg, st.UncleanableOffset)
		before := scanKeyed(t, l)
		r, err := l.Compact(ctx)
		require.NoError(t, err)
		require.Equal(t, txnSeg, r.CleanerPoint)
		after := scanKeyed(t, l)
		var keptFrom []keyed
		for _, k := range before {
			if k.offset >= txnSeg {
				keptFrom = append(keptFrom, k)
			}
		}
		require.Equal(t, keptFrom, after[len(after)-len(keptFrom):], "nothing from the transaction's segment on was cleaned")
		require.Less(t, len(after), len(before), "below it, the clean removed older values")

		_, err = l.AppendMarker(ctx, 9, 0, true, 0)
		require.NoError(t, err)
		st = l.CompactionState()
		require.Equal(t, segmentBases(l)[len(segmentBases(l))-1], st.UncleanableOffset)
		r, err = l.Compact(ctx)
		require.NoError(t, err)
		require.Equal(t, st.UncleanableOffset, r.CleanerPoint)
	})
}

// TestCompactionKeepsValueUnderAbortedOne: a key whose newer value was written in a transaction
// that was aborted keeps its older, committed value through a clean: the offset map takes no key
// of an aborted batch (Kafka's Cleaner.buildOffsetMap skips aborted transactions), so the older
// value is not removed for a value no ReadCommitted reader ever sees. Both where the ABORT marker
// is in the cleaned range and where it is in the active segment.
func TestCompactionKeepsValueUnderAbortedOne(t *testing.T) {
	for _, markerLast := range []bool{false, true} {
		t.Run(fmt.Sprint("marker_in_active_segment=", markerLast), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				ctx := context.Background()
				s, err := Open(t.TempDir(), withFS(fsy), WithCleanerThreads(0))
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				cfg := compactConfig()
				tp, err := s.CreateTopic("c", TopicConfig{Partitions: 1, LogConfig: cfg})
				require.NoError(t, err)
				p, err := tp.Partition(0)
				require.NoError(t, err)
				appendOne := func(b []byte) int64 {
					first, _, err := p.AppendAsLeader(ctx, AcksAll, b)
					require.NoError(t, err)
					return first
				}
				require.Equal(t, int64(0), appendOne(keyedTxn(t, -1, 0, "K", "committed")))
				require.Equal(t, int64(1), appendOne(keyedTxn(t, 5, 0, "K", "aborted")))
				if !markerLast {
					off, err := p.AppendMarker(ctx, 5, 0, false, 0)
					require.NoError(t, err)
					require.Equal(t, int64(2), off)
				}
				var fillers []string
				for i := range 60 {
					k := fmt.Sprintf("f%02d", i)
					appendOne(keyedTxn(t, -1, 0, k, "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"))
					fillers = append(fillers, k+"=vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv")
				}
				if markerLast {
					_, err := p.AppendMarker(ctx, 5, 0, false, 0)
					require.NoError(t, err)
				}
				require.Equal(t, p.LogEndOffset(), p.LastStableOffset())
				require.Greater(t, p.SegmentCount(), 2)
				want := append([]string{"K=committed"}, fillers...)
				require.Equal(t, want, keyValues(readAll(t, s, "c", 0, ReadCommitted)))

				r, err := p.Compact(ctx)
				require.NoError(t, err)
				require.Greater(t, r.CleanerPoint, int64(2), "the clean covered both of K's values")
				got := readAll(t, s, "c", 0, ReadCommitted)
				require.Equal(t, want, keyValues(got))
				require.Equal(t, int64(0), got[0].Offset)
			})
		})
	}
}

// keyValues returns "key=value" of each of recs.
func keyValues(recs []*Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Key) + "=" + string(r.Value)
	}
	return out
}
