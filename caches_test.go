package commitlog

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/segment"
	"github.com/stretchr/testify/require"
)

// smallSegmentConfig rolls a segment every two or three batches of the workload (3 records of
// about 200 bytes each), so that a few hundred batches make dozens of segments.
func smallSegmentConfig() LogConfig {
	cfg := baseConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 256
	cfg.Sync = SyncNever
	return cfg
}

// cacheLimit is the bound the tests set: four segments' files.
const cacheLimit = 4 * filesPerSegment

func logFileCache(l *Log) *segment.FileCache { return l.caches.Files }

// sealedSegments returns l's segments but the active one.
func sealedSegments(l *Log) []*segment.Segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]*segment.Segment(nil), l.segments[:len(l.segments)-1]...)
}

// TestFileCacheBoundsOpenSegments writes a log of dozens of segments under a bound of four
// segments' files and reads it back in order, at random and by time: the files open stay at the
// bound, passing it only by the segment being opened, and every answer is the one an unbounded
// log gives.
func TestFileCacheBoundsOpenSegments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
		want := appendBatches(t, l, 120, 3)
		require.Equal(t, 40, l.SegmentCount())
		c := logFileCache(l)
		open, peak, evicted := c.Stats()
		require.Equal(t, cacheLimit, open)
		require.Equal(t, cacheLimit+filesPerSegment, peak)
		require.Equal(t, l.SegmentCount()-cacheLimit/filesPerSegment, evicted)

		requireSameRecords(t, want, readAllRecords(t, l))
		rng := rand.New(rand.NewPCG(1, 2))
		for range 300 {
			off := rng.IntN(len(want))
			recs, err := l.ReadRecords(int64(off), 1)
			require.NoError(t, err)
			// A read returns the whole batch holding off.
			require.NotEmpty(t, recs)
			requireSameRecords(t, want[recs[0].Offset:recs[0].Offset+int64(len(recs))], recs)
			require.LessOrEqual(t, recs[0].Offset, int64(off))

			got, err := l.OffsetForTime(want[off].Timestamp)
			require.NoError(t, err)
			require.Equal(t, int64(off), got)
		}
		open, peak, _ = c.Stats()
		require.Equal(t, cacheLimit, open)
		require.Equal(t, cacheLimit+filesPerSegment, peak)

		require.NoError(t, l.Close())
		open, _, _ = c.Stats()
		require.Zero(t, open)
	})
}

// TestFileCacheReadsHoldSegmentsOpen holds more segments in reads than the bound allows: the
// bound is passed, no read fails, and the last of those reads to end brings the files back to
// the bound.
func TestFileCacheReadsHoldSegmentsOpen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
		want := appendBatches(t, l, 60, 3)
		c := logFileCache(l)
		sealed := sealedSegments(l)
		require.Greater(t, len(sealed), 12)

		held := sealed[:8]
		for _, s := range held {
			s.Acquire()
			require.NoError(t, l.openForRead(s))
		}
		open, _, _ := c.Stats()
		// The eight held: none may be closed. The active segment, idle, may be, as any other.
		require.Equal(t, 8*filesPerSegment, open)
		buf := make([]byte, 0, segment.LocateChunk)
		for _, s := range held {
			require.True(t, s.FilesOpen(), "segment %d", s.BaseOffset())
			b, found, err := s.Read(nil, s.BaseOffset(), l.LogEndOffset(), 0, s.Size(), 1, &buf)
			require.NoError(t, err)
			require.True(t, found)
			recs, err := DecodeRecords(nil, b, s.BaseOffset(), 0)
			require.NoError(t, err)
			requireSameRecords(t, want[s.BaseOffset():s.BaseOffset()+int64(len(recs))], recs)
		}
		for i, s := range held {
			l.release(s)
			open, _, _ = c.Stats()
			// Each release closes idle segments while over the bound; the reads still
			// under way keep theirs.
			require.Equal(t, max(len(held)-1-i, cacheLimit/filesPerSegment)*filesPerSegment, open, "after release %d", i)
		}
		// A read after them opens a segment and stays at the bound.
		last := sealed[len(sealed)-1]
		recs, err := l.ReadRecords(last.BaseOffset(), 1)
		require.NoError(t, err)
		requireSameRecords(t, want[last.BaseOffset():last.BaseOffset()+int64(len(recs))], recs)
		open, _, _ = c.Stats()
		require.Equal(t, cacheLimit, open)
	})
}

