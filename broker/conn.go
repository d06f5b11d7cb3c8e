package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipelineDepth is how many requests a connection reads ahead of the one being answered.
// Clients pipeline (kgo and librdkafka send up to 5 produce requests, and any number of others,
// before the first answer); Kafka reads one at a time and mutes the socket, we read a few ahead
// so that decoding overlaps the work of the request before.
const pipelineDepth = 8

// maxQueuedBytes bounds the bytes of the requests a connection has read and not yet answered:
// a frame is read ahead only while the requests queued before it and it fit, or when none is
// queued. A connection then holds at most about one frame of socket.request.max.bytes and
// maxQueuedBytes, where eight read-ahead Produce frames could hold 800 MiB while a long Fetch
// waits (Kafka holds one request per connection, muting the socket).
const maxQueuedBytes = 16 << 20

// request is one decoded request frame.
type request struct {
	key      int16
	version  int16
	corr     int32
	clientID string
	msg      kmsg.Request
	// saslToken is set (non-nil) for a raw SASL token frame, the framing after SaslHandshake v0
	// (no header; msg is nil).
	saslToken []byte
	// awaitFraming says that the reader waits, after this request, for the answering goroutine
	// to say on saslFraming whether the next frame is a raw SASL token.
	awaitFraming bool
	// size is the frame's size, reserved in the connection's queue until it is answered.
	size int
}

// conn is one client connection: a reader goroutine that decodes frames, and the goroutine of
// run that answers them one at a time, in order.
type conn struct {
	srv    *server
	nc     net.Conn
	log    *slog.Logger
	remote string

	// stopping is closed when Serve's context ends: a fetch waiting for records answers at once.
	stopping <-chan struct{}

	// authenticated is set once SASL authentication succeeded, or from the start without SASL;
	// only the answering goroutine writes it, the reader reads it (frame size limits) through
	// authDone.
	authenticated bool
	authDone      chan struct{}
	sasl          saslSession
	saslMechanism string
	saslUser      string
	// saslRaw says, on the answering goroutine, that the next frame is a raw SASL token
	// (SaslHandshake v0 began an exchange that is not over); it is handed to the reader on
	// saslFraming after each request marked awaitFraming.
	saslRaw     bool
	saslFraming chan bool
	// quit is closed when run stops answering, so that a reader waiting on saslFraming stops.
	quit chan struct{}

	// queueMu guards queued, the bytes of the requests read and not yet answered, and dequeued,
	// closed (and replaced) when an answer frees some (reserve, release).
	queueMu  sync.Mutex
	queued   int
	dequeued chan struct{}

	wbuf []byte
}

// reserve waits until a frame of size bytes fits the connection's queue (maxQueuedBytes, or an
// empty queue) and counts it in.
func (c *conn) reserve(size int) error {
	for {
		c.queueMu.Lock()
		if c.queued == 0 || c.queued+size <= maxQueuedBytes {
			c.queued += size
			c.queueMu.Unlock()
			return nil
		}
		if c.dequeued == nil {
			c.dequeued = make(chan struct{})
		}
		ch := c.dequeued
		c.queueMu.Unlock()
		select {
		case <-ch:
		case <-c.quit:
			return errClosing
		case <-c.stopping:
			return errClosing
		}
	}
}

// release counts an answered request's frame out of the queue.
func (c *conn) release(size int) {
	if size == 0 {
		return
	}
	c.queueMu.Lock()
	c.queued -= size
	if c.dequeued != nil {
		close(c.dequeued)
		c.dequeued = nil
	}
	c.queueMu.Unlock()
}

func newConn(srv *server, nc net.Conn) *conn {
	c := &conn{srv: srv, nc: nc, remote: nc.RemoteAddr().String(), authDone: make(chan struct{}),
		saslFraming: make(chan bool, 1), quit: make(chan struct{})}
	c.log = srv.cfg.Logger.With("remote", c.remote)
	if srv.cfg.SASL == nil {
		c.authenticated = true
		close(c.authDone)
	}
	return c
}

// errClosing stops a connection without a logged error: the client left or Serve ended.
var errClosing = errors.New("connection closing")

