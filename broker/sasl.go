package broker

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdg-go/scram"
)

// The SASL mechanisms served (Kafka's sasl.enabled.mechanisms values).
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// allMechanisms are the mechanisms served, in the order SaslHandshake lists them by default.
var allMechanisms = []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}

// SASLConfig configures SASL authentication (Kafka's SASL_PLAINTEXT listener, or SASL_SSL with
// Config.TLS): every connection authenticates with one of Mechanisms as one of the users of
// Credentials before any request but ApiVersions, SaslHandshake and SaslAuthenticate. Over a
// connection without TLS, PLAIN sends the password in the clear: enable it only with TLS or on
// a trusted network.
//
// # The credentials file
//
// LoadCredentials and LoadSASLConfig read a text file of one user a line:
//
//	# Comments begin with '#'; blank lines are skipped, and so is the white space around a line.
//	# user:password    a password, for PLAIN and both SCRAM mechanisms
//	alice:alice-secret
//	# user:SCRAM-SHA-256=[salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>]
//	# user:SCRAM-SHA-512=[...]    pre-computed SCRAM credentials, no password on disk
//	bob:SCRAM-SHA-256=[salt=c2FsdA==,stored_key=...,server_key=...,iterations=8192]
//	bob:SCRAM-SHA-512=[salt=...,stored_key=...,server_key=...,iterations=8192]
//
// The user name ends at the first ':', so it cannot hold one; the password is the rest of the
// line, ':' included, and cannot begin with "SCRAM-" (that begins a SCRAM credential) nor begin
// or end with white space. SCRAM credentials are in the notation of Kafka's ScramCredentialUtils
// (what kafka-configs printed for a user in ZooKeeper mode), with or without the brackets; the
// keys are base64 (standard, padded) of the mechanism's hash size (32 bytes for SHA-256, 64 for
// SHA-512), the iterations in Kafka's [4096, 16384]. NewSCRAMCredential computes one from a
// password. A user has either one password line, or one line per SCRAM mechanism; a user with
// SCRAM lines only also authenticates with PLAIN, whose password is checked against a SCRAM
// credential. For a password line, SCRAM-SHA-256 and SCRAM-SHA-512 credentials are derived when
// the file is loaded, with random salts and 4096 iterations (Kafka's minimum).
//
// Passwords are checked in constant time. SCRAM (RFC 5802, RFC 7677) is github.com/xdg-go/scram's
// server conversation for client-first and server-first, and Kafka's ScramSaslServer's
// verification of client-final, which also takes the nonce librdkafka before 2.6.1 sends
// (scramSession.finalMessage). A SCRAM client naming an unknown user gets a
// made-up salt and fails at the proof, as a wrong password does.
type SASLConfig struct {
	// Mechanisms are the SASL mechanisms clients may use, among MechanismPlain,
	// MechanismSCRAMSHA256 and MechanismSCRAMSHA512 (Kafka's sasl.enabled.mechanisms); all
	// three when empty.
	Mechanisms []string
	// Credentials are the users who may authenticate; required.
	Credentials *Credentials
}

// check validates the configuration.
func (c *SASLConfig) check() error {
	if c.Credentials == nil {
		return errors.New("broker: SASL without credentials")
	}
	for _, m := range c.Mechanisms {
		if !slices.Contains(allMechanisms, m) {
			return fmt.Errorf("broker: SASL mechanism %q is not served (%s)", m, strings.Join(allMechanisms, ", "))
		}
	}
	return nil
}

