// Package faultfs is a fault-injecting file system for tests of the log's durability. It wraps
// another fsys.FS (a memory one, as a rule), records every operation made through it, can make any
// chosen operation fail (an error, a short write, an fsync that loses its data as Linux's does),
// and can kill the "process" at any operation and then turn what a power loss would have left
// into a fresh file system to reopen the log on.
//
// What it tracks to do that:
//
//   - per file, the bytes durable on disk: those the last successful File.Sync covered (all of
//     the file, size included, as fdatasync) and those a Mapping.Sync covered (the mapped range);
//   - per directory, its durable entries: those it had at its last successful SyncDir. A
//     creation, rename or removal not followed by a SyncDir of the directory is undone in a
//     power-loss image, even when the file itself was synced.
//
// Files and directories that existed in the inner file system before the FS saw them are taken as
// durable, with their bytes as first seen; the FS discovers them when an operation looks them up
// (a name in a path, an entry in a ReadDir listing). A crash image holds what the FS knows: every
// file and directory made through it and every pre-existing one it has seen.
//
// The FS is safe for concurrent use, but operations are serialized and numbered in the order they
// take its lock: a test that crashes at operation n must run its workload on one goroutine for n
// to mean the same operation from one run to the next.
package faultfs

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// FS is the fault-injecting file system. It implements fsys.FS.
type FS struct {
	inner fsys.FS

	mu      sync.Mutex
	root    *node
	files   []*node // every file node, for the crash snapshot
	ops     []Op
	rule    Rule
	crashed bool
	frozen  *snapshot // taken at the crash
	// released is set by Release: the handles that read the files' bytes are closed.
	released bool
	rng      *rand.Rand
}

var _ fsys.FS = (*FS)(nil)

// New returns an FS over inner, with no rule: every operation runs and is recorded. seed drives
// the random choices of CrashImage (which unsynced bytes a power loss keeps): the same seed, the
// same operations and the same CrashImage calls give the same images.
func New(inner fsys.FS, seed uint64) *FS {
	return &FS{inner: inner, root: newDir(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Inject makes r decide the fate of every operation from now on; nil removes the rule.
func (f *FS) Inject(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = r
}

// Ops returns a copy of the operations recorded so far, in order; Op.Seq is the index. Nothing is
// recorded after the operation a crash happened at.
func (f *FS) Ops() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Op(nil), f.ops...)
}

// Crashed reports whether a Rule has crashed the process.
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Release closes the handles the FS keeps on the inner files it tracks. Operations must not be
// made through the FS after; CrashImage returns the image of a crash that happened before, and an
// error otherwise.
func (f *FS) Release() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
	var first error
	for _, n := range f.files {
		if err := n.h.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.files = nil
	return first
}

// start records op and decides its fate: the fault to inject (nil to run the operation), or
// ErrCrashed when the process is dead or dies now. Callers hold f.mu and call done with the
// returned sequence number when the operation has returned.
func (f *FS) start(op Op) (int, *Fault, error) {
	if f.crashed {
		return -1, nil, ErrCrashed
	}
	op.Seq = len(f.ops)
	f.ops = append(f.ops, op)
	var ft *Fault
	if f.rule != nil {
		ft = f.rule(op)
	}
	if ft != nil {
		f.ops[op.Seq].Injected = true
		if ft.Crash {
			f.ops[op.Seq].Err = ErrCrashed
			f.frozen = f.snapshot()
			f.crashed = true
			return op.Seq, nil, ErrCrashed
		}
	}
	return op.Seq, ft, nil
}

// begin is start for an operation that an injected fault makes fail whole: it returns the
// fault's (or the crash's) error as a *fs.PathError, already recorded. Callers hold f.mu and call
// done when the operation, not failed, has returned.
func (f *FS) begin(op Op) (int, error) {
	seq, ft, err := f.start(op)
	if err == nil && ft != nil {
		err = ft.Err
	}
	if err != nil {
		err = pathErr(op.Kind, op.Path, err)
		f.done(seq, err)
	}
	return seq, err
}

// done records what operation seq returned.
func (f *FS) done(seq int, err error) {
	if seq >= 0 {
		f.ops[seq].Err = err
	}
}

func pathErr(op Kind, name string, err error) error {
	return &fs.PathError{Op: op.String(), Path: name, Err: err}
}

// OpenFile opens name in the inner file system. A file it creates is new: not durable until its
// directory is synced, and empty on disk until the file is.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: OpenFile, Path: name, Flag: flag})
	if err != nil {
		return nil, err
	}
	n := f.lookup(name)
	d, base := f.parent(name)
	file, err := f.inner.OpenFile(name, flag, perm)
	f.done(seq, err)
	if err != nil {
		return nil, err
	}
	switch {
	case n == nil && d != nil:
		if err := f.create(d, base, false, name); err != nil {
			file.Close()
			return nil, err
		}
		n = d.children[base]
	case n != nil && !n.dir && flag&os.O_TRUNC != 0:
		n.truncated(0)
	}
	if n != nil && n.dir {
		n = nil // a directory opened for listing has no bytes to track
	}
	return &faultFile{fs: f, inner: file, node: n}, nil
}

