package fsys

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// MkdirAllDurable creates dir and its missing parents as FS.MkdirAll does, and makes each
// directory it created durable: a directory's name lives in its parent, so the parent of every
// created directory is synced (a log's first appends would otherwise be acknowledged in a
// folder that a power loss can take away). Nothing is synced when dir exists.
func MkdirAllDurable(fsy FS, dir string, perm fs.FileMode) error {
	var created []string // missing directories, deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsy.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsy.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if parent := filepath.Dir(created[i]); parent != created[i] {
			if err := fsy.SyncDir(parent); err != nil {
				return err
			}
		}
	}
	return nil
}
