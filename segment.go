package commitlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// File name suffixes of a segment, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentName returns the file name stem of the segment with the given base offset: 20 digits,
// zero-padded, as Kafka names segment files.
func segmentName(baseOffset int64) string { return fmt.Sprintf("%020d", baseOffset) }

// parseSegmentName returns the base offset named by a file name such as
// "00000000000000001234.log" and whether the name is one.
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// segment is one .log file and its two indexes. The log serialises writers; readers call
// readAt and the index lookups under the log's read lock (for the active segment) or freely
// (sealed segments never change).
type segment struct {
	fs         fsys.FS
	dir        string
	baseOffset int64
	cfg        *LogConfig

	file      fsys.File
	offsetIdx *index.Offset
	timeIdx   *index.Time

	// size is the number of bytes of whole, valid batches; readers never read past it.
	size atomic.Int64
	// nextOffset is the offset after the segment's last batch (baseOffset when empty).
	nextOffset int64
	// maxTimestamp is the largest batch MaxTimestamp in the segment (-1 when none) and
	// offsetOfMaxTimestamp the last offset of the batch that holds it, for the time index.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// rollTimestamp is the first batch's MaxTimestamp, which segment.ms is measured from
	// (Kafka's rollingBasedTimestamp); -1 when empty.
	rollTimestamp int64
	// bytesSinceIndex counts bytes appended since the last offset index entry.
	bytesSinceIndex int
	sealed          bool

	// refs counts reads in progress; a retired segment's files are closed and removed only
	// when it drops to 0 (and its delete delay has passed).
	refs atomic.Int32
	// retired is set when retention or truncation removed the segment from the log and renamed
	// its files "*.deleted" (set under the log's retireMu); deleteAt, guarded by retireMu, is when
	// they may go.
	retired  atomic.Bool // read without retireMu by release, on every read's end
	deleteAt time.Time
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+suffix)
}

// createSegment creates the files of a new, empty, active segment. The caller syncs the directory.
func createSegment(fs fsys.FS, dir string, baseOffset int64, cfg *LogConfig) (*segment, error) {
	s := &segment{fs: fs, dir: dir, baseOffset: baseOffset, cfg: cfg, nextOffset: baseOffset,
		maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1}
	f, err := fs.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s.file = f
	// Stale indexes of an earlier segment at this base offset must not be trusted.
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := fs.Remove(s.path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, err
		}
	}
	if err := s.openIndexes(true); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// openSegment opens an existing segment's .log file and takes its size; load then opens the
// indexes and recovers the in-memory state.
func openSegment(fs fsys.FS, dir string, baseOffset int64, cfg *LogConfig, sealed bool) (*segment, error) {
	s := &segment{fs: fs, dir: dir, baseOffset: baseOffset, cfg: cfg, nextOffset: baseOffset,
		maxTimestamp: -1, offsetOfMaxTimestamp: -1, rollTimestamp: -1, sealed: sealed}
	f, err := fs.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.file = f
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size.Store(size)
	return s, nil
}

// openIndexes opens both indexes, writable (preallocated) or read-only.
func (s *segment) openIndexes(writable bool) error {
	var err error
	s.offsetIdx, err = index.OpenOffset(s.fs, s.path(indexSuffix), s.baseOffset, s.cfg.SegmentIndexBytes, writable)
	if err != nil {
		return err
	}
	s.timeIdx, err = index.OpenTime(s.fs, s.path(timeIndexSuffix), s.baseOffset, s.cfg.SegmentIndexBytes, writable)
	if err != nil {
		s.offsetIdx.Close()
		s.offsetIdx = nil
		return err
	}
	return nil
}

// closeIndexes closes whichever indexes are open.
func (s *segment) closeIndexes() error {
	var errs []error
	if s.offsetIdx != nil {
		errs = append(errs, s.offsetIdx.Close())
		s.offsetIdx = nil
	}
	if s.timeIdx != nil {
		errs = append(errs, s.timeIdx.Close())
		s.timeIdx = nil
	}
	return errors.Join(errs...)
}

// batchInfo is what the log needs to know of a batch it is about to index.
type batchInfo struct {
	position     int64
	size         int
	baseOffset   int64
	lastOffset   int64
	maxTimestamp int64
}

