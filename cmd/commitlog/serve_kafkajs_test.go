package main

// kafkajs compatibility: the Node.js client kafkajs (pure JavaScript, its own implementation of
// Kafka's protocol) against 'commitlog serve', the built command. testdata/kafkajs/compat.js
// runs one scenario per mode and prints each result as a JSON line; these tests assert every
// value. They skip when node is not on PATH or kafkajs is not installed in testdata/kafkajs
// (npm ci there; .ci/run does it).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// kafkajsDir is the Node package of the kafkajs tests: compat.js, and package.json and
// package-lock.json pinning kafkajs.
const kafkajsDir = "testdata/kafkajs"

// kafkajsInstall is how to install kafkajs for these tests.
const kafkajsInstall = "(cd cmd/commitlog/testdata/kafkajs && npm ci --no-audit --no-fund); .ci/run does it"

// requireKafkajs returns node's path, skipping the test when node is not on PATH or kafkajs is
// not installed in kafkajsDir. An installed kafkajs other than the one package-lock.json pins
// fails the test.
func requireKafkajs(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: these kafkajs compatibility tests need Node.js (14 or later) and kafkajs: " + kafkajsInstall)
	}
	raw, err := os.ReadFile(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("kafkajs is not installed in " + kafkajsDir + ": " + kafkajsInstall)
	}
	require.NoError(t, err)
	var installed struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(raw, &installed))
	raw, err = os.ReadFile(filepath.Join(kafkajsDir, "package-lock.json"))
	require.NoError(t, err)
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	require.NoError(t, json.Unmarshal(raw, &lock))
	pinned := lock.Packages["node_modules/kafkajs"].Version
	require.NotEmpty(t, pinned, "package-lock.json pins kafkajs")
	require.Equal(t, pinned, installed.Version, "the kafkajs installed is not the one package-lock.json pins: "+kafkajsInstall)
	return node
}

// kafkajsStep is one line that compat.js prints.
type kafkajsStep struct {
	Step string          `json:"step"`
	Data json.RawMessage `json:"data"`
}

// kafkajsRun is the output of one run of compat.js, read step by step in the order printed.
type kafkajsRun struct {
	t      testing.TB
	mode   string
	steps  []kafkajsStep
	next   int
	stderr string
}

// runKafkajs runs 'node compat.js addr mode args...' to its end; a non-zero exit, a line that
// is not a step, or a run past the guard time fails the test.
func runKafkajs(t testing.TB, node, addr, mode string, args ...string) *kafkajsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"compat.js", addr, mode}, args...)...)
	cmd.Dir = kafkajsDir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("compat.js %s did not end within %s\nstdout:\n%s\nstderr:\n%s", mode, serveGuard, out.String(), errOut.String())
	}
	require.NoError(t, err, "compat.js %s\nstdout:\n%s\nstderr:\n%s", mode, out.String(), errOut.String())
	r := &kafkajsRun{t: t, mode: mode, stderr: errOut.String()}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s kafkajsStep
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s), "compat.js %s printed %q", mode, sc.Text())
		r.steps = append(r.steps, s)
	}
	require.NoError(t, sc.Err())
	return r
}

// take returns the data of the next step, which must be named step.
func (r *kafkajsRun) take(step string) json.RawMessage {
	r.t.Helper()
	require.Less(r.t, r.next, len(r.steps), "compat.js %s ended before step %s\nstderr:\n%s", r.mode, step, r.stderr)
	s := r.steps[r.next]
	r.next++
	require.Equal(r.t, step, s.Step, "compat.js %s: step %d", r.mode, r.next)
	return s.Data
}

// requireJSON checks that the next step is named step and its data is the JSON want.
func (r *kafkajsRun) requireJSON(step, want string) {
	r.t.Helper()
	require.JSONEq(r.t, want, string(r.take(step)), "compat.js %s: %s", r.mode, step)
}

// decode decodes the next step, which must be named step, into v.
func (r *kafkajsRun) decode(step string, v any) {
	r.t.Helper()
	require.NoError(r.t, json.Unmarshal(r.take(step), v))
}