// TestFileCacheRetiredSegmentReopens: a read that acquired a segment whose files were closed
// while idle, then saw retention delete the segment, opens the files under their "*.deleted"
// names and reads the records; its release deletes them.
func TestFileCacheRetiredSegmentReopens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := smallSegmentConfig()
		cfg.FileDeleteDelay = -1 // delete as soon as no read holds the files
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, cfg, WithMaxOpenFiles(cacheLimit))
		want := appendBatches(t, l, 60, 3)
		s := sealedSegments(l)[0]
		require.False(t, s.FilesOpen(), "the oldest segment's files should have been closed")

		l.mu.RLock()
		s.Acquire()
		l.mu.RUnlock()
		setLogConf(l, func(c *LogConfig) { c.RetentionBytes = 0 }) // every sealed segment goes
		n, err := l.ApplyRetentionAt(testEpoch)
		require.NoError(t, err)
		require.Greater(t, n, 10)
		require.True(t, s.Retired())
		require.False(t, fsExists(t, fsy, segPath(dir, s.BaseOffset(), logSuffix)))
		require.True(t, fsExists(t, fsy, segPath(dir, s.BaseOffset(), logSuffix+deletedSuffix)))

		require.NoError(t, l.openForRead(s))
		buf := make([]byte, 0, segment.LocateChunk)
		b, found, err := s.Read(nil, s.BaseOffset(), l.LogEndOffset(), 0, s.Size(), 1, &buf)
		require.NoError(t, err)
		require.True(t, found)
		recs, err := DecodeRecords(nil, b, s.BaseOffset(), 0)
		require.NoError(t, err)
		requireSameRecords(t, want[s.BaseOffset():s.BaseOffset()+int64(len(recs))], recs)

		l.release(s)
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			require.False(t, fsExists(t, fsy, segPath(dir, s.BaseOffset(), suf+deletedSuffix)), suf)
		}
		open, _, _ := logFileCache(l).Stats()
		require.Equal(t, filesPerSegment, open, "only the active segment is left")
	})
}

// TestFileCacheTruncateIntoClosedSegment truncates the log into a sealed segment whose files were
// closed while idle: it becomes the active segment, takes appends, and a reopen finds the same log.
func TestFileCacheTruncateIntoClosedSegment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		l := openTestLog(t, fsy, dir, smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
		want := appendBatches(t, l, 60, 3)
		s := sealedSegments(l)[3]
		require.False(t, s.FilesOpen())
		cut := s.BaseOffset() + 3 // the second batch of the segment
		require.NoError(t, l.TruncateTo(cut))
		require.Equal(t, cut, l.LogEndOffset())
		require.Equal(t, s, l.active())
		require.True(t, s.FilesOpen())
		require.True(t, s.Pinned())

		more := appendBatches(t, l, 20, 3)
		want = append(want[:cut], more...)
		requireSameRecords(t, want, readAllRecords(t, l))
		open, _, _ := logFileCache(l).Stats()
		require.Equal(t, cacheLimit, open)
		requireIndexesWithin(t, l)

		require.NoError(t, l.Close())
		l2 := openTestLog(t, fsy, dir, smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
		requireSameRecords(t, want, readAllRecords(t, l2))
	})
}

// TestFileCacheBoundsRecovery reopens a log of dozens of segments under the bound, after a clean
// close and after a crash (every segment rescanned, every index rebuilt): recovery opens the
// segments one after the other, never more than the bound and the one being loaded, and leaves
// the bound's worth open.
func TestFileCacheBoundsRecovery(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "clean", true: "crash"}[crash]
		t.Run(name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := t.TempDir()
				l, err := OpenLog(dir, smallSegmentConfig(), withFS(fsy), WithClock(fixedClock), WithMaxOpenFiles(-1))
				require.NoError(t, err)
				want := appendBatches(t, l, 120, 3)
				segs := l.SegmentCount()
				open, _, evicted := logFileCache(l).Stats()
				require.Equal(t, segs*filesPerSegment, open, "unbounded: every segment stays open")
				require.Zero(t, evicted)
				require.NoError(t, l.Close())
				if crash {
					writeTestState(t, fsy, dir, logState{recoveryPoint: 0})
				}

				l = openTestLog(t, fsy, dir, smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
				open, peak, evicted := logFileCache(l).Stats()
				require.Equal(t, cacheLimit, open)
				require.Equal(t, cacheLimit+filesPerSegment, peak)
				if crash {
					// After a crash the leader epochs are rebuilt from the batches, a second pass
					// over the segments, which opens and closes them again.
					require.GreaterOrEqual(t, evicted, segs-cacheLimit/filesPerSegment)
				} else {
					require.Equal(t, segs-cacheLimit/filesPerSegment, evicted)
				}
				requireSameRecords(t, want, readAllRecords(t, l))
				requireIndexesWithin(t, l)
			})
		})
	}
}

