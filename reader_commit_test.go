package commitlog

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
)

var resetNames = map[ResetPolicy]string{ResetNone: "none", ResetEarliest: "earliest", ResetLatest: "latest"}

// divergenceValues returns n record values "<prefix>-<offset>" for offsets from, from+1, ...
func divergenceValues(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, from+i)
	}
	return out
}

// requireRefillDivergesAt100 refills tp's partition 0, truncated to 100, with new-100..new-149
// and checks the reader "loader", which committed 120 before the truncation: without a reset
// policy it gets ErrLogTruncated{120, 100}; with ResetEarliest it resumes at new-100.
func requireRefillDivergesAt100(t *testing.T, tp *Topic) {
	t.Helper()
	appendInBatches(t, tp, divergenceValues("new", 100, 50))
	r := stReader(t, tp, ReaderConfig{Name: "loader"})
	requireLogTruncated(t, nextErr(t, r), 120, 100)
	require.NoError(t, r.Close())
	r = stReader(t, tp, ReaderConfig{Name: "loader", Reset: ResetEarliest})
	require.Equal(t, stSeen{0, 100, "new-100"}, stSeenOf([]*Record{stNext(t, r)})[0])
	require.NoError(t, r.Close())
}

// appendInBatches appends values to tp's partition 0 in batches of 10 records.
func appendInBatches(t *testing.T, tp *Topic, values []string) {
	t.Helper()
	p := stMust(tp.Partition(0))
	for i := 0; i < len(values); i += 10 {
		require.NoError(t, p.Append(context.Background(), stRecs(values[i:min(i+10, len(values))]...)...))
	}
}

// requireLogTruncated checks that err is ErrLogTruncated for partition 0 of topic events at
// committed, truncated to truncated.
func requireLogTruncated(t *testing.T, err error, committed, truncated int64) {
	t.Helper()
	require.ErrorIs(t, err, ErrLogTruncated)
	var lt *LogTruncatedError
	require.ErrorAs(t, err, &lt)
	require.Equal(t, "events", lt.Topic)
	require.Equal(t, int32(0), lt.Partition)
	require.Equal(t, committed, lt.CommittedOffset)
	require.Equal(t, truncated, lt.TruncatedOffset)
}

// nextErr returns the error of the reader's next Next, which must come at once.
func nextErr(t *testing.T, r *Reader) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := r.Next(ctx)
	require.Nil(t, rec)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	return err
}

// TestReaderCommitDivergence: a named reader commits 120, the log is truncated to 100 and
// refilled with a new history of 100..149; the reader resuming must not skip the new 100..119.
// Under ResetEarliest and ResetLatest it moves to the divergence point, 100, and reads the new
// records from there (Kafka's consumer with an auto.offset.reset policy seeks to the divergent
// offset); under ResetNone it gets ErrLogTruncated naming 120 and 100, and stays at 120 until
// Seek.
func TestReaderCommitDivergence(t *testing.T) {
	for _, reset := range []ResetPolicy{ResetEarliest, ResetLatest, ResetNone} {
		t.Run(resetNames[reset], func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
				p := stMust(tp.Partition(0))
				appendInBatches(t, tp, divergenceValues("old", 0, 150))

				r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
				stNextN(t, r, 120)
				require.NoError(t, r.Commit(context.Background()))
				require.NoError(t, r.Close())

				require.NoError(t, p.TruncateTo(100))
				appendInBatches(t, tp, divergenceValues("new", 100, 50))

				r = stReader(t, tp, ReaderConfig{Name: "loader", Reset: reset})
				require.Equal(t, int64(120), stMust(r.Position(0)))
				if reset == ResetNone {
					requireLogTruncated(t, nextErr(t, r), 120, 100)
					requireLogTruncated(t, nextErr(t, r), 120, 100) // until Seek
					require.Equal(t, int64(120), stMust(r.Position(0)))
					require.NoError(t, r.Seek(0, 100))
				}
				got := stSeenOf(stNextN(t, r, 20))
				want := make([]stSeen, 20)
				for i := range want {
					want[i] = stSeen{0, int64(100 + i), fmt.Sprintf("new-%d", 100+i)}
				}
				require.Equal(t, want, got)
				require.Equal(t, int64(120), stMust(r.Position(0)))
			})
		})
	}
}

