package commitlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// compactConfig is a compacted log of small segments, so that a few hundred records make many.
func compactConfig() LogConfig {
	cfg := baseConfig()
	cfg.SegmentBytes = 2048
	cfg.CleanupPolicy = CleanupCompact
	cfg.DeleteRetention = time.Hour
	return cfg
}

// keyed is a record of the compaction tests: key, value (nil: a tombstone), and its offset once
// appended.
type keyed struct {
	offset int64
	key    string
	value  []byte
}

func (k keyed) tombstone() bool { return k.value == nil }

// scanKeyed returns every record of l from its log start offset, as keyed.
func scanKeyed(t *testing.T, l *Log) []keyed {
	t.Helper()
	var out []keyed
	for r, err := range l.Scan(l.LogStartOffset()) {
		require.NoError(t, err)
		out = append(out, keyed{offset: r.Offset, key: string(r.Key), value: cloneOrNil(r.Value)})
	}
	return out
}

// recordsOfKey returns the records of l with key, from its log start offset.
func recordsOfKey(t *testing.T, l *Log, key string) []keyed {
	t.Helper()
	var out []keyed
	for _, r := range scanKeyed(t, l) {
		if r.key == key {
			out = append(out, r)
		}
	}
	return out
}

func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}

// appendKeyed appends recs as one batch at the clock's time and returns them with offsets.
func appendKeyed(t *testing.T, l *Log, now time.Time, recs ...keyed) []keyed {
	t.Helper()
	rs := make([]*Record, len(recs))
	for i, k := range recs {
		rs[i] = &Record{Key: []byte(k.key), Value: k.value, Timestamp: now}
	}
	require.NoError(t, l.Append(context.Background(), rs...))
	out := slices.Clone(recs)
	for i := range out {
		out[i].offset = rs[i].Offset
	}
	return out
}

// compactionModel is what a compacted log must hold, worked out from the appends and the cleans
// alone: after a clean up to the uncleanable offset U, a record below U stays when it is the
// last of its key below U and is not a tombstone whose delete horizon (the time of the first
// clean that kept it plus delete.retention.ms) has come; every record at or past U stays.
type compactionModel struct {
	recs         []keyed
	removed      map[int64]bool
	keptSince    map[int64]time.Time // tombstones: when the first clean kept them
	cleanerPoint int64
	retention    time.Duration
}

func newCompactionModel(retention time.Duration) *compactionModel {
	return &compactionModel{removed: map[int64]bool{}, keptSince: map[int64]time.Time{}, retention: max(retention, 0)}
}

// due says whether a clean at now up to u has anything to do.
func (m *compactionModel) due(u int64, now time.Time) bool {
	if m.cleanerPoint < u {
		return true
	}
	for o, since := range m.keptSince {
		if !m.removed[o] && !since.Add(m.retention).After(now) {
			return true
		}
	}
	return false
}

// clean applies a clean at now up to u.
func (m *compactionModel) clean(u int64, now time.Time) {
	last := map[string]int64{}
	for _, r := range m.recs {
		if r.offset < u {
			last[r.key] = r.offset
		}
	}
	for _, r := range m.recs {
		if r.offset >= u || m.removed[r.offset] {
			continue
		}
		switch {
		case last[r.key] != r.offset:
			m.removed[r.offset] = true
		case r.tombstone():
			since, kept := m.keptSince[r.offset]
			if !kept {
				m.keptSince[r.offset] = now
			} else if !since.Add(m.retention).After(now) {
				m.removed[r.offset] = true
			}
		}
	}
	m.cleanerPoint = max(m.cleanerPoint, u)
}

// live returns the records the log must hold, in offset order.
func (m *compactionModel) live() []keyed {
	var out []keyed
	for _, r := range m.recs {
		if !m.removed[r.offset] {
			out = append(out, r)
		}
	}
	return out
}

