package commitlog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

const compactCrashDir = "/compact-crash"

// compactCrashWorkload appends keyed records and tombstones to a compacted log on fsy (every
// append acknowledged only once durable, SyncAlways), then compacts it and closes it. It returns
// the records acknowledged and the number of file-system operations done before Compact began
// (ops); err is the first failure (the crash).
func compactCrashWorkload(ffs *faultfs.FS) (acked []keyed, compactFrom int, err error) {
	cfg := compactConfig()
	cfg.Sync = SyncAlways
	l, err := OpenLog(compactCrashDir, cfg, withFS(ffs), WithClock(fixedClock))
	if err != nil {
		return nil, len(ffs.Ops()), err
	}
	defer func() { _ = l.Close() }()
	for i := range 40 {
		recs := make([]*Record, 3)
		for j := range recs {
			n := i*3 + j
			recs[j] = &Record{Key: fmt.Appendf(nil, "key-%d", n%7), Timestamp: testEpoch}
			if n%11 != 5 {
				recs[j].Value = fmt.Appendf(nil, "value-%d", n)
			}
		}
		if err := l.Append(context.Background(), recs...); err != nil {
			return acked, len(ffs.Ops()), err
		}
		for _, r := range recs {
			acked = append(acked, keyed{offset: r.Offset, key: string(r.Key), value: r.Value})
		}
	}
	compactFrom = len(ffs.Ops())
	if _, err := l.Compact(context.Background()); err != nil {
		return acked, compactFrom, err
	}
	return acked, compactFrom, l.Close()
}

// checkCompactedRecords checks what a log holds against the acknowledged records: offsets
// increasing (nothing reads twice), each record one that was acknowledged at that offset, and
// the last record of every key its latest acknowledged one (tombstones included: none has
// expired, the clock stands still).
func checkCompactedRecords(got, acked []keyed) error {
	byOffset := map[int64]keyed{}
	latest := map[string]keyed{}
	for _, r := range acked {
		byOffset[r.offset] = r
		latest[r.key] = r
	}
	last := map[string]keyed{}
	prev := int64(-1)
	for _, r := range got {
		if r.offset <= prev {
			return fmt.Errorf("offset %d read after %d", r.offset, prev)
		}
		prev = r.offset
		want, ok := byOffset[r.offset]
		if !ok || want.key != r.key || string(want.value) != string(r.value) || (want.value == nil) != (r.value == nil) {
			return fmt.Errorf("offset %d holds %q=%q, acknowledged %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		last[r.key] = r
	}
	for k, want := range latest {
		if g, ok := last[k]; !ok || g.offset != want.offset {
			return fmt.Errorf("key %s: last record read %+v, latest acknowledged at offset %d", k, g, want.offset)
		}
	}
	return nil
}

// newCompactCrashFS returns a fault FS over a memory FS already holding the log's directory
// (durable, as a directory the FS did not make).
func newCompactCrashFS(t *testing.T, seed uint64) *faultfs.FS {
	inner := fsys.NewMemory()
	require.NoError(t, inner.MkdirAll(compactCrashDir, 0o755))
	return faultfs.New(inner, seed)
}

// TestCompactCrashPoints is the crash explorer of compaction: it runs the workload above
// crashing at every file-system operation of its Compact (writing the cleaned segments, the
// renames to .swap, the retirement of the old segments, the renames into place, the cleaner
// point), as a process kill and as a power loss of each kind, and reopens what is left: the log
// opens, no .cleaned or .swap file is left, nothing reads twice, every record read is one that
// was acknowledged at its offset, and every key's latest acknowledged record is there. The
// reopened log is compacted again and checked the same way.
func TestCompactCrashPoints(t *testing.T) {
	counting := newCompactCrashFS(t, 1)
	acked, from, err := compactCrashWorkload(counting)
	require.NoError(t, err)
	to := len(counting.Ops())
	counting.Release()
	require.Greater(t, to-from, 20, "the clean does file operations")
	modes := append([]faultfs.Mode{faultfs.ProcessKill}, powerLossModes...)
	for point := from; point < to; point++ {
		mode := modes[point%len(modes)]
		ffs := newCompactCrashFS(t, uint64(point))
		ffs.Inject(faultfs.CrashAt(point))
		_, _, werr := compactCrashWorkload(ffs)
		require.Error(t, werr, "point %d", point)
		img, err := ffs.CrashImage(mode)
		require.NoError(t, err)
		ops := ffs.Ops()
		ffs.Release()
		fail := func(format string, args ...any) {
			t.Fatalf("crash at operation %d (%s) in mode %v: %s\noperations of the clean:\n%s", point, ops[point], mode,
				fmt.Sprintf(format, args...), faultfs.FormatOps(ops[from:min(point+1, len(ops))]))
		}
		l, err := OpenLog(compactCrashDir, compactConfig(), withFS(img), WithClock(fixedClock))
		if err != nil {
			fail("reopen: %v", err)
		}
		entries, err := img.ReadDir(compactCrashDir)
		require.NoError(t, err)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
				fail("%s left after the reopen", e.Name())
			}
		}
		if err := checkCompactedRecords(scanKeyed(t, l), acked); err != nil {
			fail("after the reopen: %v", err)
		}
		if _, err := l.Compact(context.Background()); err != nil {
			fail("compact after the reopen: %v", err)
		}
		got := scanKeyed(t, l)
		if err := checkCompactedRecords(got, acked); err != nil {
			fail("compacted again: %v", err)
		}
		require.True(t, slices.IsSortedFunc(got, func(a, b keyed) int { return int(a.offset - b.offset) }))
		require.NoError(t, l.Close())
	}
}