// TestReaderLiveDivergence: a live reader positioned at 120 (and one at 115 with records of the
// old history still buffered) while the log is truncated to 100 and refilled: its next record is
// the new history's 100, never an old record or a skip, or, under ResetNone, ErrLogTruncated.
func TestReaderLiveDivergence(t *testing.T) {
	for _, tc := range []struct {
		reset ResetPolicy
		read  int
	}{{ResetEarliest, 120}, {ResetEarliest, 115}, {ResetLatest, 120}, {ResetNone, 120}, {ResetNone, 115}} {
		t.Run(fmt.Sprintf("%s/at-%d", resetNames[tc.reset], tc.read), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
				p := stMust(tp.Partition(0))
				appendInBatches(t, tp, divergenceValues("old", 0, 150))
				r := stReader(t, tp, ReaderConfig{Start: Earliest, Reset: tc.reset})
				stNextN(t, r, tc.read)

				require.NoError(t, p.TruncateTo(100))
				appendInBatches(t, tp, divergenceValues("new", 100, 50))

				if tc.reset == ResetNone {
					requireLogTruncated(t, nextErr(t, r), int64(tc.read), 100)
					require.NoError(t, r.Seek(0, 100))
				}
				rec := stNext(t, r)
				require.Equal(t, stSeen{0, 100, "new-100"}, stSeenOf([]*Record{rec})[0])
			})
		})
	}
}

// TestReaderBelowTruncationKeepsReading: a reader whose position is at or below the truncation
// point has seen nothing that changed: it reads on without a reset or an error, the old records
// below 100 and then the new history.
func TestReaderBelowTruncationKeepsReading(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		p := stMust(tp.Partition(0))
		appendInBatches(t, tp, divergenceValues("old", 0, 150))
		r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		stNextN(t, r, 95)
		require.NoError(t, r.Commit(context.Background()))
		require.NoError(t, r.Close())

		require.NoError(t, p.TruncateTo(100))
		appendInBatches(t, tp, divergenceValues("new", 100, 50))

		r = stReader(t, tp, ReaderConfig{Name: "loader"})
		got := stSeenOf(stNextN(t, r, 10))
		require.Equal(t, stSeen{0, 95, "old-95"}, got[0])
		require.Equal(t, stSeen{0, 99, "old-99"}, got[4])
		require.Equal(t, stSeen{0, 100, "new-100"}, got[5])
		require.Equal(t, stSeen{0, 104, "new-104"}, got[9])
	})
}

// TestReaderCommitFileFormat: Commit writes version 2 of the positions file, with the leader
// epoch of the last record consumed beside each position (Kafka's OffsetCommit
// committed_leader_epoch); a version-1 file (positions only) still loads, its positions resumed
// without validation, as Kafka's consumer skips validation for a commit without an epoch.
func TestReaderCommitFileFormat(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		p := stMust(tp.Partition(0))
		appendInBatches(t, tp, divergenceValues("old", 0, 150))
		r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		stNextN(t, r, 120)
		require.NoError(t, r.Commit(context.Background()))
		require.NoError(t, r.Close())
		b, err := checkpoint.Read(env.FS(), env.path(readerFilePrefix+"loader"))
		require.NoError(t, err)
		require.Equal(t, `{"version":2,"topics":{"events":{"0":{"offset":120,"leader_epoch":0}}}}`, string(b))

		// An old file: the position alone. It resumes at 120 after the truncation, unchecked.
		require.NoError(t, checkpoint.Write(env.FS(), env.path(readerFilePrefix+"old"), []byte(`{"events":{"0":120}}`)))
		require.Equal(t, map[string]map[int32]int64{"events": {0: 120}}, stMust(s.CommittedPositions("old")))
		require.NoError(t, p.TruncateTo(100))
		appendInBatches(t, tp, divergenceValues("new", 100, 50))
		old := stReader(t, tp, ReaderConfig{Name: "old"})
		require.Equal(t, stSeen{0, 120, "new-120"}, stSeenOf([]*Record{stNext(t, old)})[0])
		// Its next commit writes the new version, with the epoch of what it read.
		require.NoError(t, old.Commit(context.Background()))
		b, err = checkpoint.Read(env.FS(), env.path(readerFilePrefix+"old"))
		require.NoError(t, err)
		require.Equal(t, `{"version":2,"topics":{"events":{"0":{"offset":121,"leader_epoch":1}}}}`, string(b))
	})
}

