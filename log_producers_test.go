package commitlog

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// pidBatch is one RecordBatch as a Kafka client sends it for producer pid at epoch: base offset
// 0 and leader epoch -1 (the leader sets both), base sequence seq, transactional when txn.
func pidBatch(t *testing.T, pid int64, epoch int16, seq int32, txn bool, recs []*Record) []byte {
	t.Helper()
	attrs := recordbatch.Attributes(0)
	if txn {
		attrs |= recordbatch.AttrTransactional
	}
	return encodeBatchWith(t, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
}

// appendRaw appends a copy of the batches b with AppendAsLeader (which rewrites its input in
// place) and returns the offsets it answers.
func appendRaw(t *testing.T, l *Log, b []byte) (first, last int64, err error) {
	t.Helper()
	return l.AppendAsLeader(context.Background(), slices.Clone(b))
}

// mustAppendRaw is appendRaw that must succeed.
func mustAppendRaw(t *testing.T, l *Log, b []byte) (first, last int64) {
	t.Helper()
	first, last, err := appendRaw(t, l, b)
	require.NoError(t, err)
	return first, last
}

// dirFiles returns every file of dir with its bytes, but the lock.
func dirFiles(t *testing.T, fsy fsys.FS, dir string) map[string][]byte {
	t.Helper()
	files := fsSnapshot(t, fsy, dir)
	delete(files, lockFileName)
	return files
}

// requireNothingWritten checks that l's log end offset is leo and that its folder holds exactly
// the files and bytes of before.
func requireNothingWritten(t *testing.T, fsy fsys.FS, l *Log, leo int64, before map[string][]byte) {
	t.Helper()
	require.Equal(t, leo, l.LogEndOffset())
	after := dirFiles(t, fsy, l.Dir())
	require.Equal(t, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	for name, b := range before {
		requireSameBytes(t, b, after[name], name)
	}
}

// snapshotOffsets returns the offsets of the producer snapshot files in dir, ascending.
func snapshotOffsets(t *testing.T, fsy fsys.FS, dir string) []int64 {
	t.Helper()
	var out []int64
	for _, name := range fsListDir(t, fsy, dir) {
		if off, ok := producerstate.ParseSnapshotName(name); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out
}

// readSnapshotFile decodes the snapshot file of dir at offset, named as Kafka names it.
func readSnapshotFile(t *testing.T, fsy fsys.FS, dir string, offset int64) []producerstate.Entry {
	t.Helper()
	name := fmt.Sprintf("%020d.snapshot", offset)
	require.True(t, fsExists(t, fsy, filepath.Join(dir, name)), "%s exists", name)
	entries, err := producerstate.DecodeSnapshot(fsReadFile(t, fsy, filepath.Join(dir, name)))
	require.NoError(t, err)
	return entries
}

// TestProducerRetryAnsweredWithOriginalOffsets: a client that timed out waiting for the answer
// sends the same batch again, byte for byte; however often it does, the log answers with the
// offsets of the first append and writes nothing.
func TestProducerRetryAnsweredWithOriginalOffsets(t *testing.T) {
	for _, retries := range []int{1, 2, 6} {
		t.Run(fmt.Sprint(retries, "retries"), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, baseConfig())
				appendBatches(t, l, 1, 3) // offsets 0-2, no producer
				b := pidBatch(t, 7, 0, 0, false, workloadRecords(3, 5))
				first, last := mustAppendRaw(t, l, b)
				require.Equal(t, int64(3), first)
				require.Equal(t, int64(7), last)
				before := dirFiles(t, fsy, dir)
				for i := range retries {
					f, la, err := appendRaw(t, l, b)
					require.NoError(t, err, "retry %d", i)
					require.Equal(t, int64(3), f, "retry %d", i)
					require.Equal(t, int64(7), la, "retry %d", i)
					requireNothingWritten(t, fsy, l, 8, before)
				}
				// The producer goes on with the next sequence.
				first, last = mustAppendRaw(t, l, pidBatch(t, 7, 0, 5, false, workloadRecords(8, 2)))
				require.Equal(t, int64(8), first)
				require.Equal(t, int64(9), last)
				requireSameRecords(t, withOffsets(workloadRecords(0, 10), 0), readAllRecords(t, l))
			})
		})
	}
}

