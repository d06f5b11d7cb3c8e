// Command flights streams three million real US domestic flights (January to June 2001) through a
// topic of eight partitions keyed by origin airport, reports the throughput and how unevenly the
// airports spread over the partitions, then replays one hour of one airport by timestamp.
//
//	go run ./examples/flights [flights-3m.csv.gz]
//
// The file is the project's shared flights data (CSV with the header
// time_ms,delay_min,distance_mi,origin,destination; gzip or not); by default it is read from
// ../shared/data/flights/flights-3m.csv.gz relative to the repository's root. The store lives in
// a temporary folder, removed at the end.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commitlog-go/commitlog"
)

const (
	defaultPath = "../shared/data/flights/flights-3m.csv.gz"
	partitions  = 8
	batchSize   = 8192 // records per append
	replayKey   = "ORD"
)

func main() {
	path := defaultPath
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if len(os.Args) > 2 || path == "-h" || path == "--help" {
		fmt.Fprintln(os.Stderr, "usage: go run ./examples/flights [flights-3m.csv.gz]")
		os.Exit(2)
	}
	if err := run(context.Background(), path, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flights:", err)
		os.Exit(1)
	}
}

// flight is one parsed line.
type flight struct {
	ts     int64
	origin string
}

func run(ctx context.Context, path string, w io.Writer) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s not found: pass the path of flights-3m.csv.gz (the project's shared flights data, "+
			"CSV with the header time_ms,delay_min,distance_mi,origin,destination) as the argument: "+
			"go run ./examples/flights PATH", path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var in io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		in = zr
	}

	dir, err := os.MkdirTemp("", "commitlog-flights-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// SyncInterval: an acknowledged append survives the process crashing, and the disk is
	// flushed every second; SyncAlways (the default) would fsync every append.
	s, err := commitlog.Open(dir, commitlog.WithSync(commitlog.SyncInterval(time.Second)))
	if err != nil {
		return err
	}
	defer s.Close()
	// retention.ms -1 (RetentionDuration < 0: keep forever): the flights are from 2001, and under
	// Kafka's default retention.ms of 7 days the first retention check (ApplyRetention, or the
	// store's background check every 5 minutes) would delete every sealed segment of them, by
	// their timestamps, as Kafka would.
	t, err := s.CreateTopic("flights", commitlog.TopicConfig{Partitions: partitions,
		LogConfig: commitlog.LogConfig{Compression: commitlog.CompressionLZ4, RetentionDuration: -1}})
	if err != nil {
		return err
	}

	// Stream: parse, append in batches, count per partition and per airport.
	perPartition := make([]int64, partitions)
	perKey := map[string]int64{}
	keyPartition := map[string]int32{}
	hourly := map[int64]int{} // replayKey's flights per hour
	var total, bytesIn int64
	recs := make([]commitlog.Record, 0, batchSize)
	ptrs := make([]*commitlog.Record, 0, batchSize)
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		ptrs = ptrs[:0]
		for i := range recs {
			ptrs = append(ptrs, &recs[i])
		}
		if err := t.Append(ctx, ptrs...); err != nil {
			return err
		}
		for _, r := range ptrs {
			perPartition[r.Partition]++
			keyPartition[string(r.Key)] = r.Partition
		}
		recs = recs[:0]
		return nil
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	start := time.Now()
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			if !strings.HasPrefix(sc.Text(), "time_ms,") {
				return fmt.Errorf("%s: header %q, want time_ms,delay_min,distance_mi,origin,destination", path, sc.Text())
			}
			continue
		}
		fl, err := parse(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line+1, err)
		}
		// Records own their bytes until Append returns: one copy per line.
		v := bytes.Clone(sc.Bytes())
		recs = append(recs, commitlog.Record{Key: []byte(fl.origin), Value: v, Timestamp: time.UnixMilli(fl.ts)})
		perKey[fl.origin]++
		if fl.origin == replayKey {
			hourly[fl.ts/3_600_000]++
		}
		total++
		bytesIn += int64(len(v))
		if len(recs) == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := flush(); err != nil {
		return err
	}
	for id := range t.PartitionCount() {
		p, _ := t.Partition(id)
		if err := p.Sync(); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	if total == 0 {
		return fmt.Errorf("%s holds no flights", path)
	}
	fmt.Fprintf(w, "streamed %d flights (%.1f MB of CSV) from %s into %d partitions keyed by origin in %s: %.0f records/s, %.1f MB/s\n",
		total, float64(bytesIn)/1e6, filepath.Base(path), partitions, elapsed.Round(time.Millisecond),
		float64(total)/elapsed.Seconds(), float64(bytesIn)/1e6/elapsed.Seconds())
	printSkew(w, t, perPartition, perKey, keyPartition, total)

	// Replay the busiest hour of replayKey: the time index finds where it begins.
	if len(hourly) == 0 {
		return nil
	}
	var busiest int64
	for h, n := range hourly {
		if n > hourly[busiest] || n == hourly[busiest] && h < busiest {
			busiest = h
		}
	}
	return replayHour(ctx, w, t, keyPartition[replayKey], time.UnixMilli(busiest*3_600_000).UTC(), hourly[busiest])
}

