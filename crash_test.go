package commitlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/commitlog-go/commitlog/internal/index"
	"github.com/commitlog-go/commitlog/internal/recordbatch"
)

// The crash-point explorer runs a store workload once on a fault-injecting file system to count
// its file-system operations, then reruns it crashing at each operation (or at a seeded sample of
// them): the operation and every later one fail, as if the process died there. What the crash
// leaves (everything written, for a killed process; for a power loss, only what fsyncs and
// directory fsyncs covered, with unsynced bytes kept, dropped or torn at random) is reopened as a
// store and checked against what the workload was told:
//
//   - the store opens without repair;
//   - every acknowledged record is present, byte for byte, at its offset, and offsets run
//     without a hole from the log start offset, which never moves back;
//   - nothing unacknowledged is half visible: the append in flight at the crash is there whole or
//     not at all, and nothing else is there;
//   - no offset is reused: the next append gets the log end offset, and after a clean reopen
//     the records are still there;
//   - the named reader resumes at a position it committed;
//   - a topic exists when its creation was acknowledged, and is gone when its deletion was;
//   - after appends to the recovered store, a second restart (a clean Close, or at every other
//     point a second power loss) keeps everything the first recovery kept and every append
//     acknowledged since, exactly: several public bugs lost data only at the second restart.
//
// It also reruns the workload with a full disk instead of a crash, at each operation (or a seeded
// sample of them) that creates, extends, renames, allocates or maps a file writable: that one
// operation fails with ENOSPC. The append that meets it must return ErrNoSpace with nothing of it
// in the log, and the workload goes on, the next appends finding the log writable; another step
// may fail with an error wrapping ENOSPC (only a truncation or retention caught part-way may
// still fail the log), which ends the workload as a crash would. The store left is checked as
// above.
//
// A failure names the seed, the point and the image, prints the operations up to the fault and
// the command that replays exactly that point.
//
// Environment: COMMITLOG_CRASH_POINTS=all checks every operation and every full disk (a number
// checks a sample of that many crashes); COMMITLOG_CRASH_SEED replays a seed (the default is
// fixed, crashSeed); COMMITLOG_CRASH_POINT=n checks only the crash at n,
// COMMITLOG_CRASH_NOSPACE_POINT=n only the full disk at n.

const (
	crashPointsEnv = "COMMITLOG_CRASH_POINTS"
	crashSeedEnv   = "COMMITLOG_CRASH_SEED"
	crashPointEnv  = "COMMITLOG_CRASH_POINT"
	// crashNoSpacePointEnv checks only the full disk at operation n.
	crashNoSpacePointEnv = "COMMITLOG_CRASH_NOSPACE_POINT"
	crashStoreDir        = "/store"
	crashEvents          = "events" // the main topic: two partitions, small segments, retention by size
	crashTrail           = "trail"  // a topic created, appended to and deleted mid-workload
	crashReader          = "audit"
	// crashSteps is the number of appends to the main topic; other steps come between them.
	crashSteps = 96
)

// crashSample is how many crash points the default run checks, out of the workload's ~2,500
// operations (COMMITLOG_CRASH_POINTS=all checks every one). Each point reruns the workload up to
// it, recovers a store and restarts it a second time. The race detector makes that about 5x
// slower, so `go test -race ./...` (CI's command) checks 1,000 (and noSpaceSample's 150 full
// disks).
func crashSample() int {
	if faultfs.RaceEnabled {
		return 1000
	}
	return 2000
}

func crashTopicConfig(name string) TopicConfig {
	cfg := TopicConfig{Partitions: 1, LogConfig: LogConfig{
		SegmentBytes:       1200,
		SegmentIndexBytes:  240,
		IndexIntervalBytes: 256,
	}}
	if name == crashEvents {
		cfg.Partitions = 2
		cfg.RetentionBytes = 2400
		cfg.FileDeleteDelay = -1 // retired files are removed at once
	}
	return cfg
}

func crashOptions(fsy fsys.FS) []Option {
	return []Option{withFS(fsy), WithClock(fixedClock), WithRetentionCheckInterval(-1), withParallelLogs(1)}
}

