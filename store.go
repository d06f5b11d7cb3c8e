package commitlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/group"
	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// topicsFileName holds the store's topic configurations, beside the partition folders; Kafka's
// tools ignore files they do not know in a log directory.
const topicsFileName = "commitlog-topics"

// creatingFileName names the topics a CreateTopics (or CreateTopic, CreatePartitions) is
// creating, one a line, written (durably) before their configuration and removed once their
// folders exist: a partition folder missing for such a topic at the next Open is one the
// creation never made, not lost data.
const creatingFileName = "commitlog-creating"

// deleteSuffix marks a partition folder being deleted, as Kafka marks them; such folders are
// removed when the store opens.
const deleteSuffix = "-delete"

// Store is a log directory holding topics, laid out as Kafka lays out a broker's log directory:
// one folder per partition, "<topic>-<partition>", directly under the directory. A Store is safe
// for concurrent use.
type Store struct {
	dir     string
	o       options
	unlock  io.Closer
	workers logWorkers // open and close the partitions' logs, so many at once (log_workers.go)

	mu      sync.RWMutex
	topics  map[string]*Topic
	byID    map[TopicID]*Topic        // the same topics, by Topic.ID
	configs map[string]TopicConfig    // as stored in topicsFileName
	readers map[readerKey]*Reader     // live named readers, by name and topic
	members map[*GroupReader]struct{} // live group members, closed by Close
	closed  bool

	stopRetention chan struct{} // closed by Close
	retentionDone chan struct{} // closed when the background retention goroutine ends

	cleaner storeCleaner // the background cleaner threads (store_cleaner.go)
	// positionsMu serialises the writes of each reader's positions file (store_reader_positions.go).
	positionsMu positionLocks
	// txn is the transaction coordinator with its internal logs (txn_coordinator.go).
	txn *txnCoordinator

	// groups is the consumer group coordinator (store_groups.go); its state is loaded from
	// __consumer_offsets-0 once (groupsLoaded), under groupsMu.
	groups       *group.Coordinator
	groupsMu     sync.Mutex
	groupsLoaded bool
}

