package faultfs

import (
	"fmt"
	"os"
	"strings"
)

// Kind names an operation of the file-system seam.
type Kind uint8

// The operations FS records, one per method of fsys.FS, fsys.File and fsys.Mapping.
const (
	OpenFile  Kind = iota + 1 // FS.OpenFile; Flag holds the flags
	Remove                    // FS.Remove
	RemoveAll                 // FS.RemoveAll
	Rename                    // FS.Rename; Path is the old name, NewPath the new one
	ReadDir                   // FS.ReadDir
	MkdirAll                  // FS.MkdirAll
	Stat                      // FS.Stat
	Lstat                     // FS.Lstat
	SyncDir                   // FS.SyncDir
	Lock                      // FS.Lock
	Unlock                    // Close of the io.Closer FS.Lock returned
	Read                      // File.ReadAt; Offset and Len are the arguments
	Write                     // File.WriteAt; Offset and Len are the arguments
	Size                      // File.Size
	Truncate                  // File.Truncate; Offset is the new size
	Sync                      // File.Sync
	Map                       // File.Map; Len is the size, Flag is 1 for a writable mapping
	Close                     // File.Close
	MapSync                   // Mapping.Sync; Len is the mapping's size
	MapClose                  // Mapping.Close; Len is the mapping's size
	Allocate                  // File.Allocate; Offset and Len are the range
	SyncFS                    // FS.SyncFileSystem (fsys.FileSystemSyncer); Path is the directory
)

var kindNames = [...]string{
	OpenFile: "open", Remove: "remove", RemoveAll: "removeall", Rename: "rename", ReadDir: "readdir",
	MkdirAll: "mkdirall", Stat: "stat", Lstat: "lstat", SyncDir: "syncdir", Lock: "lock",
	Unlock: "unlock", Read: "read", Write: "write", Size: "size", Truncate: "truncate", Sync: "sync",
	Map: "map", Close: "close", MapSync: "msync", MapClose: "munmap", Allocate: "allocate",
	SyncFS: "syncfs",
}

// String returns the kind's short name ("write", "sync", "syncdir", ...), as Op.String prints it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Op is one recorded operation.
type Op struct {
	// Seq is the operation's position in the record, from 0: the n of FailAt and CrashAt.
	Seq  int
	Kind Kind
	// Path is the name the operation was called with; for operations of a File or Mapping, the
	// name the file was opened with.
	Path string
	// NewPath is Rename's new name; empty for other kinds.
	NewPath string
	// Offset is the offset of Read, Write and Allocate, and the new size of Truncate.
	Offset int64
	// Len is the byte count of Read, Write and Allocate, and the size of Map, MapSync and MapClose.
	Len int
	// Flag is OpenFile's flags; 1 for a writable Map.
	Flag int
	// Err is what the operation returned: nil, the inner file system's error, an injected fault,
	// or ErrCrashed. It is set when the operation returns.
	Err error
	// Injected is set when a Rule decided the outcome (a fault or the crash).
	Injected bool
}

// String describes the operation on one line, for example
// "#17 write /d/00000000000000000000.log off=0 len=200" or "#18 sync /d/x.log -> EIO (injected)".
func (op Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s", op.Seq, op.Kind, op.Path)
	switch op.Kind {
	case Rename:
		fmt.Fprintf(&b, " -> %s", op.NewPath)
	case Read, Write, Allocate:
		fmt.Fprintf(&b, " off=%d len=%d", op.Offset, op.Len)
	case Truncate:
		fmt.Fprintf(&b, " size=%d", op.Offset)
	case Map:
		fmt.Fprintf(&b, " len=%d writable=%t", op.Len, op.Flag == 1)
	case MapSync, MapClose:
		fmt.Fprintf(&b, " len=%d", op.Len)
	case OpenFile:
		fmt.Fprintf(&b, " flags=%s", flagString(op.Flag))
	}
	if op.Err != nil {
		fmt.Fprintf(&b, ": %v", op.Err)
	}
	if op.Injected {
		b.WriteString(" (injected)")
	}
	return b.String()
}

// flagString spells os.OpenFile flags as "O_RDWR|O_CREATE".
func flagString(flag int) string {
	var parts []string
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case os.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_RDONLY")
	}
	for _, f := range []struct {
		bit  int
		name string
	}{{os.O_APPEND, "O_APPEND"}, {os.O_CREATE, "O_CREATE"}, {os.O_EXCL, "O_EXCL"}, {os.O_SYNC, "O_SYNC"}, {os.O_TRUNC, "O_TRUNC"}} {
		if flag&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "|")
}

// FormatOps prints ops one per line, as Op.String does; for a failing test's log.
func FormatOps(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		b.WriteString(op.String())
		b.WriteByte('\n')
	}
	return b.String()
}