// TestProducerRetryWindow: the log remembers a producer's last 5 batches, as Kafka does
// (ProducerStateEntry.NUM_BATCHES_TO_RETAIN = 5; a retry is recognised by
// ProducerStateEntry.findDuplicateBatch over those batches only, which is why the Java producer
// requires max.in.flight.requests.per.connection <= 5 for idempotence: no retry can be older than
// the 5 requests in flight). A batch that left the window is no longer a duplicate: its sequence
// is below the next expected one, and Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestProducerRetryWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		var batches [][]byte
		for i := range 6 { // B1 (seq 0-4) .. B6 (seq 25-29), 5 records each, at offsets 5i..5i+4
			b := pidBatch(t, 7, 0, int32(5*i), false, workloadRecords(5*i, 5))
			first, last := mustAppendRaw(t, l, b)
			require.Equal(t, int64(5*i), first)
			require.Equal(t, int64(5*i+4), last)
			batches = append(batches, b)
		}
		before := dirFiles(t, fsy, dir)

		_, _, err := appendRaw(t, l, batches[0])
		require.ErrorIs(t, err, ErrOutOfOrderSequence, "B1 left the 5-batch window")
		requireNothingWritten(t, fsy, l, 30, before)

		for i := 1; i < 6; i++ { // B2..B6 are remembered
			first, last, err := appendRaw(t, l, batches[i])
			require.NoError(t, err, "B%d", i+1)
			require.Equal(t, int64(5*i), first, "B%d", i+1)
			require.Equal(t, int64(5*i+4), last, "B%d", i+1)
			requireNothingWritten(t, fsy, l, 30, before)
		}
		require.Equal(t, []ProducerState{{ProducerID: 7, ProducerEpoch: 0, LastSequence: 29, LastOffset: 29,
			LastTimestamp: testEpoch.UnixMilli() + 29, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}}, l.Producers())
	})
}

// TestProducerChecksRejectWithoutWriting: each of Kafka's producer checks answers with its error
// and writes nothing: no offset taken, no byte of any file changed, the producer state as it was.
func TestProducerChecksRejectWithoutWriting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		// Producer 7, epoch 2, idempotent: sequences 0-4 at offsets 0-4.
		mustAppendRaw(t, l, pidBatch(t, 7, 2, 0, false, workloadRecords(0, 5)))
		// Producer 8, epoch 1: a transaction open from offset 5.
		mustAppendRaw(t, l, pidBatch(t, 8, 1, 0, true, workloadRecords(5, 2)))
		// Producer 9, epoch 0: a transaction committed by coordinator epoch 5 (marker at 8).
		mustAppendRaw(t, l, pidBatch(t, 9, 0, 0, true, workloadRecords(7, 1)))
		off, err := l.AppendMarker(ctx, 9, 0, true, 5)
		require.NoError(t, err)
		require.Equal(t, int64(8), off)
		require.Equal(t, int64(9), l.LogEndOffset())
		require.Equal(t, int64(5), l.LastStableOffset())
		state := l.Producers()

		tests := []struct {
			name   string
			append func() error
			err    error
		}{
			{"sequence gap", func() error {
				_, _, err := appendRaw(t, l, pidBatch(t, 7, 2, 6, false, workloadRecords(9, 1)))
				return err
			}, ErrOutOfOrderSequence},
			{"older epoch", func() error {
				_, _, err := appendRaw(t, l, pidBatch(t, 7, 1, 5, false, workloadRecords(9, 1)))
				return err
			}, ErrProducerFenced},
			{"new epoch not at sequence 0", func() error {
				_, _, err := appendRaw(t, l, pidBatch(t, 7, 3, 5, false, workloadRecords(9, 1)))
				return err
			}, ErrOutOfOrderSequence},
			{"non-transactional batch in an open transaction", func() error {
				_, _, err := appendRaw(t, l, pidBatch(t, 8, 1, 2, false, workloadRecords(9, 1)))
				return err
			}, ErrInvalidTxnState},
			{"transactional batch without producer id", func() error {
				_, _, err := appendRaw(t, l, pidBatch(t, -1, -1, -1, true, workloadRecords(9, 1)))
				return err
			}, ErrInvalidRecord},
			{"marker of an older producer epoch", func() error {
				_, err := l.AppendMarker(ctx, 8, 0, false, 0)
				return err
			}, ErrProducerFenced},
			{"marker of an older coordinator epoch", func() error {
				_, err := l.AppendMarker(ctx, 9, 0, true, 4)
				return err
			}, ErrCoordinatorFenced},
			{"retry next to a new batch in one write", func() error {
				_, _, err := appendRaw(t, l, slices.Concat(pidBatch(t, 7, 2, 0, false, workloadRecords(0, 5)),
					pidBatch(t, 7, 2, 5, false, workloadRecords(9, 1))))
				return err
			}, ErrOutOfOrderSequence},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := dirFiles(t, fsy, dir)
				require.ErrorIs(t, tt.append(), tt.err)
				requireNothingWritten(t, fsy, l, 9, before)
				require.Equal(t, state, l.Producers())
				require.Equal(t, int64(5), l.LastStableOffset())
			})
		}
		// The checks passed, each producer goes on where it was.
		first, _ := mustAppendRaw(t, l, pidBatch(t, 7, 2, 5, false, workloadRecords(9, 1)))
		require.Equal(t, int64(9), first)
		first, _ = mustAppendRaw(t, l, pidBatch(t, 8, 1, 2, true, workloadRecords(10, 1)))
		require.Equal(t, int64(10), first)
		first, _ = mustAppendRaw(t, l, pidBatch(t, 7, 3, 0, false, workloadRecords(11, 1)))
		require.Equal(t, int64(11), first, "a new epoch starts at sequence 0")
	})
}

