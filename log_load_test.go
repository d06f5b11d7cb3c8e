package commitlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// How the recovery tests model a crash: crashCopy takes the files of a log while it is open, as
// a process kill leaves them (and, under SyncAlways, as a power loss leaves every acknowledged
// append): the data of every acknowledged append, the active segment's indexes preallocated with
// their entries so far, and a state file saying the log was not closed cleanly, which the log
// writes on open before its first append. Closing the log and then editing the state file would
// not do: Close trims the indexes and flushes everything, a state no crash produces.

func TestTornTail(t *testing.T) {
	// Three batches of 10 workload records, all the same size B; the third, at [2B, 3B), is
	// damaged in the crash image.
	tests := []struct {
		name   string
		damage func(t *testing.T, fsy fsys.FS, log string, b int64)
		leo    int64
		size   func(b int64) int64 // of the .log after recovery
	}{
		{"cut inside the third batch's header", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsTruncate(t, fsy, log, 2*b+30)
		}, 20, func(b int64) int64 { return 2 * b }},
		{"cut right after the third batch's length field", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsTruncate(t, fsy, log, 2*b+12)
		}, 20, func(b int64) int64 { return 2 * b }},
		{"cut inside the third batch's records", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsTruncate(t, fsy, log, 2*b+recordbatch.HeaderSize+(b-recordbatch.HeaderSize)/2)
		}, 20, func(b int64) int64 { return 2 * b }},
		{"the third batch one byte short", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsTruncate(t, fsy, log, 3*b-1)
		}, 20, func(b int64) int64 { return 2 * b }},
		{"the third batch's record bytes zeroed", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsPatch(t, fsy, log, 2*b+recordbatch.HeaderSize, make([]byte, b-recordbatch.HeaderSize))
		}, 20, func(b int64) int64 { return 2 * b }},
		{"whole, followed by 4096 zero bytes", func(t *testing.T, fsy fsys.FS, log string, b int64) {
			fsPatch(t, fsy, log, 3*b, make([]byte, 4096))
		}, 30, func(b int64) int64 { return 3 * b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				cfg := baseConfig()
				cfg.Sync = SyncAlways
				cfg.IndexIntervalBytes = 1000 // entries for the second and the third batch
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, cfg)
				want := appendBatches(t, l, 3, 10)
				before, err := l.ReadBatches(nil, 0, math.MaxInt32)
				require.NoError(t, err)
				hs := batchHeaders(t, before)
				require.Len(t, hs, 3)
				b := int64(hs[0].Size())
				require.Equal(t, 3*b, int64(len(before)))

				crash := filepath.Join(t.TempDir(), "crash")
				crashCopy(t, fsy, dir, crash)
				require.NoError(t, l.Close())

				// The crash image holds an index entry for the third batch, and a state that
				// is not clean.
				require.False(t, readTestState(t, fsy, crash).clean)
				idx := fsReadFile(t, fsy, segPath(crash, 0, indexSuffix))
				// A writable index starts at one page (4 KiB) and doubles up to
				// segment.index.bytes as entries need it; two entries fit the first page.
				require.Equal(t, int64(4096), int64(len(idx)), "the index's first step")
				wantIdx := []uint32{19, uint32(b), 29, uint32(2 * b), 0, 0}
				if strings.HasSuffix(t.Name(), "/os") && !osMappingsLive {
					// The portable build's mappings are copies: the crash copy has no entries yet.
					wantIdx = []uint32{0, 0, 0, 0, 0, 0}
				}
				require.Equal(t, wantIdx,
					[]uint32{binary.BigEndian.Uint32(idx[0:]), binary.BigEndian.Uint32(idx[4:]),
						binary.BigEndian.Uint32(idx[8:]), binary.BigEndian.Uint32(idx[12:]),
						binary.BigEndian.Uint32(idx[16:]), binary.BigEndian.Uint32(idx[20:])})

				logFile := segPath(crash, 0, logSuffix)
				tt.damage(t, fsy, logFile, b)

				l = openTestLog(t, fsy, crash, cfg)
				size := tt.size(b)
				require.Equal(t, tt.leo, l.LogEndOffset())
				require.Equal(t, size, fsFileSize(t, fsy, logFile), "the torn tail is cut off")
				require.Equal(t, size, l.Size())
				got, err := l.ReadBatches(nil, 0, math.MaxInt32)
				require.NoError(t, err)
				requireSameBytes(t, before[:size], got)
				requireSameRecords(t, want[:tt.leo], readAllRecords(t, l))
				requireIndexesWithin(t, l)
				_, err = l.ReadBatches(nil, tt.leo+1, 1<<20)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)

				more := workloadRecords(100, 10)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, tt.leo, more[0].Offset)
				want = append(want[:tt.leo:tt.leo], withOffsets(workloadRecords(100, 10), tt.leo)...)
				require.NoError(t, l.Close())

				l = openTestLog(t, fsy, crash, cfg)
				require.Equal(t, tt.leo+10, l.LogEndOffset())
				require.Equal(t, size+b, fsFileSize(t, fsy, logFile))
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
			})
		})
	}
}

