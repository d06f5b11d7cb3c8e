package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// The broker's fuzz targets: the decoding of a request frame, and the whole request path of a
// connection served by Serve.
//
//	go test -run='^$' -fuzz='^FuzzDecodeRequest$' -fuzztime=200000x ./broker/
//	go test -run='^$' -fuzz='^FuzzServeRequest$' -fuzztime=20000x ./broker/
//
// The seed corpora in testdata/fuzz are written by TestFuzzBrokerSeeds with -update-fuzz-seeds:
// kmsg's encodings of a request of every served API at every served version, several of them
// pipelined, and truncated, oversized and garbage frames.

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite the broker package's fuzz seed corpus in testdata/fuzz")

// What decoding a request may allocate: decodeAllocPerByte per byte of its frame, and
// decodeAllocSlack for the request's own struct and small maps. kmsg checks an array's count
// against the bytes left, at the smallest encoding of an element, before it allocates the array
// (32 bytes of Go structs per byte at most, Produce's topics); a valid request costs up to 74
// (CreateTopics configs of 5 bytes, each with an unknown tagged field and so a map of its own).
// The frame limits bound what that comes to.
const (
	decodeAllocPerByte = 128
	decodeAllocSlack   = 64 << 10
)

// FuzzDecodeRequest: decodeRequest of any frame body returns an error, or a request whose msg
// is nil exactly when its API or version is not served, and otherwise is kmsg's request of the
// header's key and version, which encodes back to what decodes to itself. What decoding
// allocates is bounded by the body's length (kmsg checks each array's count against the bytes
// left before it allocates the array), never by a length or count the body claims.
func FuzzDecodeRequest(f *testing.F) {
	apis := newAPITable(servedAPIs())
	f.Fuzz(func(t *testing.T, body []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := decodeRequest(apis, body)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(decodeAllocPerByte*len(body)+decodeAllocSlack) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(body), alloc)
		}
		if err != nil {
			require.Nil(t, r)
			return
		}
		require.NotNil(t, r)
		require.GreaterOrEqual(t, len(body), 10, "a request header is 10 bytes at least")
		require.Equal(t, int16(binary.BigEndian.Uint16(body)), r.key)
		require.Equal(t, int16(binary.BigEndian.Uint16(body[2:])), r.version)
		require.Equal(t, int32(binary.BigEndian.Uint32(body[4:])), r.corr)
		a := apis.lookup(r.key)
		served := a != nil && r.version >= a.min && r.version <= a.max
		if r.msg == nil {
			require.False(t, served, "%s v%d is served but was not decoded", kmsg.NameForKey(r.key), r.version)
			return
		}
		require.True(t, served, "api key %d v%d is not served but was decoded", r.key, r.version)
		require.Equal(t, r.key, r.msg.Key())
		require.Equal(t, r.version, r.msg.GetVersion())
		enc := r.msg.AppendTo(nil)
		again := kmsg.RequestForKey(r.key)
		again.SetVersion(r.version)
		require.NoError(t, again.ReadFrom(enc), "%s v%d re-encoded", kmsg.NameForKey(r.key), r.version)
		require.Equal(t, enc, again.AppendTo(nil), "%s v%d re-encoded", kmsg.NameForKey(r.key), r.version)
	})
}

// The configuration FuzzServeRequest serves with: frames up to fuzzMaxRequestBytes for every
// API (below the control limit, so one limit for all), and a store with a two-partition topic
// "events".
const fuzzMaxRequestBytes = 1 << 20

// fuzzAnswerWait is how long FuzzServeRequest waits for an answer before it ends Serve, which
// answers the requests read (a Fetch waiting for records among them) and closes the connection.
// It bounds an input's time, not what is asserted: an answer late for any reason is checked as
// the answer given at Serve's end.
const fuzzAnswerWait = 20 * time.Millisecond

// fuzzGuard bounds each wait that should end at once: a failure past it, not a timing
// assertion.
const fuzzGuard = 30 * time.Second

// fuzzMaxPartitionsCreated bounds the partitions an input's CreateTopics may create: a topic of
// thousands of partitions costs the store a second, not the connection anything.
const fuzzMaxPartitionsCreated = 16

