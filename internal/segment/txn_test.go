package segment

import (
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/txnindex"
)

// txnBytes is the .txnindex file holding entries: 34 bytes each, version 0, big-endian.
func txnBytes(entries ...txnindex.AbortedTxn) []byte {
	b := []byte{}
	for _, a := range entries {
		b = a.AppendTo(b)
	}
	return b
}

// fileBytes returns the bytes of the file at name, or nil when there is none.
func fileBytes(t *testing.T, fsy fsys.FS, name string) []byte {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
		return nil
	}
	defer func() { require.NoError(t, f.Close()) }()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	if size > 0 {
		_, err = f.ReadAt(b, 0)
		require.NoError(t, err)
	}
	return b
}

// dirNames lists the file names in dir.
func dirNames(t *testing.T, fsy fsys.FS, dir string) []string {
	t.Helper()
	entries, err := fsy.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func allTxns(t *testing.T, s *Segment) []txnindex.AbortedTxn {
	t.Helper()
	got, err := s.CollectAbortedTxns(nil, math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	return got
}

// TestTxnIndexLifecycle: no .txnindex until the first entry; entries appended are in the file byte
// for byte, survive a reopen, are collected by range, and a truncation of the segment drops those
// whose marker it cut.
func TestTxnIndexLifecycle(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		caches := Caches{Files: NewFileCache(1<<20, slog.New(slog.DiscardHandler)), Positions: NewPositionCache(1 << 20)}
		cfg := testConfig()
		s, err := Create(fsy, dir, 0, cfg, caches, false)
		require.NoError(t, err)
		name := filepath.Join(dir, "00000000000000000000.txnindex")
		require.Equal(t, name, s.Path(TxnIndexSuffix))
		for _, b := range [][]byte{batch(t, 0, 3, 1000), batch(t, 3, 3, 1000), batch(t, 6, 3, 1000)} {
			appendBatch(t, s, b)
		}
		require.NoError(t, s.Sync())
		require.NoError(t, s.SyncIndexes())
		require.Nil(t, fileBytes(t, fsy, name), "no file before the first entry")
		require.Empty(t, allTxns(t, s))
		require.NotContains(t, dirNames(t, fsy, dir), "00000000000000000000.txnindex")

		// Offsets of the batches stand in for the markers: 2, 5 and 8 end the three batches.
		e1 := txnindex.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 0}
		e2 := txnindex.AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: 5, LastStableOffset: 1}
		e3 := txnindex.AbortedTxn{ProducerID: 3, FirstOffset: 6, LastOffset: 8, LastStableOffset: 6}
		for _, a := range []txnindex.AbortedTxn{e1, e2, e3} {
			require.NoError(t, s.AppendAbortedTxn(a))
		}
		err = s.AppendAbortedTxn(txnindex.AbortedTxn{ProducerID: 4, FirstOffset: 7, LastOffset: 8})
		require.ErrorIs(t, err, txnindex.ErrOutOfOrder)
		require.Equal(t, txnBytes(e1, e2, e3), fileBytes(t, fsy, name))
		require.Equal(t, []txnindex.AbortedTxn{e1, e2, e3}, allTxns(t, s))
		got, err := s.CollectAbortedTxns(nil, 3, 6)
		require.NoError(t, err)
		require.Equal(t, []txnindex.AbortedTxn{e2}, got, "e1 ends before 3, e3 starts at 6")
		got, err = s.CollectAbortedTxns(nil, 2, 7)
		require.NoError(t, err)
		require.Equal(t, []txnindex.AbortedTxn{e1, e2, e3}, got, "fetch offset at e1's marker, upper bound past e3's start")

		require.NoError(t, s.Seal())
		require.NoError(t, s.Close())
		require.ErrorIs(t, s.AppendAbortedTxn(txnindex.AbortedTxn{LastOffset: 100}), txnindex.ErrClosed)

		r, err := Open(fsy, dir, 0, cfg, caches, false)
		require.NoError(t, err)
		rep, err := r.Load(false, NoCut)
		require.NoError(t, err)
		require.Nil(t, rep.TxnIndexReset)
		require.False(t, r.TxnIndexCorrupt())
		require.Equal(t, []txnindex.AbortedTxn{e1, e2, e3}, allTxns(t, r))

		// Cut at the batch holding offset 5: e2's and e3's markers go.
		pos, err := r.PositionOf(5)
		require.NoError(t, err)
		r.HoldMappings()
		require.NoError(t, r.Truncate(pos))
		r.ReleaseMappings()
		require.Equal(t, int64(3), r.NextOffset())
		require.Equal(t, []txnindex.AbortedTxn{e1}, allTxns(t, r))
		require.Equal(t, txnBytes(e1), fileBytes(t, fsy, name))

		// TruncateTxnIndex alone drops at the offset given, the data untouched.
		require.NoError(t, r.TruncateTxnIndex(3))
		require.Equal(t, []txnindex.AbortedTxn{e1}, allTxns(t, r))
		require.NoError(t, r.TruncateTxnIndex(2))
		require.Empty(t, allTxns(t, r))
		require.Equal(t, []byte{}, fileBytes(t, fsy, name))
		require.Equal(t, int64(3), r.NextOffset())
		require.NoError(t, r.Close())
	})
}