// TestCompactMatchesModel appends random keys, values and tombstones (seeded, many seeds),
// compacts at random points while the clock moves, and checks after every clean that reading
// from the start yields exactly the model's records, each at its original offset, in offset
// order; then that a reopened log reads the same. Odd seeds give the cleaner a dedupe buffer of a
// few keys, so that every clean runs in passes.
func TestCompactMatchesModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		for seed := range uint64(12) {
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 17))
				clock := newRepClock()
				cfg := compactConfig()
				smallMap := seed%2 == 1
				if seed%3 == 2 && !smallMap {
					// Tombstones go at the clean after the one that kept them. (With passes, at
					// the next pass of the same clean: the model knows cleans, not passes.)
					cfg.DeleteRetention = -1
				}
				dir := t.TempDir()
				l, err := OpenLog(dir, cfg, withFS(fsy), WithClock(clock.Now))
				require.NoError(t, err)
				defer func() { _ = l.Close() }()
				if smallMap {
					l.cleaning.memory = 512
				}
				model := newCompactionModel(cfg.DeleteRetention)
				keys := 5 + rng.IntN(40)
				passes, cleans := 0, 0
				for step := range 300 {
					switch op := rng.IntN(100); {
					case op < 75:
						n := 1 + rng.IntN(4)
						recs := make([]keyed, n)
						for i := range recs {
							recs[i].key = fmt.Sprintf("k%03d", rng.IntN(keys))
							if rng.IntN(8) != 0 {
								recs[i].value = fmt.Appendf(nil, "value-%d-%d", step, i)
							}
						}
						model.recs = append(model.recs, appendKeyed(t, l, clock.Now(), recs...)...)
					case op < 88:
						clock.Advance(time.Duration(rng.IntN(90)) * time.Minute)
					default:
						u := l.CompactionState().UncleanableOffset
						due := model.due(u, clock.Now())
						res, err := l.Compact(context.Background())
						require.NoError(t, err)
						require.Equal(t, due, res.Passes > 0, "step %d: clean due below %d", step, u)
						if due {
							model.clean(u, clock.Now())
							cleans++
							passes += res.Passes
							require.Equal(t, u, l.CompactionState().CleanerPoint)
						}
						require.Equal(t, model.live(), scanKeyed(t, l), "step %d", step)
					}
				}
				u := l.CompactionState().UncleanableOffset
				due := model.due(u, clock.Now())
				res, err := l.Compact(context.Background())
				require.NoError(t, err)
				require.Equal(t, due, res.Passes > 0)
				if due {
					model.clean(u, clock.Now())
					cleans++
					passes += res.Passes
				}
				want := model.live()
				require.Equal(t, want, scanKeyed(t, l))
				require.Positive(t, cleans)
				if smallMap {
					require.Greater(t, passes, cleans, "a dedupe buffer of a few keys cleans in passes")
				}
				requireIndexesWithin(t, l)
				leo := l.LogEndOffset()

				require.NoError(t, l.Close())
				l, err = OpenLog(dir, cfg, withFS(fsy), WithClock(clock.Now))
				require.NoError(t, err)
				require.Equal(t, leo, l.LogEndOffset())
				require.Equal(t, want, scanKeyed(t, l))
				requireIndexesWithin(t, l)
				for _, name := range fsListDir(t, fsy, dir) {
					require.NotContains(t, name, segment.CleanedSuffix)
					require.NotContains(t, name, segment.SwapSuffix)
				}
			})
		}
	})
}

