package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/segment"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

const txnIndexSuffix = segment.TxnIndexSuffix

// appendAbortedTxnTo appends a to the txn index of l's segment i, under the append lock, as the
// log's writer would; it returns the segment's base offset.
func appendAbortedTxnTo(t *testing.T, l *Log, i int, a txnindex.AbortedTxn) int64 {
	t.Helper()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	s := l.segments[i]
	l.mu.RUnlock()
	require.NoError(t, s.AppendAbortedTxn(a))
	return s.BaseOffset()
}

// segmentTxns returns every entry of the txn index of l's segment holding offset.
func segmentTxns(t *testing.T, l *Log, offset int64) (base int64, txns []txnindex.AbortedTxn) {
	t.Helper()
	l.mu.RLock()
	s := l.segments[l.segments.find(offset)]
	l.mu.RUnlock()
	txns, err := s.CollectAbortedTxns(nil, math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	return s.BaseOffset(), txns
}

// txnFile is the .txnindex file holding entries, 34 bytes each.
func txnFile(entries ...txnindex.AbortedTxn) []byte {
	b := []byte{}
	for _, a := range entries {
		b = a.AppendTo(b)
	}
	return b
}

// TestCompactCarriesTxnIndex: the aborted transactions of the segments a clean replaces go to the
// cleaned segment's .txnindex, byte for byte and in order, and survive a reopen; the replaced
// segments' .txnindex files go with them.
func TestCompactCarriesTxnIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, compactConfig(), WithClock(clock.Now))
		for i := range 200 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%5), value: bytes.Repeat([]byte("v"), 20)})
		}
		bases := segmentBases(l)
		require.Greater(t, len(bases), 4)
		// One entry in each of the first two segments, whose markers they hold.
		e0 := txnindex.AbortedTxn{ProducerID: 11, FirstOffset: bases[0], LastOffset: bases[1] - 1, LastStableOffset: bases[0]}
		e1 := txnindex.AbortedTxn{ProducerID: 12, FirstOffset: bases[0] + 1, LastOffset: bases[1] + 1, LastStableOffset: bases[0] + 1}
		require.Equal(t, bases[0], appendAbortedTxnTo(t, l, 0, e0))
		require.Equal(t, bases[1], appendAbortedTxnTo(t, l, 1, e1))
		require.Equal(t, txnFile(e0), fsReadFile(t, fsy, segPath(dir, bases[0], txnIndexSuffix)))
		require.Equal(t, txnFile(e1), fsReadFile(t, fsy, segPath(dir, bases[1], txnIndexSuffix)))

		// The first clean copies each full segment alone (groups go by the segments' sizes before
		// cleaning), and its txn index with it.
		r, err := l.Compact(context.Background())
		require.NoError(t, err)
		require.Equal(t, r.SegmentsBefore, r.SegmentsAfter)
		require.Equal(t, []int64{bases[0], bases[1]}, segmentBases(l)[:2])
		require.Equal(t, txnFile(e0), fsReadFile(t, fsy, segPath(dir, bases[0], txnIndexSuffix)))
		require.Equal(t, txnFile(e1), fsReadFile(t, fsy, segPath(dir, bases[1], txnIndexSuffix)))
		// The next merges the small cleaned segments: both txn indexes go to the one segment.
		for i := range 100 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%5), value: bytes.Repeat([]byte("w"), 20)})
		}
		r, err = l.Compact(context.Background())
		require.NoError(t, err)
		require.Greater(t, r.SegmentsBefore, r.SegmentsAfter, "the clean merged segments")
		base, txns := segmentTxns(t, l, e1.LastOffset)
		require.Equal(t, bases[0], base, "one cleaned segment holds both segments' offsets")
		require.Equal(t, []txnindex.AbortedTxn{e0, e1}, txns)
		require.Equal(t, txnFile(e0, e1), fsReadFile(t, fsy, segPath(dir, bases[0], txnIndexSuffix)))
		for _, name := range fsListDir(t, fsy, dir) {
			require.NotContains(t, name, segment.CleanedSuffix)
			require.NotContains(t, name, segment.SwapSuffix)
			require.NotEqual(t, segmentName(bases[1])+txnIndexSuffix, name, "the replaced segment's txn index went")
		}
		require.Equal(t, 1, countSuffix(fsListDir(t, fsy, dir), txnIndexSuffix))

		require.NoError(t, l.Close())
		l = openTestLog(t, fsy, dir, compactConfig(), WithClock(clock.Now))
		base, txns = segmentTxns(t, l, e1.LastOffset)
		require.Equal(t, bases[0], base)
		require.Equal(t, []txnindex.AbortedTxn{e0, e1}, txns)
	})
}

