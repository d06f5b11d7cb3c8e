package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
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

// readState returns the checkpointed state and whether there was one. A missing or corrupt
// state file means a folder we did not write (one copied from a Kafka broker) or a damaged one:
// the log then recovers as after a crash.
func (l *Log) readState() (logState, bool) {
	path := filepath.Join(l.dir, stateFileName)
	b, err := checkpoint.Read(l.fs, path)
	if err == nil {
		st, derr := decodeLogState(b)
		if derr == nil {
			return st, true
		}
		err = derr
	}
	if !errors.Is(err, fs.ErrNotExist) {
		l.logger.Warn("log state unreadable; recovering as after a crash", "file", path, "err", err)
	}
	return logState{}, false
}

// writeState checkpoints st atomically (temp file, fsync, rename, directory fsync), then has the
// log's owner checkpoint its own state (see logHooks.checkpointed). The legacy replication lines
// are the ones carried since open, whatever st says.
func (l *Log) writeState(st logState) error {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	return l.writeStateLocked(st)
}

// writeStateLocked is writeState for a caller holding stateMu, which serialises the writes (they
// share the temporary file) and guards lastState, the state last written, failed or not: the
// flusher's checkpoint of the recovery point keeps its log start offset.
func (l *Log) writeStateLocked(st logState) error {
	st.legacy = l.owner.legacyReplication()
	l.lastState = st
	if err := checkpoint.Write(l.fs, filepath.Join(l.dir, stateFileName), st.encode()); err != nil {
		return err
	}
	return l.owner.checkpointed()
}

// saveState checkpoints the log's current state (not clean: the log is open), and with it its
// owner's, after a change of the owner's that must survive a crash, such as the partition's high
// watermark starting or stopping to be kept.
func (l *Log) saveState() error {
	l.lockWriters()
	defer l.appendMu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	l.mu.RLock()
	st := logState{logStartOffset: l.logStartOffset, recoveryPoint: l.recoveryPoint}
	l.mu.RUnlock()
	return l.writeState(st)
}