// FuzzServeRequest feeds any byte stream, as a client would write it, to a connection of Serve
// (over net.Pipe, from an in-memory listener) against an in-memory store, and checks what comes
// back: the connection is never left hanging and never panics; the requests are answered in
// order, each with a well-formed frame that kmsg decodes as the response of the request's API
// and version, until the first frame refused (size outside the limits, an API or version not
// served, a body that does not decode), where the server closes the connection; an ApiVersions
// of a version not served is answered UNSUPPORTED_VERSION at v0; Produce with acks=0 is not
// answered, and closes the connection when it fails. A stream that ends inside a frame is
// answered up to it. Serve returns nil after.
func FuzzServeRequest(f *testing.F) {
	apis := newAPITable(servedAPIs())
	f.Fuzz(func(t *testing.T, stream []byte) {
		plan := planAnswers(apis, stream)
		if plan.skip != "" {
			t.Skip(plan.skip)
		}
		store, err := commitlog.OpenInMemory(commitlog.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		defer store.Close()
		_, err = store.CreateTopic("events", commitlog.TopicConfig{Partitions: 2})
		require.NoError(t, err)

		ln := newPipeListener()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		served := make(chan error, 1)
		go func() {
			served <- Serve(ctx, ln, store, Config{
				MaxRequestBytes: fuzzMaxRequestBytes,
				Logger:          slog.New(slog.DiscardHandler),
			})
		}()
		cc := ln.dial()
		defer cc.Close()
		go cc.Write(stream) // ends with an error once the server closes its end

		// ended is set once Serve's context is cancelled: from then on the connection may close
		// after any answer, as reading stops, but not in the middle of one. An answer is waited
		// for up to fuzzAnswerWait for its first byte, then Serve is ended; once it began, it
		// must be whole within fuzzGuard.
		br := bufio.NewReader(cc)
		ended := false
		next := func() (int32, []byte, error) {
			if !ended {
				cc.SetReadDeadline(time.Now().Add(fuzzAnswerWait))
				if _, err := br.Peek(1); err != nil && isTimeout(err) {
					ended = true
					cancel()
				}
			}
			cc.SetReadDeadline(time.Now().Add(fuzzGuard))
			return readFrame(br)
		}
		for i, want := range plan.answers {
			corr, rest, err := next()
			if ended && errors.Is(err, io.EOF) { // a clean close between answers, not inside one
				break
			}
			if plan.mayClose && i >= plan.mayCloseFrom && errors.Is(err, io.EOF) {
				break // an acks=0 Produce before this answer failed: the server closed
			}
			require.NoError(t, err, "answer %d of %d (%s v%d, correlation id %d)", i, len(plan.answers), kmsg.NameForKey(want.key), want.version, want.corr)
			require.Equal(t, want.corr, corr, "answer %d: correlation id", i)
			version := want.version
			if want.unsupported {
				version = 0
			}
			resp, err := decodeResponse(want.key, version, rest)
			require.NoError(t, err, "answer %d", i)
			if want.unsupported {
				require.Equal(t, errUnsupportedVersion, resp.(*kmsg.ApiVersionsResponse).ErrorCode)
			}
		}
		if !plan.closes {
			cancel()
		}
		// Nothing more is answered: the server closes the connection.
		cc.SetReadDeadline(time.Now().Add(fuzzGuard))
		_, _, err = readFrame(br)
		require.ErrorIs(t, err, io.EOF, "after the answers expected")
		cancel()
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-time.After(fuzzGuard):
			t.Fatal("Serve did not return after its context ended")
		}
	})
}

// answerWant is one answer FuzzServeRequest expects.
type answerWant struct {
	key, version int16
	corr         int32
	unsupported  bool // ApiVersions of a version not served: answered at v0, UNSUPPORTED_VERSION
}

// answerPlan is what a server answers to a byte stream: the answers in order, and whether the
// server closes the connection after them (a refused frame) or waits for more bytes.
type answerPlan struct {
	answers []answerWant
	closes  bool
	// mayClose says that the connection may close before answer mayCloseFrom: an acks=0 Produce
	// came before it, and one that fails closes the connection instead of answering (Kafka's
	// KafkaApis), which a plan cannot tell from the bytes.
	mayClose     bool
	mayCloseFrom int
	skip         string // why the input is not run
}

// planAnswers reads stream as the server reads it.
func planAnswers(apis apiTable, stream []byte) answerPlan {
	var plan answerPlan
	created := 0
	for len(stream) >= 4 {
		size := int32(binary.BigEndian.Uint32(stream))
		if size < 8 || size > fuzzMaxRequestBytes {
			plan.closes = true
			return plan
		}
		if len(stream) < 4+int(size) {
			return plan // the server waits for the rest of the frame
		}
		r, err := decodeRequest(apis, stream[4:4+size])
		stream = stream[4+size:]
		if err != nil || (r.msg == nil && r.key != int16(kmsg.ApiVersions)) {
			plan.closes = true
			return plan
		}
		switch req := r.msg.(type) {
		case *kmsg.ProduceRequest:
			if req.Acks == 0 {
				if !plan.mayClose {
					plan.mayClose, plan.mayCloseFrom = true, len(plan.answers)
				}
				continue
			}
		case *kmsg.CreateTopicsRequest:
			for _, t := range req.Topics {
				created += max(int(t.NumPartitions), len(t.ReplicaAssignment), 1)
			}
			if created > fuzzMaxPartitionsCreated {
				plan.skip = fmt.Sprintf("CreateTopics of %d partitions", created)
				return plan
			}
		}
		plan.answers = append(plan.answers, answerWant{key: r.key, version: r.version, corr: r.corr, unsupported: r.msg == nil})
	}
	return plan
}

