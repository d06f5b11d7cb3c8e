package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestRetiredSegmentNamesUnique: two segments with the same base offset retired within the
// delete delay (truncated, refilled and truncated again) keep their files under distinct
// "*.deleted" names, so that deleting the first never deletes the second's; the next open
// removes every one of them.
func TestRetiredSegmentNamesUnique(t *testing.T) {
	for _, tc := range []struct {
		retirements int
		want        []string // the .deleted files after them
	}{
		{1, []string{"00000000000000000010.index.deleted", "00000000000000000010.log.deleted", "00000000000000000010.timeindex.deleted"}},
		{2, []string{"00000000000000000010.index.1.deleted", "00000000000000000010.index.deleted",
			"00000000000000000010.log.1.deleted", "00000000000000000010.log.deleted",
			"00000000000000000010.timeindex.1.deleted", "00000000000000000010.timeindex.deleted"}},
		{3, []string{"00000000000000000010.index.1.deleted", "00000000000000000010.index.2.deleted", "00000000000000000010.index.deleted",
			"00000000000000000010.log.1.deleted", "00000000000000000010.log.2.deleted", "00000000000000000010.log.deleted",
			"00000000000000000010.timeindex.1.deleted", "00000000000000000010.timeindex.2.deleted", "00000000000000000010.timeindex.deleted"}},
	} {
		t.Run(fmt.Sprint(tc.retirements), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
				dir := filepath.Join(t.TempDir(), "log")
				cfg := baseConfig()
				cfg.FileDeleteDelay = time.Hour
				l := openTestLog(t, fsy, dir, cfg, WithClock(fixedClock))
				var contents [][]byte
				for i := range tc.retirements {
					// Segments [0, 10) and [10, ...): cut back into the first, which drops the second.
					appendBatches(t, l, 2, 5)
					l.appendMu.Lock()
					err := l.roll(10)
					l.appendMu.Unlock()
					require.NoError(t, err)
					recs := workloadRecords(100*i, 5)
					require.NoError(t, l.Append(context.Background(), recs...))
					contents = append(contents, fsReadFile(t, fsy, segPath(dir, 10, logSuffix)))
					require.NoError(t, l.TruncateTo(0))
				}
				var deleted []string
				for _, name := range fsListDir(t, fsy, dir) {
					if strings.HasSuffix(name, deletedSuffix) {
						deleted = append(deleted, name)
					}
				}
				require.Equal(t, tc.want, deleted)
				// Each retirement's .log is its own segment's bytes.
				for i, data := range contents {
					name := segmentName(10) + logSuffix + deletedSuffix
					if i > 0 {
						name = fmt.Sprintf("%s%s.%d%s", segmentName(10), logSuffix, i, deletedSuffix)
					}
					require.Equal(t, data, fsReadFile(t, fsy, filepath.Join(dir, name)), name)
				}
				// Files of retirements a process left behind (killed within the delay) are
				// removed by the next open, whatever their retirement number.
				require.NoError(t, l.Close())
				for _, name := range tc.want {
					fsWriteFile(t, fsy, filepath.Join(dir, name), []byte("leftover"))
				}
				fsWriteFile(t, fsy, filepath.Join(dir, "notes.1.deleted"), []byte("not a segment's"))
				l = openTestLog(t, fsy, dir, cfg, WithClock(fixedClock))
				left := slices.DeleteFunc(fsListDir(t, fsy, dir), func(n string) bool { return !strings.HasSuffix(n, deletedSuffix) })
				require.Equal(t, []string{"notes.1.deleted"}, left)
			})
		})
	}
}
