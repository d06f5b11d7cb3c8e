package broker

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testCredentials has alice with a password and bob with pre-computed SCRAM credentials of
// both mechanisms (password "bob-secret").
func testCredentials(t testing.TB) *Credentials {
	t.Helper()
	var lines strings.Builder
	lines.WriteString("# test users\nalice:alice-secret\n")
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		sc, err := NewSCRAMCredential(m, "bob-secret", 8192)
		require.NoError(t, err)
		fmt.Fprintf(&lines, "bob:%s=[%s]\n", m, sc)
	}
	creds, err := ParseCredentials(strings.NewReader(lines.String()))
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "bob"}, creds.Users())
	return creds
}

func mechanism(name, user, pass string) sasl.Mechanism {
	switch name {
	case MechanismPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case MechanismSCRAMSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case MechanismSCRAMSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	panic(name)
}

// produceConsume produces 5 records to a new topic with clients of opts and consumes them,
// asserting their offsets, keys and values.
func produceConsume(t *testing.T, b *testBroker, topic string, opts ...kgo.Opt) {
	t.Helper()
	b.createTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := b.client(t, append(opts, kgo.DefaultProduceTopic(topic))...)
	const n = 5
	for i := range n {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-v%d", topic, i)}
		require.NoError(t, prod.ProduceSync(ctx, r).FirstErr())
		require.Equal(t, int64(i), r.Offset)
	}
	cons := b.client(t, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	var got []*kgo.Record
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err())
		got = append(got, fs.Records()...)
	}
	require.Len(t, got, n)
	for i, r := range got {
		require.Equal(t, int64(i), r.Offset)
		require.Equal(t, fmt.Sprintf("k%d", i), string(r.Key))
		require.Equal(t, fmt.Sprintf("%s-v%d", topic, i), string(r.Value))
	}
}

func TestSASLProduceConsume(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	for _, m := range allMechanisms {
		for _, u := range []struct{ user, pass string }{{"alice", "alice-secret"}, {"bob", "bob-secret"}} {
			t.Run(m+"/"+u.user, func(t *testing.T) {
				topic := strings.ToLower(strings.ReplaceAll(m, "-", "")) + "-" + u.user
				produceConsume(t, b, topic, kgo.SASL(mechanism(m, u.user, u.pass)))
			})
		}
	}
}

func TestSASLAuthenticationFailedKgo(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	for _, m := range allMechanisms {
		for _, u := range []struct{ user, pass string }{{"alice", "wrong"}, {"bob", "alice-secret"}, {"carol", "alice-secret"}} {
			t.Run(m+"/"+u.user, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cl := b.client(t, kgo.SASL(mechanism(m, u.user, u.pass)))
				err := cl.Ping(ctx)
				require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			})
		}
	}
}

func TestSASLUnsupportedMechanismKgo(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Mechanisms: []string{MechanismPlain}, Credentials: testCredentials(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := b.client(t, kgo.SASL(mechanism(MechanismSCRAMSHA512, "alice", "alice-secret")))
	require.ErrorIs(t, cl.Ping(ctx), kerr.UnsupportedSaslMechanism)
	// PLAIN, enabled, works.
	produceConsume(t, b, "plain-only", kgo.SASL(mechanism(MechanismPlain, "alice", "alice-secret")))
}

// rawClient speaks Kafka's protocol over a TCP connection with kmsg, for what kgo does not do.
type rawClient struct {
	t    *testing.T
	nc   net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))}
}

// send writes req with its version.
func (rc *rawClient) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	_, err := rc.nc.Write(rc.f.AppendRequest(nil, req, rc.corr))
	require.NoError(rc.t, err)
	return rc.corr
}

