package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/producerstate"
	"github.com/commitlog-go/commitlog/internal/txnindex"
	"github.com/spf13/cobra"
)

func newVerifyCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every segment and index under --dir, changing nothing",
		Long: `Check every partition folder of the store in --dir (or --dir itself when it is one partition's
folder): each .log segment batch by batch (length, magic, CRC-32C, records against their header,
offsets increasing within and across segments), each .index entry (increasing, pointing at the
start of a batch that holds its offset, inside the data) and each .timeindex entry (increasing,
offsets inside the segment, no timestamp above the records'), each .txnindex (whole 34-byte
entries of version 0, ABORT marker offsets increasing and inside the segment), each producer
.snapshot (version, CRC, entry count), and the store's checksummed state files. The transaction
coordinator's internal logs, the folders __transaction_state-0 and __consumer_offsets-0, are
checked as partitions are, and counted apart in the summary. Preallocated, unused index space (entries of zeros at the end) is not a problem; an
incomplete batch at the end of a segment is (a write cut short: opening the log truncates it
only when it lies past the recovery point of an unclean shutdown, and keeps it otherwise, as it
keeps every other bad batch for verify to report).

Offsets missing between segments are reported when it is clear that a segment file is gone:
Kafka allows a segment to end short of the next one's base offset (compaction removes records,
and a follower copies its leader's gaps), so a gap is reported only in a partition where nothing
shows compaction: every batch holds one record per offset of its range, each batch of a segment
starts right after the one before, every segment's first batch starts at its base offset, and
the segment before the gap is undamaged. Offsets missing at the start are reported when the first
segment's base offset is above the log start offset checkpointed in the store's
log-start-offset-checkpoint (or, in a store written before it had one, the folder's
commitlog-state) (retention
moves that offset before it deletes a segment, so a segment below it may remain, never the
reverse). Offsets missing at the end are reported when the log ends below the recovery point
checkpointed in recovery-point-offset-checkpoint (or commitlog-state) (every offset below it was flushed; after a clean close it is the
log end offset of the close), unless segment files renamed *.deleted show a truncation or
retention in progress (a TruncateTo within the last segment stopped between its cut and its
checkpoint shows the same, and is named in the finding).

Files are only read: verify may run on a store another process has open, though what that
process is writing may show as an incomplete batch.

Prints one line per problem (file, position, offset, what is wrong) and a summary on standard
error; with --output json, one JSON document instead of the lines: the counts (partitions,
internal_partitions, segments, batches, records) and the problems (file, position, offset (-1:
unknown), what). Exit code 0 when everything is sound, 1 when a problem was found.`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return verify(cmd.Context(), g, output == "json")
		}),
	}
	outputFlag(cmd, &output)
	return cmd
}

// verifyReport is verify --output json's document.
type verifyReport struct {
	Dir                string          `json:"dir"`
	Partitions         int64           `json:"partitions"`
	InternalPartitions int64           `json:"internal_partitions"`
	Segments           int64           `json:"segments"`
	Batches            int64           `json:"batches"`
	Records            int64           `json:"records"`
	Problems           []verifyProblem `json:"problems"`
}

type verifyProblem struct {
	File     string `json:"file"`
	Position int64  `json:"position"`
	Offset   int64  `json:"offset"`
	What     string `json:"what"`
}

// problem is one thing verify found wrong.
type problem struct {
	file   string
	pos    int64 // byte position in file
	offset int64 // -1 when unknown
	what   string
}

func (p problem) String() string {
	off := "-"
	if p.offset >= 0 {
		off = strconv.FormatInt(p.offset, 10)
	}
	return fmt.Sprintf("%s: position %d, offset %s: %s", p.file, p.pos, off, p.what)
}

