// Package checkpoint reads and writes the log's small state files (log start offsets, recovery
// points, clean-shutdown markers, reader positions, topic configs) atomically and checksummed.
//
// A checkpoint file is 41 bytes of header, then the payload:
//
//	"commitlog-checkpoint 1\n"   23 bytes: the format's name and version
//	"%08x %08x\n"                18 bytes: payload length, then CRC-32C (Castagnoli) of the payload,
//	                             each as exactly 8 lowercase hex digits
//	payload                      the length given, and nothing after it
//
// The header is text so that a person who finds the file knows what it is; the fixed width lets a
// reader check the whole header before it trusts a number in it.
//
// Write makes the new contents replace the old atomically: it writes name+".tmp", syncs it, renames
// it over name and syncs the directory, so after a crash a reader finds the old contents or the new,
// never a mix. A crash can leave the ".tmp" file; Read never looks at it, and CleanTemp removes it.
package checkpoint

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// ErrCorrupt is returned by Read, wrapped in an *fs.PathError naming the file, when the file is not
// a checkpoint of this version, is torn (shorter or longer than its header says), declares more than
// MaxPayload bytes, or fails its checksum.
var ErrCorrupt = errors.New("checkpoint: corrupt")

// MaxPayload is the largest payload, in bytes, that Write writes and Read accepts. Read refuses a
// larger declared length before it allocates.
const MaxPayload = 64 << 20

// TempSuffix ends the name of the temporary file Write renames into place.
const TempSuffix = ".tmp"

const (
	magic     = "commitlog-checkpoint 1\n"
	headerLen = len(magic) + 18 // "%08x %08x\n"
)

