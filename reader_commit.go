package commitlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// readerFilePrefix begins the name of a named reader's committed-positions file, which sits in
// the store's directory: "commitlog-reader-<name>".
const readerFilePrefix = "commitlog-reader-"

func (s *Store) readerFile(name string) string {
	return filepath.Join(s.dir, readerFilePrefix+name)
}

// readPositions returns a named reader's committed positions, by topic and partition; none when
// it never committed. ErrCorrupt, naming the file and how to reset it, when the file is
// damaged: that reader cannot start, and nothing else is affected.
func (s *Store) readPositions(name string) (map[string]map[int32]int64, error) {
	path := s.readerFile(name)
	b, err := checkpoint.Read(s.o.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[int32]int64{}, nil
	}
	if err == nil {
		var raw map[string]map[string]int64
		if err = json.Unmarshal(b, &raw); err == nil {
			out := make(map[string]map[int32]int64, len(raw))
			for topic, parts := range raw {
				out[topic] = make(map[int32]int64, len(parts))
				for p, off := range parts {
					id, perr := strconv.ParseInt(p, 10, 32)
					if perr != nil || id < 0 || off < 0 {
						err = fmt.Errorf("bad entry %q: %d", p, off)
						break
					}
					out[topic][int32(id)] = off
				}
			}
			if err == nil {
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: committed positions of reader %q (%s): %w; Store.DeleteReader(%q) resets them",
		ErrCorrupt, name, path, err, name)
}

// Commit durably records the reader's positions (the offset of the next record in each
// partition), so that a reader opened later with the same name resumes exactly there. The file
// is replaced atomically (temp file, fsync, rename, directory fsync). Anonymous readers have
// nothing to commit: Commit returns ErrInvalidReaderName. ErrClosed after Close; ctx's error if
// it is done before the write.
func (r *Reader) Commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.cfg.Name == "" {
		return fmt.Errorf("%w: an anonymous reader has no positions to commit", ErrInvalidReaderName)
	}
	r.mu.Lock()
	closed := r.stopped()
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return r.commit()
}

// commit writes the positions file, keeping the entries of other topics read under this name.
func (r *Reader) commit() error {
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	s := r.topic.store
	all, err := s.readPositions(r.cfg.Name)
	if err != nil {
		// Overwriting a damaged file with good positions is the repair.
		all = map[string]map[int32]int64{}
	}
	all[r.topic.name] = r.Positions()
	raw := make(map[string]map[string]int64, len(all))
	for topic, parts := range all {
		raw[topic] = make(map[string]int64, len(parts))
		for p, off := range parts {
			raw[topic][strconv.Itoa(int(p))] = off
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return checkpoint.Write(s.o.fs, s.readerFile(r.cfg.Name), b)
}

// autoCommit commits every AutoCommitInterval until the reader closes.
func (r *Reader) autoCommit() {
	t := time.NewTicker(r.cfg.AutoCommitInterval)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			if err := r.commit(); err != nil {
				r.topic.store.o.logger.Error("auto-commit failed", "reader", r.cfg.Name, "err", err)
			}
		}
	}
}

// Readers returns the names of the readers that have committed positions, sorted. ErrClosed
// after Close.
func (s *Store) Readers() ([]string, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	entries, err := s.o.fs.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name(), readerFilePrefix); ok && !strings.HasSuffix(name, checkpoint.TempSuffix) {
			names = append(names, name)
		}
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
	if _, ok := s.readers[name]; ok {
		return fmt.Errorf("%w: %q", ErrReaderExists, name)
	}
	if err := s.o.fs.Remove(s.readerFile(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.o.fs.SyncDir(s.dir)
}
