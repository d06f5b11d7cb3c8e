package commitlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The reads racing truncation: readers of every read API read a partition while a writer
// truncates it and appends other records at the offsets it cut, over and over. No read may return
// ErrCorrupt (nothing on disk is bad), and every record a read returns must be the one appended at
// its offset in a history of the log that was current while the read ran.
//
// The histories: generation g is the log after the writer's g-th truncation and the appends that
// follow it. The record generation g appends at offset o has key truncRaceKey(o, g) and value
// truncRaceValue(o, g), so a record names the history it came from. truncRaceModel keeps, per
// generation, the log end offset its truncation left and how far its appends went: from these
// a check tells exactly whether records returned together form one history, and whether that
// history was still current when the read began.

// truncRaceModel is the writer's account of the histories; guarded by mu.
type truncRaceModel struct {
	mu sync.Mutex
	// cuts[g] is the log end offset the g-th truncation left (cuts[0] = 0, the empty log), and
	// written[g] the offset below which generation g has appended (or is appending) records.
	cuts    []int64
	written []int64
}

func truncRaceKey(o int64, g int) []byte { return fmt.Appendf(nil, "o%d-g%d", o, g) }

// truncRaceValue is the value of the record generation g appends at offset o: o and g, big
// endian, then 0 to 59 bytes derived from both, so that batches of the histories differ in size
// and a truncation's cut falls at other positions than the batches after it.
func truncRaceValue(o int64, g int) []byte {
	v := make([]byte, 16+int((o*7+int64(g)*13)%60))
	binary.BigEndian.PutUint64(v, uint64(o))
	binary.BigEndian.PutUint64(v[8:], uint64(g))
	for i := 16; i < len(v); i++ {
		v[i] = byte(o) ^ byte(g*3+i)
	}
	return v
}

// gen returns the newest generation the writer has begun: the log's is that or newer.
func (m *truncRaceModel) gen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cuts) - 1
}

// check verifies the records one read returned: offsets from, from+1, ... (the workload has no
// gaps); each record the one some generation appended at its offset; all of them in the history
// of the newest generation among them (no record of an older generation that a truncation up to
// that one cut); and, when startGen >= 0 (the model's generation when the read began), that
// history still current at startGen: no truncation after it and up to startGen cut what the read
// returned.
func (m *truncRaceModel) check(recs []*Record, from int64, startGen int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	gens := make([]int, len(recs))
	gmax := 0
	for i, r := range recs {
		if r.Offset != from+int64(i) {
			return fmt.Errorf("record %d of a read from %d has offset %d", i, from, r.Offset)
		}
		if len(r.Value) < 16 {
			return fmt.Errorf("offset %d: value %x is no record of the workload", r.Offset, r.Value)
		}
		o, g := int64(binary.BigEndian.Uint64(r.Value)), int(binary.BigEndian.Uint64(r.Value[8:]))
		if o != r.Offset || g < 0 || g >= len(m.cuts) || o < m.cuts[g] || o >= m.written[g] {
			return fmt.Errorf("offset %d: value of offset %d generation %d, which no generation appended there", r.Offset, o, g)
		}
		if !bytes.Equal(r.Value, truncRaceValue(o, g)) || !bytes.Equal(r.Key, truncRaceKey(o, g)) {
			return fmt.Errorf("offset %d generation %d: key %q value %x differ from what was appended", o, g, r.Key, r.Value)
		}
		gens[i], gmax = g, max(gmax, g)
	}
	for i, r := range recs {
		for c := gens[i] + 1; c <= gmax; c++ {
			if m.cuts[c] <= r.Offset {
				return fmt.Errorf("offset %d of generation %d, cut by truncation %d to %d, returned with records of generation %d",
					r.Offset, gens[i], c, m.cuts[c], gmax)
			}
		}
	}
	if len(recs) > 0 && startGen >= 0 {
		last := recs[len(recs)-1].Offset
		for c := gmax + 1; c <= startGen; c++ {
			if m.cuts[c] <= last {
				return fmt.Errorf("records [%d, %d] of generation %d's history, which truncation %d to %d ended before the read began",
					from, last, gmax, c, m.cuts[c])
			}
		}
	}
	return nil
}