func TestIndexAheadOfData(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.IndexIntervalBytes = 1 // an index entry for every batch but the first
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg)
		want := appendBatches(t, l, 50, 1)
		b := l.Size() / 50
		require.Equal(t, 50*b, l.Size(), "single-record batches of one size")
		require.NoError(t, l.Close())
		require.Equal(t, int64(49*index.OffsetEntrySize), fsFileSize(t, fsy, segPath(dir, 0, indexSuffix)))

		fsTruncate(t, fsy, segPath(dir, 0, logSuffix), 40*b)
		l = openTestLog(t, fsy, dir, cfg)
		require.Equal(t, int64(40), l.LogEndOffset())
		requireIndexesWithin(t, l)
		for _, off := range []int64{41, 45, 49, 50} {
			_, err := l.ReadBatches(nil, off, 1<<20)
			require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
		}
		out, err := l.ReadBatches(nil, 40, 1<<20)
		require.NoError(t, err)
		require.Empty(t, out)
		requireSameRecords(t, want[:40], readAllRecords(t, l))
		ts, err := l.OffsetForTime(want[45].Timestamp)
		require.ErrorIs(t, err, ErrNoOffsetForTime, "no record that recent")
		require.Equal(t, int64(-1), ts)

		more := workloadRecords(200, 1)
		require.NoError(t, l.Append(context.Background(), more...))
		require.Equal(t, int64(40), more[0].Offset)
		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, cfg)
		require.Equal(t, int64(41), l.LogEndOffset())
		requireSameRecords(t, append(want[:40:40], withOffsets(more, 40)...), readAllRecords(t, l))
	})
}

// indexDamage rewrites an index file's bytes; nil result means delete the file.
type indexDamage struct {
	name string
	fn   func(b []byte, logSize int64) []byte
}

func offsetIndexDamages() []indexDamage {
	return []indexDamage{
		{"random bytes", randomBytes},
		{"3 extra bytes", func(b []byte, _ int64) []byte { return append(b, 1, 2, 3) }},
		{"two entries swapped", func(b []byte, _ int64) []byte { return swapEntries(b, index.OffsetEntrySize) }},
		{"a position past the file", func(b []byte, logSize int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-4:], uint32(logSize+100))
			return b
		}},
		{"relative offset 0xFFFFFFFF", func(b []byte, _ int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-8:], 0xFFFFFFFF)
			return b
		}},
		{"empty file", func([]byte, int64) []byte { return []byte{} }},
		{"deleted file", func([]byte, int64) []byte { return nil }},
	}
}

