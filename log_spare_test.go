package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
)

// Tests of the spare segment files (log_spare.go): crash images at every file-system operation
// of a workload that claims spares, truncation, retention and reopening with spares ready, and
// the backends.

// spareNames are the names of the three spare files, in the order a roll claims them.
var spareNames = []string{"next.index.spare", "next.timeindex.spare", "next.log.spare"}

// spareFilesIn returns the spare files present in dir, in spareNames order.
func spareFilesIn(t *testing.T, fsy fsys.FS, dir string) []string {
	t.Helper()
	names := fsListDir(t, fsy, dir)
	var out []string
	for _, n := range spareNames {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// awaitSpares waits until l's flusher has made the spare files, then stops the flusher, so that
// the next roll claims them and nothing makes new ones.
func awaitSpares(t *testing.T, l *Log, fsy fsys.FS) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.spares.mu.Lock()
		defer l.spares.mu.Unlock()
		return l.spares.ready
	}, flushWait, flushTick)
	stopTestFlusher(l)
	require.Equal(t, spareNames, spareFilesIn(t, fsy, l.Dir()))
}

func TestRollClaimsSpareFiles(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNever, SyncInterval(time.Hour)} {
		t.Run(policy.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				l := openTestLog(t, fsy, dir, flushTestConfig(policy))
				want := appendBatches(t, l, 1, 10)
				require.Empty(t, spareFilesIn(t, fsy, dir), "no spares before the first roll")
				want = append(want, appendBatches(t, l, 1, 10)...)
				require.Equal(t, []int64{0, 10}, segmentBases(l))

				awaitSpares(t, l, fsy)
				require.True(t, fsExists(t, fsy, filepath.Join(dir, snapshotSpareName)), "the producer snapshot's spare too")
				var spareLog, spareSnapshot os.FileInfo
				if fsy == fsys.OS() {
					var err error
					spareLog, err = os.Stat(filepath.Join(dir, "next.log.spare"))
					require.NoError(t, err)
					spareSnapshot, err = os.Stat(filepath.Join(dir, snapshotSpareName))
					require.NoError(t, err)
				}
				want = append(want, appendBatches(t, l, 1, 10)...)
				require.Equal(t, []int64{0, 10, 20}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, dir), "the roll to 20 renamed all three")
				require.False(t, fsExists(t, fsy, filepath.Join(dir, snapshotSpareName)), "and wrote its snapshot through the fourth")
				snap, err := producerstate.DecodeSnapshot(fsReadFile(t, fsy, filepath.Join(dir, "00000000000000000020.snapshot")))
				require.NoError(t, err)
				require.Empty(t, snap, "no producer has written to the log")
				if spareLog != nil {
					got, err := os.Stat(filepath.Join(dir, "00000000000000000020.log"))
					require.NoError(t, err)
					require.True(t, os.SameFile(spareLog, got), "segment 20's .log is the spare's file")
					got, err = os.Stat(filepath.Join(dir, "00000000000000000020.snapshot"))
					require.NoError(t, err)
					require.True(t, os.SameFile(spareSnapshot, got), "the roll's snapshot is the spare's file")
				}
				requireSameRecords(t, want, readAllRecords(t, l))
				off, err := l.OffsetForTime(time.UnixMilli(testEpoch.UnixMilli() + 25))
				require.NoError(t, err)
				require.Equal(t, int64(25), off, "the claimed time index serves the new segment")

				require.NoError(t, l.Close())
				l2 := openTestLog(t, fsy, dir, flushTestConfig(policy))
				require.Equal(t, []int64{0, 10, 20}, segmentBases(l2))
				requireSameRecords(t, want, readAllRecords(t, l2))
			})
		})
	}
}

func TestSpareFilesOnlyWithAFlusher(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncAlways))
		appendBatches(t, l, 4, 10)
		require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
		require.Empty(t, spareFilesIn(t, fsy, dir), "SyncAlways rolls create their own files")
	})
}

func TestCloseRemovesSpareFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		appendBatches(t, l, 2, 10)
		awaitSpares(t, l, fsy)
		require.NoError(t, l.Close())
		require.Empty(t, spareFilesIn(t, fsy, dir))
		require.Equal(t, []int64{0, 10}, logFileBases(t, fsy, dir))
	})
}

func TestOpenRemovesLeftoverSpareFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		want := appendBatches(t, l, 2, 10)
		require.NoError(t, l.Close())
		// As a crash after the flusher made spares leaves them (one with bytes that must not
		// be read as a segment).
		for _, n := range spareNames {
			f, err := fsy.OpenFile(filepath.Join(dir, n), os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("not a batch"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}

		l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
		require.Empty(t, spareFilesIn(t, fsy, dir))
		require.Equal(t, []int64{0, 10}, segmentBases(l2))
		requireSameRecords(t, want, readAllRecords(t, l2))
	})
}

// renameFailFS fails the renames whose source is failFrom with EIO.
type renameFailFS struct {
	fsys.FS
	failFrom string
}

func (f *renameFailFS) Rename(oldpath, newpath string) error {
	if filepath.Base(oldpath) == f.failFrom {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
	}
	return f.FS.Rename(oldpath, newpath)
}

func TestRollWhenClaimingSpareFails(t *testing.T) {
	// Each rename in turn fails: the ones before it have moved spares to the segment's names
	// (an empty index), and the roll must still make a whole segment of its own.
	for _, failFrom := range spareNames {
		t.Run(failFrom, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				ffs := &renameFailFS{FS: fsy, failFrom: failFrom}
				l := openTestLog(t, ffs, dir, flushTestConfig(SyncNever))
				want := appendBatches(t, l, 2, 10)
				awaitSpares(t, l, fsy)

				want = append(want, appendBatches(t, l, 2, 10)...)
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, dir), "the failed claim drops the spares")
				requireSameRecords(t, want, readAllRecords(t, l))
				require.NoError(t, l.Close())

				l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever))
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l2))
				requireSameRecords(t, want, readAllRecords(t, l2))
			})
		})
	}
}

// spareRec is the record at offset written by step: a record re-appended at a truncated offset
// differs from the one it replaces.
func spareRec(offset int64, step int) *Record {
	r := workloadRecord(int(offset))
	r.Headers = append(slices.Clone(r.Headers), Header{Key: "step", Value: []byte(strconv.Itoa(step))})
	return r
}

// spareCrashDir is the log's folder in the crash tests' memory file systems.
const spareCrashDir = "/log"

// spareCrashModel is what the spare crash workload was told.
type spareCrashModel struct {
	written []*Record // the log's records as the process saw them, by offset
	// ends are the log end offsets the log may hold after a crash: batch boundaries of written,
	// and of the candidates of the step in flight.
	ends map[int]bool
	// inflight is what the step in flight would make of the log (an append's records added, a
	// truncation's cut); nil when no step failed.
	inflight []*Record
	durable  int // records acknowledged by Sync or Close: [0, durable)
	// starts are the log start offsets the log may have after a crash: the last acknowledged
	// one, and the one a retention in flight moves it to.
	starts map[int64]bool
	steps  int
}

// spareCrashConfig is flushTestConfig(SyncNever), a segment per batch, with retention by time;
// retired files wait for the default delete delay under their "*.deleted" names.
func spareCrashConfig() LogConfig {
	cfg := flushTestConfig(SyncNever)
	cfg.RetentionDuration = time.Minute
	return cfg
}

