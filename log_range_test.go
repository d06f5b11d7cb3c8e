package commitlog

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// rangesFrom collects every range from offset on, each written to a fresh writer made by to,
// and returns the bytes and the ranges' ends.
func rangesFrom(t *testing.T, l *Log, from int64, maxBytes int, to func(r *BatchRange) []byte) ([]byte, []int64) {
	t.Helper()
	var out []byte
	var ends []int64
	for off := from; off < l.LogEndOffset(); {
		r, err := l.ReadRange(off, maxBytes)
		require.NoError(t, err)
		require.Greater(t, r.Len(), int64(0), "range at %d", off)
		out = append(out, to(r)...)
		require.NoError(t, r.Close())
		require.NoError(t, r.Close(), "Close twice")
		ends = append(ends, r.NextOffset())
		off = r.NextOffset()
	}
	return out, ends
}

func toBuffer(t *testing.T) func(r *BatchRange) []byte {
	return func(r *BatchRange) []byte {
		var b bytes.Buffer
		n, err := r.WriteTo(&b)
		require.NoError(t, err)
		require.Equal(t, r.Len(), n)
		return b.Bytes()
	}
}

func TestReadRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 8 << 10
		l := openTestLog(t, fsy, t.TempDir(), cfg)
		appendBatches(t, l, 40, 10) // 400 records, about 1.6 KiB a batch: 5 per segment
		want := readAllBatches(t, l, 0)

		got, ends := rangesFrom(t, l, 0, 1<<20, toBuffer(t))
		requireSameBytes(t, want, got)
		// A range never leaves its segment: one range per segment, each ending at the next
		// segment's base offset.
		require.Equal(t, append(segmentBases(l)[1:], 400), ends)

		// maxBytes smaller than a batch: one whole batch a range.
		got, ends = rangesFrom(t, l, 0, 1, toBuffer(t))
		requireSameBytes(t, want, got)
		require.Len(t, ends, 40)
		require.Equal(t, int64(10), ends[0])

		// From the middle of a batch: the batch holding it comes whole.
		mid, err := l.ReadBatches(nil, 205, 1)
		require.NoError(t, err)
		r, err := l.ReadRange(205, 1)
		require.NoError(t, err)
		requireSameBytes(t, mid, toBuffer(t)(r))
		require.Equal(t, int64(210), r.NextOffset())
		require.NoError(t, r.Close())

		// At the end: empty. Past it, and below the start: out of range.
		r, err = l.ReadRange(400, 1<<20)
		require.NoError(t, err)
		require.Equal(t, int64(0), r.Len())
		require.Equal(t, int64(400), r.NextOffset())
		n, err := r.WriteTo(io.Discard)
		require.NoError(t, err)
		require.Equal(t, int64(0), n)
		require.NoError(t, r.Close())
		_, err = l.ReadRange(401, 1<<20)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		_, err = l.ReadRange(-1, 1<<20)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
	})
}

