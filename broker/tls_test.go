package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testTLS writes a self-signed ECDSA certificate for 127.0.0.1 and its key to a temporary
// directory and returns the broker's configuration (through LoadTLSConfig) and a client's,
// which trusts the certificate.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "commitlog test broker"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "broker.crt"), filepath.Join(dir, "broker.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))

	server, err = LoadTLSConfig(certFile, keyFile)
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS12), server.MinVersion)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func TestTLSProduceConsume(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	b := startBroker(t, nil, Config{TLS: srvTLS})
	produceConsume(t, b, "over-tls", kgo.DialTLSConfig(cliTLS))
}

func TestTLSWithSCRAM(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	b := startBroker(t, nil, Config{TLS: srvTLS, SASL: &SASLConfig{
		Mechanisms:  []string{MechanismSCRAMSHA512},
		Credentials: testCredentials(t),
	}})
	produceConsume(t, b, "tls-scram", kgo.DialTLSConfig(cliTLS), kgo.SASL(mechanism(MechanismSCRAMSHA512, "bob", "bob-secret")))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong := b.client(t, kgo.DialTLSConfig(cliTLS), kgo.SASL(mechanism(MechanismSCRAMSHA512, "bob", "wrong")))
	require.ErrorIs(t, wrong.Ping(ctx), kerr.SaslAuthenticationFailed)
}

// TestTLSHandshakeTimeout: a client that connects and never sends its TLS ClientHello is
// disconnected once the request timeout passed.
func TestTLSHandshakeTimeout(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	b := startBroker(t, nil, Config{TLS: srvTLS, RequestTimeout: 200 * time.Millisecond})
	nc, err := net.DialTimeout("tcp", b.addr, 10*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	// A guard far past the request timeout: the broker closes the connection first.
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(30*time.Second)))
	n, err := nc.Read(make([]byte, 1))
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)

	// The broker still serves clients that complete the handshake.
	produceConsume(t, b, "after-timeout", kgo.DialTLSConfig(cliTLS))
}

// TestTLSPlaintextClient: a client speaking Kafka without TLS to a TLS listener is refused.
func TestTLSPlaintextClient(t *testing.T) {
	srvTLS, _ := testTLS(t)
	b := startBroker(t, nil, Config{TLS: srvTLS})
	rc := dialRaw(t, b.addr)
	rc.send(kmsg.NewPtrApiVersionsRequest())
	// The broker reads the record header, which is not TLS's, and closes the connection.
	rc.requireDropped()
}

func TestLoadTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadTLSConfig(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"))
	require.ErrorIs(t, err, os.ErrNotExist)
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not pem"), 0o600))
	_, err = LoadTLSConfig(bad, bad)
	require.ErrorContains(t, err, "broker: TLS certificate "+bad+" and key "+bad+": tls: failed to find any PEM data in certificate input")
}
