package commitlog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

func TestCloseWhileIntervalSyncRuns(t *testing.T) {
	// Under SyncInterval the flusher calls Sync on its own; a Close that took the write locks
	// first and then waited for the flusher would wait for ever on a Sync blocked on them.
	forEachBackend(t, func(t *testing.T, fsy fsys.FS) {
		for i := range 200 {
			cfg := baseConfig()
			cfg.Sync = SyncInterval(time.Microsecond)
			l, err := OpenLog(t.TempDir(), cfg, withFS(fsy), WithClock(fixedClock))
			require.NoError(t, err)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for j := 0; ; j++ {
					if err := l.Append(context.Background(), workloadRecord(j)); err != nil {
						return
					}
				}
			}()
			time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err, "iteration %d", i)
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: Close did not return", i)
			}
			<-done
		}
	})
}
