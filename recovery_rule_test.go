package commitlog

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestRecoveryRule: truncation at open happens only for a torn tail in the unflushed region
// (after an unclean shutdown, from a bad batch whose first offset is at or past the recovery
// point; in a folder without state, as from a Kafka broker, the recovery point counts as the last
// segment's base offset). After a clean shutdown, and below the recovery point, every bad byte
// stays where it is: a batch with a bad CRC is walked over, a broken framing makes the rest of
// its segment unreadable but kept, and the log goes on in a new segment.
//
// The log: segments [0,30) and [30,60), three batches of 10 records of size b each; the damage
// is in the active segment (base 30), whose batches are at positions 0, b and 2b.
func TestRecoveryRule(t *testing.T) {
	type outcome struct {
		size        func(b int64) int64 // of the damaged .log after the reopen
		leo         int64
		bases       []int64
		corruptFrom int64               // first offset that reads as ErrCorrupt (-1: none)
		corruptTo   int64               // offsets [corruptFrom, corruptTo) read as ErrCorrupt
		corruptPos  func(b int64) int64 // the position named by their errors
		logged      string              // message of the log record saying what recovery did
	}
	damages := []struct {
		name   string
		damage func(t *testing.T, fsy fsys.FS, log string, b int64)
		keep   outcome // after a clean shutdown, or below the recovery point
		cut    outcome // past the recovery point of an unclean shutdown, or without state
	}{
		{
			name: "CRC flip in the first batch of the active segment",
			damage: func(t *testing.T, fsy fsys.FS, log string, b int64) {
				flipByte(t, fsy, log, 17)
			},
			keep: outcome{size: func(b int64) int64 { return 3 * b }, leo: 60, bases: []int64{0, 30},
				corruptFrom: 30, corruptTo: 40, corruptPos: func(int64) int64 { return 0 },
				logged: "corrupt batch left in place; reads of it return ErrCorrupt"},
			cut: outcome{size: func(int64) int64 { return 0 }, leo: 30, bases: []int64{0, 30},
				corruptFrom: -1, logged: "truncating a torn tail written after the recovery point of an unclean shutdown"},
		},
		{
			name: "CRC flip in a middle batch",
			damage: func(t *testing.T, fsy fsys.FS, log string, b int64) {
				flipByte(t, fsy, log, b+17)
			},
			keep: outcome{size: func(b int64) int64 { return 3 * b }, leo: 60, bases: []int64{0, 30},
				corruptFrom: 40, corruptTo: 50, corruptPos: func(b int64) int64 { return b },
				logged: "corrupt batch left in place; reads of it return ErrCorrupt"},
			cut: outcome{size: func(b int64) int64 { return b }, leo: 40, bases: []int64{0, 30},
				corruptFrom: -1, logged: "truncating a torn tail written after the recovery point of an unclean shutdown"},
		},
		{
			name: "broken length field of a middle batch",
			damage: func(t *testing.T, fsy fsys.FS, log string, b int64) {
				seg := fsReadFile(t, fsy, log)
				fsPatch(t, fsy, log, b+8, []byte{seg[b+8] ^ 0x80})
			},
			keep: outcome{size: func(b int64) int64 { return 3 * b }, leo: 60, bases: []int64{0, 30, 60},
				corruptFrom: 40, corruptTo: 60, corruptPos: func(b int64) int64 { return b },
				logged: "unreadable batch left in place; the rest of the segment reads as ErrCorrupt"},
			cut: outcome{size: func(b int64) int64 { return b }, leo: 40, bases: []int64{0, 30},
				corruptFrom: -1, logged: "truncating a torn tail written after the recovery point of an unclean shutdown"},
		},
		{
			name: "torn last batch",
			damage: func(t *testing.T, fsy fsys.FS, log string, b int64) {
				fsTruncate(t, fsy, log, 2*b+b/2)
			},
			keep: outcome{size: func(b int64) int64 { return 2*b + b/2 }, leo: 60, bases: []int64{0, 30, 60},
				corruptFrom: 50, corruptTo: 60, corruptPos: func(b int64) int64 { return 2 * b },
				logged: "unreadable batch left in place; the rest of the segment reads as ErrCorrupt"},
			cut: outcome{size: func(b int64) int64 { return 2 * b }, leo: 50, bases: []int64{0, 30},
				corruptFrom: -1, logged: "truncating a torn tail written after the recovery point of an unclean shutdown"},
		},
	}
	// How the log was left. Each returns the folder to reopen.
	states := []struct {
		name string
		cut  bool
		set  func(t *testing.T, fsy fsys.FS, l *Log, dir string) string
	}{
		{"clean close", false, func(t *testing.T, fsy fsys.FS, l *Log, dir string) string {
			require.NoError(t, l.Close())
			st := readTestState(t, fsy, dir)
			require.Equal(t, logState{recoveryPoint: 60, clean: true}, st)
			return dir
		}},
		{"unclean, damage below the recovery point", false, func(t *testing.T, fsy fsys.FS, l *Log, dir string) string {
			crash := filepath.Join(t.TempDir(), "crash")
			crashCopy(t, fsy, dir, crash)
			require.NoError(t, l.Close())
			writeTestState(t, fsy, crash, logState{recoveryPoint: 60})
			return crash
		}},
		{"unclean, damage past the recovery point", true, func(t *testing.T, fsy fsys.FS, l *Log, dir string) string {
			crash := filepath.Join(t.TempDir(), "crash")
			crashCopy(t, fsy, dir, crash)
			require.NoError(t, l.Close())
			// The roll to segment 30 checkpointed its base offset as the recovery point.
			require.Equal(t, logState{recoveryPoint: 30}, readTestState(t, fsy, crash))
			return crash
		}},
		{"folder from a Kafka broker, without state", true, func(t *testing.T, fsy fsys.FS, l *Log, dir string) string {
			require.NoError(t, l.Close())
			require.NoError(t, fsy.Remove(filepath.Join(dir, stateFileName)))
			return dir
		}},
	}
	for _, d := range damages {
		for _, st := range states {
			t.Run(d.name+", "+st.name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					want := d.keep
					if st.cut {
						want = d.cut
					}
					cfg, recs, b := twoSegmentLogOpen(t, fsy, t.TempDir())
					dir := st.set(t, fsy, recs.log, recs.dir)
					logFile := segPath(dir, 30, logSuffix)
					d.damage(t, fsy, logFile, b)

					var logs lockedBuffer
					l := openTestLog(t, fsy, dir, cfg, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
					size, pos := want.size(b), int64(-1)
					if want.corruptPos != nil {
						pos = want.corruptPos(b)
					}
					require.Equal(t, size, fsFileSize(t, fsy, logFile))
					require.Equal(t, want.leo, l.LogEndOffset())
					require.Equal(t, want.bases, segmentBases(l))
					requireRecoveredReads(t, l, recs.want, want.leo, logFile, want.corruptFrom, want.corruptTo, pos)
					level := "ERROR"
					if st.cut {
						level = "WARN"
					}
					requireLogged(t, &logs, level, want.logged)

					// A later append lands at the log end offset, and a second reopen changes
					// nothing of what the first kept.
					more := workloadRecords(int(want.leo), 1)
					require.NoError(t, l.Append(context.Background(), more...))
					require.Equal(t, want.leo, more[0].Offset)
					appended, err := l.ReadBatches(nil, want.leo, math.MaxInt32)
					require.NoError(t, err)
					require.NoError(t, l.Close())
					if len(want.bases) == 2 && size+int64(len(appended)) <= cfg.SegmentBytes {
						size += int64(len(appended)) // the append went into the damaged segment
					}
					all := append(recs.want[:want.leo:want.leo], withOffsets(workloadRecords(int(want.leo), 1), want.leo)...)
					l = openTestLog(t, fsy, dir, cfg)
					require.Equal(t, size, fsFileSize(t, fsy, logFile))
					require.Equal(t, want.leo+1, l.LogEndOffset())
					requireRecoveredReads(t, l, all, want.leo+1, logFile, want.corruptFrom, want.corruptTo, pos)
				})
			})
		}
	}
}

