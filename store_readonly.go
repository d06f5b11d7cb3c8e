package commitlog

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// ErrReadOnly is returned by the calls of a read-only open (OpenReadOnly) that would write to the
// store: ReadOnlyReader.Commit. The store's files belong to the process that opened it with Open.
var ErrReadOnly = errors.New("commitlog: store opened read-only")

// DefaultPollInterval is how often a read-only open looks at the store for what its writer did
// (WithPollInterval).
const DefaultPollInterval = 100 * time.Millisecond

// WithPollInterval sets how often a read-only open (OpenReadOnly) looks at the store for what
// another process wrote: records appended, segments rolled, deleted by retention or cut by a
// truncation, topics and partitions created or deleted. What the writer did is visible to the
// read-only open within about d (plus the time of one look). Each look lists the store's
// directory and every partition folder and reads the state file of each partition: its cost
// grows with the number of partitions, and a store of thousands of partitions wants a longer d.
// 0 keeps DefaultPollInterval; a negative d turns the background look off (Refresh looks on
// demand). Open ignores it.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) { o.pollInterval = d }
}

// ReadOnlyStore is a store opened for reading only (OpenReadOnly), safe while another process has
// it open with Open and writes it. It writes nothing to the store's directory, ever: no
// recovery, no index rebuilt on disk, no state, checkpoint or lock file, no committed position.
// A ReadOnlyStore is safe for concurrent use.
type ReadOnlyStore struct {
	dir string
	o   options

	refreshMu sync.Mutex // serialises refreshes

	mu      sync.RWMutex
	topics  map[string]*roTopic
	closed  bool
	changed chan struct{} // closed and replaced by every refresh that saw a change

	stop chan struct{} // closed by Close
	done chan struct{} // closed when the poller ends
}

// roTopic is a topic of a ReadOnlyStore: its configuration as the writer saved it, and its
// partitions' logs.
type roTopic struct {
	name  string
	cfg   TopicConfig
	parts []*roLog
}

// OpenReadOnly opens the store in dir for reading while another process may hold it open with
// Open, as a consumer reads a broker's partitions: `commitlog consume -f` in one terminal while
// `commitlog produce` writes in another. dir must exist; OpenReadOnly creates, writes, locks and
// maps nothing in it, and never blocks or refuses the writer (see WriterLive).
//
// It reads the topic configurations and every partition folder, as Open does, but recovers
// nothing: each partition shows the whole batches its segments hold, and bytes past the last
// whole batch whose CRC checks (a write the writer has not finished, the zeros of a preallocated
// file, or a torn tail a crashed writer left for its next Open to cut) are taken as not written
// yet rather than ErrCorrupt. It follows the writer by polling every WithPollInterval (default
// DefaultPollInterval): polling rather than inotify because it is portable, needs no descriptor
// per folder, and bounds the delay the same way on every file system (network ones included).
// Records appended, segments rolled or deleted by retention, truncations, and topics created or
// deleted become visible within about one interval. The log start offset is the larger of the
// one the writer checkpointed and the first segment's base offset.
//
// Segment files are read through descriptors opened read-only and kept while the segment is
// listed, so a segment retention deletes under a read stays readable until the next look. On
// Windows those descriptors keep the writer from deleting the files until then.
//
// Transactions: records of aborted transactions are returned (Kafka's read_uncommitted); a
// ReadOnlyReader refuses ReadCommitted. Errors: a missing dir, a topic configuration file that
// cannot be read (wrapping ErrCorrupt).
func OpenReadOnly(dir string, opts ...Option) (*ReadOnlyStore, error) {
	o := newOptions(opts)
	info, err := o.fs.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("commitlog: open %s: not a directory", dir)
	}
	s := &ReadOnlyStore{dir: dir, o: o, topics: map[string]*roTopic{}, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.Refresh(); err != nil {
		s.closeTopics()
		return nil, err
	}
	interval := o.pollInterval
	if interval == 0 {
		interval = DefaultPollInterval
	}
	if interval < 0 {
		close(s.done)
		return s, nil
	}
	go s.poll(interval)
	return s, nil
}