// run serves the connection until the client closes it, a frame is refused, or ctx ends (then
// the requests already read are answered first).
func (c *conn) run(ctx context.Context) {
	c.stopping = ctx.Done()
	if err := c.tlsHandshake(ctx); err != nil {
		c.nc.Close()
		if ctx.Err() == nil {
			c.log.Info("kafka connection closed", "reason", err)
		}
		return
	}
	reqs := make(chan *request, pipelineDepth)
	readErr := make(chan error, 1)
	go func() {
		readErr <- c.readLoop(reqs)
		close(reqs)
	}()
	// Serve's end stops the reading, not the answering: the requests read are answered, each
	// write within the request timeout so that a client that does not read cannot hold Serve.
	stop := context.AfterFunc(ctx, func() {
		c.nc.SetReadDeadline(time.Now())
		c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.RequestTimeout))
	})
	defer stop()
	hctx := context.WithoutCancel(ctx)
	var failed error
	for r := range reqs {
		err := c.serveRequest(hctx, r)
		c.release(r.size)
		if err != nil {
			failed = err
			break
		}
	}
	c.nc.Close()
	close(c.quit)
	for range reqs { // unblock the reader
	}
	err := <-readErr
	if failed != nil {
		err = failed
	}
	switch {
	case err == nil, errors.Is(err, errClosing), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case ctx.Err() != nil && isTimeout(err):
	default:
		c.log.Info("kafka connection closed", "reason", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readLoop reads and decodes frames until an error, handing each request to reqs. The size
// prefix is checked as soon as its 4 bytes are in, and the frame's buffer grows with the bytes
// that arrive (readFrameBody), so that a frame announced and never sent costs nothing.
func (c *conn) readLoop(reqs chan<- *request) error {
	var head [8]byte
	cfg := &c.srv.cfg
	debug := c.log.Enabled(context.Background(), slog.LevelDebug)
	for {
		// The first byte may take as long as the idle timeout; the rest of the frame must follow
		// within the request timeout.
		if err := c.setReadDeadline(cfg.IdleTimeout); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.nc, head[:1]); err != nil {
			if c.isStopping() {
				return errClosing
			}
			if isTimeout(err) {
				return fmt.Errorf("idle for %s (connections.max.idle.ms)", cfg.IdleTimeout)
			}
			return err
		}
		if err := c.setReadDeadline(cfg.RequestTimeout); err != nil {
			return err
		}
		if n, err := io.ReadFull(c.nc, head[1:4]); err != nil {
			return c.frameReadErr(err, 1+n, 4)
		}
		size := int32(binary.BigEndian.Uint32(head[:4]))
		switch limit, setting := c.frameLimit(int16(kmsg.Produce)); {
		case size < 0:
			return fmt.Errorf("request frame size %d is negative", size)
		case size < 8:
			return fmt.Errorf("request frame size %d is shorter than a request header (8 bytes at least)", size)
		case size > limit:
			return fmt.Errorf("request frame size %d is over the limit of %d bytes (%s)", size, limit, setting)
		}
		if n, err := io.ReadFull(c.nc, head[4:8]); err != nil {
			return c.frameReadErr(err, 4+n, int(size)+4)
		}
		key := int16(binary.BigEndian.Uint16(head[4:6]))
		if limit, setting := c.frameLimit(key); size > limit {
			return fmt.Errorf("request frame size %d of api key %d (%s) is over the limit of %d bytes (%s)", size, key, kmsg.NameForKey(key), limit, setting)
		}
		if err := c.reserve(int(size)); err != nil {
			return err
		}
		body, err := readFrameBody(c.nc, head[4:8], int(size))
		if err != nil {
			return c.frameReadErr(err, 4+len(body), int(size)+4)
		}
		r, err := decodeRequest(c.srv.apis, body)
		if err != nil {
			return err
		}
		r.size = int(size)
		if debug {
			c.log.Debug("kafka request", "api_key", r.key, "api_version", r.version, "correlation_id", r.corr, "client_id", r.clientID, "bytes", size)
		}
		// After SaslHandshake v0 the frames are raw SASL tokens, until the exchange ends; the
		// answering goroutine says when.
		select {
		case <-c.authDone:
		default:
			r.awaitFraming = r.key == int16(kmsg.SASLHandshake) && r.version == 0 && r.msg != nil
		}
		for {
			select {
			case reqs <- r:
			case <-c.stopping:
				// Serve ended while this request was read: it is answered, nothing after it.
				reqs <- r
				return errClosing
			}
			if !r.awaitFraming {
				break
			}
			var raw bool
			select {
			case raw = <-c.saslFraming:
			case <-c.quit:
				return errClosing
			}
			if !raw {
				break
			}
			if r, err = c.readSASLToken(); err != nil {
				return err
			}
		}
	}
}

// setReadDeadline sets the read deadline d from now, or returns errClosing once Serve is ending.
// Serve's end sets a deadline of now after c.stopping is closed: either that comes after this
// deadline, or c.stopping is seen closed here; a deadline set without the check could undo it
// and leave Serve waiting for an idle client.
func (c *conn) setReadDeadline(d time.Duration) error {
	c.nc.SetReadDeadline(time.Now().Add(d))
	if c.isStopping() {
		return errClosing
	}
	return nil
}

func (c *conn) isStopping() bool {
	select {
	case <-c.stopping:
		return true
	default:
		return false
	}
}

// frameReadErr names the failure to read a frame of want bytes (its size prefix included) of
// which got arrived.
func (c *conn) frameReadErr(err error, got, want int) error {
	switch {
	case c.isStopping():
		return errClosing
	case isTimeout(err):
		return fmt.Errorf("request frame not complete within %s: %d of %d bytes read", c.srv.cfg.RequestTimeout, got, want)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("request frame truncated: the client closed after %d of %d bytes: %w", got, want, io.ErrUnexpectedEOF)
	}
	return err
}

// frameChunk is what a frame's buffer grows by at least, doubling, as its bytes arrive.
const frameChunk = 64 << 10

// readFrameBody reads a frame body of size bytes that starts with head into a buffer that
// grows as the bytes arrive, to at most twice what arrived: a client announcing a frame of
// socket.request.max.bytes and sending a few bytes of it holds a few bytes. It returns what was
// read with a failure.
func readFrameBody(r io.Reader, head []byte, size int) ([]byte, error) {
	body := make([]byte, len(head), min(size, frameChunk))
	copy(body, head)
	for len(body) < size {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(size-len(body), max(len(body), frameChunk)))
		}
		n, err := io.ReadFull(r, body[len(body):min(size, cap(body))])
		body = body[:len(body)+n]
		if err != nil {
			return body, err
		}
	}
	return body, nil
}

