package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestConsumerGroupOldVersions runs a kgo consumer group and kadm's offset requests with the
// versions of Kafka 1.1 and 2.0 pinned: JoinGroup v2 and v3 (no KIP-394 member id round trip),
// SyncGroup v1 and v2, Heartbeat and LeaveGroup v1 and v2, OffsetCommit v3 and v4 (with a
// retention time), OffsetFetch v3 and v4.
func TestConsumerGroupOldVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions *kversion.Versions
		want     []string // requests answered, with their versions
	}{
		{"1.1.0", kversion.V1_1_0(), []string{"JoinGroup v2", "SyncGroup v1", "Heartbeat v1", "LeaveGroup v1", "OffsetCommit v3", "OffsetFetch v3"}},
		{"2.0.0", kversion.V2_0_0(), []string{"JoinGroup v3", "SyncGroup v2", "Heartbeat v2", "LeaveGroup v2", "OffsetCommit v4", "OffsetFetch v4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const topic, groupID, partitions, perPartition = "legacy", "old-readers", 3, 30
			b := startGroupBroker(t)
			b.createTopic(t, topic, partitions)
			vlog := &versionLog{seen: map[string]bool{}}
			pinned := kgo.MaxVersions(tc.versions)
			logged := kgo.WithLogger(vlog)
			prod := b.client(t, pinned, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			values := produceSpread(t, prod, topic, partitions, perPartition, "old")

			c, o := newConsumed(), newOwnership()
			m1 := startMember(t, b, "m1", groupID, topic, c, o, pinned, logged, kgo.Balancers(kgo.RangeBalancer()))
			m2 := startMember(t, b, "m2", groupID, topic, c, o, pinned, logged, kgo.Balancers(kgo.RangeBalancer()))
			c.await(t, values, 30*time.Second)
			awaitBalanced(t, b, groupID, topic, partitions, o, m1, m2)
			require.Eventually(t, func() bool { return vlog.has(tc.want[2]) }, 30*time.Second, 10*time.Millisecond, "no heartbeat")
			m1.close()
			m2.close()
			o.mu.Lock()
			require.Empty(t, o.overlaps)
			require.Empty(t, o.errs)
			o.mu.Unlock()
			counts := c.snapshot()
			require.Len(t, counts, len(values))
			for _, v := range values {
				require.Equal(t, 1, counts[v], v)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			adm := kadm.NewClient(b.client(t, pinned, logged))
			fetched, err := adm.FetchOffsets(ctx, groupID)
			require.NoError(t, err)
			require.NoError(t, fetched.Error())
			require.Equal(t, map[string]map[int32]int64{topic: {0: perPartition, 1: perPartition, 2: perPartition}}, offsetsAt(fetched))

			// An admin commit at the old version, read back at it.
			commit := kadm.Offsets{}
			commit.AddOffset(topic, 1, 7, -1)
			resps, err := adm.CommitOffsets(ctx, groupID, commit)
			require.NoError(t, err)
			require.NoError(t, resps.Error())
			fetched, err = adm.FetchOffsetsForTopics(ctx, groupID, topic)
			require.NoError(t, err)
			require.Equal(t, map[string]map[int32]int64{topic: {0: perPartition, 1: 7, 2: perPartition}}, offsetsAt(fetched))
			for _, w := range tc.want {
				require.True(t, vlog.has(w), "no %s answered", w)
			}
			require.False(t, vlog.has("JoinGroup v4"))
		})
	}
}

// versionLog is a kgo logger that records the requests answered without error, by name and
// version, from kgo's debug log ("read JoinGroup v2").
type versionLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *versionLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *versionLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	name, ok := strings.CutPrefix(msg, "read ")
	if !ok {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == "err" && keyvals[i+1] != nil {
			return
		}
	}
	l.mu.Lock()
	l.seen[name] = true
	l.mu.Unlock()
}

func (l *versionLog) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[name]
}