// spareCrashWorkload runs, on one goroutine, a SyncNever workload whose rolls claim spares: the
// flusher is stopped after every open, and its work (making spares, flushing sealed segments
// with spares made between the files) runs in the workload at fixed points, so that operation n
// is the same operation in every run. It truncates (to a segment's base, then rolls to the bases
// the truncation removed, whose files are renamed "*.deleted"), closes and reopens, and syncs.
// It stops at the first error and returns what was acknowledged.
func spareCrashWorkload(fsy fsys.FS) (m *spareCrashModel, err error) {
	ctx := context.Background()
	m = &spareCrashModel{ends: map[int]bool{0: true}, starts: map[int64]bool{0: true}}
	open := func() (*Log, error) {
		l, err := OpenLog(spareCrashDir, spareCrashConfig(), withFS(fsy), WithClock(fixedClock), WithLogger(quietLog))
		if err != nil {
			return nil, err
		}
		stopTestFlusher(l)
		return l, nil
	}
	l, err := open()
	if err != nil {
		return m, err
	}
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	flusher := func() error {
		l.spares.prepare()
		for {
			retry, err := l.flusher.flushSealed(l, false, l.spares.prepare)
			if err != nil || !retry {
				return err
			}
		}
	}
	appendN := func(n, step int) error {
		end := int64(len(m.written))
		recs := make([]*Record, n)
		for i := range recs {
			recs[i] = spareRec(end+int64(i), step)
		}
		next := append(slices.Clone(m.written), withOffsets(recs, end)...)
		m.inflight = next
		m.ends[len(next)] = true
		if err := l.Append(ctx, recs...); err != nil {
			return err
		}
		if recs[0].Offset != end {
			return fmt.Errorf("append got offset %d, want %d", recs[0].Offset, end)
		}
		m.written, m.inflight = next, nil
		return nil
	}
	// closeLog closes the log (a clean close makes every written record durable) and leaves l
	// nil, so that the deferred close does not close it again.
	closeLog := func() error {
		closing := l
		l = nil
		if err := closing.Close(); err != nil {
			return err
		}
		m.durable = len(m.written)
		return nil
	}
	sync := func() error {
		if err := l.Sync(); err != nil {
			return err
		}
		m.durable = len(m.written)
		return nil
	}
	var batchStarts []int
	for step := range 14 {
		batchStarts = append(batchStarts, len(m.written))
		if err := appendN(1+step%3, step); err != nil {
			return m, err
		}
		m.steps++
		if step%2 == 1 {
			if err := flusher(); err != nil {
				return m, err
			}
		}
		if step%3 == 2 || step == 8 || step == 9 {
			if err := sync(); err != nil {
				return m, err
			}
		}
		switch step {
		case 5, 11:
			// Back to the start of the second-to-last batch: that segment is cut empty and
			// the last one retired; the next appends roll to the bases again.
			to := batchStarts[len(batchStarts)-2]
			// Once the truncation starts, the records it removes may be gone after a crash.
			m.inflight = m.written[:to]
			m.durable = min(m.durable, to)
			if err := l.TruncateTo(int64(to)); err != nil {
				return m, err
			}
			m.written, m.inflight = m.written[:to], nil
			batchStarts = batchStarts[:len(batchStarts)-2]
			if err := flusher(); err != nil {
				return m, err
			}
		case 13:
			// Every segment is due: retention rolls at the end (claiming the spares made
			// above) and retires all the others.
			end := int64(len(m.written))
			m.starts[end] = true
			if err := sync(); err != nil {
				return m, err
			}
			n, err := l.ApplyRetentionAt(testEpoch.Add(time.Hour))
			if err != nil {
				return m, err
			}
			if n == 0 || l.LogStartOffset() != end {
				return m, fmt.Errorf("retention deleted %d segments, log start offset %d, want %d", n, l.LogStartOffset(), end)
			}
			m.starts = map[int64]bool{end: true}
		case 8:
			// Close with spares ready, reopen: the first append rolls at once.
			if err := flusher(); err != nil {
				return m, err
			}
			if err := closeLog(); err != nil {
				return m, err
			}
			if l, err = open(); err != nil {
				return m, err
			}
		}
	}
	if err := sync(); err != nil {
		return m, err
	}
	return m, closeLog()
}

