package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startLoggedBroker serves a new store with a one-partition topic "events" and collects the
// broker's log, debug lines included.
func startLoggedBroker(t *testing.T, cfg Config) (*testBroker, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := startBroker(t, nil, cfg)
	b.createTopic(t, "events", 1)
	return b, logs
}

// requireServes checks that b still serves clients: a new kgo client produces a record to
// "events" and a consumer reads it back at the offset the produce was given.
func requireServes(t *testing.T, b *testBroker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := b.client(t, kgo.DefaultProduceTopic("events"))
	rec := &kgo.Record{Value: []byte("still serving")}
	require.NoError(t, prod.ProduceSync(ctx, rec).FirstErr())
	cons := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"events": {rec.Partition: kgo.NewOffset().At(rec.Offset)},
	}))
	var got []*kgo.Record
	for len(got) == 0 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err())
		got = fs.Records()
	}
	require.Equal(t, rec.Offset, got[0].Offset)
	require.Equal(t, "still serving", string(got[0].Value))
}

// requireAnswers checks that nc is served: ApiVersions v3 is answered without error.
func requireAnswers(t *testing.T, nc net.Conn) {
	t.Helper()
	resp := roundTrip(t, nc, kmsg.NewPtrApiVersionsRequest(), 3, 1).(*kmsg.ApiVersionsResponse)
	require.Equal(t, errNone, resp.ErrorCode)
}

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// frameHead is the start of a frame of size for key at version, its body never sent.
func frameHead(size int32, key, version int16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(be32(size), uint16(key)), uint16(version))
}

// TestRefusedFramesCloseTheConnection sends frames that Kafka's SocketServer refuses (a size
// outside the limits, checked as soon as the size or the api key is in, before any body byte),
// requests of APIs or versions not served, and bodies that do not decode. Each closes the
// connection that sent it, with no answer, and logs a reason that names the problem; another
// connection open at the time is still answered, and a new kgo client still produces and
// consumes.
func TestRefusedFramesCloseTheConnection(t *testing.T) {
	produce := newAPITable(servedAPIs()).lookup(int16(kmsg.Produce))
	metadataV12 := kmsg.NewPtrMetadataRequest()
	metadataV12.SetVersion(12)
	hugeTopicCount := binary.AppendUvarint(nil, math.MaxUint32) // compact array length 2^32-2
	produceV9 := kmsg.NewPtrProduceRequest()
	produceV9.SetVersion(9)
	produceV9.Acks, produceV9.TimeoutMillis = -1, 30000
	produceV9Body := produceV9.AppendTo(nil) // transactional id, acks, timeout, 0 topics, tags
	produceV9Body = append(produceV9Body[:len(produceV9Body)-2], hugeTopicCount...)
	cases := []struct {
		name string
		cfg  Config
		send []byte
		want string
	}{
		{"size 2^31-1", Config{}, be32(math.MaxInt32),
			"request frame size 2147483647 is over the limit of 104857600 bytes (socket.request.max.bytes)"},
		{"negative size", Config{}, be32(-1), "request frame size -1 is negative"},
		{"size 0", Config{}, be32(0), "request frame size 0 is shorter than a request header (8 bytes at least)"},
		{"size 7", Config{}, append(be32(7), 0, 18, 0, 3, 0, 0, 0), "request frame size 7 is shorter than a request header (8 bytes at least)"},
		{"Produce over MaxRequestBytes", Config{MaxRequestBytes: 1 << 20}, frameHead(1<<20+1, 0, 9),
			"request frame size 1048577 is over the limit of 1048576 bytes (socket.request.max.bytes)"},
		{"Metadata over the control limit", Config{}, frameHead(maxControlRequestBytes+1, 3, 12),
			"request frame size 8388609 of api key 3 (Metadata) is over the limit of 8388608 bytes (requests other than Produce)"},
		{"unknown api key 999", Config{}, rawFrame(999, 0, 1, false, nil), "api key 999 (Unknown) v0 is not served"},
		{"GetTelemetrySubscriptions", Config{}, requestFrame(kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0, 1),
			"api key 71 (GetTelemetrySubscriptions) v0 is not served"},
		{"PushTelemetry", Config{}, requestFrame(kmsg.NewPtrPushTelemetryRequest(), 0, 1),
			"api key 72 (PushTelemetry) v0 is not served"},
		{"Produce v99", Config{}, rawFrame(0, 99, 1, true, produceV9.AppendTo(nil)),
			fmt.Sprintf("Produce v99 is not served (versions %d to %d)", produce.min, produce.max)},
		{"Metadata v12 with a huge topic count", Config{}, rawFrame(3, 12, 1, true, hugeTopicCount),
			"Metadata v12: malformed request: its 5 bytes end before its fields do"},
		{"Metadata v4 with a huge topic count", Config{}, rawFrame(3, 4, 1, false, be32(math.MaxInt32)),
			"Metadata v4: malformed request: its 4 bytes end before its fields do"},
		{"Produce v9 with a huge topic count", Config{}, rawFrame(0, 9, 1, true, produceV9Body),
			"Produce v9: malformed request: its 12 bytes end before its fields do"},
		{"truncated request header", Config{}, append(be32(9), 0, 3, 0, 1, 0, 0, 0, 1, 0),
			"truncated request header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, logs := startLoggedBroker(t, tc.cfg)
			other := b.dial(t)
			requireAnswers(t, other)

			nc := b.dial(t)
			_, err := nc.Write(tc.send)
			require.NoError(t, err)
			requireClosedByServer(t, nc)
			logs.waitFor(t, "kafka connection closed", "remote="+nc.LocalAddr().String(), tc.want)

			requireAnswers(t, other)
			requireServes(t, b)
		})
	}
}

