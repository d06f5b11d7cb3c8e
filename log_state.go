package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// stateFileName holds a log's own state. Kafka's tools ignore files they do not know, so it
// sits in the partition folder beside the segments.
const stateFileName = "commitlog-state"

// logState is what a log checkpoints about itself: where it starts, up to where its data is known
// to be on disk, and whether it was closed cleanly (then nothing needs scanning on open).
type logState struct {
	logStartOffset int64
	recoveryPoint  int64
	clean          bool
	// legacy is what a state file written before the partition kept its own replication
	// checkpoint (partition_checkpoint.go) says about replication, in two more lines; zero for
	// every other file.
	legacy legacyReplication
}

// legacyReplication is the partition's high watermark and the leader epoch of its last role, as
// state files of earlier versions held them for a replicated partition ("high-watermark N" and
// "leader-epoch N" after the log's own lines). The log decodes them at open and returns them to
// its partition (logOwner.legacyReplication), and writes them back with every state until the
// partition holds them in its own checkpoint (logOwner.dropLegacyReplication): a crash in between
// must not lose them.
type legacyReplication struct {
	present       bool  // the two lines were there
	highWatermark int64 // when present
	leaderEpoch   int32 // when present
}

const logStateFormat = "log-start-offset %d\nrecovery-point %d\nclean-shutdown %d\n"

func (st logState) encode() []byte {
	c := 0
	if st.clean {
		c = 1
	}
	b := fmt.Appendf(nil, logStateFormat, st.logStartOffset, st.recoveryPoint, c)
	if st.legacy.present {
		b = fmt.Appendf(b, "high-watermark %d\nleader-epoch %d\n", st.legacy.highWatermark, st.legacy.leaderEpoch)
	}
	return b
}

func decodeLogState(b []byte) (logState, error) {
	var st logState
	var c int
	r := bytes.NewReader(b)
	_, err := fmt.Fscanf(r, logStateFormat, &st.logStartOffset, &st.recoveryPoint, &c)
	if err == nil && r.Len() > 0 {
		st.legacy.present = true
		_, err = fmt.Fscanf(r, "high-watermark %d\n", &st.legacy.highWatermark)
		if err == nil && r.Len() > 0 {
			_, err = fmt.Fscanf(r, "leader-epoch %d\n", &st.legacy.leaderEpoch)
		}
		if err == nil && r.Len() > 0 {
			err = fmt.Errorf("%d bytes after the last line", r.Len())
		}
	}
	if err != nil || st.logStartOffset < 0 || st.recoveryPoint < 0 || (c != 0 && c != 1) || st.legacy.highWatermark < 0 || st.legacy.leaderEpoch < 0 {
		return logState{}, fmt.Errorf("%w: malformed log state %q", checkpoint.ErrCorrupt, b)
	}
	st.clean = c == 1
	return st, nil
}

// stateFile is a log's state file (stateFileName in its folder) with the lock that serialises its
// writes and the state last written. Kafka keeps a log's recovery point and log start offset in
// the log directory's recovery-point-offset-checkpoint and log-start-offset-checkpoint
// (LogManager's OffsetCheckpointFile); this library keeps them per log, beside its segments, with
// the clean-shutdown mark Kafka keeps in .kafka_cleanshutdown. The Log holds one by value; owner
// is the Log's own logOwner (a sibling field, not a pointer up), whose legacy lines every write
// carries and whose checkpointed hook runs after every successful write.
//
// Locking: read takes no lock (openLog and the loader call it before the log is shared). write
// takes mu itself; its callers hold the Log's appendMu (roll, Close, truncation, retention,
// saveState) or, at open, nothing. writeLocked is for a caller holding mu: the flush's checkpoint
// of the recovery point (checkpointRecoveryPoint), which takes the Log's mu inside mu, so the
// order is stateFile.mu, then the Log's mu; mu also guards last.
type stateFile struct {
	fs     fsys.FS
	dir    string
	logger *slog.Logger
	owner  *logOwner
	// logDir is the store's log directory checkpoints (log_dir_checkpoints.go), which hold the
	// state of its partition tp instead of the folder's file; nil for a log opened on its own and
	// for the store's internal logs.
	logDir   *logDirCheckpoints
	tp       topicPartition
	inFolder bool // read found the state in the folder's file, as a store written before logDir did

	// mu serialises writes of the state file; last is the one last written.
	mu   sync.Mutex
	last logState
}

