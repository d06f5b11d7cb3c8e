package commitlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScenarioCheckoutFraudLoaderAudit is the seed scenario. A checkout service appends orders,
// keyed by cart id, to a 3-partition topic over three hours. A fraud scorer tails the topic live;
// a loader wakes at the end of every hour and loads what arrived since its last commit (a named
// reader closed and reopened each time); an auditor starts late from the beginning; finally the
// fraud scorer rewinds to the start of hour 2 and replays. Each reader sees exactly its own
// offsets and values, and none disturbs another.
func TestScenarioCheckoutFraudLoaderAudit(t *testing.T) {
	forEachStore(t, testScenarioCheckoutFraudLoaderAudit)
}

func testScenarioCheckoutFraudLoaderAudit(t *testing.T, env *storeEnv) {
	type order struct {
		n         int
		cart      string
		hour, min int
		// Where the default partitioner puts the cart (xxhash64 mod 3) and the offset it gets.
		partition int32
		offset    int64
	}
	orders := []order{
		{1, "cart-2", 1, 5, 0, 0},
		{2, "cart-1", 1, 12, 1, 0},
		{3, "cart-6", 1, 30, 2, 0},
		{4, "cart-2", 1, 47, 0, 1},
		{5, "cart-3", 2, 3, 1, 1},
		{6, "cart-4", 2, 15, 0, 2},
		{7, "cart-10", 2, 28, 2, 1},
		{8, "cart-1", 2, 59, 1, 2},
		{9, "cart-6", 3, 10, 2, 2},
		{10, "cart-2", 3, 41, 0, 3},
	}
	hourStart := func(h int) time.Time { return stEpoch.Add(time.Duration(h-1) * time.Hour) }
	value := func(o order) string { return fmt.Sprintf(`{"order":%d,"cart":%q,"total":%d}`, o.n, o.cart, 10*o.n+3) }
	seen := func(ns ...int) []stSeen {
		out := make([]stSeen, len(ns))
		for i, n := range ns {
			o := orders[n-1]
			out[i] = stSeen{o.partition, o.offset, value(o)}
		}
		return out
	}
	ctx := context.Background()
	s := env.mustOpen(t)
	tp := stCreate(t, s, "orders", TopicConfig{Partitions: 3})

	// The fraud scorer: a reader at Latest from before the first order, Next blocking in its own
	// goroutine, handing each record over as it comes.
	fraud := stReader(t, tp, ReaderConfig{Name: "fraud", Start: Latest})
	type delivery struct {
		rec *Record
		err error
	}
	scored := make(chan delivery)
	fraudCtx, stopFraud := context.WithCancel(ctx)
	fraudDone := make(chan struct{})
	go func() {
		defer close(fraudDone)
		for rec, err := range fraud.Records(fraudCtx) {
			select {
			case scored <- delivery{rec, err}:
			case <-fraudCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var fraudSaw []*Record

	// The loader: wakes, reads everything since its last commit, commits, closes.
	loaderRun := func() []*Record {
		t.Helper()
		loader := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		var got []*Record
		for {
			lag := loader.Lag()
			if lag[0]+lag[1]+lag[2] == 0 {
				break
			}
			got = append(got, stNext(t, loader))
		}
		stRequireIdle(t, loader)
		require.NoError(t, loader.Commit(ctx))
		require.NoError(t, loader.Close())
		return got
	}

	checkout := func(o order) {
		t.Helper()
		rec := &Record{Key: []byte(o.cart), Value: []byte(value(o)),
			Timestamp: hourStart(o.hour).Add(time.Duration(o.min) * time.Minute)}
		require.NoError(t, tp.Append(ctx, rec))
		require.Equal(t, stSeen{o.partition, o.offset, value(o)}, stSeenOf([]*Record{rec})[0], "order %d", o.n)
		// The fraud scorer has it at once.
		select {
		case d := <-scored:
			require.NoError(t, d.err)
			require.Equal(t, stSeen{o.partition, o.offset, value(o)}, stSeenOf([]*Record{d.rec})[0], "fraud scorer, order %d", o.n)
			require.Equal(t, rec.Timestamp.UnixMilli(), d.rec.Timestamp.UnixMilli())
			require.Equal(t, o.cart, string(d.rec.Key))
			require.Equal(t, "orders", d.rec.Topic)
			fraudSaw = append(fraudSaw, d.rec)
		case <-time.After(5 * time.Second):
			t.Fatalf("the fraud scorer did not get order %d", o.n)
		}
	}

	// Hour 1.
	for _, o := range orders[:4] {
		checkout(o)
	}
	require.Equal(t, seen(1, 2, 3, 4), stSeenOf(loaderRun()))

	// Hour 2.
	for _, o := range orders[4:8] {
		checkout(o)
	}
	require.Equal(t, seen(6, 5, 7, 8), stSeenOf(loaderRun()))
	committed, err := s.CommittedPositions("loader")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 3, 1: 3, 2: 2}}, committed)

	// The auditor starts late, from the beginning: everything so far, a partition at a time in
	// turn.
	audit := stReader(t, tp, ReaderConfig{Name: "audit", Start: Earliest})
	require.Equal(t, map[int32]int64{0: 3, 1: 3, 2: 2}, audit.Lag())
	require.Equal(t, seen(1, 2, 3, 4, 5, 7, 6, 8), stSeenOf(stNextN(t, audit, 8)))
	stRequireIdle(t, audit)

	// Hour 3.
	for _, o := range orders[8:] {
		checkout(o)
	}
	require.Equal(t, seen(10, 9), stSeenOf(loaderRun()))
	require.Equal(t, seen(9, 10), stSeenOf(stNextN(t, audit, 2)))
	stRequireIdle(t, audit)

	// The fraud scorer saw every order once, live, in append order.
	require.Equal(t, seen(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), stSeenOf(fraudSaw))
	stopFraud()
	<-fraudDone

	// The fraud scorer rewinds to the start of hour 2 and replays: per partition, exactly the
	// orders from then on.
	require.NoError(t, fraud.SeekToTime(hourStart(2)))
	require.Equal(t, map[int32]int64{0: 2, 1: 1, 2: 1}, fraud.Positions())
	require.Equal(t, map[int32]int64{0: 2, 1: 2, 2: 2}, fraud.Lag())
	replay := stNextN(t, fraud, 6)
	byPartition := map[int32][]stSeen{}
	for _, sn := range stSeenOf(replay) {
		byPartition[sn.Partition] = append(byPartition[sn.Partition], sn)
	}
	require.Equal(t, map[int32][]stSeen{0: seen(6, 10), 1: seen(5, 8), 2: seen(7, 9)}, byPartition)
	for _, rec := range replay {
		require.False(t, rec.Timestamp.Before(hourStart(2)))
	}
	stRequireIdle(t, fraud)

	// Nobody disturbed anybody: the auditor is at the end, the loader's commit stands, and the
	// loader's next wake finds nothing new.
	require.Equal(t, map[int32]int64{0: 4, 1: 3, 2: 3}, audit.Positions())
	require.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, audit.Lag())
	committed, err = s.CommittedPositions("loader")
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"orders": {0: 4, 1: 3, 2: 3}}, committed)
	require.Empty(t, loaderRun())
	readers, err := s.Readers()
	require.NoError(t, err)
	require.Equal(t, []string{"loader"}, readers, "only the loader committed")

	// An order after the replay reaches the fraud scorer and the auditor alike.
	late := order{11, "cart-3", 4, 2, 1, 3}
	orders = append(orders, late)
	rec := &Record{Key: []byte(late.cart), Value: []byte(value(late)), Timestamp: hourStart(4).Add(2 * time.Minute)}
	require.NoError(t, tp.Append(ctx, rec))
	require.Equal(t, seen(11), stSeenOf(stNextN(t, fraud, 1)))
	require.Equal(t, seen(11), stSeenOf(stNextN(t, audit, 1)))
	require.Equal(t, seen(11), stSeenOf(loaderRun()))
}
