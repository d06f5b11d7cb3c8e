package commitlog

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/cleaner"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The store's log cleaner (Kafka's LogCleaner with its LogCleanerManager): log.cleaner.threads
// goroutines, each with its own offset map of one share of log.cleaner.dedupe.buffer.size,
// take the filthiest compacted log that is due (see CompactionState.Due), clean it, and look
// again; a thread that finds none waits log.cleaner.backoff.ms. Two threads never clean one log
// at once (each clean holds the log's cleaning lock; a thread passes over a log whose lock is
// taken). The cleaner points are kept in one file for the store, Kafka's
// cleaner-offset-checkpoint (cleanerPoints).

// cleanerPoints is the store's cleaner-offset-checkpoint: every compacted partition's cleaner
// point, read at open and written after each clean. Safe for concurrent use.
type cleanerPoints struct {
	fs  fsys.FS
	dir string

	mu     sync.Mutex // serialises the file's writes with the map
	points map[topicPartition]int64
}

// openCleanerPoints reads the store's cleaner-offset-checkpoint. A damaged file is logged by the
// caller and read as empty: the points only say where the next clean starts (a clean from the
// log start offset is whole, only slower).
func openCleanerPoints(fsy fsys.FS, dir string) (*cleanerPoints, error) {
	m, err := readCleanerCheckpoint(fsy, dir)
	if m == nil {
		m = map[topicPartition]int64{}
	}
	return &cleanerPoints{fs: fsy, dir: dir, points: m}, err
}

// get returns the cleaner point checkpointed for the partition, and whether there is one.
func (c *cleanerPoints) get(topic string, partition int32) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.points[topicPartition{topic: topic, partition: partition}]
	return v, ok
}

// set checkpoints the partition's cleaner point, durably.
func (c *cleanerPoints) set(topic string, partition int32, point int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	tp := topicPartition{topic: topic, partition: partition}
	if v, ok := c.points[tp]; ok && v == point {
		return nil
	}
	c.points[tp] = point
	return writeCleanerCheckpoint(c.fs, c.dir, c.points)
}

// drop forgets the points of a deleted topic's partitions, as Kafka's
// LogCleanerManager.updateCheckpoints does when a log is removed.
func (c *cleanerPoints) drop(topic string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.points)
	maps.DeleteFunc(c.points, func(tp topicPartition, _ int64) bool { return tp.topic == topic })
	if len(c.points) == n {
		return nil
	}
	return writeCleanerCheckpoint(c.fs, c.dir, c.points)
}

// storeCleaner is the store's background cleaner threads.
type storeCleaner struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startCleaner starts log.cleaner.threads cleaner goroutines, stopped by stopCleaner.
func (s *Store) startCleaner() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cleaner.cancel = cancel
	for range max(s.o.cleanerThreads, 0) {
		s.cleaner.wg.Add(1)
		go func() {
			defer s.cleaner.wg.Done()
			s.runCleanerThread(ctx)
		}()
	}
}

// stopCleaner stops the cleaner goroutines, dropping the cleans in progress (their cleaned files
// are removed; the logs stay as they were), and waits for them.
func (s *Store) stopCleaner() {
	if s.cleaner.cancel != nil {
		s.cleaner.cancel()
	}
	s.cleaner.wg.Wait()
}

// runCleanerThread is one cleaner goroutine: clean the filthiest due log, or wait the backoff.
func (s *Store) runCleanerThread(ctx context.Context) {
	var m *cleaner.OffsetMap // made on first use: a store without compacted topics holds none
	backoff := s.o.cleanerBackoff
	if backoff <= 0 {
		backoff = DefaultCleanerBackoff
	}
	t := time.NewTimer(backoff)
	defer t.Stop()
	for {
		cleaned, err := s.cleanFilthiest(ctx, &m)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.o.logger.Error("log cleaning failed", "err", err)
		}
		if cleaned && err == nil {
			continue
		}
		t.Reset(backoff)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cleanFilthiest cleans the due log of highest dirty ratio that no other clean holds (Kafka's
// LogCleanerManager.grabFilthiestCompactedLog), with the offset map *m (made when nil), and
// reports whether it found one. Logs whose last clean failed on corrupt data are passed over.
func (s *Store) cleanFilthiest(ctx context.Context, m **cleaner.OffsetMap) (bool, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return false, ErrClosed
	}
	topics := slices.Collect(maps.Values(s.topics))
	s.mu.RUnlock()
	type candidate struct {
		l     *Log
		ratio float64
	}
	var due []candidate
	for _, t := range topics {
		if !t.Config().CleanupPolicy.Compact() || t.isClosed() {
			continue
		}
		for _, p := range t.parts() {
			if p.log.cleaning.failed.Load() != nil {
				continue
			}
			if st := p.log.CompactionState(); st.Due {
				due = append(due, candidate{p.log, st.DirtyRatio})
			}
		}
	}
	slices.SortStableFunc(due, func(a, b candidate) int { return cmp.Compare(b.ratio, a.ratio) }) // filthiest first
	for _, c := range due {
		if !c.l.cleaning.mu.TryLock() {
			continue // another thread, or a Compact, cleans it
		}
		if *m == nil {
			*m = cleaner.NewOffsetMap(cleanerMemory(s.o))
		}
		_, err := c.l.compactLocked(ctx, *m)
		c.l.cleaning.mu.Unlock()
		return true, err
	}
	return false, nil
}