// frame reads one size-prefixed frame.
func (rc *rawClient) frame() []byte {
	rc.t.Helper()
	require.NoError(rc.t, rc.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var size [4]byte
	_, err := io.ReadFull(rc.nc, size[:])
	require.NoError(rc.t, err)
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(rc.nc, b)
	require.NoError(rc.t, err)
	return b
}

// do sends req and returns its decoded response.
func (rc *rawClient) do(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.send(req)
	b := rc.frame()
	require.GreaterOrEqual(rc.t, len(b), 4)
	require.Equal(rc.t, corr, int32(binary.BigEndian.Uint32(b)))
	b = b[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		require.Equal(rc.t, byte(0), b[0]) // no tagged fields in the header
		b = b[1:]
	}
	require.NoError(rc.t, resp.ReadFrom(b))
	return resp
}

// requireClosed asserts that the broker closed the connection, with nothing more sent.
func (rc *rawClient) requireClosed() {
	rc.t.Helper()
	require.NoError(rc.t, rc.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := rc.nc.Read(make([]byte, 1))
	require.Equal(rc.t, 0, n)
	require.ErrorIs(rc.t, err, io.EOF)
}

// requireDropped asserts that the broker closed the connection without reading all that was
// sent: the client sees the end of the stream or, for the unread bytes, a reset.
func (rc *rawClient) requireDropped() {
	rc.t.Helper()
	require.NoError(rc.t, rc.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := rc.nc.Read(make([]byte, 1))
	require.Equal(rc.t, 0, n)
	if !errors.Is(err, syscall.ECONNRESET) {
		require.ErrorIs(rc.t, err, io.EOF)
	}
}

func (rc *rawClient) handshake(version int16, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mech
	return rc.do(req).(*kmsg.SASLHandshakeResponse)
}

func (rc *rawClient) authenticate(version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, token
	return rc.do(req).(*kmsg.SASLAuthenticateResponse)
}

func (rc *rawClient) metadata() *kmsg.MetadataResponse {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	return rc.do(req).(*kmsg.MetadataResponse)
}

// bigMetadata sends a Metadata request of more than the 512 KiB taken before authentication
// and asserts its answer: every topic unknown.
func (rc *rawClient) bigMetadata() {
	rc.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	const n = 6000
	for i := range n {
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(fmt.Sprintf("unknown-%05d-%s", i, strings.Repeat("x", 85)))
		req.Topics = append(req.Topics, topic)
	}
	require.Greater(rc.t, len(req.AppendTo(nil)), maxUnauthenticatedBytes)
	resp := rc.do(req).(*kmsg.MetadataResponse)
	require.Len(rc.t, resp.Topics, n)
	for _, topic := range resp.Topics {
		require.Equal(rc.t, kerr.UnknownTopicOrPartition.Code, topic.ErrorCode)
	}
}

func plainToken(authzID, user, pass string) []byte {
	return []byte(authzID + "\x00" + user + "\x00" + pass)
}

func TestSASLRequestBeforeAuthentication(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	t.Run("metadata first", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		rc.send(kmsg.NewPtrMetadataRequest())
		rc.requireClosed()
	})
	t.Run("metadata after ApiVersions", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		resp := rc.do(req).(*kmsg.ApiVersionsResponse)
		require.Equal(t, int16(0), resp.ErrorCode)
		var sasl []kmsg.ApiVersionsResponseApiKey
		for _, k := range resp.ApiKeys {
			if k.ApiKey == int16(kmsg.SASLHandshake) || k.ApiKey == int16(kmsg.SASLAuthenticate) {
				sasl = append(sasl, kmsg.ApiVersionsResponseApiKey{ApiKey: k.ApiKey, MinVersion: k.MinVersion, MaxVersion: k.MaxVersion})
			}
		}
		require.Equal(t, []kmsg.ApiVersionsResponseApiKey{{ApiKey: 17, MinVersion: 0, MaxVersion: 1}, {ApiKey: 36, MinVersion: 0, MaxVersion: 2}}, sasl)
		rc.send(kmsg.NewPtrMetadataRequest())
		rc.requireClosed()
	})
	t.Run("metadata during the exchange", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(1, MechanismPlain).ErrorCode)
		rc.send(kmsg.NewPtrMetadataRequest())
		rc.requireClosed()
	})
	t.Run("authenticate before handshake", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, plainToken("", "alice", "alice-secret")
		rc.send(req)
		rc.requireClosed()
	})
	t.Run("frame over 512 KiB before authentication", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 1, strings.Repeat("x", maxUnauthenticatedBytes)
		// The broker closes the connection once it has read the frame's size, so the write
		// of the rest may fail: the connection reset by the broker's unread bytes, or the
		// pipe broken.
		_, err := rc.nc.Write(rc.f.AppendRequest(nil, req, 1))
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			require.ErrorIs(t, err, syscall.EPIPE)
		}
		rc.requireDropped()
	})
}