// Remove removes name; the removal is durable once its directory is synced.
func (f *FS) Remove(name string) error {
	return f.unlink(Remove, name, f.inner.Remove)
}

// RemoveAll removes name and everything under it; the removal of name's entry is durable once
// its directory is synced.
func (f *FS) RemoveAll(name string) error {
	return f.unlink(RemoveAll, name, f.inner.RemoveAll)
}

func (f *FS) unlink(k Kind, name string, do func(string) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: k, Path: name})
	if err != nil {
		return err
	}
	d, base := f.parent(name)
	if d != nil {
		f.lookup(name) // discover it, so that its durable entry is known
	}
	err = do(name)
	f.done(seq, err)
	if err == nil && d != nil {
		delete(d.children, base)
	}
	return err
}

// Rename renames oldpath to newpath; both directories' changes are durable once each is synced.
func (f *FS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, ft, err := f.start(Op{Kind: Rename, Path: oldpath, NewPath: newpath})
	if err == nil && ft != nil {
		err = ft.Err
	}
	if err != nil {
		err = &os.LinkError{Op: Rename.String(), Old: oldpath, New: newpath, Err: err}
		f.done(seq, err)
		return err
	}
	n := f.lookup(oldpath)
	f.lookup(newpath) // discover a file about to be replaced: its durable entry stays
	od, ob := f.parent(oldpath)
	nd, nb := f.parent(newpath)
	err = f.inner.Rename(oldpath, newpath)
	f.done(seq, err)
	if err == nil && n != nil && od != nil && nd != nil {
		delete(od.children, ob)
		nd.children[nb] = n
	}
	return err
}

// ReadDir lists name in the inner file system.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: ReadDir, Path: name})
	if err != nil {
		return nil, err
	}
	entries, err := f.inner.ReadDir(name)
	f.done(seq, err)
	if err == nil {
		if d := f.lookup(name); d != nil && d.dir {
			es := elems(name)
			for _, e := range entries {
				f.child(d, name, append(es[:len(es):len(es)], e.Name()))
			}
		}
	}
	return entries, err
}

// MkdirAll creates name and its missing parents; each new directory is durable once its parent
// is synced.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: MkdirAll, Path: name})
	if err != nil {
		return err
	}
	// Which elements exist is decided before the inner call creates them.
	es := elems(name)
	d, have := f.root, 0
	for have < len(es) {
		c := f.child(d, name, es[:have+1])
		if c == nil || !c.dir {
			break
		}
		d, have = c, have+1
	}
	err = f.inner.MkdirAll(name, perm)
	f.done(seq, err)
	if err == nil {
		for _, e := range es[have:] {
			c := newDir()
			d.children[e] = c
			d = c
		}
	}
	return err
}

// Stat describes name as the inner file system does.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.stat(Stat, name, f.inner.Stat) }

// Lstat describes name as the inner file system does.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.stat(Lstat, name, f.inner.Lstat) }

func (f *FS) stat(k Kind, name string, do func(string) (fs.FileInfo, error)) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: k, Path: name})
	if err != nil {
		return nil, err
	}
	fi, err := do(name)
	f.done(seq, err)
	return fi, err
}

// SyncDir makes name's entries durable: after it, a power loss keeps exactly the entries the
// directory has now.
func (f *FS) SyncDir(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: SyncDir, Path: name})
	if err != nil {
		return err
	}
	err = f.inner.SyncDir(name)
	f.done(seq, err)
	if err == nil {
		if d := f.lookup(name); d != nil && d.dir {
			d.syncDir()
		}
	}
	return err
}

// Lock takes the inner file system's lock on name, creating the file (not durable until its
// directory is synced) when missing.
func (f *FS) Lock(name string) (io.Closer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, err := f.begin(Op{Kind: Lock, Path: name})
	if err != nil {
		return nil, err
	}
	n := f.lookup(name)
	d, base := f.parent(name)
	c, err := f.inner.Lock(name)
	f.done(seq, err)
	if err != nil {
		return nil, err
	}
	if n == nil && d != nil {
		if err := f.create(d, base, false, name); err != nil {
			c.Close()
			return nil, err
		}
	}
	return &lock{fs: f, inner: c, name: name}, nil
}

// lock is the release of a Lock.
type lock struct {
	fs    *FS
	inner io.Closer
	name  string
}

// Close releases the inner lock; after a crash it still does, and returns ErrCrashed.
func (l *lock) Close() error {
	f := l.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.release(Unlock, l.name, 0, l.inner.Close)
}

// release runs a Close-like operation: after a crash the inner resource is still released, and
// ErrCrashed returned.
func (f *FS) release(k Kind, name string, size int, do func() error) error {
	seq, ft, err := f.start(Op{Kind: k, Path: name, Len: size})
	if err != nil {
		do()
		err = pathErr(k, name, err)
		f.done(seq, err)
		return err
	}
	if ft != nil {
		err = pathErr(k, name, ft.Err)
		f.done(seq, err)
		return err
	}
	err = do()
	f.done(seq, err)
	return err
}