// spareCrashCheck opens the log in img and checks it against m.
func spareCrashCheck(img fsys.FS, m *spareCrashModel) error {
	l, err := OpenLog(spareCrashDir, spareCrashConfig(), withFS(img), WithClock(fixedClock), WithLogger(quietLog))
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer l.Close()
	entries, err := img.ReadDir(spareCrashDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if isSpareName(e.Name()) {
			return fmt.Errorf("spare file %s left after open", e.Name())
		}
	}
	start := l.LogStartOffset()
	if !m.starts[start] {
		return fmt.Errorf("log start offset %d, want one of %v", start, m.starts)
	}
	end := int(l.LogEndOffset())
	if end < m.durable {
		return fmt.Errorf("log end offset %d, but Sync acknowledged offsets below %d", end, m.durable)
	}
	if !m.ends[end] {
		return fmt.Errorf("log end offset %d is no batch boundary the workload wrote", end)
	}
	var got []*Record
	for off := start; off < int64(end); {
		recs, err := l.ReadRecords(off, 1<<20)
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("read at %d: no records below the log end offset %d", off, end)
		}
		got = append(got, recs...)
		off = recs[len(recs)-1].Offset + 1
	}
	same := func(want []*Record) bool {
		if len(want) < int(start)+len(got) {
			return false
		}
		for i, g := range got {
			w := want[start+int64(i)]
			if g.Offset != start+int64(i) || g.Offset != w.Offset || string(g.Key) != string(w.Key) ||
				string(g.Value) != string(w.Value) || g.Timestamp.UnixMilli() != w.Timestamp.UnixMilli() ||
				len(g.Headers) != len(w.Headers) {
				return false
			}
			for j := range w.Headers {
				if g.Headers[j].Key != w.Headers[j].Key || string(g.Headers[j].Value) != string(w.Headers[j].Value) {
					return false
				}
			}
		}
		return true
	}
	if !same(m.written) && (m.inflight == nil || !same(m.inflight)) {
		return fmt.Errorf("the %d records read are not a prefix of what was written (%d records, %d durable)", len(got), len(m.written), m.durable)
	}
	// No offset is reused, and the spare machinery works on the recovered log.
	more := []*Record{spareRec(int64(end), 1000), spareRec(int64(end)+1, 1000)}
	if err := l.Append(context.Background(), more[:1]...); err != nil {
		return fmt.Errorf("append after recovery: %w", err)
	}
	if err := l.Append(context.Background(), more[1:]...); err != nil {
		return fmt.Errorf("append after recovery: %w", err)
	}
	if more[0].Offset != int64(end) || more[1].Offset != int64(end)+1 {
		return fmt.Errorf("appends after recovery got offsets %d, %d, want %d, %d", more[0].Offset, more[1].Offset, end, end+1)
	}
	return nil
}

var spareCrashModes = []faultfs.Mode{faultfs.ProcessKill, faultfs.PowerLossKeep, faultfs.PowerLossDrop,
	faultfs.PowerLossTorn, faultfs.PowerLoss}

