package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// NewMemory returns an empty in-memory file system with the semantics of OS for everything FS and
// File promise: directories, os.OpenFile's flags and access modes, errors that wrap fs.ErrNotExist
// and fs.ErrExist as *fs.PathError (*os.LinkError from Rename), POSIX rename, io.EOF from ReadAt past
// the end, zero fill on growth, locks that exclude every other Lock of the same file until Close,
// and open files that keep working after their name is removed or renamed. It is safe for
// concurrent use.
//
// Names are resolved from a single root: "a/b", "/a/b" and, on Windows, `C:\a\b` are the same file,
// and ".." stops at the root. Permissions are recorded, not enforced. Sync and SyncDir only check
// their argument. A mapping (File.Map) shares the file's bytes, like mmap: writes through a writable
// mapping are seen by ReadAt at once, and WriteAt is seen in every mapping it overlaps. Where mmap
// would fault later, the memory FS refuses up front: Truncate (and O_TRUNC) below the size of a live
// mapping fails, and so does growing a file while a writable mapping of it is live. Stores through
// a writable mapping are seen by ReadAt and by the mappings taken after it, and may not be by a
// read-only mapping taken before it (which keeps seeing WriteAt).
//
// A file holds about its size in memory: appends add to it without copying what it holds, and a
// preallocation (Truncate growing a file) takes memory only where it is written, on Unix.
func NewMemory() FS {
	return &memFS{root: &memNode{dir: true, perm: 0o755, children: make(map[string]*memNode), modTime: time.Now()}}
}

// memFS is a tree of nodes under one root.
type memFS struct {
	mu   sync.RWMutex // guards the tree: every node's children and locked
	root *memNode
}

// memNode is a directory or a regular file. A node is the file itself (an inode), not its name:
// open Files, Locks and mappings hold the node, so they outlive a rename or a removal of the name.
type memNode struct {
	dir  bool
	perm fs.FileMode // set at creation

	children map[string]*memNode // of a directory; guarded by memFS.mu
	locked   bool                // guarded by memFS.mu

	mu       sync.RWMutex // guards the fields below; taken after memFS.mu, never before it
	opens    int          // Files open on the node
	unlinked bool         // the node has no name: its bytes go with the last open File
	size     int          // the file's size: the lengths of ext add up to it
	ext      []memExtent  // the contents, in order; mappings share ext[0]'s array or an older one
	gen      uint64       // counts replacements of ext[0]'s array, to find mappings of older ones
	maps     map[*memMapping]struct{}
	modTime  time.Time
}

// Errors of the memory FS where the OS would return an errno. errNotEmpty, like ENOTEMPTY, is an
// fs.ErrExist.
var (
	errIsDir         = errors.New("is a directory")
	errNotDir        = errors.New("not a directory")
	errNotEmpty      = existError("directory not empty")
	errBadAccess     = errors.New("bad file descriptor") // read of a write-only file, or the reverse
	errInvalid       = errors.New("invalid argument")
	errNegative      = errors.New("negative offset")
	errAppendWriteAt = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
	errRoot          = errors.New("the root cannot be removed or renamed")
	errMappedShrink  = errors.New("memory fsys: truncating below the size of a live mapping")
	errMappedGrow    = errors.New("memory fsys: growing a file while a writable mapping of it is live")
)

type existError string

func (e existError) Error() string        { return string(e) }
func (e existError) Is(target error) bool { return target == fs.ErrExist }

// memPath splits name into its elements from the root; none for the root itself.
func memPath(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name[len(filepath.VolumeName(name)):]))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// parent finds the directory holding name's last element, under m.mu. It returns a nil dir for the
// root, which has no parent.
func (m *memFS) parent(op, name string) (dir *memNode, base string, elems []string, err error) {
	if name == "" {
		return nil, "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	elems = memPath(name)
	if len(elems) == 0 {
		return nil, "", nil, nil
	}
	d := m.root
	for _, e := range elems[:len(elems)-1] {
		c := d.children[e]
		if c == nil {
			return nil, "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !c.dir {
			return nil, "", nil, &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		d = c
	}
	return d, elems[len(elems)-1], elems, nil
}

// lookup finds name's node, under m.mu.
func (m *memFS) lookup(op, name string) (*memNode, error) {
	d, base, _, err := m.parent(op, name)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return m.root, nil
	}
	if c := d.children[base]; c != nil {
		return c, nil
	}
	return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// unlink marks n and everything under it as having no name, under memFS.mu, and lets go of the
// bytes of the files that no File has open (see discard): POSIX keeps a removed file's data
// while it is open, and only then.
func (n *memNode) unlink() {
	for _, c := range n.children {
		c.unlink()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unlinked = true
	if n.opens == 0 {
		n.discard()
	}
}

// touch records a change of a directory's entries.
func (n *memNode) touch() {
	n.mu.Lock()
	n.modTime = time.Now()
	n.mu.Unlock()
}

func (m *memFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, _, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	n := m.root
	if d != nil {
		n = d.children[base]
	}
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n == nil:
		n = &memNode{perm: perm.Perm(), modTime: time.Now()}
		d.children[base] = n
		d.touch()
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n.dir && (acc != os.O_RDONLY || flag&(os.O_CREATE|os.O_TRUNC) != 0):
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if flag&os.O_TRUNC != 0 && acc != os.O_RDONLY {
		if err := n.resize(0); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	n.opens++
	return &memFile{node: n, name: name, flag: flag}, nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, _, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	if d == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: errRoot}
	}
	n := d.children[base]
	if n == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errNotEmpty}
	}
	delete(d.children, base)
	d.touch()
	n.unlink()
	return nil
}

