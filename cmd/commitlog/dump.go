package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
	"github.com/commitlog-go/commitlog/internal/txnindex"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newDumpCommand(g *globals) *cobra.Command {
	var records bool
	cmd := &cobra.Command{
		Use:   "dump [--records] FILE...",
		Short: "Print the batches of .log files and the entries of index, snapshot and state files",
		Long: `Print what segment files hold, as Kafka's kafka-dump-log does: for a .log file every batch
(base and last offset, record count, position, size, codec, timestamps, the producer fields:
producer id, epoch, base and last sequence, whether it is transactional and whether it is a
control batch, and whether its CRC is valid), and with --records every record, a transaction
marker (the record of a control batch) as its type, COMMIT or ABORT, and the coordinator epoch;
for a .index file its entries (offset, position), for a .timeindex file its entries (timestamp,
offset); for a .txnindex file its aborted transactions (producer id, first offset, the offset of
the ABORT marker, the last stable offset when it was written); for a .snapshot file (the
producers' state at the offset its name gives) every producer: id, epoch, coordinator epoch, the
first offset of its open transaction (-1 when none), the timestamp of its last write, and its
last batch's first and last sequence, last offset, offset delta and timestamp. The store's own
state files (commitlog-state, commitlog-replication, commitlog-topics, commitlog-producer-ids,
commitlog-reader-NAME) print their contents.

Damage is reported where it is found, and the dump goes on from the next whole batch. Files are
only read. Exit code 1 when a file is damaged or cannot be read.`,
		Example: `  commitlog dump commitlog-data/flights-0/00000000000000000000.log
  commitlog dump --records commitlog-data/flights-0/*.log
  commitlog dump commitlog-data/flights-0/*.txnindex commitlog-data/flights-0/*.snapshot`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("give at least one file to dump")
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error { return dump(cmd.Context(), g, args, records) }),
	}
	cmd.Flags().BoolVar(&records, "records", false, "print every record of each batch, key and value included")
	cmd.Flags().BoolVar(&records, "print-data-log", false, "the same as --records (Kafka's name)")
	cmd.Flags().MarkHidden("print-data-log")
	return cmd
}

// fileKind tells how to dump a file, by its name.
type fileKind int

const (
	kindUnknown fileKind = iota
	kindLog
	kindOffsetIndex
	kindTimeIndex
	kindCheckpoint
	kindSnapshot
	kindTxnIndex
)

func kindOf(path string) fileKind {
	name := filepath.Base(path)
	switch {
	case strings.HasSuffix(name, logSuffix):
		return kindLog
	case strings.HasSuffix(name, indexSuffix):
		return kindOffsetIndex
	case strings.HasSuffix(name, timeIndexSuffix):
		return kindTimeIndex
	case strings.HasSuffix(name, txnIndexSuffix):
		return kindTxnIndex
	case strings.HasSuffix(name, producerstate.SnapshotSuffix):
		return kindSnapshot
	case name == "commitlog-state" || name == "commitlog-replication" || name == "commitlog-topics" ||
		name == "commitlog-producer-ids" || strings.HasPrefix(name, "commitlog-reader-"):
		return kindCheckpoint
	}
	return kindUnknown
}

