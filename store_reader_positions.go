package commitlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// readerFilePrefix begins the name of a named reader's committed-positions file, which sits in
// the store's directory: "commitlog-reader-<name>".
const readerFilePrefix = "commitlog-reader-"

// readerStore is what a Reader needs of the store that keeps its committed positions and the
// names of the live readers. The Store gives itself to each Topic as one at open, and the Topic to
// its readers, so that neither holds a pointer up to the Store.
type readerStore interface {
	// openReader runs start with the positions committed under name for t's partitions (none
	// for an anonymous reader, name ""), and then registers r as the live reader of name, all
	// under the store's lock. ErrClosed once the store or t closed; ErrReaderExists while a
	// reader of name is live on t, or a reader of a name differing only in case is live or has
	// positions (readers of name on other topics may be live); ErrCorrupt
	// when name's positions cannot be read (a torn file, which a power loss leaves of an unsynced
	// commit, is read as no positions, logged); start's error.
	openReader(name string, r *Reader, t *Topic, start func(committed map[int32]committedPosition) error) error
	// closeReader forgets r as the live reader of name.
	closeReader(name string, r *Reader)
	// commitPositions replaces name's positions of t with those update writes into mine (the
	// ones committed now for t; other topics' stay), durably when sync is set (see
	// ReaderConfig.SyncCommits). ErrClosed, wrapping errTopicDeleted, when t is no longer the
	// store's topic of its name.
	commitPositions(name string, t *Topic, sync bool, update func(mine map[int32]committedPosition)) error
	// logger is the store's logger.
	logger() *slog.Logger
}

// readerKey is a live named reader's entry: one name may read several topics at once, one
// Reader per topic, as a Kafka consumer group reads several topics under one group id.
type readerKey struct{ name, topic string }

// positionLocks serialises the read-modify-write of each reader's positions file: readers of one
// name on different topics commit under the store's shared lock, and must not write over each
// other's topics (nor share the temporary file at once). Names hash to one of a fixed set of
// locks, so that nothing grows with the names used.
//
// It also keeps what each name's file holds since this store last wrote it, so that a commit
// writes without reading the file back first. A name's entry is read and changed only under its
// lock, or under the store's exclusive lock (DeleteReader, removeTopicPositions), which keeps
// commits out; mu guards the map itself.
type positionLocks struct {
	stripes [32]sync.Mutex
	mu      sync.Mutex
	written map[string]map[string]map[int32]committedPosition
}

// lock locks name's lock and returns its unlock.
func (l *positionLocks) lock(name string) func() {
	h := fnv.New32a()
	h.Write([]byte(name))
	m := &l.stripes[h.Sum32()%uint32(len(l.stripes))]
	m.Lock()
	return m.Unlock
}

// get returns what name's file holds as this store last wrote it, nil when unknown.
func (l *positionLocks) get(name string) map[string]map[int32]committedPosition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written[name]
}

// set records all as what name's file holds; nil forgets it.
func (l *positionLocks) set(name string, all map[string]map[int32]committedPosition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if all == nil {
		delete(l.written, name)
		return
	}
	if l.written == nil {
		l.written = map[string]map[string]map[int32]committedPosition{}
	}
	l.written[name] = all
}

// forgetAll forgets every name's file contents.
func (l *positionLocks) forgetAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.written)
}

// liveReader reports whether a reader of name is open on any topic. Callers hold mu.
func (s *Store) liveReader(name string) bool {
	for k := range s.readers {
		if k.name == name {
			return true
		}
	}
	return false
}

func (s *Store) openReader(name string, r *Reader, t *Topic, start func(map[int32]committedPosition) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || t.isClosed() {
		return ErrClosed
	}
	committed := map[int32]committedPosition{}
	if name != "" {
		if _, ok := s.readers[readerKey{name, t.name}]; ok {
			return fmt.Errorf("%w: reader %q is open on topic %s", ErrReaderExists, name, t.name)
		}
		if err := s.checkReaderCaseCollision(name); err != nil {
			return err
		}
		all, err := s.readCommitted(name)
		if errors.Is(err, checkpoint.ErrCorrupt) {
			// Torn or missing its checksum: what a power loss leaves of a commit written
			// without a sync (ReaderConfig.SyncCommits). The commit is lost, as commits since
			// the last one that reached the disk are: the reader starts as one that never
			// committed, at its Start, as Kafka's consumer without a committed offset starts
			// at auto.offset.reset. Its next commit replaces the file.
			s.o.logger.Warn("reader positions torn, as a power loss leaves an unsynced commit; the reader starts at its configured start",
				"reader", name, "file", s.readerFile(name), "err", err)
			all, err = map[string]map[int32]committedPosition{}, nil
		}
		if err != nil {
			return err
		}
		committed = all[t.name]
	}
	if err := start(committed); err != nil {
		return err
	}
	if name != "" {
		s.readers[readerKey{name, t.name}] = r
	}
	return nil
}

