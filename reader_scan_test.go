package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scanTestRecords returns n records of every shape a decode must keep apart: null and empty keys
// and values, headers with null and empty values, and timestamps that repeat and change.
func scanTestRecords(n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		r := &Record{Value: []byte("value-" + strconv.Itoa(i)), Timestamp: stEpoch.Add(time.Duration(i/3) * time.Millisecond)}
		switch i % 5 {
		case 0:
			r.Key = []byte("key-" + strconv.Itoa(i))
		case 1: // null key
		case 2:
			r.Key, r.Value = []byte{}, nil // empty key, null value
		case 3:
			r.Key = []byte("k")
			r.Headers = []Header{{Key: "h1", Value: []byte("v" + strconv.Itoa(i))}, {Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}}
		case 4:
			r.Value = []byte{}
			r.Headers = []Header{{Key: "only", Value: []byte("x")}}
		}
		recs[i] = r
	}
	return recs
}

// cloneForCompare returns a copy of r with nothing shared, as a test keeps a record.
func cloneForCompare(r *Record) Record {
	c := *r
	c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, Header{Key: h.Key, Value: bytes.Clone(h.Value)})
	}
	return c
}

// TestReaderScanReadsAsRecords: Reader.Scan yields the records Records yields, field for field
// (null and empty keys, values and header values kept apart), in the same order over partitions,
// with the same positions after each, for uncompressed and compressed batches and for fetches of
// one batch (MaxBytes 1, the slab reused at every fetch) and of many.
func TestReaderScanReadsAsRecords(t *testing.T) {
	for _, comp := range []Compression{CompressionNone, CompressionLZ4} {
		for _, maxBytes := range []int{0, 1} {
			t.Run(fmt.Sprintf("compression=%s/max_bytes=%d", comp, maxBytes), func(t *testing.T) {
				forEachStore(t, func(t *testing.T, env *storeEnv) {
					s := env.mustOpen(t, WithSync(SyncNever))
					tp := stCreate(t, s, "shapes", TopicConfig{Partitions: 3, LogConfig: LogConfig{Compression: comp}})
					all := scanTestRecords(300)
					for p := range int32(3) {
						part := stMust(tp.Partition(p))
						for i := 0; i < len(all); i += 17 + int(p) {
							require.NoError(t, part.Append(context.Background(), all[i:min(i+17+int(p), len(all))]...))
						}
					}
					const total = 3 * 300
					cfg := ReaderConfig{Start: Earliest, MaxBytes: maxBytes}
					owned, scanned := stReader(t, tp, cfg), stReader(t, tp, cfg)

					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					var want []Record
					var wantPos []map[int32]int64
					for rec, err := range owned.Records(ctx) {
						require.NoError(t, err)
						want = append(want, *rec) // owned: kept as they are
						wantPos = append(wantPos, owned.Positions())
						if len(want) == total {
							break
						}
					}
					var got []Record
					for rec, err := range scanned.Scan(ctx) {
						require.NoError(t, err)
						require.Equal(t, wantPos[len(got)], scanned.Positions(), "after record %d", len(got))
						got = append(got, cloneForCompare(rec))
						if len(got) == total {
							break
						}
					}
					require.Equal(t, want, got)
					// The owned records are intact after the scan's fetches, and hold what was
					// appended.
					for _, rec := range want {
						src := all[rec.Offset]
						require.Equal(t, "shapes", rec.Topic)
						require.Equal(t, src.Key, rec.Key, "offset %d", rec.Offset)
						require.Equal(t, src.Value, rec.Value, "offset %d", rec.Offset)
						require.Equal(t, src.Headers, rec.Headers, "offset %d", rec.Offset)
						require.True(t, src.Timestamp.Equal(rec.Timestamp), "offset %d", rec.Offset)
					}
					require.Equal(t, map[int32]int64{0: 300, 1: 300, 2: 300}, scanned.Positions())
					require.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, scanned.Lag())
				})
			})
		}
	}
}