// TestProducerStateSurvivesReopen: Close writes the producer snapshot at the log end offset, in
// Kafka's format and file name; the reopened log answers a retry of the last batch with its
// original offsets. As in Kafka, the snapshot holds each producer's last batch only: an older
// batch is no longer recognised after the reopen.
func TestProducerStateSurvivesReopen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		var batches [][]byte
		for i := range 3 {
			b := pidBatch(t, 7, 4, int32(3*i), false, workloadRecords(3*i, 3))
			mustAppendRaw(t, l, b)
			batches = append(batches, b)
		}
		require.NoError(t, l.Close())

		require.Equal(t, []int64{9}, snapshotOffsets(t, fsy, dir), "the close's, at the log end offset (a new log writes none at open)")
		require.Equal(t, []producerstate.Entry{{ProducerID: 7, Epoch: 4,
			Batches:          []producerstate.BatchMetadata{{FirstSeq: 6, LastSeq: 8, FirstOffset: 6, LastOffset: 8, Timestamp: testEpoch.UnixMilli() + 8}},
			CoordinatorEpoch: -1, LastTimestamp: testEpoch.UnixMilli() + 8, CurrentTxnFirstOffset: -1}},
			readSnapshotFile(t, fsy, dir, 9))

		l = openTestLog(t, fsy, dir, baseConfig())
		before := dirFiles(t, fsy, dir)
		first, last, err := appendRaw(t, l, batches[2])
		require.NoError(t, err)
		require.Equal(t, [2]int64{6, 8}, [2]int64{first, last})
		requireNothingWritten(t, fsy, l, 9, before)
		_, _, err = appendRaw(t, l, batches[1])
		require.ErrorIs(t, err, ErrOutOfOrderSequence, "only the last batch is in the snapshot")
		requireNothingWritten(t, fsy, l, 9, before)
		first, _ = mustAppendRaw(t, l, pidBatch(t, 7, 4, 9, false, workloadRecords(9, 1)))
		require.Equal(t, int64(9), first)
	})
}

