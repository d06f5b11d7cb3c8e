package faultfs

import (
	"errors"
	"strings"
)

// ErrCrashed is returned by the operation a Rule crashed at and by every operation after it: the
// process that used the file system is dead. Close, Unlock and MapClose still release what they
// hold in the inner file system, but return ErrCrashed too.
var ErrCrashed = errors.New("faultfs: crashed")

// Fault is what a Rule makes of one operation.
type Fault struct {
	// Crash kills the process at this operation: it does not run, it and every later operation
	// return ErrCrashed, and the state that CrashImage turns into a disk image is taken now,
	// before the dead process can touch memory mappings again.
	Crash bool
	// Err is returned by the operation instead of running it, wrapped in an *fs.PathError
	// (*os.LinkError for Rename) naming the file. It applies when Crash is false.
	//
	// A failed Sync or MapSync also does what Linux does to the pages a failed fsync could not
	// write: they are marked clean, so the bytes written since the last successful sync never
	// reach the disk. The file still reads them back (the page cache keeps them), but no later
	// sync makes them durable: a power-loss image holds the old bytes there, or zeros past the
	// old end of the file, until they are written again. A failed SyncDir leaves the directory's
	// durable entries as they were.
	Err error
	// Written, for a Write, is how many bytes of it reach the file before Err is returned (a
	// short write, as when a disk fills mid-write); clamped to the write's length. Ignored by
	// other kinds.
	Written int
}

// Rule decides, before each operation runs, whether it fails: nil lets it run. It is called with
// the FS's lock held, in the order operations are recorded, with op.Err unset; it must not call the
// FS. A Rule may keep state (Once does) without locking of its own.
type Rule func(op Op) *Fault

// Match selects operations for a Rule.
type Match func(op Op) bool

// Is matches operations of kind k on paths ending with suffix ("" matches every path).
func Is(k Kind, suffix string) Match {
	return func(op Op) bool { return op.Kind == k && strings.HasSuffix(op.Path, suffix) }
}

// FailAt injects f into the operation numbered seq (Op.Seq) and into no other.
func FailAt(seq int, f Fault) Rule {
	return func(op Op) *Fault {
		if op.Seq == seq {
			return &f
		}
		return nil
	}
}

// CrashAt crashes the process at the operation numbered seq: see Fault.Crash.
func CrashAt(seq int) Rule { return FailAt(seq, Fault{Crash: true}) }

// Once injects f into the first operation m matches from now on, and into no other.
func Once(m Match, f Fault) Rule {
	done := false
	return func(op Op) *Fault {
		if done || !m(op) {
			return nil
		}
		done = true
		return &f
	}
}

// Always injects f into every operation m matches (a disk that stays full, say).
func Always(m Match, f Fault) Rule {
	return func(op Op) *Fault {
		if m(op) {
			return &f
		}
		return nil
	}
}
