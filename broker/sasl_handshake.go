package broker

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSASLHandshake answers SaslHandshake (key 17, KIP-43; v1 by KIP-152) as Kafka's
// SaslServerAuthenticator.handleHandshakeRequest: the client names a mechanism, the answer
// lists the enabled ones, and the exchange begins; with v1 its tokens come in SaslAuthenticate
// requests, with v0 as raw size-prefixed frames (Kafka 4 still serves v0; see serveSASLToken).
//
// Error codes: UNSUPPORTED_SASL_MECHANISM (33) for a mechanism not enabled, after which the
// connection is closed; ILLEGAL_SASL_STATE (34) for a handshake on an authenticated connection
// or one without SASL (KafkaApis.handleSaslHandshakeRequest; the connection stays open), and for
// a second handshake while an exchange is under way (the connection is then closed).
func handleSASLHandshake(_ context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if c.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{msg: resp}, nil
	}
	cfg := c.srv.cfg.SASL
	resp.SupportedMechanisms = cfg.mechanisms()
	if c.sasl != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{msg: resp, closeAfter: fmt.Errorf("%w: SaslHandshake during the SASL exchange", errClosing)}, nil
	}
	if !slices.Contains(resp.SupportedMechanisms, req.Mechanism) {
		c.log.Warn("kafka SASL authentication failed", "mechanism", req.Mechanism, "reason", "mechanism not enabled")
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return reply{msg: resp, closeAfter: fmt.Errorf("%w: SASL mechanism not enabled", errClosing)}, nil
	}
	c.sasl = newSASLSession(req.Mechanism, cfg.Credentials)
	c.saslMechanism = req.Mechanism
	c.saslRaw = r.version == 0
	return reply{msg: resp}, nil
}