// openLogRecords is an open log and the records appended to it.
type openLogRecords struct {
	log  *Log
	dir  string
	want []*Record
}

// twoSegmentLogOpen writes segments [0,30) and [30,60) of three batches of 10 workload records
// each, all of size b, into dir and returns the log still open. No offset index entries are
// written (index.interval.bytes above the segment size), so that a clean open scans the active
// segment from its first batch.
func twoSegmentLogOpen(t *testing.T, fsy fsys.FS, dir string) (LogConfig, openLogRecords, int64) {
	t.Helper()
	probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
	appendBatches(t, probe, 1, 10)
	b := probe.Size()
	require.NoError(t, probe.Close())

	cfg := baseConfig()
	cfg.Sync = SyncAlways
	cfg.SegmentBytes = 3 * b
	cfg.IndexIntervalBytes = 1 << 20
	l := openTestLog(t, fsy, dir, cfg)
	want := appendBatches(t, l, 6, 10)
	require.Equal(t, []int64{0, 30}, segmentBases(l))
	require.Equal(t, 3*b, fsFileSize(t, fsy, segPath(dir, 30, logSuffix)))
	return cfg, openLogRecords{log: l, dir: dir, want: want}, b
}

// flipByte flips the low bit of the byte at pos of name.
func flipByte(t *testing.T, fsy fsys.FS, name string, pos int64) {
	t.Helper()
	seg := fsReadFile(t, fsy, name)
	fsPatch(t, fsy, name, pos, []byte{seg[pos] ^ 0x01})
}