// Open opens the log directory dir, creating it when missing, and every topic in it. Partition
// folders copied from a Kafka broker (no configuration of ours) open as topics with the default
// configuration; Kafka's other files (meta.properties, checkpoint files, .snapshot files,
// leader-epoch-checkpoint, .kafka_cleanshutdown) are left untouched. Each partition's log is
// recovered as OpenLog describes.
//
// Each topic's ID (Topic.ID) is read from Kafka's file partition.metadata in its partition
// folders, which a Kafka broker's folders bring with them: partition 0's, or the lowest
// partition's that has the file. A folder without the file is given it, saying that ID; a topic
// with none anywhere (created before the store kept IDs, or folders from a Kafka that did not
// write the file) is given a new random ID, written to every partition folder. A partition whose
// file names another ID is rewritten to the topic's, logged as a warning with the ID it held (a
// Kafka broker takes its controller's ID as the truth and fails such a partition with
// InconsistentTopicIdException, or deletes it as a stray log; the store has no controller and
// deletes no records). A topic whose ID another topic opened before it (by name) already has,
// as folders copied under another name do, is given a new ID. A file that cannot be read fails
// the Open with an error wrapping ErrCorrupt that names the file; no file of that topic is
// changed, and removing the file lets the next Open give the partition the topic's ID.
//
// The directory is locked while the store is open: a second Open, in this process or another,
// returns ErrLocked. A failed Open leaves nothing open. A partition folder that is a symbolic
// link is not opened (it is logged); the store opens without it.
func Open(dir string, opts ...Option) (s *Store, err error) {
	o := newOptions(opts)
	s = &Store{dir: dir, o: o, workers: newLogWorkers(cmp.Or(o.parallelLogs, parallelLogs)), topics: map[string]*Topic{}, byID: map[TopicID]*Topic{},
		readers: map[readerKey]*Reader{}, members: map[*GroupReader]struct{}{}}
	if err := fsys.MkdirAllDurable(o.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
	}
	u, err := o.fs.Lock(filepath.Join(dir, lockFileName))
	if err != nil {
		if errors.Is(err, fsys.ErrLocked) {
			return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("commitlog: lock %s: %w", dir, err)
	}
	s.unlock = u
	points, err := openCleanerPoints(o.fs, dir)
	if err != nil {
		// Only where the next cleans start: they start at the log start offsets instead.
		o.logger.Warn("cleaner offset checkpoint unreadable; compacted logs are cleaned from their start", "err", err)
	}
	s.o.cleanerPoints = points
	if s.o.logDir, err = openLogDirCheckpoints(o.fs, dir, o.logger); err != nil {
		u.Close()
		return nil, err
	}
	opened := s // "return nil, err" sets s to nil before the cleanup runs
	defer func() {
		if err != nil {
			for _, t := range opened.topics {
				t.close()
			}
			u.Close()
			s = nil
		}
	}()
	// The logs' recovery writes are synced at once by syncOpened (store_open_sync.go).
	s.o.openSyncedLater = fsys.CanSyncFileSystem(o.fs)
	if err := s.load(); err != nil {
		return nil, err
	}
	if err := s.syncOpened(); err != nil {
		return nil, err
	}
	if err := s.checkpointLogDir(); err != nil {
		return nil, err
	}
	s.txn = newCoordinator(s)
	s.groups = s.newGroupCoordinator()
	if s.txn.internalLogsExist() {
		// Transactions a crash interrupted are finished before the store is used; the groups
		// are loaded, and their members' session timers started, as Kafka's coordinator does
		// when it loads __consumer_offsets.
		if err := s.txn.ensureOpen(); err != nil {
			return nil, err
		}
		if _, err := s.groupCoordinatorLocked(); err != nil {
			s.txn.close()
			return nil, err
		}
	}
	s.txn.start()
	s.startRetention()
	s.startCleaner()
	return s, nil
}

// startRetention runs ApplyRetention every retention check interval until Close.
func (s *Store) startRetention() {
	s.stopRetention = make(chan struct{})
	s.retentionDone = make(chan struct{})
	if s.o.retentionCheckInterval < 0 {
		close(s.retentionDone)
		return
	}
	go func() {
		defer close(s.retentionDone)
		t := time.NewTicker(s.o.retentionCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stopRetention:
				return
			case <-t.C:
				if _, err := s.ApplyRetention(); err != nil && !errors.Is(err, ErrClosed) {
					s.o.logger.Error("retention check failed", "err", err)
				}
				if _, err := s.ExpireGroupOffsets(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
					s.o.logger.Error("group offsets expiry failed", "err", err)
				}
			}
		}
	}()
}

// ApplyRetention is ApplyRetentionAt at the time of the store's clock (WithClock, else
// time.Now): what the background check runs every log.retention.check.interval.
func (s *Store) ApplyRetention() (int, error) { return s.ApplyRetentionAt(s.o.now()) }