// TestProducerStateRebuiltAfterCrash: a log copied while open (a process kill: no snapshot at
// the end) rebuilds its producer state from the batches, so every remembered batch is still
// answered with its offsets. The replay read the active segment alone, so no snapshot is written
// after it: a second crash replays the same batches, and gets the same state.
func TestProducerStateRebuiltAfterCrash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		var batches [][]byte
		for i := range 6 {
			b := pidBatch(t, 7, 0, int32(2*i), false, workloadRecords(2*i, 2))
			mustAppendRaw(t, l, b)
			batches = append(batches, b)
		}
		mustAppendRaw(t, l, pidBatch(t, 8, 0, 0, true, workloadRecords(12, 2))) // open at 12
		want := l.Producers()
		// The open of the empty log wrote one at 0 (where Kafka's takeSnapshot, with nothing
		// new since offset 0, writes none); no roll, no close, so no other.
		require.Empty(t, snapshotOffsets(t, fsy, dir), "no roll, no close: no snapshot yet")

		// reopenCrashed opens a copy of from taken as a crash would leave it.
		reopenCrashed := func(from string) (*Log, string) {
			to := filepath.Join(t.TempDir(), "crash")
			crashCopy(t, fsy, from, to)
			l := openTestLog(t, fsy, to, baseConfig())
			require.Equal(t, want, l.Producers())
			require.Equal(t, int64(12), l.LastStableOffset())
			return l, to
		}
		c, crash := reopenCrashed(dir)
		require.Empty(t, snapshotOffsets(t, fsy, crash), "a replay of the active segment alone writes none")
		a, again := reopenCrashed(crash)
		require.NoError(t, a.Close())
		require.Equal(t, []int64{14}, snapshotOffsets(t, fsy, again), "the clean close writes one")
		before := dirFiles(t, fsy, crash)
		for i := 1; i < 6; i++ {
			first, last, err := appendRaw(t, c, batches[i])
			require.NoError(t, err, "batch %d", i)
			require.Equal(t, [2]int64{int64(2 * i), int64(2*i + 1)}, [2]int64{first, last})
		}
		requireNothingWritten(t, fsy, c, 14, before)
		_, _, err := appendRaw(t, c, pidBatch(t, 8, 0, 2, false, workloadRecords(14, 1)))
		require.ErrorIs(t, err, ErrInvalidTxnState, "the open transaction came back")
	})
}

// TestProducerSnapshotAfterReplayOfSealedSegments: a crash that leaves no snapshot covering the
// sealed segments (here the roll's snapshots were lost) replays them at open, and a snapshot at the
// log end offset is then written, as Kafka's recovery ends with one, so that the next open reads
// from there.
func TestProducerSnapshotAfterReplayOfSealedSegments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, rollConfig())
		for i := range 5 { // seq 5i..5i+4 at offsets 5i..5i+4, 2 batches a segment
			first, _ := mustAppendRaw(t, l, pidBatch(t, 7, 0, int32(5*i), false, workloadRecords(5*i, 5)))
			require.Equal(t, int64(5*i), first)
		}
		require.Equal(t, []int64{0, 10, 20}, segmentBases(l))
		want := l.Producers()
		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, fsy, dir, crash)
		for _, off := range snapshotOffsets(t, fsy, crash) {
			require.NoError(t, fsy.Remove(filepath.Join(crash, producerstate.SnapshotName(off))))
		}

		c := openTestLog(t, fsy, crash, rollConfig())
		require.Equal(t, want, c.Producers())
		require.Equal(t, []int64{25}, snapshotOffsets(t, fsy, crash), "written after the replay of sealed segments")
		entries := readSnapshotFile(t, fsy, crash, 25)
		require.Len(t, entries, 1)
		require.Equal(t, int32(24), entries[0].Batches[len(entries[0].Batches)-1].LastSeq)
	})
}

// rollConfig is baseConfig with segments of two 5-record workload batches.
func rollConfig() LogConfig {
	cfg := baseConfig()
	cfg.SegmentBytes = 2048
	return cfg
}