func timeIndexDamages() []indexDamage {
	return []indexDamage{
		{"random bytes", randomBytes},
		{"3 extra bytes", func(b []byte, _ int64) []byte { return append(b, 1, 2, 3) }},
		{"two entries swapped", func(b []byte, _ int64) []byte { return swapEntries(b, index.TimeEntrySize) }},
		{"falling timestamps", func(b []byte, _ int64) []byte {
			first := binary.BigEndian.Uint64(b)
			binary.BigEndian.PutUint64(b[len(b)-12:], first-1)
			return b
		}},
		{"relative offset 0xFFFFFFFF", func(b []byte, _ int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-4:], 0xFFFFFFFF)
			return b
		}},
		{"empty file", func([]byte, int64) []byte { return []byte{} }},
		{"deleted file", func([]byte, int64) []byte { return nil }},
	}
}

func randomBytes(b []byte, _ int64) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func swapEntries(b []byte, size int) []byte {
	e0 := bytes.Clone(b[:size])
	copy(b[:size], b[size:2*size])
	copy(b[size:2*size], e0)
	return b
}

// readAnswers are what a log answers to reads at every offset and time lookups at every
// timestamp from lo to hi.
type readAnswers struct {
	first, all [][]byte
	times      []int64
}

func collectAnswers(t *testing.T, l *Log, lo, hi int64) readAnswers {
	t.Helper()
	var a readAnswers
	for off := l.LogStartOffset(); off <= l.LogEndOffset(); off++ {
		b, err := l.ReadBatches(nil, off, 1)
		require.NoError(t, err, "offset %d", off)
		a.first = append(a.first, b)
		b, err = l.ReadBatches(nil, off, 1<<20)
		require.NoError(t, err, "offset %d", off)
		a.all = append(a.all, b)
	}
	for ts := lo; ts <= hi; ts++ {
		off, err := l.OffsetForTime(time.UnixMilli(ts))
		if off < 0 {
			require.ErrorIs(t, err, ErrNoOffsetForTime, "time %d", ts)
		} else {
			require.NoError(t, err, "time %d", ts)
		}
		a.times = append(a.times, off)
	}
	return a
}

func requireSameAnswers(t *testing.T, want, got readAnswers, lo int64) {
	t.Helper()
	require.Len(t, got.first, len(want.first))
	for off := range want.first {
		requireSameBytes(t, want.first[off], got.first[off], "first batch at offset ", off)
		requireSameBytes(t, want.all[off], got.all[off], "batches at offset ", off)
	}
	require.Len(t, got.times, len(want.times))
	for i := range want.times {
		require.Equal(t, want.times[i], got.times[i], "offset for time %d", lo+int64(i))
	}
}