// versions returns the last step, the request versions kafkajs sent (API name → versions),
// and checks that it is the last.
func (r *kafkajsRun) versions() map[string][]int {
	r.t.Helper()
	var v map[string][]int
	r.decode("versions", &v)
	require.Equal(r.t, len(r.steps), r.next, "compat.js %s: versions is the last step", r.mode)
	return v
}

// kafkajsSendMeta is kafkajs's RecordMetadata of one partition of a send.
type kafkajsSendMeta struct {
	TopicName  string `json:"topicName"`
	Partition  int32  `json:"partition"`
	ErrorCode  int16  `json:"errorCode"`
	BaseOffset string `json:"baseOffset"`
}

// kafkajsSend is one send of the records scenario.
type kafkajsSend struct {
	Producer string            `json:"producer"`
	Codec    string            `json:"codec"`
	Metadata []kafkajsSendMeta `json:"metadata"`
}

// kafkajsRecord is a record as kafkajs's consumer delivered it: a header repeated under one
// key is an array of its values.
type kafkajsRecord struct {
	Partition int32          `json:"partition"`
	Offset    string         `json:"offset"`
	Key       string         `json:"key"`
	Value     string         `json:"value"`
	Headers   map[string]any `json:"headers"`
}

// storedBatch is what the kafkajs tests check of a batch in the store.
type storedBatch struct {
	partition     int32
	baseOffset    int64
	records       int32
	codec         int16
	transactional bool
	control       string // "commit" or "abort" for a control batch (a transaction marker)
	producerID    int64
	producerEpoch int16
	baseSequence  int32
}

// storedBatchesOf returns every batch of every partition of topic, in partition and offset
// order.
func storedBatchesOf(t testing.TB, s *commitlog.Store, topic string) []storedBatch {
	t.Helper()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	var out []storedBatch
	for id := range tp.PartitionCount() {
		p, err := tp.Partition(id)
		require.NoError(t, err)
		for off := p.LogStartOffset(); off < p.LogEndOffset(); {
			raw, err := p.ReadBatches(nil, off, 1<<20)
			require.NoError(t, err)
			require.NotEmpty(t, raw)
			for len(raw) > 0 {
				var rb kmsg.RecordBatch
				require.NoError(t, rb.ReadFrom(raw))
				raw = raw[12+int(rb.Length):]
				b := storedBatch{
					partition:     id,
					baseOffset:    rb.FirstOffset,
					records:       rb.NumRecords,
					codec:         rb.Attributes & 0x07,
					transactional: rb.Attributes&0x10 != 0,
					producerID:    rb.ProducerID,
					producerEpoch: rb.ProducerEpoch,
					baseSequence:  rb.FirstSequence,
				}
				if rb.Attributes&0x20 != 0 {
					var rec kmsg.Record
					require.NoError(t, rec.ReadFrom(rb.Records))
					var key kmsg.ControlRecordKey
					require.NoError(t, key.ReadFrom(rec.Key))
					b.control = map[kmsg.ControlRecordKeyType]string{kmsg.ControlRecordKeyTypeAbort: "abort", kmsg.ControlRecordKeyTypeCommit: "commit"}[key.Type]
					require.NotEmpty(t, b.control, "control record type %d", key.Type)
				}
				out = append(out, b)
				off = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			}
		}
	}
	return out
}

