package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The discard server is the ceiling of the Kafka workloads (k): it speaks just enough of Kafka's
// protocol (with kmsg, as the broker does) for kgo to produce to it idempotently and to consume
// from it, and does nothing else. A produce is answered with success and the next base offsets of
// its partitions at once; the records are kept nowhere. A fetch is answered with copies of one
// record batch built at start, each copy given the offset it is served at, up to the records the
// server was told its partitions hold (-discard-fill). What the client and the protocol cost on
// this machine is then all that is left between the client and this server.

// discardBatchRecords is the number of records in the discard server's stored batch.
const discardBatchRecords = 1000

// discardBatchTimestamp is the timestamp of every record the discard server serves (Unix ms).
const discardBatchTimestamp = 1_700_000_000_000

// castagnoli is the CRC-32C table of a record batch's CRC (Kafka's Crc32C).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// discardAPI is one API the discard server answers, with its versions.
type discardAPI struct {
	key      kmsg.Key
	min, max int16
}

// discardAPIs are the APIs and versions the discard server answers, capped at what kmsg
// encodes. Fetch stops at 12, before topic ids (v13), as the broker does.
var discardAPIs = []discardAPI{
	{kmsg.Produce, 3, 12},
	{kmsg.Fetch, 4, 12},
	{kmsg.ListOffsets, 1, 6},
	{kmsg.Metadata, 1, 12},
	{kmsg.ApiVersions, 0, 4},
	{kmsg.CreateTopics, 2, 7},
	{kmsg.InitProducerID, 0, 4},
}

// discardServer is one discard server's state: the topics made by CreateTopics and the next
// offset of each of their partitions.
type discardServer struct {
	host string
	port int32
	// fill is the number of records every partition holds from the start: what ListOffsets
	// answers as the latest offset and Fetch serves.
	fill int64
	// batch is the stored record batch: discardBatchRecords records at offsets 0 to
	// discardBatchRecords-1, re-based at every copy served.
	batch []byte

	// apis are the APIs answered: discardAPIs, without InitProducerID for a server that gives
	// no producer ids.
	apis []discardAPI

	mu     sync.Mutex
	topics map[string][]int64 // next offset of every partition
	nextID int64              // the next producer id
}

// newDiscardServer returns the discard server answering on addr, with partitions holding fill
// records each (a multiple of discardBatchRecords), serving InitProducerID when pids is set.
func newDiscardServer(addr net.Addr, fill int64, pids bool) (*discardServer, error) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil, err
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return nil, err
	}
	if fill%discardBatchRecords != 0 {
		return nil, fmt.Errorf("discard server: fill %d is not a multiple of %d", fill, discardBatchRecords)
	}
	var apis []discardAPI
	for _, a := range discardAPIs {
		if pids || a.key != kmsg.InitProducerID {
			apis = append(apis, a)
		}
	}
	return &discardServer{host: host, port: int32(p), fill: fill, batch: discardBatch(NewGen(100)),
		apis: apis, topics: map[string][]int64{}, nextID: 1}, nil
}

// discardBatch builds the stored batch: records 0 to discardBatchRecords-1 of gen (16-byte keys,
// gen's values), uncompressed, encoded with kmsg, its length and CRC-32C filled in.
func discardBatch(gen *Gen) []byte {
	var recs []byte
	key := make([]byte, keySize)
	for i := range int32(discardBatchRecords) {
		r := kmsg.Record{OffsetDelta: i, Key: PutKey(key, int64(i)), Value: gen.Value(int64(i))}
		// Length counts the bytes after itself: encode once with 0 (a one-byte varint) to
		// measure.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: 0,
		Magic:                2,
		LastOffsetDelta:      discardBatchRecords - 1,
		FirstTimestamp:       discardBatchTimestamp,
		MaxTimestamp:         discardBatchTimestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           discardBatchRecords,
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	// Length: the bytes after the offset and the length; CRC: Castagnoli, from the attributes
	// (byte 21) to the end.
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	return b
}

// serve accepts connections on ln until it is closed.
func (s *discardServer) serve(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Go(func() {
			defer nc.Close()
			if err := s.serveConn(nc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fmt.Println("discard server: connection closed:", err)
			}
		})
	}
}