func TestSASLAuthenticateRaw(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	for _, v := range []int16{0, 1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			rc := dialRaw(t, b.addr)
			hs := rc.handshake(1, MechanismPlain)
			require.Equal(t, int16(0), hs.ErrorCode)
			require.Equal(t, allMechanisms, hs.SupportedMechanisms)
			resp := rc.authenticate(v, plainToken("alice", "alice", "alice-secret"))
			require.Equal(t, int16(0), resp.ErrorCode)
			require.Nil(t, resp.ErrorMessage)
			require.Empty(t, resp.SASLAuthBytes)
			require.Equal(t, int64(0), resp.SessionLifetimeMillis)
			// Authenticated: Metadata is answered, and frames past 512 KiB are taken.
			md := rc.metadata()
			require.Equal(t, DefaultClusterID, *md.ClusterID)
			rc.bigMetadata()
			// A second handshake or SaslAuthenticate is ILLEGAL_SASL_STATE, and the connection
			// stays open.
			hs = rc.handshake(1, MechanismPlain)
			require.Equal(t, kerr.IllegalSaslState.Code, hs.ErrorCode)
			hs = rc.handshake(0, MechanismPlain)
			require.Equal(t, kerr.IllegalSaslState.Code, hs.ErrorCode)
			resp = rc.authenticate(v, plainToken("", "alice", "alice-secret"))
			require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
			require.Equal(t, "SaslAuthenticate request received after successful authentication", *resp.ErrorMessage)
			require.Equal(t, DefaultClusterID, *rc.metadata().ClusterID)
		})
	}
}

func TestSASLAuthenticationFailedRaw(t *testing.T) {
	const generic = "Authentication failed during authentication due to invalid credentials with SASL mechanism "
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	for _, tc := range []struct {
		name    string
		token   []byte
		message string
	}{
		{"wrong password", plainToken("", "alice", "wrong"), msgInvalidUserPassword},
		{"unknown user", plainToken("", "carol", "alice-secret"), msgInvalidUserPassword},
		{"authzid of another user", plainToken("bob", "alice", "alice-secret"), msgAuthzIDMismatch},
		{"no password", plainToken("", "alice", ""), generic + "PLAIN"},
		{"no user", plainToken("", "", "alice-secret"), generic + "PLAIN"},
		{"no NUL", []byte("alice"), generic + "PLAIN"},
		{"empty", []byte{}, generic + "PLAIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, b.addr)
			require.Equal(t, int16(0), rc.handshake(1, MechanismPlain).ErrorCode)
			resp := rc.authenticate(2, tc.token)
			require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
			require.Equal(t, tc.message, *resp.ErrorMessage)
			rc.requireClosed()
		})
	}
	t.Run("SCRAM wrong password", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(1, MechanismSCRAMSHA256).ErrorCode)
		sess, first, err := mechanism(MechanismSCRAMSHA256, "bob", "wrong").Authenticate(context.Background(), b.addr)
		require.NoError(t, err)
		resp := rc.authenticate(2, first)
		require.Equal(t, int16(0), resp.ErrorCode)
		done, final, err := sess.Challenge(resp.SASLAuthBytes)
		require.NoError(t, err)
		require.False(t, done)
		resp = rc.authenticate(2, final)
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
		require.Equal(t, generic+MechanismSCRAMSHA256, *resp.ErrorMessage)
		require.Empty(t, resp.SASLAuthBytes)
		rc.requireClosed()
	})
	t.Run("SCRAM unknown user gets a stable salt", func(t *testing.T) {
		// The server-first message of an unknown user has the same salt on every attempt, and
		// the default iterations, as a user with a password would.
		salt := func() string {
			rc := dialRaw(t, b.addr)
			require.Equal(t, int16(0), rc.handshake(1, MechanismSCRAMSHA512).ErrorCode)
			_, first, err := mechanism(MechanismSCRAMSHA512, "carol", "x").Authenticate(context.Background(), b.addr)
			require.NoError(t, err)
			resp := rc.authenticate(2, first)
			require.Equal(t, int16(0), resp.ErrorCode)
			fields := strings.Split(string(resp.SASLAuthBytes), ",")
			require.Len(t, fields, 3)
			require.Equal(t, "i=4096", fields[2])
			return fields[1]
		}
		s1, s2 := salt(), salt()
		require.True(t, strings.HasPrefix(s1, "s="))
		require.Equal(t, s1, s2)
	})
	t.Run("SCRAM garbage", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(1, MechanismSCRAMSHA512).ErrorCode)
		resp := rc.authenticate(1, []byte("not scram"))
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
		require.Equal(t, generic+MechanismSCRAMSHA512, *resp.ErrorMessage)
		rc.requireClosed()
	})
	t.Run("SCRAM authzid of another user", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(1, MechanismSCRAMSHA256).ErrorCode)
		_, first, err := scram.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsSha256Mechanism().Authenticate(context.Background(), b.addr)
		require.NoError(t, err)
		resp := rc.authenticate(2, first)
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
		require.Equal(t, msgAuthzIDMismatch, *resp.ErrorMessage)
		rc.requireClosed()
	})
}

