package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/metrics/promcollector"
)

// metricsShutdownGrace bounds the wait for scrapes in progress when serve stops.
const metricsShutdownGrace = 5 * time.Second

// metricsServer is serve's --metrics-addr: an HTTP server of /metrics in Prometheus' text format,
// with the store's figures (promcollector) and the process's and Go runtime's.
type metricsServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// startMetrics listens on addr and serves /metrics with s's figures until stop.
func startMetrics(addr string, s *commitlog.Store, log *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(promcollector.New(s), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	// ContinueOnError: a figure that cannot be read (a damaged reader positions file) is logged,
	// and the rest still scraped.
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &metricsServer{ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() { m.done <- m.srv.Serve(ln) }()
	return m, nil
}

// Addr returns the address the server listens on.
func (m *metricsServer) Addr() net.Addr { return m.ln.Addr() }

// stop stops taking scrapes and waits, a few seconds at most, for those in progress.
func (m *metricsServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownGrace)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if serveErr := <-m.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