func TestCorruptIndexesChangeNoAnswer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		// Single-record batches of the workload, all of one size b; 12 to a segment.
		probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, probe, 1, 1)
		b := probe.Size()
		require.NoError(t, probe.Close())
		cfg := baseConfig()
		cfg.SegmentBytes = 12 * b
		cfg.IndexIntervalBytes = 1
		pristine := t.TempDir()
		l := openTestLog(t, fsy, pristine, cfg)
		// Timestamps rise, with ties, except in the last batch of each segment, which goes
		// back in time: a segment's largest timestamp is not in its last batch.
		var ts []int64
		for k := range 44 {
			m := int64(10 * k)
			switch {
			case k%12 == 11 || k == 43:
				m -= 200
			case k%5 == 2:
				m -= 10 // the same as the batch before
			}
			r := workloadRecord(k)
			r.Timestamp = testEpoch.Add(time.Duration(m) * time.Millisecond)
			require.NoError(t, l.Append(context.Background(), r))
			ts = append(ts, m)
		}
		bases := segmentBases(l)
		require.Equal(t, []int64{0, 12, 24, 36}, bases)
		require.NoError(t, l.Close())

		l = openTestLog(t, fsy, pristine, cfg)
		lo, hi := testEpoch.UnixMilli()-202, testEpoch.UnixMilli()+432
		want := collectAnswers(t, l, lo, hi)
		for i, off := range want.times {
			require.Equal(t, bruteForceOffsetForTime(ts, int64(i)-202), off)
		}
		// The precondition of the empty and deleted time index cases: the last batch of the
		// sealed and of the active segment does not hold its segment's largest timestamp.
		type segInfo struct {
			base, offsetOfMax, last    int64
			offsetEntries, timeEntries int
		}
		var infos []segInfo
		l.mu.RLock()
		for _, s := range []*segment.Segment{l.segments[0], l.active()} {
			st := s.State()
			infos = append(infos, segInfo{s.BaseOffset(), st.OffsetOfMaxTimestamp, s.NextOffset() - 1,
				len(st.OffsetEntries), len(st.TimeEntries)})
		}
		l.mu.RUnlock()
		for _, in := range infos {
			require.Less(t, in.offsetOfMax, in.last, "segment %d", in.base)
			require.Greater(t, in.offsetEntries, 2, "segment %d", in.base)
			require.Greater(t, in.timeEntries, 2, "segment %d", in.base)
		}
		require.NoError(t, l.Close())

		targets := []struct {
			name string
			base int64
		}{{"sealed", bases[0]}, {"active", bases[len(bases)-1]}}
		for _, target := range targets {
			for _, kind := range []struct {
				suffix  string
				damages []indexDamage
			}{{indexSuffix, offsetIndexDamages()}, {timeIndexSuffix, timeIndexDamages()}} {
				for _, d := range kind.damages {
					t.Run(fmt.Sprintf("%s %s %s", target.name, kind.suffix, d.name), func(t *testing.T) {
						dir := filepath.Join(t.TempDir(), "log")
						crashCopy(t, fsy, pristine, dir) // the pristine log is closed: a copy
						file := segPath(dir, target.base, kind.suffix)
						logSize := fsFileSize(t, fsy, segPath(dir, target.base, logSuffix))
						if b := d.fn(fsReadFile(t, fsy, file), logSize); b == nil {
							require.NoError(t, fsy.Remove(file))
						} else {
							fsWriteFile(t, fsy, file, b)
						}

						l := openTestLog(t, fsy, dir, cfg)
						requireSameAnswers(t, want, collectAnswers(t, l, lo, hi), lo)
						requireIndexesWithin(t, l)
						require.NoError(t, l.Close())
						// The indexes written back are whole again.
						l = openTestLog(t, fsy, dir, cfg)
						requireSameAnswers(t, want, collectAnswers(t, l, lo, hi), lo)
						requireIndexesWithin(t, l)
					})
				}
			}
		}
	})
}

// threeSegmentLog writes segments [0,30) [30,60) [60,90) of three batches of 10 workload records
// each, all of size b, closes the log and returns its records and b.
func threeSegmentLog(t *testing.T, fsy fsys.FS, dir string) (LogConfig, []*Record, int64) {
	t.Helper()
	probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
	appendBatches(t, probe, 1, 10)
	b := probe.Size()
	require.NoError(t, probe.Close())

	cfg := baseConfig()
	cfg.SegmentBytes = 3 * b
	cfg.IndexIntervalBytes = 1000
	l := openTestLog(t, fsy, dir, cfg)
	want := appendBatches(t, l, 9, 10)
	require.Equal(t, []int64{0, 30, 60}, segmentBases(l))
	require.NoError(t, l.Close())
	return cfg, want, b
}