// TestProduceFrameAtMaxRequestBytes: a Produce frame of exactly socket.request.max.bytes is
// taken and its batch appended.
func TestProduceFrameAtMaxRequestBytes(t *testing.T) {
	const limit = 1 << 20
	b, _ := startLoggedBroker(t, Config{MaxRequestBytes: limit})
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "events"
	rp := kmsg.NewProduceRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Size the record's value so that the frame is exactly the limit (the varint lengths grow
	// with it, so it takes a step or two).
	value := 0
	for step := 0; ; step++ {
		require.Less(t, step, 10, "no value length makes a frame of exactly the limit")
		req.Topics[0].Partitions[0].Records = testBatch(strings.Repeat("v", value))
		size := len(requestFrame(req, 9, 1)) - 4
		if size == limit {
			break
		}
		value += limit - size
	}
	nc := b.dial(t)
	resp := roundTrip(t, nc, req, 9, 1).(*kmsg.ProduceResponse)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	require.Equal(t, errNone, resp.Topics[0].Partitions[0].ErrorCode, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	require.Equal(t, int64(0), resp.Topics[0].Partitions[0].BaseOffset)
}

// TestApiVersionsFutureVersion: an ApiVersions of a version the broker does not know is
// answered, as Kafka answers it (KIP-511), with UNSUPPORTED_VERSION and the served APIs at
// version 0, so that the client retries with a version it finds there; the connection stays
// open.
func TestApiVersionsFutureVersion(t *testing.T) {
	b, _ := startLoggedBroker(t, Config{})
	nc := b.dial(t)
	body := kmsg.NewPtrApiVersionsRequest()
	body.SetVersion(4)
	_, err := nc.Write(rawFrame(int16(kmsg.ApiVersions), 99, 7, true, body.AppendTo(nil)))
	require.NoError(t, err)
	corr, rest, err := readFrame(nc)
	require.NoError(t, err)
	require.Equal(t, int32(7), corr)
	resp, err := decodeResponse(int16(kmsg.ApiVersions), 0, rest)
	require.NoError(t, err)
	av := resp.(*kmsg.ApiVersionsResponse)
	require.Equal(t, kerr.UnsupportedVersion.Code, av.ErrorCode)
	require.Equal(t, int16(35), av.ErrorCode)

	var want []kmsg.ApiVersionsResponseApiKey
	byKey := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, a := range newAPITable(servedAPIs()) {
		if a != nil {
			k := kmsg.ApiVersionsResponseApiKey{ApiKey: int16(a.key), MinVersion: a.min, MaxVersion: a.max}
			want = append(want, k)
			byKey[k.ApiKey] = k
		}
	}
	require.Equal(t, want, av.ApiKeys)
	// Produce from v0 (advertised for librdkafka, answered UNSUPPORTED_VERSION per partition
	// below v3) and Fetch from v4, whatever their table's maxima are.
	require.Equal(t, int16(0), byKey[int16(kmsg.Produce)].MinVersion)
	require.Equal(t, int16(4), byKey[int16(kmsg.Fetch)].MinVersion)
	for _, k := range av.ApiKeys {
		require.NotContains(t, []int16{71, 72}, k.ApiKey, "the telemetry APIs are not served")
	}

	requireAnswers(t, nc)
}

// TestTruncatedFrame: a frame whose client closes (its write side) before the size's bytes
// arrived closes the connection, with the bytes read and expected logged.
func TestTruncatedFrame(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{})
	nc := b.dial(t)
	_, err := nc.Write(append(be32(100), make([]byte, 20)...))
	require.NoError(t, err)
	require.NoError(t, nc.(*net.TCPConn).CloseWrite())
	requireClosedByServer(t, nc)
	logs.waitFor(t, "kafka connection closed", "remote="+nc.LocalAddr().String(),
		"request frame truncated: the client closed after 24 of 104 bytes")
	requireServes(t, b)
}

