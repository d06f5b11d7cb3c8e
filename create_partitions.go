package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// CreatePartitions raises the partition count of the topic name to total, as Kafka's
// CreatePartitions does: partitions from the current count to total-1 are created empty, each
// in its folder "<name>-<partition>" with the topic's configuration, and the new count is stored
// with the topic. The existing partitions and their records are untouched. Once it returns the
// new partitions are durable (a crash part-way is finished by the next Open, as CreateTopic's
// is), Topic.PartitionCount and Topic.Partition show them, and Topic.Append's key partitioner
// spreads records over the new count, as Kafka's producers do once they see the new metadata:
// a key may then go to another partition than its earlier records. Appends and reads running
// meanwhile are not disturbed; an append call routes all its records over one partition count.
// A GroupReader's leader sees the new count and rejoins, and the new partitions are assigned,
// read from the group's start (GroupReaderConfig.Start); a Reader keeps the partitions it was
// made with (as a Kafka consumer given its partitions with assign does). A folder already at a
// new partition's name, which the store's configuration never listed (a stray, as Kafka's
// KRaft brokers call a log no partition owns), is removed first, and the removal logged.
//
// Returns ErrUnknownTopic for a topic the store does not hold (the internal topics included);
// ErrInvalidPartitions when total is not larger than the current count (Kafka's
// INVALID_PARTITIONS: "Topic currently has 3 partitions, which is higher than the requested
// 2") or is above MaxPartitions (then it wraps ErrInvalidConfig too), and when a new partition's
// folder is a symbolic link; ErrClosed after Close; the file system's error when a folder or the
// configuration cannot be written, with nothing created: the count stays what it was.
func (s *Store) CreatePartitions(name string, total int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	cur := t.state.Load()
	n := int32(len(cur.partitions))
	if total <= n {
		return fmt.Errorf("%w: topic %s currently has %d partitions; the requested %d must be more", ErrInvalidPartitions, name, n, total)
	}
	if err := checkPartitionCount(total); err != nil {
		return fmt.Errorf("%w: topic %s: %w", ErrInvalidPartitions, name, err)
	}
	if err := s.removeStrayPartitions(name, n, total); err != nil {
		return err
	}

	// As CreateTopic: the marker, then the configuration, then the folders, so that a crash
	// leaves a count whose missing folders the next Open creates (the marker says that they were
	// never made, not lost), never folders the configuration does not list.
	if err := checkpoint.Write(s.o.fs, filepath.Join(s.dir, creatingFileName), []byte(name)); err != nil {
		return err
	}
	prev := s.configs[name]
	next := prev
	next.Partitions = total
	s.configs[name] = next
	if err := s.saveConfigs(); err != nil {
		s.configs[name] = prev
		return errors.Join(err, s.finishCreating())
	}
	added, err := t.openPartitions(s, n, total, next.LogConfig, true)
	if err == nil {
		// The new folders carry the topic's ID (partition.metadata) before the marker goes, as
		// CreateTopic's do.
		err = errors.Join(s.workers.each(len(added), func(i int) error { return writeNewPartitionFiles(added[i], t.id) })...)
		if err != nil {
			for _, p := range added {
				p.close()
				p.log.Close()
			}
		}
	}
	if err == nil {
		err = s.finishCreating()
		if err != nil {
			for _, p := range added {
				p.close()
				p.log.Close()
			}
		}
	}
	if err != nil {
		// The folders go first, durably, then the count: the other way round a crash could
		// leave folders the configuration does not list.
		for i := n; i < total; i++ {
			s.o.fs.RemoveAll(filepath.Join(s.dir, partitionDirName(name, i)))
		}
		if serr := s.o.fs.SyncDir(s.dir); serr != nil {
			s.o.logger.Error("removal of failed partitions' folders not synced", "topic", name, "err", serr)
		}
		s.configs[name] = prev
		if serr := s.saveConfigs(); serr != nil {
			s.o.logger.Error("topic configs not restored after a failed CreatePartitions", "topic", name, "err", serr)
		} else if serr := s.finishCreating(); serr != nil {
			s.o.logger.Error("creation marker not removed after a failed CreatePartitions", "topic", name, "err", serr)
		}
		return err
	}
	cfg := cur.cfg
	cfg.Partitions = total
	stored := cur.stored
	stored.Partitions = total
	t.state.Store(&topicState{cfg: cfg, stored: stored, partitions: append(slices.Clip(cur.partitions), added...)})
	// Readers waiting for appends look at the topic again.
	t.broadcast()
	return nil
}

// removeStrayPartitions removes the folders at the names of the topic's partitions from to to-1,
// which the configuration does not list; a symbolic link there is ErrInvalidPartitions.
func (s *Store) removeStrayPartitions(name string, from, to int32) error {
	removed := false
	for i := from; i < to; i++ {
		dir := filepath.Join(s.dir, partitionDirName(name, i))
		info, err := s.o.fs.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("commitlog: topic %s partition %d: %w", name, i, err)
		case info.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: topic %s: partition folder %s is a symbolic link", ErrInvalidPartitions, name, dir)
		}
		s.o.logger.Warn("removing a stray folder at a new partition's name", "topic", name, "partition", i, "folder", dir)
		if err := s.o.fs.RemoveAll(dir); err != nil {
			return fmt.Errorf("commitlog: remove stray folder %s: %w", dir, err)
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return s.o.fs.SyncDir(s.dir)
}