// truncRaceStats counts, per read API, the reads made and what went wrong.
type truncRaceStats struct {
	mu      sync.Mutex
	reads   map[string]int
	corrupt map[string]int
	first   map[string]error // the first ErrCorrupt of each API
}

func (st *truncRaceStats) note(api string, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reads[api]++
	if errors.Is(err, ErrCorrupt) {
		st.corrupt[api]++
		if st.first[api] == nil {
			st.first[api] = err
		}
	}
}

// allowed reports whether err is an answer a read racing a truncation may give: the offset cut
// (out of range), or, for ReadRecord, at the new log end offset.
func truncRaceAllowed(err error, noRecordYet bool) bool {
	return errors.Is(err, ErrOffsetOutOfRange) || (noRecordYet && errors.Is(err, ErrNoRecordYet))
}

// TestReadsRacingTruncation runs readers of every read API (ReadRecords, ReadBatches, ReadRange
// with WriteTo, Scan, ReadRecord, OffsetForTime and a Reader's Records) against a writer that
// truncates the partition and refills it, 400 generations (150 on the file store) over segments
// of 4 KiB, so that truncations cut the segment a read is in, drop the segments after it, and
// refill them with batches at other positions. Reads return the records of a current history,
// ErrOffsetOutOfRange or (ReadRecord) ErrNoRecordYet, never ErrCorrupt; once the writer stops,
// every API reads the last history whole.
func TestReadsRacingTruncation(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "cut", TopicConfig{Partitions: 1, LogConfig: LogConfig{
			SegmentBytes: 4 << 10, SegmentIndexBytes: 4 << 10, IndexIntervalBytes: 512}})
		p, err := tp.Partition(0)
		require.NoError(t, err)

		m := &truncRaceModel{cuts: []int64{0}, written: []int64{0}}
		wrng := rand.New(rand.NewPCG(15, 3))
		fill := func(g int, to int64) error {
			for p.LogEndOffset() < to {
				first := p.LogEndOffset()
				n := 1 + wrng.IntN(12)
				recs := make([]*Record, n)
				for i := range recs {
					o := first + int64(i)
					recs[i] = &Record{Key: truncRaceKey(o, g), Value: truncRaceValue(o, g), Timestamp: testEpoch.Add(time.Duration(o) * time.Millisecond)}
				}
				m.mu.Lock()
				m.written[g] = first + int64(n)
				m.mu.Unlock()
				if err := p.Append(ctx, recs...); err != nil {
					return err
				}
			}
			return nil
		}
		require.NoError(t, fill(0, 300))

		// A truncation on the file store waits for fsyncs (the file, the directory, the state
		// file) that the memory store does not have: fewer of them keep its run as short.
		generations := 400
		if !env.memory {
			generations = 150
		}
		st := &truncRaceStats{reads: map[string]int{}, corrupt: map[string]int{}, first: map[string]error{}}
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		wg.Go(func() {
			defer stop.Store(true)
			for g := 1; g <= generations; g++ {
				leo := p.LogEndOffset()
				if err := p.TruncateTo(max(leo-1-wrng.Int64N(40), 0)); err != nil {
					errs <- fmt.Errorf("generation %d: %w", g, err)
					return
				}
				cut := p.LogEndOffset()
				m.mu.Lock()
				m.cuts = append(m.cuts, cut)
				m.written = append(m.written, cut)
				m.mu.Unlock()
				if err := fill(g, 300+wrng.Int64N(40)); err != nil {
					errs <- fmt.Errorf("generation %d: %w", g, err)
					return
				}
			}
		})

		// read registers a read API; the readers below take the APIs in turn until the writer
		// stops (and at least minReads reads each): a read picks an offset near the log end
		// offset, where the truncations cut, reads, notes its error and checks what it returned
		// against the model. Three readers share the APIs, so that the writer is not starved of
		// the processor.
		type readAPI struct {
			name        string
			one         func(from int64, startGen int) ([]*Record, error)
			noRecordYet bool
		}
		var apis []readAPI
		read := func(name string, one func(from int64, startGen int) ([]*Record, error), noRecordYet bool) {
			apis = append(apis, readAPI{name, one, noRecordYet})
		}
		const minReads = 50
		readers := func() {
			for k := range 3 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(k), 15))
					for n := 0; !stop.Load() || n < minReads*len(apis); n++ {
						api := apis[(n+k)%len(apis)]
						leo := p.LogEndOffset()
						from := max(leo-60, 0) + rng.Int64N(min(leo, 60)+1)
						startGen := m.gen()
						recs, err := api.one(from, startGen)
						st.note(api.name, err)
						if err != nil {
							if !truncRaceAllowed(err, api.noRecordYet) && !errors.Is(err, ErrCorrupt) {
								errs <- fmt.Errorf("%s from %d: %w", api.name, from, err)
								return
							}
							continue
						}
						if err := m.check(recs, from, startGen); err != nil {
							errs <- fmt.Errorf("%s from %d: %w", api.name, from, err)
							return
						}
					}
				})
			}
		}
		read("ReadRecords", func(from int64, _ int) ([]*Record, error) { return p.ReadRecords(from, 2<<10) }, false)
		read("ReadBatches", func(from int64, _ int) ([]*Record, error) {
			b, err := p.ReadBatches(nil, from, 2<<10)
			if err != nil {
				return nil, err
			}
			return decodeChecked(nil, b, from, 1<<20, 0)
		}, false)
		read("ReadRange", func(from int64, _ int) ([]*Record, error) {
			r, err := p.ReadRange(from, 2<<10)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			var buf bytes.Buffer
			n, err := r.WriteTo(&buf)
			if err != nil {
				return nil, err
			}
			if n != r.Len() || int64(buf.Len()) != n {
				return nil, fmt.Errorf("WriteTo wrote %d bytes (%d buffered) of a range of %d", n, buf.Len(), r.Len())
			}
			// The range's bytes are not checked by the log: every batch sent must check here.
			for b := buf.Bytes(); len(b) > 0; {
				h, err := recordbatch.Check(b, 1<<20)
				if err != nil {
					return nil, fmt.Errorf("WriteTo sent a batch that does not check: %w", err)
				}
				b = b[h.Size():]
			}
			recs, err := decodeChecked(nil, buf.Bytes(), from, 1<<20, 0)
			if err == nil && len(recs) > 0 && recs[len(recs)-1].Offset+1 != r.NextOffset() {
				err = fmt.Errorf("range ends at offset %d, NextOffset says %d", recs[len(recs)-1].Offset, r.NextOffset())
			}
			return recs, err
		}, false)
		read("Scan", func(from int64, _ int) ([]*Record, error) {
			var recs []*Record
			for r, err := range p.Scan(from) {
				if err != nil {
					return nil, err
				}
				c := *r
				c.Key, c.Value, c.Headers = bytes.Clone(r.Key), bytes.Clone(r.Value), nil
				if recs = append(recs, &c); len(recs) == 300 {
					break
				}
			}
			return recs, nil
		}, false)
		read("ReadRecord", func(from int64, _ int) ([]*Record, error) {
			var r Record
			if err := p.ReadRecord(from, &r); err != nil {
				return nil, err
			}
			return []*Record{&r}, nil
		}, true)

		// OffsetForTime: record o has timestamp testEpoch+o ms in every history, so the first
		// record at or after that time is o, or none (ErrNoOffsetForTime) when o is past the
		// high watermark.
		read("OffsetForTime", func(from int64, _ int) ([]*Record, error) {
			off, err := p.OffsetForTime(testEpoch.Add(time.Duration(from) * time.Millisecond))
			if errors.Is(err, ErrNoOffsetForTime) {
				err = nil
			} else if err == nil && (off < 0 || off > from) {
				err = fmt.Errorf("OffsetForTime(%d ms) = %d", from, off)
			}
			return nil, err
		}, false)

		readers()

		// The Reader: its records come from fetches made before the Next that returns them, so
		// each is checked on its own, against every history; a position the truncation left
		// past the log end offset resets to the earliest.
		rctx, cancel := context.WithCancel(ctx)
		rd, err := tp.NewReader(ReaderConfig{Start: Earliest, Reset: ResetEarliest, MaxBytes: 2 << 10})
		require.NoError(t, err)
		var readerDone sync.WaitGroup
		readerDone.Go(func() {
			// Records ends at its first error; after an allowed one the loop takes it up again.
			for rctx.Err() == nil {
				for rec, err := range rd.Records(rctx) {
					if rctx.Err() != nil {
						return
					}
					st.note("Reader", err)
					if err != nil {
						if !truncRaceAllowed(err, false) && !errors.Is(err, ErrCorrupt) {
							errs <- fmt.Errorf("Reader: %w", err)
							return
						}
						break
					}
					if err := m.check([]*Record{rec}, rec.Offset, -1); err != nil {
						errs <- fmt.Errorf("Reader: %w", err)
						return
					}
				}
				if err := rd.SeekToEarliest(); err != nil {
					errs <- fmt.Errorf("Reader: %w", err)
					return
				}
			}
		})
		wg.Wait()
		cancel()
		readerDone.Wait()
		require.NoError(t, rd.Close())

		st.mu.Lock()
		t.Logf("reads racing %d truncations: %v", generations, st.reads)
		require.Emptyf(t, st.corrupt, "ErrCorrupt per read API, in the reads %v racing %d truncations; the first of each: %v",
			st.reads, generations, st.first)
		st.mu.Unlock()
		requireNoErrs(t, errs)

		// The writer has stopped: every API reads the last history whole.
		last := m.gen()
		leo := p.LogEndOffset()
		require.Equal(t, m.written[last], leo)
		var all []*Record
		for r, err := range p.Scan(0) {
			require.NoError(t, err)
			c := *r
			c.Key, c.Value, c.Headers = bytes.Clone(r.Key), bytes.Clone(r.Value), nil
			all = append(all, &c)
		}
		require.Len(t, all, int(leo))
		require.NoError(t, m.check(all, 0, last))
		var got []*Record
		for off := int64(0); off < leo; off = got[len(got)-1].Offset + 1 {
			recs, err := p.ReadRecords(off, 2<<10)
			require.NoError(t, err)
			require.NotEmpty(t, recs)
			got = append(got, recs...)
		}
		requireSameRecords(t, all, got)
		var r Record
		for _, want := range all {
			require.NoError(t, p.ReadRecord(want.Offset, &r))
			require.Equal(t, want.Value, r.Value)
		}
		require.ErrorIs(t, p.ReadRecord(leo, &r), ErrNoRecordYet)
	})
}

