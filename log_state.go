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
}

func (st logState) encode() []byte {
	c := 0
	if st.clean {
		c = 1
	}
	return fmt.Appendf(nil, "log-start-offset %d\nrecovery-point %d\nclean-shutdown %d\n", st.logStartOffset, st.recoveryPoint, c)
}

func decodeLogState(b []byte) (logState, error) {
	var st logState
	var c int
	_, err := fmt.Fscanf(bytes.NewReader(b), "log-start-offset %d\nrecovery-point %d\nclean-shutdown %d\n", &st.logStartOffset, &st.recoveryPoint, &c)
	if err != nil || st.logStartOffset < 0 || st.recoveryPoint < 0 || (c != 0 && c != 1) {
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

// writeState checkpoints st atomically (temp file, fsync, rename, directory fsync).
func (l *Log) writeState(st logState) error {
	return checkpoint.Write(l.fs, filepath.Join(l.dir, stateFileName), st.encode())
}