// TestCompactReadsAtRemovedOffsets checks every read API at the offsets a clean removed: each
// returns the next record kept, and OffsetForTime steps over the gaps.
func TestCompactReadsAtRemovedOffsets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		var all []keyed
		for i := range 60 {
			all = append(all, appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%6), value: fmt.Appendf(nil, "v%d", i)})...)
			clock.Advance(time.Second)
		}
		u := l.CompactionState().UncleanableOffset
		require.Greater(t, u, int64(12), "several sealed segments")
		_, err := l.Compact(context.Background())
		require.NoError(t, err)
		got := scanKeyed(t, l)
		kept := map[int64]bool{}
		for _, r := range got {
			kept[r.offset] = true
		}
		// Below u only the last of each key below u stays.
		last := map[string]int64{}
		for _, r := range all[:u] {
			last[r.key] = r.offset
		}
		for _, r := range all {
			require.Equal(t, r.offset >= u || last[r.key] == r.offset, kept[r.offset], "offset %d", r.offset)
		}
		next := func(off int64) int64 {
			for _, r := range got {
				if r.offset >= off {
					return r.offset
				}
			}
			return -1
		}
		var rec Record
		for off := int64(0); off < l.LogEndOffset(); off++ {
			want := next(off)
			require.NoError(t, l.ReadRecord(off, &rec), "ReadRecord(%d)", off)
			require.Equal(t, want, rec.Offset, "ReadRecord(%d)", off)
			recs, err := l.ReadRecords(off, 1<<20)
			require.NoError(t, err)
			require.NotEmpty(t, recs, "ReadRecords(%d)", off)
			require.Equal(t, want, recs[0].Offset, "ReadRecords(%d)", off)
			b, err := l.ReadBatches(nil, off, 1)
			require.NoError(t, err)
			h, err := recordbatch.ParseHeader(b, 0)
			require.NoError(t, err)
			require.GreaterOrEqual(t, h.LastOffset(), off, "ReadBatches(%d) starts at the batch holding the next record", off)
			// Record r was appended at testEpoch + r s: the first record at or after that time
			// is the first kept record at or after r's offset.
			ts, err := l.OffsetForTime(testEpoch.Add(time.Duration(off) * time.Second))
			require.NoError(t, err)
			require.Equal(t, want, ts, "OffsetForTime of record %d's time", off)
		}
	})
}

// TestCompactReaderMidLog runs a Scan that has yielded part of the log while a clean replaces
// the segments under it: it goes on from where it was, every offset once and increasing, and the
// last value it saw of every key is the key's latest.
func TestCompactReaderMidLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		latest := map[string]string{}
		for i := range 200 {
			k := keyed{key: fmt.Sprintf("k%d", i%9), value: fmt.Appendf(nil, "v%d", i)}
			appendKeyed(t, l, clock.Now(), k)
			latest[k.key] = string(k.value)
		}
		seen := map[string]string{}
		prev := int64(-1)
		n := 0
		for r, err := range l.Scan(0) {
			require.NoError(t, err)
			require.Greater(t, r.Offset, prev)
			prev = r.Offset
			seen[string(r.Key)] = string(r.Value)
			if n++; n == 40 {
				res, err := l.Compact(context.Background())
				require.NoError(t, err)
				require.Positive(t, res.RecordsRemoved)
			}
		}
		require.Equal(t, l.LogEndOffset()-1, prev)
		require.Equal(t, latest, seen)
	})
}

// TestCompactTombstoneForSlowReader checks delete.retention.ms: a tombstone stays readable after
// the clean that first kept it, so that a reader behind it still sees the delete, and goes at the
// first clean once delete.retention.ms has passed since.
func TestCompactTombstoneForSlowReader(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		cfg := compactConfig()
		cfg.DeleteRetention = 2 * time.Hour
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithClock(clock.Now))
		appendKeyed(t, l, clock.Now(), keyed{key: "gone", value: []byte("v1")})
		tomb := appendKeyed(t, l, clock.Now(), keyed{key: "gone"})[0]
		for i := range 60 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("other%d", i%4), value: fmt.Appendf(nil, "o%d", i)})
		}
		_, err := l.Compact(context.Background())
		require.NoError(t, err)
		// A reader that was behind (at offset 0) sees no value of "gone", then its delete.
		require.Equal(t, []keyed{tomb}, recordsOfKey(t, l, "gone"))

		clock.Advance(2*time.Hour - time.Millisecond)
		require.False(t, l.CompactionState().Due, "horizon not reached")
		_, err = l.Compact(context.Background())
		require.NoError(t, err)
		require.Contains(t, scanKeyed(t, l), tomb, "kept until delete.retention.ms has passed")

		clock.Advance(time.Millisecond)
		require.True(t, l.CompactionState().Due, "a passed delete horizon makes the log due")
		res, err := l.Compact(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, res.Passes)
		require.Empty(t, recordsOfKey(t, l, "gone"), "the tombstone is removed after its horizon")
		require.False(t, l.CompactionState().Due, "nothing left to remove")
	})
}