// crashRecord is the record appended at offset of partition part of topic by step: its value
// names the step, so that a record re-appended at a truncated offset differs from the one before.
func crashRecord(topic string, part int32, offset int64, step int) *Record {
	r := rand.New(rand.NewPCG(uint64(offset), uint64(step)<<8|uint64(part)))
	value := make([]byte, 20+r.IntN(120))
	for i := range value {
		value[i] = byte(r.Uint32())
	}
	value = fmt.Appendf(value, "|%s-%d@%d step %d", topic, part, offset, step)
	rec := &Record{
		Key:       []byte("k" + strconv.FormatInt(offset%5, 10)),
		Value:     value,
		Timestamp: testEpoch.Add(-time.Hour).Add(time.Duration(offset) * time.Millisecond),
		Headers:   []Header{{Key: "step", Value: []byte(strconv.Itoa(step))}},
	}
	if offset%7 == 3 {
		rec.Key = nil
	}
	return rec
}

// crashPart is the model of one partition: what was acknowledged.
type crashPart struct {
	start   int64             // log start offset, as of the last acknowledged retention
	end     int64             // log end offset
	recs    map[int64]*Record // acknowledged records in [start, end), by offset
	batches []int64           // base offsets of the batches appended, in order
}

// crashStepKind names a workload step.
type crashStepKind int

const (
	stepOpen crashStepKind = iota
	stepCreateTopic
	stepNewReader
	stepAppend
	stepRead
	stepCommit
	stepRetention
	stepTruncate
	stepDeleteTopic
	stepClose
)

var crashStepNames = [...]string{"open", "create topic", "new reader", "append", "read", "commit",
	"retention", "truncate", "delete topic", "close"}

// crashStep is the step in flight when the crash came: the one whose call returned an error.
type crashStep struct {
	kind      crashStepKind
	topic     string
	part      int32
	recs      []*Record       // append: the records, numbered from the partition's end
	to        int64           // truncate: the offset
	positions map[int32]int64 // commit: the positions being committed
	leo       func() int64    // append: the partition's log end offset now
}

func (s *crashStep) String() string {
	if s == nil {
		return "none"
	}
	switch s.kind {
	case stepAppend:
		return fmt.Sprintf("append of %d records to %s-%d", len(s.recs), s.topic, s.part)
	case stepTruncate:
		return fmt.Sprintf("truncate %s-%d to %d", s.topic, s.part, s.to)
	case stepCommit:
		return fmt.Sprintf("commit of %v", s.positions)
	}
	return crashStepNames[s.kind] + " " + s.topic
}

// crashModel is what the workload was told: acknowledged topics and their partitions, the
// reader's last acknowledged commit, and the step in flight at the crash.
type crashModel struct {
	topics    map[string][]*crashPart
	deleted   map[string]bool
	committed map[int32]int64 // nil before the first acknowledged commit
	inflight  *crashStep
	steps     int // steps acknowledged
	refused   int // appends refused with ErrNoSpace (noSpace workloads), nothing of them written
}

