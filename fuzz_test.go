package commitlog

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The log's fuzz targets. Both run on the in-memory file system, so an iteration costs no I/O.
//
//	go test -run='^$' -fuzz='^FuzzRecover$' -fuzztime=500000x .
//	go test -run='^$' -fuzz='^FuzzAppendRaw$' -fuzztime=500000x .
//
// The seed corpus in testdata/fuzz is written by TestFuzzLogSeeds with -update-fuzz-seeds.

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite the root package's fuzz seed corpus in testdata/fuzz")

// Flags of FuzzRecover's third argument.
const (
	fuzzWithIndex  = 1 << 0 // write the second input as the segment's .index file
	fuzzCleanState = 1 << 1 // write a state file saying the last shutdown was clean
)

// fuzzConfig keeps index files small (the memory file system allocates them whole) and index
// entries frequent, so that small inputs have indexes worth checking.
func fuzzConfig() LogConfig {
	return LogConfig{SegmentIndexBytes: 4096, IndexIntervalBytes: 128}
}

var fuzzEpoch = time.UnixMilli(1_700_000_000_000)

func fuzzOpen(fsy fsys.FS, dir string) (*Log, error) {
	return OpenLog(dir, fuzzConfig(), withFS(fsy), WithClock(func() time.Time { return fuzzEpoch }))
}

func fuzzWrite(t *testing.T, fsy fsys.FS, name string, data []byte) {
	t.Helper()
	f, err := fsy.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// fuzzRead is a record as read, kept to compare with the same offset read again.
type fuzzRead struct {
	key, value []byte
	ts         int64
	headers    int
}

func fuzzReadOf(r *Record) fuzzRead {
	return fuzzRead{key: r.Key, value: r.Value, ts: r.Timestamp.UnixMilli(), headers: len(r.Headers)}
}

func (a fuzzRead) equal(b fuzzRead) bool {
	return bytes.Equal(a.key, b.key) && (a.key == nil) == (b.key == nil) &&
		bytes.Equal(a.value, b.value) && (a.value == nil) == (b.value == nil) &&
		a.ts == b.ts && a.headers == b.headers
}

// fuzzReadAll reads the log the way a consumer does, batch by batch from the log start offset,
// and, when the range is small, every offset on its own. Every read returns records or an
// ErrCorrupt; records come back at offsets at or after the one asked for and below the log end
// offset, and the same offset always reads the same record. It returns what it read.
func fuzzReadAll(t *testing.T, l *Log) map[int64]fuzzRead {
	t.Helper()
	lso, leo := l.LogStartOffset(), l.LogEndOffset()
	read := map[int64]fuzzRead{}
	keep := func(from int64, recs []*Record) {
		t.Helper()
		prev := int64(-1)
		for _, r := range recs {
			if r.Offset < from || r.Offset >= leo || r.Offset <= prev {
				t.Fatalf("read from %d returned offset %d (previous %d, log end offset %d)", from, r.Offset, prev, leo)
			}
			prev = r.Offset
			got := fuzzReadOf(r)
			if old, ok := read[r.Offset]; ok && !old.equal(got) {
				t.Fatalf("offset %d read as two different records", r.Offset)
			}
			read[r.Offset] = got
		}
	}
	check := func(from int64, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read at %d: %v, want records or ErrCorrupt", from, err)
		}
	}

	// Batch by batch: a good batch moves to the offset after it, a corrupt one one offset on.
	const maxProbes = 1000
	for off, probes := lso, 0; off < leo && probes < maxProbes; probes++ {
		b, err := l.ReadBatches(nil, off, 4096)
		check(off, err)
		if err != nil {
			off++
			continue
		}
		if len(b) == 0 {
			t.Fatalf("no batch at %d, below the log end offset %d", off, leo)
		}
		next := off
		for pos := 0; pos < len(b); {
			h, err := recordbatch.Check(b[pos:], 0)
			if err != nil {
				t.Fatalf("ReadBatches at %d returned a bad batch at byte %d: %v", off, pos, err)
			}
			if h.LastOffset() < off || h.BaseOffset >= leo {
				t.Fatalf("ReadBatches at %d returned batch [%d, %d], log end offset %d", off, h.BaseOffset, h.LastOffset(), leo)
			}
			recs, err := DecodeRecords(nil, b[pos:pos+h.Size()], off, 0)
			check(off, err)
			keep(off, recs)
			next = h.NextOffset()
			pos += h.Size()
		}
		off = next
	}
	// Offset by offset, when there are few, with ReadRecords and with ReadRecord (twice: the
	// second read may find the batch in the position cache), which agree when both read.
	if leo-lso <= 300 {
		var one Record
		for off := lso; off < leo; off++ {
			recs, err := l.ReadRecords(off, 1)
			check(off, err)
			keep(off, recs)
			for range 2 {
				rerr := l.ReadRecord(off, &one)
				if rerr != nil && !errors.Is(rerr, ErrCorrupt) && !errors.Is(rerr, ErrNoRecordYet) {
					t.Fatalf("ReadRecord at %d: %v, want a record, ErrCorrupt or ErrNoRecordYet", off, rerr)
				}
				if rerr == nil && (one.Offset < off || one.Offset >= leo) {
					t.Fatalf("ReadRecord at %d read offset %d, log end offset %d", off, one.Offset, leo)
				}
				if rerr == nil && err == nil && len(recs) > 0 &&
					(recs[0].Offset != one.Offset || !fuzzReadOf(recs[0]).equal(fuzzReadOf(&one))) {
					t.Fatalf("ReadRecord and ReadRecords at %d read different records", off)
				}
			}
		}
	}
	// Around the range: below it is out of range, at the end nothing.
	if lso > 0 {
		if _, err := l.ReadRecords(lso-1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the log start offset: %v", err)
		}
	}
	if recs, err := l.ReadRecords(leo, 1); err != nil || len(recs) != 0 {
		t.Fatalf("read at the log end offset: %d records, %v", len(recs), err)
	}
	return read
}