// TestKafkajs runs kafkajs 2.2.4 against 'commitlog serve', three scenarios in order on one
// broker (the admin scenario lists the topics and groups of the two before it):
//
//   - records: kafkajs's admin creates a 3-partition topic (and creating it again answers
//     false: TOPIC_ALREADY_EXISTS); an idempotent producer and a default one each send six keyed
//     records with headers uncompressed and then GZIP-compressed; each key lands on the
//     partition Kafka's Java partitioner (murmur2) gives it, at the offsets that follow the
//     sends; a consumer group reads all 24 from the beginning with their keys, values, headers
//     (a repeated header as an array), partitions and offsets, and commits the end of every
//     partition, which admin.fetchOffsets and admin.fetchTopicOffsets show.
//   - transaction: a transactional producer (transactionalId, idempotent, maxInFlightRequests
//     1) commits a transaction with a group's offsets (sendOffsets), aborts one, and commits a
//     GZIP one; a read_committed consumer sees only the committed records, a read_uncommitted
//     one the aborted ones too, and the group's offset committed in the transaction is there.
//   - admin: on a topic created with a config, fetchTopicOffsets, fetchTopicOffsetsByTimestamp
//     (at, between and after the records' timestamps), describeConfigs, deleteTopicRecords,
//     createPartitions, fetchTopicMetadata, listTopics, listGroups, describeGroups,
//     deleteGroups, describeCluster, deleteTopics.
//
// Then the broker stops and the store shows the batches as kafkajs sent them: compressed with
// GZIP, with the idempotent producer's id and sequence numbers, the transaction markers. Last,
// the request versions kafkajs sent (read from its debug log) are the ones
// docs/compatibility.md lists.
func TestKafkajs(t *testing.T) {
	node := requireKafkajs(t)
	dir := filepath.Join(t.TempDir(), "store")
	b := startServe(t, dir, "--node-id", "3", "--cluster-id", "kafkajs-cluster")
	sent := map[string][]int{} // API → the versions kafkajs sent, over every scenario
	addVersions := func(v map[string][]int) {
		for api, vs := range v {
			for _, x := range vs {
				if !slices.Contains(sent[api], x) {
					sent[api] = append(sent[api], x)
				}
			}
			slices.Sort(sent[api])
		}
	}

	// The records scenario's model: each producer's sends in order, each of the keys key-0 to
	// key-5 with the value producer-codec-i; Kafka's default partitioner places a keyed record
	// by murmur2 of its key (franz-go's StickyKeyPartitioner with no hasher is that).
	const recordsTopic = "kjs-records"
	keyPartitioner := kgo.StickyKeyPartitioner(nil).ForTopic(recordsTopic)
	partitionOf := func(key string) int32 {
		return int32(keyPartitioner.Partition(&kgo.Record{Key: []byte(key)}, 3))
	}
	type modelSend struct{ producer, codec string }
	sends := []modelSend{{"idempotent", "none"}, {"idempotent", "gzip"}, {"default", "none"}, {"default", "gzip"}}
	var wantSends []kafkajsSend
	var wantRecords []kafkajsRecord
	var wantBatches []storedBatch
	ends := map[int32]int64{} // partition → next offset
	sequences := map[int32]int32{}
	for _, s := range sends {
		send := kafkajsSend{Producer: s.producer, Codec: s.codec}
		counts := map[int32]int32{}
		for i := range 6 {
			key := fmt.Sprintf("key-%d", i)
			p := partitionOf(key)
			if counts[p] == 0 {
				send.Metadata = append(send.Metadata, kafkajsSendMeta{TopicName: recordsTopic, Partition: p, BaseOffset: strconv.FormatInt(ends[p], 10)})
			}
			headers := map[string]any{"source": "kafkajs", "i": strconv.Itoa(i)}
			if s.codec == "gzip" {
				headers["trace"] = []any{"a", "b"}
			}
			wantRecords = append(wantRecords, kafkajsRecord{
				Partition: p, Offset: strconv.FormatInt(ends[p]+int64(counts[p]), 10),
				Key: key, Value: fmt.Sprintf("%s-%s-%d", s.producer, s.codec, i), Headers: headers,
			})
			counts[p]++
		}
		slices.SortFunc(send.Metadata, func(a, b kafkajsSendMeta) int { return int(a.Partition - b.Partition) })
		wantSends = append(wantSends, send)
		for _, m := range send.Metadata {
			// kafkajs's default producer writes no producer id (-1) but epoch 0 and sequence 0
			// (Java's writes -1 for both); Kafka stores a batch without a producer id as sent.
			batch := storedBatch{partition: m.Partition, baseOffset: ends[m.Partition], records: counts[m.Partition], producerID: -1}
			if s.codec == "gzip" {
				batch.codec = 1
			}
			if s.producer == "idempotent" {
				batch.producerID, batch.producerEpoch, batch.baseSequence = 0, 0, sequences[m.Partition]
				sequences[m.Partition] += counts[m.Partition]
			}
			wantBatches = append(wantBatches, batch)
			ends[m.Partition] += int64(counts[m.Partition])
		}
	}
	require.Len(t, ends, 3, "the six keys cover the three partitions")
	slices.SortFunc(wantRecords, func(a, b kafkajsRecord) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		x, _ := strconv.Atoi(a.Offset)
		y, _ := strconv.Atoi(b.Offset)
		return x - y
	})
	slices.SortFunc(wantBatches, func(a, b storedBatch) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.baseOffset - b.baseOffset)
	})
	var endOffsets, committedOffsets []string
	for p := range int32(3) {
		end := strconv.FormatInt(ends[p], 10)
		endOffsets = append(endOffsets, fmt.Sprintf(`{"partition":%d,"offset":%q,"high":%q,"low":"0"}`, p, end, end))
		committedOffsets = append(committedOffsets, fmt.Sprintf(`{"partition":%d,"offset":%q,"metadata":null}`, p, end))
	}

	t.Run("records", func(t *testing.T) {
		r := runKafkajs(t, node, b.addr, "records")
		r.requireJSON("createTopics", `true`)
		r.requireJSON("createTopicsAgain", `false`)
		for _, want := range wantSends {
			var got kafkajsSend
			r.decode("send", &got)
			require.Equal(t, want, got)
		}
		r.requireJSON("fetchTopicOffsets", "["+strings.Join(endOffsets, ",")+"]")
		var got []kafkajsRecord
		r.decode("consumed", &got)
		require.Equal(t, wantRecords, got, "the group's only member reads every record once, as produced")
		r.requireJSON("fetchOffsets", `[{"topic":"kjs-records","partitions":[`+strings.Join(committedOffsets, ",")+`]}]`)
		addVersions(r.versions())
	})

	t.Run("transaction", func(t *testing.T) {
		r := runKafkajs(t, node, b.addr, "transaction")
		r.requireJSON("createTopics", `true`)
		// Offsets: committed-0 0, committed-1 1, commit marker 2, aborted-0 3, aborted-1 4,
		// abort marker 5, committed-2 6, commit marker 7.
		r.requireJSON("committed", `[{"topicName":"kjs-txn","partition":0,"errorCode":0,"baseOffset":"0"}]`)
		r.requireJSON("aborted", `[{"topicName":"kjs-txn","partition":0,"errorCode":0,"baseOffset":"3"}]`)
		r.requireJSON("committed", `[{"topicName":"kjs-txn","partition":0,"errorCode":0,"baseOffset":"6"}]`)
		r.requireJSON("fetchTopicOffsets", `[{"partition":0,"offset":"8","high":"8","low":"0"}]`)
		r.requireJSON("fetchOffsets", `[{"topic":"kjs-txn","partitions":[{"partition":0,"offset":"2","metadata":null}]}]`)
		rec := func(offset int, v string) string {
			return fmt.Sprintf(`{"partition":0,"offset":"%d","key":%q,"value":%q,"headers":{"txn":"kafkajs"}}`, offset, v, v)
		}
		r.requireJSON("readCommitted", "["+strings.Join([]string{rec(0, "committed-0"), rec(1, "committed-1"), rec(6, "committed-2")}, ",")+"]")
		r.requireJSON("readUncommitted", "["+strings.Join([]string{rec(0, "committed-0"), rec(1, "committed-1"),
			rec(3, "aborted-0"), rec(4, "aborted-1"), rec(6, "committed-2")}, ",")+"]")
		addVersions(r.versions())
	})

	t.Run("admin", func(t *testing.T) {
		// Timestamps an hour old (well inside the 7-day retention), whole seconds.
		base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
		r := runKafkajs(t, node, b.addr, "admin", strconv.FormatInt(base, 10))
		r.requireJSON("createTopics", `true`)
		// Partition 0: t0 at base, t1 at base+1s, t2 at base+2s; partition 1: t5 at base+5s.
		r.requireJSON("sendBatch", `[{"topicName":"kjs-admin","partition":0,"errorCode":0,"baseOffset":"0"},
			{"topicName":"kjs-admin","partition":1,"errorCode":0,"baseOffset":"0"}]`)
		r.requireJSON("fetchTopicOffsets", `[{"partition":0,"offset":"3","high":"3","low":"0"},{"partition":1,"offset":"1","high":"1","low":"0"}]`)
		// The first offset whose timestamp is at or after the time; past every record Kafka
		// answers -1, which kafkajs replaces with the high watermark.
		for _, c := range []struct {
			delta  int
			p0, p1 string
		}{{0, "0", "0"}, {1000, "1", "0"}, {1500, "2", "0"}, {10000, "3", "1"}} {
			r.requireJSON("fetchTopicOffsetsByTimestamp", fmt.Sprintf(`{"delta":%d,"offsets":[{"partition":0,"offset":%q},{"partition":1,"offset":%q}]}`, c.delta, c.p0, c.p1))
		}
		// The config given at creation, and a default.
		r.requireJSON("describeConfigs", `[{"errorCode":0,"resourceType":2,"resourceName":"kjs-admin","configEntries":[
			{"configName":"cleanup.policy","configValue":"delete","isDefault":true,"configSource":5,"readOnly":false,"isSensitive":false},
			{"configName":"retention.ms","configValue":"86400000","isDefault":false,"configSource":1,"readOnly":false,"isSensitive":false}]}]`)
		// deleteTopicRecords before offset 1 of partition 0 moves its log start offset.
		r.requireJSON("fetchTopicOffsetsAfterDeleteRecords", `[{"partition":0,"offset":"3","high":"3","low":"1"},{"partition":1,"offset":"1","high":"1","low":"0"}]`)
		// createPartitions to 3.
		r.requireJSON("fetchTopicMetadata", `[{"name":"kjs-admin","partitions":[
			{"partitionErrorCode":0,"partitionId":0,"leader":3,"replicas":[3],"isr":[3]},
			{"partitionErrorCode":0,"partitionId":1,"leader":3,"replicas":[3],"isr":[3]},
			{"partitionErrorCode":0,"partitionId":2,"leader":3,"replicas":[3],"isr":[3]}]}]`)
		r.requireJSON("listTopics", `["kjs-admin","kjs-records","kjs-txn"]`)
		// A group that only ever had offsets committed in a transaction has no protocol type.
		r.requireJSON("listGroups", `[{"groupId":"kjs-records-group","protocolType":"consumer"},
			{"groupId":"kjs-txn-offsets","protocolType":""},
			{"groupId":"kjs-txn-read-committed","protocolType":"consumer"},
			{"groupId":"kjs-txn-read-uncommitted","protocolType":"consumer"}]`)
		// Groups whose members all left are Empty, with no protocol.
		r.requireJSON("describeGroups", `[
			{"groupId":"kjs-records-group","errorCode":0,"state":"Empty","protocolType":"consumer","protocol":"","members":0},
			{"groupId":"kjs-txn-offsets","errorCode":0,"state":"Empty","protocolType":"","protocol":"","members":0}]`)
		r.requireJSON("deleteGroups", `[{"groupId":"kjs-txn-read-uncommitted","errorCode":0}]`)
		r.requireJSON("listGroupsAfterDelete", `[{"groupId":"kjs-records-group","protocolType":"consumer"},
			{"groupId":"kjs-txn-offsets","protocolType":""},
			{"groupId":"kjs-txn-read-committed","protocolType":"consumer"}]`)
		host, port, err := net.SplitHostPort(b.addr)
		require.NoError(t, err)
		r.requireJSON("describeCluster", fmt.Sprintf(`{"brokers":[{"nodeId":3,"host":%q,"port":%s}],"controller":3,"clusterId":"kafkajs-cluster"}`, host, port))
		r.requireJSON("listTopicsAfterDelete", `["kjs-records","kjs-txn"]`)
		addVersions(r.versions())
	})

	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)

	// The request versions kafkajs 2.2.4 sent: for each API the highest that it and the broker
	// both serve (docs/compatibility.md lists them). A consumer heartbeats only once its
	// heartbeat interval (3 s) has passed since it was created, so Heartbeat may or may not be
	// among them.
	if hb, ok := sent["Heartbeat"]; ok {
		require.Equal(t, []int{3}, hb)
		delete(sent, "Heartbeat")
	}
	require.Equal(t, map[string][]int{
		"ApiVersions": {2}, "Metadata": {6}, "CreateTopics": {3}, "DeleteTopics": {1},
		"Produce": {7}, "Fetch": {11}, "ListOffsets": {3},
		"GroupCoordinator": {2}, "JoinGroup": {5}, "SyncGroup": {3}, "OffsetCommit": {5},
		"OffsetFetch": {4}, "LeaveGroup": {3}, "ListGroups": {2}, "DescribeGroups": {2},
		"DeleteGroups": {1}, "InitProducerId": {1}, "AddPartitionsToTxn": {1},
		"AddOffsetsToTxn": {1}, "TxnOffsetCommit": {1}, "EndTxn": {1},
		"DescribeConfigs": {2}, "DeleteRecords": {1}, "CreatePartitions": {1},
	}, sent)

	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer s.Close()

	// The records topic: one batch per partition per send, GZIP ones stored compressed; the
	// idempotent producer's carry its producer id (the first one given out, 0), epoch 0 and
	// sequence numbers that run on per partition; the default producer's have no producer id.
	require.Equal(t, wantBatches, storedBatchesOf(t, s, recordsTopic))

	// The transaction topic: the transactional producer at epoch 0, each transaction's batch
	// followed by its marker. Its producer id is the third given out, 2: with idempotent: true
	// kafkajs's connect first asks for an idempotent producer id (1, never used), and its first
	// transaction() then for the transactional one.
	data := func(offset int64, n int32, codec int16, seq int32) storedBatch {
		return storedBatch{baseOffset: offset, records: n, codec: codec, transactional: true, producerID: 2, baseSequence: seq}
	}
	marker := func(offset int64, kind string) storedBatch {
		return storedBatch{baseOffset: offset, records: 1, transactional: true, control: kind, producerID: 2, baseSequence: -1}
	}
	require.Equal(t, []storedBatch{
		data(0, 2, 0, 0), marker(2, "commit"),
		data(3, 2, 0, 2), marker(5, "abort"),
		data(6, 1, 1, 4), marker(7, "commit"),
	}, storedBatchesOf(t, s, "kjs-txn"))
}

