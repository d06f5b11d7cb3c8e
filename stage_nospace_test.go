package commitlog

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestNoSpaceUnderContention: SyncAlways appenders contend (staging) while the disk fills
// now and then; after a power loss, exactly the acknowledged records are in the log, each once.
func TestNoSpaceUnderContention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := t.TempDir()
		ffs := newFaultFS(t, fsy, dir)
		cfg := baseConfig()
		cfg.Sync = SyncAlways
		cfg.SegmentBytes = 32 << 10
		l := openTestLog(t, ffs, dir, cfg)
		ctx := context.Background()
		var mu sync.Mutex
		acked := map[int64]string{}
		failed := 0
		var wg sync.WaitGroup
		for w := range 10 {
			wg.Go(func() {
				for i := range 80 {
					if w == 0 && i%10 == 5 {
						ffs.Inject(faultfs.Once(faultfs.Is(faultfs.Write, logSuffix), faultfs.Fault{Err: syscall.ENOSPC, Written: 50}))
					}
					r := rvRecord(w, i)
					err := l.Append(ctx, r)
					mu.Lock()
					if err != nil {
						if !errors.Is(err, ErrNoSpace) {
							t.Errorf("append: %v", err)
						}
						failed++
					} else {
						if k, ok := acked[r.Offset]; ok {
							t.Errorf("offset %d acked twice: %s %s", r.Offset, k, r.Key)
						}
						acked[r.Offset] = string(r.Key)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("%d acked, %d failed", len(acked), failed)
		require.Equal(t, int64(len(acked)), l.LogEndOffset())
		for _, mode := range powerLossModes {
			crashed := openTestLog(t, crashImage(t, ffs, mode), dir, cfg)
			require.Equal(t, int64(len(acked)), crashed.LogEndOffset(), mode)
			var r Record
			for off, key := range acked {
				require.NoError(t, crashed.ReadRecord(off, &r))
				require.Equal(t, key, string(r.Key))
			}
			require.NoError(t, crashed.Close())
		}
	})
}