// TestReadRangeSendfile sends ranges over a loopback TCP connection and into an *os.File, the
// paths where Linux uses sendfile(2), and checks the bytes.
func TestReadRangeSendfile(t *testing.T) {
	cfg := baseConfig()
	cfg.SegmentBytes = 64 << 10
	l := openTestLog(t, fsys.OS(), t.TempDir(), cfg)
	appendBatches(t, l, 100, 20)
	want := readAllBatches(t, l, 0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		received <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	total := int64(0)
	for off := int64(0); off < l.LogEndOffset(); {
		r, err := l.ReadRange(off, 16<<10)
		require.NoError(t, err)
		n, err := r.WriteTo(conn.(*net.TCPConn))
		require.NoError(t, err)
		require.Equal(t, r.Len(), n)
		total += n
		off = r.NextOffset()
		require.NoError(t, r.Close())
	}
	require.NoError(t, conn.Close())
	require.Equal(t, int64(len(want)), total)
	requireSameBytes(t, want, <-received)

	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer f.Close()
	got, _ := rangesFrom(t, l, 0, 1<<20, func(r *BatchRange) []byte {
		start, err := f.Seek(0, io.SeekCurrent)
		require.NoError(t, err)
		n, err := r.WriteTo(f)
		require.NoError(t, err)
		require.Equal(t, r.Len(), n)
		b := make([]byte, n)
		_, err = f.ReadAt(b, start)
		require.NoError(t, err)
		_, err = f.Seek(start+n, io.SeekStart)
		require.NoError(t, err)
		return b
	})
	requireSameBytes(t, want, got)

	// On Linux the bytes went by sendfile(2), not through a buffer.
	if runtime.GOOS == "linux" {
		r, err := l.ReadRange(0, 1<<20)
		require.NoError(t, err)
		defer r.Close()
		n, handled, err := sendfile(f, r.s.File(), r.pos, r.Len())
		require.NoError(t, err)
		require.True(t, handled, "sendfile used for an *os.File")
		require.Equal(t, r.Len(), n)
	}
}

// TestReadRangeHoldsSegment: a range keeps its segment's files through retention, which removes
// them once the range is closed.
func TestReadRangeHoldsSegment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		cfg := baseConfig()
		cfg.SegmentBytes, cfg.RetentionBytes, cfg.FileDeleteDelay = 8<<10, 1, -1
		l := openTestLog(t, fsy, dir, cfg)
		appendBatches(t, l, 20, 10)
		first, err := l.ReadBatches(nil, 0, 8<<10)
		require.NoError(t, err)

		r, err := l.ReadRange(0, 8<<10)
		require.NoError(t, err)
		n, err := l.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Greater(t, n, 0)
		require.Greater(t, l.LogStartOffset(), int64(0))
		require.True(t, fsExists(t, fsy, segPath(dir, 0, logSuffix+deletedSuffix)), "held segment's file stays")

		requireSameBytes(t, first[:r.Len()], toBuffer(t)(r))
		require.NoError(t, r.Close())
		require.False(t, fsExists(t, fsy, segPath(dir, 0, logSuffix+deletedSuffix)), "removed once the range is closed")
	})
}

// TestReadRangeAfterTruncationAndClose: a range whose segment was truncated under it, or whose
// log closed, reports it instead of sending other bytes quietly.
func TestReadRangeAfterTruncationAndClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, l, 2, 10)
		r, err := l.ReadRange(0, 1<<20)
		require.NoError(t, err)
		require.NoError(t, l.TruncateTo(0))
		appendBatches(t, l, 2, 10) // new batches at the same positions
		_, err = r.WriteTo(io.Discard)
		require.ErrorIs(t, err, ErrOffsetOutOfRange)
		require.NoError(t, r.Close())

		r, err = l.ReadRange(0, 1<<20)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		_, err = r.WriteTo(&bytes.Buffer{})
		require.ErrorIs(t, err, ErrClosed)
		require.NoError(t, r.Close())
	})
}

// TestCutBelowMatchesEveryTruncation: cutBelow, asked about any earlier truncation count, gives
// the lowest log end offset a truncation since then left, as a scan of every truncation would,
// however many ran; past maxCutFloors rising truncations it may only answer lower (a cut that did
// not happen reported, never a cut missed).
func TestCutBelowMatchesEveryTruncation(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		l := &Log{}
		var leos []int64 // leos[g-1]: the log end offset truncation g left
		for g := uint64(1); g <= 500; g++ {
			leo := rng.Int64N(1000)
			if seed == 3 {
				leo = int64(g) // rising: more floors than kept
			}
			l.truncGen.Store(g)
			l.noteCutFloor(g, leo)
			leos = append(leos, leo)
			require.LessOrEqual(t, len(l.cutFloors), maxCutFloors)
			for from := uint64(0); from < g; from++ {
				want := slices.Min(leos[from:])
				to, cut := l.cutBelow(from, want+1)
				require.True(t, cut, "seed %d gen %d from %d", seed, g, from)
				if seed != 3 || g-from <= maxCutFloors-1 {
					require.Equal(t, want, to, "seed %d gen %d from %d", seed, g, from)
				} else {
					require.LessOrEqual(t, to, want, "seed %d gen %d from %d", seed, g, from)
				}
				if seed != 3 {
					_, cut = l.cutBelow(from, want)
					require.False(t, cut, "seed %d gen %d from %d", seed, g, from)
				}
			}
			_, cut := l.cutBelow(g, 0)
			require.False(t, cut)
		}
	}
}