// TestTxnIndexRetireRemove: Retire renames the .txnindex with the others, ".deleted" or
// ".<n>.deleted", and removal deletes it; Remove of a segment never retired deletes it too.
func TestTxnIndexRetireRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		a := txnindex.AbortedTxn{ProducerID: 9, FirstOffset: 7, LastOffset: 8, LastStableOffset: 7}
		for _, suffix := range []string{DeletedSuffix, ".1" + DeletedSuffix} {
			s, err := Create(fsy, dir, 7, testConfig(), Caches{}, false)
			require.NoError(t, err)
			appendBatch(t, s, batch(t, 7, 2, 1000))
			require.NoError(t, s.AppendAbortedTxn(a))
			require.NoError(t, s.Retire(time.Unix(100, 0), suffix))
			require.Equal(t, []string{
				"00000000000000000007.index" + suffix,
				"00000000000000000007.log" + suffix,
				"00000000000000000007.timeindex" + suffix,
				"00000000000000000007.txnindex" + suffix,
			}, dirNames(t, fsy, dir))
			require.Equal(t, txnBytes(a), fileBytes(t, fsy, filepath.Join(dir, "00000000000000000007.txnindex"+suffix)))
			require.Equal(t, []txnindex.AbortedTxn{a}, allTxns(t, s), "reads in progress still collect")
			removed, err := s.RemoveIfDue(time.Unix(100, 0), false)
			require.NoError(t, err)
			require.True(t, removed)
			require.Empty(t, dirNames(t, fsy, dir))
		}

		s, err := Create(fsy, dir, 7, testConfig(), Caches{}, false)
		require.NoError(t, err)
		require.NoError(t, s.AppendAbortedTxn(a))
		require.Contains(t, dirNames(t, fsy, dir), "00000000000000000007.txnindex")
		require.NoError(t, s.Remove())
		require.Empty(t, dirNames(t, fsy, dir))

		// A segment without entries retires and goes without a .txnindex.
		s, err = Create(fsy, dir, 7, testConfig(), Caches{}, false)
		require.NoError(t, err)
		require.NoError(t, s.Retire(time.Unix(100, 0), DeletedSuffix))
		require.Equal(t, []string{"00000000000000000007.index.deleted", "00000000000000000007.log.deleted",
			"00000000000000000007.timeindex.deleted"}, dirNames(t, fsy, dir))
		require.NoError(t, s.RemoveRetired())
		require.Empty(t, dirNames(t, fsy, dir))
	})
}

// TestTxnIndexSwap: a segment made by CreateCleaned writes "<base>.txnindex.cleaned", SetSuffix
// carries it to ".swap" and to its final name, and OpenSwap reads it under ".swap".
func TestTxnIndexSwap(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		cfg := testConfig()
		a := txnindex.AbortedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 11, LastStableOffset: 10}
		b := txnindex.AbortedTxn{ProducerID: 2, FirstOffset: 12, LastOffset: 13, LastStableOffset: 12}
		s, err := CreateCleaned(fsy, dir, 10, cfg, Caches{})
		require.NoError(t, err)
		appendBatch(t, s, batch(t, 10, 4, 1000))
		require.NoError(t, s.AppendAbortedTxn(a))
		require.NoError(t, s.AppendAbortedTxn(b))
		require.NoError(t, s.Seal())
		require.Equal(t, txnBytes(a, b), fileBytes(t, fsy, filepath.Join(dir, "00000000000000000010.txnindex.cleaned")))

		require.NoError(t, s.SetSuffix(SwapSuffix))
		require.Equal(t, []string{
			"00000000000000000010.index.swap",
			"00000000000000000010.log.swap",
			"00000000000000000010.timeindex.swap",
			"00000000000000000010.txnindex.swap",
		}, dirNames(t, fsy, dir))
		require.NoError(t, s.Close())

		r, err := OpenSwap(fsy, dir, 10, cfg, Caches{})
		require.NoError(t, err)
		_, err = r.Load(true, NoCut)
		require.NoError(t, err)
		require.Equal(t, []txnindex.AbortedTxn{a, b}, allTxns(t, r))
		require.NoError(t, r.SetSuffix(""))
		require.Equal(t, []string{
			"00000000000000000010.index",
			"00000000000000000010.log",
			"00000000000000000010.timeindex",
			"00000000000000000010.txnindex",
		}, dirNames(t, fsy, dir))
		require.Equal(t, txnBytes(a, b), fileBytes(t, fsy, filepath.Join(dir, "00000000000000000010.txnindex")))
		// Appends after the rename go to the final name.
		c := txnindex.AbortedTxn{ProducerID: 3, FirstOffset: 13, LastOffset: 14, LastStableOffset: 13}
		require.NoError(t, r.AppendAbortedTxn(c))
		require.Equal(t, txnBytes(a, b, c), fileBytes(t, fsy, filepath.Join(dir, "00000000000000000010.txnindex")))
		require.NoError(t, r.Remove())
		require.Empty(t, dirNames(t, fsy, dir))
	})
}