// TestReaderScanThenNextOwnsRecords: records fetched by Scan and returned by Next are copies the
// caller owns: the later fetches of Scan, which reuse the partition's buffer and slab, leave them
// as they were.
func TestReaderScanThenNextOwnsRecords(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "mix", TopicConfig{})
		part := stMust(tp.Partition(0))
		all := scanTestRecords(40)
		for i := 0; i < len(all); i += 10 {
			require.NoError(t, part.Append(context.Background(), all[i:i+10]...))
		}
		r := stReader(t, tp, ReaderConfig{Start: Earliest, MaxBytes: 1}) // one batch a fetch
		ctx := context.Background()

		for rec, err := range r.Scan(ctx) { // fetches batch [0, 10), yields offset 0
			require.NoError(t, err)
			require.Equal(t, int64(0), rec.Offset)
			break
		}
		var kept []*Record
		for range 4 { // offsets 1 to 4, from Scan's slab
			rec, err := r.Next(ctx)
			require.NoError(t, err)
			kept = append(kept, rec)
		}
		var scanned []int64
		for rec, err := range r.Scan(ctx) { // the rest of the batch, then three more fetches
			require.NoError(t, err)
			scanned = append(scanned, rec.Offset)
			if rec.Offset == 39 {
				break
			}
		}
		require.Equal(t, offsetRange(5, 40), scanned)
		for i, rec := range kept {
			src := all[i+1]
			require.Equal(t, int64(i+1), rec.Offset)
			require.Equal(t, src.Key, rec.Key)
			require.Equal(t, src.Value, rec.Value)
			require.Equal(t, src.Headers, rec.Headers)
		}
	})
}

// TestReadRecordsSmallReadsAsBatches: ReadRecords of a few bytes, which takes ReadRecord's path
// first, returns at every offset exactly what the decode of the batches ReadBatches returns
// gives, cut where the records' keys and values reach maxBytes: one record when the first holds
// maxBytes, more when it holds fewer (records of no key and no value), the records past a
// compaction-free log's end none. Log and Partition alike, uncompressed and compressed.
func TestReadRecordsSmallReadsAsBatches(t *testing.T) {
	for _, comp := range []Compression{CompressionNone, CompressionZstd} {
		t.Run("compression="+comp.String(), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t, WithSync(SyncNever))
				tp := stCreate(t, s, "small", TopicConfig{LogConfig: LogConfig{Compression: comp}})
				part := stMust(tp.Partition(0))
				all := scanTestRecords(60)
				all[7].Key, all[7].Value = nil, nil // a record of no bytes: maxBytes 1 reads on
				all[8].Key, all[8].Value = []byte{}, nil
				for i := 0; i < len(all); i += 12 {
					require.NoError(t, part.Append(context.Background(), all[i:i+12]...))
				}
				leo := part.HighWatermark()
				for _, maxBytes := range []int{1, 5, 9, 4096} {
					for off := int64(0); off <= leo; off++ {
						b, err := part.ReadBatches(nil, off, maxBytes)
						require.NoError(t, err)
						dec, err := DecodeRecords(nil, b, off, 0)
						require.NoError(t, err)
						var want []*Record
						taken := 0
						for _, rec := range dec {
							rec.Topic, rec.Partition = "small", 0
							want = append(want, rec)
							if taken += len(rec.Key) + len(rec.Value); taken >= maxBytes {
								break
							}
						}
						got, err := part.ReadRecords(off, maxBytes)
						require.NoError(t, err)
						require.Equal(t, want, got, "partition, offset %d, max bytes %d", off, maxBytes)
						for _, w := range want {
							w.Topic = ""
						}
						got, err = part.log.ReadRecords(off, maxBytes)
						require.NoError(t, err)
						require.Equal(t, want, got, "log, offset %d, max bytes %d", off, maxBytes)
					}
				}
				_, err := part.ReadRecords(leo+1, 1)
				require.ErrorIs(t, err, ErrOffsetOutOfRange)
			})
		})
	}
}

// TestReadRecordsKeepsItsRecords: the records of ReadRecords, small reads and large, are the
// caller's: later reads (which reuse the log's buffers) leave them as they were.
func TestReadRecordsKeepsItsRecords(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "keep", TopicConfig{})
		part := stMust(tp.Partition(0))
		all := scanTestRecords(500)
		for i := 0; i < len(all); i += 50 {
			require.NoError(t, part.Append(context.Background(), all[i:i+50]...))
		}
		var kept []*Record
		for off := int64(0); off < 500; {
			recs, err := part.ReadRecords(off, 300)
			require.NoError(t, err)
			require.NotEmpty(t, recs)
			kept = append(kept, recs...)
			off = recs[len(recs)-1].Offset + 1
			one, err := part.ReadRecords((off*7)%500, 1)
			require.NoError(t, err)
			kept = append(kept, one...)
		}
		for _, rec := range kept {
			src := all[rec.Offset]
			require.Equal(t, src.Key, rec.Key, "offset %d", rec.Offset)
			require.Equal(t, src.Value, rec.Value, "offset %d", rec.Offset)
			require.Equal(t, src.Headers, rec.Headers, "offset %d", rec.Offset)
		}
	})
}