// checksum is CRC-32C; MakeTable returns the standard library's cached Castagnoli table.
func checksum(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// Write replaces the checkpoint at name with data, durably: it returns after the data and the rename
// are synced. On an error, name holds the old contents or, when only the directory sync failed, the
// new ones, which may not survive a power loss. Callers serialize Writes to one name, as they share
// the temporary file. Payloads over MaxPayload are refused.
func Write(fsy fsys.FS, name string, data []byte) error {
	buf, err := frame(name, data)
	if err != nil {
		return err
	}
	return WriteRaw(fsy, name, buf)
}

// WriteTemp is the first half of Write: it writes the checkpoint of data to name+".tmp" and
// syncs it, leaving name untouched, for a caller that has other durable writes to finish before
// the new contents may replace the old; CommitTemp then renames it over name, and the caller
// syncs the directory. On an error the temporary file is removed. Payloads over MaxPayload are
// refused.
func WriteTemp(fsy fsys.FS, name string, data []byte) error {
	buf, err := frame(name, data)
	if err != nil {
		return err
	}
	tmp := name + TempSuffix
	if err := writeFile(fsy, tmp, buf); err != nil {
		fsy.Remove(tmp)
		return err
	}
	return nil
}

// frame returns data behind the checkpoint header (magic, length, CRC-32C), as Write and
// WriteNoSync store it; payloads over MaxPayload are refused.
func frame(name string, data []byte) ([]byte, error) {
	if len(data) > MaxPayload {
		return nil, &fs.PathError{Op: "write checkpoint", Path: name, Err: fmt.Errorf("payload of %d bytes exceeds %d", len(data), MaxPayload)}
	}
	buf := make([]byte, 0, headerLen+len(data))
	buf = append(buf, magic...)
	buf = fmt.Appendf(buf, "%08x %08x\n", len(data), checksum(data))
	return append(buf, data...), nil
}

// WriteRaw replaces the file name with data as Write does (temporary file, fsync, rename,
// directory fsync), without the checkpoint header: for state files in another program's format,
// such as Kafka's leader-epoch-checkpoint. Errors as for Write.
func WriteRaw(fsy fsys.FS, name string, data []byte) error {
	if err := WriteRawSyncDirLater(fsy, name, data); err != nil {
		return err
	}
	return fsy.SyncDir(filepath.Dir(name))
}

// WriteRawSyncDirLater is WriteRaw without the directory fsync: the file's bytes are durable
// before the rename, so after a crash name holds the old contents or the new, never a mix, but
// the rename itself is durable only once the caller syncs the directory, which it does once for
// several files written so into one directory. Errors as for WriteRaw.
func WriteRawSyncDirLater(fsy fsys.FS, name string, data []byte) error {
	tmp := name + TempSuffix
	if err := writeFile(fsy, tmp, data); err != nil {
		fsy.Remove(tmp)
		return err
	}
	if err := fsy.Rename(tmp, name); err != nil {
		fsy.Remove(tmp)
		return err
	}
	return nil
}

// writeFile creates or truncates name, writes b and syncs it.
func writeFile(fsy fsys.FS, name string, b []byte) error {
	f, err := fsy.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read returns the payload of the checkpoint at name. A missing file is an error wrapping
// fs.ErrNotExist; a damaged one wraps ErrCorrupt. A payload is never returned unless its length and
// checksum match.
func Read(fsy fsys.FS, name string) ([]byte, error) {
	f, err := fsy.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	corrupt := func(format string, args ...any) error {
		return &fs.PathError{Op: "read checkpoint", Path: name, Err: fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)}
	}

	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size < int64(headerLen) {
		return nil, corrupt("%d bytes, shorter than the %d-byte header", size, headerLen)
	}
	var header [headerLen]byte
	if _, err := f.ReadAt(header[:], 0); err != nil {
		return nil, readError(err, corrupt)
	}
	if string(header[:len(magic)]) != magic {
		return nil, corrupt("header %q is not %q", firstLine(header[:]), strings.TrimSpace(magic))
	}
	line := header[len(magic):]
	length, ok1 := parseHex8(line[0:8])
	sum, ok2 := parseHex8(line[9:17])
	if !ok1 || !ok2 || line[8] != ' ' || line[17] != '\n' {
		return nil, corrupt("bad length and checksum line %q", line)
	}
	if length > MaxPayload {
		return nil, corrupt("declared payload of %d bytes exceeds %d", length, MaxPayload)
	}
	if want := int64(headerLen) + int64(length); size != want {
		return nil, corrupt("%d bytes, header declares %d", size, want)
	}
	data := make([]byte, length)
	if length > 0 {
		if _, err := f.ReadAt(data, int64(headerLen)); err != nil {
			return nil, readError(err, corrupt)
		}
	}
	if got := checksum(data); got != sum {
		return nil, corrupt("checksum %08x, header declares %08x", got, sum)
	}
	return data, nil
}

// readError makes a short read (the file shrank under us) a torn file.
func readError(err error, corrupt func(string, ...any) error) error {
	if err == io.EOF {
		return corrupt("file ends early")
	}
	return err
}

// parseHex8 parses exactly 8 lowercase hex digits; any other spelling of the same number is a
// damaged byte, so it is refused rather than read back as the number.
func parseHex8(b []byte) (uint32, bool) {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 16, 32)
	return uint32(v), err == nil
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// CleanTemp removes the temporary files a crash during Write can leave in dir: every regular file
// whose name starts with prefix and ends in TempSuffix. The prefix keeps it off other programs'
// temporary files (Kafka's own checkpoints also end in ".tmp"). It does not descend into
// subdirectories.
func CleanTemp(fsy fsys.FS, dir, prefix string) error {
	entries, err := fsy.ReadDir(dir)
	if err != nil {
		return err
	}
	return CleanTempIn(fsy, dir, prefix, entries)
}

// CleanTempIn is CleanTemp for a caller that has just listed dir (entries), so that the folder is
// not listed twice.
func CleanTempIn(fsy fsys.FS, dir, prefix string, entries []fs.DirEntry) error {
	var errs []error
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), TempSuffix) {
			if err := fsy.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