// TestCompactKeyDeletedAndAddedAgain: a key deleted and then written again keeps only its new
// value; the tombstone between goes with the old value.
func TestCompactKeyDeletedAndAddedAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		appendKeyed(t, l, clock.Now(), keyed{key: "k", value: []byte("first")})
		appendKeyed(t, l, clock.Now(), keyed{key: "k"})
		again := appendKeyed(t, l, clock.Now(), keyed{key: "k", value: []byte("again")})[0]
		for i := range 60 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("f%d", i%3), value: []byte("filler-filler-filler")})
		}
		_, err := l.Compact(context.Background())
		require.NoError(t, err)
		require.Equal(t, []keyed{again}, recordsOfKey(t, l, "k"))
	})
}

// TestCompactDeleteAppliesRetention: under compact,delete retention still deletes old segments
// after compaction; under compact alone it deletes none.
func TestCompactDeleteAppliesRetention(t *testing.T) {
	for _, policy := range []CleanupPolicy{CleanupCompact, CleanupCompactDelete} {
		t.Run(policy.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				clock := newRepClock()
				cfg := compactConfig()
				cfg.CleanupPolicy = policy
				cfg.RetentionDuration = time.Hour
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithClock(clock.Now))
				for i := range 80 {
					appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i), value: []byte("value-value-value")})
				}
				clock.Advance(2 * time.Hour)
				for i := range 40 {
					appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i), value: []byte("newer")})
				}
				_, err := l.Compact(context.Background())
				require.NoError(t, err)
				before := l.SegmentCount()
				n, err := l.ApplyRetention()
				require.NoError(t, err)
				if policy == CleanupCompact {
					require.Zero(t, n)
					require.Equal(t, int64(0), l.LogStartOffset())
					return
				}
				require.Positive(t, n)
				require.Equal(t, before-n, l.SegmentCount())
				require.Positive(t, l.LogStartOffset())
				// Every newer record stays: retention took only segments of records older than
				// an hour.
				got := scanKeyed(t, l)
				newer := 0
				for _, r := range got {
					if string(r.value) == "newer" {
						newer++
					}
				}
				require.Equal(t, 40, newer)
			})
		})
	}
}

// TestCompactKeepsProducersLastBatchEmpty: a batch of an idempotent producer whose records all
// go is kept as an empty batch when it is the producer's last (Kafka's RETAIN_EMPTY), so that its
// producer id, epoch and sequence survive; an earlier one goes.
func TestCompactKeepsProducersLastBatchEmpty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		ctx := context.Background()
		producerBatch := func(seq int32, recs ...*Record) []byte {
			return encodeBatchWith(t, recordbatch.Header{ProducerID: 7, ProducerEpoch: 3, BaseSequence: seq}, recs)
		}
		rec := func(k, v string) *Record { return &Record{Key: []byte(k), Value: []byte(v), Timestamp: clock.Now()} }
		_, _, err := l.AppendAsLeader(ctx, producerBatch(0, rec("a", "1"), rec("b", "1")))
		require.NoError(t, err)
		first, last, err := l.AppendAsLeader(ctx, producerBatch(2, rec("a", "2"), rec("b", "2")))
		require.NoError(t, err)
		require.Equal(t, []int64{2, 3}, []int64{first, last})
		for i := range 60 {
			appendKeyed(t, l, clock.Now(), keyed{key: []string{"a", "b"}[i%2], value: fmt.Appendf(nil, "plain%d", i)})
		}
		_, err = l.Compact(context.Background())
		require.NoError(t, err)
		b, err := l.ReadBatches(nil, 0, 1)
		require.NoError(t, err)
		h, err := recordbatch.ParseHeader(b, 0)
		require.NoError(t, err)
		require.Equal(t, int64(2), h.BaseOffset, "the producer's first batch went, its last stayed")
		require.Equal(t, int32(0), h.RecordCount)
		require.Equal(t, int32(1), h.LastOffsetDelta)
		require.Equal(t, int64(7), h.ProducerID)
		require.Equal(t, int16(3), h.ProducerEpoch)
		require.Equal(t, int32(2), h.BaseSequence)
		require.Equal(t, recordbatch.CodecNone, h.Attributes.Codec())
	})
}

