package commitlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tmpfs test: a child process fills a size-limited tmpfs through record appends, index growth
// and rolls. A store through an index mapping into a page the disk cannot back is a SIGBUS that
// kills the child, so the child fills the disk just before each index is due to start a page,
// and just before a roll, as well as by appending until the disk is full.
const (
	tmpfsChildDirEnv = "COMMITLOG_TMPFS_CHILD_DIR"
	tmpfsSize        = 4 << 20
	tmpfsSegments    = 4 // segments the child fills before it fills the disk by appends alone
)

// tmpfsTestConfig has segments of 512 KiB, an index entry for every batch, and indexes
// preallocated far larger than the disk.
func tmpfsTestConfig() LogConfig {
	return LogConfig{SegmentBytes: 512 << 10, SegmentIndexBytes: 8 << 20, IndexIntervalBytes: 1, Sync: SyncNever}
}

// tmpfsRecord is the record the tmpfs test stores at offset: a small one, so that the indexes
// grow by a page every few hundred appends.
func tmpfsRecord(offset int64) *Record {
	return &Record{Key: []byte(strconv.FormatInt(offset%97, 10)), Value: []byte(strconv.FormatInt(offset, 10)),
		Timestamp: testEpoch.Add(time.Duration(offset) * time.Millisecond), Offset: offset}
}

// tmpfsAtBoundary reports whether l's next append may need a new page of an index of the
// active segment (the next entry of either starts within 64 bytes of a page boundary), or a
// roll.
func tmpfsAtBoundary(l *Log) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.active()
	offsetEntries, timeEntries := s.IndexEntries()
	near := func(entries, size int) bool {
		end := (entries + 1) * size
		return end%4096 < 64 || end%4096 > 4096-64
	}
	return near(offsetEntries, 8) || near(timeEntries, 12) ||
		s.Size() > l.conf().SegmentBytes-200
}

// TestNoSpaceTmpfsChild is the writer TestNoSpaceTmpfs runs in a child process; on its own it skips.
func TestNoSpaceTmpfsChild(t *testing.T) {
	dir := os.Getenv(tmpfsChildDirEnv)
	if dir == "" {
		t.Skip("run by TestNoSpaceTmpfs in a child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	l, err := OpenLog(dir, tmpfsTestConfig())
	if err != nil {
		fail("open: %v", err)
	}
	ctx := context.Background()
	filler := filepath.Join(filepath.Dir(dir), "filler")
	noSpace := 0
	// appendOne appends the next record; it reports whether the append was refused for lack of
	// space, which must leave the log end offset where it was.
	appendOne := func() bool {
		first := l.LogEndOffset()
		err := l.Append(ctx, tmpfsRecord(first))
		if errors.Is(err, ErrNoSpace) {
			noSpace++
			if got := l.LogEndOffset(); got != first {
				fail("append at %d failed with %v but the log end offset is %d", first, err, got)
			}
			if _, err := fmt.Fprintf(os.Stdout, "nospace %d %v\n", first, err); err != nil {
				fail("stdout: %v", err)
			}
			return true
		}
		if err != nil {
			fail("append at %d: %v", first, err)
		}
		if _, err := fmt.Fprintf(os.Stdout, "ack %d 1\n", first); err != nil {
			fail("stdout: %v", err)
		}
		return false
	}
	// Phase 1: at every index page boundary and roll of the first segments, the disk is filled
	// to the last byte, a few appends are tried, and the space is given back.
	for i := 0; len(segmentBases(l)) <= tmpfsSegments; i++ {
		if i == 1_000_000 {
			fail("%d segments after %d appends, %d refused", len(segmentBases(l)), i, noSpace)
		}
		if !tmpfsAtBoundary(l) {
			appendOne()
			continue
		}
		fillDisk(filler)
		for range 3 {
			appendOne()
		}
		if err := os.Remove(filler); err != nil {
			fail("remove filler: %v", err)
		}
		appendOne() // space is back: this one must not be refused for lack of it
		if noSpace > 0 && l.LogEndOffset() == 0 {
			fail("no append succeeded")
		}
	}
	// Phase 2: appends alone fill the disk; then space returns and the log takes appends
	// again, without a reopen, until the disk is full once more.
	refused := noSpace
	for i := 0; noSpace < refused+3; i++ {
		if i == 1_000_000 {
			fail("the disk never filled")
		}
		appendOne()
	}
	ballast := filepath.Join(filepath.Dir(dir), "ballast")
	if _, err := os.Stat(ballast); err != nil {
		fail("ballast: %v", err)
	}
	if err := os.Remove(ballast); err != nil {
		fail("remove ballast: %v", err)
	}
	before := l.LogEndOffset()
	refused = noSpace
	for i := 0; noSpace < refused+3; i++ {
		if i == 1_000_000 {
			fail("the disk never filled again")
		}
		appendOne()
	}
	if l.LogEndOffset() == before {
		fail("no append succeeded after space returned")
	}
	if err := l.Close(); err != nil {
		// A full disk may fail the close's checkpoint; the reopen recovers.
		fmt.Fprintf(os.Stdout, "close %v\n", err)
	}
	os.Exit(0)
}

// fillDisk writes name until the file system is full, to the last page; it ignores the error
// that stops it.
func fillDisk(name string) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	for _, n := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
	}
}

func TestNoSpaceTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a size-limited tmpfs (mount -t tmpfs -o size=4m); CI runs it as root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size="+strconv.Itoa(tmpfsSize)); err != nil {
		t.Skipf("needs root with the right to mount tmpfs (mount: %v)", err)
	}
	t.Cleanup(func() { require.NoError(t, unix.Unmount(mnt, 0)) })
	dir := mnt + "/log"
	require.NoError(t, os.Mkdir(dir, 0o755))
	// The child frees this at the end, so that space returns after the disk filled by appends.
	require.NoError(t, os.WriteFile(mnt+"/ballast", make([]byte, 256<<10), 0o644))

	cmd := exec.Command(os.Args[0], "-test.run=^TestNoSpaceTmpfsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), tmpfsChildDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the child exits normally; stderr:\n%s", firstLines(stderr.String(), 30))

	acked := map[int64]int{}
	var end int64
	noSpace := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "ack":
			first, _ := strconv.ParseInt(f[1], 10, 64)
			n, _ := strconv.Atoi(f[2])
			acked[first] = n
			end = first + int64(n)
		case len(f) > 0 && f[0] == "nospace":
			noSpace++
		}
	}
	require.Positive(t, noSpace, "the child saw ErrNoSpace")
	require.Positive(t, len(acked))

	// Everything acknowledged reads back exactly, and nothing else is there.
	l, err := OpenLog(dir, tmpfsTestConfig())
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, end, l.LogEndOffset())
	got := readAllRecords(t, l)
	require.Len(t, got, int(end))
	for _, r := range got {
		require.Empty(t, killSameRecord(r, tmpfsRecord(r.Offset)), "offset %d", r.Offset)
	}
	segs := len(segmentBases(l))
	require.Greater(t, segs, tmpfsSegments, "the child's appends rolled segments")
	t.Logf("%d appends acknowledged up to offset %d in %d segments, %d refused with ErrNoSpace", len(acked), end, segs, noSpace)
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