// FuzzRecover writes the input as a segment's .log file (and, by flag, a second input as its
// .index, and a state file saying the shutdown was clean) and opens the log. No input may make
// OpenLog panic or fail: a bad batch in the only segment ends the log there. The log that opens
// has LogEndOffset >= LogStartOffset, every offset in it reads records or ErrCorrupt, an append
// works, and after a close and reopen everything read before reads the same.
func FuzzRecover(f *testing.F) {
	f.Fuzz(func(t *testing.T, logData, indexData []byte, flags uint8) {
		fsy := fsys.NewMemory()
		const dir = "p"
		if err := fsy.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fuzzWrite(t, fsy, filepath.Join(dir, segmentName(0)+logSuffix), logData)
		if flags&fuzzWithIndex != 0 {
			fuzzWrite(t, fsy, filepath.Join(dir, segmentName(0)+indexSuffix), indexData)
		}
		if flags&fuzzCleanState != 0 {
			st := logState{clean: true}
			if err := checkpoint.Write(fsy, filepath.Join(dir, stateFileName), st.encode()); err != nil {
				t.Fatal(err)
			}
		}

		l, err := fuzzOpen(fsy, dir)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		lso, leo := l.LogStartOffset(), l.LogEndOffset()
		if leo < lso {
			t.Fatalf("log end offset %d below the log start offset %d", leo, lso)
		}
		read := fuzzReadAll(t, l)

		rec := &Record{Key: []byte("k"), Value: []byte("appended after recovery")}
		err = l.Append(context.Background(), rec)
		if leo > math.MaxInt64-(1<<20) {
			// Offsets near the end of int64 may rightly run out; nothing else may fail.
			if err == nil && rec.Offset != leo {
				t.Fatalf("append at log end offset %d got offset %d", leo, rec.Offset)
			}
			return
		}
		if err != nil {
			t.Fatalf("append at log end offset %d: %v", leo, err)
		}
		if rec.Offset != leo {
			t.Fatalf("append got offset %d, want the log end offset %d", rec.Offset, leo)
		}
		read[leo] = fuzzReadOf(rec)
		if err := l.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}

		l2, err := fuzzOpen(fsy, dir)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		if got := l2.LogStartOffset(); got != lso {
			t.Fatalf("log start offset %d after reopen, was %d", got, lso)
		}
		if got := l2.LogEndOffset(); got != leo+1 {
			t.Fatalf("log end offset %d after reopen, want %d", got, leo+1)
		}
		for off, want := range read {
			recs, err := l2.ReadRecords(off, 1)
			if err != nil || len(recs) == 0 || recs[0].Offset != off {
				t.Fatalf("offset %d read before the reopen; after it: %d records, %v", off, len(recs), err)
			}
			if !fuzzReadOf(recs[0]).equal(want) {
				t.Fatalf("offset %d reads differently after the reopen", off)
			}
		}
	})
}

