package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/group"
)

// Serve answers Kafka clients on ln with the topics, groups and transactions of s until ctx
// ends, then stops taking connections and requests, answers the requests already read, closes
// every connection and returns nil. ln is closed when Serve returns; s is not (the caller owns
// it and closes it after Serve returns). A listener that fails for another reason is returned
// with its error.
//
// The node is a single-broker cluster: it leads every partition, is the coordinator of every
// group and transactional id, and is the only replica (Kafka's replication factor 1).
func Serve(ctx context.Context, ln net.Listener, s *commitlog.Store, cfg Config) error {
	srv, err := newServer(s, cfg, ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	if srv.cfg.TLS != nil {
		ln = tls.NewListener(ln, srv.cfg.TLS)
	}
	return srv.serve(ctx, ln)
}

// server is one Serve's state.
type server struct {
	store  *commitlog.Store
	groups *group.Coordinator
	cfg    Config
	apis   apiTable
	host   string // advertised
	port   int32

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

func newServer(s *commitlog.Store, cfg Config, addr net.Addr) (*server, error) {
	cfg = cfg.withDefaults()
	if cfg.SASL != nil {
		if err := cfg.SASL.check(); err != nil {
			return nil, err
		}
	}
	g, err := s.GroupCoordinator()
	if err != nil {
		return nil, fmt.Errorf("broker: the group coordinator: %w", err)
	}
	srv := &server{store: s, groups: g, cfg: cfg, apis: newAPITable(servedAPIs()), conns: map[*conn]struct{}{}}
	srv.host, srv.port = cfg.AdvertisedHost, cfg.AdvertisedPort
	if srv.host == "" || srv.port == 0 {
		host, port, err := net.SplitHostPort(addr.String())
		if err != nil {
			return nil, fmt.Errorf("broker: the listener's address %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		if srv.host == "" {
			srv.host = host
		}
		if srv.port == 0 {
			p, err := strconv.ParseInt(port, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("broker: the listener's port %q: %w", port, err)
			}
			srv.port = int32(p)
		}
	}
	return srv, nil
}

func (srv *server) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		var nc net.Conn
		nc, err = ln.Accept()
		if err != nil {
			break
		}
		c := newConn(srv, nc)
		srv.mu.Lock()
		full := len(srv.conns) >= srv.cfg.MaxConnections
		if !full {
			srv.conns[c] = struct{}{}
			srv.wg.Add(1)
		}
		srv.mu.Unlock()
		if full {
			srv.cfg.Logger.Warn("kafka connection refused: too many connections", "remote", nc.RemoteAddr(), "max", srv.cfg.MaxConnections)
			nc.Close()
			continue
		}
		go func() {
			defer srv.wg.Done()
			c.run(ctx)
			srv.mu.Lock()
			delete(srv.conns, c)
			srv.mu.Unlock()
		}()
	}
	ln.Close()
	srv.wg.Wait()
	if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("broker: accept: %w", err)
}