// poll refreshes every interval until Close.
func (s *ReadOnlyStore) poll(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.Refresh(); err != nil && !errors.Is(err, ErrClosed) {
				s.o.logger.Warn("read-only store refresh failed; tried again at the next poll", "dir", s.dir, "err", err)
			}
		}
	}
}

// Dir returns the store's directory.
func (s *ReadOnlyStore) Dir() string { return s.dir }

// WriterLive reports whether a process holds the store open with Open now (it holds the store's
// lock file, .lock). It looks without keeping a lock and without creating the file.
// errors.ErrUnsupported for a file system that cannot tell (WithFS of a wrapper).
func (s *ReadOnlyStore) WriterLive() (bool, error) {
	return fsys.Held(s.o.fs, filepath.Join(s.dir, lockFileName))
}

// Refresh looks at the store now, as the background poll does every WithPollInterval, and
// returns once what it found is visible. ErrClosed after Close.
func (s *ReadOnlyStore) Refresh() error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	configs, err := s.readConfigs()
	if err != nil {
		return err
	}
	// Topics as Open finds them: configured ones, and folders without a configuration (adopted
	// with the default configuration).
	entries, err := s.o.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("commitlog: list %s: %w", s.dir, err)
	}
	found := map[string]int32{}
	for _, e := range entries {
		topic, p, ok := parsePartitionDirName(e.Name())
		if !ok || isInternalTopic(topic) || !e.IsDir() || strings.HasSuffix(e.Name(), deleteSuffix) || p >= MaxPartitions {
			continue
		}
		found[topic] = max(found[topic], p+1)
	}
	for topic, n := range found {
		cfg, ok := configs[topic]
		if !ok {
			cfg = TopicConfig{Partitions: n}
		}
		cfg.Partitions = max(cfg.Partitions, n)
		configs[topic] = cfg
	}

	// The writer's log-start-offset-checkpoint (log_dir_checkpoints.go), replaced whole by a
	// rename: one read per look for every partition. One that cannot be read leaves each log's
	// start at its first segment's base offset until the next look.
	logStarts, err := readOffsetCheckpointFile(s.o.fs, s.dir, logStartCheckpointName)
	if err != nil {
		logStarts = nil
	}
	s.mu.RLock()
	current := maps.Clone(s.topics)
	s.mu.RUnlock()
	next := map[string]*roTopic{}
	changed := false
	var errs []error
	for name, cfg := range configs {
		if _, ok := found[name]; !ok {
			continue // configured, folders not made yet (or being deleted)
		}
		t := current[name]
		if t == nil {
			t = &roTopic{name: name}
			changed = true
		}
		resolved, _, err := cfg.LogConfig.resolve(SyncDefault)
		if err != nil {
			resolved, _, _ = LogConfig{}.resolve(SyncDefault)
		}
		seg := &newLiveConfig(resolved).seg
		parts := slices.Clip(t.parts)
		for p := int32(len(parts)); p < cfg.Partitions; p++ {
			parts = append(parts, newROLog(s.o.fs, filepath.Join(s.dir, partitionDirName(name, p)), seg))
			changed = true
		}
		for p, l := range parts {
			c, err := l.refresh(logStarts[topicPartition{name, int32(p)}])
			if err != nil {
				errs = append(errs, err)
			}
			changed = changed || c
		}
		next[name] = &roTopic{name: name, cfg: cfg, parts: parts}
	}
	for name, t := range current {
		if _, ok := next[name]; !ok {
			for _, l := range t.parts {
				l.close()
			}
			changed = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for name, t := range next {
			if current[name] == nil {
				for _, l := range t.parts {
					l.close()
				}
			}
		}
		return ErrClosed
	}
	s.topics = next
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return errors.Join(errs...)
}

