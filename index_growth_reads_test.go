package commitlog

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/commitlog-go/commitlog/internal/fsys"
	"github.com/stretchr/testify/require"
)

// TestIndexGrowthWithConcurrentReads: the active segment's offset index grows (remaps, from a
// page by doubling) while reads look it up: every read finds its record, and the race detector
// sees no read of the mapping concurrent with the remap (the log holds its readers' lock for
// writing while an index grows).
func TestIndexGrowthWithConcurrentReads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		dir := filepath.Join(t.TempDir(), "log")
		cfg := baseConfig()
		cfg.IndexIntervalBytes = 1 // an entry for every batch but the first
		l := openTestLog(t, fsy, dir, cfg)
		const n = 1200 // entries past two steps: 4 KiB (512 entries), 8 KiB, 16 KiB
		var published atomic.Int64
		done := make(chan struct{})
		errs := make(chan error, 3)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(done)
			for i := range n {
				if err := l.Append(context.Background(), workloadRecord(i)); err != nil {
					errs <- err
					return
				}
				published.Store(int64(i + 1))
			}
		})
		for r := range 2 {
			wg.Go(func() {
				for i := int64(r); ; i += 7 {
					select {
					case <-done:
						return
					default:
					}
					p := published.Load()
					if p == 0 {
						continue
					}
					off := i % p
					var rec Record
					if err := l.ReadRecord(off, &rec); err != nil {
						errs <- err
						return
					}
					if rec.Offset != off {
						errs <- fmt.Errorf("read offset %d: got the record at %d", off, rec.Offset)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, l.active().State().OffsetEntries, n-1)
		offsetErr, timeErr := l.active().CheckIndexes()
		require.NoError(t, offsetErr)
		require.NoError(t, timeErr)
	})
}
