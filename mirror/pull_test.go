package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
)

// The Pull tests produce records into a Kafka cluster (franz-go's kfake, an independent
// in-memory Kafka; or this module's broker over a second store), pull them into a local store,
// and compare what a read_committed local reader sees with what the cluster acknowledged as
// committed: every record once, in order per partition, with its key, value, headers and
// timestamp exactly (a null key or value stays null, an empty one empty).

// pullGuard bounds every wait of these tests: a condition not reached by then is a failure.
const pullGuard = 2 * time.Minute

// pullSrcRecord is a record the cluster acknowledged, as produced.
type pullSrcRecord struct {
	topic     string
	partition int32
	offset    int64
	key       []byte
	value     []byte
	headers   []kgo.RecordHeader
	ts        time.Time
}

// pullSource is what the tests produced into the cluster: the committed records by topic and
// partition in offset order, and the values of records that must not arrive (aborted).
type pullSource struct {
	committed map[string]map[int32][]pullSrcRecord
	aborted   map[string]bool
}

func newPullSource() *pullSource {
	return &pullSource{committed: map[string]map[int32][]pullSrcRecord{}, aborted: map[string]bool{}}
}

func (s *pullSource) add(recs []*kgo.Record) {
	for _, r := range recs {
		if s.committed[r.Topic] == nil {
			s.committed[r.Topic] = map[int32][]pullSrcRecord{}
		}
		s.committed[r.Topic][r.Partition] = append(s.committed[r.Topic][r.Partition], pullSrcRecord{
			topic: r.Topic, partition: r.Partition, offset: r.Offset,
			key: r.Key, value: r.Value, headers: r.Headers, ts: r.Timestamp})
	}
}

// abort records recs as aborted: their (non-empty) values must never be pulled.
func (s *pullSource) abort(recs []*kgo.Record) {
	for _, r := range recs {
		if len(r.Value) > 0 {
			s.aborted[string(r.Value)] = true
		}
	}
}

// count returns how many committed records topic has.
func (s *pullSource) count(topic string) int {
	n := 0
	for _, recs := range s.committed[topic] {
		n += len(recs)
	}
	return n
}

// pullKfake starts a kfake cluster for t, closed at the end of the test.
func pullKfake(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// pullClient returns a kgo client of addrs for t, closed at the end of the test.
func pullClient(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1 << 20), kgo.MaxBufferedRecords(1 << 20)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// pullTestContext returns a context that ends at pullGuard or at the end of the test.
func pullTestContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), pullGuard)
	t.Cleanup(cancel)
	return ctx
}

// pullRecords returns n records for topic over partitions: keys "<prefix>-<i>" (every 7th
// null, every 11th empty), values unique (every 13th empty), two headers (one with a null value,
// a repeated name), and timestamps of their own, some far in the past or ahead.
func pullRecords(topic, prefix string, partitions int32, n int) []*kgo.Record {
	base := time.UnixMilli(1_700_000_000_000)
	recs := make([]*kgo.Record, n)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
			Value:     fmt.Appendf(nil, "%s-value-%07d", prefix, i),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: "seq", Value: strconv.AppendInt(nil, int64(i), 10)},
				{Key: "seq", Value: nil}, {Key: "", Value: []byte{}}}}
		switch {
		case i%7 == 0:
		case i%11 == 0:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "%s-%d", prefix, i)
		}
		if i%13 == 0 {
			r.Value = []byte{}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "empty-value", Value: r.Key})
		}
		switch i % 1000 {
		case 1:
			r.Timestamp = time.UnixMilli(0)
		case 2:
			r.Timestamp = time.UnixMilli(-1)
		case 3:
			r.Timestamp = time.Now().Add(30 * 24 * time.Hour).Truncate(time.Millisecond)
		}
		recs[i] = r
	}
	return recs
}

// pullProduce produces recs with cl; they are acknowledged (offsets set) when it returns.
func pullProduce(t testing.TB, ctx context.Context, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	const chunk = 5000
	for len(recs) > 0 {
		n := min(chunk, len(recs))
		require.NoError(t, cl.ProduceSync(ctx, recs[:n]...).FirstErr())
		recs = recs[n:]
	}
}