// TestCompactRefusesOtherPolicies: Compact of a log whose cleanup.policy does not compact is
// ErrInvalidConfig, and a closed log's is ErrClosed.
func TestCompactRefusesOtherPolicies(t *testing.T) {
	l := openTestLog(t, fsys.NewMemory(), t.TempDir(), baseConfig())
	_, err := l.Compact(context.Background())
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.False(t, l.CompactionState().Due)

	c := openTestLog(t, fsys.NewMemory(), t.TempDir(), compactConfig())
	require.NoError(t, c.Close())
	_, err = c.Compact(context.Background())
	require.ErrorIs(t, err, ErrClosed)
}

// TestCompactCanceled: a clean whose context is done leaves the log as it was and no cleaned
// file behind.
func TestCompactCanceled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		for i := range 100 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%5), value: []byte("v")})
		}
		before := scanKeyed(t, l)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.Compact(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, before, scanKeyed(t, l))
		require.Equal(t, int64(0), l.CompactionState().CleanerPoint)
		for _, name := range fsListDir(t, fsy, l.Dir()) {
			require.NotContains(t, name, segment.CleanedSuffix)
		}
	})
}

// TestCompactSwapRefusedWhenGroupChanged: a group that retention or a truncation changed while
// it was being copied is not swapped in, and its cleaned files are removed.
func TestCompactSwapRefusedWhenGroupChanged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		for i := range 100 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%5), value: []byte("v")})
		}
		l.mu.RLock()
		group := slices.Clone(l.segments[:2])
		l.mu.RUnlock()
		truncs := []uint64{group[0].Truncations(), group[1].Truncations() + 1} // as if truncated since
		cleaned, err := segment.CreateCleaned(l.fs, l.dir, group[0].BaseOffset(), l.segConf(), l.caches)
		require.NoError(t, err)
		require.NoError(t, cleaned.Seal())
		swapped, err := l.swapIn(group, truncs, cleaned)
		require.NoError(t, err)
		require.False(t, swapped)
		for _, name := range fsListDir(t, fsy, l.Dir()) {
			require.NotContains(t, name, segment.CleanedSuffix)
			require.NotContains(t, name, segment.SwapSuffix)
		}
		require.Equal(t, group[0], l.segments[0])
	})
}

// TestCompactConcurrentWithAppendsAndReads cleans over and over while a writer appends and
// readers scan, under the race detector: every scan sees increasing offsets, and at the end the
// latest value of every key is the last one read.
func TestCompactConcurrentWithAppendsAndReads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		ctx := context.Background()
		done := make(chan struct{})
		errs := make(chan error, 8)
		latest := map[string]string{}
		go func() {
			defer close(done)
			for i := range 400 {
				k, v := fmt.Sprintf("k%d", i%11), fmt.Sprintf("v%d", i)
				if err := l.Append(ctx, &Record{Key: []byte(k), Value: []byte(v), Timestamp: clock.Now()}); err != nil {
					errs <- err
					return
				}
				latest[k] = v
			}
		}()
		reader := func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				prev := int64(-1)
				for r, err := range l.Scan(l.LogStartOffset()) {
					if err != nil {
						errs <- err
						return
					}
					if r.Offset <= prev {
						errs <- fmt.Errorf("offset %d after %d", r.Offset, prev)
						return
					}
					prev = r.Offset
				}
			}
		}
		readerDone := make(chan struct{})
		go func() { reader(); close(readerDone) }()
		for stop := false; !stop; {
			select {
			case <-done:
				stop = true
			default:
			}
			if _, err := l.Compact(ctx); err != nil {
				errs <- err
				break
			}
		}
		<-readerDone
		requireNoErrs(t, errs)
		_, err := l.Compact(ctx)
		require.NoError(t, err)
		seen := map[string]string{}
		for _, r := range scanKeyed(t, l) {
			seen[r.key] = string(r.value)
		}
		require.Equal(t, latest, seen)
		requireIndexesWithin(t, l)
	})
}