func TestSASLHandshakeErrors(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Mechanisms: []string{MechanismSCRAMSHA512, MechanismPlain}, Credentials: testCredentials(t)}})
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("unsupported mechanism v%d", v), func(t *testing.T) {
			rc := dialRaw(t, b.addr)
			hs := rc.handshake(v, MechanismSCRAMSHA256)
			require.Equal(t, kerr.UnsupportedSaslMechanism.Code, hs.ErrorCode)
			require.Equal(t, []string{MechanismSCRAMSHA512, MechanismPlain}, hs.SupportedMechanisms)
			rc.requireClosed()
		})
	}
	t.Run("mechanism names are case-sensitive", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, kerr.UnsupportedSaslMechanism.Code, rc.handshake(1, "plain").ErrorCode)
		rc.requireClosed()
	})
	t.Run("second handshake during the exchange", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(1, MechanismSCRAMSHA512).ErrorCode)
		_, first, err := mechanism(MechanismSCRAMSHA512, "alice", "alice-secret").Authenticate(context.Background(), b.addr)
		require.NoError(t, err)
		require.Equal(t, int16(0), rc.authenticate(2, first).ErrorCode)
		hs := rc.handshake(1, MechanismSCRAMSHA512)
		require.Equal(t, kerr.IllegalSaslState.Code, hs.ErrorCode)
		rc.requireClosed()
	})
	t.Run("without SASL", func(t *testing.T) {
		nb := startBroker(t, nil, Config{})
		rc := dialRaw(t, nb.addr)
		hs := rc.handshake(1, MechanismPlain)
		require.Equal(t, kerr.IllegalSaslState.Code, hs.ErrorCode)
		require.Empty(t, hs.SupportedMechanisms)
		resp := rc.authenticate(2, plainToken("", "alice", "alice-secret"))
		require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
		require.Equal(t, DefaultClusterID, *rc.metadata().ClusterID)
	})
}

// TestSASLHandshakeV0Raw drives the raw token framing of SaslHandshake v0 by hand.
func TestSASLHandshakeV0Raw(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	writeToken := func(rc *rawClient, tok []byte) {
		_, err := rc.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
		require.NoError(t, err)
	}
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		for _, u := range []struct{ user, pass string }{{"alice", "alice-secret"}, {"bob", "bob-secret"}} {
			t.Run(m+"/"+u.user, func(t *testing.T) {
				rc := dialRaw(t, b.addr)
				require.Equal(t, int16(0), rc.handshake(0, m).ErrorCode)
				sess, first, err := mechanism(m, u.user, u.pass).Authenticate(context.Background(), b.addr)
				require.NoError(t, err)
				writeToken(rc, first)
				done, final, err := sess.Challenge(rc.frame())
				require.NoError(t, err)
				require.False(t, done)
				writeToken(rc, final)
				done, _, err = sess.Challenge(rc.frame()) // verifies the server signature
				require.NoError(t, err)
				require.True(t, done)
				// Back to Kafka requests, the frame limit lifted.
				require.Equal(t, DefaultClusterID, *rc.metadata().ClusterID)
				rc.bigMetadata()
			})
		}
	}
	t.Run("SCRAM wrong password", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(0, MechanismSCRAMSHA512).ErrorCode)
		sess, first, err := mechanism(MechanismSCRAMSHA512, "bob", "wrong").Authenticate(context.Background(), b.addr)
		require.NoError(t, err)
		writeToken(rc, first)
		_, final, err := sess.Challenge(rc.frame())
		require.NoError(t, err)
		writeToken(rc, final)
		rc.requireClosed()
	})
	t.Run("PLAIN", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(0, MechanismPlain).ErrorCode)
		writeToken(rc, plainToken("", "alice", "alice-secret"))
		require.Empty(t, rc.frame())
		require.Equal(t, DefaultClusterID, *rc.metadata().ClusterID)
	})
	t.Run("PLAIN wrong password", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(0, MechanismPlain).ErrorCode)
		writeToken(rc, plainToken("", "alice", "wrong"))
		rc.requireClosed()
	})
	t.Run("token over 512 KiB", func(t *testing.T) {
		rc := dialRaw(t, b.addr)
		require.Equal(t, int16(0), rc.handshake(0, MechanismPlain).ErrorCode)
		_, err := rc.nc.Write(binary.BigEndian.AppendUint32(nil, maxUnauthenticatedBytes+1))
		require.NoError(t, err)
		rc.requireClosed()
	})
}