// TestSpareCrashAtEveryOperation crashes the spare workload at every file-system operation and
// checks the images of a process kill and of each kind of power loss: the log opens, every
// record Sync or Close acknowledged is there byte for byte, offsets run from 0 without a hole to
// a batch boundary, nothing else is there, no spare file is left, and appends go on at the end.
func TestSpareCrashAtEveryOperation(t *testing.T) {
	newFS := func(seed uint64) *faultfs.FS {
		inner := fsys.NewMemory()
		require.NoError(t, inner.MkdirAll(spareCrashDir, 0o755))
		return faultfs.New(inner, seed)
	}
	// The run without a crash: its operations are the crash points, and it must end cleanly.
	ffs := newFS(0)
	m, err := spareCrashWorkload(ffs)
	require.NoError(t, err)
	ops := ffs.Ops()
	require.NoError(t, ffs.Release())
	require.Equal(t, 14, m.steps)
	require.Equal(t, map[int64]bool{int64(len(m.written)): true}, m.starts)
	var renames, claims int
	for _, op := range ops {
		if op.Kind == faultfs.Rename {
			renames++
			if isSpareName(pathBase(op.Path)) {
				claims++
			}
		}
	}
	require.Greater(t, claims, 9, "the workload claims spares: three renames a claim")
	step := 1
	if faultfs.RaceEnabled {
		step = 3
	}
	for point := 0; point < len(ops); point += step {
		ffs := newFS(uint64(point))
		ffs.Inject(faultfs.CrashAt(point))
		m, _ := spareCrashWorkload(ffs)
		require.True(t, ffs.Crashed(), "point %d", point)
		for _, mode := range spareCrashModes {
			img, err := ffs.CrashImage(mode)
			require.NoError(t, err)
			if err := spareCrashCheck(img, m); err != nil {
				crashOps := ffs.Ops()
				from := max(0, len(crashOps)-12)
				t.Fatalf("crash at operation %d of %d (%s), %s image: %v\nlast operations:\n%s",
					point, len(ops), ops[point], mode, err, faultfs.FormatOps(crashOps[from:]))
			}
		}
		require.NoError(t, ffs.Release())
	}
}

// pathBase is the last element of a slash-separated path.
func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// requireReadsEverywhere reads want back with ReadRecords (readAllRecords), with ReadRecord at
// every offset, and with Scan from the log start offset.
func requireReadsEverywhere(t *testing.T, l *Log, want []*Record) {
	t.Helper()
	requireSameRecords(t, want, readAllRecords(t, l))
	var one []*Record
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		var r Record
		require.NoError(t, l.ReadRecord(off, &r), "ReadRecord(%d)", off)
		one = append(one, &r)
	}
	requireSameRecords(t, want, one)
	var scanned []*Record
	for r, err := range l.Scan(l.LogStartOffset()) {
		require.NoError(t, err)
		c := *r
		c.Key, c.Value = slices.Clone(r.Key), slices.Clone(r.Value)
		c.Headers = nil
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, Header{Key: h.Key, Value: slices.Clone(h.Value)})
		}
		scanned = append(scanned, &c)
	}
	requireSameRecords(t, want, scanned)
	for _, r := range want {
		off, err := l.OffsetForTime(r.Timestamp)
		require.NoError(t, err)
		require.Equal(t, r.Offset, off, "OffsetForTime(%d)", r.Timestamp.UnixMilli())
	}
}

// readyTestSpares runs the flusher's spare-making on the test goroutine, for a log whose flusher
// is stopped, and checks the three files exist.
func readyTestSpares(t *testing.T, l *Log, fsy fsys.FS) {
	t.Helper()
	l.spares.prepare()
	require.True(t, l.sparesReady())
	require.Equal(t, spareNames, spareFilesIn(t, fsy, l.Dir()))
}