// ApplyRetentionAt applies every topic's retention at now (see Log.ApplyRetentionAt) and returns
// the number of segments deleted. Errors of the partitions are joined. ErrClosed after Close.
func (s *Store) ApplyRetentionAt(now time.Time) (int, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return 0, ErrClosed
	}
	topics := slices.Collect(maps.Values(s.topics))
	s.mu.RUnlock()
	var n int
	var errs []error
	for _, t := range topics {
		d, err := t.ApplyRetentionAt(now)
		n += d
		if err != nil && !t.isClosed() {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// readTopicConfigs reads the topic configurations saved in the store folder dir: none when none
// were saved; ErrCorrupt for a damaged file.
func readTopicConfigs(fsy fsys.FS, dir string) (map[string]TopicConfig, error) {
	path := filepath.Join(dir, topicsFileName)
	b, err := checkpoint.Read(fsy, path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]TopicConfig{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	configs, err := decodeTopicConfigs(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return configs, nil
}

// load reads the topic configurations and opens every topic's partitions.
func (s *Store) load() error {
	if err := checkpoint.CleanTemp(s.o.fs, s.dir, "commitlog-"); err != nil {
		return err
	}
	configs, err := readTopicConfigs(s.o.fs, s.dir)
	if err != nil {
		return err
	}
	s.configs = configs

	entries, err := s.o.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("commitlog: list %s: %w", s.dir, err)
	}
	var creating map[string]bool // the topics a CreateTopics was creating
	switch b, err := checkpoint.Read(s.o.fs, filepath.Join(s.dir, creatingFileName)); {
	case err == nil:
		creating = decodeCreating(b)
	case !errors.Is(err, fs.ErrNotExist):
		// Damaged: which topic was being created is unknown, so none is.
		s.o.logger.Error("creation marker unreadable; ignored", "file", filepath.Join(s.dir, creatingFileName), "err", err)
	}
	found := map[string]int32{}   // topic → highest partition folder + 1
	deleting := map[string]bool{} // names of the folders of unfinished deletions
	adopted, changed := false, false
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, deleteSuffix) && e.IsDir() {
			// A DeleteTopic that did not finish: finished below, and the folder removed only
			// once the configuration without the topic is saved, so that an Open stopped in
			// between still finds the deletion to finish.
			deleting[name] = true
			continue
		}
		topic, p, ok := parsePartitionDirName(name)
		if !ok || isInternalTopic(topic) {
			continue // the transaction coordinator's logs are its own (txn_coordinator.go)
		}
		info, err := s.o.fs.Lstat(filepath.Join(s.dir, name))
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			s.o.logger.Error("partition folder is a symbolic link; not opened", "folder", filepath.Join(s.dir, name))
			continue
		}
		if !info.IsDir() {
			continue
		}
		if p >= MaxPartitions {
			// Adopting it would open every partition below it.
			return fmt.Errorf("%w: partition folder %s: %w", ErrCorrupt, filepath.Join(s.dir, name), checkPartitionCount(p+1))
		}
		found[topic] = max(found[topic], p+1)
	}
	for topic, n := range found {
		if why := reservedTopicName(topic); why != "" {
			// Made before the name was reserved, or copied in: it opens as before, and its
			// folders are never taken for the store's files (see reservedTopicName).
			s.o.logger.Warn("topic name is reserved for the store's own files; copy its records to another topic", "topic", topic, "reason", why)
		}
		if _, ok := s.configs[topic]; !ok {
			s.o.logger.Info("adopting partition folders without a configuration", "topic", topic, "partitions", n)
			s.configs[topic] = TopicConfig{Partitions: n}
			adopted = true
		}
	}
	// The topics to open, checked one by one in name order, then opened all at once (their
	// partitions on the store's workers, log_workers.go), as Kafka's LogManager loads the logs of
	// a log directory on its recovery threads.
	type toOpen struct {
		name string
		ids  []TopicID // read before the logs open
		t    *Topic
		err  error
	}
	var opening []toOpen
	var names []string // of opening
	for _, name := range slices.Sorted(maps.Keys(s.configs)) {
		if err := caseCollision(name, slices.Values(names)); err != nil {
			return err
		}
		if link := s.symlinkedPartition(name, s.configs[name].Partitions); link != "" {
			// Opening it would read, lock and write files wherever the link leads. The
			// configuration stays, so the topic comes back once the folder is a folder again.
			s.o.logger.Error("partition folder is a symbolic link; topic not opened", "topic", name, "folder", link)
			continue
		}
		if s.deletionUnfinished(name, deleting) {
			// DeleteTopic renames every folder before it removes the configuration: the
			// deletion was acknowledged or in flight. Finish it.
			s.o.logger.Info("finishing the deletion of a topic", "topic", name)
			for p := range s.configs[name].Partitions {
				if err := s.o.fs.RemoveAll(filepath.Join(s.dir, partitionDirName(name, p))); err != nil {
					return err
				}
			}
			delete(s.configs, name)
			changed = true
			continue
		}
		if !creating[name] {
			if err := s.checkPartitionFolders(name); err != nil {
				return err
			}
		}
		// The IDs are read before the logs open: a file that cannot be read fails the open
		// before anything of the topic is touched.
		ids, err := readTopicIDs(s.o.fs, s.partitionDirs(name, s.configs[name].Partitions))
		if err != nil {
			return fmt.Errorf("commitlog: topic %s: %w", name, err)
		}
		opening = append(opening, toOpen{name: name, ids: ids})
		names = append(names, name)
	}
	s.workers.all(len(opening), func(i int) error {
		o := &opening[i]
		o.t, o.err = openTopic(s, o.name, s.configs[o.name], false)
		return o.err
	})
	var openErrs []error
	for _, o := range opening {
		if o.err != nil {
			openErrs = append(openErrs, o.err)
			continue
		}
		s.topics[o.name] = o.t // closed by Open if anything fails
	}
	if err := errors.Join(openErrs...); err != nil {
		return err
	}
	for _, o := range opening {
		// After the logs: the folders of the topic a CreateTopic was creating exist only now.
		if err := s.loadTopicID(o.t, o.ids); err != nil {
			return fmt.Errorf("commitlog: topic %s: %w", o.name, err)
		}
	}
	if adopted || changed {
		if err := s.saveConfigs(); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(deleting)) {
		if err := s.o.fs.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			return err
		}
	}
	if len(creating) > 0 {
		// The topics' folders exist now (or it is not configured: the creation failed).
		return s.finishCreating()
	}
	return nil
}