// readConfigs reads the topic configurations the writer saved; none when it never saved any.
func (s *ReadOnlyStore) readConfigs() (map[string]TopicConfig, error) {
	return readTopicConfigs(s.o.fs, s.dir)
}

// Topics returns the names of the store's topics as of the last look, sorted.
func (s *ReadOnlyStore) Topics() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.topics))
}

// topic returns the named topic, ErrUnknownTopic, or ErrClosed.
func (s *ReadOnlyStore) topic(name string) (*roTopic, error) {
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

// TopicConfig returns the topic's configuration as the writer saved it (zero fields not filled
// in). ErrUnknownTopic, ErrClosed.
func (s *ReadOnlyStore) TopicConfig(topic string) (TopicConfig, error) {
	t, err := s.topic(topic)
	if err != nil {
		return TopicConfig{}, err
	}
	return t.cfg, nil
}

// PartitionCount returns the number of partitions of the topic. ErrUnknownTopic, ErrClosed.
func (s *ReadOnlyStore) PartitionCount(topic string) (int32, error) {
	t, err := s.topic(topic)
	if err != nil {
		return 0, err
	}
	return int32(len(t.parts)), nil
}

// Offsets returns a partition's log start offset and log end offset as of the last look: the
// first offset held and the offset after the last whole batch. A store that is not replicated
// has its high watermark at its log end offset. ErrUnknownTopic for an unknown topic or
// partition, ErrClosed.
func (s *ReadOnlyStore) Offsets(topic string, partition int32) (logStart, logEnd int64, err error) {
	l, err := s.log(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	logStart, logEnd = l.offsets()
	return logStart, logEnd, nil
}

func (s *ReadOnlyStore) log(topic string, partition int32) (*roLog, error) {
	t, err := s.topic(topic)
	if err != nil {
		return nil, err
	}
	if partition < 0 || int(partition) >= len(t.parts) {
		return nil, fmt.Errorf("%w: topic %q has no partition %d", ErrUnknownTopic, topic, partition)
	}
	return t.parts[partition], nil
}

// Segments returns the number of a partition's segments and the bytes of whole batches they
// hold, as of the last look. ErrUnknownTopic for an unknown topic or partition, ErrClosed.
func (s *ReadOnlyStore) Segments(topic string, partition int32) (count int, bytes int64, err error) {
	l, err := s.log(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segs {
		bytes += seg.size
	}
	return len(l.segs), bytes, nil
}

// Readers returns the names of the readers that have committed positions (through Open),
// sorted. ErrClosed after Close.
func (s *ReadOnlyStore) Readers() ([]string, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	return readerFileNamesIn(s.o.fs, s.dir)
}

// CommittedPositions returns the positions a named reader committed (through a store opened with
// Open), by topic and partition, as the file holds them now; none when it never committed.
// ErrInvalidReaderName, ErrCorrupt for a damaged file.
func (s *ReadOnlyStore) CommittedPositions(name string) (map[string]map[int32]int64, error) {
	if err := checkReaderName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(s.dir, readerFilePrefix+name)
	all, err := readPositionsFile(s.o.fs, path)
	if err != nil {
		return nil, fmt.Errorf("%w: committed positions of reader %q (%s): %w", ErrCorrupt, name, path, err)
	}
	return positionOffsets(all), nil
}

// wait returns the channel the next refresh that sees a change closes.
func (s *ReadOnlyStore) wait() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changed
}

// Close stops the poll and closes every file. Blocked reads return ErrClosed. Later calls
// return nil.
func (s *ReadOnlyStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	return s.closeTopics()
}

func (s *ReadOnlyStore) closeTopics() error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	var errs []error
	for _, t := range s.topics {
		for _, l := range t.parts {
			errs = append(errs, l.close())
		}
	}
	return errors.Join(errs...)
}

func (s *ReadOnlyStore) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}
