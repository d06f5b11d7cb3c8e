package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestReaderCommitCrash: commits without SyncCommits are renames of a temporary file, never
// synced. A killed process keeps the last commit; a power loss keeps what reached the disk: the
// last synced commit while the directory entry of the unsynced ones never did, or, once a sync
// of the store's directory made the newest entry durable without its bytes, a torn file, after
// which the reader starts at its Start (Earliest here, offset 0) rather than failing. Records
// are appended with SyncAlways, so the log itself survives every crash whole.
func TestReaderCommitCrash(t *testing.T) {
	const dir = "/store"
	for _, tc := range []struct {
		name    string
		syncDir bool // a sync of the store's directory after the unsynced commits
		want    map[faultfs.Mode]int64
	}{
		{"entries-not-durable", false, map[faultfs.Mode]int64{
			faultfs.ProcessKill: 6, faultfs.PowerLossKeep: 2, faultfs.PowerLossDrop: 2, faultfs.PowerLossTorn: 2,
		}},
		{"entry-durable-bytes-not", true, map[faultfs.Mode]int64{
			faultfs.ProcessKill: 6, faultfs.PowerLossKeep: 6, faultfs.PowerLossDrop: 0, faultfs.PowerLossTorn: 0,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			inner := fsys.NewMemory()
			ffs := newFaultFS(t, inner, dir)
			s, err := Open(dir, withFS(ffs), WithSync(SyncAlways), WithRetentionCheckInterval(-1), WithLogger(quietLog))
			require.NoError(t, err)
			tp := stCreate(t, s, "events", TopicConfig{})
			require.NoError(t, tp.Append(ctx, stRecs("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7")...))

			synced := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest, SyncCommits: true})
			stNextN(t, synced, 2)
			require.NoError(t, synced.Commit(ctx))
			require.NoError(t, synced.Close())
			r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
			for range 2 {
				stNextN(t, r, 2)
				require.NoError(t, r.Commit(ctx))
			}
			require.Equal(t, map[int32]int64{0: 6}, r.Positions())
			if tc.syncDir {
				require.NoError(t, ffs.SyncDir(dir))
			}

			for mode, want := range tc.want {
				t.Run(mode.String(), func(t *testing.T) {
					img := crashImage(t, ffs, mode)
					s, err := Open(dir, withFS(img), WithSync(SyncAlways), WithRetentionCheckInterval(-1), WithLogger(quietLog))
					require.NoError(t, err)
					defer s.Close()
					tp := stMust(s.Topic("events"))
					require.Equal(t, int64(8), stMust(tp.Partition(0)).LogEndOffset())
					r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest})
					require.Equal(t, map[int32]int64{0: want}, r.Positions())
					require.Equal(t, []stSeen{{0, want, "r" + string(rune('0'+want))}}, stSeenOf(stNextN(t, r, 1)))
					// The next commit repairs a torn file.
					require.NoError(t, r.Commit(ctx))
					require.Equal(t, map[string]map[int32]int64{"events": {0: want + 1}}, stMust(s.CommittedPositions("loader")))
				})
			}
		})
	}
}

// TestReaderCloseCommitDurable: the last commit Close makes for AutoCommitInterval is synced
// whatever SyncCommits says, so a power loss after a clean close keeps it.
func TestReaderCloseCommitDurable(t *testing.T) {
	const dir = "/store"
	ctx := context.Background()
	ffs := newFaultFS(t, fsys.NewMemory(), dir)
	s, err := Open(dir, withFS(ffs), WithSync(SyncAlways), WithRetentionCheckInterval(-1), WithLogger(quietLog))
	require.NoError(t, err)
	tp := stCreate(t, s, "events", TopicConfig{})
	require.NoError(t, tp.Append(ctx, stRecs("r0", "r1", "r2", "r3")...))
	r := stReader(t, tp, ReaderConfig{Name: "loader", Start: Earliest, AutoCommitInterval: time.Hour})
	stNextN(t, r, 3)
	require.NoError(t, r.Close())

	img := crashImage(t, ffs, faultfs.PowerLossDrop)
	s, err = Open(dir, withFS(img), WithRetentionCheckInterval(-1), WithLogger(quietLog))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, map[string]map[int32]int64{"events": {0: 3}}, stMust(s.CommittedPositions("loader")))
}
