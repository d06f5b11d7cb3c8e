package commitlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/segment"
)

// roMarkBytes is how many bytes of batches a read-only log's in-memory index skips between two
// entries: Kafka's default index.interval.bytes.
const roMarkBytes = 4096

// roLog is one partition's log as a read-only open (OpenReadOnly) sees it while another process
// may write it. It never writes, maps or locks a file of the partition: it reads the .log files
// with ReadAt through descriptors opened read-only, keeps its own sparse offset index in memory
// (the writer's index files, preallocated and trimmed under it, are never read), and follows the
// writer by refresh: a new listing of the folder and the size of each segment.
//
// What it shows is a prefix of what the writer wrote, batch by batch: the bytes past the last
// whole batch whose CRC checks (the active segment's tail a write has not finished, or zeros of a
// preallocated file) are taken as not yet written and looked at again at the next refresh, never
// reported as ErrCorrupt.
type roLog struct {
	fs       fsys.FS
	dir      string
	maxBatch int // the largest batch a length field may claim (segment.Config.MaxBatchSize)
	// maxDecompressed bounds the decompressed size of one batch (segment.Config.MaxDecompressedBytes).
	maxDecompressed int

	mu       sync.RWMutex
	segs     []*roSegment // by base offset
	logStart int64
	// epochs is the writer's leader-epoch-checkpoint as of the last look, nil when it could not
	// be read: where each leader epoch began, for a reader to find where the log diverged below
	// its position after a truncation (Kafka's OffsetsForLeaderEpoch).
	epochs *epochCache
	closed bool
}

// roSegment is one .log file of a roLog.
type roSegment struct {
	base int64
	f    fsys.File // opened read-only; kept while the segment is listed, so a deleted file stays readable
	// size is the bytes of whole, checked batches from the start of the file; next the offset
	// after the last of them (base when none).
	size, next int64
	marks      []roMark // a batch every roMarkBytes, from position 0
	sinceMark  int64
	// lastPos and lastCRC identify the last batch counted, to notice a file cut and written again
	// to the same size or more (a truncation).
	lastPos int64
	lastCRC uint32
}

// roMark is an entry of a roSegment's in-memory index: the batch at pos starts at offset.
type roMark struct{ offset, pos int64 }

func newROLog(fsy fsys.FS, dir string, seg *segment.Config) *roLog {
	return &roLog{fs: fsy, dir: dir, maxBatch: seg.MaxBatchSize(), maxDecompressed: seg.MaxDecompressedBytes}
}