// TestCompactRefusesKeylessRecords: an append of a record without a key to a compacted log is
// ErrKeylessRecord (an ErrInvalidRecord) and writes nothing, by every append path; a tombstone is
// accepted; a log that does not compact takes keyless records.
func TestCompactRefusesKeylessRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		ctx := context.Background()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig())
		err := l.Append(ctx, &Record{Key: []byte("k"), Value: []byte("v")}, &Record{Value: []byte("no key")})
		require.ErrorIs(t, err, ErrKeylessRecord)
		require.ErrorIs(t, err, ErrInvalidRecord)
		require.Equal(t, int64(0), l.LogEndOffset())
		for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecZstd} {
			b := encodeBatchWith(t, recordbatch.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Attributes: recordbatch.Attributes(0).WithCodec(codec)},
				[]*Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: testEpoch}, {Value: []byte("x"), Timestamp: testEpoch}})
			_, _, err = l.AppendAsLeader(ctx, b)
			require.ErrorIs(t, err, ErrKeylessRecord, "codec %v", codec)
			require.Equal(t, int64(0), l.LogEndOffset())
		}
		require.NoError(t, l.Append(ctx, &Record{Key: []byte("k")}), "a tombstone has a key")
		require.Equal(t, int64(1), l.LogEndOffset())

		plain := openTestLog(t, fsy, t.TempDir(), baseConfig())
		require.NoError(t, plain.Append(ctx, &Record{Value: []byte("no key")}))

		s := openCompactStore(t, fsy, t.TempDir(), newRepClock())
		tp, err := s.CreateTopic("table", TopicConfig{Partitions: 3, LogConfig: compactConfig()})
		require.NoError(t, err)
		err = tp.Append(ctx, &Record{Key: []byte("a"), Value: []byte("1")}, &Record{Key: []byte("b"), Value: []byte("2")}, &Record{Value: []byte("3")})
		require.ErrorIs(t, err, ErrKeylessRecord)
		for i := range int32(3) {
			p, err := tp.Partition(i)
			require.NoError(t, err)
			require.Equal(t, int64(0), p.LogEndOffset(), "partition %d: nothing of the call written", i)
		}
	})
}

