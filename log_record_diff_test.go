package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// TestReadRecordDifferential builds follower logs of random batches (gaps inside and
// between batches, control batches, compressed batches, LogAppendTime) over small segments, and
// checks every ReadRecord against the model: the first data record at or after the offset.
func TestReadRecordDifferential(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				rng := rand.New(rand.NewPCG(seed, 17))
				cfg := baseConfig()
				cfg.SegmentBytes = 2 << 10
				cfg.IndexIntervalBytes = 200
				l := openTestLog(t, fsy, t.TempDir(), cfg, WithSync(SyncNever), WithMaxOpenFiles(4))
				ctx := context.Background()
				type rec struct {
					off int64
					key string
					ts  int64
				}
				var model []rec
				next := int64(0)
				for range 60 {
					next += int64(rng.IntN(3)) * int64(rng.IntN(20)) // gap between batches
					if rng.IntN(8) == 0 {
						_, err := l.AppendAsFollower(ctx, stControlBatch(t, next, 5))
						require.NoError(t, err)
						next++
						continue
					}
					lastDelta := int32(rng.IntN(30))
					var deltas []int32
					for d := int32(0); d <= lastDelta; d++ {
						if rng.IntN(3) != 0 || d == 0 {
							deltas = append(deltas, d)
						}
					}
					var attrs recordbatch.Attributes
					if rng.IntN(4) == 0 {
						attrs = attrs.WithCodec(recordbatch.Codec(1 + rng.IntN(4)))
					}
					lat := rng.IntN(5) == 0
					if lat {
						attrs |= recordbatch.AttrLogAppendTime
					}
					recs := make([]recordbatch.Record, len(deltas))
					for i, d := range deltas {
						recs[i] = recordbatch.Record{OffsetDelta: d, TimestampDelta: int64(d),
							Key: fmt.Appendf(nil, "k%d", next+int64(d)), Value: fmt.Appendf(nil, "v%d-%d", next+int64(d), seed)}
					}
					maxTS := testEpoch.UnixMilli() + int64(lastDelta) + 1000
					b, err := recordbatch.Encode(nil, recordbatch.Header{BaseOffset: next, PartitionLeaderEpoch: 0, Attributes: attrs,
						LastOffsetDelta: lastDelta, BaseTimestamp: testEpoch.UnixMilli(), MaxTimestamp: maxTS,
						ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
					require.NoError(t, err)
					_, err = l.AppendAsFollower(ctx, b)
					require.NoError(t, err)
					for _, d := range deltas {
						ts := testEpoch.UnixMilli() + int64(d)
						if lat {
							ts = maxTS
						}
						model = append(model, rec{next + int64(d), fmt.Sprintf("k%d", next+int64(d)), ts})
					}
					next += int64(lastDelta) + 1
				}
				leo := l.LogEndOffset()
				var r Record
				for pass := range 3 {
					offs := rng.Perm(int(leo))
					for _, o := range offs {
						off := int64(o)
						i := sort.Search(len(model), func(i int) bool { return model[i].off >= off })
						err := l.ReadRecord(off, &r)
						if i == len(model) {
							// Only a gap (control batches, compaction) lies between off and the end.
							require.True(t, errors.Is(err, ErrNoRecordYet), "pass %d off %d: %v", pass, off, err)
							continue
						}
						require.NoError(t, err, "pass %d off %d", pass, off)
						require.Equal(t, model[i].off, r.Offset, "pass %d off %d", pass, off)
						require.Equal(t, model[i].key, string(r.Key), "pass %d off %d", pass, off)
						require.Equal(t, model[i].ts, r.Timestamp.UnixMilli(), "pass %d off %d", pass, off)
					}
				}
			})
		})
	}
}