func (s *Store) closeReader(name string, r *Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := (readerKey{name, r.topic.name}); s.readers[k] == r {
		delete(s.readers, k)
	}
}

func (s *Store) commitPositions(name string, t *Topic, sync bool, update func(mine map[int32]committedPosition)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.topics[t.name] != t {
		return fmt.Errorf("%w: topic %s: %w", ErrClosed, t.name, errTopicDeleted)
	}
	// Readers of the name on other topics commit meanwhile: each rewrites the file with the
	// others' topics as it reads them, so that none is lost.
	defer s.positionsMu.lock(name)()
	all := s.positionsMu.get(name)
	if all == nil {
		var err error
		if all, err = s.readCommitted(name); err != nil {
			// Overwriting a damaged file with good positions is the repair.
			all = map[string]map[int32]committedPosition{}
		}
	}
	// The partitions the reader reads replace their entries; those of the topic's other
	// partitions, committed under the name by a reader of them, stay (Kafka's OffsetCommit
	// changes only the partitions it lists).
	mine := all[t.name]
	if mine == nil {
		mine = make(map[int32]committedPosition, t.PartitionCount())
	}
	update(mine)
	all[t.name] = mine
	b, err := encodePositions(all)
	if err == nil && sync {
		err = checkpoint.Write(s.o.fs, s.readerFile(name), b)
	} else if err == nil {
		err = checkpoint.WriteNoSync(s.o.fs, s.readerFile(name), b)
	}
	if err != nil {
		// The file holds the old positions or, after a failed directory sync, the new: read
		// it again next time.
		s.positionsMu.set(name, nil)
		return err
	}
	s.positionsMu.set(name, all)
	return nil
}

func (s *Store) logger() *slog.Logger { return s.o.logger }

func (s *Store) readerFile(name string) string {
	return filepath.Join(s.dir, readerFilePrefix+name)
}

// committedPosition is one partition's committed position: the offset of the next record to
// read, and the leader epoch of the record before it, the last consumed (Kafka's OffsetCommit
// committed_leader_epoch), UndefinedEpoch when unknown.
type committedPosition struct {
	offset      int64
	leaderEpoch int32
}

// The positions file holds JSON, in a checkpoint (atomic, checksummed). Version 2, written since
// positions carry leader epochs:
//
//	{"version":2,"topics":{"orders":{"0":{"offset":120,"leader_epoch":3}}}}
//
// Version 1, still read, has no version field and positions only, which load with
// UndefinedEpoch and are resumed without validation, as Kafka's consumer resumes a commit made
// without an epoch:
//
//	{"orders":{"0":120}}
const readerFileVersion = 2

type readerFileV2 struct {
	Version int                                      `json:"version"`
	Topics  map[string]map[string]readerFilePosition `json:"topics"`
}

type readerFilePosition struct {
	Offset      *int64 `json:"offset"`
	LeaderEpoch *int32 `json:"leader_epoch"`
}

// readPositions returns a named reader's committed offsets, by topic and partition; none when
// it never committed. ErrCorrupt as readCommitted.
func (s *Store) readPositions(name string) (map[string]map[int32]int64, error) {
	all, err := s.readCommitted(name)
	if err != nil {
		return nil, err
	}
	return positionOffsets(all), nil
}

// positionOffsets returns the offsets of committed positions, by topic and partition.
func positionOffsets(all map[string]map[int32]committedPosition) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64, len(all))
	for topic, parts := range all {
		out[topic] = make(map[int32]int64, len(parts))
		for id, c := range parts {
			out[topic][id] = c.offset
		}
	}
	return out
}

