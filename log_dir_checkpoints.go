package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// The recovery points and log start offsets of a store's partitions, kept as Kafka's LogManager
// keeps them for a log directory: one recovery-point-offset-checkpoint and one
// log-start-offset-checkpoint file in the directory (Kafka's OffsetCheckpointFile: the line "0",
// the count, then "<topic> <partition> <offset>" per partition), rewritten whole by
// write-temp-fsync-rename (checkpointLogRecoveryOffsets, checkpointLogStartOffsets), and the
// .kafka_cleanshutdown marker, created when every log closed cleanly and removed when the store
// opens again: with it, a log whose recovery point is its log end offset is not scanned.
//
// A log opened on its own (OpenLog) and the store's internal logs keep their state in their own
// folder (commitlog-state, log_state.go), as every partition did before; a store written so is
// read on open (stateFile.read falls back to the file of a partition the store's checkpoints do
// not list) and its partitions' state goes to the store's files from then on.
const (
	recoveryPointCheckpointName = "recovery-point-offset-checkpoint"
	logStartCheckpointName      = "log-start-offset-checkpoint"
	cleanShutdownName           = ".kafka_cleanshutdown"
)

// logDirState is what a store's log directory checkpoints about its partitions, as
// readLogDirState returns it.
type logDirState struct {
	recoveryPoints  map[topicPartition]int64
	logStartOffsets map[topicPartition]int64
	clean           bool // .kafka_cleanshutdown was there
}

// readLogDirState reads the log directory checkpoints of the store in dir without writing
// anything (a reader of the store that may not write uses it too): missing files read as empty
// maps; a file that cannot be read or decoded is an error wrapping ErrCorrupt (or the file
// system's).
func readLogDirState(fsy fsys.FS, dir string) (logDirState, error) {
	st := logDirState{}
	var err error
	if st.recoveryPoints, err = readOffsetCheckpointFile(fsy, dir, recoveryPointCheckpointName); err != nil {
		return logDirState{}, err
	}
	if st.logStartOffsets, err = readOffsetCheckpointFile(fsy, dir, logStartCheckpointName); err != nil {
		return logDirState{}, err
	}
	switch _, err := fsy.Lstat(filepath.Join(dir, cleanShutdownName)); {
	case err == nil:
		st.clean = true
	case !errors.Is(err, fs.ErrNotExist):
		return logDirState{}, err
	}
	return st, nil
}

