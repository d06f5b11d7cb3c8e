package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionsReadCommitted: a committed, an aborted and a committed transaction of a kgo
// transactional producer; a read_committed consumer sees the committed ones only, a
// read_uncommitted consumer sees all three.
func TestTransactionsReadCommitted(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := startBroker(t, be.open(t), Config{})
			b.createTopic(t, "tx", 2)
			ctx := testContext(t)
			cl := b.client(t, kgo.DefaultProduceTopic("tx"), kgo.TransactionalID("tx-producer"))
			for i, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
				require.NoError(t, cl.BeginTransaction())
				for j := range 5 {
					produceSync(t, ctx, cl, &kgo.Record{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "txn%d-%d", i, j)})
				}
				require.NoError(t, cl.EndTransaction(ctx, end))
			}

			committed := b.client(t, kgo.ConsumeTopics("tx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			got := valuesOf(consumeN(t, ctx, committed, 10))
			want := map[string]bool{}
			for _, i := range []int{0, 2} {
				for j := range 5 {
					want[fmt.Sprintf("txn%d-%d", i, j)] = true
				}
			}
			require.Equal(t, want, got)

			uncommitted := b.client(t, kgo.ConsumeTopics("tx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got = valuesOf(consumeN(t, ctx, uncommitted, 15))
			for j := range 5 {
				want[fmt.Sprintf("txn1-%d", j)] = true
			}
			require.Equal(t, want, got)
		})
	}
}

func valuesOf(recs []*kgo.Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range recs {
		out[string(r.Value)] = true
	}
	return out
}

// TestListOffsetsReadCommittedAnswersLSO: while a transaction is open, ListOffsets "latest"
// answers the last stable offset under read_committed and the high watermark under
// read_uncommitted (Kafka's ListOffsets with isolation level).
func TestListOffsetsReadCommittedAnswersLSO(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "lso", 1)
	ctx := testContext(t)
	plain := b.client(t, kgo.DefaultProduceTopic("lso"))
	produceSync(t, ctx, plain, &kgo.Record{Value: []byte("0")}, &kgo.Record{Value: []byte("1")})
	tx := b.client(t, kgo.DefaultProduceTopic("lso"), kgo.TransactionalID("lso-tx"))
	require.NoError(t, tx.BeginTransaction())
	produceSync(t, ctx, tx, &kgo.Record{Value: []byte("2")}, &kgo.Record{Value: []byte("3")})

	latest := func(level int8) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.IsolationLevel = level
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lso"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, plain)
		require.NoError(t, err)
		sp := resp.Topics[0].Partitions[0]
		require.Equal(t, int16(0), sp.ErrorCode)
		return sp.Offset
	}
	require.Equal(t, int64(2), latest(1), "read_committed: the first offset of the open transaction")
	require.Equal(t, int64(4), latest(0), "read_uncommitted: the high watermark")
	require.NoError(t, tx.EndTransaction(ctx, kgo.TryCommit))
	require.Equal(t, int64(5), latest(1), "read_committed after the commit marker")
	require.Equal(t, int64(5), latest(0))
}

// TestGroupTransactSession runs kgo's consume-transform-produce session: records of an input
// topic are read in a group, copied to an output topic in transactions that also commit the
// group's offsets (AddOffsetsToTxn, TxnOffsetCommit); the output holds each input record once
// and the group's committed offsets are the input's end.
func TestGroupTransactSession(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "in", 2)
	b.createTopic(t, "out", 1)
	ctx := testContext(t)
	prod := b.client(t, kgo.DefaultProduceTopic("in"))
	const n = 200
	for i := range n {
		produceSync(t, ctx, prod, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%03d", i)})
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.addr), kgo.TransactionalID("copier"),
		kgo.DefaultProduceTopic("out"), kgo.ConsumerGroup("copiers"), kgo.ConsumeTopics("in"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second))
	require.NoError(t, err)
	defer sess.Close()
	copied := 0
	for copied < n {
		fs := sess.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		require.NoError(t, sess.Begin())
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) { require.NoError(t, err) })
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		require.NoError(t, err)
		require.True(t, committed)
		copied += len(recs)
	}
	require.Equal(t, n, copied)

	out := b.client(t, kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := valuesOf(consumeN(t, ctx, out, n))
	require.Len(t, got, n)

	adm := kadm.NewClient(b.client(t))
	offs, err := adm.FetchOffsets(ctx, "copiers")
	require.NoError(t, err)
	for p := range int32(2) {
		o, ok := offs.Lookup("in", p)
		require.True(t, ok, "partition %d committed", p)
		require.NoError(t, o.Err)
		require.Equal(t, storePartition(t, b.store, "in", p).HighWatermark(), o.At, "partition %d", p)
	}
}

// TestTransactionErrors answers the transaction APIs' errors with Kafka's codes.
func TestTransactionErrors(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "t", 1)
	ctx := testContext(t)
	cl := b.client(t)
	initPID := func(txnID string, timeoutMs int32) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(txnID)
		req.TransactionTimeoutMillis = timeoutMs
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp
	}
	require.Equal(t, kerr.InvalidTransactionTimeout.Code, initPID("bad-timeout", 0).ErrorCode)
	first := initPID("x", 10_000)
	require.Equal(t, int16(0), first.ErrorCode)
	require.Equal(t, int16(0), first.ProducerEpoch)
	second := initPID("x", 10_000)
	require.Equal(t, first.ProducerID, second.ProducerID)
	require.Equal(t, int16(1), second.ProducerEpoch)

	add := func(epoch int16, topic string) int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "x", first.ProducerID, epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.ProducerFenced.Code, add(0, "t"), "the fenced epoch 0")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, add(1, "nope"))
	require.Equal(t, int16(0), add(1, "t"))

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "unknown", 99, 0, true
	resp, err := end.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, resp.ErrorCode)
}

// TestOffsetFetchRequireStable: while a transaction holds a group's offset commit, an
// OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for that partition (KIP-447),
// and after the commit the offset.
func TestOffsetFetchRequireStable(t *testing.T) {
	b := startBroker(t, nil, Config{})
	b.createTopic(t, "t", 1)
	ctx := testContext(t)
	cl := b.client(t)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("stable"), 10_000
	ir, err := init.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), ir.ErrorCode)
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.TransactionalID, addOffsets.ProducerID, addOffsets.ProducerEpoch, addOffsets.Group = "stable", ir.ProducerID, ir.ProducerEpoch, "g"
	ar, err := addOffsets.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), ar.ErrorCode)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = "stable", "g", ir.ProducerID, ir.ProducerEpoch, -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 7
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), cr.Topics[0].Partitions[0].ErrorCode)

	fetch := func() (int16, int64) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		tp := kmsg.NewOffsetFetchRequestGroupTopic()
		tp.Topic, tp.Partitions = "t", []int32{0}
		g.Topics = append(g.Topics, tp)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		p := resp.Groups[0].Topics[0].Partitions[0]
		return p.ErrorCode, p.Offset
	}
	code, off := fetch()
	require.Equal(t, kerr.UnstableOffsetCommit.Code, code)
	require.Equal(t, int64(-1), off)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "stable", ir.ProducerID, ir.ProducerEpoch, true
	er, err := end.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), er.ErrorCode)
	code, off = fetch()
	require.Equal(t, int16(0), code)
	require.Equal(t, int64(7), off)
}
