package commitlog

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commitlog-go/commitlog/internal/segment"
)

// The segments that left the log (by retention, truncation, or a follower's move of its log start
// offset): their files are renamed "*.deleted" at once and deleted once no read holds them and
// file.delete.delay.ms has passed (Kafka's asynchronous segment deletion). A read holds its
// segment with segment.Segment.Acquire and ends with release.

// release ends a read of s (see segment.Segment.Acquire) and deletes its files if s was retired
// meanwhile and is now unused. A read keeps its segment's files open past the store's bound, so
// the file cache closes idle segments then if the files open exceed it.
func (l *Log) release(s *segment.Segment) {
	defer l.caches.Files.TrimIfOver()
	if s.Release() {
		// After Close no check sweeps again: the last read of a retired segment takes its files
		// and handles with it, as Close did for the segments nobody read.
		if err := l.sweepRetired(l.now(), l.isClosed()); err != nil {
			l.logger.Warn("deleting retired segment files failed", "err", err)
		}
	}
}

// retire takes segments that left the log (by retention or truncation): their files are renamed
// "*.deleted" at once, as Kafka does, and deleted once no read uses them and FileDeleteDelay has
// passed. The caller has already removed them from l.segments under mu.
func (l *Log) retire(segs []*segment.Segment) error {
	deleteAt := l.now().Add(max(l.conf().FileDeleteDelay, 0))
	errs := []error{l.retired.add(segs, deleteAt)}
	errs = append(errs, l.fs.SyncDir(l.dir))
	errs = append(errs, l.sweepRetired(l.now(), false))
	return errors.Join(errs...)
}

// sweepRetired deletes the files of retired segments that no read uses and whose delete time
// has come (all unused ones, with force).
func (l *Log) sweepRetired(now time.Time, force bool) error { return l.retired.sweep(now, force) }

// retiredSegments are the segments that left a log and wait for their readers and their delete
// delay; mu guards segs, and serialises the renames of Retire with the removals of sweep.
type retiredSegments struct {
	mu   sync.Mutex
	segs []*segment.Segment
}

// add renames the files of segs (see segment.Segment.Retire) and lists them, due for deletion at
// deleteAt.
func (r *retiredSegments) add(segs []*segment.Segment, deleteAt time.Time) error {
	var errs []error
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range segs {
		errs = append(errs, s.Retire(deleteAt, r.suffixFor(s.BaseOffset())))
		r.segs = append(r.segs, s)
	}
	return errors.Join(errs...)
}

// suffixFor returns the suffix for the files of a segment at base being retired:
// ".deleted", as Kafka names them, unless a retired segment with the same base offset still
// waits for its delete delay (a truncation, a refill and another truncation, or retention, within
// file.delete.delay.ms), whose files have that name: then ".<n>.deleted", with the smallest n
// from 1 that no waiting segment uses. Renaming over the waiting files would lose them under
// their reads, and deleting them later would delete the new ones. Any name ending ".deleted" is
// a leftover to the next open (see listSegments), as to Kafka's. Callers hold mu.
func (r *retiredSegments) suffixFor(base int64) string {
	used := map[string]bool{}
	for _, s := range r.segs {
		if s.BaseOffset() == base {
			used[s.RetiredSuffix()] = true
		}
	}
	suffix := segment.DeletedSuffix
	for n := 1; used[suffix]; n++ {
		suffix = "." + strconv.Itoa(n) + segment.DeletedSuffix
	}
	return suffix
}

// trimRetirementNumber removes the ".<n>" that suffixFor puts before ".deleted" from
// stem, the name of a file without its ".deleted": "00000000000000000010.log.2" gives
// "00000000000000000010.log". Other stems are returned as they are.
func trimRetirementNumber(stem string) string {
	i := strings.LastIndexByte(stem, '.')
	if i < 0 || i == len(stem)-1 {
		return stem
	}
	for _, c := range stem[i+1:] {
		if c < '0' || c > '9' {
			return stem
		}
	}
	return stem[:i]
}

// sweep deletes the files of retired segments that no read uses and whose delete time has come
// (all unused ones, with force).
func (r *retiredSegments) sweep(now time.Time, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	keep := r.segs[:0]
	for _, s := range r.segs {
		removed, err := s.RemoveIfDue(now, force)
		errs = append(errs, err)
		if removed {
			continue
		}
		keep = append(keep, s)
	}
	clear(r.segs[len(keep):])
	r.segs = keep
	return errors.Join(errs...)
}