// readOffsetCheckpointFile reads the OffsetCheckpointFile name in dir: an empty map when there is
// none.
func readOffsetCheckpointFile(fsy fsys.FS, dir, name string) (map[topicPartition]int64, error) {
	b, err := readWholeFile(fsy, filepath.Join(dir, name), maxCheckpointBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return map[topicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeOffsetCheckpointFile(name, b)
}

// logDirCheckpoints holds a store's log directory checkpoints while it is open: the state each
// partition's log had at open (saved) and the state the logs have noted or set since (cur), which
// every write of the files writes whole. Writes are group-committed: a log that needs its state
// durable (a truncation, a retention, a recovery point checkpoint) waits for a write that began
// after its change, and the changes of every log made meanwhile go with it.
type logDirCheckpoints struct {
	fs     fsys.FS
	dir    string
	logger *slog.Logger

	mu    sync.Mutex
	saved map[topicPartition]logState // read at open; clean when the marker was there
	// folders says that the store had neither file at open: written before it kept them, its
	// partitions' state is in their folders (stateFile.read). With the files, a partition they
	// do not list has no state: a file left in its folder is stale.
	folders bool
	marked  bool                        // the clean shutdown marker is there (until opened removes it)
	cur     map[topicPartition]logState // noted or set since open
	gen     uint64                      // changes to cur so far

	writeMu sync.Mutex // serialises the writes of the files (they share their temporary files)
	written uint64     // the gen the last successful write covered; guarded by writeMu
}

// openLogDirCheckpoints reads the log directory checkpoints of the store in dir. Files that cannot
// be read are logged and read as none: the partitions then take their state from
// their own folders, or recover as after a crash.
func openLogDirCheckpoints(fsy fsys.FS, dir string, logger *slog.Logger) (*logDirCheckpoints, error) {
	c := &logDirCheckpoints{fs: fsy, dir: dir, logger: logger, saved: map[topicPartition]logState{}, cur: map[topicPartition]logState{}}
	st, err := readLogDirState(fsy, dir)
	if err != nil {
		logger.Warn("log directory checkpoints unreadable; partitions recover as after a crash", "dir", dir, "err", err)
		st = logDirState{}
	}
	if len(st.recoveryPoints) == 0 && len(st.logStartOffsets) == 0 {
		for _, name := range []string{recoveryPointCheckpointName, logStartCheckpointName} {
			if _, err := fsy.Lstat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
				c.folders = true
			} else {
				c.folders = false
				break
			}
		}
	}
	for tp, rp := range st.recoveryPoints {
		if start, ok := st.logStartOffsets[tp]; ok {
			c.saved[tp] = logState{recoveryPoint: rp, logStartOffset: start, clean: st.clean}
		}
	}
	c.marked = st.clean
	return c, nil
}

// opened removes the clean shutdown marker, durably, once every log of the store is open, as
// Kafka's LogManager.loadLogs deletes it after loading the logs (a failed open leaves it): from
// then on a crash is unclean.
func (c *logDirCheckpoints) opened() error {
	// What the files held is for the logs Open loaded: a partition created from now on (a topic
	// deleted by an earlier run and created again, say) starts without state.
	c.mu.Lock()
	c.saved, c.folders = map[topicPartition]logState{}, false
	c.mu.Unlock()
	if !c.marked {
		return nil
	}
	if err := c.fs.Remove(filepath.Join(c.dir, cleanShutdownName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("commitlog: remove %s: %w", filepath.Join(c.dir, cleanShutdownName), err)
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		return err
	}
	c.marked = false
	return nil
}

// get returns the state the checkpoints held at open for tp and whether they held one, and
// whether the partition's state is to be read from its folder instead (see folders).
func (c *logDirCheckpoints) get(tp topicPartition) (st logState, ok, inFolder bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok = c.saved[tp]
	return st, ok, !ok && c.folders
}

// note records st as tp's state, written with the next write of the files.
func (c *logDirCheckpoints) note(tp topicPartition, st logState) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.legacy = legacyReplication{}
	c.cur[tp] = st
	c.gen++
	return c.gen
}

// set records st as tp's state and returns once a write of the files holding it is durable.
func (c *logDirCheckpoints) set(tp topicPartition, st logState) error {
	return c.flushTo(c.note(tp, st))
}

// drop forgets the partitions of topic (deleted), durably: a topic created again under the name
// must not find their recovery points.
func (c *logDirCheckpoints) drop(topic string) error {
	c.writeMu.Lock()
	inFiles := c.written > 0 // else the files hold what they held at open, saved
	c.writeMu.Unlock()
	c.mu.Lock()
	for tp := range c.cur {
		if tp.topic == topic {
			delete(c.cur, tp)
		}
	}
	for tp := range c.saved {
		if tp.topic == topic {
			delete(c.saved, tp)
			inFiles = true
		}
	}
	c.gen++
	g := c.gen
	c.mu.Unlock()
	if !inFiles {
		return nil // the next write leaves the topic out
	}
	return c.flushTo(g)
}

// flush writes the files with every state noted so far, durably.
func (c *logDirCheckpoints) flush() error {
	c.mu.Lock()
	g := c.gen
	c.mu.Unlock()
	return c.flushTo(g)
}

// flushTo returns once a write covering change g is durable, writing the files itself unless a
// write that began after g did.
func (c *logDirCheckpoints) flushTo(g uint64) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.written >= g {
		return nil
	}
	c.mu.Lock()
	g = c.gen
	rp := make(map[topicPartition]int64, len(c.cur))
	start := make(map[topicPartition]int64, len(c.cur))
	for tp, st := range c.cur {
		rp[tp], start[tp] = st.recoveryPoint, st.logStartOffset
	}
	c.mu.Unlock()
	// The log start offsets first: a retention checkpoints its new start before it deletes, and
	// a recovery point is never below it.
	if err := checkpoint.WriteRaw(c.fs, filepath.Join(c.dir, logStartCheckpointName), encodeOffsetCheckpoint(start)); err != nil {
		return err
	}
	if err := checkpoint.WriteRaw(c.fs, filepath.Join(c.dir, recoveryPointCheckpointName), encodeOffsetCheckpoint(rp)); err != nil {
		return err
	}
	c.written = g
	return nil
}

// markClean writes the files and then the clean shutdown marker, durably, when every log noted
// a clean close since open (Store.Close calls it once every log is closed); otherwise it writes
// the files only, and the next open recovers.
func (c *logDirCheckpoints) markClean() error {
	if err := c.flush(); err != nil {
		return err
	}
	c.mu.Lock()
	clean := true
	for _, st := range c.cur {
		clean = clean && st.clean
	}
	c.mu.Unlock()
	if !clean {
		return nil
	}
	f, err := c.fs.OpenFile(filepath.Join(c.dir, cleanShutdownName), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	return c.fs.SyncDir(c.dir)
}
