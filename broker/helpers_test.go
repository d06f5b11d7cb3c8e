package broker

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// testBroker is a store served on a loopback port for a test.
type testBroker struct {
	store *commitlog.Store
	addr  string
	stop  func() // ends Serve and waits for it
}

// startBroker serves store (a new file store in t.TempDir() when nil) on 127.0.0.1 until the
// test ends.
func startBroker(t testing.TB, store *commitlog.Store, cfg Config) *testBroker {
	t.Helper()
	if store == nil {
		var err error
		store, err = commitlog.Open(t.TempDir(), commitlog.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, store, cfg) }()
	b := &testBroker{store: store, addr: ln.Addr().String()}
	var stopped bool
	b.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return within 30s of its context's end")
		}
	}
	t.Cleanup(b.stop)
	return b
}

// client returns a kgo client of b, closed when the test ends.
func (b *testBroker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic with n partitions in b's store.
func (b *testBroker) createTopic(t testing.TB, name string, n int32) {
	t.Helper()
	_, err := b.store.CreateTopic(name, commitlog.TopicConfig{Partitions: n})
	require.NoError(t, err)
}
