package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConnQueueBound: a connection reads a frame ahead only while the unanswered frames and it
// fit maxQueuedBytes, or when nothing is queued; an answer frees its frame's bytes for the next.
func TestConnQueueBound(t *testing.T) {
	c := &conn{quit: make(chan struct{}), stopping: make(chan struct{})}
	// One frame larger than the bound is taken into an empty queue.
	require.NoError(t, c.reserve(maxQueuedBytes+1))
	c.release(maxQueuedBytes + 1)
	require.Zero(t, c.queued)

	require.NoError(t, c.reserve(10<<20))
	require.NoError(t, c.reserve(6<<20), "10 MiB and 6 MiB fit 16 MiB")
	got := make(chan error, 1)
	go func() { got <- c.reserve(1) }() // a byte more waits for an answer
	c.release(10 << 20)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the reservation did not proceed after a release")
	}
	c.queueMu.Lock()
	require.Equal(t, 6<<20+1, c.queued)
	c.queueMu.Unlock()

	// A reader waiting for room stops when the connection stops answering.
	require.NoError(t, c.reserve(10<<20-1), "6 MiB and a byte, and 10 MiB less a byte, fill 16 MiB")
	go func() { got <- c.reserve(1 << 20) }() // a MiB more: waits
	close(c.quit)
	select {
	case err := <-got:
		require.ErrorIs(t, err, errClosing)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting reservation did not end with the connection")
	}
}
