package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipelineDepth is how many requests a connection reads ahead of the one being answered.
// Clients pipeline (kgo and librdkafka send up to 5 produce requests, and any number of others,
// before the first answer); Kafka reads one at a time and mutes the socket, we read a few ahead
// so that decoding overlaps the work of the request before.
const pipelineDepth = 8

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

	wbuf []byte
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
	// Serve's end stops the reading, not the answering: the requests read are answered.
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()
	hctx := context.WithoutCancel(ctx)
	var failed error
	for r := range reqs {
		if err := c.serveRequest(hctx, r); err != nil {
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

// readLoop reads and decodes frames until an error, handing each request to reqs.
func (c *conn) readLoop(reqs chan<- *request) error {
	var head [8]byte
	cfg := &c.srv.cfg
	for {
		// The first byte may take as long as the idle timeout; the rest of the frame must follow
		// within the request timeout.
		c.nc.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
		select {
		case <-c.stopping: // the deadline of Serve's end may have come before this one
			return errClosing
		default:
		}
		if _, err := io.ReadFull(c.nc, head[:1]); err != nil {
			if isTimeout(err) {
				select {
				case <-c.stopping:
					return errClosing
				default:
				}
				return fmt.Errorf("idle for %s (connections.max.idle.ms)", cfg.IdleTimeout)
			}
			return err
		}
		c.nc.SetReadDeadline(time.Now().Add(cfg.RequestTimeout))
		if _, err := io.ReadFull(c.nc, head[1:8]); err != nil {
			return frameReadErr(err, cfg.RequestTimeout)
		}
		size := int32(binary.BigEndian.Uint32(head[:4]))
		key := int16(binary.BigEndian.Uint16(head[4:6]))
		if limit := c.frameLimit(key); size < 8 || size > limit {
			return fmt.Errorf("request frame of %d bytes (api key %d): outside [8, %d] (socket.request.max.bytes)", size, key, limit)
		}
		body := make([]byte, size)
		copy(body, head[4:8])
		if _, err := io.ReadFull(c.nc, body[4:]); err != nil {
			return frameReadErr(err, cfg.RequestTimeout)
		}
		r, err := decodeRequest(c.srv.apis, body)
		if err != nil {
			return err
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

func frameReadErr(err error, timeout time.Duration) error {
	if isTimeout(err) {
		return fmt.Errorf("request frame not complete within %s", timeout)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// frameLimit is the largest frame taken for a request of key.
func (c *conn) frameLimit(key int16) int32 {
	select {
	case <-c.authDone:
	default:
		return maxUnauthenticatedBytes
	}
	if key == int16(kmsg.Produce) {
		return c.srv.cfg.MaxRequestBytes
	}
	return min(maxControlRequestBytes, c.srv.cfg.MaxRequestBytes)
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
			return fmt.Errorf("api key %d is not served", r.key)
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
	if fp != nil {
		return fp.write(c.nc, b, resp.IsFlexible())
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := c.nc.Write(b)
	return err
}