func dump(ctx context.Context, g *globals, files []string, records bool) error {
	for _, f := range files {
		if kindOf(f) == kindUnknown {
			return usageError("%s: not a .log, .index, .timeindex, .txnindex or .snapshot file, nor a commitlog state file", f)
		}
	}
	out := bufio.NewWriterSize(g.io.out, 64<<10)
	defer out.Flush()
	damaged := 0
	var failed []error
	for _, path := range files {
		if ctx.Err() != nil {
			return errInterrupted // between files: a signal ends the dump
		}
		n, err := dumpFile(out, path, records)
		damaged += n
		if err != nil {
			failed = append(failed, err)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("standard output: %w", err)
	}
	switch {
	case len(failed) == 1 && damaged == 0:
		return failed[0]
	case len(failed) > 0:
		for _, err := range failed {
			fmt.Fprintf(g.io.err, "commitlog dump: %s\n", oneLine(err.Error()))
		}
		return fmt.Errorf("%d of %s could not be read; %s found in the others", len(failed), count(len(files), "file", ""), count(damaged, "damaged place", ""))
	case damaged > 0:
		return fmt.Errorf("%s found (see the output)", count(damaged, "damaged place", ""))
	}
	return nil
}

// dumpFile prints one file and returns the number of damaged places found in it.
func dumpFile(w io.Writer, path string, records bool) (int, error) {
	kind := kindOf(path)
	if kind == kindCheckpoint {
		fmt.Fprintf(w, "Dumping %s\n", path)
		b, err := checkpoint.Read(fsys.OS(), path)
		if err != nil {
			if os.IsNotExist(err) {
				return 0, err
			}
			fmt.Fprintf(w, "damaged: %s\n", oneLine(err.Error()))
			return 1, nil
		}
		w.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			fmt.Fprintln(w)
		}
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", path)
	}
	fmt.Fprintf(w, "Dumping %s\n", path)
	base, named := segmentBase(path)
	switch kind {
	case kindLog:
		if named {
			fmt.Fprintf(w, "Log starting offset: %d\n", base)
		}
		return dumpLog(w, f, st.Size(), records)
	case kindOffsetIndex:
		return dumpOffsetIndex(w, f, st.Size(), base, named)
	case kindTxnIndex:
		return dumpTxnIndex(w, f, st.Size(), path)
	case kindSnapshot:
		if off, ok := producerstate.ParseSnapshotName(filepath.Base(path)); ok {
			fmt.Fprintf(w, "Snapshot offset: %d\n", off)
		}
		return dumpSnapshot(w, f, st.Size(), path)
	default:
		return dumpTimeIndex(w, f, st.Size(), base, named)
	}
}

// dumpLog prints every batch of a .log file (and with records every record) in Kafka's
// kafka-dump-log layout, and the damage it meets.
func dumpLog(w io.Writer, r io.ReaderAt, size int64, records bool) (int, error) {
	damaged := 0
	var line []byte
	err := scanLog(r, size, func(ev *batchEvent) error {
		if ev.err != nil {
			damaged++
		}
		switch {
		case ev.torn:
			fmt.Fprintf(w, "position: %d torn: %v (a write cut short; opening the log truncates it only past the recovery point of an unclean shutdown)\n", ev.pos, ev.err)
			return nil
		case !ev.whole:
			fmt.Fprintf(w, "position: %d damaged: %v; ", ev.pos, ev.err)
			writeResume(w, ev)
			return nil
		}
		line = appendBatchLine(line[:0], ev)
		w.Write(line)
		if !ev.crcOK {
			fmt.Fprintf(w, "| damaged: %v; ", ev.err)
			writeResume(w, ev)
			return nil
		}
		if !ev.decoded {
			fmt.Fprintf(w, "| damaged: %v\n", ev.err)
			return nil
		}
		if records {
			for rec := range ev.batch.Records() {
				var bad bool
				line, bad = appendRecordLine(line[:0], &ev.batch, &rec)
				w.Write(line)
				if bad {
					damaged++
				}
			}
		}
		return nil
	})
	return damaged, err
}

// writeResume says where the scan goes on after damage.
func writeResume(w io.Writer, ev *batchEvent) {
	fmt.Fprintf(w, "the next whole batch is at position %d (%d bytes skipped)\n", ev.pos+ev.size, ev.size)
}