func TestSASLFailureLogged(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b := startBroker(t, nil, Config{Logger: logger, SASL: &SASLConfig{Credentials: testCredentials(t)}})
	rc := dialRaw(t, b.addr)
	require.Equal(t, int16(0), rc.handshake(1, MechanismPlain).ErrorCode)
	// The failure is logged before the answer is written.
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, rc.authenticate(2, plainToken("", "alice", "Sup3r-s3cret")).ErrorCode)
	out := logs.String()
	require.Contains(t, out, "level=WARN")
	require.Contains(t, out, `msg="kafka SASL authentication failed"`)
	require.Contains(t, out, "remote="+rc.nc.LocalAddr().String())
	require.Contains(t, out, "mechanism=PLAIN")
	require.Contains(t, out, "user=alice")
	require.Contains(t, out, `reason="invalid user or password"`)
	require.NotContains(t, out, "Sup3r-s3cret")
}

func TestSASLConfigCheck(t *testing.T) {
	st := NewCredentials()
	require.EqualError(t, (&SASLConfig{}).check(), "broker: SASL without credentials")
	require.EqualError(t, (&SASLConfig{Credentials: st, Mechanisms: []string{"GSSAPI"}}).check(),
		`broker: SASL mechanism "GSSAPI" is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)`)
	require.NoError(t, (&SASLConfig{Credentials: st}).check())
	require.Equal(t, allMechanisms, (&SASLConfig{}).mechanisms())
	require.Equal(t, []string{MechanismSCRAMSHA256}, (&SASLConfig{Mechanisms: []string{MechanismSCRAMSHA256, MechanismSCRAMSHA256}}).mechanisms())
}

// scramExchange is a SCRAM client computed by hand from the password, to send client-final
// messages in forms franz-go does not: librdkafka's, and wrong ones.
type scramExchange struct {
	t               *testing.T
	hash            func() hash.Hash
	clientFirstBare string
	clientNonce     string
	serverFirst     string
	nonce           string // server-first's: the client's nonce and the server's
	salt            []byte
	iterations      int
}

// scramClientNonce is the client nonce of RFC 5802's example.
const scramClientNonce = "fyko+d2lbbFgONRv9qkxdawL"

// startSCRAM sends client-first "n,,n=<user>,r=<scramClientNonce>" to step and parses the
// server-first answered.
func startSCRAM(t *testing.T, mechanism, user string, step func([]byte) []byte) *scramExchange {
	t.Helper()
	hashFn, ok := scramHash(mechanism)
	require.True(t, ok)
	x := &scramExchange{t: t, hash: hashFn, clientFirstBare: "n=" + user + ",r=" + scramClientNonce, clientNonce: scramClientNonce}
	x.serverFirst = string(step([]byte("n,," + x.clientFirstBare)))
	fields := strings.Split(x.serverFirst, ",")
	require.Len(t, fields, 3, x.serverFirst)
	var okR, okS, okI bool
	var salt, iterations string
	x.nonce, okR = strings.CutPrefix(fields[0], "r=")
	salt, okS = strings.CutPrefix(fields[1], "s=")
	iterations, okI = strings.CutPrefix(fields[2], "i=")
	require.True(t, okR && okS && okI, x.serverFirst)
	require.True(t, strings.HasPrefix(x.nonce, scramClientNonce), x.nonce)
	require.Greater(t, len(x.nonce), len(scramClientNonce))
	var err error
	x.salt, err = base64.StdEncoding.DecodeString(salt)
	require.NoError(t, err)
	x.iterations, err = strconv.Atoi(iterations)
	require.NoError(t, err)
	return x
}