// crashWorkload runs the workload on fsy until a step fails or fsy crashes, and returns the
// model of what was acknowledged. err is the failed step's error (nil when the workload ran to
// its end).
//
// With noSpace set (a full disk is injected, not a crash), an append that fails with ErrNoSpace
// is not the end: nothing of it may be in the log (its partition's log end offset is checked at
// once), it is not acknowledged, and the workload goes on, the next appends finding the log
// writable. Any other failure ends the workload as a crash does, its step in flight.
func crashWorkload(fsy *faultfs.FS, noSpace bool) (m *crashModel, err error) {
	m = &crashModel{topics: map[string][]*crashPart{}, deleted: map[string]bool{}}
	ctx := context.Background()
	// do runs one step: on success apply records it in the model; on failure the step is in
	// flight. A step that returns nil is acknowledged even if the crash came during it.
	do := func(step *crashStep, call func() error, apply func()) bool {
		if err = call(); err != nil {
			if noSpace && step.kind == stepAppend && errors.Is(err, ErrNoSpace) {
				m.refused++
				if leo := step.leo(); leo != step.recs[0].Offset {
					err = fmt.Errorf("%s failed with %w, but the log end offset moved from %d to %d",
						step, err, step.recs[0].Offset, leo)
					m.inflight = step
					return false
				}
				err = nil
				return true
			}
			m.inflight = step
			return false
		}
		if apply != nil {
			apply()
		}
		m.steps++
		return !fsy.Crashed()
	}

	var s *Store
	if !do(&crashStep{kind: stepOpen}, func() (err error) {
		s, err = Open(crashStoreDir, crashOptions(fsy)...)
		return err
	}, nil) {
		return m, err
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	createTopic := func(name string) bool {
		return do(&crashStep{kind: stepCreateTopic, topic: name}, func() error {
			_, err := s.CreateTopic(name, crashTopicConfig(name))
			return err
		}, func() {
			parts := make([]*crashPart, crashTopicConfig(name).Partitions)
			for i := range parts {
				parts[i] = &crashPart{recs: map[int64]*Record{}}
			}
			m.topics[name] = parts
			m.deleted[name] = false
		})
	}
	appendTo := func(topic string, part int32, n, step int) bool {
		mp := m.topics[topic][part]
		recs := make([]*Record, n)
		for i := range recs {
			recs[i] = crashRecord(topic, part, mp.end+int64(i), step)
		}
		want := make([]*Record, n)
		for i, r := range recs {
			c := *r
			c.Offset = mp.end + int64(i)
			want[i] = &c
		}
		leo := func() int64 {
			t, err := s.Topic(topic)
			if err != nil {
				return -1
			}
			p, err := t.Partition(part)
			if err != nil {
				return -1
			}
			return p.LogEndOffset()
		}
		return do(&crashStep{kind: stepAppend, topic: topic, part: part, recs: want, leo: leo}, func() error {
			t, err := s.Topic(topic)
			if err != nil {
				return err
			}
			p, err := t.Partition(part)
			if err != nil {
				return err
			}
			if err := p.Append(ctx, recs...); err != nil {
				return err
			}
			if recs[0].Offset != mp.end {
				return fmt.Errorf("append to %s-%d got offset %d, want %d", topic, part, recs[0].Offset, mp.end)
			}
			return nil
		}, func() {
			mp.batches = append(mp.batches, mp.end)
			for _, r := range want {
				mp.recs[r.Offset] = r
			}
			mp.end += int64(n)
		})
	}

	if !createTopic(crashEvents) {
		return m, err
	}
	events, err := s.Topic(crashEvents)
	if err != nil {
		return m, err
	}
	// SyncCommits: the model holds every acknowledged commit to survive a power loss, which only
	// synced commits promise (unsynced ones: TestReaderCommitCrash).
	var r *Reader
	if !do(&crashStep{kind: stepNewReader}, func() (err error) {
		r, err = events.NewReader(ReaderConfig{Name: crashReader, Start: Earliest, Reset: ResetEarliest, SyncCommits: true})
		return err
	}, nil) {
		return m, err
	}

	for i := range crashSteps {
		part := int32(i % 2)
		if !appendTo(crashEvents, part, 1+i%5, i) {
			return m, err
		}
		if i%6 == 5 {
			// The reader reads what there is, up to 12 records, and commits.
			if !do(&crashStep{kind: stepRead}, func() error {
				for range 12 {
					lag := r.Lag()
					if lag[0]+lag[1] == 0 {
						break
					}
					if _, err := r.Next(ctx); err != nil {
						return err
					}
				}
				return nil
			}, nil) {
				return m, err
			}
			pos := r.Positions()
			if !do(&crashStep{kind: stepCommit, positions: pos}, func() error { return r.Commit(ctx) },
				func() { m.committed = pos }) {
				return m, err
			}
		}
		if i%9 == 8 {
			if !do(&crashStep{kind: stepRetention, topic: crashEvents}, func() error {
				_, err := events.ApplyRetentionAt(testEpoch)
				return err
			}, func() {
				for id, mp := range m.topics[crashEvents] {
					p, _ := events.Partition(int32(id))
					mp.start = p.LogStartOffset()
					for off := range mp.recs {
						if off < mp.start {
							delete(mp.recs, off)
						}
					}
				}
			}) {
				return m, err
			}
		}
		if i%24 == 13 {
			// Truncate partition 1 to the start of its second-to-last batch.
			mp := m.topics[crashEvents][1]
			to := mp.batches[len(mp.batches)-2]
			if !do(&crashStep{kind: stepTruncate, topic: crashEvents, part: 1, to: to}, func() error {
				p, _ := events.Partition(1)
				return p.TruncateTo(to)
			}, func() {
				for off := to; off < mp.end; off++ {
					delete(mp.recs, off)
				}
				mp.end = to
				mp.batches = mp.batches[:len(mp.batches)-2]
			}) {
				return m, err
			}
		}
		if i%40 == 16 {
			// The trail topic is created, appended to, deleted, and created again.
			if !createTopic(crashTrail) {
				return m, err
			}
		}
		if i%40 > 16 && i%40 < 30 && i%3 == 0 {
			if !appendTo(crashTrail, 0, 2, i) {
				return m, err
			}
		}
		if i%40 == 31 {
			if !do(&crashStep{kind: stepDeleteTopic, topic: crashTrail}, func() error { return s.DeleteTopic(crashTrail) },
				func() {
					delete(m.topics, crashTrail)
					m.deleted[crashTrail] = true
				}) {
				return m, err
			}
		}
		if i%40 == 35 {
			// The reader closes and a new one of the name resumes where it committed.
			if !do(&crashStep{kind: stepNewReader}, func() (err error) {
				if err := r.Close(); err != nil {
					return err
				}
				r, err = events.NewReader(ReaderConfig{Name: crashReader, Start: Earliest, Reset: ResetEarliest, SyncCommits: true})
				if err != nil {
					return err
				}
				for id, off := range m.committed {
					if pos, err := r.Position(id); err != nil || pos != off {
						return fmt.Errorf("reader %s resumed partition %d at %d (%v), committed %d", crashReader, id, pos, err, off)
					}
				}
				return nil
			}, nil) {
				return m, err
			}
		}
	}
	closing := s
	s = nil
	do(&crashStep{kind: stepClose}, closing.Close, nil)
	return m, err
}

// crashCheck reopens the store in img and checks it against m; the error says what is wrong.
// Then, as several public bugs lost data only at the second restart, it appends to every
// partition of the recovered store and restarts it again, by a clean Close or (second set) by
// another power loss with nothing closed: everything the first recovery kept and every append
// acknowledged after it must be there, exactly, after the second.
func crashCheck(img fsys.FS, m *crashModel, seed uint64, second bool) error {
	ffs := faultfs.New(img, seed)
	defer ffs.Release()
	s, err := Open(crashStoreDir, crashOptions(ffs)...)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	ctx := context.Background()

	// What the first recovery holds, which the second restart must keep: by topic, each
	// partition's records.
	recovered := map[string][]*crashPart{}
	// Topics: the acknowledged ones exist with their configuration; the one whose creation or
	// deletion was in flight may or may not; a deleted one is gone.
	for _, name := range []string{crashEvents, crashTrail} {
		t, terr := s.Topic(name)
		_, acked := m.topics[name]
		inflight := m.inflight != nil && m.inflight.topic == name &&
			(m.inflight.kind == stepCreateTopic || m.inflight.kind == stepDeleteTopic)
		switch {
		case errors.Is(terr, ErrUnknownTopic) && (!acked || inflight):
			continue
		case terr != nil:
			return fmt.Errorf("topic %s: %w", name, terr)
		case !acked && !inflight:
			return fmt.Errorf("topic %s exists, but its creation was never acknowledged (or its deletion was)", name)
		}
		want := crashTopicConfig(name)
		want.LogConfig, _, _ = want.LogConfig.resolve(SyncAlways)
		got := t.Config()
		if got.Partitions != want.Partitions || got.LogConfig != want.LogConfig {
			return fmt.Errorf("topic %s: config %+v, want %+v", name, got, want)
		}
		parts := m.topics[name]
		for id := range t.PartitionCount() {
			p, err := t.Partition(id)
			if err != nil {
				return err
			}
			mp := &crashPart{recs: map[int64]*Record{}}
			if parts != nil {
				mp = parts[id]
			}
			if inflight && m.inflight.kind == stepDeleteTopic && p.LogEndOffset() == 0 {
				// The folder went, the configuration stayed: the topic starts again empty.
				recovered[name] = append(recovered[name], &crashPart{recs: map[int64]*Record{}})
				continue
			}
			rp, err := crashCheckPartition(p, mp, m.inflight)
			if err != nil {
				return fmt.Errorf("%s-%d: %w", name, id, err)
			}
			recovered[name] = append(recovered[name], rp)
		}
	}

	// The reader's committed positions are its last acknowledged commit, or the one in flight.
	committed, err := s.CommittedPositions(crashReader)
	if err != nil {
		return fmt.Errorf("committed positions: %w", err)
	}
	got := committed[crashEvents]
	okPositions := func(want map[int32]int64) bool {
		return len(got) == len(want) && maps.Equal(got, want)
	}
	if !okPositions(m.committed) && !(m.inflight != nil && m.inflight.kind == stepCommit && okPositions(m.inflight.positions)) {
		return fmt.Errorf("reader %s committed positions %v, want %v (in flight: %s)", crashReader, got, m.committed, m.inflight)
	}
	if t, err := s.Topic(crashEvents); err == nil && len(got) > 0 {
		r, err := t.NewReader(ReaderConfig{Name: crashReader, Start: Latest, Reset: ResetEarliest})
		if err != nil {
			return fmt.Errorf("reader %s: %w", crashReader, err)
		}
		for id, off := range got {
			pos, err := r.Position(id)
			if err != nil || pos != off {
				return fmt.Errorf("reader %s resumes partition %d at %d (%v), committed %d", crashReader, id, pos, err, off)
			}
		}
		r.Close()
	}

	// No offset is reused: the next appends get the log end offset. Acknowledged under
	// SyncAlways, they join what the second restart must keep.
	for _, name := range s.Topics() {
		t, _ := s.Topic(name)
		for id := range t.PartitionCount() {
			p, _ := t.Partition(id)
			rp := recovered[name][id]
			leo := p.LogEndOffset()
			for i := range 3 {
				rec := crashRecord(name, id, leo+int64(i), 1000+i)
				if err := p.Append(ctx, rec); err != nil {
					return fmt.Errorf("%s-%d: append after recovery: %w", name, id, err)
				}
				if rec.Offset != leo+int64(i) {
					return fmt.Errorf("%s-%d: append after recovery got offset %d, log end offset was %d", name, id, rec.Offset, leo+int64(i))
				}
				want := crashRecord(name, id, leo+int64(i), 1000+i)
				want.Offset = rec.Offset
				rp.recs[rec.Offset] = want
				rp.batches = append(rp.batches, rec.Offset)
			}
			rp.end = leo + 3
		}
	}

	// The second restart.
	s2, _, mode, err := restartAgain(ffs, img, &s, second, crashStoreDir, crashOptions)
	if err != nil {
		return err
	}
	defer s2.Close()
	if gotTopics, want := s2.Topics(), slices.Sorted(maps.Keys(recovered)); !slices.Equal(slices.Sorted(slices.Values(gotTopics)), want) {
		return fmt.Errorf("second reopen after a %s: topics %v, want %v", mode, gotTopics, want)
	}
	for name, parts := range recovered {
		t, err := s2.Topic(name)
		if err != nil {
			return fmt.Errorf("second reopen after a %s: %w", mode, err)
		}
		for id, rp := range parts {
			p, _ := t.Partition(int32(id))
			if _, err := crashCheckPartition(p, rp, nil); err != nil {
				return fmt.Errorf("second reopen after a %s: %s-%d: %w", mode, name, id, err)
			}
		}
	}
	committed2, err := s2.CommittedPositions(crashReader)
	if err != nil {
		return fmt.Errorf("second reopen after a %s: committed positions: %w", mode, err)
	}
	if !maps.Equal(committed2[crashEvents], got) {
		return fmt.Errorf("second reopen after a %s: reader %s committed positions %v, after the first %v", mode, crashReader, committed2[crashEvents], got)
	}
	return nil
}

// crashCheckPartition checks one recovered partition against its model and the step in flight,
// and returns what it holds: the model as recovery settled the step in flight.
func crashCheckPartition(p *Partition, mp *crashPart, inflight *crashStep) (*crashPart, error) {
	mine := inflight != nil && inflight.topic == p.Topic() && inflight.part == p.ID()
	lso, leo := p.LogStartOffset(), p.LogEndOffset()

	// The log start offset never moves back; only a retention in flight may have moved it on.
	retention := inflight != nil && inflight.kind == stepRetention && inflight.topic == p.Topic()
	if lso < mp.start || (lso > mp.start && !retention) || lso > mp.end {
		return nil, fmt.Errorf("log start offset %d, acknowledged %d (in flight: %s)", lso, mp.start, inflight)
	}
	// Where the log may end: at the acknowledged end, or as the step in flight left it.
	okEnd := func(e int64) bool { return e == mp.end }
	switch {
	case mine && inflight.kind == stepAppend:
		okEnd = func(e int64) bool { return e == mp.end || e == mp.end+int64(len(inflight.recs)) }
	case mine && inflight.kind == stepTruncate:
		// A truncation cut part of the way: at the target or any batch boundary after it.
		okEnd = func(e int64) bool { return e == mp.end || e >= inflight.to && slices.Contains(mp.batches, e) }
	}
	if !okEnd(leo) {
		return nil, fmt.Errorf("log end offset %d, acknowledged %d (in flight: %s)", leo, mp.end, inflight)
	}

	// Every record from the log start offset to the end: whole batches with good CRCs,
	// consecutive offsets, each record the one acknowledged or, past the acknowledged end, the
	// one in flight.
	rp := &crashPart{start: lso, end: leo, recs: map[int64]*Record{}}
	next := lso
	for next < leo {
		b, err := p.ReadBatches(nil, next, 64<<10)
		if err != nil {
			return nil, fmt.Errorf("read batches at %d: %w", next, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("no batch at offset %d, below the log end offset %d", next, leo)
		}
		for pos := 0; pos < len(b); {
			h, err := recordbatch.Check(b[pos:], 0)
			if err != nil {
				return nil, fmt.Errorf("batch at offset %d: %w", next, err)
			}
			if h.BaseOffset != next {
				return nil, fmt.Errorf("batch with base offset %d where offset %d was due", h.BaseOffset, next)
			}
			recs, err := DecodeRecords(nil, b[pos:pos+h.Size()], 0, 0)
			if err != nil {
				return nil, fmt.Errorf("decode batch at %d: %w", next, err)
			}
			for _, r := range recs {
				want := mp.recs[next]
				if next >= mp.end && mine && inflight.kind == stepAppend {
					want = inflight.recs[next-mp.end]
				}
				if want == nil {
					return nil, fmt.Errorf("record at offset %d was never acknowledged", next)
				}
				if d := killSameRecord(r, want); d != "" {
					return nil, fmt.Errorf("record at offset %d: %s", next, d)
				}
				rp.recs[next] = want
				next++
			}
			rp.batches = append(rp.batches, h.BaseOffset)
			pos += h.Size()
		}
	}
	if next != leo {
		return nil, fmt.Errorf("records end at %d, log end offset is %d", next, leo)
	}
	return rp, nil
}

// crashRun is one crash point's run: the workload crashed (or met a full disk) at op, the image
// it left, the check.
type crashRun struct {
	point   int
	noSpace bool // a full disk at the point, not a crash
	mode    faultfs.Mode
	ops     []faultfs.Op
	model   *crashModel
	err     error // the check's verdict
}

// crashImageSeed is the seed of the fault FS of one crash point: the image's random choices
// depend on the run's seed and the point only.
func crashImageSeed(seed uint64, point int) uint64 { return seed ^ uint64(point)*0x9e3779b97f4a7c15 }

// newCrashFS returns a fault FS over a memory FS holding the empty store directory.
func newCrashFS(seed uint64) *faultfs.FS {
	inner := fsys.NewMemory()
	if err := inner.MkdirAll(crashStoreDir, 0o755); err != nil {
		panic(err)
	}
	return faultfs.New(inner, seed)
}

// runCrashPoint runs the workload crashing at point (or, with noSpace, failing that operation
// with ENOSPC) and checks what it leaves. A process kill one time in five, a power loss
// otherwise; the second restart of crashCheck is a power loss every other point.
func runCrashPoint(seed uint64, point int, counted []faultfs.Op, noSpace bool) crashRun {
	ffs := newCrashFS(crashImageSeed(seed, point))
	defer ffs.Release()
	if noSpace {
		ffs.Inject(faultfs.FailAt(point, faultfs.Fault{Err: syscall.ENOSPC}))
	} else {
		ffs.Inject(faultfs.CrashAt(point))
	}
	model, werr := crashWorkload(ffs, noSpace)
	run := crashRun{point: point, noSpace: noSpace, mode: faultfs.PowerLoss, ops: ffs.Ops(), model: model}
	rng := rand.New(rand.NewPCG(seed, uint64(point)))
	if rng.IntN(5) == 0 {
		run.mode = faultfs.ProcessKill
	}
	switch {
	case noSpace && (len(run.ops) <= point || !run.ops[point].Injected):
		run.err = fmt.Errorf("the workload ended after %d operations without reaching the full disk (err %v)", len(run.ops), werr)
		return run
	case noSpace && werr != nil && !errors.Is(werr, syscall.ENOSPC),
		noSpace && errors.Is(werr, ErrSync) && !partwayStep(model.inflight):
		// A full disk fails the call that met it with ErrNoSpace (or ENOSPC from a file it
		// writes), never the log; only a truncation or a retention caught part-way, some
		// segments renamed, still fails the log until the reopen finishes it.
		run.err = fmt.Errorf("step %s failed with %v, not a clean ENOSPC", model.inflight, werr)
		return run
	case noSpace && werr == nil && model.refused == 0 && isAppendOp(counted, point):
		run.err = fmt.Errorf("the full disk at %s refused no append", run.ops[point])
		return run
	case !noSpace && !ffs.Crashed():
		run.err = fmt.Errorf("the workload ended after %d operations without reaching the crash point (err %v)", len(run.ops), werr)
		return run
	case !noSpace && werr != nil && !errors.Is(werr, faultfs.ErrCrashed):
		// Every failure comes from the crash: an error that does not say so lost its cause.
		run.err = fmt.Errorf("step %s failed with %v, which does not wrap the crash", model.inflight, werr)
		return run
	}
	for i, op := range run.ops[:point] {
		c := counted[i]
		if op.Kind != c.Kind || op.Path != c.Path || op.NewPath != c.NewPath || op.Offset != c.Offset || op.Len != c.Len || op.Flag != c.Flag {
			run.err = fmt.Errorf("the workload is not deterministic: operation %d is %s, in the counting run %s", i, op, c)
			return run
		}
	}
	img, err := ffs.CrashImage(run.mode)
	if err != nil {
		run.err = fmt.Errorf("crash image: %w", err)
		return run
	}
	run.err = crashCheck(img, model, crashImageSeed(seed, point)+1, point%2 == 1)
	return run
}

// partwayStep reports whether step changes several files in turn that a failure part-way cannot
// put back (TruncateTo and retention rename and remove segments), so that a full disk may still
// fail the log, to be finished by the reopen: nothing acknowledged may be lost either way.
func partwayStep(step *crashStep) bool {
	return step != nil && (step.kind == stepTruncate || step.kind == stepRetention)
}

// isAppendOp reports whether the operation at point of the counting run writes a segment's
// .log file: a full disk there must be an append's ErrNoSpace.
func isAppendOp(ops []faultfs.Op, point int) bool {
	op := ops[point]
	return op.Kind == faultfs.Write && strings.HasSuffix(op.Path, logSuffix)
}

// needsSpace reports whether op creates, extends, renames, allocates or maps a file writable: the
// operations a full disk fails with ENOSPC. Writes count whatever their offset (a write inside a
// file may need blocks too); of Truncates, those that preallocate an index (the trims of seal and
// close only free space).
func needsSpace(op faultfs.Op) bool {
	switch op.Kind {
	case faultfs.OpenFile:
		return op.Flag&os.O_CREATE != 0
	case faultfs.Write, faultfs.Rename, faultfs.Allocate, faultfs.MkdirAll:
		return true
	case faultfs.Map:
		return op.Flag == 1 // a read-only mapping needs no disk space
	case faultfs.Truncate:
		size := int64(crashTopicConfig(crashEvents).SegmentIndexBytes)
		return op.Offset == size/index.OffsetEntrySize*index.OffsetEntrySize && strings.HasSuffix(op.Path, indexSuffix) ||
			op.Offset == size/index.TimeEntrySize*index.TimeEntrySize && strings.HasSuffix(op.Path, timeIndexSuffix)
	}
	return false
}

// crashSeed is the explorer's seed unless COMMITLOG_CRASH_SEED sets one: fixed, so that CI
// checks the same points every run and a failure there replays as it is.
const crashSeed = 20260415

func TestCrashPoints(t *testing.T) {
	seed := uint64(crashSeed)
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", crashSeedEnv, err)
		}
	}
	start := time.Now()

	// The counting run: no crash; the workload must run to its end and leave a store that
	// checks out whole.
	ffs := newCrashFS(seed)
	model, err := crashWorkload(ffs, false)
	if err != nil {
		t.Fatalf("workload without faults: %v", err)
	}
	counted := ffs.Ops()
	if model.inflight != nil || len(model.topics[crashEvents]) != 2 || !model.deleted[crashTrail] {
		t.Fatalf("workload without faults: model %+v", model)
	}
	img, err := ffs.CrashImage(faultfs.PowerLossDrop)
	if err != nil {
		t.Fatal(err)
	}
	ffs.Release()
	if err := crashCheck(img, model, seed, true); err != nil {
		t.Fatalf("workload without faults, power loss after close: %v", err)
	}

	failures := 0
	modes := map[faultfs.Mode]int{}
	check := func(run crashRun) {
		modes[run.mode]++
		if run.err == nil {
			return
		}
		failures++
		what, env := "crash", crashPointEnv
		if run.noSpace {
			what, env = "full disk", crashNoSpacePointEnv
		}
		t.Errorf("%s at operation %d (%s), %s image, step in flight: %s: %v\n"+
			"replay: %s=%d %s=%d go test -run '^TestCrashPoints$' .\n"+
			"operations up to the fault:\n%s",
			what, run.point, run.ops[min(run.point, len(run.ops)-1)], run.mode, run.model.inflight, run.err,
			crashSeedEnv, seed, env, run.point, faultfs.FormatOps(run.ops))
		if failures == 3 {
			t.Fatalf("stopping after %d failed points", failures)
		}
	}
	points := crashPoints(t, seed, 1, len(counted), crashSample())
	for _, point := range points {
		check(runCrashPoint(seed, point, counted, false))
	}
	spacePoints := noSpacePoints(t, seed, counted)
	refused := 0
	for _, point := range spacePoints {
		run := runCrashPoint(seed, point, counted, true)
		refused += run.model.refused
		check(run)
	}
	t.Logf("crash points: %d checked of %d operations (%d power loss, %d process kill); full disk at %d of the %d that need space, %d appends refused; seed %d, %s; %s=%d replays",
		len(points), len(counted), modes[faultfs.PowerLoss], modes[faultfs.ProcessKill], len(spacePoints),
		countNeedsSpace(counted), refused, seed, time.Since(start).Round(time.Millisecond), crashSeedEnv, seed)
}