// parse reads time_ms and origin from a line.
func parse(line []byte) (flight, error) {
	fields := bytes.SplitN(line, []byte{','}, 5)
	if len(fields) != 5 {
		return flight{}, fmt.Errorf("%d fields, want 5", len(fields))
	}
	ts, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return flight{}, fmt.Errorf("time_ms %q: %w", fields[0], err)
	}
	return flight{ts: ts, origin: string(fields[3])}, nil
}

// printSkew shows how many records each partition got: keys hash to partitions, so a few busy
// airports make some partitions much larger than others.
func printSkew(w io.Writer, t *commitlog.Topic, perPartition []int64, perKey map[string]int64, keyPartition map[string]int32, total int64) {
	mean := float64(total) / float64(len(perPartition))
	largest := slices.Max(perPartition)
	keysIn := make([]int, len(perPartition))
	for _, p := range keyPartition {
		keysIn[p]++
	}
	fmt.Fprintf(w, "\npartition  records   share  airports  bytes on disk (lz4)\n")
	for i, n := range perPartition {
		p, _ := t.Partition(int32(i))
		bar := strings.Repeat("#", int(float64(n)/float64(largest)*30+0.5))
		fmt.Fprintf(w, "%9d  %8d  %5.1f%%  %8d  %10d  %s\n", i, n, 100*float64(n)/float64(total), keysIn[i], p.Size(), bar)
	}
	keys := make([]string, 0, len(perKey))
	for k := range perKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(perKey[b] - perKey[a]) })
	var top []string
	for _, k := range keys[:min(3, len(keys))] {
		top = append(top, fmt.Sprintf("%s %.1f%% (partition %d)", k, 100*float64(perKey[k])/float64(total), keyPartition[k]))
	}
	fmt.Fprintf(w, "skew: the largest partition holds %.2f× the mean; %d airports, the busiest %s\n",
		float64(largest)/mean, len(perKey), strings.Join(top, ", "))
}

// replayHour reads one hour of one airport back: a reader of the airport's partition only,
// positioned by time, reading until the hour is over.
func replayHour(ctx context.Context, w io.Writer, t *commitlog.Topic, partition int32, from time.Time, want int) error {
	to := from.Add(time.Hour)
	rd, err := t.NewReader(commitlog.ReaderConfig{Partitions: []int32{partition}, Start: commitlog.AtTime, StartTime: from})
	if err != nil {
		return err
	}
	defer rd.Close()
	p, _ := t.Partition(partition)
	firstOffset, _ := rd.Position(partition)
	var got, scanned int
	var sample []string
	for {
		if pos, _ := rd.Position(partition); pos >= p.HighWatermark() {
			break
		}
		rec, err := rd.Next(ctx)
		if err != nil {
			return err
		}
		if !rec.Timestamp.Before(to) {
			break
		}
		scanned++
		if string(rec.Key) != replayKey {
			continue // another airport that hashes to the same partition
		}
		got++
		if len(sample) < 3 {
			f := strings.Split(string(rec.Value), ",")
			sample = append(sample, fmt.Sprintf("  offset %d  %s  %s→%s  %s mi, delay %s min",
				rec.Offset, rec.Timestamp.UTC().Format("15:04"), f[3], f[4], f[2], f[1]))
		}
	}
	fmt.Fprintf(w, "\nreplay: %s's busiest hour, %s to %s (times as recorded, no zone), from partition %d at offset %d found by the time index:\n",
		replayKey, from.Format("2006-01-02 15:04"), to.Format("15:04"), partition, firstOffset)
	fmt.Fprintf(w, "%d flights of %s among %d records of the partition in that hour (the stream counted %d)\n", got, replayKey, scanned, want)
	for _, s := range sample {
		fmt.Fprintln(w, s)
	}
	if got != want {
		return fmt.Errorf("replay found %d flights, the stream counted %d", got, want)
	}
	return nil
}