// TestSlowlorisClosedAfterRequestTimeout: a client that sends a frame's size and then one byte
// every 100 ms is closed once the frame is not complete within Config.RequestTimeout.
func TestSlowlorisClosedAfterRequestTimeout(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{RequestTimeout: 300 * time.Millisecond})
	nc := b.dial(t)
	done := make(chan struct{})
	defer close(done)
	go func() {
		if _, err := nc.Write(be32(100)); err != nil {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := nc.Write([]byte{0}); err != nil {
				return
			}
		}
	}()
	requireClosedByServer(t, nc)
	logs.waitFor(t, "kafka connection closed", "remote="+nc.LocalAddr().String(),
		"request frame not complete within 300ms")
	requireServes(t, b)
}

// TestIdleConnectionClosed: a connection without a request for Config.IdleTimeout is closed
// (connections.max.idle.ms).
func TestIdleConnectionClosed(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{IdleTimeout: 300 * time.Millisecond})
	nc := b.dial(t)
	requireAnswers(t, nc)
	requireClosedByServer(t, nc)
	logs.waitFor(t, "kafka connection closed", "remote="+nc.LocalAddr().String(),
		"idle for 300ms (connections.max.idle.ms)")
	requireServes(t, b)
}

// TestMaxConnections: past Config.MaxConnections a new connection is closed at once; once one
// of the open ones closes, a new one is served.
func TestMaxConnections(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{MaxConnections: 2})
	first, second := b.dial(t), b.dial(t)
	requireAnswers(t, first)
	requireAnswers(t, second)

	third := b.dial(t)
	requireClosedByServer(t, third)
	logs.waitFor(t, "kafka connection refused: too many connections", "remote="+third.LocalAddr().String(), "max=2")
	requireAnswers(t, second)

	require.NoError(t, first.Close())
	// The server frees the slot when it reads the close; until then a new connection is refused,
	// so the client retries as Kafka's clients do.
	var fourth net.Conn
	require.Eventually(t, func() bool {
		nc, err := net.DialTimeout("tcp", b.addr, 30*time.Second)
		if err != nil {
			return false
		}
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := nc.Write(requestFrame(kmsg.NewPtrApiVersionsRequest(), 3, 9)); err != nil {
			nc.Close()
			return false
		}
		if corr, _, err := readFrame(nc); err != nil || corr != 9 {
			nc.Close()
			return false
		}
		fourth = nc
		return true
	}, 30*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { fourth.Close() })
	requireAnswers(t, fourth)
	requireAnswers(t, second)
}