// countNeedsSpace counts the operations of ops that needsSpace selects.
func countNeedsSpace(ops []faultfs.Op) int {
	n := 0
	for _, op := range ops {
		if needsSpace(op) {
			n++
		}
	}
	return n
}

// noSpaceSample is how many operations that need space the default run fails with ENOSPC (fewer
// under the race detector, which makes each about 5x slower).
func noSpaceSample() int {
	if faultfs.RaceEnabled {
		return 150
	}
	return 600
}

// noSpacePoints returns the operations to fail with ENOSPC, in order: with
// COMMITLOG_CRASH_POINTS=all every one needsSpace selects, with COMMITLOG_CRASH_NOSPACE_POINT
// the one it names (none with COMMITLOG_CRASH_POINT), or a seeded sample.
func noSpacePoints(t *testing.T, seed uint64, ops []faultfs.Op) []int {
	if s := os.Getenv(crashNoSpacePointEnv); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil || p < 0 || p >= len(ops) || !needsSpace(ops[p]) {
			t.Fatalf("%s=%s: want an operation number below %d that needs space", crashNoSpacePointEnv, s, len(ops))
		}
		return []int{p}
	}
	if os.Getenv(crashPointEnv) != "" {
		return nil
	}
	var all []int
	for i, op := range ops {
		if needsSpace(op) {
			all = append(all, i)
		}
	}
	if os.Getenv(crashPointsEnv) == "all" || len(all) <= noSpaceSample() {
		return all
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	perm := rng.Perm(len(all))[:noSpaceSample()]
	slices.Sort(perm)
	out := make([]int, len(perm))
	for i, k := range perm {
		out[i] = all[k]
	}
	return out
}