// indexBatch records a batch appended at b.position in the in-memory state and the indexes,
// following Kafka's LogSegment.append: an index entry is written before a batch once more than
// index.interval.bytes were appended since the last entry.
func (s *segment) indexBatch(b batchInfo) error {
	if s.rollTimestamp < 0 {
		s.rollTimestamp = b.maxTimestamp
	}
	if b.maxTimestamp > s.maxTimestamp {
		s.maxTimestamp = b.maxTimestamp
		s.offsetOfMaxTimestamp = b.lastOffset
	}
	if s.bytesSinceIndex > s.cfg.IndexIntervalBytes {
		// One write of several batches can bring more entries than an index has room for
		// (canHold checks for one). An entry is only a shortcut for lookups: one that does not
		// fit is left out, and the next write rolls the segment. The time index keeps its last
		// slot for the entry written at seal and close.
		if s.offsetIdx.CanAppend(b.lastOffset) {
			if err := s.offsetIdx.Append(b.lastOffset, b.position); err != nil {
				return err
			}
		}
		if s.timeIdx.CanAppend(s.offsetOfMaxTimestamp) {
			if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil {
				return err
			}
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += b.size
	s.nextOffset = b.lastOffset + 1
	return nil
}

// canHold reports whether a write of n bytes whose last offset is lastOffset and largest
// timestamp maxTimestamp fits this segment, by Kafka's roll rules: size, segment.ms measured in
// record time, full indexes, 32-bit relative offsets.
func (s *segment) canHold(n int, lastOffset, maxTimestamp int64) bool {
	size := s.size.Load()
	if size == 0 {
		return s.offsetIdx.CanAppend(lastOffset) && s.timeIdx.CanAppend(lastOffset)
	}
	switch {
	case size > s.cfg.SegmentBytes-int64(n):
		return false
	case s.rollTimestamp >= 0 && maxTimestamp-s.rollTimestamp > s.cfg.SegmentDuration.Milliseconds():
		return false
	case !s.offsetIdx.CanAppend(lastOffset) || !s.timeIdx.CanAppend(lastOffset):
		return false
	}
	return true
}

// seal makes the segment read-only: the final time index entry (Kafka appends the segment's max
// timestamp when it becomes inactive), data synced, indexes trimmed, synced and remapped.
func (s *segment) seal() error {
	if s.sealed {
		return nil
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	if err := s.sealIndexes(); err != nil {
		return err
	}
	// Trimmed and synced, the indexes of a sealed segment survive a power loss as they are.
	return s.syncIndexes()
}

// sealIndexes writes the final time index entry (Kafka appends the segment's max timestamp when
// it becomes inactive), trims both indexes and remaps them read-only, and marks the segment
// sealed. It does no fsync: a rolling log runs it under the lock readers take for index lookups
// and syncs afterwards.
func (s *segment) sealIndexes() error {
	if s.maxTimestamp >= 0 {
		if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil && !errors.Is(err, index.ErrFull) {
			return err
		}
	}
	if err := s.offsetIdx.Seal(); err != nil {
		return err
	}
	if err := s.timeIdx.Seal(); err != nil {
		return err
	}
	s.sealed = true
	return nil
}

// syncIndexes makes both indexes' entries and sizes durable.
func (s *segment) syncIndexes() error {
	return errors.Join(s.offsetIdx.Sync(), s.timeIdx.Sync())
}

// close releases the segment's files; writable indexes are trimmed to their used size. The
// final time index entry is written first, so a reopen knows the segment's max timestamp.
func (s *segment) close() error {
	var errs []error
	if !s.sealed && s.timeIdx != nil && s.maxTimestamp >= 0 {
		if err := s.timeIdx.MaybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil && !errors.Is(err, index.ErrFull) {
			errs = append(errs, err)
		}
	}
	if !s.sealed && s.offsetIdx != nil && s.timeIdx != nil {
		// A clean shutdown trusts the indexes on the next open: make them durable.
		errs = append(errs, s.syncIndexes())
	}
	errs = append(errs, s.closeIndexes())
	if s.file != nil {
		errs = append(errs, s.file.Close())
		s.file = nil
	}
	return errors.Join(errs...)
}

// deletedSuffix marks the files of a segment retention or truncation removed, until they are
// deleted, as Kafka marks them.
const deletedSuffix = ".deleted"

// retire renames the segment's files to "*.deleted"; they stay open for reads in progress.
func (s *segment) retire(deleteAt time.Time) error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Rename(s.path(suf), s.path(suf+deletedSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.deleteAt = deleteAt
	s.retired.Store(true)
	return errors.Join(errs...)
}

// removeRetired closes a retired segment and deletes its renamed files.
func (s *segment) removeRetired() error {
	errs := []error{s.close()}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Remove(s.path(suf + deletedSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	errs := []error{s.close()}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := s.fs.Remove(s.path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// headerAt reads and parses the batch header at pos, for a segment whose valid data ends at
// limit. It checks the length against limit and the configured maximum but not the CRC.
func (s *segment) headerAt(buf []byte, pos, limit int64) (recordbatch.Header, error) {
	if limit-pos < recordbatch.HeaderSize {
		return recordbatch.Header{}, recordbatch.ErrShort
	}
	buf = buf[:recordbatch.HeaderSize]
	if _, err := s.file.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return recordbatch.Header{}, err
	}
	h, err := recordbatch.ParseHeader(buf, s.maxBatchSize())
	if err != nil {
		return h, err
	}
	if int64(h.Size()) > limit-pos {
		return h, recordbatch.ErrShort
	}
	return h, nil
}

// maxBatchSize bounds the length field of batches read from disk. A batch written under an
// earlier, larger max.message.bytes must stay readable, so the bound is the larger of the
// configured limit and the segment size limit.
func (s *segment) maxBatchSize() int {
	return int(max(int64(s.cfg.MaxMessageBytes), min(s.cfg.SegmentBytes, 1<<31-1)))
}

// corruptError describes a bad batch in this segment.
func (s *segment) corruptError(pos int64, offset int64, cause error) error {
	return fmt.Errorf("%w: %s position %d (offset %d): %w", ErrCorrupt, s.path(logSuffix), pos, offset, cause)
}
