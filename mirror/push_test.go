package mirror

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
)

// pushRecord is a record as the tests write it and expect it on the cluster.
type pushRecord struct {
	Key, Value []byte
	Headers    []kgo.RecordHeader
	Timestamp  time.Time
}

// pushBase is the first test record's timestamp: a day back (within the local retention and the
// timestamp checks), whole milliseconds.
var pushBase = time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)

// pushMakeRecords returns n records of local partition p, starting at sequence number from: a
// unique key (or, with keys > 0, one of that many keys of the partition), a value, repeated
// headers, a timestamp a millisecond apart; every 97th value is null (a tombstone).
func pushMakeRecords(p int32, from, n, keys int) []*commitlog.Record {
	recs := make([]*commitlog.Record, n)
	for i := range n {
		seq := from + i
		key := fmt.Appendf(nil, "p%d-k%07d", p, seq)
		if keys > 0 {
			key = fmt.Appendf(nil, "p%d-key%03d", p, seq%keys)
		}
		var value []byte
		if seq%97 != 96 {
			value = fmt.Appendf(nil, "value %d of partition %d %s", seq, p, bytes.Repeat([]byte{'x'}, seq%50))
		}
		recs[i] = &commitlog.Record{
			Key:   key,
			Value: value,
			Headers: []commitlog.Header{
				{Key: "seq", Value: fmt.Appendf(nil, "%d", seq)},
				{Key: "dup", Value: []byte("a")},
				{Key: "dup", Value: nil},
			},
			Timestamp: pushBase.Add(time.Duration(seq) * time.Millisecond),
			Partition: p,
		}
	}
	return recs
}

// pushAppend appends n records to each partition of topic, numbered from from, in batches of
// 1000, and returns them by partition as the cluster should get them.
func pushAppend(t testing.TB, s *commitlog.Store, topic string, from, n, keys int) map[int32][]pushRecord {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	out := map[int32][]pushRecord{}
	for p := range tp.PartitionCount() {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		recs := pushMakeRecords(p, from, n, keys)
		for c := range slices.Chunk(recs, 1000) {
			require.NoError(t, part.Append(context.Background(), c...))
		}
		for _, r := range recs {
			out[p] = append(out[p], pushWant(r))
		}
	}
	return out
}

func pushWant(r *commitlog.Record) pushRecord {
	w := pushRecord{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		w.Headers = append(w.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return w
}

func pushStore(t testing.TB, dir string) *commitlog.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func pushCreate(t testing.TB, s *commitlog.Store, name string, partitions int32, policy commitlog.CleanupPolicy) {
	t.Helper()
	_, err := s.CreateTopic(name, commitlog.TopicConfig{Partitions: partitions,
		LogConfig: commitlog.LogConfig{CleanupPolicy: policy}})
	require.NoError(t, err)
}

// pushKfake starts a kfake cluster of one broker.
func pushKfake(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// pushLogs collects the records logged, for the tests to find the events they expect.
type pushLogs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *pushLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *pushLogs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *pushLogs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *pushLogs) WithGroup(string) slog.Handler      { return l }

// find returns the attributes of the records logged with msg.
func (l *pushLogs) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		m := map[string]any{"level": r.Level}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
		out = append(out, m)
	}
	return out
}

// pushRun is a Pusher's Run in the background.
type pushRun struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// pushRunning runs p in the background until stop (or the test's end).
func pushRunning(t testing.TB, p *Pusher) *pushRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &pushRun{t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = p.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop ends Run and returns its error.
func (r *pushRun) stop() error {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		r.t.Fatal("Run did not return within a minute of its context's end")
	}
	return r.err
}

// exited reports whether Run returned, and its error.
func (r *pushRun) exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// waitShipped waits until p has shipped every partition up to its high watermark (a guard of
// two minutes, not a timing assertion), failing early if Run returned.
func (r *pushRun) waitShipped(p *Pusher, partitions int) {
	r.t.Helper()
	r.waitFor(p, func(st PushState) bool { return len(st.Partitions) == partitions && st.Unshipped() == 0 })
}