// TestPipelinedRequestsAnsweredInOrder: five requests written at once are answered in order,
// each with its correlation id.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b, _ := startLoggedBroker(t, Config{})
	metadata := func() *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("events")
		req.Topics = append(req.Topics, rt)
		return req
	}
	listOffsets := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "events"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	listOffsets.Topics = append(listOffsets.Topics, lt)
	reqs := []struct {
		req     kmsg.Request
		version int16
	}{
		{kmsg.NewPtrApiVersionsRequest(), 3},
		{metadata(), 12},
		{listOffsets, 6},
		{metadata(), 1},
		{kmsg.NewPtrApiVersionsRequest(), 0},
	}
	var all []byte
	for i, r := range reqs {
		all = append(all, requestFrame(r.req, r.version, int32(100+i))...)
	}
	nc := b.dial(t)
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	_, err := nc.Write(all)
	require.NoError(t, err)
	for i, r := range reqs {
		corr, rest, err := readFrame(nc)
		require.NoError(t, err)
		require.Equal(t, int32(100+i), corr, "answer %d", i)
		resp, err := decodeResponse(r.req.Key(), r.version, rest)
		require.NoError(t, err)
		switch resp := resp.(type) {
		case *kmsg.ApiVersionsResponse:
			require.Equal(t, errNone, resp.ErrorCode)
			require.Len(t, resp.ApiKeys, len(servedAPIs()))
		case *kmsg.MetadataResponse:
			require.Len(t, resp.Topics, 1)
			require.Equal(t, "events", *resp.Topics[0].Topic)
			require.Equal(t, errNone, resp.Topics[0].ErrorCode)
			require.Len(t, resp.Topics[0].Partitions, 1)
			require.Equal(t, int32(0), resp.Topics[0].Partitions[0].Leader)
		case *kmsg.ListOffsetsResponse:
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			require.Equal(t, errNone, resp.Topics[0].Partitions[0].ErrorCode)
			require.Equal(t, int64(0), resp.Topics[0].Partitions[0].Offset)
		default:
			t.Fatalf("answer %d: %T", i, resp)
		}
	}
	requireAnswers(t, nc)
}

// TestShutdownAnswersLongPollAndProduce: Serve's end answers a Fetch waiting for records at
// once, with none, and a Produce read behind it; then Serve returns nil. The fetch waits up to
// ten minutes, far past the guard of the broker's stop (30 s), so its answer comes from Serve's
// end.
func TestShutdownAnswersLongPollAndProduce(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{})
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 600_000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "events"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 30_000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "events"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch("in flight")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	nc := b.dial(t)
	_, err := nc.Write(append(requestFrame(fetch, 12, 7001), requestFrame(produce, 9, 7002)...))
	require.NoError(t, err)
	// The produce is read (so the fetch before it is too, and is being answered): Serve's end
	// must answer both.
	logs.waitFor(t, "kafka request", "api_key=0", "correlation_id=7002", "remote="+nc.LocalAddr().String())
	b.stop() // Serve returns nil within its guard

	require.NoError(t, nc.SetReadDeadline(time.Now().Add(30*time.Second)))
	corr, rest, err := readFrame(nc)
	require.NoError(t, err)
	require.Equal(t, int32(7001), corr)
	resp, err := decodeResponse(int16(kmsg.Fetch), 12, rest)
	require.NoError(t, err)
	fr := resp.(*kmsg.FetchResponse)
	require.Equal(t, errNone, fr.ErrorCode)
	require.Len(t, fr.Topics, 1)
	require.Len(t, fr.Topics[0].Partitions, 1)
	require.Equal(t, errNone, fr.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(0), fr.Topics[0].Partitions[0].HighWatermark)
	require.Empty(t, fr.Topics[0].Partitions[0].RecordBatches)

	corr, rest, err = readFrame(nc)
	require.NoError(t, err)
	require.Equal(t, int32(7002), corr)
	resp, err = decodeResponse(int16(kmsg.Produce), 9, rest)
	require.NoError(t, err)
	pr := resp.(*kmsg.ProduceResponse)
	require.Len(t, pr.Topics, 1)
	require.Len(t, pr.Topics[0].Partitions, 1)
	require.Equal(t, errNone, pr.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(0), pr.Topics[0].Partitions[0].BaseOffset)

	requireClosedByServer(t, nc)
	tp, err := b.store.Topic("events")
	require.NoError(t, err)
	p, err := tp.Partition(0)
	require.NoError(t, err)
	require.Equal(t, int64(1), p.LogEndOffset())
}

