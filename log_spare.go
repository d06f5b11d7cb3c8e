package commitlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

// The spare segment. Creating a file costs 0.4-0.7 ms on ext4 here, against 15 µs for a rename,
// and a new segment is three files: under SyncNever and SyncInterval, where a roll waits for no
// fsync, those creations were most of its cost, paid by the append that rolled. The flusher
// creates the next segment's three files ahead, empty, under names Kafka's tools and our load
// ignore (the temporary-file names checkpoint.CleanTemp removes on open), and the roll renames
// them to the new segment's names. The spare holds no descriptor, so it does not count against
// the open-file bound. The first spare is made after the first roll, so that a log that never
// rolls never has one. Under SyncAlways there is no flusher, and rolls create their files.

// sparePath returns the spare's file in dir for the segment file suffix suf: "commitlog-spare"
// plus suf plus checkpoint.TempSuffix.
func sparePath(dir, suf string) string {
	return filepath.Join(dir, "commitlog-spare"+suf+checkpoint.TempSuffix)
}

// spareSuffixes are the spare's files, by the suffix of the segment file each becomes.
var spareSuffixes = [...]string{logSuffix, indexSuffix, timeIndexSuffix}

// prepareSpare creates the spare's files when there is none; the flusher calls it. A failure is
// only logged: the next roll creates its files itself.
func (l *Log) prepareSpare() {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	if l.spareReady {
		return
	}
	l.mu.RLock()
	stop := l.closed || l.failure != nil
	l.mu.RUnlock()
	if stop {
		return
	}
	for _, suf := range spareSuffixes {
		f, err := l.fs.OpenFile(sparePath(l.dir, suf), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			l.logger.Warn("spare segment not prepared; the next roll creates its files", "err", err)
			return
		}
	}
	l.spareReady = true
}

// newSegment creates the files of the active segment a roll starts at baseOffset: the spare's,
// renamed, when one is ready and the flusher is not busy making it, else new ones. Callers hold
// appendMu.
func (l *Log) newSegment(baseOffset int64) (*segment, error) {
	// Held through the renames: the flusher must not create the next spare's files under the
	// names being renamed.
	if l.spareMu.TryLock() {
		ready := l.spareReady
		l.spareReady = false
		var seg *segment
		var err error
		if ready {
			seg, err = adoptSegment(l.fs, l.dir, baseOffset, &l.cfg, func(suf string) string { return sparePath(l.dir, suf) })
		}
		l.spareMu.Unlock()
		if ready && err == nil {
			return seg, nil
		}
		if ready {
			l.logger.Warn("spare segment unusable; creating the segment's files", "base_offset", baseOffset, "err", err)
		}
	}
	return createSegment(l.fs, l.dir, baseOffset, &l.cfg)
}

// removeSpare deletes the spare's files, if any; Close calls it once the flusher has stopped.
func (l *Log) removeSpare() error {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	l.spareReady = false
	var errs []error
	for _, suf := range spareSuffixes {
		if err := l.fs.Remove(sparePath(l.dir, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