// discardConn is one connection's reused buffers.
type discardConn struct {
	out     []byte   // the response frame
	records [][]byte // a fetch's record batches, one buffer per partition answered
}

// serveConn answers the requests of one connection in order, each as soon as it is read.
func (s *discardServer) serveConn(nc net.Conn) error {
	rd := bufio.NewReaderSize(nc, 1<<20)
	dc := &discardConn{}
	var size [4]byte
	var body []byte
	for {
		if _, err := io.ReadFull(rd, size[:]); err != nil {
			return err
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > 100<<20 {
			return fmt.Errorf("frame of %d bytes", n)
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(rd, body); err != nil {
			return err
		}
		if err := s.answer(nc, dc, body); err != nil {
			return err
		}
	}
}

// answer decodes one request frame's body and writes its response.
func (s *discardServer) answer(nc net.Conn, dc *discardConn, body []byte) error {
	r := kbin.Reader{Src: body}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	r.NullableString() // client id
	if !r.Ok() {
		return errors.New("truncated request header")
	}
	served := false
	for _, a := range s.apis {
		if int16(a.key) == key && version >= a.min && version <= a.max {
			served = true
		}
	}
	if !served {
		if key == int16(kmsg.ApiVersions) {
			resp := s.apiVersions()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return dc.write(nc, corr, resp)
		}
		return fmt.Errorf("%s v%d is not served", kmsg.NameForKey(key), version)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	var resp kmsg.Response
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp = s.apiVersions()
	case *kmsg.MetadataRequest:
		resp = s.metadata(req)
	case *kmsg.CreateTopicsRequest:
		resp = s.createTopics(req)
	case *kmsg.InitProducerIDRequest:
		resp = s.initProducerID(req)
	case *kmsg.ProduceRequest:
		if req.Acks == 0 {
			s.produce(req)
			return nil
		}
		resp = s.produce(req)
	case *kmsg.ListOffsetsRequest:
		resp = s.listOffsets(req)
	case *kmsg.FetchRequest:
		resp = s.fetch(dc, req)
	}
	resp.SetVersion(version)
	return dc.write(nc, corr, resp)
}

// write writes resp's frame: size, correlation id, the header's tagged fields for a flexible
// response other than ApiVersions, the body.
func (dc *discardConn) write(nc net.Conn, corr int32, resp kmsg.Response) error {
	b := append(dc.out[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	dc.out = b
	_, err := nc.Write(b)
	return err
}

func (s *discardServer) apiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range s.apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(a.key), a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// metadata answers this server as the only broker, leading every partition of the topics asked
// (all topics for a null list); a topic not created is UNKNOWN_TOPIC_OR_PARTITION.
func (s *discardServer) metadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, s.host, s.port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ClusterID = kmsg.StringPtr("discard")
	resp.ControllerID = 0
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	if req.Topics == nil {
		for name := range s.topics {
			names = append(names, name)
		}
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		parts, ok := s.topics[name]
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		for i := range parts {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = int32(i), 0, 0
			rp.Replicas, rp.ISR = []int32{0}, []int32{0}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopics makes each topic with its partition count (1 when -1); an existing one is
// TOPIC_ALREADY_EXISTS.
func (s *discardServer) createTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		n := max(t.NumPartitions, 1)
		if _, ok := s.topics[t.Topic]; ok {
			rt.ErrorCode = kerr.TopicAlreadyExists.Code
		} else if !req.ValidateOnly {
			parts := make([]int64, n)
			for i := range parts {
				parts[i] = s.fill
			}
			s.topics[t.Topic] = parts
		}
		rt.NumPartitions, rt.ReplicationFactor = n, 1
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// initProducerID gives every caller a new producer id, epoch 0, so kgo produces idempotently.
func (s *discardServer) initProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	s.mu.Lock()
	resp.ProducerID = s.nextID
	s.nextID++
	s.mu.Unlock()
	resp.ProducerEpoch = 0
	return resp
}

// produce answers every partition with success and its next base offset, advanced by the
// records of the batches sent, which are dropped.
func (s *discardServer) produce(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		parts := s.topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset = p.Partition, -1
			n, ok := batchRecords(p.Records)
			switch {
			case p.Partition < 0 || int(p.Partition) >= len(parts):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !ok:
				rp.ErrorCode = kerr.CorruptMessage.Code
			default:
				rp.BaseOffset = parts[p.Partition]
				parts[p.Partition] += n
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// batchRecords counts the records of the v2 batches in b from their headers (NumRecords), and
// reports whether b is whole batches.
func batchRecords(b []byte) (int64, bool) {
	var n int64
	for len(b) > 0 {
		if len(b) < 61 || b[16] != 2 {
			return 0, false
		}
		size := int64(binary.BigEndian.Uint32(b[8:12])) + 12
		if size < 61 || size > int64(len(b)) {
			return 0, false
		}
		n += int64(int32(binary.BigEndian.Uint32(b[57:61])))
		b = b[size:]
	}
	return n, true
}

// listOffsets answers 0 as the earliest offset and a partition's next offset as the latest (and
// for any timestamp asked).
func (s *discardServer) listOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		parts := s.topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.Timestamp = p.Partition, 0, -1
			switch {
			case p.Partition < 0 || int(p.Partition) >= len(parts):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Timestamp == -2: // earliest
				rp.Offset = 0
			default:
				rp.Offset = parts[p.Partition]
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetch answers each partition asked from its fetch offset with copies of the stored batch, as
// many as the partition's and the request's byte limits take (at least one, as Kafka), each copy
// re-based to the offset it is served at (the base offset precedes the CRC, which stays valid),
// never past the records the partition holds. When no partition has records to give, the answer
// waits for the request's MaxWait, as a broker's long poll does (capped at 500 ms).
func (s *discardServer) fetch(dc *discardConn, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	room := int(req.MaxBytes)
	if room <= 0 {
		room = 50 << 20
	}
	used := 0
	s.mu.Lock()
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		parts := s.topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Partition < 0 || int(p.Partition) >= len(parts) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			end := parts[p.Partition]
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = end, end, 0
			switch {
			case p.FetchOffset < 0 || p.FetchOffset > end:
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
			case p.FetchOffset < s.fill && used < room:
				k := len(dc.records)
				if k == cap(dc.records) {
					dc.records = append(dc.records, nil)
				}
				dc.records = dc.records[:k+1]
				dc.records[k] = s.appendBatches(dc.records[k][:0], p.FetchOffset, min(int(p.PartitionMaxBytes), room-used))
				used += len(dc.records[k])
				rp.RecordBatches = dc.records[k]
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.mu.Unlock()
	dc.records = dc.records[:0]
	if used == 0 && req.MaxWaitMillis > 0 {
		time.Sleep(time.Duration(min(req.MaxWaitMillis, 500)) * time.Millisecond)
	}
	return resp
}

// appendBatches appends copies of the stored batch from offset to dst, while they fit in room
// (one at least) and stay below the partition's fill.
func (s *discardServer) appendBatches(dst []byte, offset int64, room int) []byte {
	for off := offset; off+discardBatchRecords <= s.fill; off += discardBatchRecords {
		if len(dst) > 0 && len(dst)+len(s.batch) > room {
			break
		}
		at := len(dst)
		dst = append(dst, s.batch...)
		binary.BigEndian.PutUint64(dst[at:], uint64(off))
	}
	return dst
}