// TestSpareTruncationAndRetention interleaves truncations, a follower's start-over and retention
// with spares ready: the rolls after them claim the spares at bases whose earlier files are
// retired ("*.deleted") or gone; every read API sees the records, and so does a reopen.
func TestSpareTruncationAndRetention(t *testing.T) {
	// Three one-record batches a segment.
	cfg := baseConfig()
	cfg.Sync = SyncNever
	cfg.SegmentBytes = 700
	cases := []struct {
		name string
		// run changes l (spares ready, flusher stopped) and returns the records it holds.
		run       func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record
		wantBases []int64
		wantStart int64
	}{
		{
			name: "truncate mid-segment, roll to the retired base",
			run: func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record {
				require.NoError(t, l.TruncateTo(4))
				require.Equal(t, []int64{0, 3}, segmentBases(l))
				require.True(t, fsExists(t, fsy, segPath(l.Dir(), 6, logSuffix+deletedSuffix)))
				require.Equal(t, spareNames, spareFilesIn(t, fsy, l.Dir()), "a truncation leaves the spares")
				return append(want[:4], appendBatches(t, l, 5, 1)...)
			},
			wantBases: []int64{0, 3, 6},
		},
		{
			name: "truncate to a segment base, roll to the same bases again",
			run: func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record {
				require.NoError(t, l.TruncateTo(6))
				require.Equal(t, []int64{0, 3, 6}, segmentBases(l))
				require.Equal(t, int64(6), l.LogEndOffset())
				return append(want[:6], appendBatches(t, l, 6, 1)...)
			},
			wantBases: []int64{0, 3, 6, 9},
		},
		{
			name: "truncate twice, spares made in between",
			run: func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record {
				require.NoError(t, l.TruncateTo(2))
				want = append(want[:2], appendBatches(t, l, 4, 1)...) // rolls to 3: claims
				require.Empty(t, spareFilesIn(t, fsy, l.Dir()))
				readyTestSpares(t, l, fsy)
				require.NoError(t, l.TruncateTo(3))
				return append(want[:3], appendBatches(t, l, 4, 1)...) // rolls to 6: claims
			},
			wantBases: []int64{0, 3, 6},
		},
		{
			name: "follower starts over past the end",
			run: func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record {
				require.NoError(t, l.truncateFullyAndStartAt(100))
				require.Equal(t, []int64{100}, segmentBases(l))
				require.Equal(t, spareNames, spareFilesIn(t, fsy, l.Dir()))
				return appendBatches(t, l, 4, 1) // rolls to 103: claims
			},
			wantBases: []int64{100, 103},
			wantStart: 100,
		},
		{
			name: "retention of every segment rolls with the spares",
			run: func(t *testing.T, l *Log, fsy fsys.FS, want []*Record) []*Record {
				n, err := l.ApplyRetentionAt(testEpoch.Add(time.Hour))
				require.NoError(t, err)
				require.Equal(t, 3, n)
				require.Equal(t, []int64{9}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, l.Dir()), "the roll at 9 claimed them")
				readyTestSpares(t, l, fsy)
				return appendBatches(t, l, 4, 1) // rolls to 12: claims
			},
			wantBases: []int64{9, 12},
			wantStart: 9,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				c := cfg
				if tc.wantStart == 9 {
					c.RetentionDuration = time.Minute
					c.FileDeleteDelay = -1
				}
				l := openTestLog(t, fsy, dir, c, WithLogger(quietLog))
				want := appendBatches(t, l, 9, 1)
				require.Equal(t, []int64{0, 3, 6}, segmentBases(l))
				awaitSpares(t, l, fsy)

				want = tc.run(t, l, fsy, want)
				require.Equal(t, tc.wantBases, segmentBases(l))
				require.Equal(t, tc.wantStart, l.LogStartOffset())
				require.Equal(t, tc.wantStart+int64(len(want)), l.LogEndOffset())
				require.Empty(t, spareFilesIn(t, fsy, dir))
				requireReadsEverywhere(t, l, want)
				requireIndexesWithin(t, l)
				require.NoError(t, l.Close())

				l2 := openTestLog(t, fsy, dir, c, WithLogger(quietLog))
				require.Equal(t, tc.wantBases, segmentBases(l2))
				require.Equal(t, tc.wantStart, l2.LogStartOffset())
				requireReadsEverywhere(t, l2, want)
				more := appendBatches(t, l2, 3, 1)
				require.Equal(t, tc.wantStart+int64(len(want)), more[0].Offset)
				requireReadsEverywhere(t, l2, append(want, more...))
			})
		})
	}
}