// TestReaderCommitFileRejects: a positions file whose entries are out of range, or of an unknown
// version, is ErrCorrupt naming the reader, never a position the reader would resume at.
func TestReaderCommitFileRejects(t *testing.T) {
	for _, payload := range []string{
		`{"events":{"0":-1}}`,
		`{"events":{"x":1}}`,
		`{"version":3,"topics":{}}`,
		`{"version":2,"topics":{"events":{"0":{"offset":-5,"leader_epoch":0}}}}`,
		`{"version":2,"topics":{"events":{"0":{"offset":5,"leader_epoch":-2}}}}`,
		`{"version":2,"topics":{"events":{"-1":{"offset":5,"leader_epoch":0}}}}`,
	} {
		t.Run(payload, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				require.NoError(t, checkpoint.Write(env.FS(), env.path(readerFilePrefix+"bad"), []byte(payload)))
				_, err := s.CommittedPositions("bad")
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, `reader "bad"`)
			})
		})
	}
}

// TestReaderDivergenceAfterPowerLoss: the commit file is durable but the log kept less (a power
// loss under SyncNever or SyncInterval: the segment ends at 100 after the restart, though the
// reader committed 120). The reopened log starts a new leader epoch at its end, so that once it
// is refilled the reader still finds the divergence at 100.
func TestReaderDivergenceAfterPowerLoss(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t, WithSync(SyncNever))
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		p := stMust(tp.Partition(0))
		appendInBatches(t, tp, divergenceValues("old", 0, 100))
		kept := p.Size()
		appendInBatches(t, tp, divergenceValues("old", 100, 50))
		r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		stNextN(t, r, 120)
		require.NoError(t, r.Commit(context.Background()))
		require.NoError(t, r.Close())
		require.NoError(t, s.Close())

		// What a power loss leaves: the data past 100 never reached the disk, and the state
		// says the shutdown was not clean.
		pdir := env.path(partitionDirName("events", 0))
		fsTruncate(t, env.FS(), segPath(pdir, 0, logSuffix), kept)
		st := readTestState(t, env.FS(), pdir)
		st.clean, st.recoveryPoint = false, 0
		writeTestState(t, env.FS(), pdir, st)

		s = env.mustOpen(t, WithSync(SyncNever))
		tp = stMust(s.Topic("events"))
		require.Equal(t, int64(100), stMust(tp.Partition(0)).LogEndOffset())
		requireRefillDivergesAt100(t, tp)
	})
}

