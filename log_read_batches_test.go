package commitlog

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestReadBatchesMaxBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		l := openTestLog(t, fsy, t.TempDir(), baseConfig())
		appendBatches(t, l, 5, 10)
		all, err := l.ReadBatches(nil, 0, math.MaxInt32)
		require.NoError(t, err)
		hs := batchHeaders(t, all)
		require.Len(t, hs, 5)
		b := hs[0].Size()
		for _, h := range hs {
			require.Equal(t, b, h.Size(), "the workload's batches of 10 all have one size")
		}
		tests := []struct {
			name       string
			offset     int64
			maxBytes   int
			firstBatch int
			batches    int
		}{
			{"zero bytes still gives the first batch", 0, 0, 0, 1},
			{"one byte still gives the first batch", 0, 1, 0, 1},
			{"one byte short of the batch", 0, b - 1, 0, 1},
			{"exactly one batch", 0, b, 0, 1},
			{"one byte short of two", 0, 2*b - 1, 0, 1},
			{"exactly two", 0, 2 * b, 0, 2},
			{"two and a half", 0, 2*b + b/2, 0, 2},
			{"everything", 0, 5 * b, 0, 5},
			{"more than everything", 0, 100 * b, 0, 5},
			{"from the middle of batch 2", 15, 2 * b, 1, 2},
			{"from the last offset of batch 2", 19, 1, 1, 1},
			{"from the first offset of batch 3", 20, 3*b - 1, 2, 2},
			{"from the last batch", 49, 100 * b, 4, 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := l.ReadBatches(nil, tt.offset, tt.maxBytes)
				require.NoError(t, err)
				start := tt.firstBatch * b
				requireSameBytes(t, all[start:start+tt.batches*b], got)
				// dst is appended to.
				got, err = l.ReadBatches([]byte{1, 2, 3}, tt.offset, tt.maxBytes)
				require.NoError(t, err)
				requireSameBytes(t, append([]byte{1, 2, 3}, all[start:start+tt.batches*b]...), got)
			})
		}
	})
}

func TestConcurrentReadersSeeWholeBatches(t *testing.T) {
	// Readers running while appends go on see only whole batches, in order, below the log end
	// offset they observed.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		cfg := baseConfig()
		cfg.SegmentBytes = 8000
		l := openTestLog(t, fsy, t.TempDir(), cfg)
		done := make(chan struct{})
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for {
					select {
					case <-done:
						errs <- nil
						return
					default:
					}
					end := l.LogEndOffset()
					for off := int64(0); off < end; {
						recs, err := l.ReadRecords(off, 4096)
						if err != nil {
							errs <- err
							return
						}
						for _, r := range recs {
							if r.Offset != off || string(r.Key) != string(workloadRecord(int(off)).Key) {
								errs <- errors.New("record out of place")
								return
							}
							off++
						}
					}
				}
			}()
		}
		appendBatches(t, l, 60, 5)
		close(done)
		for range 4 {
			require.NoError(t, <-errs)
		}
		require.Greater(t, l.SegmentCount(), 3)
	})
}