func (m *memFS) RemoveAll(name string) error {
	if name == "" {
		return nil // as os.RemoveAll
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, _, err := m.parent("removeall", name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if d == nil {
		return &fs.PathError{Op: "removeall", Path: name, Err: errRoot}
	}
	if n := d.children[base]; n != nil {
		delete(d.children, base)
		d.touch()
		n.unlink()
	}
	return nil
}

func (m *memFS) Rename(oldpath, newpath string) error {
	linkErr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err} }
	unwrap := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return linkErr(pe.Err)
		}
		return linkErr(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, oelems, err := m.parent("rename", oldpath)
	if err != nil {
		return unwrap(err)
	}
	nd, nb, nelems, err := m.parent("rename", newpath)
	if err != nil {
		return unwrap(err)
	}
	if od == nil || nd == nil {
		return linkErr(errRoot)
	}
	src := od.children[ob]
	if src == nil {
		return linkErr(fs.ErrNotExist)
	}
	dst := nd.children[nb]
	if dst == src {
		return nil // POSIX: renaming a file to itself does nothing
	}
	if src.dir && len(nelems) > len(oelems) && slices.Equal(nelems[:len(oelems)], oelems) {
		return linkErr(errInvalid) // a directory cannot move into itself
	}
	if dst != nil {
		switch {
		case src.dir && !dst.dir:
			return linkErr(errNotDir)
		case !src.dir && dst.dir:
			return linkErr(errIsDir)
		case dst.dir && len(dst.children) > 0:
			return linkErr(errNotEmpty)
		}
	}
	delete(od.children, ob)
	nd.children[nb] = src
	if dst != nil {
		dst.unlink()
	}
	od.touch()
	if nd != od {
		nd.touch()
	}
	return nil
}

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	names := make([]string, 0, len(n.children))
	for c := range n.children {
		names = append(names, c)
	}
	slices.Sort(names)
	entries := make([]fs.DirEntry, len(names))
	for i, c := range names {
		entries[i] = fs.FileInfoToDirEntry(n.children[c].info(c))
	}
	return entries, nil
}

func (m *memFS) MkdirAll(name string, perm fs.FileMode) error {
	if name == "" {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrNotExist}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.root
	for _, e := range memPath(name) {
		c := d.children[e]
		if c == nil {
			c = &memNode{dir: true, perm: perm.Perm(), children: make(map[string]*memNode), modTime: time.Now()}
			d.children[e] = c
			d.touch()
		} else if !c.dir {
			return &fs.PathError{Op: "mkdir", Path: name, Err: errNotDir}
		}
		d = c
	}
	return nil
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return n.info(filepath.Base(name)), nil
}

// Lstat is Stat: the memory FS has no symbolic links.
func (m *memFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := m.Stat(name)
	if pe, ok := err.(*fs.PathError); ok {
		pe.Op = "lstat"
	}
	return fi, err
}

func (m *memFS) SyncDir(name string) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("syncdir", name)
	if err != nil {
		return err
	}
	if !n.dir {
		return &fs.PathError{Op: "syncdir", Path: name, Err: errNotDir}
	}
	return nil
}

// Lock locks the node: like flock, the lock follows the file through renames, and a new file made
// under the name of a removed one is a different, unlocked file.
func (m *memFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, _, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	n := m.root
	if d != nil {
		n = d.children[base]
	}
	if n == nil {
		n = &memNode{perm: 0o644, modTime: time.Now()}
		d.children[base] = n
		d.touch()
	}
	if n.dir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	if n.locked {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	n.locked = true
	return &memLock{fs: m, node: n, name: name}, nil
}

type memLock struct {
	fs       *memFS
	node     *memNode
	name     string
	released bool // guarded by fs.mu
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.released {
		return &fs.PathError{Op: "close", Path: l.name, Err: fs.ErrClosed}
	}
	l.released = true
	l.node.locked = false
	return nil
}

// info describes the node under the given name.
func (n *memNode) info(name string) fs.FileInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	fi := memInfo{name: name, size: int64(n.size), mode: n.perm, modTime: n.modTime}
	if n.dir {
		fi.mode |= fs.ModeDir
	}
	return fi
}

type memInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memInfo) ModTime() time.Time { return fi.modTime }
func (fi memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memInfo) Sys() any           { return nil }