// frameLimit is the largest frame taken for a request of key, with the setting that sets it.
func (c *conn) frameLimit(key int16) (int32, string) {
	select {
	case <-c.authDone:
	default:
		return maxUnauthenticatedBytes, "before SASL authentication, sasl.server.max.receive.size"
	}
	if key == int16(kmsg.Produce) {
		return c.srv.cfg.MaxRequestBytes, "socket.request.max.bytes"
	}
	if maxControlRequestBytes < c.srv.cfg.MaxRequestBytes {
		return maxControlRequestBytes, "requests other than Produce"
	}
	return c.srv.cfg.MaxRequestBytes, "socket.request.max.bytes"
}

// decodeRequest decodes one frame body (the bytes after the size): the request header (v1, or
// v2 with tagged fields for a flexible version) and the request. A request of an API or version
// not served is returned undecoded (msg nil) for serveRequest to answer or refuse; a body that
// does not decode is an error.
func decodeRequest(apis apiTable, body []byte) (*request, error) {
	rd := kbin.Reader{Src: body}
	r := &request{key: rd.Int16(), version: rd.Int16(), corr: rd.Int32()}
	if id := rd.NullableString(); id != nil {
		r.clientID = *id
	}
	if !rd.Ok() {
		return nil, errors.New("truncated request header")
	}
	a := apis.lookup(r.key)
	if a == nil || r.version < a.min || r.version > a.max {
		return r, nil
	}
	msg := kmsg.RequestForKey(r.key)
	msg.SetVersion(r.version)
	if msg.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, fmt.Errorf("%s v%d: bad tagged fields in the request header", kmsg.NameForKey(r.key), r.version)
		}
	}
	if err := msg.ReadFrom(rd.Src); err != nil {
		// kmsg's own copy of kbin.ErrNotEnoughData, whose message speaks of a response.
		if err.Error() == kbin.ErrNotEnoughData.Error() {
			err = fmt.Errorf("its %d bytes end before its fields do (a length or count past the frame's end)", len(rd.Src))
		}
		return nil, fmt.Errorf("%s v%d: malformed request: %w", kmsg.NameForKey(r.key), r.version, err)
	}
	r.msg = msg
	return r, nil
}