// refresh brings the log up to the folder as it is now: segments deleted (retention, a
// truncation) are dropped, new ones (a roll) opened, and every segment whose file grew, shrank or
// changed is scanned. checkpointed is the log start offset the store's log-start-offset-checkpoint
// gives the partition (0 when it gives none). It reports whether anything a reader sees changed.
func (l *roLog) refresh(checkpointed int64) (bool, error) {
	entries, err := l.fs.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		entries = nil // the partition was deleted: no segments
	} else if err != nil {
		return false, fmt.Errorf("commitlog: list %s: %w", l.dir, err)
	}
	var bases []int64
	for _, e := range entries {
		if base, ok := segment.ParseName(e.Name(), segment.LogSuffix); ok && !e.IsDir() {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	var epochs *epochCache
	if b, err := readWholeFile(l.fs, filepath.Join(l.dir, leaderEpochFileName), 16<<20); err == nil {
		if c, err := decodeEpochCache(b); err == nil {
			epochs = &c
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	changed := false
	old := map[int64]*roSegment{}
	for _, s := range l.segs {
		old[s.base] = s
	}
	segs := make([]*roSegment, 0, len(bases))
	for i, base := range bases {
		last := i == len(bases)-1
		s := old[base]
		delete(old, base)
		path := filepath.Join(l.dir, segment.Name(base)+segment.LogSuffix)
		if s != nil {
			// The same file only grows between the two looks; smaller under the name than
			// through our descriptor, the name holds another file (a compaction's swap, a
			// truncation that removed the segment and made it again): read that one afresh.
			fdSize, err := s.f.Size()
			info, serr := l.fs.Stat(path)
			if err != nil || serr == nil && info.Size() < fdSize {
				s.f.Close()
				s, changed = nil, true
			}
		}
		if s == nil {
			f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since the listing
			}
			if err != nil {
				l.closeSegs(segs)
				return false, err
			}
			s = &roSegment{base: base, f: f, next: base, lastPos: -1}
			changed = true
		}
		grew, err := s.scan(l.maxBatch, !last)
		if err != nil {
			l.closeSegs(segs)
			return false, err
		}
		changed = changed || grew
		segs = append(segs, s)
	}
	for _, s := range old {
		s.f.Close() // deleted by the writer (retention, truncation)
		changed = true
	}
	l.segs = segs
	l.epochs = epochs
	// A store written before the log directory checkpoints kept the log start offset in the
	// partition's state file; either way the first segment's base bounds it.
	start := max(checkpointed, readLogStartOffset(l.fs, l.dir))
	if len(segs) > 0 {
		start = max(start, segs[0].base)
	}
	if start != l.logStart {
		l.logStart, changed = start, true
	}
	return changed, nil
}

func (l *roLog) closeSegs(segs []*roSegment) {
	for _, s := range segs {
		s.f.Close()
	}
	for _, s := range l.segs {
		if !slices.Contains(segs, s) {
			s.f.Close()
		}
	}
	l.segs = nil
}

// readLogStartOffset returns the log start offset a writer of an older store checkpointed in the
// partition's state file (log_state.go), or 0 when there is none or it cannot be read: the store's
// log-start-offset-checkpoint and the first segment's base offset then bound it.
func readLogStartOffset(fsy fsys.FS, dir string) int64 {
	b, err := checkpoint.Read(fsy, filepath.Join(dir, stateFileName))
	if err != nil {
		return 0
	}
	st, err := decodeLogState(b)
	if err != nil {
		return 0
	}
	return st.logStartOffset
}

// scan extends the segment over the whole batches written past size, and starts again from the
// file's start when the file was cut below size or the last batch counted is no longer there. A
// batch is counted once its header parses, its bytes are all in the file, its CRC checks (but
// with headersOnly, for a sealed segment found at open, whose bytes the writer finished before
// it rolled; the records' CRCs are checked when read) and its offsets follow the previous
// batch's. Reports whether the segment changed.
func (s *roSegment) scan(maxBatch int, headersOnly bool) (bool, error) {
	fileSize, err := s.f.Size()
	if err != nil {
		return false, err
	}
	reset := fileSize < s.size
	if !reset && s.lastPos >= 0 {
		var hb [recordbatch.HeaderSize]byte
		if _, err := s.f.ReadAt(hb[:], s.lastPos); err != nil {
			reset = true
		} else if h, err := recordbatch.ParseHeader(hb[:], maxBatch); err != nil || h.CRC != s.lastCRC {
			reset = true
		}
	}
	changed := false
	if reset {
		*s = roSegment{base: s.base, f: s.f, next: s.base, lastPos: -1}
		changed = true
		headersOnly = false
	}
	var hb [recordbatch.HeaderSize]byte
	var buf []byte
	for s.size+recordbatch.HeaderSize <= fileSize {
		pos := s.size
		if _, err := s.f.ReadAt(hb[:], pos); err != nil {
			break
		}
		h, err := recordbatch.ParseHeader(hb[:], maxBatch)
		if err != nil || pos+int64(h.Size()) > fileSize || h.BaseOffset < s.next {
			break // not yet written (or zeros of a preallocated file): looked at again next time
		}
		if !headersOnly {
			buf = slices.Grow(buf[:0], h.Size())[:h.Size()]
			if _, err := s.f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
				return changed, err
			}
			if _, err := recordbatch.Check(buf, maxBatch); err != nil {
				break
			}
		}
		if pos == 0 || s.sinceMark >= roMarkBytes {
			s.marks = append(s.marks, roMark{offset: h.BaseOffset, pos: pos})
			s.sinceMark = 0
		}
		s.sinceMark += int64(h.Size())
		s.size += int64(h.Size())
		s.next = h.NextOffset()
		s.lastPos, s.lastCRC = pos, h.CRC
		changed = true
	}
	return changed, nil
}

// offsets returns the log start and log end offsets.
func (l *roLog) offsets() (start, end int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.offsetsLocked()
}

func (l *roLog) offsetsLocked() (start, end int64) {
	end = l.logStart
	if n := len(l.segs); n > 0 {
		end = max(end, l.segs[n-1].next)
	}
	return min(l.logStart, end), end
}

// read returns the whole batches from the one holding offset on, up to maxBytes (at least one
// batch), and the offset after them. None, with next = offset, when offset is at the log end.
// ErrOffsetOutOfRange below the log start offset or past the log end offset.
func (l *roLog) read(offset int64, maxBytes int) (batches []byte, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	start, end := l.offsetsLocked()
	if offset < start || offset > end {
		return nil, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, l.dir, start, end)
	}
	// The segment holding offset: the last whose base is at or below it, or the first after it
	// that holds a batch past it (a segment may end short of the next's base, or be empty after
	// a compaction: those offsets are no longer in the log).
	i, _ := slices.BinarySearchFunc(l.segs, offset, func(s *roSegment, o int64) int {
		if s.base <= o {
			return -1
		}
		return 1
	})
	i = max(i-1, 0)
	for i < len(l.segs) && (l.segs[i].size == 0 || l.segs[i].next <= offset) {
		i++
	}
	if i >= len(l.segs) {
		return nil, nil
	}
	s := l.segs[i]
	m, _ := slices.BinarySearchFunc(s.marks, offset, func(m roMark, o int64) int {
		if m.offset <= o {
			return -1
		}
		return 1
	})
	pos := int64(0)
	if m > 0 {
		pos = s.marks[m-1].pos
	}
	var hb [recordbatch.HeaderSize]byte
	for pos < s.size {
		if _, err := s.f.ReadAt(hb[:], pos); err != nil {
			return nil, fmt.Errorf("commitlog: read %s: %w", filepath.Join(l.dir, segment.Name(s.base)+segment.LogSuffix), err)
		}
		h, err := recordbatch.ParseHeader(hb[:], l.maxBatch)
		if err != nil {
			return nil, fmt.Errorf("%w: %s at position %d: %w", ErrCorrupt, filepath.Join(l.dir, segment.Name(s.base)+segment.LogSuffix), pos, err)
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += int64(h.Size())
	}
	// Whole batches from pos, up to maxBytes; the first whole whatever its size. Every byte up to
	// s.size was counted as whole batches by scan.
	n := s.size - pos
	if n > int64(maxBytes) {
		if _, err := s.f.ReadAt(hb[:], pos); err != nil {
			return nil, err
		}
		h, err := recordbatch.ParseHeader(hb[:], l.maxBatch)
		if err != nil {
			return nil, fmt.Errorf("%w: %s at position %d: %w", ErrCorrupt, filepath.Join(l.dir, segment.Name(s.base)+segment.LogSuffix), pos, err)
		}
		n = max(int64(h.Size()), int64(maxBytes))
		n = min(n, s.size-pos)
	}
	if n <= 0 {
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := s.f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	// Cut at the last whole batch: maxBytes may end inside one.
	end2 := 0
	for end2+recordbatch.HeaderSize <= len(b) {
		h, err := recordbatch.ParseHeader(b[end2:], l.maxBatch)
		if err != nil || end2+h.Size() > len(b) {
			break
		}
		end2 += h.Size()
	}
	return b[:end2], nil
}

// offsetForTime returns the offset of the first record whose timestamp is at or after ts (ms),
// in the first batch whose largest timestamp is (Kafka's ListOffsets by time), or the log end
// offset when none is.
func (l *roLog) offsetForTime(ts int64) (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	start, end := l.offsetsLocked()
	var hb [recordbatch.HeaderSize]byte
	for _, s := range l.segs {
		for pos := int64(0); pos < s.size; {
			if _, err := s.f.ReadAt(hb[:], pos); err != nil {
				return 0, err
			}
			h, err := recordbatch.ParseHeader(hb[:], l.maxBatch)
			if err != nil {
				return 0, fmt.Errorf("%w: %s at position %d: %w", ErrCorrupt, filepath.Join(l.dir, segment.Name(s.base)+segment.LogSuffix), pos, err)
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= start && !h.Attributes.Control() {
				// The first record at or after ts in the batch, as Kafka's ListOffsets finds it.
				b := make([]byte, h.Size())
				if _, err := s.f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
					return 0, err
				}
				recs, err := DecodeRecords(nil, b, start, l.maxDecompressed)
				if err != nil {
					return 0, err
				}
				for _, r := range recs {
					if r.Timestamp.UnixMilli() >= ts {
						return r.Offset, nil
					}
				}
			}
			pos += int64(h.Size())
		}
	}
	return end, nil
}

// epochAt returns the epoch of the last entry of the writer's epoch checkpoint starting at or
// below offset, UndefinedEpoch when none does, the checkpoint is unknown or offset is at or past
// the log end offset.
func (l *roLog) epochAt(offset int64) int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	epoch := UndefinedEpoch
	if l.epochs == nil {
		return epoch
	}
	if _, leo := l.offsetsLocked(); offset >= leo {
		// No record there (a position past the end): nothing to check a truncation against;
		// the reset policy moves the position.
		return epoch
	}
	for _, e := range l.epochs.entries {
		if e.startOffset > offset {
			break
		}
		epoch = e.epoch
	}
	return epoch
}

// divergence returns the offset where the writer's log left epoch, the leader epoch of the record
// before a reader's position pos, when that is below pos (the log was truncated there and may
// hold other records since), and ok false when it is not or cannot be told.
func (l *roLog) divergence(epoch int32, pos int64) (int64, bool) {
	if epoch == UndefinedEpoch {
		return 0, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.epochs == nil {
		return 0, false
	}
	_, leo := l.offsetsLocked()
	e, end := l.epochs.endOffsetFor(epoch, leo)
	if e == UndefinedEpoch || end >= pos {
		return 0, false
	}
	return end, true
}

// close closes the descriptors; later reads return ErrClosed.
func (l *roLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	l.segs = nil
	return errors.Join(errs...)
}