type verifier struct {
	ctx      context.Context // a signal ends the check between partitions
	out      io.Writer
	problems int
	// collected holds the problems, for --output json, when collect is set; otherwise each is
	// printed as found.
	collect   bool
	collected []verifyProblem

	partitions, segments, batches, records int64
	internal                               int64 // of the partitions, the coordinator's logs

	// dirCheckpoints caches, by log directory and file name, the offsets of the directory's
	// recovery-point-offset-checkpoint and log-start-offset-checkpoint by partition folder.
	dirCheckpoints map[string]map[string]int64
}

// The log directory's checkpoint files, in Kafka's OffsetCheckpointFile format (LogManager).
const (
	recoveryPointCheckpoint = "recovery-point-offset-checkpoint"
	logStartCheckpoint      = "log-start-offset-checkpoint"
)

// dirOffsets returns the offsets the checkpoint file name of log directory dir holds, by
// partition folder ("<topic>-<partition>"): none when there is no such file. A file that does not
// read as Kafka's format (commitlog.DecodeOffsetCheckpoint) is reported, once, and gives none.
func (v *verifier) dirOffsets(dir, name string) map[string]int64 {
	path := filepath.Join(dir, name)
	if got, ok := v.dirCheckpoints[path]; ok {
		return got
	}
	if v.dirCheckpoints == nil {
		v.dirCheckpoints = map[string]map[string]int64{}
	}
	out := map[string]int64{}
	v.dirCheckpoints[path] = out
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.report(problem{file: path, offset: -1, what: "unreadable: " + err.Error()})
		}
		return out
	}
	m, err := commitlog.DecodeOffsetCheckpoint(name, b)
	if err != nil {
		v.report(problem{file: path, offset: -1, what: "not Kafka's offset checkpoint format: " + err.Error()})
		return out
	}
	for topic, parts := range m {
		for p, off := range parts {
			out[topic+"-"+strconv.Itoa(int(p))] = off
		}
	}
	return out
}

func (v *verifier) report(p problem) {
	v.problems++
	if v.collect {
		v.collected = append(v.collected, verifyProblem{File: p.file, Position: p.pos, Offset: p.offset, What: p.what})
		return
	}
	fmt.Fprintln(v.out, p)
}

func verify(ctx context.Context, g *globals, asJSON bool) error {
	info, err := os.Stat(g.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store at %s (set --dir)", g.dir)
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", g.dir)
	}
	v := &verifier{ctx: ctx, out: g.io.out, collect: asJSON}
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return strings.HasSuffix(e.Name(), logSuffix) }) {
		// One partition's folder, as OpenLog keeps it.
		if err := v.partition(g.dir); err != nil {
			return err
		}
	} else if err := v.store(g.dir, entries); err != nil {
		return err
	}
	parts := count(v.partitions, "partition", "")
	if v.internal > 0 {
		parts += fmt.Sprintf(" (%d of them the transaction coordinator's internal logs)", v.internal)
	}
	if asJSON {
		rep := verifyReport{Dir: g.dir, Partitions: v.partitions, InternalPartitions: v.internal, Segments: v.segments,
			Batches: v.batches, Records: v.records, Problems: v.collected}
		if rep.Problems == nil {
			rep.Problems = []verifyProblem{}
		}
		if err := writeJSON(g.io.out, rep); err != nil {
			return err
		}
	}
	summary := fmt.Sprintf("verified %s, %s, %s, %s in %s", parts, count(v.segments, "segment", ""), count(v.batches, "batch", "batches"), count(v.records, "record", ""), g.dir)
	if v.problems > 0 {
		return dataError(fmt.Errorf("%s: %s", summary, count(v.problems, "problem", "")))
	}
	fmt.Fprintf(g.io.err, "%s: no problems\n", summary)
	return nil
}