// TestFileCacheSharedByStore: one bound covers every partition of every topic of a store; active
// segments count against it and are never closed.
func TestFileCacheSharedByStore(t *testing.T) {
	const limit = 10 * filesPerSegment
	s, err := OpenInMemory(WithClock(fixedClock), WithMaxOpenFiles(limit))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c := s.o.caches.Files
	ctx := context.Background()
	var logs []*Log
	for _, name := range []string{"a", "b", "c"} {
		tp, err := s.CreateTopic(name, TopicConfig{Partitions: 2, LogConfig: smallSegmentConfig()})
		require.NoError(t, err)
		for _, p := range tp.parts() {
			require.Same(t, c, logFileCache(p.log))
			logs = append(logs, p.log)
		}
		for i := range 40 {
			require.NoError(t, tp.Append(ctx, workloadRecords(i*6, 6)...))
		}
	}
	open, _, evicted := c.Stats()
	require.Equal(t, limit, open)
	require.Positive(t, evicted)
	for _, l := range logs {
		require.Equal(t, int64(0), stMust(l.ReadRecords(0, 1))[0].Offset)
	}
	open, _, _ = c.Stats()
	require.Equal(t, limit, open)

	// A bound below one segment's files: each active segment is closed once idle. The three
	// partitions are appended to at once (Topic.Append writes a call's partitions in parallel),
	// so a segment opening finds the others' writers at work and cannot close their files; each
	// writer closes them as it ends, and none is left open.
	s2, err := OpenInMemory(WithMaxOpenFiles(1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	tp, err := s2.CreateTopic("t", TopicConfig{Partitions: 3, LogConfig: smallSegmentConfig()})
	require.NoError(t, err)
	for i := range 30 {
		require.NoError(t, tp.Append(ctx, workloadRecords(i*6, 6)...))
	}
	open, _, _ = s2.o.caches.Files.Stats()
	require.Zero(t, open)
	for _, p := range tp.parts() {
		next := int64(0)
		for rec, err := range p.Scan(0) {
			require.NoError(t, err)
			if rec.Offset >= p.LogEndOffset() {
				break
			}
			require.Equal(t, next, rec.Offset)
			next++
		}
		require.Equal(t, p.LogEndOffset(), next)
	}
	require.NoError(t, s2.Close())
	open, _, _ = s2.o.caches.Files.Stats()
	require.Zero(t, open)
}

// TestFileCacheConcurrentReads runs random reads and time lookups in several goroutines while
// a writer appends and rolls, under a bound of four segments: segments are closed and reopened
// under the reads constantly, and every read returns the records written (run with -race).
func TestFileCacheConcurrentReads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), smallSegmentConfig(), WithMaxOpenFiles(cacheLimit))
		appendBatches(t, l, 40, 3)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		wg.Go(func() {
			defer cancel()
			for range 80 {
				first := int(l.LogEndOffset())
				if err := l.Append(ctx, workloadRecords(first, 3)...); err != nil {
					errs <- err
					return
				}
			}
		})
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				for ctx.Err() == nil {
					leo := l.LogEndOffset()
					off := rng.Int64N(leo)
					recs, err := l.ReadRecords(off, 1+rng.IntN(2048))
					if err == nil && (len(recs) == 0 || recs[0].Offset > off) {
						err = errors.New("read returned no batch holding the offset")
					}
					for _, r := range recs {
						if d := sameWorkloadRecord(r); d != "" && err == nil {
							err = errors.New(d)
						}
					}
					if err == nil && g%2 == 0 {
						var got int64
						got, err = l.OffsetForTime(testEpoch.Add(time.Duration(off) * time.Millisecond))
						if err == nil && got != off {
							err = errors.New("OffsetForTime returned another offset")
						}
					}
					if err != nil {
						errs <- err
						cancel()
						return
					}
				}
			})
		}
		wg.Wait()
		requireNoErrs(t, errs)
		// Reads that held their segments at the last open may have left more open than the bound:
		// the next open closes them; trim is what it runs.
		c := logFileCache(l)
		c.Trim()
		open, _, evicted := c.Stats()
		require.Equal(t, cacheLimit, open)
		require.Positive(t, evicted)
	})
}

// sameWorkloadRecord reports how r differs from the workload's record at its offset.
func sameWorkloadRecord(r *Record) string {
	w := workloadRecord(int(r.Offset))
	if string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) || !r.Timestamp.Equal(w.Timestamp) {
		return "record at offset " + string(w.Key) + " differs from the one written"
	}
	return ""
}

// TestMaxOpenFilesOption: the default follows the descriptor limit, a positive n is the bound, a
// negative one removes it.
func TestMaxOpenFilesOption(t *testing.T) {
	limitOf := func(opts ...Option) int { return newOptions(opts).caches.Files.Limit() }
	want := DefaultMaxOpenFiles
	if n, ok := descriptorLimit(); ok {
		want = min(DefaultMaxOpenFiles, max(n/4, minOpenFiles))
	}
	require.Equal(t, want, limitOf())
	require.Equal(t, want, limitOf(WithMaxOpenFiles(0)))
	require.Equal(t, 30, limitOf(WithMaxOpenFiles(30)))
	require.Equal(t, math.MaxInt, limitOf(WithMaxOpenFiles(-1)))
	// The file system of one store given to another gets the new store's cache, not both.
	o := newOptions([]Option{WithMaxOpenFiles(30)})
	o2 := newOptions([]Option{withFS(o.fs), WithMaxOpenFiles(60)})
	require.Equal(t, 60, o2.caches.Files.Limit())
	require.NotSame(t, o.caches.Files, o2.caches.Files)
}