// TestCompactionStateRatioAndLags: the dirty ratio is Kafka's LogToClean's, min.compaction.lag.ms
// holds back segments with records newer than it, and max.compaction.lag.ms makes a log due
// whatever its ratio.
func TestCompactionStateRatioAndLags(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		cfg := compactConfig()
		cfg.MinCleanableDirtyRatio = 0.99
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithClock(clock.Now))
		for i := range 40 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%4), value: []byte("value-value-value-value")})
		}
		st := l.CompactionState()
		l.mu.RLock()
		var sealed int64
		for _, s := range l.segments[:len(l.segments)-1] {
			sealed += s.Size()
		}
		active := l.active().BaseOffset()
		l.mu.RUnlock()
		require.Equal(t, CompactionState{CleanerPoint: 0, UncleanableOffset: active, CleanBytes: 0, DirtyBytes: sealed, DirtyRatio: 1, Due: true}, st)

		_, err := l.Compact(context.Background())
		require.NoError(t, err)
		clock.Advance(time.Hour)
		for i := range 40 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%4), value: []byte("value-value-value-value")})
		}
		st = l.CompactionState()
		require.Equal(t, float64(st.DirtyBytes)/float64(st.CleanBytes+st.DirtyBytes), st.DirtyRatio)
		require.Less(t, st.DirtyRatio, 0.99)
		require.False(t, st.Due, "below min.cleanable.dirty.ratio")

		// max.compaction.lag.ms: the same, on a log whose dirty batches are older than it.
		lagged := cfg
		lagged.MaxCompactionLag = 30 * time.Minute
		l2 := openTestLog(t, fsy, t.TempDir(), lagged, WithClock(clock.Now))
		for i := range 40 {
			appendKeyed(t, l2, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%4), value: []byte("value-value-value-value")})
		}
		_, err = l2.Compact(context.Background())
		require.NoError(t, err)
		for i := range 40 {
			appendKeyed(t, l2, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%4), value: []byte("value-value-value-value")})
		}
		st = l2.CompactionState()
		require.Less(t, st.DirtyRatio, 0.99)
		require.False(t, st.Due, "dirty batches as old as max.compaction.lag.ms, not older")
		clock.Advance(30*time.Minute + time.Millisecond)
		require.True(t, l2.CompactionState().Due, "dirty batches older than max.compaction.lag.ms")

		// min.compaction.lag.ms: segments with records newer than it are not cleanable.
		young := compactConfig()
		young.MinCompactionLag = time.Hour
		l3 := openTestLog(t, fsy, t.TempDir(), young, WithClock(clock.Now))
		for i := range 40 {
			appendKeyed(t, l3, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%4), value: []byte("value-value-value-value")})
		}
		st = l3.CompactionState()
		require.Equal(t, int64(0), st.UncleanableOffset)
		require.False(t, st.Due)
		res, err := l3.Compact(context.Background())
		require.NoError(t, err)
		require.Zero(t, res.Passes)
		clock.Advance(time.Hour + time.Millisecond)
		st = l3.CompactionState()
		l3.mu.RLock()
		active = l3.active().BaseOffset()
		l3.mu.RUnlock()
		require.Equal(t, active, st.UncleanableOffset)
		require.True(t, st.Due)
	})
}

// TestCompactStopsAtHighWatermark: a replicated log cleans nothing at or past the segment holding
// its high watermark (Kafka cleans below the last stable offset, which the high watermark bounds).
func TestCompactStopsAtHighWatermark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
		for i := range 80 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%3), value: []byte("value-value-value")})
		}
		l.mu.RLock()
		require.Greater(t, len(l.segments), 3)
		third := l.segments[2].BaseOffset()
		hw := third + 1 // inside the third segment
		l.mu.RUnlock()
		l.owner.set(logHooks{retentionLimit: func() int64 { return hw }})
		st := l.CompactionState()
		require.Equal(t, third, st.UncleanableOffset)
		before := scanKeyed(t, l)
		_, err := l.Compact(context.Background())
		require.NoError(t, err)
		require.Equal(t, third, l.CompactionState().CleanerPoint)
		after := scanKeyed(t, l)
		var tailBefore, tailAfter []keyed
		for _, r := range before {
			if r.offset >= third {
				tailBefore = append(tailBefore, r)
			}
		}
		for _, r := range after {
			if r.offset >= third {
				tailAfter = append(tailAfter, r)
			}
		}
		require.Equal(t, tailBefore, tailAfter, "nothing at or past the high watermark's segment is cleaned")
		require.Less(t, len(after), len(before))
	})
}