// store checks a store's folder: its state files, and each partition folder.
func (v *verifier) store(dir string, entries []fs.DirEntry) error {
	folders := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		// A folder named "commitlog-reader-..." is a partition of a topic whose name the store
		// reserves now but opens still; it is checked below as partitions are.
		if !e.IsDir() && (name == "commitlog-topics" || name == "commitlog-producer-ids" ||
			strings.HasPrefix(name, "commitlog-reader-") && !strings.HasSuffix(name, checkpoint.TempSuffix)) {
			if _, err := v.checkpointFile(path); err != nil {
				return err
			}
			continue
		}
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 || !isPartitionFolder(name) {
			continue
		}
		folders[name] = true
		if internalLogs[name] {
			v.internal++
		}
		if err := v.partition(path); err != nil {
			return err
		}
	}
	// Every partition of every configured topic has its folder.
	b, err := checkpoint.Read(fsys.OS(), filepath.Join(dir, "commitlog-topics"))
	if err != nil {
		return nil // missing (a folder from a Kafka broker) or reported above
	}
	var topics map[string]struct {
		Partitions int32 `json:"partitions"`
	}
	if err := json.Unmarshal(b, &topics); err != nil {
		v.report(problem{file: filepath.Join(dir, "commitlog-topics"), offset: -1, what: "topic configurations are not JSON: " + err.Error()})
		return nil
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for p := range topics[name].Partitions {
			folder := name + "-" + strconv.Itoa(int(p))
			if !folders[folder] {
				v.report(problem{file: filepath.Join(dir, folder), offset: -1, what: fmt.Sprintf("partition folder of topic %s (%d partitions) is missing", name, topics[name].Partitions)})
			}
		}
	}
	return nil
}

// internalLogs are the folders of the transaction coordinator's internal logs: its transactions'
// state, and the reader positions committed in transactions (Kafka's __transaction_state and
// __consumer_offsets, one partition each).
var internalLogs = map[string]bool{"__transaction_state-0": true, "__consumer_offsets-0": true}

