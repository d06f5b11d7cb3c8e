package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSASLAuthenticate answers SaslAuthenticate (key 36, KIP-152; v1 adds
// session_lifetime_ms, KIP-368, v2 is flexible) as Kafka's
// SaslServerAuthenticator.handleSaslToken: the client's token steps the exchange that
// SaslHandshake v1 began, and the answer carries the server's token. When the exchange
// succeeds the connection is authenticated; session_lifetime_ms is 0 (no re-authentication,
// Kafka's connections.max.reauth.ms default).
//
// Error codes: SASL_AUTHENTICATION_FAILED (58) with Kafka's error message when the credentials
// do not match, after which the connection is closed; ILLEGAL_SASL_STATE (34) on an
// authenticated connection or one without SASL (KafkaApis.handleSaslAuthenticateRequest; the
// connection stays open). A SaslAuthenticate before SaslHandshake closes the connection without
// an answer, as Kafka does.
func handleSASLAuthenticate(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return reply{msg: resp}, nil
	}
	if c.sasl == nil {
		return reply{}, errors.New("SaslAuthenticate before SaslHandshake")
	}
	challenge, done, err := c.sasl.step(req.SASLAuthBytes)
	if err != nil {
		msg := c.saslFailed(err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return reply{msg: resp, closeAfter: fmt.Errorf("%w: SASL authentication failed", errClosing)}, nil
	}
	resp.SASLAuthBytes = challenge
	if done {
		c.saslSucceeded()
	}
	return reply{msg: resp}, nil
}

// readSASLToken reads one raw SASL token frame (a 4-byte size, then the token; SaslHandshake
// v0's framing), at most sasl.server.max.receive.size, on the reader goroutine.
func (c *conn) readSASLToken() (*request, error) {
	cfg := &c.srv.cfg
	var size [4]byte
	if err := c.setReadDeadline(cfg.IdleTimeout); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c.nc, size[:1]); err != nil {
		if c.isStopping() {
			return nil, errClosing
		}
		if isTimeout(err) {
			return nil, fmt.Errorf("idle for %s (connections.max.idle.ms)", cfg.IdleTimeout)
		}
		return nil, err
	}
	if err := c.setReadDeadline(cfg.RequestTimeout); err != nil {
		return nil, err
	}
	if n, err := io.ReadFull(c.nc, size[1:]); err != nil {
		return nil, c.frameReadErr(err, 1+n, 4)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxUnauthenticatedBytes {
		return nil, fmt.Errorf("SASL token frame of %d bytes: outside [0, %d] (sasl.server.max.receive.size)", n, maxUnauthenticatedBytes)
	}
	token, err := readFrameBody(c.nc, nil, int(n))
	if err != nil {
		return nil, c.frameReadErr(err, 4+len(token), int(n)+4)
	}
	return &request{key: int16(kmsg.SASLAuthenticate), version: -1, saslToken: token, awaitFraming: true}, nil
}

// serveSASLToken steps the exchange with a raw token of SaslHandshake v0's framing and writes
// the server's token as a raw size-prefixed frame, as Kafka's SaslServerAuthenticator does when
// the handshake did not enable SaslAuthenticate headers. A failure closes the connection without
// an answer (the raw framing has no error), as Kafka does.
func (c *conn) serveSASLToken(token []byte) error {
	challenge, done, err := c.sasl.step(token)
	if err != nil {
		c.saslFailed(err)
		c.saslRaw = false
		return fmt.Errorf("%w: SASL authentication failed", errClosing)
	}
	if done {
		c.saslSucceeded()
	}
	b := binary.BigEndian.AppendUint32(c.wbuf[:0], uint32(len(challenge)))
	b = append(b, challenge...)
	c.wbuf = b
	_, err = c.nc.Write(b)
	return err
}

// saslSucceeded authenticates the connection: the answering goroutine takes every request from
// now on, and the reader lifts the pre-authentication frame limit.
func (c *conn) saslSucceeded() {
	c.authenticated = true
	c.saslRaw = false
	c.saslUser = c.sasl.user()
	close(c.authDone)
	c.log.Debug("kafka SASL authentication succeeded", "mechanism", c.saslMechanism, "user", c.saslUser)
}

// saslFailed logs a failed authentication (with the user the client named, never a password)
// and returns the message for the client.
func (c *conn) saslFailed(err error) string {
	reason, msg := err.Error(), "Authentication failed"
	var ae *authError
	if errors.As(err, &ae) {
		reason, msg = ae.reason, ae.clientMessage
	}
	c.log.Warn("kafka SASL authentication failed", "mechanism", c.saslMechanism, "user", c.sasl.user(), "reason", reason)
	return msg
}