// readPositionsFile reads the positions file at path: none when there is no file, the decoding's
// or the file system's error otherwise (callers wrap it with ErrCorrupt and the reader's name).
func readPositionsFile(fsy fsys.FS, path string) (map[string]map[int32]committedPosition, error) {
	b, err := checkpoint.Read(fsy, path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[int32]committedPosition{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodePositions(b)
}

// readCommitted returns a named reader's committed positions, by topic and partition; none when
// it never committed. ErrCorrupt, naming the file and how to reset it, when the file is
// damaged, of an unknown version, or holds a negative partition or offset or an epoch below
// UndefinedEpoch: that reader cannot start, and nothing else is affected.
func (s *Store) readCommitted(name string) (map[string]map[int32]committedPosition, error) {
	if err := s.checkReaderFile(name); err != nil {
		return nil, err
	}
	path := s.readerFile(name)
	out, err := readPositionsFile(s.o.fs, path)
	if err != nil {
		return nil, fmt.Errorf("%w: committed positions of reader %q (%s): %w; Store.DeleteReader(%q) resets them",
			ErrCorrupt, name, path, err, name)
	}
	return out, nil
}

// decodePositions parses either version of the positions file.
func decodePositions(b []byte) (map[string]map[int32]committedPosition, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	// Version 1 is an object of topics, each an object: a "version" whose value is a number can
	// only be version 2's field (a topic named "version" has an object).
	if v, ok := top["version"]; ok && len(v) > 0 && v[0] != '{' {
		var f readerFileV2
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, err
		}
		if f.Version != readerFileVersion {
			return nil, fmt.Errorf("version %d, want %d", f.Version, readerFileVersion)
		}
		out := make(map[string]map[int32]committedPosition, len(f.Topics))
		for topic, parts := range f.Topics {
			out[topic] = make(map[int32]committedPosition, len(parts))
			for p, pos := range parts {
				if pos.Offset == nil || pos.LeaderEpoch == nil {
					return nil, fmt.Errorf("topic %q entry %q: offset and leader_epoch required", topic, p)
				}
				id, err := parsePositionEntry(p, *pos.Offset)
				if err != nil || *pos.LeaderEpoch < UndefinedEpoch {
					return nil, fmt.Errorf("topic %q: bad entry %q: offset %d, leader epoch %d", topic, p, *pos.Offset, *pos.LeaderEpoch)
				}
				out[topic][id] = committedPosition{offset: *pos.Offset, leaderEpoch: *pos.LeaderEpoch}
			}
		}
		return out, nil
	}
	var raw map[string]map[string]int64
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]committedPosition, len(raw))
	for topic, parts := range raw {
		out[topic] = make(map[int32]committedPosition, len(parts))
		for p, off := range parts {
			id, err := parsePositionEntry(p, off)
			if err != nil {
				return nil, fmt.Errorf("topic %q: %w", topic, err)
			}
			out[topic][id] = committedPosition{offset: off, leaderEpoch: UndefinedEpoch}
		}
	}
	return out, nil
}

// parsePositionEntry checks one entry: a partition number (decimal, 0 to 2^31-1) and an offset
// that is not negative.
func parsePositionEntry(p string, off int64) (int32, error) {
	id, err := strconv.ParseInt(p, 10, 32)
	if err != nil || id < 0 || off < 0 {
		return 0, fmt.Errorf("bad entry %q: %d", p, off)
	}
	return int32(id), nil
}

// encodePositions writes version 2 of the positions file.
func encodePositions(all map[string]map[int32]committedPosition) ([]byte, error) {
	f := readerFileV2{Version: readerFileVersion, Topics: make(map[string]map[string]readerFilePosition, len(all))}
	for topic, parts := range all {
		f.Topics[topic] = make(map[string]readerFilePosition, len(parts))
		for p, c := range parts {
			f.Topics[topic][strconv.Itoa(int(p))] = readerFilePosition{Offset: &c.offset, LeaderEpoch: &c.leaderEpoch}
		}
	}
	return json.Marshal(f)
}