// countSuffix counts the names that end with suffix.
func countSuffix(names []string, suffix string) int {
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}

// TestLoadTxnIndexLeftovers: at open, ".txnindex.cleaned" files go, a ".txnindex.swap" beside its
// ".log.swap" replaces the segment's txn index, one without it goes, ".txnindex.deleted" and
// ".txnindex.<n>.deleted" go, and a .txnindex without its .log goes.
func TestLoadTxnIndexLeftovers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		appendBatches(t, l, 4, 5)
		old := txnindex.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 0}
		appendAbortedTxnTo(t, l, 0, old)
		require.NoError(t, l.Close())
		require.Equal(t, txnFile(old), fsReadFile(t, fsy, segPath(dir, 0, txnIndexSuffix)))

		// A swap of segment 0 complete on disk: its files under ".swap", its txn index another.
		swapped := txnindex.AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: 9, LastStableOffset: 1}
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			fsWriteFile(t, fsy, segPath(dir, 0, suf+segment.SwapSuffix), fsReadFile(t, fsy, segPath(dir, 0, suf)))
		}
		fsWriteFile(t, fsy, segPath(dir, 0, txnIndexSuffix+segment.SwapSuffix), txnFile(swapped))
		leftovers := []string{
			segmentName(0) + txnIndexSuffix + segment.CleanedSuffix,
			segmentName(500) + txnIndexSuffix + segment.SwapSuffix, // no .log.swap at 500
			segmentName(0) + txnIndexSuffix + deletedSuffix,
			segmentName(0) + txnIndexSuffix + ".2" + deletedSuffix,
			segmentName(700) + txnIndexSuffix, // no .log at 700
		}
		for _, name := range leftovers {
			fsWriteFile(t, fsy, filepath.Join(dir, name), txnFile(old))
		}

		l = openTestLog(t, fsy, dir, baseConfig())
		names := fsListDir(t, fsy, dir)
		for _, name := range leftovers {
			require.NotContains(t, names, name)
		}
		for _, name := range names {
			require.NotContains(t, name, segment.SwapSuffix)
		}
		require.Equal(t, txnFile(swapped), fsReadFile(t, fsy, segPath(dir, 0, txnIndexSuffix)))
		_, txns := segmentTxns(t, l, 0)
		require.Equal(t, []txnindex.AbortedTxn{swapped}, txns)
		require.Equal(t, 1, countSuffix(names, txnIndexSuffix))
	})
}

// TestLoadCorruptTxnIndex: a corrupt .txnindex does not fail the open: it is emptied, with a
// warning, and the log reads as before.
func TestLoadCorruptTxnIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, baseConfig())
		want := appendBatches(t, l, 4, 5)
		require.NoError(t, l.Close())
		name := segPath(dir, 0, txnIndexSuffix)
		fsWriteFile(t, fsy, name, make([]byte, 27))

		var logs bytes.Buffer
		l = openTestLog(t, fsy, dir, baseConfig(), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		require.Contains(t, logs.String(), `"level":"WARN","msg":"corrupt transaction index emptied`)
		require.Contains(t, logs.String(), "27 bytes are not a whole number of 34-byte entries")
		require.Equal(t, []byte{}, fsReadFile(t, fsy, name))
		_, txns := segmentTxns(t, l, 0)
		require.Empty(t, txns)
		requireSameRecords(t, want, readAllRecords(t, l))
		require.True(t, slices.Contains(fsListDir(t, fsy, dir), segmentName(0)+txnIndexSuffix))
	})
}