// TestScanAcrossTruncation truncates the log from inside a Scan's loop body, after the first
// batch's records, and appends other records at the offsets cut: a truncation that removed only
// records not yet yielded lets the scan go on in the new history; one that removed records
// already yielded ends it with ErrOffsetOutOfRange, rather than go on with records of another
// history after them.
func TestScanAcrossTruncation(t *testing.T) {
	tests := []struct {
		name     string
		cutTo    int64
		wantOffs []int64 // the offsets yielded: 0-9 from the first history, the rest from the second
		wantErr  error
	}{
		{"after the records yielded", 10, offsetRange(0, 30), nil}, // up to the end when the scan began
		{"below the records yielded", 0, offsetRange(0, 10), ErrOffsetOutOfRange},
		{"inside the records yielded", 5, offsetRange(0, 10), ErrOffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				ctx := context.Background()
				l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
				appendBatches(t, l, 3, 10)
				var offs []int64
				var gotErr error
				for r, err := range l.Scan(0) {
					if err != nil {
						gotErr = err
						break
					}
					offs = append(offs, r.Offset)
					wantKey := workloadRecord(int(r.Offset)).Key
					if r.Offset >= 10 {
						wantKey = workloadRecord(int(r.Offset) + 1000).Key
					}
					require.Equal(t, wantKey, r.Key, "offset %d", r.Offset)
					if r.Offset == 5 {
						// The scan has read the first batch only (its first read is of one batch).
						require.NoError(t, l.TruncateTo(tc.cutTo))
						for l.LogEndOffset() < 40 {
							first := int(l.LogEndOffset())
							require.NoError(t, l.Append(ctx, workloadRecords(first+1000, 10)...))
						}
					}
				}
				require.Equal(t, tc.wantOffs, offs)
				if tc.wantErr == nil {
					require.NoError(t, gotErr)
				} else {
					require.ErrorIs(t, gotErr, tc.wantErr)
				}
			})
		})
	}
}

