package fsys

import "errors"

// Held reports whether the lock FS.Lock takes on name is held now, by this process or another,
// without creating name, writing anything or keeping a lock: a reader's way to tell whether the
// writer that locks a directory is live. A missing file is not held. On the real file system it
// takes a shared lock that fails at once if the exclusive one is held, and releases it at once:
// a Lock racing with it may find it held for that instant, which Lock on unix and Windows waits
// out (see lockRetries). ErrUnsupported for a file system that cannot tell (a wrapper that does
// not forward it).
func Held(fsy FS, name string) (bool, error) {
	h, ok := fsy.(interface {
		held(name string) (bool, error)
	})
	if !ok {
		return false, errors.ErrUnsupported
	}
	return h.held(name)
}

func (osFS) held(name string) (bool, error) { return heldFile(name) }

func (m *memFS) held(name string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, base, _, err := m.parent("open", name)
	if err != nil {
		return false, nil
	}
	n := m.root
	if d != nil {
		n = d.children[base]
	}
	return n != nil && n.locked, nil
}