func TestBitFlipInSealedSegment(t *testing.T) {
	// The flip is in the second batch (offsets 40-49, at position b) of the middle segment.
	flips := []struct {
		name string
		at   func(t *testing.T, seg []byte, b int64) int64 // position of the byte, in the segment
		bit  byte
	}{
		{"a value byte of a record", func(t *testing.T, seg []byte, b int64) int64 {
			i := bytes.Index(seg, workloadRecord(45).Value)
			require.Greater(t, int64(i), b)
			require.Less(t, int64(i), 2*b)
			return int64(i) + 50
		}, 0x04},
		{"the high bit of the length field", func(t *testing.T, seg []byte, b int64) int64 { return b + 8 }, 0x80},
		{"a length bit making the batch run past the file", func(t *testing.T, seg []byte, b int64) int64 { return b + 9 }, 0x10},
		{"a length bit making the batch shorter", func(t *testing.T, seg []byte, b int64) int64 { return b + 10 }, 0x02},
		{"the magic byte", func(t *testing.T, seg []byte, b int64) int64 { return b + 16 }, 0x01},
	}
	// How the log was left: closed cleanly (nothing is scanned), or crashed with every segment
	// to scan, or without a state file (a folder from a Kafka broker: the last segment is
	// scanned).
	states := []struct {
		name string
		set  func(t *testing.T, fsy fsys.FS, dir string)
	}{
		{"clean", func(*testing.T, fsys.FS, string) {}},
		{"unclean, recovery point 0", func(t *testing.T, fsy fsys.FS, dir string) {
			writeTestState(t, fsy, dir, logState{recoveryPoint: 0})
		}},
		{"no state", func(t *testing.T, fsy fsys.FS, dir string) {
			require.NoError(t, fsy.Remove(filepath.Join(dir, stateFileName)))
		}},
	}
	for _, flip := range flips {
		for _, st := range states {
			t.Run(flip.name+", "+st.name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					dir := t.TempDir()
					cfg, want, b := threeSegmentLog(t, fsy, dir)
					mid := segPath(dir, 30, logSuffix)
					seg := fsReadFile(t, fsy, mid)
					pos := flip.at(t, seg, b)
					fsPatch(t, fsy, mid, pos, []byte{seg[pos] ^ flip.bit})
					st.set(t, fsy, dir)

					l := openTestLog(t, fsy, dir, cfg)
					require.Equal(t, int64(90), l.LogEndOffset())
					require.Equal(t, []int64{0, 30, 60}, segmentBases(l))
					require.Equal(t, 3*b, fsFileSize(t, fsy, mid), "a sealed segment is never cut")
					for off := int64(0); off < 90; off++ {
						recs, err := l.ReadRecords(off, 1)
						if off >= 40 && off < 50 {
							require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
							require.Contains(t, err.Error(), mid)
							require.Contains(t, err.Error(), fmt.Sprintf("position %d (offset %d)", b, off))
							continue
						}
						if err != nil && off >= 50 && off < 60 {
							// Past a broken length, a batch of the same segment may only be
							// reachable by walking over the broken one: then it is ErrCorrupt,
							// never wrong records.
							require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
							require.NotContains(t, flip.name, "value", "a value flip leaves the framing whole")
							continue
						}
						require.NoError(t, err, "offset %d", off)
						require.NotEmpty(t, recs)
						requireSameRecords(t, want[off:off+int64(len(recs))], recs)
					}
					for _, off := range []int64{5, 29} {
						got, err := l.OffsetForTime(want[off].Timestamp)
						require.NoError(t, err)
						require.Equal(t, off, got)
					}
					// Times past the middle segment: after a clean close its time index says
					// how recent its records are. A recovery scan that stopped at the bad batch
					// knows nothing of the records from it on, which may be the answer, and the
					// search has to walk over them: it can when the framing is whole, and
					// otherwise reports the batch it cannot read.
					for _, off := range []int64{60, 89} {
						got, err := l.OffsetForTime(want[off].Timestamp)
						if st.name == "unclean, recovery point 0" && flip.bit != 0x04 {
							require.ErrorIs(t, err, ErrCorrupt)
							require.Contains(t, err.Error(), mid)
							continue
						}
						require.NoError(t, err)
						require.Equal(t, off, got)
					}
					// The first record at or after the time of offset 45 is in the bad batch.
					_, err := l.OffsetForTime(want[45].Timestamp)
					require.ErrorIs(t, err, ErrCorrupt)
					if flip.bit == 0x04 { // the value flip: the batches after the bad one are whole
						got, err := l.OffsetForTime(want[55].Timestamp)
						require.NoError(t, err)
						require.Equal(t, int64(55), got)
					}
					recs := workloadRecords(90, 1)
					require.NoError(t, l.Append(context.Background(), recs...))
					require.Equal(t, int64(90), recs[0].Offset)
				})
			})
		}
	}
}