// FuzzAppendRaw hands the input to AppendAsLeader or AppendAsFollower on an empty log. A rejected
// input returns ErrCorrupt, ErrRecordTooLarge, ErrOffsetOutOfOrder or ErrInvalidTimestamp and
// leaves the log as it was. An accepted one reads back byte for byte (the leader's base offsets rewritten) and
// survives both a clean reopen and a recovery scan after a simulated crash.
func FuzzAppendRaw(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, leader bool) {
		fsy := fsys.NewMemory()
		const dir = "p"
		l, err := fuzzOpen(fsy, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		in := bytes.Clone(data) // the leader's append rewrites its input in place
		ctx := context.Background()
		var first, last int64
		if leader {
			first, last, err = l.AppendAsLeader(ctx, in)
		} else {
			last, err = l.AppendAsFollower(ctx, in)
			if err == nil {
				h, herr := recordbatch.ParseHeader(in, 0)
				if herr != nil {
					t.Fatalf("follower append accepted bytes without a header: %v", herr)
				}
				first = h.BaseOffset
			}
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrRecordTooLarge) && !errors.Is(err, ErrOffsetOutOfOrder) &&
				!errors.Is(err, ErrInvalidTimestamp) {
				t.Fatalf("rejected with %v", err)
			}
			if leo := l.LogEndOffset(); leo != 0 || l.Size() != 0 {
				t.Fatalf("rejected append left log end offset %d, size %d", leo, l.Size())
			}
			// The log still takes appends.
			if err := l.Append(ctx, &Record{Value: []byte("v")}); err != nil {
				t.Fatalf("append after a rejected one: %v", err)
			}
			return
		}
		leo := l.LogEndOffset()
		if last+1 != leo || first > last {
			t.Fatalf("appended [%d, %d], log end offset %d", first, last, leo)
		}
		if leader && first != 0 {
			t.Fatalf("leader append on an empty log assigned first offset %d", first)
		}
		// What the log stores is the input, with the leader's offsets written in.
		check := func(l *Log, when string) {
			t.Helper()
			got, err := l.ReadBatches(nil, first, len(in))
			if err != nil {
				t.Fatalf("%s: read back: %v", when, err)
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("%s: read back %d bytes that differ from the %d appended", when, len(got), len(in))
			}
			if _, err := DecodeRecords(nil, got, 0, 0); err != nil {
				t.Fatalf("%s: accepted batches do not decode: %v", when, err)
			}
			if got := l.LogEndOffset(); got != leo {
				t.Fatalf("%s: log end offset %d, want %d", when, got, leo)
			}
		}
		check(l, "after append")
		if err := l.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		l2, err := fuzzOpen(fsy, dir)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		check(l2, "after a clean reopen")
		if err := l2.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		// A crash: the state says unclean, so every batch is scanned again. What the append
		// accepted, recovery must accept too.
		if err := checkpoint.Write(fsy, filepath.Join(dir, stateFileName), logState{}.encode()); err != nil {
			t.Fatal(err)
		}
		l3, err := fuzzOpen(fsy, dir)
		if err != nil {
			t.Fatalf("reopen after a crash: %v", err)
		}
		defer l3.Close()
		check(l3, "after recovery")
	})
}