// isPartitionFolder reports whether name is "<topic>-<partition>" (not a folder being deleted).
func isPartitionFolder(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return false
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkpointFile checks one of the store's checksummed state files.
func (v *verifier) checkpointFile(path string) ([]byte, error) {
	b, err := checkpoint.Read(fsys.OS(), path)
	switch {
	case errors.Is(err, checkpoint.ErrCorrupt):
		what := strings.TrimPrefix(err.Error(), "read checkpoint "+path+": ")
		what = "damaged state file: " + strings.TrimPrefix(what, checkpoint.ErrCorrupt.Error()+": ")
		v.report(problem{file: path, offset: -1, what: oneLine(what)})
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	}
	return b, err
}

// segmentInfo is what verify learned of a segment's .log file.
type segmentInfo struct {
	path       string
	base       int64
	size       int64
	batches    []batchInfo // whole, CRC-valid batches, in file order
	starts     map[int64]*batchInfo
	damaged    bool  // some region could not be read as batches
	lastOffset int64 // of the last valid batch; base-1 when none
	// holes is set when a batch shows what compaction leaves: a record count below its offset
	// range, a batch not starting right after the previous one, a first batch above the base.
	holes bool
}

type batchInfo struct {
	pos, base, last, maxTS int64
	valid                  bool
	runningMaxTS           int64 // largest MaxTimestamp of the valid batches up to this one
}

// partition checks one partition's folder: its segments in offset order, their indexes, and its
// state file.
func (v *verifier) partition(dir string) error {
	if v.ctx.Err() != nil {
		return errInterrupted
	}
	v.partitions++
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var bases []int64
	var snapshots []string
	// The checkpointed log start offset and recovery point (-1 when unknown): from the log
	// directory's checkpoint files, or from the folder's commitlog-state in a store written
	// before them.
	logStart, recoveryPoint := int64(-1), int64(-1)
	logStartFile := filepath.Join(filepath.Dir(dir), logStartCheckpoint)
	recoveryFile := filepath.Join(filepath.Dir(dir), recoveryPointCheckpoint)
	if off, ok := v.dirOffsets(filepath.Dir(dir), logStartCheckpoint)[filepath.Base(dir)]; ok {
		logStart = off
	}
	if off, ok := v.dirOffsets(filepath.Dir(dir), recoveryPointCheckpoint)[filepath.Base(dir)]; ok {
		recoveryPoint = off
	}
	retiring := false // segment files renamed *.deleted are there
	for _, e := range entries {
		name := e.Name()
		if name == "commitlog-state" {
			b, err := v.checkpointFile(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			var ls, rp int64
			if _, err := fmt.Sscanf(string(b), "log-start-offset %d\n", &ls); err == nil && ls >= 0 {
				logStart, logStartFile = ls, filepath.Join(dir, name)
			}
			if _, err := fmt.Sscanf(string(b), "log-start-offset %d\nrecovery-point %d\n", new(int64), &rp); err == nil && rp >= 0 {
				recoveryPoint, recoveryFile = rp, filepath.Join(dir, name)
			}
			continue
		}
		if strings.HasSuffix(name, ".deleted") {
			retiring = true
		}
		if strings.HasSuffix(name, producerstate.SnapshotSuffix) && e.Type().IsRegular() {
			snapshots = append(snapshots, name)
			continue
		}
		if !strings.HasSuffix(name, logSuffix) || !e.Type().IsRegular() {
			continue
		}
		base, ok := segmentBase(name)
		if !ok || name != fmt.Sprintf("%020d%s", base, logSuffix) {
			v.report(problem{file: filepath.Join(dir, name), offset: -1, what: "a .log file whose name is not a 20-digit base offset"})
			continue
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	prevLast := int64(-1)
	var segs []*segmentInfo
	for i, base := range bases {
		path := filepath.Join(dir, fmt.Sprintf("%020d%s", base, logSuffix))
		if base <= prevLast {
			v.report(problem{file: path, offset: base, what: fmt.Sprintf("segment base offset %d is not above the previous segment's last offset %d", base, prevLast)})
		}
		seg, err := v.segment(path, base, i == len(bases)-1, prevLast)
		if err != nil {
			return err
		}
		if seg.lastOffset >= base {
			prevLast = seg.lastOffset
		}
		segs = append(segs, seg)
		if err := v.offsetIndex(seg); err != nil {
			return err
		}
		if err := v.timeIndex(seg); err != nil {
			return err
		}
		if err := v.txnIndex(seg); err != nil {
			return err
		}
	}
	for _, name := range snapshots {
		if err := v.snapshot(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	v.missingSegments(segs, logStart, logStartFile)
	if !retiring {
		v.missingEnd(segs, recoveryPoint, recoveryFile)
	}
	return nil
}

// missingEnd reports offsets below the recovery point checkpointed in file (recoveryPoint, -1
// when unknown) that lie past the log's end: every offset below it was
// flushed, and the log reached it (after a clean close it is the log end offset of the close), so
// the segment that held them is gone. Not reported while segment files renamed *.deleted are
// there (a truncation or retention stopped before checkpointing), nor past a damaged segment's
// end (reported already). A TruncateTo within the last segment that stopped between its cut and
// its checkpoint leaves no trace of itself: the finding names that cause too.
func (v *verifier) missingEnd(segs []*segmentInfo, recoveryPoint int64, file string) {
	if recoveryPoint < 0 || len(segs) == 0 {
		return
	}
	last := segs[len(segs)-1]
	if last.damaged {
		return
	}
	end := last.base
	for _, s := range segs {
		if len(s.batches) > 0 {
			end = max(end, s.lastOffset+1)
		}
	}
	if end >= recoveryPoint {
		return
	}
	v.report(problem{file: file, offset: end,
		what: fmt.Sprintf("offsets %d to %d are in no segment: the recovery point in %s is %d (every offset below it was flushed), past the log's end %d in %s (a segment file is missing, or a TruncateTo stopped before its checkpoint)",
			end, recoveryPoint-1, filepath.Base(file), recoveryPoint, end, filepath.Base(last.path))})
}

// missingSegments reports offsets that lie in no segment where a segment file is clearly gone
// (see the command's help): before the first segment, against the log start offset logStart
// checkpointed in file (-1 when unknown); between two segments, in a partition without a trace of compaction.
func (v *verifier) missingSegments(segs []*segmentInfo, logStart int64, file string) {
	if logStart >= 0 && len(segs) == 0 {
		v.report(problem{file: file, offset: logStart,
			what: fmt.Sprintf("no segment file, though the log start offset is %d: every segment is missing", logStart)})
	}
	if logStart >= 0 && len(segs) > 0 && segs[0].base > logStart {
		v.report(problem{file: segs[0].path, offset: logStart,
			what: fmt.Sprintf("offsets %d to %d are in no segment: the log start offset in %s is %d, below this first segment's base offset %d (a segment file is missing)",
				logStart, segs[0].base-1, filepath.Base(file), logStart, segs[0].base)})
	}
	if slices.ContainsFunc(segs, func(s *segmentInfo) bool { return s.holes }) {
		return // compaction, or a follower's copy of it, explains gaps
	}
	for i := 1; i < len(segs); i++ {
		prev, next := segs[i-1], segs[i]
		if prev.damaged || len(prev.batches) == 0 || prev.lastOffset+1 >= next.base {
			continue
		}
		v.report(problem{file: next.path, offset: prev.lastOffset + 1,
			what: fmt.Sprintf("offsets %d to %d are in no segment: a segment file is missing between %s and this one (no batch of the partition shows the holes that compaction leaves)",
				prev.lastOffset+1, next.base-1, filepath.Base(prev.path))})
	}
}

// segment checks a .log file batch by batch.
func (v *verifier) segment(path string, base int64, last bool, prevLast int64) (*segmentInfo, error) {
	v.segments++
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	seg := &segmentInfo{path: path, base: base, size: st.Size(), starts: map[int64]*batchInfo{}, lastOffset: base - 1}
	prev := prevLast
	runningMax := int64(-1)
	err = scanLog(f, st.Size(), func(ev *batchEvent) error {
		off := int64(-1)
		if ev.hdrOK {
			off = ev.hdr.BaseOffset
		}
		if ev.err != nil {
			seg.damaged = true
			what := ev.err.Error()
			switch {
			case ev.torn && last:
				what += " (a write cut short at the end of the log; opening the log truncates it when past the recovery point of an unclean shutdown)"
			case ev.torn:
				what += " (in a sealed segment)"
			case !ev.whole || !ev.crcOK:
				what += fmt.Sprintf("; %d bytes up to the next whole batch", ev.size)
			}
			v.report(problem{file: path, pos: ev.pos, offset: off, what: what})
			if ev.hdrOK {
				seg.starts[ev.pos] = &batchInfo{pos: ev.pos, base: ev.hdr.BaseOffset, last: ev.hdr.LastOffset()}
			}
			return nil
		}
		v.batches++
		v.records += int64(ev.hdr.RecordCount)
		h := &ev.hdr
		switch {
		case h.BaseOffset < base:
			v.report(problem{file: path, pos: ev.pos, offset: h.BaseOffset, what: fmt.Sprintf("base offset %d is below the segment's base offset %d", h.BaseOffset, base)})
		case h.BaseOffset <= prev:
			v.report(problem{file: path, pos: ev.pos, offset: h.BaseOffset, what: fmt.Sprintf("base offset %d is not above the previous batch's last offset %d", h.BaseOffset, prev)})
		}
		if int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 ||
			(len(seg.batches) == 0 && h.BaseOffset != base) ||
			(len(seg.batches) > 0 && h.BaseOffset != seg.batches[len(seg.batches)-1].last+1) {
			seg.holes = true
		}
		prev = max(prev, h.LastOffset())
		runningMax = max(runningMax, h.MaxTimestamp)
		b := batchInfo{pos: ev.pos, base: h.BaseOffset, last: h.LastOffset(), maxTS: h.MaxTimestamp, valid: true, runningMaxTS: runningMax}
		seg.batches = append(seg.batches, b)
		seg.starts[ev.pos] = &seg.batches[len(seg.batches)-1]
		seg.lastOffset = max(seg.lastOffset, h.LastOffset())
		return nil
	})
	// seg.starts points into seg.batches, which append may have moved: rebuild.
	for i := range seg.batches {
		seg.starts[seg.batches[i].pos] = &seg.batches[i]
	}
	return seg, err
}

// indexFile reads the entries of a segment's index file with the given suffix, reporting bytes
// after the last whole entry. A missing file (rebuilt from the log when it opens) gives nil
// entries and no error.
func (v *verifier) indexFile(seg *segmentInfo, suffix string, entrySize int) (string, [][]byte, error) {
	path := strings.TrimSuffix(seg.path, logSuffix) + suffix
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return path, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return path, nil, err
	}
	entries, _, partial, err := indexEntries(f, st.Size(), entrySize)
	if err != nil {
		return path, nil, err
	}
	if partial > 0 {
		v.report(problem{file: path, pos: st.Size() - int64(partial), offset: -1, what: fmt.Sprintf("%d bytes after the last whole %d-byte entry", partial, entrySize)})
	}
	if entries == nil {
		entries = [][]byte{}
	}
	return path, entries, nil
}

// offsetIndex checks a segment's .index file, when it has one.
func (v *verifier) offsetIndex(seg *segmentInfo) error {
	path, entries, err := v.indexFile(seg, indexSuffix, offsetEntrySize)
	if err != nil || entries == nil {
		return err
	}
	var prevRel, prevPos uint32
	for i, e := range entries {
		rel, pos := offsetEntry(e)
		p := problem{file: path, pos: int64(i) * offsetEntrySize, offset: seg.base + int64(rel)}
		var what string
		switch {
		case rel > math.MaxInt32:
			what = fmt.Sprintf("entry %d: relative offset %#x does not fit a signed 32-bit integer", i, rel)
		case pos > math.MaxInt32:
			what = fmt.Sprintf("entry %d: position %#x does not fit a signed 32-bit integer", i, pos)
		case i > 0 && rel <= prevRel:
			what = fmt.Sprintf("entry %d: offset %d is not above the previous entry's %d", i, p.offset, seg.base+int64(prevRel))
		case i > 0 && pos <= prevPos:
			what = fmt.Sprintf("entry %d: position %d is not above the previous entry's %d", i, pos, prevPos)
		case int64(pos) >= seg.size:
			what = fmt.Sprintf("entry %d: position %d points past the end of the log (%d bytes)", i, pos, seg.size)
		default:
			b, ok := seg.starts[int64(pos)]
			switch {
			case !ok && !seg.damaged:
				what = fmt.Sprintf("entry %d: position %d is not the start of a batch", i, pos)
			case ok && b.valid && (p.offset < b.base || p.offset > b.last):
				what = fmt.Sprintf("entry %d: offset %d is not in the batch at position %d (offsets %d to %d)", i, p.offset, pos, b.base, b.last)
			}
		}
		if what != "" {
			p.what = what
			v.report(p)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// timeIndex checks a segment's .timeindex file, when it has one.
func (v *verifier) timeIndex(seg *segmentInfo) error {
	path, entries, err := v.indexFile(seg, timeIndexSuffix, timeEntrySize)
	if err != nil || entries == nil {
		return err
	}
	var prevTS int64
	var prevRel uint32
	for i, e := range entries {
		ts, rel := timeEntry(e)
		p := problem{file: path, pos: int64(i) * timeEntrySize, offset: seg.base + int64(rel)}
		var what string
		switch {
		case ts < 0:
			what = fmt.Sprintf("entry %d: negative timestamp %d", i, ts)
		case i > 0 && ts <= prevTS:
			what = fmt.Sprintf("entry %d: timestamp %d is not above the previous entry's %d", i, ts, prevTS)
		case rel > math.MaxInt32:
			what = fmt.Sprintf("entry %d: relative offset %#x does not fit a signed 32-bit integer", i, rel)
		case i > 0 && rel < prevRel:
			what = fmt.Sprintf("entry %d: offset %d is below the previous entry's %d", i, p.offset, seg.base+int64(prevRel))
		case p.offset > seg.lastOffset && !seg.damaged:
			what = fmt.Sprintf("entry %d: offset %d is past the segment's last offset %d", i, p.offset, seg.lastOffset)
		case !seg.damaged:
			// An entry is the largest timestamp so far and the offset where it was seen: it
			// cannot be newer than every batch up to the one holding that offset.
			j := sort.Search(len(seg.batches), func(k int) bool { return seg.batches[k].last >= p.offset })
			if j < len(seg.batches) && ts > seg.batches[j].runningMaxTS {
				what = fmt.Sprintf("entry %d: timestamp %d is above every record's up to offset %d (the largest is %d)", i, ts, p.offset, seg.batches[j].runningMaxTS)
			}
		}
		if what != "" {
			p.what = what
			v.report(p)
		}
		prevTS, prevRel = ts, rel
	}
	return nil
}

// readStateFile reads a whole .txnindex or .snapshot file; a missing one gives nil and no error.
func readStateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b, err := readSmall(f, st.Size(), path)
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

// txnIndex checks a segment's .txnindex file, when it has one: whole 34-byte entries of version 0
// whose ABORT marker offsets (lastOffset) increase, lie in the segment, and follow the
// transaction's first offset.
func (v *verifier) txnIndex(seg *segmentInfo) error {
	path := strings.TrimSuffix(seg.path, logSuffix) + txnIndexSuffix
	b, err := readStateFile(path)
	if err != nil || b == nil {
		return err
	}
	whole := len(b) - len(b)%txnindex.EntrySize
	if whole < len(b) {
		v.report(problem{file: path, pos: int64(whole), offset: -1, what: fmt.Sprintf("%d bytes after the last whole %d-byte entry", len(b)-whole, txnindex.EntrySize)})
	}
	prev := int64(-1)
	for pos := 0; pos < whole; pos += txnindex.EntrySize {
		i := pos / txnindex.EntrySize
		txns, err := txnindex.Decode(b[pos : pos+txnindex.EntrySize])
		if err != nil {
			v.report(problem{file: path, pos: int64(pos), offset: -1, what: fmt.Sprintf("entry %d: %s", i, txnIndexError(err))})
			continue
		}
		a := txns[0]
		p := problem{file: path, pos: int64(pos), offset: a.LastOffset}
		switch {
		case a.LastOffset <= prev:
			p.what = fmt.Sprintf("entry %d: ABORT marker offset %d is not above the previous entry's %d", i, a.LastOffset, prev)
		case a.FirstOffset < 0 || a.FirstOffset > a.LastOffset:
			p.what = fmt.Sprintf("entry %d: the transaction's first offset %d is not between 0 and its ABORT marker's offset %d", i, a.FirstOffset, a.LastOffset)
		case a.LastOffset < seg.base || (a.LastOffset > seg.lastOffset && !seg.damaged):
			p.what = fmt.Sprintf("entry %d: ABORT marker offset %d is outside the segment (offsets %d to %d)", i, a.LastOffset, seg.base, seg.lastOffset)
		}
		if p.what != "" {
			v.report(p)
		}
		prev = max(prev, a.LastOffset)
	}
	return nil
}

// snapshot checks that a producer snapshot decodes: its name a 20-digit offset, its version 1,
// its CRC and its entry count matching its bytes.
func (v *verifier) snapshot(path string) error {
	off, ok := producerstate.ParseSnapshotName(filepath.Base(path))
	if !ok {
		v.report(problem{file: path, offset: -1, what: "a .snapshot file whose name is not a 20-digit offset"})
		return nil
	}
	b, err := readStateFile(path)
	if err != nil || b == nil {
		return err
	}
	if _, err := producerstate.DecodeSnapshot(b); err != nil {
		v.report(problem{file: path, offset: off, what: "damaged producer snapshot: " + strings.TrimPrefix(snapshotError(err), "corrupt producer snapshot: ")})
	}
	return nil
}