// TestReaderDivergenceAfterTruncateAndCleanReopen: the log is truncated to 100 (which starts a
// new local leader epoch there), then closed cleanly before anything is appended, reopened and
// refilled. The epoch the truncation started must survive the reopen, so that a reader that
// committed 120 in the old epoch still finds the divergence at 100 rather than resuming at the
// new history's 120.
func TestReaderDivergenceAfterTruncateAndCleanReopen(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
		appendInBatches(t, tp, divergenceValues("old", 0, 150))
		r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
		stNextN(t, r, 120)
		require.NoError(t, r.Commit(context.Background()))
		require.NoError(t, r.Close())
		require.NoError(t, stMust(tp.Partition(0)).TruncateTo(100))
		require.NoError(t, s.Close())

		s = env.mustOpen(t)
		tp = stMust(s.Topic("events"))
		epochs, err := readWholeFile(env.FS(), env.path(partitionDirName("events", 0), leaderEpochFileName), 1<<20)
		require.NoError(t, err)
		require.Equal(t, "0\n2\n0 0\n1 100\n", string(epochs))
		requireRefillDivergesAt100(t, tp)
	})
}

// TestReaderCommitKeepsOtherPartitions: a named reader of some of a topic's partitions commits
// those only; the positions the name committed earlier for the others stay, as Kafka's
// OffsetCommit changes only the partitions it lists.
func TestReaderCommitKeepsOtherPartitions(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		s := env.mustOpen(t)
		tp := stCreate(t, s, "events", TopicConfig{Partitions: 3})
		for id := range int32(3) {
			require.NoError(t, stMust(tp.Partition(id)).Append(context.Background(), stRecs("a", "b", "c")...))
		}
		for _, c := range []struct {
			id   int32
			read int
		}{{0, 2}, {1, 1}} {
			r := stReader(t, tp, ReaderConfig{Name: "x", Start: Earliest, Partitions: []int32{c.id}})
			stNextN(t, r, c.read)
			require.NoError(t, r.Commit(context.Background()))
			require.NoError(t, r.Close())
		}
		require.Equal(t, map[string]map[int32]int64{"events": {0: 2, 1: 1}}, stMust(s.CommittedPositions("x")))

		// A reader of them all resumes at both and begins partition 2 at Start.
		r := stReader(t, tp, ReaderConfig{Name: "x", Start: Earliest})
		require.Equal(t, map[int32]int64{0: 2, 1: 1, 2: 0}, r.Positions())
	})
}

// TestReaderNameCaseCollision: reader names that differ only in case would share one positions
// file on a case-insensitive file system; the second is refused with ErrReaderExists, whether
// the first is live or only committed, as topic names are (ErrTopicExists).
func TestReaderNameCaseCollision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string
		commit  bool // the first commits and closes, else it stays live
		second  string
		wantErr string
	}{
		{"live", "Loader", false, "loader", `commitlog: reader name in use: "loader" collides with "Loader", an open reader, on case-insensitive file systems`},
		{"committed", "loader", true, "LOADER", `commitlog: reader name in use: "LOADER" collides with "loader", a reader with committed positions, on case-insensitive file systems`},
		{"same-name-committed", "loader", true, "loader", ""},
		{"other-name", "loader", false, "loader2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{})
				r := stReader(t, tp, ReaderConfig{Name: tc.first})
				if tc.commit {
					require.NoError(t, r.Commit(context.Background()))
					require.NoError(t, r.Close())
				}
				r2, err := tp.NewReader(ReaderConfig{Name: tc.second})
				if tc.wantErr == "" {
					require.NoError(t, err)
					require.NoError(t, r2.Close())
					return
				}
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrReaderExists)
				require.Nil(t, r2)
			})
		})
	}
}