// TestTxnIndexSetSuffixUndo: when the .txnindex rename fails, the files renamed before it are
// renamed back and the suffix stays.
func TestTxnIndexSetSuffixUndo(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		s, err := CreateCleaned(fsy, dir, 0, testConfig(), Caches{})
		require.NoError(t, err)
		require.NoError(t, s.AppendAbortedTxn(txnindex.AbortedTxn{ProducerID: 1, LastOffset: 1}))
		require.NoError(t, s.Seal())
		// A directory where the .txnindex goes makes its rename fail.
		require.NoError(t, fsy.MkdirAll(filepath.Join(dir, "00000000000000000000.txnindex.swap", "x"), 0o755))
		require.Error(t, s.SetSuffix(SwapSuffix))
		require.Equal(t, CleanedSuffix, s.Suffix())
		names := dirNames(t, fsy, dir)
		for _, want := range []string{"00000000000000000000.log.cleaned", "00000000000000000000.index.cleaned",
			"00000000000000000000.timeindex.cleaned", "00000000000000000000.txnindex.cleaned"} {
			require.True(t, slices.Contains(names, want), want)
		}
		require.NoError(t, s.Remove())
	})
}

// TestTxnIndexCorruptAtOpen: a .txnindex of 27 bytes, or with version 1, does not fail the
// segment: it is emptied, and Load and TxnIndexCorrupt say so; appends then start afresh.
func TestTxnIndexCorruptAtOpen(t *testing.T) {
	good := txnBytes(txnindex.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 0})
	version1 := slices.Clone(good)
	version1[1] = 1
	for _, tc := range []struct {
		name string
		data []byte
	}{{"27 bytes", make([]byte, 27)}, {"version 1", version1}} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
				cfg := testConfig()
				s, err := Create(fsy, dir, 0, cfg, Caches{}, false)
				require.NoError(t, err)
				appendBatch(t, s, batch(t, 0, 2, 1000))
				require.NoError(t, s.Close())
				name := filepath.Join(dir, "00000000000000000000.txnindex")
				f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
				require.NoError(t, err)
				_, err = f.WriteAt(tc.data, 0)
				require.NoError(t, err)
				require.NoError(t, f.Close())

				r, err := Open(fsy, dir, 0, cfg, Caches{}, false)
				require.NoError(t, err)
				rep, err := r.Load(false, NoCut)
				require.NoError(t, err)
				require.ErrorIs(t, rep.TxnIndexReset, txnindex.ErrCorrupt)
				require.True(t, r.TxnIndexCorrupt())
				require.Nil(t, rep.Rebuilt, "the other indexes are whole")
				require.Empty(t, allTxns(t, r))
				require.Equal(t, []byte{}, fileBytes(t, fsy, name))
				a := txnindex.AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: 1, LastStableOffset: 0}
				require.NoError(t, r.AppendAbortedTxn(a))
				require.Equal(t, txnBytes(a), fileBytes(t, fsy, name))
				require.NoError(t, r.Close())
			})
		})
	}
}

// TestTxnIndexStaleAtCreate: a .txnindex left at a new segment's name (an earlier segment's) is
// not the new segment's: Create deletes it, spared or not.
func TestTxnIndexStaleAtCreate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsy fsys.FS, dir string) {
		for _, spared := range []bool{false, true} {
			name := filepath.Join(dir, "00000000000000000005.txnindex")
			f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			_, err = f.WriteAt(txnBytes(txnindex.AbortedTxn{ProducerID: 1, LastOffset: 6}), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			s, err := Create(fsy, dir, 5, testConfig(), Caches{}, spared)
			require.NoError(t, err)
			require.Empty(t, allTxns(t, s))
			require.Nil(t, fileBytes(t, fsy, name))
			require.NoError(t, s.Remove())
		}
	})
}
