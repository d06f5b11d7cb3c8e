package faultfs

import (
	"errors"
	"io"
	"maps"
	"math"
	"path"
	"path/filepath"
	"strings"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// node is a file or directory as the FS tracks it: an inode, not a name, so that what an open file
// wrote follows it through renames and survives in a crash image under a name whose removal or
// rename was never made durable.
type node struct {
	dir bool

	// Of a directory: the entries now, and the entries as of its last successful SyncDir (for a
	// directory that existed before the FS saw it, the entries it had then).
	children map[string]*node
	synced   map[string]*node

	// Of a file: a read-only handle on the inner file, which reads what the file holds now
	// (mapped writes included); the bytes the last successful Sync or MapSync made durable; and
	// the ranges a failed sync dropped (see Fault.Err), which read back as written but become
	// durable as the old bytes, or zeros past the old end.
	h       fsys.File
	durable []byte
	lost    spans
}

func newDir() *node {
	return &node{dir: true, children: map[string]*node{}, synced: map[string]*node{}}
}

// elems splits name into its elements from the root, as the memory FS resolves names; none for
// the root.
func elems(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name[len(filepath.VolumeName(name)):]))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// innerName rebuilds the name of the first n elements of name for the inner file system.
func innerName(name string, es []string) string {
	return filepath.FromSlash(filepath.VolumeName(name) + "/" + strings.Join(es, "/"))
}

// lookup returns the node of name, or nil when it does not exist. Callers hold f.mu.
func (f *FS) lookup(name string) *node {
	es := elems(name)
	n := f.root
	for i := range es {
		if n == nil || !n.dir {
			return nil
		}
		n = f.child(n, name, es[:i+1])
	}
	return n
}

// parent returns the directory node holding name's last element and that element; a nil node
// when the directory does not exist or name is the root.
func (f *FS) parent(name string) (*node, string) {
	es := elems(name)
	if len(es) == 0 {
		return nil, ""
	}
	d := f.lookup(innerName(name, es[:len(es)-1]))
	if d == nil || !d.dir {
		return nil, ""
	}
	return d, es[len(es)-1]
}

// child returns d's entry for the last of es, discovering it in the inner file system when the FS
// has not seen it: such an entry existed before the FS did, so it is durable, and so are a
// discovered file's bytes.
func (f *FS) child(d *node, name string, es []string) *node {
	base := es[len(es)-1]
	if c, ok := d.children[base]; ok {
		return c
	}
	p := innerName(name, es)
	fi, err := f.inner.Lstat(p)
	if err != nil {
		return nil
	}
	var c *node
	if fi.IsDir() {
		c = newDir()
	} else {
		c = &node{}
		if c.h, err = f.inner.OpenFile(p, 0, 0); err != nil {
			return nil
		}
		if c.durable, err = c.current(); err != nil {
			return nil
		}
		f.files = append(f.files, c)
	}
	d.children[base] = c
	d.synced[base] = c
	return c
}

// create records a new file or directory made under base in d.
func (f *FS) create(d *node, base string, dir bool, name string) error {
	c := newDir()
	if !dir {
		c = &node{}
		h, err := f.inner.OpenFile(name, 0, 0)
		if err != nil {
			return err
		}
		c.h = h
		f.files = append(f.files, c)
	}
	d.children[base] = c
	return nil
}

// syncDir makes d's entries durable.
func (d *node) syncDir() { d.synced = maps.Clone(d.children) }

// current reads what the file holds now.
func (n *node) current() ([]byte, error) {
	size, err := n.h.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if size > 0 {
		if _, err := n.h.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return b, nil
}

// pending is what a successful fsync would make durable of cur: cur, except that dropped ranges
// hold the durable bytes, or zeros past their end.
func (n *node) pending(cur []byte) []byte {
	if len(n.lost) == 0 {
		return cur
	}
	p := append([]byte(nil), cur...)
	for _, r := range n.lost {
		for i := r[0]; i < min(r[1], int64(len(p))); i++ {
			if i < int64(len(n.durable)) {
				p[i] = n.durable[i]
			} else {
				p[i] = 0
			}
		}
	}
	return p
}

// wrote records that [off, off+n) was written: it is pending again, no longer dropped.
func (n *node) wrote(off int64, count int) { n.lost = n.lost.remove(off, off+int64(count)) }

// truncated records a new size: dropped ranges past it are gone with the bytes.
func (n *node) truncated(size int64) { n.lost = n.lost.remove(size, math.MaxInt64) }

// syncFile makes everything pending durable, as a successful fsync does. Dropped ranges stay
// dropped: their pages are clean, so this fsync did not write them either.
func (n *node) syncFile() error {
	cur, err := n.current()
	if err != nil {
		return err
	}
	n.durable = n.pending(cur)
	return nil
}

// syncRange makes the pending bytes of [0, size) durable, as a successful msync of a mapping of
// that size does; the durable file grows to size if it was shorter. Dropped ranges stay dropped.
func (n *node) syncRange(size int) error {
	cur, err := n.current()
	if err != nil {
		return err
	}
	p := n.pending(cur)
	size = min(size, len(p))
	if len(n.durable) < size {
		n.durable = append(n.durable, make([]byte, size-len(n.durable))...)
	}
	copy(n.durable[:size], p[:size])
	return nil
}

// dropUnsynced is a failed fsync: every byte written since the last successful one is marked
// clean without reaching the disk.
func (n *node) dropUnsynced() error {
	cur, err := n.current()
	if err != nil {
		return err
	}
	for _, r := range diffSpans(cur, n.durable) {
		n.lost = n.lost.add(r[0], r[1])
	}
	return nil
}