// TestDeleteTopicRemovesReaderPositions: deleting a topic removes its committed positions from
// every reader's file, keeping those of other topics; a file left with none is removed (Kafka
// drops a deleted topic's committed offsets from every group). A topic created again under the
// name starts its readers afresh, and a live reader of the deleted topic does not write its
// positions back when it closes.
func TestDeleteTopicRemovesReaderPositions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readers   map[string][]string // reader -> topics it commits
		wantFiles map[string]map[string]map[int32]int64
	}{
		{"only-topic", map[string][]string{"loader": {"events"}}, map[string]map[string]map[int32]int64{}},
		{"two-topics", map[string][]string{"loader": {"events", "audit"}},
			map[string]map[string]map[int32]int64{"loader": {"audit": {0: 1}}}},
		{"two-readers", map[string][]string{"loader": {"events"}, "auditor": {"audit", "events"}},
			map[string]map[string]map[int32]int64{"auditor": {"audit": {0: 1}}}},
		{"other-topic-only", map[string][]string{"auditor": {"audit"}},
			map[string]map[string]map[int32]int64{"auditor": {"audit": {0: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				ctx := context.Background()
				s := env.mustOpen(t)
				topics := map[string]*Topic{}
				for _, name := range []string{"events", "audit"} {
					topics[name] = stCreate(t, s, name, TopicConfig{})
					require.NoError(t, topics[name].Append(ctx, stRecs("a", "b")...))
				}
				for reader, ts := range tc.readers {
					for _, topic := range ts {
						r := stReader(t, topics[topic], ReaderConfig{Name: reader, Start: Earliest})
						stNext(t, r)
						require.NoError(t, r.Commit(ctx))
						require.NoError(t, r.Close())
					}
				}
				// A live auto-committing reader of the topic, closed after the delete.
				live := stReader(t, topics["events"], ReaderConfig{Name: "tail", Start: Earliest, AutoCommitInterval: time.Hour})
				stNext(t, live)

				require.NoError(t, s.DeleteTopic("events"))
				require.NoError(t, live.Close())
				got := map[string]map[string]map[int32]int64{}
				for _, name := range stMust(s.Readers()) {
					got[name] = stMust(s.CommittedPositions(name))
				}
				require.Equal(t, tc.wantFiles, got)

				// The same name again: every reader starts where its config says.
				tp := stCreate(t, s, "events", TopicConfig{})
				require.NoError(t, tp.Append(ctx, stRecs("new")...))
				for reader := range tc.readers {
					r := stReader(t, tp, ReaderConfig{Name: reader, Start: Earliest})
					require.Equal(t, int64(0), stMust(r.Position(0)), reader)
					require.NoError(t, r.Close())
				}
			})
		})
	}
}

