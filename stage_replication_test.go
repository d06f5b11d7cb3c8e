package commitlog

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStagedAcksAllWithFollower: SyncAlways leader, many AcksAll appenders (staged), one
// follower fetching; every acknowledged record is below the HW, readable on both, in order.
func TestStagedAcksAllWithFollower(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		opts := []Option{WithClock(fixedClock), WithSync(SyncAlways), WithRetentionCheckInterval(-1)}
		_, leader := repOpen(t, env, TopicConfig{}, opts...)
		require.NoError(t, leader.Replica().BecomeLeader(LeaderConfig{Epoch: 1, Followers: []string{"f1"}}))
		_, follower := repOpen(t, env.another(t), TopicConfig{}, opts...)
		repFollow(t, follower, 1, newRepLink(leader.Replica(), nil), "f1")
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := map[int64]string{}
		for w := range 12 {
			wg.Go(func() {
				for i := range 60 {
					r := rvRecord(w, i)
					if err := leader.AppendAcks(ctx, AcksAll, r); err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if hw := leader.HighWatermark(); hw <= r.Offset {
						t.Errorf("acked offset %d with hw %d", r.Offset, hw)
					}
					mu.Lock()
					acked[r.Offset] = string(r.Key)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, acked, 720)
		var r Record
		for off, key := range acked {
			require.NoError(t, leader.ReadRecord(off, &r))
			require.Equal(t, key, string(r.Key))
			require.NoError(t, follower.ReadRecord(off, &r), fmt.Sprint(off))
			require.Equal(t, key, string(r.Key))
		}
		t.Logf("fsyncs %d", leader.log.fsyncs.Load())
	})
}