// pipeListener is a net.Listener whose connections are net.Pipe's.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// dial connects to the listener and returns the client's end.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-l.done:
		server.Close()
	}
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092} }

// fuzzSeed is one seed input of a fuzz target.
type fuzzSeed struct {
	name  string
	input []byte
}

// fuzzRequests is a request of every served API at every served version, with values a client
// sends: for the APIs this file knows, a populated request on the topic "events"; for any other
// served API, kmsg's default request.
func fuzzRequests() []struct {
	name    string
	req     kmsg.Request
	version int16
} {
	var out []struct {
		name    string
		req     kmsg.Request
		version int16
	}
	for _, a := range servedAPIs() {
		for v := a.min; v <= a.max; v++ {
			req := fuzzRequest(a.key, v)
			req.SetVersion(v)
			out = append(out, struct {
				name    string
				req     kmsg.Request
				version int16
			}{fmt.Sprintf("%s-v%d", kmsg.NameForKey(int16(a.key)), v), req, v})
		}
	}
	return out
}

// fuzzRequest is a request of key with values a client sends.
func fuzzRequest(key kmsg.Key, version int16) kmsg.Request {
	switch key {
	case kmsg.Produce:
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "events"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = testBatch("a", "bb")
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.Fetch:
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "events"
		for id := range int32(2) {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.PartitionMaxBytes = id, 1<<20
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.ListOffsets:
		req := kmsg.NewPtrListOffsetsRequest()
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = "events"
		for id, ts := range []int64{-1, -2} {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition, p.Timestamp = int32(id), ts
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.Metadata:
		req := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{"events", "unknown"} {
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, t)
		}
		return req
	case kmsg.ApiVersions:
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "fuzz", "1.0"
		return req
	case kmsg.CreateTopics:
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 5000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "created", 2, 1
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.DeleteTopics:
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 5000
		req.TopicNames = []string{"unknown"}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr("unknown")
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.OffsetForLeaderEpoch:
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = "events"
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req
	case kmsg.FindCoordinator:
		req := kmsg.NewPtrFindCoordinatorRequest()
		if version < 4 {
			req.CoordinatorKey = "group"
		} else {
			req.CoordinatorKeys = []string{"group", "txn"}
		}
		return req
	}
	return kmsg.RequestForKey(int16(key))
}

// fuzzSeeds returns the seed inputs of the two targets: frame bodies for FuzzDecodeRequest,
// byte streams for FuzzServeRequest.
func fuzzSeeds() (decode, serve []fuzzSeed) {
	reqs := map[string]kmsg.Request{}
	for i, r := range fuzzRequests() {
		reqs[r.name] = r.req
		fr := requestFrame(r.req, r.version, int32(i+1))
		decode = append(decode, fuzzSeed{r.name, fr[4:]})
		serve = append(serve, fuzzSeed{r.name, fr})
	}
	req := func(name string) kmsg.Request {
		r, ok := reqs[name]
		if !ok {
			panic("no seed request " + name)
		}
		return r
	}
	frame := func(name string, corr int32) []byte {
		r := req(name)
		return requestFrame(r, r.GetVersion(), corr)
	}
	// hugeCount is the frame of name cut after the header and skip bytes of its body, where an
	// array's count follows, with count there instead.
	hugeCount := func(name string, skip int, count []byte) []byte {
		r := req(name)
		body := r.AppendTo(nil)
		return rawFrame(r.Key(), r.GetVersion(), 1, r.IsFlexible(), append(body[:skip:skip], count...))
	}
	// A fetch that waits: answered when FuzzServeRequest ends Serve.
	longPoll := fuzzRequest(kmsg.Fetch, 12).(*kmsg.FetchRequest)
	longPoll.SetVersion(12)
	longPoll.MaxWaitMillis = 10_000
	acks0 := fuzzRequest(kmsg.Produce, 9).(*kmsg.ProduceRequest)
	acks0.SetVersion(9)
	acks0.Acks = 0
	uvarintMax := binary.AppendUvarint(nil, 1<<32-1)
	extra := []fuzzSeed{
		// Pipelined: records produced are fetched back (the sendfile'd payload path), at a
		// version before the flexible ones and at the flexible ones.
		{"pipeline-produce-fetch-v4", cat(frame("Produce-v9", 1), frame("Fetch-v4", 2))},
		{"pipeline-produce-fetch-v11", cat(frame("Produce-v9", 1), frame("Produce-v3", 2), frame("Fetch-v11", 3))},
		{"pipeline-produce-fetch-v12", cat(frame("Produce-v12", 1), frame("Fetch-v12", 2), frame("ListOffsets-v6", 3))},
		{"pipeline-admin", cat(frame("ApiVersions-v3", 1), frame("CreateTopics-v7", 2), frame("Metadata-v1", 3), frame("DeleteTopics-v5", 4), frame("DescribeCluster-v1", 5))},
		{"pipeline-long-poll-then-produce", cat(requestFrame(longPoll, 12, 1), frame("Produce-v9", 2))},
		{"produce-acks-0-then-metadata", cat(requestFrame(acks0, 9, 1), frame("Metadata-v12", 2))},
		// Refused: the server answers what came before and closes.
		{"apiversions-v99", rawFrame(int16(kmsg.ApiVersions), 99, 1, true, req("ApiVersions-v4").AppendTo(nil))},
		{"produce-v99-after-metadata", cat(frame("Metadata-v12", 1), rawFrame(0, 99, 2, true, req("Produce-v9").AppendTo(nil)))},
		{"unknown-key-999", rawFrame(999, 0, 1, false, nil)},
		{"telemetry-71", cat(frame("ApiVersions-v0", 1), requestFrame(kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0, 2))},
		{"size-max-int32", be32(1<<31 - 1)},
		{"size-negative", cat(frame("Metadata-v12", 1), be32(-1))},
		{"size-0", be32(0)},
		{"size-7", append(be32(7), 0, 3, 0, 1, 0, 0, 0)},
		{"metadata-v12-huge-topic-count", hugeCount("Metadata-v12", 0, uvarintMax)},
		{"metadata-v4-huge-topic-count", hugeCount("Metadata-v4", 0, be32(1<<31-1))},
		{"produce-v9-huge-topic-count", hugeCount("Produce-v9", 1+2+4, uvarintMax)},
		{"produce-v3-huge-partition-count", hugeCount("Produce-v3", 2+2+4+4+2+len("events"), be32(1<<31-1))},
		{"zeros", make([]byte, 64)},
		// Truncated: the stream ends inside a frame.
		{"truncated-produce-v9", frame("Produce-v9", 1)[:40]},
		{"truncated-after-size", frame("Fetch-v12", 1)[:4]},
		{"truncated-fetch-after-apiversions", cat(frame("ApiVersions-v4", 1), frame("Fetch-v12", 2)[:20])},
	}
	serve = append(serve, extra...)
	for _, s := range extra {
		if len(s.input) > 4 {
			decode = append(decode, fuzzSeed{s.name, s.input[4:]})
		}
	}
	header := rawFrame(3, 12, 1, true, nil)[4:] // Metadata v12's header, no body
	decode = append(decode,
		fuzzSeed{"header-only-metadata-v12", header},
		fuzzSeed{"truncated-header", header[:7]},
		fuzzSeed{"bad-header-tags", append(bytes.Clone(header[:len(header)-1]), 5, 1)},
	)
	return decode, serve
}

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// TestFuzzBrokerSeeds writes the broker's fuzz seed corpora with -update-fuzz-seeds, and
// otherwise checks that the committed ones are what it writes, so that they stay kmsg's
// encodings of every served API and version (a new API served needs its seeds written).
func TestFuzzBrokerSeeds(t *testing.T) {
	decode, serve := fuzzSeeds()
	for target, seeds := range map[string][]fuzzSeed{"FuzzDecodeRequest": decode, "FuzzServeRequest": serve} {
		dir := filepath.Join("testdata", "fuzz", target)
		want := map[string]bool{}
		for _, s := range seeds {
			text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.input)) + ")\n"
			path := filepath.Join(dir, s.name)
			want[s.name] = true
			if *updateFuzzSeeds {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("seed %s/%s: %v (go test ./broker/ -run TestFuzzBrokerSeeds -args -update-fuzz-seeds)", target, s.name, err)
				continue
			}
			require.Equal(t, text, string(got), "seed %s/%s is not what TestFuzzBrokerSeeds writes", target, s.name)
		}
		require.Len(t, want, len(seeds), "%s: seed names are unique", target)
	}
	// The seeds of served requests decode, and a served API's every version has one.
	apis := newAPITable(servedAPIs())
	for _, r := range fuzzRequests() {
		fr := requestFrame(r.req, r.version, 1)
		got, err := decodeRequest(apis, fr[4:])
		require.NoError(t, err, r.name)
		require.NotNil(t, got.msg, r.name)
	}
}
