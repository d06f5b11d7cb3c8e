package commitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// The segment package's file names, under the names the tests use.
const (
	logSuffix       = segment.LogSuffix
	indexSuffix     = segment.IndexSuffix
	timeIndexSuffix = segment.TimeIndexSuffix
	deletedSuffix   = segment.DeletedSuffix
)

var (
	segmentName      = segment.Name
	parseSegmentName = segment.ParseName
)

// The behaviour tests of Log run every case against both file systems the log supports: the
// operating system's and the in-memory one. Tests that damage files do it through the same
// fsys.FS the log uses, so they work on both.

// logBackend is a file system the behaviour tests run on.
type logBackend struct {
	name string
	new  func() fsys.FS
}

var logBackends = []logBackend{
	{"os", fsys.OS},
	{"memory", fsys.NewMemory},
}

// forEachBackend runs fn as a subtest per backend, each with a fresh file system.
func forEachBackend(t *testing.T, fn func(t *testing.T, fsy fsys.FS)) {
	t.Helper()
	for _, b := range logBackends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.new()) })
	}
}

// testEpoch is the fixed clock of the behaviour tests (ms precision, so that times survive the
// trip through the log unchanged).
var testEpoch = time.UnixMilli(1_700_000_000_000)

func fixedClock() time.Time { return testEpoch }

// baseConfig is Kafka's defaults but for small index files: a preallocated 10 MiB index per
// segment would make the memory backend slow and blur the allocation measurements.
func baseConfig() LogConfig { return LogConfig{SegmentIndexBytes: 64 << 10} }