// TestReaderScanAcrossDecodeChunks: Reader.Scan decodes a fetch scanChunk records at a time; its
// positions, a Seek from the loop body, a Next between two Scans (its record owned and kept) and
// the end all behave as if the fetch had been decoded at once. The 1,000 records, in batches of
// 10, come in one fetch of four chunks.
func TestReaderScanAcrossDecodeChunks(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		appendInBatches(t, tp, divergenceValues("v", 0, 1000))
		r := stReader(t, tp, ReaderConfig{Start: Earliest})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a record missed fails, not waits
		defer cancel()

		var got []int64
		seeked := false
		for rec, err := range r.Scan(ctx) {
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("v-%d", rec.Offset), string(rec.Value))
			require.Equal(t, rec.Offset+1, stMust(r.Position(0)))
			got = append(got, rec.Offset)
			if rec.Offset == 300 && !seeked {
				require.NoError(t, r.Seek(0, 50)) // in the second chunk, the third not decoded yet
				seeked = true
			}
			if seeked && rec.Offset == 120 {
				break
			}
		}
		want := append(offsetRange(0, 301), offsetRange(50, 121)...)
		require.Equal(t, want, got)

		kept := stNext(t, r)
		require.Equal(t, stSeen{0, 121, "v-121"}, stSeenOf([]*Record{kept})[0])

		got = got[:0]
		for rec, err := range r.Scan(ctx) {
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("v-%d", rec.Offset), string(rec.Value))
			got = append(got, rec.Offset)
			if rec.Offset == 999 {
				break
			}
		}
		require.Equal(t, offsetRange(122, 1000), got)
		require.Equal(t, "v-121", string(kept.Value), "a record of Next stays the caller's through later fetches of Scan")
		require.Equal(t, map[int32]int64{0: 1000}, r.Positions())
		stRequireIdle(t, r)
	})
}

// TestReaderScanTruncatedUnderUndecodedChunks: the log is truncated to 400 and refilled from the
// loop body of a Scan at 300, while the fetch's records up to 519 are decoded and those after
// wait undecoded: the scan goes on with the old records below 400, then the new history, never a
// record of the old history at 400 or after.
func TestReaderScanTruncatedUnderUndecodedChunks(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		p := stMust(tp.Partition(0))
		appendInBatches(t, tp, divergenceValues("old", 0, 1000))
		r := stReader(t, tp, ReaderConfig{Start: Earliest, Reset: ResetEarliest})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a record missed fails, not waits
		defer cancel()

		var got []string
		for rec, err := range r.Scan(ctx) {
			require.NoError(t, err)
			got = append(got, string(rec.Value))
			if rec.Offset == 300 {
				require.NoError(t, p.TruncateTo(400))
				appendInBatches(t, tp, divergenceValues("new", 400, 600))
			}
			if rec.Offset == 999 {
				break
			}
		}
		want := append(divergenceValues("old", 0, 400), divergenceValues("new", 400, 600)...)
		require.Equal(t, want, got)
	})
}

// TestReaderScanTransactionsAcrossChunks: committed, aborted and plain batches with their
// markers, over several decode chunks of Scan: Scan and Next return the same records, under
// ReadCommitted the plain and committed ones only, under ReadUncommitted every data record, and
// both end at the log end offset, past the last markers.
func TestReaderScanTransactionsAcrossChunks(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		stCreate(t, s, "tx", TopicConfig{Partitions: 1})
		w := newIsoWriter(t, s, "tx")
		var all, committed []isoSeen
		add := func(pid int64, tag string, g int, keep bool) {
			vals := make([]string, 5)
			for i := range vals {
				vals[i] = fmt.Sprintf("%s-%d-%d", tag, g, i)
			}
			first := w.batch(0, pid, vals...)
			for i, v := range vals {
				seen := isoSeen{0, first + int64(i), v}
				all = append(all, seen)
				if keep {
					committed = append(committed, seen)
				}
			}
		}
		for g := range 40 {
			add(-1, "plain", g, true)
			add(1, "committed", g, true)
			add(2, "aborted", g, false)
			w.marker(0, 1, true)
			w.marker(0, 2, false)
		}
		end := w.part(0).LogEndOffset()
		require.Equal(t, int64(40*17), end)
		for _, iso := range []IsolationLevel{ReadCommitted, ReadUncommitted} {
			want := all
			if iso == ReadCommitted {
				want = committed
			}
			for _, scan := range []bool{true, false} {
				r := stReader(t, w.tp, ReaderConfig{Start: Earliest, Isolation: iso})
				require.Equal(t, want, readAvailableVia(t, r, scan), "%s scan=%t", iso, scan)
				require.Equal(t, map[int32]int64{0: end}, r.Positions(), "%s scan=%t", iso, scan)
			}
		}
	})
}