// TestSpareStaleFilesAtClaimedName: files of an earlier segment at the name a roll claims, with
// garbage in them (a whole number of index entries, so that an index opened on them would take
// them as entries). Whether the roll claims spares, creates its files, or falls back after a
// failed claim, the new segment's indexes start empty and its .log holds only its own batch.
func TestSpareStaleFilesAtClaimedName(t *testing.T) {
	for _, how := range []string{"claimed", "created", "claim fails at next.log.spare", "claim fails at next.timeindex.spare"} {
		t.Run(how, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				var lfs fsys.FS = fsy
				if f, ok := strings.CutPrefix(how, "claim fails at "); ok {
					lfs = &renameFailFS{FS: fsy, failFrom: f}
				}
				l := openTestLog(t, lfs, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
				want := appendBatches(t, l, 2, 10)
				awaitSpares(t, l, fsy)
				if how == "created" {
					require.NoError(t, l.spares.remove())
				}
				garbage := bytes.Repeat([]byte{0x7f, 0xff, 0xff, 0x01}, 600) // 200 8-byte and 200 12-byte entries... of nonsense
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					fsWriteFile(t, fsy, segPath(dir, 20, suf), garbage[:2400])
				}
				want = append(want, appendBatches(t, l, 2, 10)...)
				require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
				require.Empty(t, spareFilesIn(t, fsy, dir))
				requireReadsEverywhere(t, l, want)
				requireIndexesWithin(t, l)
				require.NoError(t, l.Close())
				require.Equal(t, fsFileSize(t, fsy, segPath(dir, 30, logSuffix)), fsFileSize(t, fsy, segPath(dir, 20, logSuffix)),
					"segment 20 holds one batch, as segment 30 does")

				l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
				requireReadsEverywhere(t, l2, want)
				requireIndexesWithin(t, l2)
			})
		})
	}
}

// blockSpareFS blocks the creation of one spare file until release is closed, after telling
// blocked; with fail set it fails that creation instead.
type blockSpareFS struct {
	fsys.FS
	name     string
	blocked  chan struct{}
	release  chan struct{}
	fail     bool
	once     sync.Once
	creating atomic.Int32
}

func (f *blockSpareFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	if filepath.Base(name) == f.name {
		f.creating.Add(1)
		if f.fail {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
		}
		f.once.Do(func() {
			close(f.blocked)
			<-f.release
		})
	}
	return f.FS.OpenFile(name, flag, perm)
}

// TestCloseRacesSpareMaking: Close while the flusher is part-way through making the spares (one
// made, the next blocked). Close waits for the flusher, then deletes all three; the next open
// finds none, and the log rolls on.
func TestCloseRacesSpareMaking(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		bfs := &blockSpareFS{FS: fsy, name: "next.timeindex.spare", blocked: make(chan struct{}), release: make(chan struct{})}
		l := openTestLog(t, bfs, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
		want := appendBatches(t, l, 2, 10) // the roll at 10 wakes the flusher
		<-bfs.blocked
		require.Equal(t, []string{"next.index.spare"}, spareFilesIn(t, fsy, dir))

		closed := make(chan error, 1)
		go func() { closed <- l.Close() }()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while the flusher was making spares", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(bfs.release)
		require.NoError(t, <-closed)
		require.Empty(t, spareFilesIn(t, fsy, dir))
		require.Equal(t, []int64{0, 10}, logFileBases(t, fsy, dir))

		l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
		requireReadsEverywhere(t, l2, want)
		want = append(want, appendBatches(t, l2, 3, 10)...)
		require.Equal(t, []int64{0, 10, 20, 30, 40}, segmentBases(l2))
		requireReadsEverywhere(t, l2, want)
	})
}

