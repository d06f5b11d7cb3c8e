package txnindex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// ErrClosed is returned by a change to an Index after Close.
var ErrClosed = errors.New("txnindex: closed")

// Index is one .txnindex file and its entries, Kafka's
// org.apache.kafka.storage.internals.log.TransactionIndex: 34-byte entries (version int16 = 0,
// producerId int64, firstOffset int64, lastOffset int64, lastStableOffset int64, big-endian; see
// the package documentation), their lastOffset strictly increasing.
//
// The entries are kept in memory as well (a segment holds few), so Collect does no I/O. The
// Index holds no open file between calls: Append, TruncateTo, Reset and Sync open the file, act
// and close it again, so that a segment's txn index costs no file descriptor (aborted
// transactions are rare; their appends are not the hot path). The file is created by the first
// Append, never before.
//
// An Index is safe for concurrent use: Collect takes a read lock, the other methods a write lock.
type Index struct {
	fs fsys.FS

	mu      sync.RWMutex
	path    string
	entries []AbortedTxn
	onDisk  bool // the file exists (found by Open, or created by Append)
	dirty   bool // written since the last Sync
	closed  bool
}

// Open returns the index of the .txnindex file at path, read whole into memory (Kafka's
// TransactionIndex, whose constructor reads the last entry's offset, and its sanityCheck). A
// missing file is an empty index, with no file until the first Append.
//
// A file whose size is not a whole number of 34-byte entries, or with an entry whose version is
// not 0, is an error wrapping ErrCorrupt; the Index returned with it is usable and empty, its file
// left as it is: Reset empties the file, Remove deletes it (the caller decides, and rebuilds the
// entries from the log). Other errors are the file system's, with a nil Index.
func Open(fsy fsys.FS, path string) (*Index, error) {
	x := &Index{fs: fsy, path: path}
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	x.onDisk = true
	b, err := readAll(f)
	if cerr := f.Close(); cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	if err == nil {
		x.entries, err = Decode(b)
	}
	if errors.Is(err, ErrCorrupt) {
		return x, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	return x, nil
}

// readAll reads the whole of f.
// MaxFileSize bounds the .txnindex files Open reads whole: 64 MiB, about two million aborted
// transactions in one segment. A larger file is read as corrupt (emptied by the segment, its
// entries written again from the log), never allocated.
const MaxFileSize = 64 << 20

func readAll(f fsys.File) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size%EntrySize != 0 {
		// No need to read what cannot decode.
		return nil, lengthError(size)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a segment's index can hold", ErrCorrupt, size, MaxFileSize)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// Path returns the path of the index's file as it is named now (Open's, or Rename's).
func (x *Index) Path() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.path
}

// Len returns the number of entries.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries)
}

// Append adds a's 34-byte entry (see AbortedTxn.AppendTo) at the end of the file, creating the
// file when it does not exist yet, as Kafka's TransactionIndex.append does. An entry whose
// LastOffset is not above the last entry's is refused with an error wrapping ErrOutOfOrder
// ("The last offset of appended transactions must increase sequentially"). No fsync (see Sync),
// and, for a file it creates, no fsync of its directory (the caller's, where it needs one). On a
// failed write the entry is not added and the file is cut back to the entries before it.
func (x *Index) Append(a AbortedTxn) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if n := len(x.entries); n > 0 && x.entries[n-1].LastOffset >= a.LastOffset {
		return fmt.Errorf("%w, but %d is not greater than current last offset %d of index %s",
			ErrOutOfOrder, a.LastOffset, x.entries[n-1].LastOffset, x.path)
	}
	flag := os.O_WRONLY
	if !x.onDisk {
		// Created now; a file found at the name that Open did not see is stale.
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := x.fs.OpenFile(x.path, flag, 0o644)
	if err != nil {
		return err
	}
	x.onDisk = true
	x.dirty = true
	pos := int64(len(x.entries)) * EntrySize
	if _, err := f.WriteAt(a.AppendTo(make([]byte, 0, EntrySize)), pos); err != nil {
		return errors.Join(err, f.Truncate(pos), f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	x.entries = append(x.entries, a)
	return nil
}

// Collect appends to dst every entry with LastOffset >= fetchOffset and FirstOffset <
// upperBoundOffset, in order, and returns the result: the aborted transactions that overlap the
// range a fetch returns, Kafka's TransactionIndex.collectAbortedTxns. No I/O.
func (x *Index) Collect(dst []AbortedTxn, fetchOffset, upperBoundOffset int64) []AbortedTxn {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, a := range x.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBoundOffset {
			dst = append(dst, a)
		}
	}
	return dst
}

// TruncateTo drops the entries whose LastOffset is >= offset, in memory and from the file, as
// Kafka's TransactionIndex.truncateTo does (the entries are in LastOffset order: the file is cut at
// the first such entry). No fsync (see Sync); a no-op when no entry is dropped.
func (x *Index) TruncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	n, _ := slices.BinarySearchFunc(x.entries, offset, func(a AbortedTxn, o int64) int {
		switch {
		case a.LastOffset < o:
			return -1
		case a.LastOffset > o:
			return 1
		}
		return 0
	})
	if n == len(x.entries) {
		return nil
	}
	return x.truncateLocked(n)
}

// Reset drops every entry and empties the file, when there is one, as Kafka's
// TransactionIndex.reset does (the file stays, 0 bytes long). No fsync (see Sync).
func (x *Index) Reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	return x.truncateLocked(0)
}

// truncateLocked keeps the first n entries and cuts the file to them. Callers hold mu.
func (x *Index) truncateLocked(n int) error {
	if x.onDisk {
		f, err := x.fs.OpenFile(x.path, os.O_WRONLY, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			if err := errors.Join(f.Truncate(int64(n)*EntrySize), f.Close()); err != nil {
				return err
			}
			x.dirty = true
		}
	}
	x.entries = x.entries[:n:n]
	return nil
}

// Sync makes the file's entries and size durable (fsync of the file, through a descriptor opened
// for it), when it was written since the last Sync; otherwise, and when there is no file, a
// no-op. Kafka's TransactionIndex.flush.
func (x *Index) Sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.dirty || !x.onDisk {
		return nil
	}
	// Opened for writing: Windows flushes only a handle with write access.
	f, err := x.fs.OpenFile(x.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	x.dirty = false
	return nil
}

// Rename gives the file the name newPath (Kafka's TransactionIndex.renameTo, which moves the file
// if it exists) and records it: later calls use the new name. Without a file only the name
// changes. A file missing at the old name is no error.
func (x *Index) Rename(newPath string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.onDisk && newPath != x.path {
		if err := x.fs.Rename(x.path, newPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	x.path = newPath
	return nil
}

// Close ends the index: it holds no open file, so nothing is released, but later changes
// (Append, TruncateTo, Reset) return ErrClosed. Collect still answers from memory, and Sync,
// Rename and Remove still work (a closed segment's files are still renamed and deleted). Kafka's
// TransactionIndex.close. A second call is a no-op.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	return nil
}

// Remove deletes the file, when there is one, and drops the entries (Kafka's
// TransactionIndex.deleteIfExists). A file already missing is no error. The index is closed.
func (x *Index) Remove() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	x.entries = nil
	if !x.onDisk {
		return nil
	}
	x.onDisk, x.dirty = false, false
	if err := x.fs.Remove(x.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
