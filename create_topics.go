package commitlog

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// CreateTopicResult is the outcome of one topic of a CreateTopics call: the topic created, or
// the error that kept it from being created (then Topic is nil), as Kafka's CreateTopicsResponse
// answers each topic of a request with its own error code.
type CreateTopicResult struct {
	Topic *Topic
	Err   error
}

// CreateTopics creates the topics of the map, each named by its key with its TopicConfig, as
// CreateTopic creates one, and answers each by name. It is Kafka's CreateTopics request
// (CreateTopicsRequest, franz-go's kadm.Client.CreateTopics), one call for many topics: a topic
// that CreateTopic would refuse (ErrInvalidTopicName, ErrTopicExists, ErrInvalidConfig; see
// CreateTopic) fails alone, with that error, and the others are created. Two names of the call
// that differ only in case collide: the first in sorted order is created, the other fails with
// ErrTopicExists. After Close every topic fails with ErrClosed.
//
// The topics that pass the checks are created together, in the rounds of durable writes one
// topic takes: one creation marker naming them all, one write of the store's topic
// configurations, one fsync of the store's folder for all their partition folders, every
// partition's files (partition.metadata, leader-epoch-checkpoint) on the store's workers. A
// thousand topics of ten partitions cost those few rounds once rather than a thousand times.
// Each is created whole or not at all: a crash part-way leaves, at the next Open, every topic of
// the call complete (the folders it did not make yet made then, as for CreateTopic) or none of
// them. A file system error (a full disk) in those rounds fails every topic of the call with
// that error, with nothing of them left: they were one write.
//
// The result holds one entry per key of topics; an empty or nil map returns an empty map.
func (s *Store) CreateTopics(topics map[string]TopicConfig) map[string]CreateTopicResult {
	out := make(map[string]CreateTopicResult, len(topics))
	checked := make(map[string]TopicConfig, len(topics))
	for name, cfg := range topics {
		cfg, err := s.checkNewTopic(name, cfg)
		if err != nil {
			out[name] = CreateTopicResult{Err: err}
			continue
		}
		checked[name] = cfg
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for name := range topics {
			out[name] = CreateTopicResult{Err: ErrClosed} // whatever the checks said
		}
		return out
	}
	var names []string // to create, sorted
	for _, name := range slices.Sorted(maps.Keys(checked)) {
		if err := s.checkTopicFree(name, checked[name], names); err != nil {
			out[name] = CreateTopicResult{Err: err}
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return out
	}
	created, err := s.createTopics(names, checked)
	for i, name := range names {
		if err != nil {
			out[name] = CreateTopicResult{Err: err}
			continue
		}
		out[name] = CreateTopicResult{Topic: created[i]}
	}
	return out
}

// checkNewTopic checks what CreateTopic checks before it takes the store's lock: the name and
// the configuration, returned with Partitions 0 made 1.
func (s *Store) checkNewTopic(name string, cfg TopicConfig) (TopicConfig, error) {
	if err := checkTopicName(name); err != nil {
		return cfg, err
	}
	for _, internal := range []string{transactionStateTopic, consumerOffsetsTopic} {
		// Its folders would be the coordinator's on a case-insensitive file system.
		if strings.EqualFold(name, internal) {
			return cfg, fmt.Errorf("%w: %q collides with the internal topic %q on case-insensitive file systems", ErrInvalidTopicName, name, internal)
		}
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	if err := checkPartitionCount(cfg.Partitions); err != nil {
		return cfg, err
	}
	if _, _, err := cfg.LogConfig.resolve(s.o.sync); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkTopicFree checks, under mu, that a topic name with cfg can be created beside the store's
// topics and the names already taken by the same call (batch), in an open store: ErrTopicExists for a
// held name or one differing only in case, ErrInvalidTopicName for a partition folder that is a
// symbolic link.
func (s *Store) checkTopicFree(name string, cfg TopicConfig, batch []string) error {
	if _, ok := s.topics[name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if err := s.checkCaseCollision(name); err != nil {
		return err
	}
	if err := caseCollision(name, slices.Values(batch)); err != nil {
		return err
	}
	if link := s.symlinkedPartition(name, cfg.Partitions); link != "" {
		return fmt.Errorf("%w: %q: partition folder %s is a symbolic link", ErrInvalidTopicName, name, link)
	}
	return nil
}

// createTopics creates the topics names (checked, sorted, none held) with their configurations
// in cfgs and returns them in the order of names, or the error that kept all of them from being
// created. Callers hold mu.
//
// The rounds of durable writes, each once for all the topics:
//
//  1. The creation marker names them all, durable before their configuration: it tells the next
//     Open that folders missing for them were never made, where a missing folder of any other
//     topic is lost data (ErrPartitionMissing). Meanwhile (on another worker) the new topics
//     file is written to its temporary name and fsynced: nothing reads that file, and the next
//     Open removes it.
//  2. The configurations, the temporary topics file renamed over the topics file and the store's
//     folder fsynced, one atomic change: a crash before it leaves none of the topics, after it
//     all of them, whose missing folders the next Open makes. Never a folder before its
//     configuration is durable: a restart would adopt it as a topic of Kafka's default
//     configuration.
//  3. Every partition folder (not synced yet), every log opened, every partition's files
//     (writeNewPartitionsFiles) on the store's workers, each partition folder fsynced: a crash
//     part-way leaves folders without partition.metadata, which the next Open writes with the
//     ID of the topic's folders that have it, or missing folders, which it makes (the marker is
//     still there).
//  4. One fsync of the store's folder for all the partition folders, then the marker's removal,
//     not synced: the marker is needed until the folders are durable, and no longer after. A
//     power loss that brings it back names topics that are complete; the next Open finds
//     nothing to make and removes it (any later fsync of the store's folder, by the next
//     creation, deletion or Close, makes the removal durable first).
func (s *Store) createTopics(names []string, cfgs map[string]TopicConfig) ([]*Topic, error) {
	for _, name := range names {
		s.configs[name] = cfgs[name]
	}
	topicsPath := filepath.Join(s.dir, topicsFileName)
	b, err := encodeTopicConfigs(s.configs)
	if err == nil {
		err = errors.Join(s.workers.all(2, func(i int) error {
			if i == 0 {
				return checkpoint.Write(s.o.fs, filepath.Join(s.dir, creatingFileName), encodeCreating(names))
			}
			return checkpoint.WriteTemp(s.o.fs, topicsPath, b)
		})...)
		if err != nil {
			s.o.fs.Remove(topicsPath + checkpoint.TempSuffix)
		}
	}
	committed := false
	if err == nil {
		err = checkpoint.CommitTemp(s.o.fs, topicsPath)
		committed = err == nil
		if committed {
			err = s.o.fs.SyncDir(s.dir)
		}
	}
	if err != nil {
		for _, name := range names {
			delete(s.configs, name)
		}
		// Until committed, the topics file on disk is the one before the call.
		if committed {
			if serr := s.saveConfigs(); serr != nil {
				s.o.logger.Error("topic configs not restored after a failed create", "topics", names, "err", serr)
			}
		}
		return nil, errors.Join(err, s.finishCreating())
	}
	topics := make([]*Topic, len(names))
	err = s.makeTopicsDirs(names, cfgs)
	if err == nil {
		// All the topics at once, each one's partitions on the store's workers, as Open
		// opens them.
		err = errors.Join(s.workers.all(len(names), func(i int) (err error) {
			topics[i], err = openTopic(s, names[i], cfgs[names[i]], true)
			return err
		})...)
	}
	if err == nil {
		// Before the topics are returned (and before the creation marker goes).
		ids := map[TopicID]bool{}
		var parts []*Partition
		var partIDs []TopicID
		for _, t := range topics {
			for t.id = s.unusedTopicID(); ids[t.id]; t.id = s.unusedTopicID() {
			}
			ids[t.id] = true
			for _, p := range t.parts() {
				parts = append(parts, p)
				partIDs = append(partIDs, t.id)
			}
		}
		err = writeNewPartitionsFiles(s.o.fs, s.dir, s.workers, parts, partIDs)
		if err == nil {
			if err = s.o.fs.SyncDir(s.dir); err != nil {
				err = fmt.Errorf("commitlog: sync %s: %w", s.dir, err)
			}
		}
		if err == nil {
			path := filepath.Join(s.dir, creatingFileName)
			if err = s.o.fs.Remove(path); err != nil {
				err = fmt.Errorf("commitlog: remove %s: %w", path, err)
			}
		}
	}
	if err != nil {
		for _, t := range topics {
			if t != nil {
				t.close()
			}
		}
		// The folders go first, durably, and then the configurations: the other way round, a
		// power loss could keep a folder whose removal was not synced, and the restart would
		// adopt it as a topic of Kafka's default configuration.
		for _, name := range names {
			for i := range cfgs[name].Partitions {
				s.o.fs.RemoveAll(filepath.Join(s.dir, partitionDirName(name, i)))
			}
		}
		if serr := s.o.fs.SyncDir(s.dir); serr != nil {
			s.o.logger.Error("removal of failed topics' folders not synced", "topics", names, "err", serr)
		}
		for _, name := range names {
			delete(s.configs, name)
		}
		if serr := s.saveConfigs(); serr != nil {
			s.o.logger.Error("topic configs not restored after a failed create", "topics", names, "err", serr)
		} else if serr := s.finishCreating(); serr != nil {
			s.o.logger.Error("creation marker not removed after a failed create", "topics", names, "err", serr)
		}
		return nil, err
	}
	for _, t := range topics {
		s.topics[t.name] = t
		s.byID[t.id] = t
	}
	return topics, nil
}

// makeTopicsDirs makes the folders of the partitions of the new topics names, with their counts
// in cfgs, on the store's workers, without syncing the store's folder: createTopics syncs it once
// for all of them after their files are written, where each log opening its missing folder would
// sync it for its own (fsys.MkdirAllDurable, which finds them made).
func (s *Store) makeTopicsDirs(names []string, cfgs map[string]TopicConfig) error {
	var dirs []string
	for _, name := range names {
		for p := range cfgs[name].Partitions {
			dirs = append(dirs, filepath.Join(s.dir, partitionDirName(name, p)))
		}
	}
	// On the store's workers: making a folder costs the file system's time more than the disk's.
	return errors.Join(s.workers.each(len(dirs), func(i int) error {
		if err := s.o.fs.MkdirAll(dirs[i], 0o755); err != nil {
			return fmt.Errorf("commitlog: create %s: %w", dirs[i], err)
		}
		return nil
	})...)
}

// encodeCreating is the creation marker's payload: the names of the topics being created, one a
// line (a topic name holds no line break; see checkTopicName). A marker of one name, as written
// before topics were created together, is the same bytes.
func encodeCreating(names []string) []byte { return []byte(strings.Join(names, "\n")) }

// decodeCreating is the set of topic names of a creation marker's payload b; empty lines are
// skipped.
func decodeCreating(b []byte) map[string]bool {
	m := map[string]bool{}
	for name := range strings.SplitSeq(string(b), "\n") {
		if name != "" {
			m[name] = true
		}
	}
	return m
}