// TestSpareMakingFails: the creation of the second spare fails: the first is deleted, none is
// ready, and the rolls create their own files.
func TestSpareMakingFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		bfs := &blockSpareFS{FS: fsy, name: "next.timeindex.spare", fail: true}
		l := openTestLog(t, bfs, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
		want := appendBatches(t, l, 2, 10)
		require.Eventually(t, func() bool { return bfs.creating.Load() > 0 && !l.flushPending() }, flushWait, flushTick)
		stopTestFlusher(l)
		require.False(t, l.sparesReady())
		require.Empty(t, spareFilesIn(t, fsy, dir))
		want = append(want, appendBatches(t, l, 2, 10)...)
		require.Equal(t, []int64{0, 10, 20, 30}, segmentBases(l))
		requireReadsEverywhere(t, l, want)
		require.NoError(t, l.Close())
		l2 := openTestLog(t, fsy, dir, flushTestConfig(SyncNever), WithLogger(quietLog))
		requireReadsEverywhere(t, l2, want)
	})
}

// TestStoreSparesDeleteTopicAndFileLimit: a store of SyncNever partitions under a small bound on
// open files: every partition rolls with spares, a topic is deleted while its partitions have
// spares ready (its folders go whole), the other topic's records read back through the bound, and
// a reopened store holds no spare file.
func TestStoreSparesDeleteTopicAndFileLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		dir := t.TempDir()
		opts := []Option{withFS(fsy), WithClock(fixedClock), WithRetentionCheckInterval(-1), WithMaxOpenFiles(minOpenFiles), WithLogger(quietLog)}
		s, err := Open(dir, opts...)
		require.NoError(t, err)
		tc := TopicConfig{Partitions: 6, LogConfig: flushTestConfig(SyncNever)}
		keep, err := s.CreateTopic("keep", tc)
		require.NoError(t, err)
		gone, err := s.CreateTopic("gone", tc)
		require.NoError(t, err)

		want := map[int32][]*Record{}
		for round := range 5 {
			for id := range tc.Partitions {
				for _, topic := range []*Topic{keep, gone} {
					p, err := topic.Partition(id)
					require.NoError(t, err)
					end := p.LogEndOffset()
					recs := workloadRecords(int(end)+100*round, 3)
					require.NoError(t, p.Append(ctx, recs...))
					require.Equal(t, end, recs[0].Offset)
					if topic == keep {
						want[id] = append(want[id], withOffsets(recs, end)...)
					}
				}
			}
		}
		spareDirs := func(topic string) int {
			n := 0
			for id := range tc.Partitions {
				if len(spareFilesIn(t, fsy, filepath.Join(dir, partitionDirName(topic, id)))) == len(spareNames) {
					n++
				}
			}
			return n
		}
		require.Eventually(t, func() bool { return spareDirs("gone") == int(tc.Partitions) && spareDirs("keep") == int(tc.Partitions) },
			flushWait, flushTick)

		require.NoError(t, s.DeleteTopic("gone"))
		for _, name := range fsListDir(t, fsy, dir) {
			require.False(t, strings.HasPrefix(name, "gone"), "folder %s left by the delete", name)
		}
		_, err = s.CreateTopic("gone", tc)
		require.NoError(t, err)

		check := func(s *Store) {
			t.Helper()
			keep, err := s.Topic("keep")
			require.NoError(t, err)
			for id := range tc.Partitions {
				p, err := keep.Partition(id)
				require.NoError(t, err)
				requireReadsEverywhere(t, p.log, want[id])
			}
			gone, err := s.Topic("gone")
			require.NoError(t, err)
			for id := range tc.Partitions {
				p, err := gone.Partition(id)
				require.NoError(t, err)
				require.Equal(t, int64(0), p.LogEndOffset())
			}
		}
		check(s)
		require.NoError(t, s.Close())
		for id := range tc.Partitions {
			require.Empty(t, spareFilesIn(t, fsy, filepath.Join(dir, partitionDirName("keep", id))))
		}

		s, err = Open(dir, opts...)
		require.NoError(t, err)
		defer s.Close()
		check(s)
	})
}