// TestReadRangeAcrossTruncation takes a range, truncates the log and appends other records at
// the offsets cut, then sends the range: a truncation that left the range's records in place
// (in its segment, past it) changes none of its bytes and the range is sent whole; one that
// removed them, cutting its segment or dropping it, gives ErrOffsetOutOfRange and sends nothing.
func TestReadRangeAcrossTruncation(t *testing.T) {
	tests := []struct {
		name      string
		rangeAt   int64 // the range holds the batch of 10 records from here
		cutTo     int64
		wantSent  bool
		segmented bool // one batch per segment: the cut drops the range's segment
	}{
		{"cut after the range, same segment", 0, 10, true, false},
		{"cut inside the range's segment before it", 10, 5, false, false},
		{"range's segment dropped", 10, 5, false, true},
		{"later segment cut", 0, 15, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				ctx := context.Background()
				cfg := baseConfig()
				if tc.segmented {
					cfg.SegmentBytes = 2 << 10 // a batch of 10 workload records is about 1.6 KiB
				}
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever))
				appendBatches(t, l, 3, 10)
				if tc.segmented {
					require.Equal(t, 3, l.SegmentCount())
				}
				want, err := l.ReadBatches(nil, tc.rangeAt, 1)
				require.NoError(t, err)
				r, err := l.ReadRange(tc.rangeAt, 1)
				require.NoError(t, err)
				defer r.Close()
				require.Equal(t, int64(len(want)), r.Len())
				require.Equal(t, tc.rangeAt+10, r.NextOffset())

				require.NoError(t, l.TruncateTo(tc.cutTo))
				for l.LogEndOffset() < 30 {
					first := int(l.LogEndOffset())
					require.NoError(t, l.Append(ctx, workloadRecords(first+1000, 10)...))
				}
				var buf bytes.Buffer
				n, err := r.WriteTo(&buf)
				if tc.wantSent {
					require.NoError(t, err)
					require.Equal(t, r.Len(), n)
					requireSameBytes(t, want, buf.Bytes())
				} else {
					require.ErrorIs(t, err, ErrOffsetOutOfRange)
					require.Zero(t, n)
					require.Zero(t, buf.Len())
				}
			})
		})
	}
}

