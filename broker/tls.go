package broker

import (
	"context"
	"crypto/tls"
	"fmt"
)

// LoadTLSConfig returns the TLS configuration of a PEM certificate chain and its private key
// (Kafka's ssl.keystore of an SSL or SASL_SSL listener), for Config.TLS: TLS 1.2 and 1.3
// (Kafka's ssl.enabled.protocols), no client certificates asked for (ssl.client.auth=none).
// certFile holds the server's certificate first, then the intermediates. It is what
// `commitlog serve --tls-cert certFile --tls-key keyFile` needs.
func LoadTLSConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("broker: TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// tlsHandshake completes the TLS handshake of a connection of a TLS listener within the request
// timeout, so that a client that opens a connection and never finishes the handshake does not
// hold a connection slot for the idle timeout. Without TLS it does nothing.
func (c *conn) tlsHandshake(ctx context.Context) error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, c.srv.cfg.RequestTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		if hctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("TLS handshake not complete within %s", c.srv.cfg.RequestTimeout)
		}
		return fmt.Errorf("TLS handshake: %w", err)
	}
	return nil
}
