// Command appendrate times the path a service's producers take, Topic.Append of one durable
// record per call from many goroutines, and beside it, in the same process and folder, the rate
// of fdatasync calls on 1, 2, ... files synced at once, which bounds it. An append acknowledged as
// durable waits for at least one fdatasync of its partition's file that starts after it arrives.
// With n goroutines spread evenly over P partitions, at most n/P appends wait on a file when its
// fdatasync starts; with k files syncing at once, each taking 1/r(k) seconds, at most
// k × n/P appends complete per 1/r(k) seconds. The ceiling printed is the largest of
// k × max(n/P, 1) × r(k) over k from 1 to min(P, n): no batching of the appends does better on
// this disk (with P = 1 it is Little's law, n appends per lone fdatasync).
//
// It uses only API older than the coalescing of concurrent appends (Open, CreateTopic,
// Topic.Append, Partition.LogEndOffset, Close), so the same file builds against an earlier commit
// of the library, and the two builds can be timed in turn in one run:
//
//	git worktree add /tmp/base ac5f5cc
//	mkdir -p /tmp/base/bench/appendrate && cp bench/appendrate/main.go /tmp/base/bench/appendrate/
//	go -C /tmp/base/bench build -o /tmp/appendrate-base ./appendrate
//	go -C bench build -o /tmp/appendrate ./appendrate
//	for i in 1 2 3 4; do /tmp/appendrate-base -label base; /tmp/appendrate -label head; done
//
// Each run prints one line: records/s, the per-file fdatasync rate for each k, and the ceiling.
// The store is opened with its defaults (SyncAlways, WithBatchSize's default where the build has
// it) in a new folder under -dir, removed at the end; records have 16-byte keys and 100-byte
// values.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/commitlog-go/commitlog"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "appendrate:", err)
		os.Exit(1)
	}
}

func run() error {
	label := flag.String("label", "", "a name printed first on the line (which build this is)")
	goroutines := flag.Int("goroutines", 16, "appending goroutines")
	partitions := flag.Int("partitions", 4, "the topic's partitions")
	duration := flag.Duration("duration", 5*time.Second, "how long the appends run")
	syncDuration := flag.Duration("fdatasync-duration", 2*time.Second, "how long the lone fdatasync loop runs")
	keys := flag.String("keys", "record", "record: each record its own key; goroutine: one key per goroutine")
	parent := flag.String("dir", ".", "the folder to make the store's temporary folder in (a real disk, not tmpfs)")
	flag.Parse()
	if *goroutines < 1 || *partitions < 1 || *duration <= 0 || *syncDuration <= 0 {
		return errors.New("-goroutines and -partitions must be at least 1, the durations positive")
	}
	if *keys != "record" && *keys != "goroutine" {
		return fmt.Errorf("-keys %q: want record or goroutine", *keys)
	}
	dir, err := os.MkdirTemp(*parent, "appendrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	rate, err := appendRate(filepath.Join(dir, "store"), *goroutines, *partitions, *duration, *keys == "record")
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%s goroutines=%d partitions=%d keys=%s records/s=%.0f", *label, *goroutines, *partitions, *keys, rate)
	perFsync := max(float64(*goroutines)/float64(*partitions), 1)
	var ceiling float64
	for k := 1; k <= min(*partitions, *goroutines); k++ {
		r, err := fdatasyncRate(filepath.Join(dir, fmt.Sprintf("fdatasync-%d", k)), k, *syncDuration)
		if err != nil {
			return err
		}
		line += fmt.Sprintf(" fdatasync/s/file(k=%d)=%.0f", k, r)
		ceiling = max(ceiling, float64(k)*perFsync*r)
	}
	fmt.Printf("%s ceiling=%.0f\n", line, ceiling)
	return nil
}

// appendRate runs goroutines loops of Topic.Append(ctx, one record) on a new topic for d and
// returns the records appended a second, after checking that the partitions hold them all.
func appendRate(dir string, goroutines, partitions int, d time.Duration, keyPerRecord bool) (float64, error) {
	s, err := commitlog.Open(dir)
	if err != nil {
		return 0, err
	}
	t, err := s.CreateTopic("appendrate", commitlog.TopicConfig{Partitions: int32(partitions),
		LogConfig: commitlog.LogConfig{RetentionDuration: -1}})
	if err != nil {
		return 0, errors.Join(err, s.Close())
	}
	ctx := context.Background()
	value := make([]byte, 100)
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	start := time.Now()
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1) - 1
				key := make([]byte, 16)
				if keyPerRecord {
					binary.BigEndian.PutUint64(key, uint64(i))
				} else {
					binary.BigEndian.PutUint64(key, uint64(w))
				}
				if err := t.Append(ctx, &commitlog.Record{Key: key, Value: value}); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, errors.Join(err, s.Close())
	}
	var held int64
	for id := range int32(partitions) {
		p, err := t.Partition(id)
		if err != nil {
			return 0, errors.Join(err, s.Close())
		}
		held += p.LogEndOffset()
	}
	if err := s.Close(); err != nil {
		return 0, err
	}
	// Every append that started finished: next counts them all.
	if held != next.Load() {
		return 0, fmt.Errorf("the partitions hold %d records, %d were appended", held, next.Load())
	}
	return float64(held) / elapsed.Seconds(), nil
}

// fdatasyncRate runs k goroutines for d, each writing 116 bytes (a record's key and value) at the
// end of a file of its own, named prefix-i, and fdatasyncing it, in a loop; it returns the loops a
// second of one goroutine on average: the rate of one file's fdatasync calls, each starting after
// the one before ended, while k files are synced at once.
func fdatasyncRate(prefix string, k int, d time.Duration) (float64, error) {
	counts := make([]int64, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = fdatasyncLoop(fmt.Sprintf("%s-%d", prefix, i), start, d)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return float64(n) / float64(k) / elapsed.Seconds(), nil
}

// fdatasyncLoop appends 116 bytes to a new file at name and fdatasyncs it until d has passed since
// start, and returns how many times it did.
func fdatasyncLoop(name string, start time.Time, d time.Duration) (int64, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 116)
	var n int64
	for time.Since(start) < d {
		if _, err := f.WriteAt(buf, n*int64(len(buf))); err != nil {
			return n, errors.Join(err, f.Close())
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return n, errors.Join(err, f.Close())
		}
		n++
	}
	return n, f.Close()
}