// final returns client-final for withoutProof ("c=...,r=...") with the proof of password
// (RFC 5802 section 3), and the server signature a server must answer with.
func (x *scramExchange) final(password, withoutProof string) (clientFinal []byte, serverFinal string) {
	x.t.Helper()
	salted, err := pbkdf2.Key(x.hash, password, x.salt, x.iterations, x.hash().Size())
	require.NoError(x.t, err)
	hmacOf := func(key []byte, s string) []byte {
		m := hmac.New(x.hash, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	clientKey := hmacOf(salted, "Client Key")
	h := x.hash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	authMessage := x.clientFirstBare + "," + x.serverFirst + "," + withoutProof
	proof := hmacOf(storedKey, authMessage)
	subtle.XORBytes(proof, proof, clientKey)
	serverSignature := hmacOf(hmacOf(salted, "Server Key"), authMessage)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)),
		"v=" + base64.StdEncoding.EncodeToString(serverSignature)
}

// TestSCRAMClientFinalForms drives scramSession with client-final messages built by hand:
// RFC 5802's, librdkafka's before 2.6.1 (its client nonce, then server-first's nonce, which
// begins with it: rdkafka_sasl_scram.c's "c=%s,r=%.*s%s"), and ones that must fail, for a
// user with a password (alice) and one with stored SCRAM credentials (bob).
func TestSCRAMClientFinalForms(t *testing.T) {
	creds := testCredentials(t)
	users := []struct{ user, pass string }{{"alice", "alice-secret"}, {"bob", "bob-secret"}}
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		for _, u := range users {
			for _, tc := range []struct {
				name     string
				password string
				// withoutProof is client-final-message-without-proof from x.
				withoutProof func(x *scramExchange) string
				reason       string // "" for success
			}{
				{"RFC 5802", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.nonce }, ""},
				{"librdkafka", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.clientNonce + x.nonce }, ""},
				{"with an extension", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.nonce + ",x=ext" }, ""},
				{"wrong password", "wrong", func(x *scramExchange) string { return "c=biws,r=" + x.nonce }, "invalid proof"},
				{"librdkafka wrong password", "wrong", func(x *scramExchange) string { return "c=biws,r=" + x.clientNonce + x.nonce }, "invalid proof"},
				{"client nonce only", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.clientNonce }, "nonce received did not match nonce sent"},
				{"nonce not ending with the server's", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.nonce + "x" }, "nonce received did not match nonce sent"},
				{"other prefix", u.pass, func(x *scramExchange) string { return "c=biws,r=x" + x.nonce }, "nonce received did not match nonce sent"},
				{"librdkafka form twice", u.pass, func(x *scramExchange) string { return "c=biws,r=" + x.clientNonce + x.clientNonce + x.nonce }, "nonce received did not match nonce sent"},
				{"channel binding of another GS2 header", u.pass, func(x *scramExchange) string { return "c=eSws,r=" + x.nonce }, "channel binding mismatch"},
			} {
				t.Run(m+"/"+u.user+"/"+tc.name, func(t *testing.T) {
					s := newSASLSession(m, creds)
					x := startSCRAM(t, m, u.user, func(tok []byte) []byte {
						out, done, err := s.step(tok)
						require.NoError(t, err)
						require.False(t, done)
						return out
					})
					require.Equal(t, u.user, s.user())
					final, serverFinal := x.final(tc.password, tc.withoutProof(x))
					out, done, err := s.step(final)
					if tc.reason == "" {
						require.NoError(t, err)
						require.True(t, done)
						require.Equal(t, serverFinal, string(out))
						return
					}
					require.False(t, done)
					require.Nil(t, out)
					var ae *authError
					require.ErrorAs(t, err, &ae)
					require.Equal(t, tc.reason, ae.reason)
					require.Equal(t, "Authentication failed during authentication due to invalid credentials with SASL mechanism "+m, ae.clientMessage)
				})
			}
		}
	}
	t.Run("authzid", func(t *testing.T) {
		// The channel binding is client-first's GS2 header, "n,a=alice," here.
		s := newSASLSession(MechanismSCRAMSHA256, creds)
		x := &scramExchange{t: t, hash: sha256.New, clientFirstBare: "n=alice,r=" + scramClientNonce, clientNonce: scramClientNonce}
		out, _, err := s.step([]byte("n,a=alice," + x.clientFirstBare))
		require.NoError(t, err)
		x.serverFirst = string(out)
		fields := strings.Split(x.serverFirst, ",")
		x.nonce = strings.TrimPrefix(fields[0], "r=")
		x.salt, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(fields[1], "s="))
		require.NoError(t, err)
		x.iterations = DefaultSCRAMIterations
		require.Equal(t, "i=4096", fields[2])
		cbind := base64.StdEncoding.EncodeToString([]byte("n,a=alice,"))
		final, serverFinal := x.final("alice-secret", "c="+cbind+",r="+x.clientNonce+x.nonce)
		out, done, err := s.step(final)
		require.NoError(t, err)
		require.True(t, done)
		require.Equal(t, serverFinal, string(out))
	})
	t.Run("unknown user", func(t *testing.T) {
		s := newSASLSession(MechanismSCRAMSHA512, creds)
		x := startSCRAM(t, MechanismSCRAMSHA512, "carol", func(tok []byte) []byte {
			out, _, err := s.step(tok)
			require.NoError(t, err)
			return out
		})
		final, _ := x.final("alice-secret", "c=biws,r="+x.clientNonce+x.nonce)
		_, done, err := s.step(final)
		require.False(t, done)
		var ae *authError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "unknown user", ae.reason)
	})
	for _, tc := range []struct{ name, final, reason string }{
		{"no proof", "c=biws,r=N", "malformed client-final message"},
		{"empty", "", "malformed client-final message"},
		{"proof first", "p=AAAA,r=N,c=biws", "malformed client-final message"},
		{"channel binding not base64", "c=b!ws,r=N,p=AAAA", "malformed channel binding in client-final message"},
		{"proof not base64", "c=biws,r=N,p=A!AA", "malformed proof in client-final message"},
		{"short proof", "c=biws,r=N,p=AAAA", "invalid proof"},
	} {
		t.Run("malformed/"+tc.name, func(t *testing.T) {
			s := newSASLSession(MechanismSCRAMSHA256, creds)
			x := startSCRAM(t, MechanismSCRAMSHA256, "alice", func(tok []byte) []byte {
				out, _, err := s.step(tok)
				require.NoError(t, err)
				return out
			})
			_, done, err := s.step([]byte(strings.ReplaceAll(tc.final, "r=N", "r="+x.nonce)))
			require.False(t, done)
			var ae *authError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.reason, ae.reason)
		})
	}
}

// TestSCRAMLibrdkafkaFormRaw authenticates over the wire with librdkafka's client-final form,
// then is answered Metadata.
func TestSCRAMLibrdkafkaFormRaw(t *testing.T) {
	b := startBroker(t, nil, Config{SASL: &SASLConfig{Credentials: testCredentials(t)}})
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		t.Run(m, func(t *testing.T) {
			rc := dialRaw(t, b.addr)
			require.Equal(t, int16(0), rc.handshake(1, m).ErrorCode)
			x := startSCRAM(t, m, "bob", func(tok []byte) []byte {
				resp := rc.authenticate(2, tok)
				require.Equal(t, int16(0), resp.ErrorCode)
				return resp.SASLAuthBytes
			})
			final, serverFinal := x.final("bob-secret", "c=biws,r="+x.clientNonce+x.nonce)
			resp := rc.authenticate(2, final)
			require.Equal(t, int16(0), resp.ErrorCode)
			require.Nil(t, resp.ErrorMessage)
			require.Equal(t, serverFinal, string(resp.SASLAuthBytes))
			require.Equal(t, DefaultClusterID, *rc.metadata().ClusterID)
		})
	}
}