// bigMetadataRequests is n Metadata v12 requests with correlation ids from 500, each naming
// 16,000 topics of 200 bytes (answered with about 3.6 MB each).
func bigMetadataRequests(n int) []byte {
	req := kmsg.NewPtrMetadataRequest()
	for i := range 16_000 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("%0200d", i))
		req.Topics = append(req.Topics, rt)
	}
	var all []byte
	for i := range n {
		all = append(all, requestFrame(req, 12, int32(500+i))...)
	}
	return all
}

// sendUnread writes the n requests of bigMetadataRequests on a new connection from a
// goroutine, and never reads the answers. It returns the connection once the broker logged the
// last request read.
func sendUnread(t *testing.T, b *testBroker, logs *logBuffer, n int) net.Conn {
	t.Helper()
	all := bigMetadataRequests(n)
	nc := b.dial(t)
	// A small receive buffer (no autotuning) keeps the answers from fitting in the sockets'
	// buffers whatever the system's tcp_rmem.
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(16<<10))
	go nc.Write(all)
	logs.waitFor(t, "kafka request", "api_key=3", fmt.Sprintf("correlation_id=%d", 500+n-1), "remote="+nc.LocalAddr().String())
	return nc
}

// TestShutdownWithUnreadAnswers: a client that sends requests and does not read the answers
// cannot hold Serve's return: once Serve is ending, an answer not taken within
// Config.RequestTimeout closes its connection.
func TestShutdownWithUnreadAnswers(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{RequestTimeout: 500 * time.Millisecond})
	sendUnread(t, b, logs, 4)
	b.stop() // Serve returns nil within its guard
}

// TestUnreadAnswersClosedAfterIdleTimeout: a client that does not read its answers for
// Config.IdleTimeout is closed, with the answer it did not take named.
func TestUnreadAnswersClosedAfterIdleTimeout(t *testing.T) {
	b, logs := startLoggedBroker(t, Config{IdleTimeout: 500 * time.Millisecond})
	nc := sendUnread(t, b, logs, 4)
	logs.waitFor(t, "kafka connection closed", "remote="+nc.LocalAddr().String(),
		"Metadata response not taken by the client within 500ms")
	requireAnswers(t, b.dial(t))
}

// TestReadFrameBodyGrowsWithTheBytes: the buffer of a frame announced at 100 MiB of which 10
// bytes arrive stays one chunk; a whole frame is read as sent.
func TestReadFrameBodyGrowsWithTheBytes(t *testing.T) {
	head := []byte{0, 3, 0, 12}
	body, err := readFrameBody(bytes.NewReader(make([]byte, 10)), head, 100<<20)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Len(t, body, 14)
	require.LessOrEqual(t, cap(body), frameChunk)

	src := make([]byte, 3<<20+5)
	for i := range src {
		src[i] = byte(i * 7)
	}
	body, err = readFrameBody(bytes.NewReader(src), head, len(src)+4)
	require.NoError(t, err)
	require.Equal(t, append(bytes.Clone(head), src...), body)

	body, err = readFrameBody(bytes.NewReader(nil), head, 4)
	require.NoError(t, err)
	require.Equal(t, head, body)
}