// checkpointLogDir writes the store's recovery point and log start offset checkpoints once every
// log is open (Kafka's LogManager checkpoints after loading the logs), then removes the state files
// in the folders of the partitions of a store written before it kept them.
func (s *Store) checkpointLogDir() error {
	if err := s.o.logDir.opened(); err != nil {
		return err
	}
	if err := s.o.logDir.flush(); err != nil {
		return fmt.Errorf("commitlog: checkpoint %s: %w", s.dir, err)
	}
	for _, t := range s.topics {
		for _, p := range t.parts() {
			if err := p.log.state.removeFolderState(); err != nil {
				return err
			}
		}
	}
	return nil
}

// deletionUnfinished reports whether a DeleteTopic of name stopped after renaming one of its
// folders "<folder>-delete" (listed in deleting): the renamed folder is there and the
// partition's own folder is not. A "-delete" folder whose partition folder is still there is
// another topic's: names cut to the folder name limit (deleteDirName) can meet.
func (s *Store) deletionUnfinished(name string, deleting map[string]bool) bool {
	for p := range s.configs[name].Partitions {
		if !deleting[deleteDirName(name, p)] {
			continue
		}
		if _, err := s.o.fs.Lstat(filepath.Join(s.dir, partitionDirName(name, p))); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// checkPartitionFolders returns ErrPartitionMissing for the first partition folder of the
// configured topic name that does not exist.
func (s *Store) checkPartitionFolders(name string) error {
	for p := range s.configs[name].Partitions {
		dir := filepath.Join(s.dir, partitionDirName(name, p))
		_, err := s.o.fs.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: topic %s partition %d: folder %s", ErrPartitionMissing, name, p, dir)
		}
		if err != nil {
			return fmt.Errorf("commitlog: topic %s partition %d: %w", name, p, err)
		}
	}
	return nil
}

// finishCreating removes the creation marker once the topic's folders exist (durably: openLog
// syncs a new folder into its parent).
func (s *Store) finishCreating() error {
	if err := s.o.fs.Remove(filepath.Join(s.dir, creatingFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("commitlog: remove %s: %w", filepath.Join(s.dir, creatingFileName), err)
	}
	return s.o.fs.SyncDir(s.dir)
}

// checkCaseCollision returns ErrTopicExists when a held topic's name equals name but for case.
func (s *Store) checkCaseCollision(name string) error {
	return caseCollision(name, maps.Keys(s.topics))
}

// caseCollision returns ErrTopicExists when one of names equals name but for case.
func caseCollision(name string, names iter.Seq[string]) error {
	for other := range names {
		if other != name && strings.EqualFold(other, name) {
			return fmt.Errorf("%w: %q collides with %q on case-insensitive file systems", ErrTopicExists, name, other)
		}
	}
	return nil
}

// symlinkedPartition returns the path of the first of the topic's n partition folders that is a
// symbolic link, or "".
func (s *Store) symlinkedPartition(name string, n int32) string {
	for p := range max(n, 1) {
		dir := filepath.Join(s.dir, partitionDirName(name, p))
		if info, err := s.o.fs.Lstat(dir); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return dir
		}
	}
	return ""
}

// saveConfigs writes the topic configurations atomically. Callers hold mu (or own s alone).
func (s *Store) saveConfigs() error {
	b, err := encodeTopicConfigs(s.configs)
	if err != nil {
		return err
	}
	return checkpoint.Write(s.o.fs, filepath.Join(s.dir, topicsFileName), b)
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// CreateTopic creates a topic with cfg.Partitions partitions (0 means 1), each an empty log in its
// folder "<name>-<partition>", stores cfg with it, and returns it. cfg's zero fields take Kafka's
// defaults. The topic gets a new random ID (Topic.ID, Kafka's Uuid.randomUuid rules), written to
// Kafka's partition.metadata in every partition folder before CreateTopic returns.
//
// Returns ErrInvalidTopicName (creating nothing anywhere) for a name outside Kafka's rule, one of
// the internal topics' (__transaction_state, __consumer_offsets) in any case, one reserved for
// the store's own files (beginning with "commitlog-reader-", or a file's name; see
// reservedTopicName), or
// one whose partition folder exists as a symbolic link, ErrTopicExists for a held name or one
// differing only in case, ErrInvalidConfig for a config value out of range (Partitions above
// MaxPartitions included), ErrClosed after Close.
//
// It is a CreateTopics call of one topic: to create many, one CreateTopics call shares the
// durable writes (the creation marker, the topics file, the fsync of the store's folder) that
// CreateTopic takes for each.
func (s *Store) CreateTopic(name string, cfg TopicConfig) (*Topic, error) {
	// A CreateTopics of one (create_topics.go), its rounds of durable writes and crash model.
	r := s.CreateTopics(map[string]TopicConfig{name: cfg})[name]
	return r.Topic, r.Err
}

// Topic returns the topic named name, or ErrUnknownTopic. ErrClosed after Close.
func (s *Store) Topic(name string) (*Topic, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return t, nil
}

// Topics returns the names of the store's topics, sorted.
func (s *Store) Topics() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.topics))
}

