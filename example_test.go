package commitlog_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/commitlog-go/commitlog"
)

// Open a log directory, create a topic, and find it again after a reopen: topics and their
// configuration are stored with the data.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "commitlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := commitlog.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.CreateTopic("orders", commitlog.TopicConfig{Partitions: 3}); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	s, err = commitlog.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err := s.Topic("orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Topics(), t.PartitionCount(), "partitions, segments of", t.Config().SegmentBytes>>20, "MiB")
	// Output: [orders] 3 partitions, segments of 1024 MiB
}

// Create many topics in one call, as one Kafka CreateTopics request: each name is answered with
// its topic or its own error, and the topics that pass are created together.
func ExampleStore_CreateTopics() {
	s, err := commitlog.OpenInMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTopic("orders", commitlog.TopicConfig{}); err != nil {
		log.Fatal(err)
	}
	res := s.CreateTopics(map[string]commitlog.TopicConfig{
		"payments": {Partitions: 6},
		"audit":    {},
		"orders":   {Partitions: 2},
	})
	for _, name := range []string{"audit", "orders", "payments"} {
		if r := res[name]; r.Err != nil {
			fmt.Printf("%s: exists: %v\n", name, errors.Is(r.Err, commitlog.ErrTopicExists))
		} else {
			fmt.Printf("%s: %d partitions\n", name, r.Topic.PartitionCount())
		}
	}
	// Output:
	// audit: 1 partitions
	// orders: exists: true
	// payments: 6 partitions
}

// Append records: each key's records go to one partition, in order, and every record learns
// its partition and offset.
func ExampleTopic_Append() {
	s, err := commitlog.OpenInMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("orders", commitlog.TopicConfig{Partitions: 3})
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []*commitlog.Record{
		{Key: []byte("cart-7"), Value: []byte(`{"total":12}`), Timestamp: at},
		{Key: []byte("cart-9"), Value: []byte(`{"total":30}`), Timestamp: at},
		{Key: []byte("cart-7"), Value: []byte(`{"total":15}`), Timestamp: at.Add(time.Minute)},
	}
	if err := t.Append(context.Background(), recs...); err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Printf("%s %s -> partition %d offset %d\n", r.Key, r.Value, r.Partition, r.Offset)
	}
	// Output:
	// cart-7 {"total":12} -> partition 1 offset 0
	// cart-9 {"total":30} -> partition 0 offset 0
	// cart-7 {"total":15} -> partition 1 offset 1
}

// Look records up by offset, one at a time, through one Record whose buffers every read reuses.
func ExamplePartition_ReadRecord() {
	s, err := commitlog.OpenInMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("orders", commitlog.TopicConfig{Partitions: 1})
	if err != nil {
		log.Fatal(err)
	}
	p, err := t.Partition(0)
	if err != nil {
		log.Fatal(err)
	}
	var recs []*commitlog.Record
	for i := range 100 {
		recs = append(recs, &commitlog.Record{Key: fmt.Appendf(nil, "order-%d", i), Value: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if err := p.Append(context.Background(), recs...); err != nil {
		log.Fatal(err)
	}

	var r commitlog.Record
	for _, off := range []int64{42, 7, 99} {
		if err := p.ReadRecord(off, &r); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s/%d offset %d: %s %s\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
	}
	// Offset 100 is the log end offset: no record yet, where ReadRecords returns an empty slice.
	err = p.ReadRecord(100, &r)
	fmt.Println(errors.Is(err, commitlog.ErrNoRecordYet))
	// Output:
	// orders/0 offset 42: order-42 {"n":42}
	// orders/0 offset 7: order-7 {"n":7}
	// orders/0 offset 99: order-99 {"n":99}
	// true
}

// A reader reads from its own position; reading removes nothing, so another reader started at
// the earliest record sees the same records.
func ExampleTopic_NewReader() {
	ctx := context.Background()
	s, err := commitlog.OpenInMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("events", commitlog.TopicConfig{})
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, v := range []string{"signup", "login", "logout"} {
		if err := t.Append(ctx, &commitlog.Record{Key: []byte("user-1"), Value: []byte(v), Timestamp: at.Add(time.Duration(i) * time.Second)}); err != nil {
			log.Fatal(err)
		}
	}
	for _, name := range []string{"first", "second"} {
		r, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest})
		if err != nil {
			log.Fatal(err)
		}
		for range 3 {
			rec, err := r.Next(ctx) // blocks at the end of the log until more is appended
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s reader: offset %d %s\n", name, rec.Offset, rec.Value)
		}
		r.Close()
	}
	// Output:
	// first reader: offset 0 signup
	// first reader: offset 1 login
	// first reader: offset 2 logout
	// second reader: offset 0 signup
	// second reader: offset 1 login
	// second reader: offset 2 logout
}

// SeekToTime replays from a point in time: the time index finds the first record whose
// timestamp is at or after it.
func ExampleReader_SeekToTime() {
	ctx := context.Background()
	s, err := commitlog.OpenInMemory()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err := s.CreateTopic("readings", commitlog.TopicConfig{})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range 6 {
		ts := start.Add(time.Duration(i) * 5 * time.Minute)
		v := fmt.Sprintf("%d°C at %s", 20+i, ts.Format("15:04"))
		if err := t.Append(ctx, &commitlog.Record{Value: []byte(v), Timestamp: ts}); err != nil {
			log.Fatal(err)
		}
	}
	r, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekToTime(time.Date(2024, 5, 1, 10, 12, 0, 0, time.UTC)); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		rec, err := r.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("offset %d: %s\n", rec.Offset, rec.Value)
	}
	// Output:
	// offset 3: 23°C at 10:15
	// offset 4: 24°C at 10:20
	// offset 5: 25°C at 10:25
}

// A named reader commits its positions; after a restart, a reader with the same name resumes
// right after the last record it committed.
func ExampleReader_Commit() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "commitlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := commitlog.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	t, err := s.CreateTopic("jobs", commitlog.TopicConfig{})
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"job-1", "job-2", "job-3", "job-4"} {
		if err := t.Append(ctx, &commitlog.Record{Value: []byte(v), Timestamp: at}); err != nil {
			log.Fatal(err)
		}
	}
	r, err := t.NewReader(commitlog.ReaderConfig{Name: "worker", Start: commitlog.Earliest})
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		rec, err := r.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("done:", string(rec.Value))
	}
	if err := r.Commit(ctx); err != nil { // job-1 and job-2 are done, durably
		log.Fatal(err)
	}
	s.Close() // a restart

	s, err = commitlog.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t, err = s.Topic("jobs")
	if err != nil {
		log.Fatal(err)
	}
	r, err = t.NewReader(commitlog.ReaderConfig{Name: "worker", Start: commitlog.Earliest})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for range 2 {
		rec, err := r.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("resumed:", string(rec.Value))
	}
	// Output:
	// done: job-1
	// done: job-2
	// resumed: job-3
	// resumed: job-4
}