// TestReaderNameOnSeveralTopics: one reader name is open on two topics at once, one Reader per
// topic, as a Kafka consumer group reads several topics under one group id. Commits of each,
// concurrent ones included, keep the other topic's positions in the name's file; after a
// restart both resume exactly where they committed. DeleteReader is refused while either is
// open, and a second Reader of the name on one of the topics is refused.
func TestReaderNameOnSeveralTopics(t *testing.T) {
	forEachStore(t, func(t *testing.T, env *storeEnv) {
		ctx := context.Background()
		s, err := env.open(WithSync(SyncNever))
		require.NoError(t, err)
		orders := stCreate(t, s, "orders", TopicConfig{})
		payments := stCreate(t, s, "payments", TopicConfig{})
		var ov, pv []string
		for i := range 100 {
			ov = append(ov, "o"+string(rune('a'+i%26)))
			pv = append(pv, "p"+string(rune('a'+i%26)))
		}
		require.NoError(t, orders.Append(ctx, stRecs(ov...)...))
		require.NoError(t, payments.Append(ctx, stRecs(pv...)...))

		ro := stReader(t, orders, ReaderConfig{Name: "fraud", Start: Earliest})
		rp := stReader(t, payments, ReaderConfig{Name: "fraud", Start: Earliest})
		_, err = payments.NewReader(ReaderConfig{Name: "fraud"})
		require.ErrorIs(t, err, ErrReaderExists)
		require.ErrorIs(t, s.DeleteReader("fraud"), ErrReaderExists)

		// Each commits after every record it reads, both at once: the read-modify-write of
		// the shared file must never lose the other topic.
		var wg sync.WaitGroup
		for _, c := range []struct {
			r *Reader
			n int
		}{{ro, 30}, {rp, 40}} {
			wg.Go(func() {
				for range c.n {
					if _, err := c.r.Next(ctx); err != nil {
						t.Error(err)
						return
					}
					if err := c.r.Commit(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, map[int32]int64{0: 30}, ro.Positions())
		require.Equal(t, map[int32]int64{0: 40}, rp.Positions())
		want := map[string]map[int32]int64{"orders": {0: 30}, "payments": {0: 40}}
		require.Equal(t, want, stMust(s.CommittedPositions("fraud")))
		require.Equal(t, []string{"fraud"}, stMust(s.Readers()))
		require.NoError(t, ro.Close())
		require.ErrorIs(t, s.DeleteReader("fraud"), ErrReaderExists)
		require.NoError(t, rp.Close())
		require.NoError(t, s.Close())

		s = env.mustOpen(t, WithSync(SyncNever))
		require.Equal(t, want, stMust(s.CommittedPositions("fraud")))
		ro = stReader(t, stMust(s.Topic("orders")), ReaderConfig{Name: "fraud", Start: Latest})
		rp = stReader(t, stMust(s.Topic("payments")), ReaderConfig{Name: "fraud", Start: Latest})
		require.Equal(t, map[int32]int64{0: 30}, ro.Positions())
		require.Equal(t, map[int32]int64{0: 40}, rp.Positions())
		require.Equal(t, []stSeen{{0, 30, ov[30]}}, stSeenOf(stNextN(t, ro, 1)))
		require.Equal(t, []stSeen{{0, 40, pv[40]}}, stSeenOf(stNextN(t, rp, 1)))
	})
}

// TestReaderAutoCommitLeavesRecordInFlight: the background auto-commit commits the position before
// the record the loop body is processing, never past it, in each read mode (Next, Records, Scan);
// once the caller asks for the next record, the one before counts as processed; Close commits past
// every record returned.
func TestReaderAutoCommitLeavesRecordInFlight(t *testing.T) {
	modes := []struct {
		name string
		read func(ctx context.Context, r *Reader) iter.Seq2[*Record, error]
	}{
		{"next", func(ctx context.Context, r *Reader) iter.Seq2[*Record, error] {
			return func(yield func(*Record, error) bool) {
				for {
					rec, err := r.Next(ctx)
					if !yield(rec, err) || err != nil {
						return
					}
				}
			}
		}},
		{"records", func(ctx context.Context, r *Reader) iter.Seq2[*Record, error] { return r.Records(ctx) }},
		{"scan", func(ctx context.Context, r *Reader) iter.Seq2[*Record, error] { return r.Scan(ctx) }},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, env *storeEnv) {
				s := env.mustOpen(t)
				tp := stCreate(t, s, "events", TopicConfig{Partitions: 1})
				appendInBatches(t, tp, divergenceValues("v", 0, 3))
				const interval = 2 * time.Millisecond
				r := stReader(t, tp, ReaderConfig{Name: "worker", Start: Earliest, AutoCommitInterval: interval})
				committed := func() int64 {
					pos, err := s.CommittedPositions("worker")
					require.NoError(t, err)
					off, ok := pos["events"][0]
					if !ok {
						return -1
					}
					return off
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var offsets []int64
				for rec, err := range mode.read(ctx, r) {
					require.NoError(t, err)
					offsets = append(offsets, rec.Offset)
					// While this record is processed, the commits stop before it: the one
					// before it is processed, since the caller asked for this one.
					require.Eventually(t, func() bool { return committed() == rec.Offset }, 30*time.Second, interval)
					time.Sleep(10 * interval) // more ticks, none past it
					require.Equal(t, rec.Offset, committed(), "committed past the record in flight")
					if rec.Offset == 2 {
						break
					}
				}
				require.Equal(t, []int64{0, 1, 2}, offsets)
				require.NoError(t, r.Close())
				require.Equal(t, int64(3), committed(), "Close commits past every record returned")
			})
		})
	}
}
