package faultfs

import (
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// faultFile is an open file of the FS: the inner file, and the node its bytes are tracked in.
type faultFile struct {
	fs    *FS
	inner fsys.File
	node  *node // nil for a directory opened for reading
}

func (fl *faultFile) Name() string { return fl.inner.Name() }

// run records a file operation and runs do unless a fault or the crash stops it.
func (fl *faultFile) run(op Op, do func() error) error {
	f := fl.fs
	seq, ft, err := f.start(op)
	if err == nil && ft != nil {
		err = ft.Err
	}
	if err != nil {
		err = pathErr(op.Kind, op.Path, err)
		f.done(seq, err)
		return err
	}
	err = do()
	f.done(seq, err)
	return err
}

// ReadAt reads from the inner file: what was written, synced or not.
func (fl *faultFile) ReadAt(p []byte, off int64) (n int, err error) {
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	err = fl.run(Op{Kind: Read, Path: fl.Name(), Offset: off, Len: len(p)}, func() error {
		var rerr error
		n, rerr = fl.inner.ReadAt(p, off)
		return rerr
	})
	return n, err
}

// WriteAt writes to the inner file; the bytes are durable once the file is synced. A fault with
// Written set writes that many bytes first.
func (fl *faultFile) WriteAt(p []byte, off int64) (n int, err error) {
	f := fl.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	op := Op{Kind: Write, Path: fl.Name(), Offset: off, Len: len(p)}
	seq, ft, err := f.start(op)
	if err != nil {
		err = pathErr(Write, op.Path, err)
		f.done(seq, err)
		return 0, err
	}
	if ft != nil {
		w := min(max(ft.Written, 0), len(p))
		if w > 0 {
			n, err = fl.inner.WriteAt(p[:w], off)
			if fl.node != nil {
				fl.node.wrote(off, n)
			}
		}
		if err == nil {
			err = pathErr(Write, op.Path, ft.Err)
		}
		f.done(seq, err)
		return n, err
	}
	n, err = fl.inner.WriteAt(p, off)
	if fl.node != nil {
		fl.node.wrote(off, n)
	}
	f.done(seq, err)
	return n, err
}

// Size returns the inner file's size.
func (fl *faultFile) Size() (size int64, err error) {
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	err = fl.run(Op{Kind: Size, Path: fl.Name()}, func() error {
		var serr error
		size, serr = fl.inner.Size()
		return serr
	})
	return size, err
}

// Truncate changes the inner file's size; the new size is durable once the file is synced.
func (fl *faultFile) Truncate(size int64) error {
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	return fl.run(Op{Kind: Truncate, Path: fl.Name(), Offset: size}, func() error {
		if err := fl.inner.Truncate(size); err != nil {
			return err
		}
		if fl.node != nil {
			fl.node.truncated(size)
		}
		return nil
	})
}

// Allocate allocates the range in the inner file; the size it may grow to is durable once the
// file is synced, as Truncate's is.
func (fl *faultFile) Allocate(off, length int64) error {
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	return fl.run(Op{Kind: Allocate, Path: fl.Name(), Offset: off, Len: int(length)}, func() error {
		return fl.inner.Allocate(off, length)
	})
}

// Sync syncs the inner file and makes the file's bytes and size durable, as fdatasync. An
// injected failure drops the unsynced bytes instead (see Fault.Err).
func (fl *faultFile) Sync() error {
	f := fl.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	op := Op{Kind: Sync, Path: fl.Name()}
	seq, ft, err := f.start(op)
	if err == nil && ft != nil {
		if fl.node != nil {
			if derr := fl.node.dropUnsynced(); derr != nil {
				panic("faultfs: reading a tracked file: " + derr.Error())
			}
		}
		err = ft.Err
	}
	if err != nil {
		err = pathErr(Sync, op.Path, err)
		f.done(seq, err)
		return err
	}
	err = fl.inner.Sync()
	if err == nil && fl.node != nil {
		err = fl.node.syncFile()
	}
	f.done(seq, err)
	return err
}

// SharesMappings forwards the inner file's answer (see fsys.SharesMappings).
func (fl *faultFile) SharesMappings() bool { return fsys.SharesMappings(fl.inner) }

// Map maps the inner file; writes to a writable mapping are durable once it or the file is
// synced.
func (fl *faultFile) Map(size int, writable bool) (fsys.Mapping, error) {
	flag := 0
	if writable {
		flag = 1
	}
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	var m fsys.Mapping
	err := fl.run(Op{Kind: Map, Path: fl.Name(), Len: size, Flag: flag}, func() error {
		var merr error
		m, merr = fl.inner.Map(size, writable)
		return merr
	})
	if err != nil {
		return nil, err
	}
	return &mapping{fs: fl.fs, inner: m, node: fl.node, name: fl.Name(), size: size}, nil
}

// Close closes the inner file; after a crash it still does, and returns ErrCrashed.
func (fl *faultFile) Close() error {
	fl.fs.mu.Lock()
	defer fl.fs.mu.Unlock()
	return fl.fs.release(Close, fl.Name(), 0, fl.inner.Close)
}

// mapping is a mapping of a file of the FS.
type mapping struct {
	fs    *FS
	inner fsys.Mapping
	node  *node
	name  string
	size  int
}

// Bytes is the inner mapping's memory; writing it is no operation of the FS.
func (m *mapping) Bytes() []byte { return m.inner.Bytes() }

// Sync syncs the inner mapping and makes the mapped range durable (the durable file grows to the
// mapping's size if it was shorter), as msync. An injected failure drops the file's unsynced
// bytes instead, as Sync's does.
func (m *mapping) Sync() error {
	f := m.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, ft, err := f.start(Op{Kind: MapSync, Path: m.name, Len: m.size})
	if err == nil && ft != nil {
		if m.node != nil {
			if derr := m.node.dropUnsynced(); derr != nil {
				panic("faultfs: reading a tracked file: " + derr.Error())
			}
		}
		err = ft.Err
	}
	if err != nil {
		err = pathErr(MapSync, m.name, err)
		f.done(seq, err)
		return err
	}
	err = m.inner.Sync()
	if err == nil && m.node != nil {
		err = m.node.syncRange(m.size)
	}
	f.done(seq, err)
	return err
}

// Close unmaps the inner mapping; it makes nothing durable. After a crash it still unmaps, and
// returns ErrCrashed.
func (m *mapping) Close() error {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	return m.fs.release(MapClose, m.name, m.size, m.inner.Close)
}
