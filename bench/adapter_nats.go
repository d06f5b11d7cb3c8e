package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS JetStream's file store through an embedded nats-server: in the same process, no
// listener (DontListen), the client connected in-process (nats.InProcessServer). A log is a
// file-storage stream of one subject, records are key/value frames as message payloads. Batches
// are published asynchronously and awaited (PublishAsyncComplete); workload c publishes
// synchronously to a server running with SyncAlways (an fsync per message). Sequential reads go
// through an ordered consumer, reads by number through GetMsg (direct get). A topic is one
// server with one stream per partition.

// natsTimeout bounds every wait on the embedded server.
const natsTimeout = 2 * time.Minute

func natsSystem() *System {
	return &System{
		Name:       "nats-jetstream",
		Kind:       KindPeer,
		Version:    "github.com/nats-io/nats-server/v2 v2.15.2, github.com/nats-io/nats.go v1.55.0",
		Config:     "embedded, DontListen + InProcessServer, file storage, async publish (c: SyncAlways server, sync publish)",
		Workloads:  "abcdefg",
		Named:      []string{"producers"},
		Persistent: true,
		Open: func(dir string, o Options) (Log, error) {
			n, err := startNATS(dir, o.Durable)
			if err != nil {
				return nil, err
			}
			s, err := n.stream("BENCH", "bench")
			if err != nil {
				return nil, errors.Join(err, n.close())
			}
			return &natsLog{n: n, s: s, subject: "bench"}, nil
		},
		OpenTopic: func(dir string, partitions int) (Topic, error) {
			n, err := startNATS(dir, false)
			if err != nil {
				return nil, err
			}
			t := &natsTopic{n: n}
			for p := range partitions {
				subject := fmt.Sprintf("bench.%d", p)
				s, err := n.stream(fmt.Sprintf("BENCH%d", p), subject)
				if err != nil {
					return nil, errors.Join(err, n.close())
				}
				t.parts = append(t.parts, &natsLog{n: n, s: s, subject: subject})
			}
			return t, nil
		},
	}
}

// natsServer is an embedded server and its in-process client.
type natsServer struct {
	srv    *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	asyncE atomic.Pointer[error] // first failed async publish
}

// startNATS starts a server storing into dir and connects to it in-process.
func startNATS(dir string, syncAlways bool) (*natsServer, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: "bench",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: true,
		NoLog:      true,
		NoSigs:     true,
		SyncAlways: syncAlways,
	})
	if err != nil {
		return nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(natsTimeout) {
		srv.Shutdown()
		return nil, errors.New("nats-server not ready")
	}
	n := &natsServer{srv: srv}
	if n.nc, err = nats.Connect(srv.ClientURL(), nats.InProcessServer(srv)); err != nil {
		srv.Shutdown()
		return nil, err
	}
	n.js, err = jetstream.New(n.nc,
		jetstream.WithPublishAsyncMaxPending(16384), // above the largest batch (g: 8192)
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			n.asyncE.CompareAndSwap(nil, &err)
		}))
	if err != nil {
		return nil, errors.Join(err, n.close())
	}
	return n, nil
}

// stream creates (or opens) the file-storage stream name of one subject.
func (n *natsServer) stream(name, subject string) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	return n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        name,
		Subjects:    []string{subject},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		AllowDirect: true,
	})
}

// awaitAsync waits for every async publish to be acknowledged.
func (n *natsServer) awaitAsync() error {
	select {
	case <-n.js.PublishAsyncComplete():
	case <-time.After(natsTimeout):
		return errors.New("nats: async publishes not acknowledged in time")
	}
	if err := n.asyncE.Load(); err != nil {
		return *err
	}
	return nil
}

func (n *natsServer) close() error {
	var err error
	if n.nc != nil {
		err = n.nc.Drain()
		n.nc.Close()
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	return err
}

// natsLog is one stream.
type natsLog struct {
	n       *natsServer
	s       jetstream.Stream
	subject string
	frame   []byte
	frames  [][]byte
	pool    sync.Pool // *[]byte frames of synchronous publishes
}

func (l *natsLog) Append(recs []Rec) error {
	if len(recs) == 1 {
		// One record, synchronously (workload c): many goroutines at once, a frame each.
		bp, _ := l.pool.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		*bp = AppendFrame((*bp)[:0], &recs[0])
		ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
		_, err := l.n.js.Publish(ctx, l.subject, *bp)
		cancel()
		l.pool.Put(bp)
		return err
	}
	if err := l.publishAsync(recs); err != nil {
		return err
	}
	return l.n.awaitAsync()
}

// publishAsync publishes recs without waiting for their acknowledgements; the frames stay
// untouched until the next call, after awaitAsync.
func (l *natsLog) publishAsync(recs []Rec) error {
	l.frame, l.frames = Frames(l.frame, l.frames, recs)
	for _, f := range l.frames {
		if _, err := l.n.js.PublishAsync(l.subject, f); err != nil {
			return err
		}
	}
	return nil
}

// Sync has nothing to add: acknowledged messages are the server's; it flushes on its own
// schedule (every message under SyncAlways).
func (l *natsLog) Sync() error { return nil }

func (l *natsLog) Count() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	info, err := l.s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Msgs), nil
}

func (l *natsLog) Scan(fn func(i int64, key, value []byte) error) error {
	total, err := l.Count()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	c, err := l.s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return err
	}
	it, err := c.Messages(jetstream.PullMaxMessages(4096))
	if err != nil {
		return err
	}
	defer it.Stop()
	for i := range total {
		m, err := it.Next()
		if err != nil {
			return err
		}
		k, v, err := SplitFrame(m.Data())
		if err != nil {
			return err
		}
		if err := fn(i, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (l *natsLog) Get(i int64) ([]byte, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	m, err := l.s.GetMsg(ctx, uint64(i)+1)
	if err != nil {
		return nil, nil, err
	}
	return SplitFrame(m.Data)
}

func (l *natsLog) Close() error { return l.n.close() }

// natsTopic is one server with a stream per partition.
type natsTopic struct {
	n     *natsServer
	parts []*natsLog
	route [][]Rec
}

func (t *natsTopic) Append(recs []Rec) error {
	t.route = routeRecs(t.route, recs, len(t.parts))
	for p, rs := range t.route {
		if len(rs) == 0 {
			continue
		}
		if err := t.parts[p].publishAsync(rs); err != nil {
			return err
		}
	}
	return t.n.awaitAsync()
}

func (t *natsTopic) Sync() error { return nil }

func (t *natsTopic) Count() (int64, error) {
	var n int64
	for _, p := range t.parts {
		c, err := p.Count()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func (t *natsTopic) Close() error { return t.n.close() }