// TestProducerSnapshotsAtRollTruncateRetention: a snapshot is written at every roll, named by the
// new segment's base offset and holding the state below it; TruncateTo drops the snapshots past
// the new end and reloads the state, so a batch the truncation cut is appended again with its
// sequence; retention drops the snapshots below the new log start offset.
func TestProducerSnapshotsAtRollTruncateRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := rollConfig()
		cfg.RetentionDuration = time.Hour
		l := openTestLog(t, fsy, dir, cfg)
		var batches [][]byte
		for i := range 8 { // seq 5i..5i+4 at offsets 5i..5i+4, 2 batches a segment
			recs := workloadRecords(5*i, 5)
			if i < 4 {
				for _, r := range recs {
					r.Timestamp = testEpoch.Add(-3 * time.Hour)
				}
			}
			b := pidBatch(t, 7, 0, int32(5*i), false, recs)
			first, _ := mustAppendRaw(t, l, b)
			require.Equal(t, int64(5*i), first)
			batches = append(batches, b)
		}
		require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
		require.Equal(t, []int64{10, 20, 30}, snapshotOffsets(t, fsy, dir), "one at each roll")
		for _, base := range []int64{10, 20, 30} {
			entries := readSnapshotFile(t, fsy, dir, base)
			require.Len(t, entries, 1)
			require.Equal(t, []producerstate.BatchMetadata{{FirstSeq: int32(base - 5), LastSeq: int32(base - 1),
				FirstOffset: base - 5, LastOffset: base - 1, Timestamp: entries[0].LastTimestamp}}, entries[0].Batches, "snapshot %d", base)
		}

		// Cut batches 5 (25-29) to 7: the snapshot at 30 goes, the state is read from the one at
		// 20 with 20-24 replayed, and written at the new end.
		require.NoError(t, l.TruncateTo(25))
		require.Equal(t, int64(25), l.LogEndOffset())
		require.Equal(t, []int64{10, 20, 25}, snapshotOffsets(t, fsy, dir))
		require.Equal(t, int32(24), l.Producers()[0].LastSequence)
		first, last := mustAppendRaw(t, l, batches[4])
		require.Equal(t, [2]int64{20, 24}, [2]int64{first, last}, "a retry of the last batch kept")
		first, last = mustAppendRaw(t, l, batches[5])
		require.Equal(t, [2]int64{25, 29}, [2]int64{first, last}, "the cut batch appended again")
		require.Equal(t, int64(30), l.LogEndOffset())

		// Segments 0 and 10 hold records 3 hours old; retention of 1 hour deletes them.
		n, err := l.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, int64(20), l.LogStartOffset())
		require.Equal(t, []int64{20, 25}, snapshotOffsets(t, fsy, dir))
		first, last = mustAppendRaw(t, l, batches[5])
		require.Equal(t, [2]int64{25, 29}, [2]int64{first, last})
	})
}

// TestRetentionStopsAtOpenTransaction: retention deletes no segment holding or following the
// first offset of an open transaction, whatever the time, and does once the transaction is
// committed.
func TestRetentionStopsAtOpenTransaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, rollConfig())
		appendBatches(t, l, 3, 5) // 0-14: segments 0, 10
		first, _ := mustAppendRaw(t, l, pidBatch(t, 5, 0, 0, true, workloadRecords(15, 5)))
		require.Equal(t, int64(15), first)
		appendBatches(t, l, 4, 5) // 20-39
		require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
		require.Equal(t, int64(15), l.LastStableOffset())

		farFuture := testEpoch.Add(10 * 365 * 24 * time.Hour)
		n, err := l.ApplyRetentionAt(farFuture)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only segment 0 lies wholly below offset 15")
		require.Equal(t, int64(10), l.LogStartOffset())
		n, err = l.ApplyRetentionAt(farFuture)
		require.NoError(t, err)
		require.Equal(t, 0, n)
		require.Equal(t, []int64{10, 20, 30}, segmentBases(l))

		off, err := l.AppendMarker(ctx, 5, 0, true, 0)
		require.NoError(t, err)
		require.Equal(t, int64(40), off)
		require.Equal(t, int64(41), l.LastStableOffset())
		n, err = l.ApplyRetentionAt(farFuture)
		require.NoError(t, err)
		require.Equal(t, 3, n, "every segment, the active one after a roll")
		require.Equal(t, int64(41), l.LogStartOffset())
		require.Equal(t, []int64{41}, segmentBases(l))
		require.Equal(t, []int64{41}, snapshotOffsets(t, fsy, dir), "the roll's snapshot; those below went")
	})
}