// requireRecoveredReads reads every offset below 60 and leo one record at a time: offsets in
// [corruptFrom, corruptTo) return ErrCorrupt naming file, position pos and the offset; the others
// below leo return want's records; offsets at or past leo (and below 60) are the log end (nothing)
// or out of range.
func requireRecoveredReads(t *testing.T, l *Log, want []*Record, leo int64, file string, corruptFrom, corruptTo, pos int64) {
	t.Helper()
	for off := int64(0); off < max(60, leo); off++ {
		recs, err := l.ReadRecords(off, 1)
		switch {
		case off >= corruptFrom && off < corruptTo:
			require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
			require.Contains(t, err.Error(), file, "offset %d", off)
			require.Contains(t, err.Error(), fmt.Sprintf("position %d (offset %d)", pos, off))
		case off < leo:
			require.NoError(t, err, "offset %d", off)
			require.NotEmpty(t, recs, "offset %d", off)
			requireSameRecords(t, want[off:off+int64(len(recs))], recs)
		case off == leo:
			require.NoError(t, err)
			require.Empty(t, recs)
		default:
			require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
		}
	}
}

// requireLogged checks that a log record with message msg was written at level.
func requireLogged(t *testing.T, logs *lockedBuffer, level, msg string) {
	t.Helper()
	for _, r := range logs.records(t) {
		if r["msg"] == msg {
			require.Equal(t, level, r["level"], msg)
			return
		}
	}
	require.Failf(t, "not logged", "no log record %q in %s", msg, logs.buf.String())
}

// TestRecoveryRuleSealedTear: under SyncNever a sealed segment past the recovery point may be torn
// (rolled segments are flushed in the background), and recovery ends the log at its first bad
// batch, deleting the later segments, but only from a first offset at or past the recovery
// point: below it the bytes were flushed, and a bad batch there is corruption, kept.
//
// Segments [0,30) [30,60) [60,90) of batches of 10 records (size b); the recovery point is 45,
// inside the batch [40,50) at position b of segment 30.
func TestRecoveryRuleSealedTear(t *testing.T) {
	tests := []struct {
		name  string
		at    func(b int64) int64 // position of the flipped CRC byte in segment 30
		leo   int64
		bases []int64
		size  func(b int64) int64 // of segment 30 after the reopen
		bad   [2]int64            // offsets that read as ErrCorrupt
	}{
		{"bad batch below the recovery point", func(b int64) int64 { return b + 17 }, 90, []int64{0, 30, 60},
			func(b int64) int64 { return 3 * b }, [2]int64{40, 50}},
		{"bad batch past the recovery point", func(b int64) int64 { return 2*b + 17 }, 50, []int64{0, 30},
			func(b int64) int64 { return 2 * b }, [2]int64{-1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				cfg, want, b := threeSegmentLog(t, fsy, dir)
				cfg.Sync = SyncNever
				mid := segPath(dir, 30, logSuffix)
				flipByte(t, fsy, mid, tt.at(b))
				writeTestState(t, fsy, dir, logState{recoveryPoint: 45})

				l := openTestLog(t, fsy, dir, cfg)
				require.Equal(t, tt.leo, l.LogEndOffset())
				require.Equal(t, tt.bases, segmentBases(l))
				require.Equal(t, tt.bases, logFileBases(t, fsy, dir))
				require.Equal(t, tt.size(b), fsFileSize(t, fsy, mid))
				for off := int64(0); off < 90; off++ {
					recs, err := l.ReadRecords(off, 1)
					switch {
					case off >= tt.bad[0] && off < tt.bad[1]:
						require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
						require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset %d)", mid, b, off))
					case off < tt.leo:
						require.NoError(t, err, "offset %d", off)
						requireSameRecords(t, want[off:off+int64(len(recs))], recs)
					case off == tt.leo:
						require.NoError(t, err)
						require.Empty(t, recs)
					default:
						require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
					}
				}
				more := workloadRecords(int(tt.leo), 1)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, tt.leo, more[0].Offset)
			})
		})
	}
}

