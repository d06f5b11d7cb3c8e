package segment

import "time"

// Acquire marks s in use by a read (or a BatchRange, or a truncation keeping it): its files stay
// open, and, if it is retired meanwhile, on disk, until the matching Release. The caller picks s
// from its list under the lock that retirement takes to remove it, so that a segment retired
// after that still has its files. Safe concurrently.
func (s *Segment) Acquire() { s.refs.Add(1) }

// Release ends a use begun by Acquire. It reports whether that was the last use of a retired
// segment: the caller then removes its files if their delete time has come (RemoveIfDue, through
// the caller's list of retired segments). Safe concurrently.
func (s *Segment) Release() (retiredUnused bool) {
	return s.refs.Add(-1) == 0 && s.retired.Load()
}

// RemoveIfDue closes s, retired, and deletes its renamed files when no read holds it and its
// delete time has come (any time, with force: the log closes); removed says whether it did. The
// caller serialises RemoveIfDue and Retire of one segment (its list of retired segments has a
// lock).
func (s *Segment) RemoveIfDue(now time.Time, force bool) (removed bool, err error) {
	if s.refs.Load() != 0 || (!force && now.Before(s.deleteAt)) {
		return false, nil
	}
	return true, s.RemoveRetired()
}

// RetiredSuffix returns the suffix Retire put after the names of the segment's files ("" before
// it was retired). Safe concurrently.
func (s *Segment) RetiredSuffix() string {
	if !s.retired.Load() {
		return ""
	}
	return s.Suffix()
}