// fuzzSeedSegment writes a small log of three batches (one with headers and a null key, one
// gzip-compressed, one plain) on the memory file system, closes it and returns its .log and
// .index bytes.
func fuzzSeedSegment(t *testing.T) (logData, indexData []byte) {
	t.Helper()
	fsy := fsys.NewMemory()
	const dir = "seed"
	cfg := fuzzConfig()
	cfg.IndexIntervalBytes = 1 // an index entry before every batch but the first
	clock := func() time.Time { return fuzzEpoch }
	l, err := OpenLog(dir, cfg, withFS(fsy), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := [][]*Record{
		{
			{Key: []byte("key-0"), Value: []byte("value zero"), Headers: []Header{{Key: "h", Value: []byte("1")}, {Key: "h"}}},
			{Key: nil, Value: []byte("null key"), Timestamp: fuzzEpoch.Add(-time.Second)},
		},
		{
			{Key: []byte("key-2"), Value: bytes.Repeat([]byte("compressible "), 8)},
			{Key: []byte(""), Value: nil},
			{Key: []byte("key-4"), Value: []byte("four"), Timestamp: fuzzEpoch.Add(time.Second)},
		},
		{
			{Key: []byte("key-5"), Value: []byte("five")},
		},
	}
	for i, recs := range calls {
		codec := CompressionNone
		if i == 1 {
			codec = CompressionGzip
		}
		setLogConf(l, func(c *LogConfig) { c.Compression = codec })
		if err := l.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		f, err := fsy.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		size, err := f.Size()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return b
	}
	return read(segmentName(0) + logSuffix), read(segmentName(0) + indexSuffix)
}

// TestFuzzLogSeeds writes the root package's fuzz seed corpus with -update-fuzz-seeds, and
// otherwise checks that the committed seeds are there and that the valid segment still opens as
// three batches of six records.
func TestFuzzLogSeeds(t *testing.T) {
	logData, indexData := fuzzSeedSegment(t)
	if len(indexData) == 0 {
		t.Fatal("the seed segment has no index entries")
	}
	// The torn segment ends in the middle of the third batch; the header-only one keeps the
	// first header and nothing of its records.
	h, err := recordbatch.ParseHeader(logData, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := logData[:len(logData)-10]
	headerOnly := logData[:recordbatch.HeaderSize]
	garbageIndex := bytes.Repeat([]byte{0xff, 0, 0, 0, 0, 0, 0, 0x10}, 3)
	// A follower's input: the seed's batches with their offsets moved up past a gap.
	follower := bytes.Clone(logData)
	for pos := 0; pos < len(follower); {
		bh, err := recordbatch.ParseHeader(follower[pos:], 0)
		if err != nil {
			t.Fatal(err)
		}
		recordbatch.SetBaseOffset(follower[pos:], bh.BaseOffset+100)
		pos += bh.Size()
	}

	// A follower's batch whose offsets end at the largest int64.
	nearMax := bytes.Clone(logData[:h.Size()])
	recordbatch.SetBaseOffset(nearMax, math.MaxInt64-int64(h.LastOffsetDelta))

	type seed struct {
		name string
		args []any
	}
	seeds := map[string][]seed{
		"FuzzRecover": {
			{"valid-3-batches", []any{logData, []byte{}, uint8(0)}},
			{"valid-3-batches-index-clean", []any{logData, indexData, uint8(fuzzWithIndex | fuzzCleanState)}},
			{"valid-3-batches-garbage-index", []any{logData, garbageIndex, uint8(fuzzWithIndex)}},
			{"torn", []any{torn, []byte{}, uint8(0)}},
			{"torn-index-clean", []any{torn, indexData, uint8(fuzzWithIndex | fuzzCleanState)}},
			{"header-only", []any{headerOnly, []byte{}, uint8(0)}},
			{"zeros", []any{make([]byte, 4096), []byte{}, uint8(0)}},
			{"zeros-index-clean", []any{make([]byte, 4096), make([]byte, 64), uint8(fuzzWithIndex | fuzzCleanState)}},
		},
		"FuzzAppendRaw": {
			{"leader-3-batches", []any{logData, true}},
			{"leader-1-batch", []any{logData[:h.Size()], true}},
			{"follower-3-batches", []any{follower, false}},
			{"follower-offset-near-max", []any{nearMax, false}},
			{"torn", []any{torn, true}},
			{"zeros", []any{make([]byte, 128), false}},
		},
	}
	for fuzzName, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", fuzzName)
		for _, s := range list {
			text := "go test fuzz v1\n"
			for _, a := range s.args {
				switch a := a.(type) {
				case []byte:
					text += fmt.Sprintf("[]byte(%q)\n", a)
				case uint8:
					text += fmt.Sprintf("byte(%q)\n", a)
				case bool:
					text += fmt.Sprintf("bool(%v)\n", a)
				}
			}
			path := filepath.Join(dir, s.name)
			if *updateFuzzSeeds {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("seed %s/%s: %v (run go test -run TestFuzzLogSeeds -update-fuzz-seeds)", fuzzName, s.name, err)
			}
		}
	}

	// The valid seed, opened as FuzzRecover opens it, is the three batches appended.
	fsy := fsys.NewMemory()
	if err := fsy.MkdirAll("p", 0o755); err != nil {
		t.Fatal(err)
	}
	fuzzWrite(t, fsy, filepath.Join("p", segmentName(0)+logSuffix), logData)
	l, err := fuzzOpen(fsy, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.LogEndOffset(); got != 6 {
		t.Fatalf("the valid seed opens with log end offset %d, want 6", got)
	}
	if got := len(fuzzReadAll(t, l)); got != 6 {
		t.Fatalf("the valid seed reads %d records, want 6", got)
	}
}
