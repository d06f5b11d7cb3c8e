package main

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka servers of (k) are honest: kgo produces to each (every record acknowledged, the
// partitions' end offsets summing to the records produced, with a producer id where the server
// gives one) and reads back from each exactly the records the case counts, every value matching
// its key's number. For the discard server the records read are its stored batch's copies.
func TestKafkaServersRoundTrip(t *testing.T) {
	const records = 8000 // a multiple of 4 partitions × discardBatchRecords
	for _, s := range kafkaSystems() {
		t.Run(s.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var fill int64
			if s.Kind == KindBaseline {
				fill = records / 4
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			sctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.serve(sctx, ln, t.TempDir(), fill) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			addr := ln.Addr().String()

			cl, err := newKafkaClient(addr, kgo.DefaultProduceTopic("t"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := createKafkaTopic(ctx, cl, "t", 4); err != nil {
				t.Fatal(err)
			}
			id, _, err := cl.ProducerID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantID := s.Name != "discard-nopid" // every server but it serves InitProducerID
			if (id >= 0) != wantID {
				t.Errorf("producer id %d: want one: %v", id, wantID)
			}
			p, err := produceRecords(ctx, cl, NewGen(100), 0, records, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.latencies) != records || p.latencies[0] <= 0 {
				t.Errorf("%d latencies, the lowest %d ns", len(p.latencies), p.latencies[0])
			}
			end, err := endOffsets(ctx, cl, "t", 4)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(records) + 4*fill; end != want {
				t.Errorf("end offsets sum to %d, want %d", end, want)
			}
			if !s.Takes("consume") {
				return
			}
			if _, err := consumeRecords(ctx, addr, "t", NewGen(100), records); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The discard server's stored batch carries the offsets it is served at, and its partitions
// hold exactly the fill: a fetch from the last batch's offset gets one batch, from the end none.
func TestDiscardAppendBatches(t *testing.T) {
	s, err := newDiscardServer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092}, 3*discardBatchRecords, true)
	if err != nil {
		t.Fatal(err)
	}
	b := s.appendBatches(nil, 0, 1<<30)
	if n, ok := batchRecords(b); !ok || n != 3*discardBatchRecords {
		t.Fatalf("from 0: %d records (whole batches: %v), want %d", n, ok, 3*discardBatchRecords)
	}
	b = s.appendBatches(nil, 2*discardBatchRecords, 1)
	if n, _ := batchRecords(b); n != discardBatchRecords || binary.BigEndian.Uint64(b) != 2*discardBatchRecords {
		t.Fatalf("from the last batch: %d records, base offset %d", n, binary.BigEndian.Uint64(b))
	}
	if b = s.appendBatches(nil, 3*discardBatchRecords, 1<<30); len(b) != 0 {
		t.Fatalf("from the end: %d bytes", len(b))
	}
}