// TestRecoveryRuleDamagedBaseOffsetBelowRecoveryPoint: a batch's base offset is not covered by
// its CRC, so a flipped bit there leaves a batch that passes every check but claims offsets far
// past the recovery point. The batch after it, whose header names offsets below the recovery
// point, lies in flushed bytes: after an unclean shutdown it is kept, not cut as a torn tail
// because of the offsets the damaged batch before it claimed.
//
// The log of twoSegmentLogOpen; the crash leaves the recovery point at 60 (everything flushed);
// the base offset of the batch [40,50) at position b of segment 30 becomes 40+2^24.
func TestRecoveryRuleDamagedBaseOffsetBelowRecoveryPoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		root := t.TempDir()
		cfg, recs, b := twoSegmentLogOpen(t, fsy, filepath.Join(root, "log"))
		dir := filepath.Join(root, "crash")
		crashCopy(t, fsy, recs.dir, dir)
		require.NoError(t, recs.log.Close())
		writeTestState(t, fsy, dir, logState{recoveryPoint: 60})
		logFile := segPath(dir, 30, logSuffix)
		flipByte(t, fsy, logFile, b+4) // base offset byte 4: +2^24
		damaged := fsReadFile(t, fsy, logFile)

		var logs lockedBuffer
		l := openTestLog(t, fsy, dir, cfg, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		requireSameBytes(t, damaged, fsReadFile(t, fsy, logFile), "segment 30 after the open")
		claimed := int64(40 + 1<<24)
		require.Equal(t, []int64{0, 30, claimed + 10}, segmentBases(l))
		require.Equal(t, claimed+10, l.LogEndOffset())
		for off := int64(0); off < 40; off++ {
			got, err := l.ReadRecords(off, 1)
			require.NoError(t, err, "offset %d", off)
			requireSameRecords(t, recs.want[off:off+1], got[:1])
		}
		var found bool
		for _, r := range logs.records(t) {
			if r["msg"] == "unreadable batch left in place; the rest of the segment reads as ErrCorrupt" {
				found = true
				require.Equal(t, "ERROR", r["level"])
				require.Equal(t, float64(2*b), r["position"])
				require.Equal(t, float64(50), r["offset"])
			}
			require.NotEqual(t, "truncating a torn tail written after the recovery point of an unclean shutdown", r["msg"])
		}
		require.True(t, found, logs.buf.String())
	})
}

// TestRecoveryRuleCorruptBatchClaimsNoOffsetPastTheNextBatch: a CRC-bad batch walked over keeps
// its offsets below the next valid batch's base offset, whatever its damaged header claims: a
// flipped bit in its last offset delta (covered by the CRC) must not move the log end offset
// past the offsets of the batches after it. The damage is in the first batch [30,40) of the
// active segment 30, whose last offset delta becomes 9+2^24.
func TestRecoveryRuleCorruptBatchClaimsNoOffsetPastTheNextBatch(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				root := t.TempDir()
				cfg, recs, b := twoSegmentLogOpen(t, fsy, filepath.Join(root, "log"))
				dir := recs.dir
				if !clean {
					dir = filepath.Join(root, "crash")
					crashCopy(t, fsy, recs.dir, dir)
				}
				require.NoError(t, recs.log.Close())
				if !clean {
					writeTestState(t, fsy, dir, logState{recoveryPoint: 60})
				}
				logFile := segPath(dir, 30, logSuffix)
				flipByte(t, fsy, logFile, 23) // last offset delta, high byte: +2^24

				l := openTestLog(t, fsy, dir, cfg)
				require.Equal(t, 3*b, fsFileSize(t, fsy, logFile))
				require.Equal(t, []int64{0, 30}, segmentBases(l))
				require.Equal(t, int64(60), l.LogEndOffset())
				more := workloadRecords(60, 1)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, int64(60), more[0].Offset)
				got, err := l.ReadRecords(60, 1)
				require.NoError(t, err)
				requireSameRecords(t, withOffsets(workloadRecords(60, 1), 60), got)
				_, err = l.ReadRecords(30, 1)
				require.ErrorIs(t, err, ErrCorrupt)
			})
		})
	}
}