// read returns the checkpointed state and whether there was one. A missing or corrupt
// state file means a folder we did not write (one copied from a Kafka broker) or a damaged one:
// the log then recovers as after a crash.
func (sf *stateFile) read() (logState, bool) {
	if sf.logDir != nil {
		st, ok, inFolder := sf.logDir.get(sf.tp)
		if !inFolder {
			return st, ok
		}
		// A store written before it kept the files: the state is in the partition's folder,
		// which is removed once the store's files hold it (removeFolderState).
		sf.inFolder = true
	}
	return readCheckpointed(sf.fs, filepath.Join(sf.dir, stateFileName), decodeLogState, sf.logger,
		"log state unreadable; recovering as after a crash")
}

// readCheckpointed reads the checkpoint file at path (internal/checkpoint's format) and decodes
// its payload, reporting whether there was a state to use. A missing file reads as none; one that
// cannot be read or decoded reads as none too, and is logged at Warn with unreadable, which says
// what reading it as none means for the caller.
func readCheckpointed[T any](fsy fsys.FS, path string, decode func([]byte) (T, error), logger *slog.Logger, unreadable string) (T, bool) {
	b, err := checkpoint.Read(fsy, path)
	if err == nil {
		st, derr := decode(b)
		if derr == nil {
			return st, true
		}
		err = derr
	}
	if !errors.Is(err, fs.ErrNotExist) {
		logger.Warn(unreadable, "file", path, "err", err)
	}
	var zero T
	return zero, false
}

// write checkpoints st atomically (temp file, fsync, rename, directory fsync), then has the
// log's owner checkpoint its own state (see logHooks.checkpointed). The legacy replication lines
// are the ones carried since open, whatever st says.
func (sf *stateFile) write(st logState) error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.writeLocked(st)
}

// writeLocked is write for a caller holding mu, which serialises the writes (they
// share the temporary file) and guards last, the state last written, failed or not: the
// flusher's checkpoint of the recovery point keeps its log start offset.
func (sf *stateFile) writeLocked(st logState) error {
	return sf.writeLockedAs(st, true)
}

// note records st as write does where a crash before it reaches the disk loses nothing: at the
// end of a load (a stale recovery point only makes the next recovery scan more, and the store's
// files, written once every log is open, carry it) and at Close (Store.Close writes the files
// once every log is closed). A log opened on its own writes its file as write does.
func (sf *stateFile) note(st logState) error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.writeLockedAs(st, false)
}

// writeLockedAs is writeLocked; durable false only notes the state in the store's files (see
// note). The folder's own file is written while it carries an earlier version's replication
// lines, until the partition holds them in its own checkpoint.
func (sf *stateFile) writeLockedAs(st logState, durable bool) error {
	st.legacy = sf.owner.legacyReplication()
	sf.last = st
	if sf.logDir != nil {
		if !durable {
			sf.logDir.note(sf.tp, st)
		} else if err := sf.logDir.set(sf.tp, st); err != nil {
			return err
		}
	}
	if sf.logDir == nil || st.legacy.present {
		if err := checkpoint.Write(sf.fs, filepath.Join(sf.dir, stateFileName), st.encode()); err != nil {
			return err
		}
	}
	return sf.owner.checkpointed()
}

// removeFolderState removes the folder's own state file of a store's partition whose state the
// store's files now hold durably (written before the store kept them); a no-op otherwise.
func (sf *stateFile) removeFolderState() error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.logDir == nil || !sf.inFolder || sf.owner.legacyReplication().present {
		return nil
	}
	if err := sf.fs.Remove(filepath.Join(sf.dir, stateFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sf.inFolder = false
	return nil
}

// saveState checkpoints the log's current state (not clean: the log is open), and with it its
// owner's, after a change of the owner's that must survive a crash, such as the partition's high
// watermark starting or stopping to be kept.
func (l *Log) saveState() error {
	l.lockWriters()
	defer l.unlockWriters()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	st := logState{logStartOffset: l.logStartOffset, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	return l.state.write(st)
}