// appendBatchLine writes a batch's line in kafka-dump-log's words, the base timestamp and CRC
// added.
func appendBatchLine(b []byte, ev *batchEvent) []byte {
	h := &ev.hdr
	lastSeq := int64(-1)
	if h.BaseSequence >= 0 {
		lastSeq = (int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (1 << 31)
	}
	tsType := "CreateTime"
	if h.Attributes.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	b = fmt.Appendf(b, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d baseTimestamp: %d size: %d magic: %d compresscodec: %s crc: %08x crcValid: %t\n",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, lastSeq, h.ProducerID, h.ProducerEpoch,
		h.PartitionLeaderEpoch, h.Attributes.Transactional(), h.Attributes.Control(), ev.pos, tsType, h.MaxTimestamp,
		h.BaseTimestamp, h.Size(), h.Magic, h.Attributes.Codec(), h.CRC, ev.crcOK)
	return b
}

// appendRecordLine writes a record's line: kafka-dump-log's, key and payload included; for the
// record of a control batch, what it says (a transaction marker: "endTxnMarker: COMMIT
// coordinatorEpoch: 3") instead of its key and payload. It reports whether the record is a
// control record that does not decode, which the line says (damage).
func appendRecordLine(b []byte, batch *recordbatch.Batch, r *recordbatch.Record) ([]byte, bool) {
	h := &batch.Header
	seq := int64(-1)
	if h.BaseSequence >= 0 {
		seq = (int64(h.BaseSequence) + int64(r.OffsetDelta)) % (1 << 31)
	}
	tsType := "CreateTime"
	if h.Attributes.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	keySize := len(r.Key)
	if r.Key == nil {
		keySize = -1
	}
	valueSize := len(r.Value)
	if r.Value == nil {
		valueSize = -1
	}
	b = fmt.Appendf(b, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [",
		h.RecordOffset(r), tsType, h.RecordTimestamp(r), keySize, valueSize, seq)
	for i, hd := range r.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPrintable(b, []byte(hd.Key))
	}
	b = append(b, ']')
	if h.Attributes.Control() {
		b, ok := appendControl(b, r)
		return append(b, '\n'), !ok
	}
	if r.Key != nil {
		b = append(b, " key: "...)
		b = appendPrintable(b, r.Key)
	}
	if r.Value != nil {
		b = append(b, " payload: "...)
		b = appendPrintable(b, r.Value)
	}
	return append(b, '\n'), false
}

// appendControl writes what a control record says, as kafka-dump-log does: its key is Kafka's
// ControlRecordKey (version, type); for a transaction marker (ABORT, COMMIT) its value is an
// EndTxnMarker (version, coordinator epoch). Other control types (KRaft's) print their type only.
// It reports false, with the key and payload quoted, when the record does not decode.
func appendControl(b []byte, r *recordbatch.Record) ([]byte, bool) {
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(r.Key); err != nil || r.Key == nil {
		b = fmt.Appendf(b, " damaged: the control record's key is not a ControlRecordKey (version int16, type int16): %d bytes", len(r.Key))
		return appendRaw(b, r), false
	}
	if key.Type != kmsg.ControlRecordKeyTypeAbort && key.Type != kmsg.ControlRecordKeyTypeCommit {
		return fmt.Appendf(b, " controlType: %s(%d)", key.Type, int16(key.Type)), true
	}
	var m kmsg.EndTxnMarker
	if err := m.ReadFrom(r.Value); err != nil || r.Value == nil {
		b = fmt.Appendf(b, " damaged: the %s marker's value is not an EndTxnMarker (version int16, coordinator epoch int32): %d bytes", key.Type, len(r.Value))
		return appendRaw(b, r), false
	}
	return fmt.Appendf(b, " endTxnMarker: %s coordinatorEpoch: %d", key.Type, m.CoordinatorEpoch), true
}

// appendRaw writes a record's key and payload, quoted (a damaged control record's).
func appendRaw(b []byte, r *recordbatch.Record) []byte {
	if r.Key != nil {
		b = append(b, " key: "...)
		b = strconv.AppendQuote(b, string(r.Key))
	}
	if r.Value != nil {
		b = append(b, " payload: "...)
		b = strconv.AppendQuote(b, string(r.Value))
	}
	return b
}

// appendPrintable writes p as it is when it is UTF-8 text without control characters, and as a
// quoted Go string otherwise, so that binary data cannot garble the terminal or the line.
func appendPrintable(b, p []byte) []byte {
	if utf8.Valid(p) {
		ok := true
		for _, r := range string(p) {
			if unicode.IsControl(r) {
				ok = false
				break
			}
		}
		if ok {
			return append(b, p...)
		}
	}
	return strconv.AppendQuote(b, string(p))
}

func dumpOffsetIndex(w io.Writer, r io.ReaderAt, size, base int64, named bool) (int, error) {
	entries, zeros, partial, err := indexEntries(r, size, offsetEntrySize)
	if err != nil {
		return 0, err
	}
	if !named {
		fmt.Fprintln(w, "(the file's name gives no base offset: offsets are relative)")
	}
	for _, e := range entries {
		rel, pos := offsetEntry(e)
		fmt.Fprintf(w, "offset: %d position: %d\n", base+int64(rel), pos)
	}
	return indexTail(w, zeros, partial, offsetEntrySize), nil
}

func dumpTimeIndex(w io.Writer, r io.ReaderAt, size, base int64, named bool) (int, error) {
	entries, zeros, partial, err := indexEntries(r, size, timeEntrySize)
	if err != nil {
		return 0, err
	}
	if !named {
		fmt.Fprintln(w, "(the file's name gives no base offset: offsets are relative)")
	}
	for _, e := range entries {
		ts, rel := timeEntry(e)
		fmt.Fprintf(w, "timestamp: %d offset: %d\n", ts, base+int64(rel))
	}
	return indexTail(w, zeros, partial, timeEntrySize), nil
}

// indexTail reports an index's unused preallocated entries and a partial entry at its end (the
// latter is damage).
func indexTail(w io.Writer, zeros, partial, entrySize int) int {
	if zeros > 0 {
		fmt.Fprintf(w, "(%s of zeros follow: the preallocated space of an index in use, or left by a crash)\n", count(zeros, "unused entry", "unused entries"))
	}
	if partial > 0 {
		fmt.Fprintf(w, "damaged: %d bytes after the last whole %d-byte entry\n", partial, entrySize)
		return 1
	}
	return 0
}

// maxStateFile bounds the .snapshot and .txnindex files dump and verify read whole: a larger
// one is reported rather than read (a snapshot of a million producers is 46 MB).
const maxStateFile = 1 << 30

// readSmall reads a whole file of size bytes, refusing one above maxStateFile.
func readSmall(r io.ReaderAt, size int64, path string) ([]byte, error) {
	if size > maxStateFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this command reads", path, size, maxStateFile)
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// dumpTxnIndex prints a .txnindex file's aborted transactions as kafka-dump-log does. A file
// that does not decode (a partial entry, an entry of another version) prints the entries before
// the damage, then what is wrong.
func dumpTxnIndex(w io.Writer, r io.ReaderAt, size int64, path string) (int, error) {
	b, err := readSmall(r, size, path)
	if err != nil {
		return 0, err
	}
	whole := len(b) - len(b)%txnindex.EntrySize
	damaged := 0
	for pos := 0; pos < whole; pos += txnindex.EntrySize {
		txns, err := txnindex.Decode(b[pos : pos+txnindex.EntrySize])
		if err != nil {
			fmt.Fprintf(w, "damaged: %s: entry %d at byte %d: %s\n", path, pos/txnindex.EntrySize, pos, txnIndexError(err))
			damaged++
			continue
		}
		a := txns[0]
		fmt.Fprintf(w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			txnindex.Version, a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
	}
	if whole < len(b) {
		_, err := txnindex.Decode(b)
		fmt.Fprintf(w, "damaged: %s: %s\n", path, txnIndexError(err))
		damaged++
	}
	return damaged, nil
}

// txnIndexError is what txnindex.Decode's error says, without the package's prefix and the
// entry number of a one-entry decode.
func txnIndexError(err error) string {
	s := strings.TrimPrefix(err.Error(), txnindex.ErrCorrupt.Error()+": ")
	s = strings.TrimPrefix(s, "entry 0 at byte 0: ")
	return "corrupt transaction index: " + s
}

// dumpSnapshot prints a producer snapshot's entries as kafka-dump-log does, one producer a line.
// A snapshot that does not decode (Kafka's CorruptSnapshotException) prints what is wrong.
func dumpSnapshot(w io.Writer, r io.ReaderAt, size int64, path string) (int, error) {
	b, err := readSmall(r, size, path)
	if err != nil {
		return 0, err
	}
	entries, err := producerstate.DecodeSnapshot(b)
	if err != nil {
		fmt.Fprintf(w, "damaged: %s: %s\n", path, snapshotError(err))
		return 1, nil
	}
	for i := range entries {
		e := &entries[i]
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d",
			e.ProducerID, e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp)
		if n := len(e.Batches); n > 0 {
			m := e.Batches[n-1]
			fmt.Fprintf(w, " firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				m.FirstSeq, m.LastSeq, m.LastOffset, m.LastOffset-m.FirstOffset, m.Timestamp)
		}
		fmt.Fprintln(w)
	}
	return 0, nil
}

// snapshotError is what DecodeSnapshot's error says, without the library's prefix.
func snapshotError(err error) string {
	return strings.TrimPrefix(err.Error(), "commitlog: ")
}