// Readers returns the names of the readers that have committed positions, sorted. ErrClosed
// after Close.
func (s *Store) Readers() ([]string, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	names, err := s.readerFileNames()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// CommittedPositions returns the committed positions of the named reader, by topic and
// partition. ErrCorrupt when its file is damaged, ErrClosed after Close.
func (s *Store) CommittedPositions(name string) (map[string]map[int32]int64, error) {
	if err := checkReaderName(name); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	return s.readPositions(name)
}

// checkReaderCaseCollision returns ErrReaderExists when a live reader's name, or a name with
// committed positions, equals name but for case. Callers hold mu.
func (s *Store) checkReaderCaseCollision(name string) error {
	names, err := s.readerFileNames()
	if err != nil {
		return err
	}
	for k := range s.readers {
		names = append(names, k.name)
	}
	for _, other := range names {
		if other != name && strings.EqualFold(other, name) {
			what := "a reader with committed positions"
			if s.liveReader(other) {
				what = "an open reader"
			}
			return fmt.Errorf("%w: %q collides with %q, %s, on case-insensitive file systems", ErrReaderExists, name, other, what)
		}
	}
	return nil
}

// checkReaderFile returns ErrInvalidReaderName when name's positions file exists as something
// other than a regular file: the partition folder of a topic whose name begins with
// "commitlog-reader-" (reserved since, see reservedTopicName, but opened when a store holds
// one), which no reader may take for its positions.
func (s *Store) checkReaderFile(name string) error {
	info, err := s.o.fs.Lstat(s.readerFile(name))
	if err != nil || info.Mode().IsRegular() {
		return nil // a missing file is no positions; another error shows when it is read
	}
	return fmt.Errorf("%w: %q: its positions file %s is not a file (a partition folder of a topic with a reserved name?)",
		ErrInvalidReaderName, name, s.readerFile(name))
}

// readerFileNames returns the names of the readers that have a positions file, unsorted.
func (s *Store) readerFileNames() ([]string, error) { return readerFileNamesIn(s.o.fs, s.dir) }

// readerFileNamesIn lists the names of the readers whose positions files are in the store folder
// dir: the files "commitlog-reader-<name>", not their temporary files.
func readerFileNamesIn(fsy fsys.FS, dir string) ([]string, error) {
	entries, err := fsy.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		// A folder is a partition of a topic named "commitlog-reader-...", never positions.
		if name, ok := strings.CutPrefix(e.Name(), readerFilePrefix); ok && !strings.HasSuffix(name, checkpoint.TempSuffix) && !e.IsDir() {
			names = append(names, name)
		}
	}
	return names, nil
}

// removeTopicPositions removes topic's committed positions from every reader's file, as Kafka
// drops a deleted topic's committed offsets from every consumer group; a file left without
// positions is removed. A damaged file is left as it is (logged): its reader cannot start until
// DeleteReader, which removes it anyway. Callers hold mu exclusively, which keeps commits out.
func (s *Store) removeTopicPositions(topic string) error {
	s.positionsMu.forgetAll() // the files change below; commits read them again
	names, err := s.readerFileNames()
	if err != nil {
		return err
	}
	var errs []error
	removed := false
	for _, name := range names {
		all, err := s.readCommitted(name)
		if err != nil {
			s.o.logger.Warn("reader positions unreadable; the deleted topic's are left in them", "reader", name, "topic", topic, "err", err)
			continue
		}
		if _, ok := all[topic]; !ok {
			continue
		}
		delete(all, topic)
		if len(all) == 0 {
			if err := s.o.fs.Remove(s.readerFile(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			removed = true
			continue
		}
		b, err := encodePositions(all)
		if err == nil {
			err = checkpoint.Write(s.o.fs, s.readerFile(name), b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("commitlog: remove topic %s from reader %q positions: %w", topic, name, err))
		}
	}
	if removed {
		errs = append(errs, s.o.fs.SyncDir(s.dir))
	}
	return errors.Join(errs...)
}

// isClosed reports whether Close was called.
func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// DeleteReader forgets a named reader's committed positions, including damaged ones, so that
// the next reader with the name starts from its configured start. ErrReaderExists while a
// reader with the name is open; no error when nothing was committed.
func (s *Store) DeleteReader(name string) error {
	if err := checkReaderName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.liveReader(name) {
		return fmt.Errorf("%w: reader %q is open", ErrReaderExists, name)
	}
	if err := s.checkReaderFile(name); err != nil {
		return err
	}
	s.positionsMu.set(name, nil)
	if err := s.o.fs.Remove(s.readerFile(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.o.fs.SyncDir(s.dir)
}