// DeleteTopic deletes a topic and all its records: its readers get ErrClosed, its folders are
// renamed "<folder>-delete" (as Kafka does) and removed; a crash part-way is finished on the next
// Open. Its committed positions are removed from every reader's file (a file left with none is
// removed), as Kafka removes a deleted topic's committed offsets from every group, so that a
// topic created again under the name is read from each reader's configured start. Its ID goes
// with it: TopicByID no longer finds it, and a topic created again under the name gets a new one
// (as Kafka gives a recreated topic a new topic ID). Returns ErrUnknownTopic for a name the store
// does not hold, ErrClosed after Close.
func (s *Store) DeleteTopic(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	delete(s.topics, name)
	delete(s.byID, t.id)
	err := t.close()
	// Rename first: once the config is gone, a folder left under its own name would come back as
	// an adopted topic.
	var renamed []string
	kept := false
	for p := range t.PartitionCount() {
		from := filepath.Join(s.dir, partitionDirName(name, p))
		to := filepath.Join(s.dir, deleteDirName(name, p))
		// A folder of that name is a leftover of an unfinished delete (a long name cut short
		// can meet another's): it was to be removed anyway, and would make the rename fail.
		if rerr := s.o.fs.RemoveAll(to); rerr != nil {
			err = errors.Join(err, rerr)
			continue
		}
		if rerr := s.o.fs.Rename(from, to); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
			kept = true
			continue
		}
		renamed = append(renamed, to)
	}
	if serr := s.o.fs.SyncDir(s.dir); serr != nil {
		err = errors.Join(err, serr)
	}
	// A folder that could not be renamed (a full disk) keeps the configuration: without it the
	// folder would come back at the next open as a topic of Kafka's default configuration. The
	// topic then opens again with its own, its deletion unfinished.
	saved := false
	if !kept {
		delete(s.configs, name)
		if serr := s.saveConfigs(); serr != nil {
			err = errors.Join(err, serr)
		} else {
			saved = true
		}
	}
	// After the config: a crash in between leaves positions of a topic that no longer exists,
	// which a topic created again under the name would otherwise resume (see
	// removeTopicPositions; the next DeleteTopic of the name removes them).
	if perr := s.removeTopicPositions(name); perr != nil {
		err = errors.Join(err, perr)
	}
	if gerr := s.removeGroupTopic(name); gerr != nil {
		err = errors.Join(err, gerr)
	}
	if cerr := s.o.cleanerPoints.drop(name); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if cerr := s.o.logDir.drop(name); cerr != nil {
		err = errors.Join(err, cerr)
	}
	// The renamed folders go only once the configuration without the topic is durable: until
	// then they are what tells the next open that the deletion is unfinished (see
	// deletionUnfinished), and without them a configured topic would miss its folders.
	if !saved {
		return err
	}
	for _, d := range renamed {
		if rerr := s.o.fs.RemoveAll(d); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Close closes every reader and topic, flushing and closing every partition's log (see
// Log.Close), and releases the directory. Blocked reads return ErrClosed. Later calls return nil.
//
// On Linux the partitions' files are made durable with one syncfs(2) of the store's file system
// rather than fsyncs file by file (which also flushes what other programs have pending on that
// file system), before the recovery points and the clean shutdown marker (Kafka's
// .kafka_cleanshutdown) are written; a failed sync is returned and no marker is written.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	readers := slices.Collect(maps.Values(s.readers))
	members := slices.Collect(maps.Keys(s.members))
	topics := slices.Collect(maps.Values(s.topics))
	s.mu.Unlock()
	close(s.stopRetention)
	<-s.retentionDone
	s.stopCleaner()
	var errs []error
	for _, r := range readers {
		errs = append(errs, r.Close())
	}
	// Live group members leave their groups (static ones stay until their session times out),
	// so that a reopened store does not wait for their session timeouts.
	for _, m := range members {
		errs = append(errs, m.Close())
	}
	// Group members' waiting joins and syncs end before the log they write to closes.
	s.groups.Close()
	errs = append(errs, s.txn.close())
	// All at once, each topic's partitions on the store's workers (log_workers.go). Where the
	// file system can be synced in one call (syncfs on Linux), the logs close without their
	// fsyncs (tens of thousands of them in a store of thousands of partitions) and one sync
	// makes all they wrote durable before the state they noted is written.
	syncOnce := fsys.CanSyncFileSystem(s.o.fs)
	errs = append(errs, s.workers.all(len(topics), func(i int) error { return topics[i].closeLogs(!syncOnce) })...)
	synced := true
	if syncOnce {
		if err := syncFileSystem(s.o.fs, s.dir); err != nil {
			// What the logs noted is not known to be on disk: the checkpoints keep the
			// recovery points they had, no marker is written, and the next open recovers.
			errs = append(errs, err)
			synced = false
		}
	}
	// Every log has noted its final state: the store's files get them, then the clean
	// shutdown marker if every log closed cleanly.
	if synced {
		errs = append(errs, s.o.logDir.markClean())
	}
	errs = append(errs, s.unlock.Close())
	return errors.Join(errs...)
}