// restartAgain is an explorer's second restart of the store *s, recovered from img of ffs's
// workload: a power loss of ffs (powerLoss) or a clean close of *s (which is set to nil, closed),
// then an open of dir with opts. It returns the store opened, the file system it is on, and how
// the first stopped.
func restartAgain(ffs *faultfs.FS, img fsys.FS, s **Store, powerLoss bool, dir string, opts func(fsys.FS) []Option) (*Store, fsys.FS, string, error) {
	mode := "clean close"
	if powerLoss {
		mode = "power loss"
		var err error
		if img, err = ffs.CrashImage(faultfs.PowerLoss); err != nil {
			return nil, nil, mode, fmt.Errorf("second crash image: %w", err)
		}
	} else {
		closing := *s
		*s = nil
		if err := closing.Close(); err != nil {
			return nil, nil, mode, fmt.Errorf("close after the reopen: %w", err)
		}
	}
	s2, err := Open(dir, opts(img)...)
	if err != nil {
		return nil, nil, mode, fmt.Errorf("second reopen after a %s: %w", mode, err)
	}
	return s2, img, mode, nil
}

// crashPoints returns the operations to crash at, in order: every one with
// COMMITLOG_CRASH_POINTS=all, the one COMMITLOG_CRASH_POINT names, or a sample of sample points
// (or as many as COMMITLOG_CRASH_POINTS says) drawn with seed from the random stream stream (each
// explorer its own, so that their samples do not coincide).
func crashPoints(t *testing.T, seed, stream uint64, ops, sample int) []int {
	if s := os.Getenv(crashPointEnv); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil || p < 0 || p >= ops {
			t.Fatalf("%s=%s: want an operation number below %d", crashPointEnv, s, ops)
		}
		return []int{p}
	}
	n := sample
	switch s := os.Getenv(crashPointsEnv); {
	case s == "all":
		n = ops
	case s != "":
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(s)); err != nil || n <= 0 {
			t.Fatalf("%s=%s: want \"all\" or a positive number", crashPointsEnv, s)
		}
	}
	if n >= ops {
		return slices.Collect(func(yield func(int) bool) {
			for i := range ops {
				if !yield(i) {
					return
				}
			}
		})
	}
	perm := rand.New(rand.NewPCG(seed, stream)).Perm(ops)[:n]
	slices.Sort(perm)
	return perm
}