// TestReadsAcrossManyTruncationsAbove: more truncations than the log remembers (twelve) run
// while a range is held, and between two reads of a scan, each cutting only records past them
// and the log refilled after each: none removed a record of the range or one the scan yielded,
// so the range is sent whole and the scan goes on to the end it began with, as after one such
// truncation (TestReadRangeAcrossTruncation, TestScanAcrossTruncation).
func TestReadsAcrossManyTruncationsAbove(t *testing.T) {
	const truncations = 12
	churn := func(t *testing.T, l *Log) {
		ctx := context.Background()
		for i := range truncations {
			require.NoError(t, l.TruncateTo(20))
			for l.LogEndOffset() < 40 {
				first := int(l.LogEndOffset())
				require.NoError(t, l.Append(ctx, workloadRecords(first+1000*(i+1), 10)...))
			}
		}
	}
	t.Run("BatchRange", func(t *testing.T) {
		forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
			l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
			appendBatches(t, l, 4, 10)
			want, err := l.ReadBatches(nil, 0, 1)
			require.NoError(t, err)
			r, err := l.ReadRange(0, 1)
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, int64(10), r.NextOffset())
			churn(t, l)
			var buf bytes.Buffer
			n, err := r.WriteTo(&buf)
			require.NoError(t, err)
			require.Equal(t, r.Len(), n)
			requireSameBytes(t, want, buf.Bytes())
		})
	})
	t.Run("Scan", func(t *testing.T) {
		forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
			l := openTestLog(t, fsy, t.TempDir(), baseConfig(), WithSync(SyncNever))
			appendBatches(t, l, 4, 10)
			var offs []int64
			for r, err := range l.Scan(0) {
				require.NoError(t, err)
				offs = append(offs, r.Offset)
				wantKey := workloadRecord(int(r.Offset)).Key
				if r.Offset >= 20 {
					wantKey = workloadRecord(int(r.Offset) + 1000*truncations).Key
				}
				require.Equal(t, wantKey, r.Key, "offset %d", r.Offset)
				if r.Offset == 5 {
					churn(t, l) // the scan has read the first batch only
				}
			}
			require.Equal(t, offsetRange(0, 40), offs)
		})
	})
}