func TestLengthFieldsNeverPanicNorAllocate(t *testing.T) {
	// A length field set to a huge or tiny value: in the last batch of the active segment (after a
	// crash, past the recovery point, a torn tail: cut off on open; after a clean close, kept), or
	// in the middle batch of the first, sealed, segment (corruption: left in place, reads of it
	// fail). Opening and reading allocate little whatever it says.
	lengths := []struct {
		name   string
		length func(fileSize, pos int64) uint32
	}{
		{"0x7FFFFFFF", func(int64, int64) uint32 { return 0x7FFFFFFF }},
		{"0xFFFFFFFF", func(int64, int64) uint32 { return 0xFFFFFFFF }},
		{"0", func(int64, int64) uint32 { return 0 }},
		{"header size - 1", func(int64, int64) uint32 { return recordbatch.HeaderSize - 1 }},
		{"below an empty batch", func(int64, int64) uint32 { return recordbatch.HeaderSize - recordbatch.LogOverhead - 1 }},
		{"file size + 1", func(fileSize, pos int64) uint32 {
			return uint32(fileSize - pos - recordbatch.LogOverhead + 1)
		}},
	}
	places := []struct {
		name    string
		base    int64 // segment
		batch   int64 // batch index in the segment
		unclean bool
	}{
		{"tail", 60, 2, false},
		{"tail after a crash", 60, 2, true},
		{"middle of a sealed segment", 0, 1, false},
		{"middle of a sealed segment after a crash", 0, 1, true},
	}
	for _, ln := range lengths {
		for _, place := range places {
			t.Run(ln.name+" at the "+place.name, func(t *testing.T) {
				forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
					dir := t.TempDir()
					cfg, want, b := threeSegmentLog(t, fsy, dir)
					file := segPath(dir, place.base, logSuffix)
					pos := place.batch * b
					var field [4]byte
					binary.BigEndian.PutUint32(field[:], ln.length(fsFileSize(t, fsy, file), pos))
					fsPatch(t, fsy, file, pos+8, field[:])
					if place.unclean {
						writeTestState(t, fsy, dir, logState{recoveryPoint: 0})
					}
					badFirst := place.base + place.batch*10

					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					l, err := OpenLog(dir, cfg, withFS(fsy), WithClock(fixedClock))
					require.NoError(t, err)
					leo := l.LogEndOffset()
					var readErrs []error
					for off := int64(0); off < leo; off++ {
						_, err := l.ReadBatches(nil, off, 1)
						readErrs = append(readErrs, err)
					}
					_, timeErr := l.OffsetForTime(want[badFirst].Timestamp)
					require.NoError(t, l.Close())
					runtime.ReadMemStats(&after)
					alloc := after.TotalAlloc - before.TotalAlloc
					t.Logf("opening, %d reads and closing allocated %d bytes", leo, alloc)
					require.Less(t, alloc, uint64(4<<20), "bytes allocated opening and reading")

					if place.base == 60 && !place.unclean {
						// After a clean shutdown nothing is cut: the bytes stay, the rest of
						// the segment reads as ErrCorrupt, and the log goes on in a new
						// segment at the log end offset of the Close.
						require.Equal(t, int64(90), leo)
						require.Equal(t, 3*b, fsFileSize(t, fsy, file))
						for off, err := range readErrs {
							if int64(off) >= badFirst {
								require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
								require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset %d)", file, pos, off))
								continue
							}
							require.NoError(t, err, "offset %d", off)
						}
						require.ErrorIs(t, timeErr, ErrCorrupt)
						l = openTestLog(t, fsy, dir, cfg)
						require.Equal(t, []int64{0, 30, 60, 90}, segmentBases(l))
						require.Equal(t, int64(90), l.LogEndOffset())
						return
					}
					if place.base == 60 {
						require.Equal(t, badFirst, leo, "the torn tail is cut")
						require.Equal(t, pos, fsFileSize(t, fsy, file))
						for _, err := range readErrs {
							require.NoError(t, err)
						}
						// The cut took every record that recent.
						require.ErrorIs(t, timeErr, ErrNoOffsetForTime)
						return
					}
					require.Equal(t, int64(90), leo)
					for off, err := range readErrs {
						switch {
						case int64(off) >= badFirst && int64(off) < badFirst+10:
							require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
							require.Contains(t, err.Error(), fmt.Sprintf("%s position %d (offset %d)", file, pos, off))
						case int64(off) >= badFirst+10 && int64(off) < 30:
							// Behind the broken length in the same segment: reachable through
							// the index, or ErrCorrupt.
							if err != nil {
								require.ErrorIs(t, err, ErrCorrupt, "offset %d", off)
							}
						default:
							require.NoError(t, err, "offset %d", off)
						}
					}
					require.ErrorIs(t, timeErr, ErrCorrupt)
					l = openTestLog(t, fsy, dir, cfg)
					recs, err := l.ReadRecords(0, 1<<20)
					require.NoError(t, err)
					requireSameRecords(t, want[:10], recs)
					recs, err = l.ReadRecords(30, 1<<20)
					require.NoError(t, err)
					requireSameRecords(t, want[30:60], recs)
				})
			})
		}
	}
}

