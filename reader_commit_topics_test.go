package commitlog

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReaderNameOnSeveralTopics: one reader name is open on two topics at once, one Reader per
// topic, as a Kafka consumer group reads several topics under one group id. Commits of each,
// concurrent ones included, keep the other topic's positions in the name's file; after a
// restart both resume exactly where they committed. DeleteReader is refused while either is
// open, and a second Reader of the name on one of the topics is refused.
func TestReaderNameOnSeveralTopics(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open(WithSync(SyncNever))
		require.NoError(t, err)
		orders := stCreate(t, s, "orders", TopicConfig{})
		payments := stCreate(t, s, "payments", TopicConfig{})
		var ov, pv []string
		for i := range 100 {
			ov = append(ov, "o"+string(rune('a'+i%26)))
			pv = append(pv, "p"+string(rune('a'+i%26)))
		}
		require.NoError(t, orders.Append(ctx, stRecs(ov...)...))
		require.NoError(t, payments.Append(ctx, stRecs(pv...)...))

		ro := stReader(t, orders, ReaderConfig{Name: "fraud", Start: Earliest})
		rp := stReader(t, payments, ReaderConfig{Name: "fraud", Start: Earliest})
		_, err = payments.NewReader(ReaderConfig{Name: "fraud"})
		require.ErrorIs(t, err, ErrReaderExists)
		require.ErrorIs(t, s.DeleteReader("fraud"), ErrReaderExists)

		// Each commits after every record it reads, both at once: the read-modify-write of
		// the shared file must never lose the other topic.
		var wg sync.WaitGroup
		for _, c := range []struct {
			r *Reader
			n int
		}{{ro, 30}, {rp, 40}} {
			wg.Go(func() {
				for range c.n {
					if _, err := c.r.Next(ctx); err != nil {
						t.Error(err)
						return
					}
					if err := c.r.Commit(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, map[int32]int64{0: 30}, ro.Positions())
		require.Equal(t, map[int32]int64{0: 40}, rp.Positions())
		want := map[string]map[int32]int64{"orders": {0: 30}, "payments": {0: 40}}
		require.Equal(t, want, stMust(s.CommittedPositions("fraud")))
		require.Equal(t, []string{"fraud"}, stMust(s.Readers()))
		require.NoError(t, ro.Close())
		require.ErrorIs(t, s.DeleteReader("fraud"), ErrReaderExists)
		require.NoError(t, rp.Close())
		require.NoError(t, s.Close())

		s = env.mustOpen(t, WithSync(SyncNever))
		require.Equal(t, want, stMust(s.CommittedPositions("fraud")))
		ro = stReader(t, stMust(s.Topic("orders")), ReaderConfig{Name: "fraud", Start: Latest})
		rp = stReader(t, stMust(s.Topic("payments")), ReaderConfig{Name: "fraud", Start: Latest})
		require.Equal(t, map[int32]int64{0: 30}, ro.Positions())
		require.Equal(t, map[int32]int64{0: 40}, rp.Positions())
		require.Equal(t, []stSeen{{0, 30, ov[30]}}, stSeenOf(stNextN(t, ro, 1)))
		require.Equal(t, []stSeen{{0, 40, pv[40]}}, stSeenOf(stNextN(t, rp, 1)))
	})
}