// waitFor waits until cond holds of p's state, with a guard of two minutes, failing early if Run
// returned.
func (r *pushRun) waitFor(p *Pusher, cond func(PushState) bool) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := p.State()
		if cond(st) {
			return
		}
		if done, err := r.exited(); done {
			r.t.Fatalf("Run returned %v; state %+v", err, st)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("condition not met within 2 minutes: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pushConsume reads topic's partitions from addr with a read_committed consumer until each holds
// want[p] records, then a little longer to see any record more, and returns them by partition.
func pushConsume(t testing.TB, addr, topic string, want map[int32]int) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range want {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	got := map[int32][]*kgo.Record{}
	done := func() bool {
		for p, n := range want {
			if len(got[p]) < n {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	var extra time.Time // once every record is in: poll this long more, for a duplicate
	for {
		if done() && extra.IsZero() {
			extra = time.Now().Add(300 * time.Millisecond)
		}
		if !extra.IsZero() && time.Now().After(extra) {
			return got
		}
		if time.Now().After(deadline) {
			counts := map[int32]int{}
			for p, r := range got {
				counts[p] = len(r)
			}
			t.Fatalf("consumed %v of %s within 2 minutes, want %v", counts, topic, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("fetching %s[%d]: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
}

// pushRequireEqual checks that got holds exactly want, in order: key, value (null or not),
// headers and timestamp of each.
func pushRequireEqual(t testing.TB, what string, want []pushRecord, got []*kgo.Record) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: record count", what)
	for i, w := range want {
		g := got[i]
		if !bytes.Equal(w.Key, g.Key) || (w.Key == nil) != (g.Key == nil) ||
			!bytes.Equal(w.Value, g.Value) || (w.Value == nil) != (g.Value == nil) ||
			!w.Timestamp.Equal(g.Timestamp) || !pushHeadersEqual(w.Headers, g.Headers) {
			t.Fatalf("%s: record %d: got key %q value %q headers %v time %v; want key %q value %q headers %v time %v",
				what, i, g.Key, g.Value, g.Headers, g.Timestamp, w.Key, w.Value, w.Headers, w.Timestamp)
		}
	}
}

func pushHeadersEqual(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func pushCounts(want map[int32][]pushRecord) map[int32]int {
	out := map[int32]int{}
	for p, r := range want {
		out[p] = len(r)
	}
	return out
}

func pushMerge(dst, src map[int32][]pushRecord) {
	for p, r := range src {
		dst[p] = append(dst[p], r...)
	}
}

// TestPushRoundTrip ships a delete topic of 8 partitions (100,000 records with headers and
// tombstones) and a compacted topic, renamed with a prefix, to kfake, and reads them back with a
// read_committed consumer: every record once, in order, with its key, value, headers and
// timestamp; the destinations were created with the local partition counts and cleanup
// policies.
func TestPushRoundTrip(t *testing.T) {
	perPartition := 12_500 // 100,000 over 8 partitions
	if testing.Short() {
		perPartition = 1_000
	}
	store := pushStore(t, "")
	pushCreate(t, store, "events", 8, commitlog.CleanupDelete)
	pushCreate(t, store, "state", 4, commitlog.CleanupCompact)
	events := pushAppend(t, store, "events", 0, perPartition, 0)
	state := pushAppend(t, store, "state", 0, 1000, 50)

	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "edge1",
		Rename: Rename{Prefix: "edge1."}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 12)
	// Records appended while Push runs are shipped too.
	more := pushAppend(t, store, "events", perPartition, 100, 0)
	pushMerge(events, more)
	run.waitShipped(p, 12)
	require.NoError(t, run.stop())

	st := p.State()
	require.EqualValues(t, 8*(perPartition+100)+4*1000, st.Records)
	require.Zero(t, st.LossEvents)
	for _, ps := range st.Partitions {
		require.Equal(t, "edge1."+ps.Topic, ps.Destination)
		require.Equal(t, ps.HighWatermark, ps.Shipped, "%s[%d]", ps.Topic, ps.Partition)
	}

	gotEvents := pushConsume(t, addr, "edge1.events", pushCounts(events))
	for part, want := range events {
		pushRequireEqual(t, fmt.Sprintf("edge1.events[%d]", part), want, gotEvents[part])
	}
	gotState := pushConsume(t, addr, "edge1.state", pushCounts(state))
	for part, want := range state {
		pushRequireEqual(t, fmt.Sprintf("edge1.state[%d]", part), want, gotState[part])
	}

	adm := kadm.NewClient(pushClient(t, addr))
	details, err := adm.ListTopics(context.Background(), "edge1.events", "edge1.state")
	require.NoError(t, err)
	require.Len(t, details["edge1.events"].Partitions, 8)
	require.Len(t, details["edge1.state"].Partitions, 4)
	configs, err := adm.DescribeTopicConfigs(context.Background(), "edge1.events", "edge1.state")
	require.NoError(t, err)
	policies := map[string]string{}
	for _, rc := range configs {
		require.NoError(t, rc.Err)
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policies[rc.Name] = *c.Value
			}
		}
	}
	require.Equal(t, map[string]string{"edge1.events": "delete", "edge1.state": "compact"}, policies)
}

func pushClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// pushFreeAddr returns a loopback address with a port free now.
func pushFreeAddr(t testing.TB) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

// pushGroupOffsets returns the offsets committed in group on the cluster at addr.
func pushGroupOffsets(t testing.TB, addr, group string) kadm.OffsetResponses {
	t.Helper()
	offs, err := kadm.NewClient(pushClient(t, addr)).FetchOffsets(kadm.RequireStable(context.Background()), group)
	require.NoError(t, err)
	return offs
}

// pushRequireOnce checks that the records consumed from the destination partitions (got) are
// exactly want's, each once, where local partition p's records must be in dest partition
// placement(record) in their local order.
func pushRequireOnce(t testing.TB, want map[int32][]pushRecord, got map[int32][]*kgo.Record, placement func(src int32, r pushRecord) int32) {
	t.Helper()
	type at struct {
		src int32
		i   int
	}
	index := map[string]at{}
	total := 0
	for src, recs := range want {
		for i, r := range recs {
			index[string(r.Key)] = at{src, i}
		}
		total += len(recs)
	}
	require.Len(t, index, total, "the test's keys are unique")
	seen := map[string]bool{}
	n := 0
	for dst, recs := range got {
		last := map[int32]int{}
		for _, g := range recs {
			a, ok := index[string(g.Key)]
			require.True(t, ok, "%d: a record not in the source: key %q", dst, g.Key)
			require.False(t, seen[string(g.Key)], "%d: key %q twice", dst, g.Key)
			seen[string(g.Key)] = true
			n++
			w := want[a.src][a.i]
			require.Equal(t, placement(a.src, w), dst, "key %q", g.Key)
			if prev, ok := last[a.src]; ok {
				require.Greater(t, a.i, prev, "dest %d: records of local partition %d out of order", dst, a.src)
			}
			last[a.src] = a.i
			pushRequireEqual(t, fmt.Sprintf("key %q", g.Key), []pushRecord{w}, []*kgo.Record{g})
		}
	}
	require.Equal(t, total, n, "records on the cluster")
}

// pushPlaced returns how many of want's records placement puts in each destination partition.
func pushPlaced(want map[int32][]pushRecord, placement func(src int32, r pushRecord) int32) map[int32]int {
	out := map[int32]int{}
	for src, recs := range want {
		for _, r := range recs {
			out[placement(src, r)]++
		}
	}
	return out
}

// TestPushPartitionCountsDiffer ships a topic of 8 partitions to an existing destination of 3:
// records go by key with Kafka's murmur2 (the Java client's placement), and the positions of the
// local partitions 3 to 7, which the destination has no partition for, live in the groups
// <group>.3 to <group>.7. A second Pusher resumes from them; then the destination grows to 8
// partitions, records go to their own partition numbers, the positions move to the main group,
// and a third Pusher resumes from there: every record once, in local order.
func TestPushPartitionCountsDiffer(t *testing.T) {
	store := pushStore(t, "")
	pushCreate(t, store, "clicks", 8, commitlog.CleanupDelete)
	c := pushKfake(t, kfake.SeedTopics(3, "clicks"))
	addr := c.ListenAddrs()[0]
	cluster := Cluster{Brokers: []string{addr}}
	cfg := PushConfig{Name: "counts", MaxTransactionRecords: 300, Logger: slog.New(slog.DiscardHandler)}
	murmur := commitlog.Murmur2Partitioner()
	by3 := func(_ int32, r pushRecord) int32 { return murmur.Partition(&commitlog.Record{Key: r.Key}, 3) }

	want := pushAppend(t, store, "clicks", 0, 300, 0)
	for round := range 2 {
		p, err := NewPusher(store, cluster, cfg)
		require.NoError(t, err)
		run := pushRunning(t, p)
		run.waitShipped(p, 8)
		require.NoError(t, run.stop())
		if round == 0 {
			pushMerge(want, pushAppend(t, store, "clicks", 300, 200, 0))
		}
	}
	got := pushConsume(t, addr, "clicks", pushPlaced(want, by3))
	pushRequireOnce(t, want, got, by3)
	base := pushGroupOffsets(t, addr, PushIDPrefix+"counts")
	for p := range int32(8) {
		group, key := PushIDPrefix+"counts", p
		offs := base
		if p >= 3 {
			group, key = fmt.Sprintf("%s.%d", group, p), 0
			offs = pushGroupOffsets(t, addr, group)
		}
		o, ok := offs.Lookup("clicks", key)
		require.True(t, ok, "local partition %d: no position in %s", p, group)
		require.EqualValues(t, 500, o.At, "local partition %d's position in %s", p, group)
	}

	// The destination grows to 8 partitions: same numbers from now on.
	_, err := kadm.NewClient(pushClient(t, addr)).UpdatePartitions(context.Background(), 8, "clicks")
	require.NoError(t, err)
	before := map[string]int32{}
	for dst, recs := range got {
		for _, r := range recs {
			before[string(r.Key)] = dst
		}
	}
	pushMerge(want, pushAppend(t, store, "clicks", 500, 100, 0))
	p, err := NewPusher(store, cluster, cfg)
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 8)
	require.NoError(t, run.stop())
	placed := func(src int32, r pushRecord) int32 {
		if dst, ok := before[string(r.Key)]; ok {
			return dst
		}
		return src
	}
	got = pushConsume(t, addr, "clicks", pushPlaced(want, placed))
	pushRequireOnce(t, want, got, placed)
	base = pushGroupOffsets(t, addr, PushIDPrefix+"counts")
	for p := range int32(8) {
		o, ok := base.Lookup("clicks", p)
		require.True(t, ok, "local partition %d", p)
		require.EqualValues(t, 600, o.At, "local partition %d", p)
	}
}

// TestPushLoss: records deleted locally before they were shipped (DeleteRecords, as retention
// does) are reported with PushLossEvent, with the topic, partition and offsets lost, counted in
// the state, and the mirror goes on from the log start offset.
func TestPushLoss(t *testing.T) {
	store := pushStore(t, "")
	pushCreate(t, store, "logs", 2, commitlog.CleanupDelete)
	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	logs := &pushLogs{}
	cfg := PushConfig{Name: "loss", Logger: slog.New(logs)}

	want := pushAppend(t, store, "logs", 0, 100, 0)
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, cfg)
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 2)
	require.NoError(t, run.stop())

	// While the mirror is stopped, records 100-199 are appended and 100-149 of partition 0 deleted.
	pushMerge(want, pushAppend(t, store, "logs", 100, 100, 0))
	topic, err := store.Topic("logs")
	require.NoError(t, err)
	part, err := topic.Partition(0)
	require.NoError(t, err)
	_, err = part.DeleteRecords(context.Background(), 150)
	require.NoError(t, err)
	want[0] = slices.Concat(want[0][:100], want[0][150:])

	run = pushRunning(t, p)
	run.waitShipped(p, 2)
	require.NoError(t, run.stop())
	events := logs.find(PushLossEvent)
	require.Len(t, events, 1)
	require.Equal(t, slog.LevelError, events[0]["level"])
	require.Equal(t, "logs", events[0]["topic"])
	require.EqualValues(t, 0, events[0]["partition"])
	require.EqualValues(t, 100, events[0]["from"])
	require.EqualValues(t, 150, events[0]["to"])
	require.EqualValues(t, 50, events[0]["lost"])
	st := p.State()
	require.EqualValues(t, 1, st.LossEvents)
	require.EqualValues(t, 50, st.LostOffsets)

	got := pushConsume(t, addr, "logs", pushCounts(want))
	for part, w := range want {
		pushRequireEqual(t, fmt.Sprintf("logs[%d]", part), w, got[part])
	}
}

// TestPushLocalTransactions ships a topic written by a local transactional producer: the
// committed transactions' records only, never an aborted one's; a transaction aborted after the
// mirror caught up moves the positions past it with nothing to ship (a transaction of positions
// alone), so the mirror shows nothing unshipped.
func TestPushLocalTransactions(t *testing.T) {
	ctx := context.Background()
	store := pushStore(t, "")
	pushCreate(t, store, "ledger", 2, commitlog.CleanupDelete)
	topic, err := store.Topic("ledger")
	require.NoError(t, err)
	topic.SetPartitioner(commitlog.ManualPartitioner())
	prod, err := store.NewProducer(ctx, commitlog.ProducerConfig{TransactionalID: "local-writer"})
	require.NoError(t, err)
	defer prod.Close()
	want := map[int32][]pushRecord{}
	seq := 0
	txn := func(commit bool, n int) {
		require.NoError(t, prod.Begin())
		for p := range int32(2) {
			recs := pushMakeRecords(p, seq, n, 0)
			require.NoError(t, prod.Append(ctx, "ledger", recs...))
			if commit {
				for _, r := range recs {
					want[p] = append(want[p], pushWant(r))
				}
			}
		}
		seq += n
		if commit {
			require.NoError(t, prod.Commit(ctx))
		} else {
			require.NoError(t, prod.Abort(ctx))
		}
	}
	txn(true, 10)
	txn(false, 5)
	txn(true, 7)

	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "ledger", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 2)
	shipped := p.State().Transactions
	txn(false, 3) // only aborted records and markers: the positions move on alone
	run.waitShipped(p, 2)
	st := p.State()
	require.Greater(t, st.Transactions, shipped)
	require.NoError(t, run.stop())
	require.EqualValues(t, 34, st.Records)

	got := pushConsume(t, addr, "ledger", pushCounts(want))
	for part, w := range want {
		pushRequireEqual(t, fmt.Sprintf("ledger[%d]", part), w, got[part])
	}
	offs := pushGroupOffsets(t, addr, PushIDPrefix+"ledger")
	for part := range int32(2) {
		o, ok := offs.Lookup("ledger", part)
		require.True(t, ok)
		lp, err := topic.Partition(part)
		require.NoError(t, err)
		require.Equal(t, lp.HighWatermark(), o.At, "partition %d", part)
	}
}

// TestPushToBroker ships to this library's own protocol server (broker.Serve over a second
// store) as the cluster: the records land in the second store once each, in order, read there
// with a read_committed reader, and the compacted topic is created compacted.
func TestPushToBroker(t *testing.T) {
	store := pushStore(t, "")
	pushCreate(t, store, "events", 4, commitlog.CleanupDelete)
	pushCreate(t, store, "state", 2, commitlog.CleanupCompact)
	want := map[string]map[int32][]pushRecord{
		"events": pushAppend(t, store, "events", 0, 2500, 0),
		"state":  pushAppend(t, store, "state", 0, 500, 30),
	}

	remote := pushStore(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- broker.Serve(ctx, ln, remote, broker.Config{Logger: slog.New(slog.DiscardHandler)}) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()

	p, err := NewPusher(store, Cluster{Brokers: []string{ln.Addr().String()}}, PushConfig{Name: "to-broker",
		Rename: Rename{Prefix: "edge."}, MaxTransactionRecords: 1000, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 6)
	require.NoError(t, run.stop())

	for name, byPart := range want {
		dest, err := remote.Topic("edge." + name)
		require.NoError(t, err)
		require.Equal(t, int32(len(byPart)), dest.PartitionCount())
		policy := commitlog.CleanupDelete
		if name == "state" {
			policy = commitlog.CleanupCompact
		}
		require.Equal(t, policy, dest.Config().CleanupPolicy, "edge.%s", name)
		r, err := dest.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest, Isolation: commitlog.ReadCommitted})
		require.NoError(t, err)
		got := map[int32][]*kgo.Record{}
		for {
			lag := 0
			for _, l := range r.Lag() {
				lag += int(l)
			}
			if lag == 0 {
				break
			}
			rec, err := r.Next(pushNowCtx)
			if err == context.Canceled {
				break // only markers left
			}
			require.NoError(t, err)
			kr := &kgo.Record{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp}
			for _, h := range rec.Headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			got[rec.Partition] = append(got[rec.Partition], kr)
		}
		require.NoError(t, r.Close())
		for part, w := range byPart {
			pushRequireEqual(t, fmt.Sprintf("edge.%s[%d]", name, part), w, got[part])
		}
	}
}

// TestPushEveryTopic ships every topic of the store when PushConfig.Topics is empty, a topic
// created while Push runs included.
func TestPushEveryTopic(t *testing.T) {
	store := pushStore(t, "")
	pushCreate(t, store, "first", 1, commitlog.CleanupDelete)
	wantFirst := pushAppend(t, store, "first", 0, 100, 0)
	c := pushKfake(t)
	addr := c.ListenAddrs()[0]
	p, err := NewPusher(store, Cluster{Brokers: []string{addr}}, PushConfig{Name: "every",
		Rename: Rename{Prefix: "all."}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	run := pushRunning(t, p)
	run.waitShipped(p, 1)
	pushCreate(t, store, "second", 2, commitlog.CleanupCompact)
	wantSecond := pushAppend(t, store, "second", 0, 100, 10)
	run.waitShipped(p, 3)
	require.NoError(t, run.stop())
	for topic, want := range map[string]map[int32][]pushRecord{"all.first": wantFirst, "all.second": wantSecond} {
		got := pushConsume(t, addr, topic, pushCounts(want))
		for part, w := range want {
			pushRequireEqual(t, fmt.Sprintf("%s[%d]", topic, part), w, got[part])
		}
	}
}