func TestCrashAroundRoll(t *testing.T) {
	// The crash image is taken at the first write into a new segment: its files exist (an
	// empty .log, preallocated indexes), the state checkpoint of the roll was written, and no
	// batch is in the segment yet.
	variants := []struct {
		name  string
		alter func(t *testing.T, fsy fsys.FS, dir string)
	}{
		{"as the crash left it", func(*testing.T, fsys.FS, string) {}},
		{"empty index files", func(t *testing.T, fsy fsys.FS, dir string) {
			fsTruncate(t, fsy, segPath(dir, 30, indexSuffix), 0)
			fsTruncate(t, fsy, segPath(dir, 30, timeIndexSuffix), 0)
		}},
		{"no index files", func(t *testing.T, fsy fsys.FS, dir string) {
			require.NoError(t, fsy.Remove(segPath(dir, 30, indexSuffix)))
			require.NoError(t, fsy.Remove(segPath(dir, 30, timeIndexSuffix)))
		}},
		{"state from before the roll", func(t *testing.T, fsy fsys.FS, dir string) {
			writeTestState(t, fsy, dir, logState{recoveryPoint: 0})
		}},
		{"no state", func(t *testing.T, fsy fsys.FS, dir string) {
			require.NoError(t, fsy.Remove(filepath.Join(dir, stateFileName)))
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				probe := openTestLog(t, fsy, t.TempDir(), baseConfig())
				appendBatches(t, probe, 1, 10)
				b := probe.Size()
				require.NoError(t, probe.Close())

				cfg := baseConfig()
				cfg.SegmentBytes = 3 * b
				cfg.IndexIntervalBytes = 1000
				dir := t.TempDir()
				crash := filepath.Join(t.TempDir(), "crash")
				ffs := newFaultyFS(fsy)
				l := openTestLog(t, ffs, dir, cfg)
				want := appendBatches(t, l, 3, 10)
				taken := false
				ffs.mu.Lock()
				ffs.beforeWrite = func(name string, off int64) {
					if !taken && name == segPath(dir, 30, logSuffix) && off == 0 {
						taken = true
						crashCopy(t, fsy, dir, crash)
					}
				}
				ffs.mu.Unlock()
				appendBatches(t, l, 1, 10)
				require.True(t, taken)
				require.NoError(t, l.Close())

				require.Equal(t, []int64{0, 30}, logFileBases(t, fsy, crash))
				require.Equal(t, int64(0), fsFileSize(t, fsy, segPath(crash, 30, logSuffix)))
				require.Equal(t, logState{recoveryPoint: 30}, readTestState(t, fsy, crash))
				v.alter(t, fsy, crash)

				l = openTestLog(t, fsy, crash, cfg)
				require.Equal(t, int64(30), l.LogEndOffset())
				require.Equal(t, []int64{0, 30}, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
				more := workloadRecords(30, 10)
				require.NoError(t, l.Append(context.Background(), more...))
				require.Equal(t, int64(30), more[0].Offset)
				want = append(want, withOffsets(workloadRecords(30, 10), 30)...)
				require.Equal(t, []int64{0, 30}, segmentBases(l))
				require.Equal(t, []int64{0, 30}, logFileBases(t, fsy, crash))
				require.NoError(t, l.Close())

				l = openTestLog(t, fsy, crash, cfg)
				require.Equal(t, int64(40), l.LogEndOffset())
				require.Equal(t, []int64{0, 30}, segmentBases(l))
				requireSameRecords(t, want, readAllRecords(t, l))
			})
		})
	}
}

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