// mechanisms returns the enabled mechanisms, without repeats.
func (c *SASLConfig) mechanisms() []string {
	if len(c.Mechanisms) == 0 {
		return allMechanisms
	}
	var ms []string
	for _, m := range c.Mechanisms {
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

// LoadSASLConfig returns the SASL configuration of a credentials file (the format is in
// SASLConfig's documentation) and the mechanisms enabled: names as in Kafka's
// sasl.enabled.mechanisms, case-insensitive ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), one
// or several a string separated by commas, all three when none is given. It is what `commitlog serve --sasl-credentials path
// --sasl-mechanisms ...` needs for Config.SASL.
func LoadSASLConfig(path string, mechanisms []string) (*SASLConfig, error) {
	cfg := &SASLConfig{}
	for _, ms := range mechanisms {
		for m := range strings.SplitSeq(ms, ",") {
			if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
				cfg.Mechanisms = append(cfg.Mechanisms, m)
			}
		}
	}
	creds, err := LoadCredentials(path)
	if err != nil {
		return nil, err
	}
	cfg.Credentials = creds
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// saslSession is one connection's SASL exchange of one mechanism.
type saslSession interface {
	// step takes the client's next token and returns the server's answer; done says the
	// exchange succeeded, err (an *authError) that it failed (the connection is then closed
	// after the answer).
	step(token []byte) (challenge []byte, done bool, err error)
	// user is the user name the client gave (empty before it gave one), the authenticated
	// principal's name once done.
	user() string
}

// authError is a failed authentication: the message the client gets in SaslAuthenticate's
// error_message, and the reason logged.
type authError struct {
	clientMessage string
	reason        string
}

func (e *authError) Error() string { return e.reason }

// invalidCredentials is Kafka's answer to a SaslException, which leaves out the reason lest it
// tell whether the user exists (SaslServerAuthenticator.handleSaslToken).
func invalidCredentials(mechanism, reason string) *authError {
	return &authError{
		clientMessage: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism,
		reason:        reason,
	}
}

// Kafka's messages of the SaslAuthenticationExceptions of PlainSaslServer and ScramSaslServer,
// which clients get as they are.
const (
	msgInvalidUserPassword = "Authentication failed: Invalid username or password"
	msgAuthzIDMismatch     = "Authentication failed: Client requested an authorization id that is different from username"
)

// newSASLSession starts an exchange of mechanism, one of the enabled ones.
func newSASLSession(mechanism string, creds *Credentials) saslSession {
	if mechanism == MechanismPlain {
		return &plainSession{creds: creds}
	}
	hash, _ := scramHash(mechanism)
	s := &scramSession{mechanism: mechanism, hash: hash}
	srv, _ := hash.NewServer(func(user string) (scram.StoredCredentials, error) {
		cred, known := creds.scramCredential(user, mechanism)
		s.cred, s.unknownUser = cred, !known
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
			StoredKey:  cred.StoredKey,
			ServerKey:  cred.ServerKey,
		}, nil
	}) // NewServer does not fail
	s.conv = srv.NewConversation()
	return s
}

// plainSession is SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer: one token
// "[authzid] NUL authcid NUL passwd", answered with an empty token.
type plainSession struct {
	creds    *Credentials
	username string
}

func (s *plainSession) user() string { return s.username }

func (s *plainSession) step(token []byte) ([]byte, bool, error) {
	if s.username != "" {
		return nil, false, invalidCredentials(MechanismPlain, "a PLAIN token after the exchange completed")
	}
	// As PlainSaslServer: the password is everything after the second NUL.
	parts := strings.SplitN(string(token), "\x00", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	authzID, user, password := parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return nil, false, invalidCredentials(MechanismPlain, "no user name")
	case password == "":
		s.username = user
		return nil, false, invalidCredentials(MechanismPlain, "no password")
	}
	s.username = user
	if !s.creds.verifyPassword(user, password) {
		return nil, false, &authError{clientMessage: msgInvalidUserPassword, reason: "invalid user or password"}
	}
	if authzID != "" && authzID != user {
		return nil, false, &authError{clientMessage: msgAuthzIDMismatch, reason: "authorization id differs from the user name"}
	}
	return []byte{}, true, nil
}

// scramSession is SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's
// ScramSaslServer): client-first answered with server-first, client-final with server-final.
// github.com/xdg-go/scram's server conversation parses client-first and makes server-first;
// client-final is verified here, as ScramSaslServer and ScramFormatter do, because xdg-go/scram
// requires the nonce of client-final to be the nonce of server-first, and librdkafka before
// 2.6.1 (kcat, confluent-kafka-go, -python, -dotnet of those versions; Debian 12 ships 2.0.2)
// sends its client nonce once more in front of it (see finalMessage). Every failure gets
// Kafka's generic message; no "e=" server error is sent, as Kafka does not send one.
type scramSession struct {
	mechanism string
	hash      scram.HashGeneratorFcn
	conv      *scram.ServerConversation // client-first and server-first
	// cred is the user's credential, looked up by conv (a made-up one for an unknown user).
	cred        SCRAMCredential
	unknownUser bool
	// From the first step: client-first's GS2 header ("n,," or "n,a=<authzid>,") and
	// client-first-message-bare, the client's nonce, server-first and its nonce (the client's
	// and the server's).
	gs2Header       string
	clientFirstBare string
	clientNonce     string
	serverFirst     string
	nonce           string
	steps           int
}

func (s *scramSession) user() string { return s.conv.Username() }

func (s *scramSession) step(token []byte) ([]byte, bool, error) {
	s.steps++
	switch s.steps {
	case 1:
		out, err := s.conv.Step(string(token))
		if err != nil {
			return nil, false, s.fail(err.Error())
		}
		if z := s.conv.AuthzID(); z != "" && z != s.conv.Username() {
			return nil, false, &authError{clientMessage: msgAuthzIDMismatch, reason: "authorization id differs from the user name"}
		}
		// xdg-go/scram parsed client-first, "<flag>,[a=<authzid>],n=<user>,r=<nonce>[,...]",
		// as four fields at least; server-first is "r=<nonce>,s=<salt>,i=<iterations>".
		c1 := strings.Split(string(token), ",")
		s.gs2Header, s.clientFirstBare = c1[0]+","+c1[1]+",", strings.Join(c1[2:], ",")
		s.clientNonce = strings.TrimPrefix(c1[3], "r=")
		s.serverFirst = out
		s.nonce, _, _ = strings.Cut(strings.TrimPrefix(out, "r="), ",")
		return []byte(out), false, nil
	case 2:
		out, reason := s.finalMessage(string(token))
		if reason != "" {
			return nil, false, s.fail(reason)
		}
		return out, true, nil
	}
	return nil, false, invalidCredentials(s.mechanism, "a SCRAM token after the exchange completed")
}

// fail is a failed step: Kafka's generic answer, logged with reason, or with "unknown user"
// for a user not in the credentials.
func (s *scramSession) fail(reason string) *authError {
	if s.unknownUser {
		reason = "unknown user"
	}
	return invalidCredentials(s.mechanism, reason)
}

// finalMessage verifies client-final, "c=<channel binding>,r=<nonce>[,<extensions>],p=<proof>",
// and returns server-final, "v=<server signature>", or the reason it failed. It follows Kafka's
// ScramSaslServer.evaluateResponse and verifyClientProof and ScramFormatter: the proof is
// verified over the client-final message as received,
//
//	AuthMessage     = client-first-message-bare + "," + server-first-message + "," +
//	                  client-final-message-without-proof
//	ClientSignature = HMAC(StoredKey, AuthMessage)
//	ClientKey       = ClientProof XOR ClientSignature
//	H(ClientKey) == StoredKey, compared in constant time
//	ServerSignature = HMAC(ServerKey, AuthMessage)
//
// The channel binding must be the GS2 header of client-first (base64 "biws" for "n,,"; as
// RFC 5802 section 5.1 and xdg-go/scram require). The nonce must be server-first's (RFC 5802)
// or, for librdkafka before 2.6.1 (confluentinc/librdkafka#4895), the client's nonce followed by
// server-first's. Kafka 3.8.1 to 3.9 accept any nonce that ends with server-first's
// (ScramSaslServer's clientFinalMessage.nonce().endsWith(serverFirstMessage.nonce())), Kafka
// before 3.8.1 any nonce, Kafka 4 server-first's only; the two forms taken here are those in
// use. As in Kafka the proof covers the nonce as sent, so the client proves the password over
// exactly this exchange either way.
func (s *scramSession) finalMessage(c2 string) ([]byte, string) {
	fields := strings.Split(c2, ",")
	if len(fields) < 3 {
		return nil, "malformed client-final message"
	}
	cbind, okC := strings.CutPrefix(fields[0], "c=")
	nonce, okR := strings.CutPrefix(fields[1], "r=")
	proofB64, okP := strings.CutPrefix(fields[len(fields)-1], "p=")
	if !okC || !okR || !okP {
		return nil, "malformed client-final message"
	}
	channelBinding, err := base64.StdEncoding.DecodeString(cbind)
	if err != nil {
		return nil, "malformed channel binding in client-final message"
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, "malformed proof in client-final message"
	}
	if string(channelBinding) != s.gs2Header {
		return nil, "channel binding mismatch"
	}
	if nonce != s.nonce && nonce != s.clientNonce+s.nonce {
		return nil, "nonce received did not match nonce sent"
	}
	withoutProof := c2[:len(c2)-len(",p=")-len(proofB64)]
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	mac := hmac.New(s.hash, s.cred.StoredKey)
	mac.Write(authMessage)
	clientKey := mac.Sum(nil) // ClientSignature, then ClientKey
	if len(proof) != len(clientKey) {
		return nil, "invalid proof"
	}
	subtle.XORBytes(clientKey, clientKey, proof)
	h := s.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) {
		return nil, "invalid proof"
	}
	mac = hmac.New(s.hash, s.cred.ServerKey)
	mac.Write(authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac.Sum(nil))), ""
}