// serveRequest answers r and writes the answer. An error closes the connection.
func (c *conn) serveRequest(ctx context.Context, r *request) error {
	if r.awaitFraming {
		defer func() { c.saslFraming <- c.saslRaw }()
	}
	if r.saslToken != nil {
		return c.serveSASLToken(r.saslToken)
	}
	a := c.srv.apis.lookup(r.key)
	if r.msg == nil {
		if r.key == int16(kmsg.ApiVersions) {
			// Kafka answers an ApiVersions it cannot parse with v0 and UNSUPPORTED_VERSION, so
			// that the client retries with a version it finds in the list.
			resp := apiVersionsResponse(c.srv.apis, 0)
			resp.ErrorCode = errUnsupportedVersion
			return c.writeResponse(r, resp, nil)
		}
		if a == nil {
			return fmt.Errorf("api key %d (%s) v%d is not served", r.key, kmsg.NameForKey(r.key), r.version)
		}
		return fmt.Errorf("%s v%d is not served (versions %d to %d)", kmsg.NameForKey(r.key), r.version, a.min, a.max)
	}
	if !c.authenticated && !a.beforeAuth {
		return fmt.Errorf("%s before SASL authentication", kmsg.NameForKey(r.key))
	}
	rep, err := a.handle(ctx, c, r)
	if err != nil {
		return err
	}
	if rep.none {
		return rep.closeAfter
	}
	if err := c.writeResponse(r, rep.msg, rep.fetch); err != nil {
		return err
	}
	return rep.closeAfter
}

// reply is a handler's answer: a response, or none (Produce with acks=0), with the fetched
// batch ranges a Fetch response sends from the segment files.
type reply struct {
	msg   kmsg.Response
	none  bool
	fetch *fetchPayload
	// closeAfter, when set, closes the connection once the answer is written, with it as the
	// reason (not logged when it wraps errClosing): Kafka answers a failed authentication, then
	// closes.
	closeAfter error
}

// writeResponse writes the frame of resp to r: its size, the response header (v0; v1 with
// tagged fields for a flexible version other than ApiVersions), and the body.
func (c *conn) writeResponse(r *request, resp kmsg.Response, fp *fetchPayload) error {
	// ApiVersions' unsupported-version answer keeps its v0; all others take r's version.
	if resp.Key() != int16(kmsg.ApiVersions) || r.msg != nil {
		resp.SetVersion(r.version)
	}
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(r.corr))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b = append(b, 0) // no tagged fields
	}
	b = resp.AppendTo(b)
	c.wbuf = b
	within := c.setWriteDeadline()
	var err error
	if fp != nil {
		err = fp.write(c.nc, b, resp.IsFlexible())
	} else {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		_, err = c.nc.Write(b)
	}
	if isTimeout(err) {
		return fmt.Errorf("%s response not taken by the client within %s: %w", kmsg.NameForKey(resp.Key()), within, err)
	}
	return err
}

// setWriteDeadline bounds the writing of one response: by the idle timeout, as a client that
// takes no bytes for that long is idle (connections.max.idle.ms), and once Serve is ending by
// the request timeout, so that a client that does not read cannot hold Serve's return. As with
// setReadDeadline, c.stopping is checked after the deadline is set, so that the shorter
// deadline Serve's end sets is never undone. It returns the time given.
func (c *conn) setWriteDeadline() time.Duration {
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	if c.isStopping() {
		c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.RequestTimeout))
		return c.srv.cfg.RequestTimeout
	}
	return c.srv.cfg.IdleTimeout
}