// TestReadBatchesStopsWhereOffsetsGoBack: after a clean shutdown, a batch whose base offset is
// not above the previous batch's last offset (its CRC still valid: the CRC does not cover the base
// offset) is left in place as unreadable, and a read of the batches before it returns them alone,
// never the bad batch after them with offsets below theirs. The last batch of segment 30, [50,60)
// at position 2b, is rewritten to claim base offset 30.
func TestReadBatchesStopsWhereOffsetsGoBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg, recs, b := twoSegmentLogOpen(t, fsy, t.TempDir())
		require.NoError(t, recs.log.Close())
		logFile := segPath(recs.dir, 30, logSuffix)
		fsPatch(t, fsy, logFile, 2*b, binary.BigEndian.AppendUint64(nil, 30))

		l := openTestLog(t, fsy, recs.dir, cfg)
		require.Equal(t, 3*b, fsFileSize(t, fsy, logFile))
		// The active segment's unreadable rest is kept and sealed; the log goes on at the
		// recovery point, 60.
		require.Equal(t, []int64{0, 30, 60}, segmentBases(l))
		require.Equal(t, int64(60), l.LogEndOffset())
		for _, from := range []int64{30, 35, 40} {
			got, err := l.ReadBatches(nil, from, math.MaxInt32)
			require.NoError(t, err, "from %d", from)
			want := fsReadFile(t, fsy, logFile)[:2*b]
			if from >= 40 {
				want = want[b:]
			}
			require.Equal(t, want, got, "from %d", from)
		}
		got, err := l.ReadBatches(nil, 50, math.MaxInt32)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), fmt.Sprintf("position %d (offset 50)", 2*b))
		require.Empty(t, got)
		requireRecoveredReads(t, l, recs.want, 60, logFile, 50, 60, 2*b)

		// A scan yields [30, 50) and ends with the corruption at 50.
		var offsets []int64
		var scanErr error
		for r, err := range l.Scan(30) {
			if err != nil {
				scanErr = err
				break
			}
			offsets = append(offsets, r.Offset)
		}
		require.Equal(t, offsetRange(30, 50), offsets)
		require.ErrorIs(t, scanErr, ErrCorrupt)
		require.Contains(t, scanErr.Error(), fmt.Sprintf("position %d (offset 50)", 2*b))
	})
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