// TestKafkajsSASL: kafkajs authenticates to 'commitlog serve --sasl-credentials' with each of its
// SASL mechanisms (SaslHandshake v1, then the exchange in SaslAuthenticate v1, KIP-152), then
// creates a topic, produces to it and reads its offsets; a wrong password and an unknown user
// fail authentication with Kafka's messages for SCRAM and PLAIN, which kafkajs passes on.
func TestKafkajsSASL(t *testing.T) {
	node := requireKafkajs(t)
	dir := filepath.Join(t.TempDir(), "store")
	creds := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(creds, []byte("alice:alice-secret\n"), 0o600))
	b := startServe(t, dir, "--sasl-credentials", creds)
	for _, mechanism := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mechanism, func(t *testing.T) {
			r := runKafkajs(t, node, b.addr, "sasl", mechanism, "alice", "alice-secret")
			topic := "kjs-sasl-" + mechanism
			r.requireJSON("createTopics", `true`)
			r.requireJSON("send", fmt.Sprintf(`[{"topicName":%q,"partition":0,"errorCode":0,"baseOffset":"0"}]`, topic))
			r.requireJSON("fetchTopicOffsets", `[{"partition":0,"offset":"1","high":"1","low":"0"}]`)
			require.Equal(t, map[string][]int{
				"ApiVersions": {2}, "SaslHandshake": {1}, "SaslAuthenticate": {1},
				"Metadata": {6}, "CreateTopics": {3}, "Produce": {7}, "ListOffsets": {3},
			}, r.versions())
		})
	}
	t.Run("refused", func(t *testing.T) {
		r := runKafkajs(t, node, b.addr, "sasl", "scram-sha-256", "alice", "wrong")
		r.requireJSON("authError", `{"name":"KafkaJSSASLAuthenticationError","message":"SASL SCRAM SHA256 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"}`)
		require.Equal(t, map[string][]int{"ApiVersions": {2}, "SaslHandshake": {1}, "SaslAuthenticate": {1}}, r.versions())
		r = runKafkajs(t, node, b.addr, "sasl", "plain", "bob", "bob-secret")
		r.requireJSON("authError", `{"name":"KafkaJSSASLAuthenticationError","message":"SASL PLAIN authentication failed: Authentication failed: Invalid username or password"}`)
		require.Equal(t, map[string][]int{"ApiVersions": {2}, "SaslHandshake": {1}, "SaslAuthenticate": {1}}, r.versions())
	})
	require.Equal(t, 0, b.stop(t, syscall.SIGTERM), "stderr:\n%s", b.log)
}