// openTestLog opens dir on fsy with the fixed clock; the log is closed at the end of the test.
func openTestLog(t *testing.T, fsy fsys.FS, dir string, cfg LogConfig, opts ...Option) *Log {
	t.Helper()
	l, err := OpenLog(dir, cfg, append([]Option{withFS(fsy), WithClock(fixedClock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// workloadRecord is record i of the tests' workload: a 16-byte key, a 100-byte value and two
// headers, timestamp testEpoch+i ms. Records of the workload all encode to the same size, so
// batches of the same number of records have the same size.
func workloadRecord(i int) *Record {
	value := make([]byte, 100)
	for j := range value {
		value[j] = byte(i*31 + j)
	}
	return &Record{
		Key:   fmt.Appendf(nil, "key-%012d", i),
		Value: value,
		Headers: []Header{
			{Key: "trace", Value: fmt.Appendf(nil, "%08d", i)},
			{Key: "source", Value: []byte("behaviour-test")},
		},
		Timestamp: testEpoch.Add(time.Duration(i) * time.Millisecond),
	}
}

// workloadRecords returns records from to from+n-1 of the workload.
func workloadRecords(from, n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = workloadRecord(from + i)
	}
	return recs
}

// withOffsets returns copies of recs numbered from first, as the log returns them.
func withOffsets(recs []*Record, first int64) []*Record {
	out := make([]*Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Offset = first + int64(i)
		out[i] = &c
	}
	return out
}

// appendBatches appends n batches of per records of the workload, numbered from the log end
// offset, and returns them with their offsets.
func appendBatches(t *testing.T, l *Log, n, per int) []*Record {
	t.Helper()
	var all []*Record
	for range n {
		first := int(l.LogEndOffset())
		recs := workloadRecords(first, per)
		require.NoError(t, l.Append(context.Background(), recs...))
		require.Equal(t, int64(first), recs[0].Offset)
		all = append(all, withOffsets(recs, int64(first))...)
	}
	return all
}

// requireNoErrs closes errs, on which the test's goroutines no longer send, and fails the test at
// the first error it holds.
func requireNoErrs(t *testing.T, errs chan error) {
	t.Helper()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// requireSameRecords checks that got are want, field by field, null and empty kept apart
// (testify's Equal takes a nil and an empty []byte for equal).
func requireSameRecords(t *testing.T, want, got []*Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Offset, g.Offset, "record %d", i)
		require.Equal(t, w.Key == nil, g.Key == nil, "record %d: null key", i)
		require.Equal(t, w.Key, g.Key, "record %d", i)
		require.Equal(t, w.Value == nil, g.Value == nil, "record %d: null value", i)
		require.Equal(t, w.Value, g.Value, "record %d", i)
		require.Equal(t, w.Timestamp.UnixMilli(), g.Timestamp.UnixMilli(), "record %d", i)
		require.Len(t, g.Headers, len(w.Headers), "record %d", i)
		for j := range w.Headers {
			require.Equal(t, w.Headers[j].Key, g.Headers[j].Key, "record %d header %d", i, j)
			require.Equal(t, w.Headers[j].Value == nil, g.Headers[j].Value == nil, "record %d header %d: null value", i, j)
			require.Equal(t, w.Headers[j].Value, g.Headers[j].Value, "record %d header %d", i, j)
		}
	}
}

// readAllRecords reads every record from the log start offset to the log end offset.
func readAllRecords(t *testing.T, l *Log) []*Record {
	t.Helper()
	var out []*Record
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		recs, err := l.ReadRecords(off, 1<<20)
		require.NoError(t, err, "read at %d", off)
		require.NotEmpty(t, recs, "read at %d", off)
		out = append(out, recs...)
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

// readAllBatches returns the bytes of every batch from offset on, in order.
func readAllBatches(t *testing.T, l *Log, from int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < l.LogEndOffset(); {
		n := len(out)
		var err error
		out, err = l.ReadBatches(out, off, 1<<20)
		require.NoError(t, err, "read at %d", off)
		require.Greater(t, len(out), n, "read at %d", off)
		hs := batchHeaders(t, out[n:])
		off = hs[len(hs)-1].NextOffset()
	}
	return out
}

// batchAt is one batch found in a byte slice of back-to-back batches.
type batchAt struct {
	recordbatch.Header
	pos int64
}

// batchHeaders parses the back-to-back batches of b, verifying each CRC; b must be whole batches.
func batchHeaders(t *testing.T, b []byte) []batchAt {
	t.Helper()
	var out []batchAt
	for pos := 0; pos < len(b); {
		h, err := recordbatch.Check(b[pos:], 0)
		require.NoError(t, err, "batch at byte %d", pos)
		out = append(out, batchAt{h, int64(pos)})
		pos += h.Size()
	}
	return out
}

// encodeBatch builds one uncompressed producer batch holding recs, base offset base, as a
// client would send it.
func encodeBatch(t *testing.T, base int64, recs []*Record) []byte {
	t.Helper()
	return encodeBatchWith(t, recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: -1,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

func encodeBatchWith(t *testing.T, h recordbatch.Header, recs []*Record) []byte {
	t.Helper()
	var b recordbatch.Builder
	b.Reset(h)
	for _, r := range recs {
		b.Add(r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers)
	}
	out, err := b.Finish()
	require.NoError(t, err)
	return slices.Clone(out)
}

// segPath is the path of a segment file of dir.
func segPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, segmentName(base)+suffix)
}

// File helpers working through an fsys.FS, so that the tests damage files the same way on
// every backend.

func fsReadFile(t *testing.T, fsy fsys.FS, name string) []byte {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	if size > 0 {
		_, err = f.ReadAt(b, 0)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		require.NoError(t, err)
	}
	return b
}

func fsWriteFile(t *testing.T, fsy fsys.FS, name string, data []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	if len(data) > 0 {
		_, err = f.WriteAt(data, 0)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

func fsFileSize(t *testing.T, fsy fsys.FS, name string) int64 {
	t.Helper()
	fi, err := fsy.Stat(name)
	require.NoError(t, err)
	return fi.Size()
}

func fsTruncate(t *testing.T, fsy fsys.FS, name string, size int64) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
}

// fsPatch overwrites bytes of name at off.
func fsPatch(t *testing.T, fsy fsys.FS, name string, off int64, p []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(p, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func fsExists(t *testing.T, fsy fsys.FS, name string) bool {
	t.Helper()
	_, err := fsy.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}

// fsListDir returns the names of the files in dir, sorted.
func fsListDir(t *testing.T, fsy fsys.FS, dir string) []string {
	t.Helper()
	entries, err := fsy.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fsSnapshot returns every file of dir and its contents.
func fsSnapshot(t *testing.T, fsy fsys.FS, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range fsListDir(t, fsy, dir) {
		out[name] = fsReadFile(t, fsy, filepath.Join(dir, name))
	}
	return out
}

// crashCopy copies the files of the log in src to dst as they are at this moment, while the log
// is open: the image a process kill (or, under SyncAlways, a power loss after the last
// acknowledged append) leaves behind. Index files are copied preallocated and mapped contents
// included, the state file says the shutdown was not clean, exactly as a crash leaves them. The
// directory lock is not copied: a killed holder's lock dies with it.
func crashCopy(t *testing.T, fsy fsys.FS, src, dst string) {
	t.Helper()
	require.NoError(t, fsy.MkdirAll(dst, 0o755))
	for _, name := range fsListDir(t, fsy, src) {
		if name == lockFileName {
			continue
		}
		fsWriteFile(t, fsy, filepath.Join(dst, name), fsReadFile(t, fsy, filepath.Join(src, name)))
	}
}

// storeStateOf returns the store's directory and the partition of the partition folder dir when
// the store keeps its partitions' state in its log directory checkpoints (log_dir_checkpoints.go).
func storeStateOf(fsy fsys.FS, dir string) (storeDir string, tp topicPartition, ok bool) {
	storeDir = filepath.Dir(dir)
	topic, p, isPartition := parsePartitionDirName(filepath.Base(dir))
	if !isPartition || isInternalTopic(topic) {
		return "", topicPartition{}, false
	}
	if _, err := fsy.Lstat(filepath.Join(storeDir, recoveryPointCheckpointName)); err != nil {
		return "", topicPartition{}, false
	}
	return storeDir, topicPartition{topic: topic, partition: p}, true
}

// readTestState returns the state checkpoint of the log in dir: its store's entry for it when it
// is a partition of a store that keeps them, else its folder's file.
func readTestState(t *testing.T, fsy fsys.FS, dir string) logState {
	t.Helper()
	if storeDir, tp, ok := storeStateOf(fsy, dir); ok {
		st, err := readLogDirState(fsy, storeDir)
		require.NoError(t, err)
		rp, ok1 := st.recoveryPoints[tp]
		start, ok2 := st.logStartOffsets[tp]
		require.True(t, ok1 && ok2, "%s-%d not in the store's checkpoints", tp.topic, tp.partition)
		return logState{logStartOffset: start, recoveryPoint: rp, clean: st.clean}
	}
	b, err := checkpoint.Read(fsy, filepath.Join(dir, stateFileName))
	require.NoError(t, err)
	st, err := decodeLogState(b)
	require.NoError(t, err)
	return st
}

// writeTestState replaces the state checkpoint of the log in dir (see readTestState). In a store,
// the clean shutdown marker is the store's: it is written or removed for every partition.
func writeTestState(t *testing.T, fsy fsys.FS, dir string, st logState) {
	t.Helper()
	if storeDir, tp, ok := storeStateOf(fsy, dir); ok {
		ds, err := readLogDirState(fsy, storeDir)
		require.NoError(t, err)
		ds.recoveryPoints[tp], ds.logStartOffsets[tp] = st.recoveryPoint, st.logStartOffset
		require.NoError(t, checkpoint.WriteRaw(fsy, filepath.Join(storeDir, recoveryPointCheckpointName), encodeOffsetCheckpoint(ds.recoveryPoints)))
		require.NoError(t, checkpoint.WriteRaw(fsy, filepath.Join(storeDir, logStartCheckpointName), encodeOffsetCheckpoint(ds.logStartOffsets)))
		marker := filepath.Join(storeDir, cleanShutdownName)
		if st.clean {
			fsWriteFile(t, fsy, marker, nil)
		} else if err := fsy.Remove(marker); err != nil {
			require.ErrorIs(t, err, fs.ErrNotExist)
		}
		return
	}
	require.NoError(t, checkpoint.Write(fsy, filepath.Join(dir, stateFileName), st.encode()))
}

// addOldReplicationLines appends to the state checkpoint of dir the two lines an earlier
// version's store wrote there for a replicated partition: its high watermark and the leader epoch
// of its last role.
func addOldReplicationLines(t *testing.T, fsy fsys.FS, dir string, highWatermark int64, epoch int32) {
	t.Helper()
	path := filepath.Join(dir, stateFileName)
	b, err := checkpoint.Read(fsy, path)
	require.NoError(t, err)
	require.NotContains(t, string(b), "high-watermark")
	b = fmt.Appendf(b, "high-watermark %d\nleader-epoch %d\n", highWatermark, epoch)
	require.NoError(t, checkpoint.Write(fsy, path, b))
}

// requireIndexesWithin checks the in-memory indexes of every segment of l: no offset index entry
// at or past the segment's end (offset or position), no time index entry past its last offset.
func requireIndexesWithin(t *testing.T, l *Log) {
	t.Helper()
	// Collected under the lock, checked after it: a failed check must not leave it held.
	type entry struct {
		file         string
		offset, pos  int64 // pos -1 for the time index
		next, size   int64
		checkOffsets error
		checkTimes   error
	}
	var entries []entry
	var checks []entry
	// Held and open, as a read holds them: sealed segments' files may be closed when idle.
	l.mu.RLock()
	segs := slices.Clone(l.segments)
	for _, s := range segs {
		s.Acquire()
	}
	l.mu.RUnlock()
	defer func() {
		for _, s := range segs {
			l.release(s)
		}
	}()
	for _, s := range segs {
		require.NoError(t, l.openForRead(s))
	}
	l.mu.RLock()
	for _, s := range segs {
		st := s.State()
		for _, e := range st.OffsetEntries {
			entries = append(entries, entry{file: s.Path(indexSuffix), offset: e[0], pos: e[1], next: st.NextOffset, size: st.Size})
		}
		for _, e := range st.TimeEntries {
			entries = append(entries, entry{file: s.Path(timeIndexSuffix), offset: e[1], pos: -1, next: st.NextOffset, size: st.Size})
		}
		checkOffsets, checkTimes := s.CheckIndexes()
		checks = append(checks, entry{file: s.Path(logSuffix), checkOffsets: checkOffsets, checkTimes: checkTimes})
	}
	l.mu.RUnlock()
	for _, e := range entries {
		require.Less(t, e.offset, e.next, "%s: entry (%d, %d) at or past the segment's end", e.file, e.offset, e.pos)
		require.Less(t, e.pos, e.size, "%s: entry (%d, %d) at or past the segment's end", e.file, e.offset, e.pos)
	}
	for _, c := range checks {
		require.NoError(t, c.checkOffsets, c.file)
		require.NoError(t, c.checkTimes, c.file)
	}
}

// segmentBases returns the base offsets of l's segments.
func segmentBases(l *Log) []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []int64
	for _, s := range l.segments {
		out = append(out, s.BaseOffset())
	}
	return out
}

// logFileBases returns the base offsets named by the .log files in dir.
func logFileBases(t *testing.T, fsy fsys.FS, dir string) []int64 {
	t.Helper()
	var out []int64
	for _, name := range fsListDir(t, fsy, dir) {
		if base, ok := parseSegmentName(name, logSuffix); ok {
			out = append(out, base)
		}
	}
	return out
}

// faultyFS wraps a file system and injects faults into the .log files of segments: failed
// fsyncs, writes cut short by a full disk, slow fsyncs; it records the size of a .log file at
// the start of every successful fsync of it.
type faultyFS struct {
	fsys.FS

	mu sync.Mutex
	// failSyncs .log fsyncs to come fail with EIO.
	failSyncs int
	// shortWrites .log writes to come write 37 bytes and fail with ENOSPC.
	shortWrites int
	// syncDelay is added to every .log fsync, as a disk's latency.
	syncDelay time.Duration
	// beforeWrite, when set, is called before every write to a .log file.
	beforeWrite func(name string, off int64)
	// durable is, per .log file, the largest file size seen at the start of an fsync that
	// succeeded: every byte below it had been written before an fdatasync that returned.
	durable map[string]int64
	syncs   int // successful .log fsyncs
	writes  int // .log writes
}

func newFaultyFS(inner fsys.FS) *faultyFS {
	return &faultyFS{FS: inner, durable: map[string]int64{}}
}

func (f *faultyFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *faultyFS) arm(failSyncs, shortWrites int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSyncs, f.shortWrites = failSyncs, shortWrites
}

func (f *faultyFS) durableSize(name string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.durable[name]
}

func (f *faultyFS) counts() (syncs, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs, f.writes
}

type faultyFile struct {
	fsys.File
	fs *faultyFS
}

func (f *faultyFile) isLog() bool { return strings.HasSuffix(f.Name(), logSuffix) }

func (f *faultyFile) Sync() error {
	if !f.isLog() {
		return f.File.Sync()
	}
	ffs := f.fs
	ffs.mu.Lock()
	fail := ffs.failSyncs > 0
	if fail {
		ffs.failSyncs--
	}
	delay := ffs.syncDelay
	ffs.mu.Unlock()
	if fail {
		return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EIO}
	}
	size, err := f.File.Size()
	if err != nil {
		return err
	}
	time.Sleep(delay)
	if err := f.File.Sync(); err != nil {
		return err
	}
	ffs.mu.Lock()
	ffs.syncs++
	ffs.durable[f.Name()] = max(ffs.durable[f.Name()], size)
	ffs.mu.Unlock()
	return nil
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.isLog() {
		return f.File.WriteAt(p, off)
	}
	ffs := f.fs
	ffs.mu.Lock()
	ffs.writes++
	short := ffs.shortWrites > 0 && len(p) > 37
	if short {
		ffs.shortWrites--
	}
	hook := ffs.beforeWrite
	ffs.mu.Unlock()
	if hook != nil {
		hook(f.Name(), off)
	}
	if short {
		n, err := f.File.WriteAt(p[:37], off)
		if err != nil {
			return n, err
		}
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

// requireSameBytes compares byte slices without printing them whole.
func requireSameBytes(t *testing.T, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	if !bytes.Equal(want, got) {
		require.Failf(t, "bytes differ", "got %d bytes, want %d; first difference at byte %d. %s",
			len(got), len(want), firstDiff(want, got), fmt.Sprint(msgAndArgs...))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// quietLog is a logger that drops everything: crashed workloads warn at every later operation.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// newFaultFS wraps fsy in a fault-injecting file system, with dir created before it: a
// directory the fault FS has not seen made is durable, as a store's directory made long ago is.
func newFaultFS(t *testing.T, fsy fsys.FS, dir string) *faultfs.FS {
	t.Helper()
	require.NoError(t, fsy.MkdirAll(dir, 0o755))
	ffs := faultfs.New(fsy, 1)
	t.Cleanup(func() { ffs.Release() })
	return ffs
}

// crashImage is what ffs's crash (or a crash now) leaves in mode.
func crashImage(t *testing.T, ffs *faultfs.FS, mode faultfs.Mode) fsys.FS {
	t.Helper()
	img, err := ffs.CrashImage(mode)
	require.NoError(t, err)
	return img
}

var powerLossModes = []faultfs.Mode{faultfs.PowerLossKeep, faultfs.PowerLossDrop, faultfs.PowerLossTorn, faultfs.PowerLoss}

// setLogConf changes l's live configuration in place, as tests that poke a field the config
// checks would refuse (or that change one between appends) do; f's result is not validated.
func setLogConf(l *Log, f func(c *LogConfig)) {
	c := *l.conf()
	f(&c)
	l.live.Store(newLiveConfig(c))
}

// offsetRange returns the offsets [from, to).
func offsetRange(from, to int64) []int64 {
	out := make([]int64, 0, to-from)
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}