// TestRecoveryRuleBatchesAfterACorruptBatchStayReadable: the batches after a batch walked over
// at open (framing whole, contents bad) read back, whatever field covered by the CRC the damage
// hit: the CRC itself, or the last offset delta (which a read would otherwise take for the
// batch's range, and answer ErrCorrupt for the offsets of the batches after it). The damage is in
// the first batch [30,40) of the active segment 30 after a clean close; offsets 30-39 read as
// ErrCorrupt at position 0, and 40-59 read back, at the open, after an append, a clean reopen and
// a crash.
func TestRecoveryRuleBatchesAfterACorruptBatchStayReadable(t *testing.T) {
	damages := []struct {
		name string
		pos  int64 // of the byte whose low bit is flipped, in the first batch of segment 30
	}{
		{"CRC", 17},
		{"last offset delta", 23},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				root := t.TempDir()
				cfg, recs, b := twoSegmentLogOpen(t, fsy, filepath.Join(root, "log"))
				require.NoError(t, recs.log.Close())
				logFile := segPath(recs.dir, 30, logSuffix)
				flipByte(t, fsy, logFile, d.pos)

				l := openTestLog(t, fsy, recs.dir, cfg)
				require.Equal(t, 3*b, fsFileSize(t, fsy, logFile))
				require.Equal(t, []int64{0, 30}, segmentBases(l))
				require.Equal(t, int64(60), l.LogEndOffset())
				requireRecoveredReads(t, l, recs.want, 60, logFile, 30, 40, 0)

				more := workloadRecords(60, 1)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, int64(60), more[0].Offset)
				all := append(recs.want[:60:60], withOffsets(workloadRecords(60, 1), 60)...)
				requireRecoveredReads(t, l, all, 61, logFile, 30, 40, 0)
				crash := filepath.Join(root, "crash")
				crashCopy(t, fsy, recs.dir, crash)
				require.NoError(t, l.Close())

				for _, dir := range []string{recs.dir, crash} {
					l := openTestLog(t, fsy, dir, cfg)
					require.Equal(t, int64(61), l.LogEndOffset(), dir)
					// The append rolled: segment 30 was full.
					require.Equal(t, []int64{0, 30, 60}, segmentBases(l), dir)
					requireRecoveredReads(t, l, all, 61, segPath(dir, 30, logSuffix), 30, 40, 0)
					require.NoError(t, l.Close())
				}
			})
		})
	}
}

// TestOpenLogsOffsetsMissingBelowTheRecoveryPoint: a log that ends below its checkpointed
// recovery point lost flushed offsets (a segment file is gone): the open says so at Error, with
// the offsets, before the new state checkpoint replaces the evidence. The last segment [60,90) of
// threeSegmentLog is removed after its clean close (recovery point 90).
func TestOpenLogsOffsetsMissingBelowTheRecoveryPoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg, _, _ := threeSegmentLog(t, fsy, dir)
		require.Equal(t, logState{recoveryPoint: 90, clean: true}, readTestState(t, fsy, dir))
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			require.NoError(t, fsy.Remove(segPath(dir, 60, suf)))
		}
		var logs lockedBuffer
		l := openTestLog(t, fsy, dir, cfg, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		require.Equal(t, int64(60), l.LogEndOffset())
		msg := "the log ends below its recovery point: flushed offsets are in no segment (a segment file is missing, or a TruncateTo stopped before its checkpoint)"
		requireLogged(t, &logs, "ERROR", msg)
		for _, r := range logs.records(t) {
			if r["msg"] == msg {
				require.Equal(t, float64(60), r["log_end_offset"])
				require.Equal(t, float64(90), r["recovery_point"])
			}
		}
	})
}

// TestOffsetForTimeOverACorruptBatchNamesItsOffset: OffsetForTime reaching a corrupt batch kept
// in place returns ErrCorrupt naming the batch's file, position and first offset, as a read of it
// does, not the offset the search started from. threeSegmentLog, records at testEpoch + offset
// ms; the CRC of the batch [40,50) at position b of segment 30 is flipped after the clean close.
func TestOffsetForTimeOverACorruptBatchNamesItsOffset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg, _, b := threeSegmentLog(t, fsy, dir)
		logFile := segPath(dir, 30, logSuffix)
		flipByte(t, fsy, logFile, b+17)
		l := openTestLog(t, fsy, dir, cfg)
		_, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + 45))
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset 40)", logFile, b))
	})
}