// TestCompactedSegmentReadByKmsg is the Kafka-format check of a cleaned segment: franz-go's kmsg
// decodes every batch of the cleaned .log files (CRC over bytes 21.., as Kafka's), and the offsets
// it finds have the gaps the clean left, with the producer's empty batch among them.
func TestCompactedSegmentReadByKmsg(t *testing.T) {
	fsy := fsys.NewMemory()
	clock := newRepClock()
	l := openTestLog(t, fsy, t.TempDir(), compactConfig(), WithClock(clock.Now))
	ctx := context.Background()
	b := encodeBatchWith(t, recordbatch.Header{ProducerID: 9, ProducerEpoch: 1, BaseSequence: 0},
		[]*Record{{Key: []byte("p"), Value: []byte("1"), Timestamp: clock.Now()}})
	_, _, err := l.AppendAsLeader(ctx, b)
	require.NoError(t, err)
	for i := range 60 {
		appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%5), value: []byte("value-value-value")},
			keyed{key: "p", value: []byte("plain")})
	}
	_, err = l.Compact(ctx)
	require.NoError(t, err)
	want := scanKeyed(t, l)
	point := l.CompactionState().CleanerPoint
	var data []byte
	for _, base := range logFileBases(t, fsy, l.Dir()) {
		if base < point {
			data = append(data, fsReadFile(t, fsy, segPath(l.Dir(), base, logSuffix))...)
		}
	}
	var offsets []int64
	emptyAt := int64(-1)
	for len(data) > 0 {
		var kb kmsg.RecordBatch
		require.NoError(t, kb.ReadFrom(data))
		size := int(kb.Length) + 12
		require.Equal(t, crc32.Checksum(data[21:size], crc32.MakeTable(crc32.Castagnoli)), uint32(kb.CRC))
		if kb.NumRecords == 0 {
			emptyAt = kb.FirstOffset
			require.Equal(t, int64(9), kb.ProducerID)
			require.Equal(t, int32(0), kb.LastOffsetDelta)
		}
		require.Equal(t, recordbatch.CodecNone, recordbatch.Attributes(kb.Attributes).Codec())
		raw := kb.Records
		for range kb.NumRecords {
			length, n := binary.Varint(raw)
			require.Positive(t, n)
			var kr kmsg.Record
			require.NoError(t, kr.ReadFrom(raw[:n+int(length)]))
			offsets = append(offsets, kb.FirstOffset+int64(kr.OffsetDelta))
			raw = raw[n+int(length):]
		}
		require.Empty(t, raw)
		data = data[size:]
	}
	require.Equal(t, int64(0), emptyAt, "the producer's only batch stays, empty")
	require.NotEmpty(t, offsets)
	var wantOffsets []int64
	for _, r := range want {
		if r.offset < point {
			wantOffsets = append(wantOffsets, r.offset)
		}
	}
	require.Equal(t, wantOffsets, offsets)
	require.Less(t, len(offsets), int(point)/2, "the cleaned segments have gaps")
}

// TestCompactKeepsHeldSegment: a read holding a segment (a BatchRange, a broker's zero-copy
// fetch) when a clean replaces it reads the old bytes whole, from the retired files; they are
// deleted once it closes.
func TestCompactKeepsHeldSegment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		clock := newRepClock()
		cfg := compactConfig()
		cfg.FileDeleteDelay = -1
		l := openTestLog(t, fsy, t.TempDir(), cfg, WithClock(clock.Now))
		for i := range 60 {
			appendKeyed(t, l, clock.Now(), keyed{key: fmt.Sprintf("k%d", i%3), value: []byte("value-value-value")})
		}
		before, err := l.ReadBatches(nil, 0, 1<<20)
		require.NoError(t, err)
		r, err := l.ReadRange(0, 1<<20)
		require.NoError(t, err)
		res, err := l.Compact(context.Background())
		require.NoError(t, err)
		require.Positive(t, res.SegmentsBefore)
		require.True(t, fsExists(t, fsy, segPath(l.Dir(), 0, logSuffix+deletedSuffix)), "the held segment's files wait for its reader")
		var buf bytes.Buffer
		_, err = r.WriteTo(&buf)
		require.NoError(t, err)
		require.Equal(t, before[:buf.Len()], buf.Bytes(), "the old bytes, whole")
		require.NoError(t, r.Close())
		require.False(t, fsExists(t, fsy, segPath(l.Dir(), 0, logSuffix+deletedSuffix)), "deleted once the range is closed")
	})
}