// pullProduceTxn produces recs in one transaction of cl and commits or aborts it.
func pullProduceTxn(t testing.TB, ctx context.Context, cl *kgo.Client, recs []*kgo.Record, commit bool) {
	t.Helper()
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	require.NoError(t, cl.EndTransaction(ctx, end))
}

// pullLogger returns a logger of warnings and errors into t's output.
func pullLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// pullOpenStore opens an on-disk store in dir, its log lines to t.
func pullOpenStore(t testing.TB, dir string, opts ...commitlog.Option) *commitlog.Store {
	t.Helper()
	s, err := commitlog.Open(dir, append([]commitlog.Option{commitlog.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	return s
}

// pullRunning is a Run in the background.
type pullRunning struct {
	p      *Puller
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// pullRunBackground runs p in the background until stop (or the end of the test).
func pullRunBackground(t testing.TB, p *Puller) *pullRunning {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &pullRunning{p: p, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the Run and checks that it returned nil.
func (r *pullRunning) stop(t testing.TB) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			require.NoError(t, err)
		case <-time.After(pullGuard):
			t.Fatal("Run did not return after its context ended")
		}
	})
}

// wait waits, at most pullGuard, until cond holds of the Puller's state; it fails the test with
// the last state otherwise, or at once if Run returns.
func (r *pullRunning) wait(t testing.TB, what string, cond func(PullState) bool) PullState {
	t.Helper()
	deadline := time.Now().Add(pullGuard)
	for {
		st := r.p.State()
		if cond(st) {
			return st
		}
		select {
		case err := <-r.done:
			r.once.Do(func() {})
			t.Fatalf("Run returned (%v) while waiting for %s; state %+v", err, what, st)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; state %+v", pullGuard, what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pullCaughtUp is the condition: every partition of the state at the offsets in ends (topic ->
// partition -> the cluster's high watermark when production stopped).
func pullCaughtUp(ends map[string]map[int32]int64) func(PullState) bool {
	return func(st PullState) bool {
		n := 0
		for _, ps := range st.Partitions {
			want, ok := ends[ps.Topic][ps.Partition]
			if !ok {
				continue
			}
			if ps.Position < want {
				return false
			}
			n++
		}
		want := 0
		for _, ps := range ends {
			want += len(ps)
		}
		return n == want
	}
}

// pullEnds returns the high watermarks of topics in c.
func pullEnds(c *kfake.Cluster, topics ...string) map[string]map[int32]int64 {
	ends := map[string]map[int32]int64{}
	for _, topic := range topics {
		ends[topic] = map[int32]int64{}
		for _, pi := range c.PartitionInfos(topic) {
			ends[topic][pi.Partition] = pi.HighWatermark
		}
	}
	return ends
}

// pullReadLocal returns what a read_committed reader of the local topic sees, by partition, up
// to each partition's last stable offset.
func pullReadLocal(t testing.TB, s *commitlog.Store, topic string) map[int32][]*commitlog.Record {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	out := map[int32][]*commitlog.Record{}
	for p := range tp.PartitionCount() {
		err := pullReadCommitted(context.Background(), tp, p, func(r *commitlog.Record) error {
			out[p] = append(out[p], r)
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// pullSameRecord fails t unless local is src exactly: key and value (null stays null, empty
// empty), headers in order, timestamp to the millisecond.
func pullSameRecord(t testing.TB, src pullSrcRecord, local *commitlog.Record, where string) {
	t.Helper()
	ok := (src.key == nil) == (local.Key == nil) && bytes.Equal(src.key, local.Key) &&
		(src.value == nil) == (local.Value == nil) && bytes.Equal(src.value, local.Value) &&
		src.ts.UnixMilli() == local.Timestamp.UnixMilli() && len(src.headers) == len(local.Headers)
	for i := 0; ok && i < len(src.headers); i++ {
		h, lh := src.headers[i], local.Headers[i]
		ok = h.Key == lh.Key && (h.Value == nil) == (lh.Value == nil) && bytes.Equal(h.Value, lh.Value)
	}
	if !ok {
		t.Fatalf("%s: local record differs from the source's\nsource: key %q value %q headers %q ts %d\nlocal:  key %q value %q headers %q ts %d",
			where, src.key, src.value, src.headers, src.ts.UnixMilli(), local.Key, local.Value, local.Headers, local.Timestamp.UnixMilli())
	}
}

// pullCheckSamePartitions checks that local topic holds, partition for partition, exactly the
// committed records of src's topic, in order.
func pullCheckSamePartitions(t testing.TB, s *commitlog.Store, src *pullSource, topic, local string) {
	t.Helper()
	got := pullReadLocal(t, s, local)
	lt, err := s.Topic(local)
	require.NoError(t, err)
	require.Equal(t, int32(len(src.committed[topic])), lt.PartitionCount(), "local topic %s partition count", local)
	for p, want := range src.committed[topic] {
		require.Len(t, got[p], len(want), "topic %s partition %d: local %s has %d records, the source committed %d", topic, p, local, len(got[p]), len(want))
		for i := range want {
			pullSameRecord(t, want[i], got[p][i], fmt.Sprintf("%s/%d record %d (source offset %d)", topic, p, i, want[i].offset))
		}
	}
	for p, recs := range got {
		for _, r := range recs {
			require.False(t, src.aborted[string(r.Value)], "aborted record %q pulled into %s/%d", r.Value, local, p)
		}
	}
}

// pullCheckCompacted checks a compacted local topic against src's topic, partition for
// partition, allowing for the local cleaner: what a read_committed reader sees is the source's
// committed records in order, each at most once, the latest record of every key among them
// (compaction removes only records a later record of the same key supersedes).
func pullCheckCompacted(t testing.TB, s *commitlog.Store, src *pullSource, topic, local string) {
	t.Helper()
	got := pullReadLocal(t, s, local)
	for p, want := range src.committed[topic] {
		latest := map[string]int{}
		for i, r := range want {
			latest[string(r.key)] = i
		}
		i := 0
		for j, r := range got[p] {
			for i < len(want) && !bytes.Equal(want[i].value, r.Value) {
				require.NotEqual(t, i, latest[string(want[i].key)], "topic %s partition %d: the latest record of key %q (source offset %d) is not in %s",
					topic, p, want[i].key, want[i].offset, local)
				i++
			}
			require.Less(t, i, len(want), "topic %s partition %d: local record %d (%q) out of order, twice, or not the source's", topic, p, j, r.Value)
			pullSameRecord(t, want[i], r, fmt.Sprintf("%s/%d local record %d", topic, p, j))
			i++
		}
		for ; i < len(want); i++ {
			require.NotEqual(t, i, latest[string(want[i].key)], "topic %s partition %d: the latest record of key %q (source offset %d) is not in %s",
				topic, p, want[i].key, want[i].offset, local)
		}
	}
}

func TestPullFromKfake(t *testing.T) {
	t.Parallel()
	ctx := pullTestContext(t)
	c := pullKfake(t)
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	require.NoError(t, c.CreateTopic("events", 8, nil))
	require.NoError(t, c.CreateTopic("state", 3, map[string]string{"cleanup.policy": "compact"}))
	require.NoError(t, c.CreateTopic("keyed", 4, nil))
	cl := pullClient(t, c.ListenAddrs())
	txn := pullClient(t, c.ListenAddrs(), kgo.TransactionalID("pull-test-txn"))
	src := newPullSource()

	// events: plain records, then a committed transaction, an aborted one, and more plain
	// records after it.
	recs := pullRecords("events", "e", 8, n)
	third := n / 3
	pullProduce(t, ctx, cl, recs[:third])
	src.add(recs[:third])
	pullProduceTxn(t, ctx, txn, recs[third:2*third], true)
	src.add(recs[third : 2*third])
	aborted := pullRecords("events", "aborted", 8, 400)
	pullProduceTxn(t, ctx, txn, aborted, false)
	src.abort(aborted)
	pullProduce(t, ctx, cl, recs[2*third:])
	src.add(recs[2*third:])

	// state: a compacted topic, keys repeated, some values null (tombstones).
	state := make([]*kgo.Record, 3000)
	for i := range state {
		state[i] = &kgo.Record{Topic: "state", Partition: int32(i % 3), Key: fmt.Appendf(nil, "key-%d", i%50),
			Value: fmt.Appendf(nil, "state-%d", i), Timestamp: time.UnixMilli(1_600_000_000_000 + int64(i))}
		if i%17 == 0 {
			state[i].Value = nil
		}
	}
	pullProduce(t, ctx, cl, state)
	src.add(state)

	// keyed: 4 partitions into a local topic of 3, so placed by key.
	keyed := pullRecords("keyed", "k", 4, 4000)
	for i, r := range keyed {
		r.Value = fmt.Appendf(nil, "keyed-%d", i) // unique: the check below finds records by value
	}
	pullProduce(t, ctx, cl, keyed)
	src.add(keyed)

	store := pullOpenStore(t, t.TempDir())
	defer store.Close()
	// An existing local topic keeps its configuration: this one takes timestamps far ahead.
	kc, err := commitlog.TopicConfig{Partitions: 3}.SetKafkaConfig("message.timestamp.after.max.ms", "9223372036854775807")
	require.NoError(t, err)
	_, err = store.CreateTopic("src.keyed", kc)
	require.NoError(t, err)
	p, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, PullConfig{
		Name: "t1", Topics: []string{"events", "state", "keyed"}, Rename: Rename{Prefix: "src."}, Logger: pullLogger(t)})
	require.NoError(t, err)
	run := pullRunBackground(t, p)
	ends := pullEnds(c, "events", "state", "keyed")
	st := run.wait(t, "the pull to reach the cluster's high watermarks", pullCaughtUp(ends))
	run.stop(t)

	require.EqualValues(t, src.count("events")+src.count("state")+src.count("keyed"), st.Records)
	require.Zero(t, st.LossEvents)
	for _, ps := range st.Partitions {
		require.Equal(t, ends[ps.Topic][ps.Partition], ps.Position, "%s/%d", ps.Topic, ps.Partition)
		require.Zero(t, ps.Lag, "%s/%d", ps.Topic, ps.Partition)
		require.Equal(t, "src."+ps.Topic, ps.LocalTopic)
	}
	pullCheckSamePartitions(t, store, src, "events", "src.events")
	pullCheckSamePartitions(t, store, src, "state", "src.state")
	stt, err := store.Topic("src.state")
	require.NoError(t, err)
	require.True(t, stt.Config().CleanupPolicy.Compact(), "the compacted source topic's local copy is compacted")
	evt, err := store.Topic("src.events")
	require.NoError(t, err)
	require.False(t, evt.Config().CleanupPolicy.Compact())

	// keyed: every record once, in the partition murmur2 picks for its key, in source order per
	// source partition.
	got := pullReadLocal(t, store, "src.keyed")
	murmur := commitlog.Murmur2Partitioner()
	at := map[string]int32{}
	idx := map[string]int{}
	nullKeys := map[int32]int{}
	for p, recs := range got {
		for i, r := range recs {
			v := string(r.Value)
			_, dup := at[v]
			require.False(t, dup, "record %q pulled twice", v)
			at[v], idx[v] = p, i
			if r.Key != nil { // a null key has no placement to keep (spread as the Java client's are)
				require.Equal(t, murmur.Partition(&commitlog.Record{Key: r.Key}, 3), p, "record %q key %q", v, r.Key)
			} else {
				nullKeys[p]++
			}
		}
	}
	require.Len(t, at, src.count("keyed"))
	t.Logf("null-key records by local partition: %v", nullKeys)
	for sp, recs := range src.committed["keyed"] {
		last := map[int32]int{}
		for _, r := range recs {
			lp, ok := at[string(r.value)]
			require.True(t, ok, "record %q of keyed/%d not pulled", r.value, sp)
			pullSameRecord(t, r, got[lp][idx[string(r.value)]], "keyed "+string(r.value))
			if prev, seen := last[lp]; seen {
				require.Greater(t, idx[string(r.value)], prev, "keyed/%d records out of order in local partition %d", sp, lp)
			}
			last[lp] = idx[string(r.value)]
		}
	}

	// A second Run resumes at the stored positions: records produced since arrive, nothing twice.
	more := pullRecords("events", "more", 8, 800)
	pullProduce(t, ctx, cl, more)
	src.add(more)
	p2, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, PullConfig{
		Name: "t1", Topics: []string{"events", "state", "keyed"}, Rename: Rename{Prefix: "src."}, Logger: pullLogger(t)})
	require.NoError(t, err)
	run = pullRunBackground(t, p2)
	ends = pullEnds(c, "events", "state", "keyed")
	st = run.wait(t, "the second pull to catch up", pullCaughtUp(ends))
	run.stop(t)
	require.EqualValues(t, len(more), st.Records, "the second Run pulled only the new records")
	pullCheckSamePartitions(t, store, src, "events", "src.events")
}

func TestPullLossEvent(t *testing.T) {
	t.Parallel()
	ctx := pullTestContext(t)
	c := pullKfake(t)
	require.NoError(t, c.CreateTopic("logs", 2, nil))
	cl := pullClient(t, c.ListenAddrs())
	first := pullRecords("logs", "a", 2, 200)
	pullProduce(t, ctx, cl, first)

	store := pullOpenStore(t, t.TempDir())
	defer store.Close()
	var logged lockedBuffer
	cfg := PullConfig{Name: "loss", Topics: []string{"logs"},
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logged, t.Output()), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	p, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, cfg)
	require.NoError(t, err)
	run := pullRunBackground(t, p)
	run.wait(t, "the first records", pullCaughtUp(pullEnds(c, "logs")))
	run.stop(t)

	// While no Pull runs, records are produced and the cluster deletes some of them before
	// they are pulled (as retention would).
	second := pullRecords("logs", "b", 2, 200)
	pullProduce(t, ctx, cl, second)
	require.NoError(t, c.DeleteRecords("logs", 0, 150))
	third := pullRecords("logs", "c", 2, 20)
	pullProduce(t, ctx, cl, third)

	p, err = NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, cfg)
	require.NoError(t, err)
	run = pullRunBackground(t, p)
	st := run.wait(t, "the pull past the loss", pullCaughtUp(pullEnds(c, "logs")))
	run.stop(t)
	require.EqualValues(t, 1, st.LossEvents)
	require.EqualValues(t, 50, st.LostOffsets, "partition 0 was at 100, the cluster's log start moved to 150")
	require.EqualValues(t, 50, st.Partitions[0].Lost)
	require.Zero(t, st.Partitions[1].Lost)
	require.Contains(t, logged.String(), "level=ERROR")
	require.Contains(t, logged.String(), PullLossEvent)
	require.Contains(t, logged.String(), "topic=logs partition=0 from=100 to=150 lost=50")

	// Partition 0 holds its first 100 records, then the records from offset 150 on; partition
	// 1 everything.
	got := pullReadLocal(t, store, "logs")
	var want0, want1 []*kgo.Record
	for _, r := range append(append(append([]*kgo.Record{}, first...), second...), third...) {
		switch {
		case r.Partition == 1:
			want1 = append(want1, r)
		case r.Offset < 100 || r.Offset >= 150:
			want0 = append(want0, r)
		}
	}
	for p, want := range [][]*kgo.Record{want0, want1} {
		require.Len(t, got[int32(p)], len(want), "partition %d", p)
		for i, r := range want {
			require.Equal(t, r.Value, got[int32(p)][i].Value, "partition %d record %d", p, i)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pullFreePort returns a TCP port free a moment ago on 127.0.0.1.
func pullFreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// TestPullOutage takes the cluster away three ways while a Pull runs: its broker refuses
// fetches while records wait on it; it stops and starts again (kfake keeps its data in a
// directory and listens on the same port); and a Pull starts while it is down. Each time the
// Pull waits and then goes on, and at the end the local store holds every record once.
func TestPullOutage(t *testing.T) {
	t.Parallel()
	ctx := pullTestContext(t)
	dataDir := t.TempDir()
	port := pullFreePort(t)
	start := func() *kfake.Cluster {
		// The port was free when picked; while the cluster is down another socket of the
		// machine may hold it for a moment (tests run in parallel), so a busy port is tried again.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dataDir))
			if err == nil {
				return c
			}
			if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
				require.NoError(t, err)
			}
		}
	}
	c := start()
	defer func() { c.Close() }()
	require.NoError(t, c.CreateTopic("orders", 4, nil))
	addrs := c.ListenAddrs()
	cl := pullClient(t, addrs)
	src := newPullSource()
	produce := func(prefix string, n int) {
		recs := pullRecords("orders", prefix, 4, n)
		pullProduce(t, ctx, cl, recs)
		src.add(recs)
	}
	produce("a", 4000)

	store := pullOpenStore(t, t.TempDir())
	defer store.Close()
	cfg := PullConfig{Name: "outage", Topics: []string{"orders"}, MaxRecords: 100, Logger: pullLogger(t)}
	p, err := NewPuller(store, Cluster{Brokers: addrs}, cfg)
	require.NoError(t, err)
	run := pullRunBackground(t, p)
	run.wait(t, "the first records", pullCaughtUp(pullEnds(c, "orders")))

	// 1. The broker refuses every fetch (a retriable error, as a broker that lost its
	// leadership answers) while new records wait on it: none is pulled until it serves again.
	refuse := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: -1})
	require.NoError(t, refuse.Wait(ctx, 1)) // the fetch in flight when the fault came is answered
	before := p.State().Records
	produce("b", 2000)
	require.NoError(t, refuse.Wait(ctx, 3))
	require.Equal(t, before, p.State().Records, "records pulled while the broker refused fetches")
	refuse.Remove()
	run.wait(t, "the pull after the refusals", pullCaughtUp(pullEnds(c, "orders")))

	// 2. The cluster stops for a while and starts again with its data.
	c.Close()
	cl.Close()
	time.Sleep(time.Second)
	c = start()
	cl = pullClient(t, addrs)
	produce("c", 2000)
	run.wait(t, "the pull after the restart", pullCaughtUp(pullEnds(c, "orders")))
	run.stop(t)

	// 3. A Pull starts while the cluster is down: it waits for it.
	c.Close()
	cl.Close()
	p, err = NewPuller(store, Cluster{Brokers: addrs}, cfg)
	require.NoError(t, err)
	run = pullRunBackground(t, p)
	time.Sleep(time.Second)
	c = start()
	cl = pullClient(t, addrs)
	produce("d", 2000)
	st := run.wait(t, "the pull started during the outage", pullCaughtUp(pullEnds(c, "orders")))
	run.stop(t)
	require.EqualValues(t, 2000, st.Records, "the last Run pulled only what was new")
	require.Zero(t, st.LossEvents)
	pullCheckSamePartitions(t, store, src, "orders", "orders")
}

func TestPullFromBroker(t *testing.T) {
	t.Parallel()
	ctx := pullTestContext(t)
	// The "cluster" is this module's broker over a second store.
	remote, err := commitlog.Open(t.TempDir(), commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer remote.Close()
	ec, err := commitlog.TopicConfig{Partitions: 8}.SetKafkaConfig("message.timestamp.after.max.ms", "9223372036854775807")
	require.NoError(t, err)
	_, err = remote.CreateTopic("events", ec)
	require.NoError(t, err)
	cc := commitlog.TopicConfig{Partitions: 2}
	cc.CleanupPolicy = commitlog.CleanupCompact
	_, err = remote.CreateTopic("state", cc)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bctx, bcancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- broker.Serve(bctx, ln, remote, broker.Config{Logger: slog.New(slog.DiscardHandler)})
	}()
	defer func() {
		bcancel()
		require.NoError(t, <-served)
	}()
	addrs := []string{ln.Addr().String()}

	n := 20_000
	cl := pullClient(t, addrs)
	txn := pullClient(t, addrs, kgo.TransactionalID("pull-broker-txn"))
	src := newPullSource()
	recs := pullRecords("events", "e", 8, n)
	pullProduce(t, ctx, cl, recs[:n/2])
	src.add(recs[:n/2])
	aborted := pullRecords("events", "aborted", 8, 100)
	pullProduceTxn(t, ctx, txn, aborted, false)
	src.abort(aborted)
	pullProduceTxn(t, ctx, txn, recs[n/2:], true)
	src.add(recs[n/2:])
	state := make([]*kgo.Record, 500)
	for i := range state {
		state[i] = &kgo.Record{Topic: "state", Partition: int32(i % 2), Key: fmt.Appendf(nil, "k%d", i%20),
			Value: fmt.Appendf(nil, "s%d", i), Timestamp: time.UnixMilli(1_600_000_000_000 + int64(i))}
	}
	pullProduce(t, ctx, cl, state)
	src.add(state)

	ends := map[string]map[int32]int64{}
	for _, topic := range []string{"events", "state"} {
		tp, err := remote.Topic(topic)
		require.NoError(t, err)
		ends[topic] = map[int32]int64{}
		for p := range tp.PartitionCount() {
			part, err := tp.Partition(p)
			require.NoError(t, err)
			ends[topic][p] = part.HighWatermark()
		}
	}
	store := pullOpenStore(t, t.TempDir())
	defer store.Close()
	p, err := NewPuller(store, Cluster{Brokers: addrs}, PullConfig{Name: "b", Topics: []string{"events", "state"}, Rename: Rename{Prefix: "remote."}, Logger: pullLogger(t)})
	require.NoError(t, err)
	run := pullRunBackground(t, p)
	st := run.wait(t, "the pull from the broker to catch up", pullCaughtUp(ends))
	run.stop(t)
	require.EqualValues(t, n+len(state), st.Records)
	pullCheckSamePartitions(t, store, src, "events", "remote.events")
	pullCheckSamePartitions(t, store, src, "state", "remote.state")
	lt, err := store.Topic("remote.state")
	require.NoError(t, err)
	require.True(t, lt.Config().CleanupPolicy.Compact())
}

func TestNewPullerConfig(t *testing.T) {
	s, err := commitlog.OpenInMemory()
	require.NoError(t, err)
	defer s.Close()
	cluster := Cluster{Brokers: []string{"127.0.0.1:9092"}}
	for _, tc := range []struct {
		name    string
		cluster Cluster
		cfg     PullConfig
	}{
		{"no topics", cluster, PullConfig{}},
		{"no brokers", Cluster{}, PullConfig{Topics: []string{"a"}}},
		{"topic twice", cluster, PullConfig{Topics: []string{"a", "a"}}},
		{"bad topic", cluster, PullConfig{Topics: []string{"a/b"}}},
		{"bad prefix", cluster, PullConfig{Topics: []string{"a"}, Rename: Rename{Prefix: "x:"}}},
		{"bad name", cluster, PullConfig{Name: "a b", Topics: []string{"a"}}},
		{"long name", cluster, PullConfig{Name: strings.Repeat("n", 240), Topics: []string{"a"}}},
		{"negative max", cluster, PullConfig{Topics: []string{"a"}, MaxRecords: -1}},
		{"positions topic", cluster, PullConfig{Name: "x", Topics: []string{"x"}, Rename: Rename{Prefix: "commitlog-mirror-pull-"}}},
	} {
		_, err := NewPuller(s, tc.cluster, tc.cfg)
		require.ErrorIs(t, err, commitlog.ErrInvalidConfig, tc.name)
	}
	_, err = NewPuller(nil, cluster, PullConfig{Topics: []string{"a"}})
	require.ErrorIs(t, err, commitlog.ErrInvalidConfig)
	p, err := NewPuller(s, cluster, PullConfig{Topics: []string{"a"}})
	require.NoError(t, err)
	require.Equal(t, DefaultPullName, p.cfg.Name)
	require.Equal(t, DefaultPullMaxRecords, p.cfg.MaxRecords)
	require.Empty(t, p.State().Partitions)
}

func TestPullParsePosition(t *testing.T) {
	tp, off, ok := pullParsePosition([]byte("a.b-c/12"), []byte("345"))
	require.True(t, ok)
	require.Equal(t, pullTP{"a.b-c", 12}, tp)
	require.EqualValues(t, 345, off)
	for _, kv := range [][2]string{{"a", "1"}, {"/1", "1"}, {"a/", "1"}, {"a/-1", "1"}, {"a/1", "-1"}, {"a/1", "x"}, {"a/1", ""}, {"a/99999999999", "1"}} {
		_, _, ok := pullParsePosition([]byte(kv[0]), []byte(kv[1]))
		require.False(t, ok, "%q %q", kv[0], kv[1])
	}
}

// BenchmarkPull pulls 100,000 records of 100-byte values over 8 partitions from kfake into an
// empty on-disk store (the store's default durability: every append fsynced), per iteration,
// until the local positions reach the cluster's high watermarks.
func BenchmarkPull(b *testing.B) {
	ctx := pullTestContext(b)
	c := pullKfake(b)
	require.NoError(b, c.CreateTopic("bench", 8, nil))
	cl := pullClient(b, c.ListenAddrs())
	const n = 100_000
	recs := make([]*kgo.Record, n)
	var size int64
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "bench", Partition: int32(i % 8), Key: fmt.Appendf(nil, "key-%08d", i),
			Value: bytes.Repeat([]byte{byte('a' + i%26)}, 100), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		size += int64(len(recs[i].Key) + len(recs[i].Value) + 2)
	}
	pullProduce(b, ctx, cl, recs)
	ends := pullEnds(c, "bench")
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		store := pullOpenStore(b, b.TempDir())
		p, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, PullConfig{Name: "bench", Topics: []string{"bench"},
			Logger: slog.New(slog.DiscardHandler)})
		require.NoError(b, err)
		run := pullRunBackground(b, p)
		st := run.wait(b, "the pull to catch up", pullCaughtUp(ends))
		run.stop(b)
		require.EqualValues(b, n, st.Records)
		require.NoError(b, store.Close())
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestPullRunOnce: a second Run of a Puller while the first runs is ErrPullRunning; another
// Puller of the same name fences the first, whose Run then ends with ErrProducerFenced.
func TestPullRunOnce(t *testing.T) {
	t.Parallel()
	ctx := pullTestContext(t)
	c := pullKfake(t)
	require.NoError(t, c.CreateTopic("t", 1, nil))
	cl := pullClient(t, c.ListenAddrs())
	pullProduce(t, ctx, cl, pullRecords("t", "a", 1, 10))
	store := pullOpenStore(t, t.TempDir())
	defer store.Close()
	cfg := PullConfig{Name: "once", Topics: []string{"t"}, Logger: pullLogger(t)}
	p, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, cfg)
	require.NoError(t, err)
	first := pullRunBackground(t, p)
	first.wait(t, "the first records", pullCaughtUp(pullEnds(c, "t")))
	require.ErrorIs(t, p.Run(ctx), ErrPullRunning)

	p2, err := NewPuller(store, Cluster{Brokers: c.ListenAddrs()}, cfg)
	require.NoError(t, err)
	second := pullRunBackground(t, p2)
	second.wait(t, "the second Puller to start", func(st PullState) bool { return len(st.Partitions) == 1 })
	pullProduce(t, ctx, cl, pullRecords("t", "b", 1, 10)) // the first one's next transaction is refused
	select {
	case err := <-first.done:
		first.once.Do(func() {})
		require.ErrorIs(t, err, commitlog.ErrProducerFenced)
	case <-time.After(pullGuard):
		t.Fatal("the fenced Puller's Run did not end")
	}
	st := second.wait(t, "the second Puller to catch up", pullCaughtUp(pullEnds(c, "t")))
	second.stop(t)
	require.EqualValues(t, 10, st.Records, "the second Puller pulled what came after the first stopped")
	got := pullReadLocal(t, store, "t")
	require.Len(t, got[0], 20)
}
