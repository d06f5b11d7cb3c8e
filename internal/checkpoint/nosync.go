package checkpoint

import (
	"os"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// WriteNoSync replaces the checkpoint at name with data as Write does (the same bytes, written
// to name+".tmp" and renamed over name) without syncing the file or the directory: a process
// that is killed leaves the old contents or the new, as the page cache outlives it, but after a
// power loss (or an operating system crash) name may hold the old contents, the new, or a torn
// file, which Read refuses with ErrCorrupt. It is for state that a caller can afford to find
// older or missing after a power loss, written often enough that a sync each time would cost
// more than the state is worth. Errors as for Write.
func WriteNoSync(fsy fsys.FS, name string, data []byte) error {
	buf, err := frame(name, data)
	if err != nil {
		return err
	}
	if err := WriteRawTemp(fsy, name, buf); err != nil {
		return err
	}
	return CommitTemp(fsy, name)
}

// WriteRawTemp writes data to name+".tmp" (created or truncated) without syncing it: the first
// half of WriteRaw for a caller that makes many such files durable at once (one syncfs of the
// file system) before it renames each over its name with CommitTemp, and syncs again. Until
// CommitTemp, name is untouched. On an error the temporary file is removed.
func WriteRawTemp(fsy fsys.FS, name string, data []byte) error {
	tmp := name + TempSuffix
	f, err := fsy.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsy.Remove(tmp)
	}
	return err
}

// CommitTemp renames name+".tmp", written by WriteTemp (synced) or by WriteRawTemp and made
// durable since by the caller, over name. The rename is durable once the caller syncs the
// directory (or the file system). On an error the temporary file is removed.
func CommitTemp(fsy fsys.FS, name string) error {
	tmp := name + TempSuffix
	if err := fsy.Rename(tmp, name); err != nil {
		fsy.Remove(tmp)
		return err
	}
	return nil
}
