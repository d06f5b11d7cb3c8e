package broker

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xdg-go/scram"
)

// SCRAM iteration bounds and the count used for credentials derived from a password: Kafka's
// ScramMechanism takes 4096 to 16384 iterations for SCRAM-SHA-256 and SCRAM-SHA-512, and
// kafka-configs derives with 4096 when none is given.
const (
	MinSCRAMIterations     = 4096
	MaxSCRAMIterations     = 16384
	DefaultSCRAMIterations = MinSCRAMIterations
)

// scramSaltBytes is the length of the random salt of a derived SCRAM credential.
const scramSaltBytes = 16

// maxCredentialsLine bounds one line of a credentials file; a SCRAM-SHA-512 line is under 300
// bytes.
const maxCredentialsLine = 64 << 10

// Credentials are the users who may authenticate with SASL, each with a password or with
// pre-computed SCRAM credentials. A password serves PLAIN and, through SCRAM credentials
// derived from it, both SCRAM mechanisms; a user with SCRAM credentials only authenticates with
// those SCRAM mechanisms and with PLAIN (the password given over PLAIN is checked against a
// SCRAM credential of the user). A Credentials is safe for concurrent use: users may be added
// while the broker serves.
//
// Build one with LoadCredentials or ParseCredentials (the file format is in SASLConfig's
// documentation), or with NewCredentials and AddUser / AddSCRAMCredential.
type Credentials struct {
	mu    sync.RWMutex
	users map[string]*userCredentials
	// fakeKey keys the salts of the made-up SCRAM credentials of unknown users, so that an
	// unknown user gets the same salt on every attempt and cannot be told from a known one by
	// the server-first message (RFC 5802 section 9).
	fakeKey [32]byte
}

// userCredentials are one user's secrets.
type userCredentials struct {
	// password is the SHA-256 of the plaintext password; hasPassword says that there is one.
	password    [sha256.Size]byte
	hasPassword bool
	// scram holds the SCRAM credentials by mechanism name.
	scram map[string]SCRAMCredential
}

// NewCredentials returns an empty set of users.
func NewCredentials() *Credentials {
	c := &Credentials{users: map[string]*userCredentials{}}
	rand.Read(c.fakeKey[:]) // crypto/rand does not fail (Go 1.24)
	return c
}

// SCRAMCredential is what a server stores to authenticate a user with one SCRAM mechanism
// (RFC 5802): the salt and iteration count the password was hashed with, StoredKey =
// H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"),
// Kafka's ScramCredential. The password cannot be recovered from it.
type SCRAMCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// NewSCRAMCredential derives the SCRAM credential of password for mechanism (SCRAM-SHA-256 or
// SCRAM-SHA-512) with a random salt and iterations rounds (DefaultSCRAMIterations when 0). The
// password is taken as its UTF-8 bytes without SASLprep, as Kafka's ScramFormatter does. Its
// String, in a credentials file line "user:SCRAM-SHA-256=[<String>]", lets a broker
// authenticate the user without the password on disk.
func NewSCRAMCredential(mechanism, password string, iterations int) (SCRAMCredential, error) {
	hash, ok := scramHash(mechanism)
	if !ok {
		return SCRAMCredential{}, fmt.Errorf("broker: %q is not a SCRAM mechanism (%s or %s)", mechanism, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
	}
	if iterations == 0 {
		iterations = DefaultSCRAMIterations
	}
	if iterations < MinSCRAMIterations || iterations > MaxSCRAMIterations {
		return SCRAMCredential{}, fmt.Errorf("broker: %d SCRAM iterations: outside [%d, %d]", iterations, MinSCRAMIterations, MaxSCRAMIterations)
	}
	if password == "" {
		return SCRAMCredential{}, errors.New("broker: empty password")
	}
	salt := make([]byte, scramSaltBytes)
	rand.Read(salt)
	return deriveSCRAM(hash, password, salt, iterations)
}

// deriveSCRAM computes the credential of password with salt and iterations.
func deriveSCRAM(hash scram.HashGeneratorFcn, password string, salt []byte, iterations int) (SCRAMCredential, error) {
	cl, err := hash.NewClientUnprepped("", password, "")
	if err != nil {
		return SCRAMCredential{}, err
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return SCRAMCredential{}, fmt.Errorf("broker: deriving a SCRAM credential: %w", err)
	}
	return SCRAMCredential{Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey, Iterations: iterations}, nil
}

// String formats c as Kafka's ScramCredentialUtils does:
// salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>.
func (c SCRAMCredential) String() string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) + ",iterations=" + strconv.Itoa(c.Iterations)
}

// parseSCRAMCredential parses the String form, checking the key lengths against mechanism's
// hash and the iterations against Kafka's bounds.
func parseSCRAMCredential(mechanism, s string) (SCRAMCredential, error) {
	var c SCRAMCredential
	seen := map[string]bool{}
	for field := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(field, "=")
		if !ok || k == "" {
			return SCRAMCredential{}, errors.New("a field is not key=value")
		}
		if seen[k] {
			return SCRAMCredential{}, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			return SCRAMCredential{}, fmt.Errorf("unknown key %q (salt, stored_key, server_key, iterations)", k)
		}
		if err != nil {
			return SCRAMCredential{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	for _, k := range []string{"salt", "stored_key", "server_key", "iterations"} {
		if !seen[k] {
			return SCRAMCredential{}, fmt.Errorf("no %s", k)
		}
	}
	if err := c.check(mechanism); err != nil {
		return SCRAMCredential{}, err
	}
	return c, nil
}

// check validates c for mechanism.
func (c SCRAMCredential) check(mechanism string) error {
	hash, ok := scramHash(mechanism)
	if !ok {
		return fmt.Errorf("%q is not a SCRAM mechanism (%s or %s)", mechanism, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
	}
	size := hash().Size()
	switch {
	case len(c.Salt) == 0:
		return errors.New("empty salt")
	case len(c.StoredKey) != size:
		return fmt.Errorf("stored_key of %d bytes, %s has %d", len(c.StoredKey), mechanism, size)
	case len(c.ServerKey) != size:
		return fmt.Errorf("server_key of %d bytes, %s has %d", len(c.ServerKey), mechanism, size)
	case c.Iterations < MinSCRAMIterations || c.Iterations > MaxSCRAMIterations:
		return fmt.Errorf("%d iterations: outside [%d, %d]", c.Iterations, MinSCRAMIterations, MaxSCRAMIterations)
	}
	return nil
}

// scramHash returns the hash of a SCRAM mechanism.
func scramHash(mechanism string) (scram.HashGeneratorFcn, bool) {
	switch mechanism {
	case MechanismSCRAMSHA256:
		return scram.SHA256, true
	case MechanismSCRAMSHA512:
		return scram.SHA512, true
	}
	return nil, false
}

// checkUserName validates a user name as the credentials file can hold it.
func checkUserName(user string) error {
	switch {
	case user == "":
		return errors.New("empty user name")
	case strings.ContainsAny(user, ":\r\n"):
		return fmt.Errorf("user name %q holds ':' or a line break", user)
	case strings.TrimSpace(user) != user:
		return fmt.Errorf("user name %q begins or ends with white space", user)
	case strings.HasPrefix(user, "#"):
		return fmt.Errorf("user name %q begins with '#'", user)
	}
	return nil
}

// AddUser adds user with password: PLAIN checks the password, and SCRAM credentials for
// SCRAM-SHA-256 and SCRAM-SHA-512 are derived from it with random salts and
// DefaultSCRAMIterations. A user already known is an error.
func (c *Credentials) AddUser(user, password string) error {
	if err := c.addUser(user, password); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

func (c *Credentials) addUser(user, password string) error {
	if err := checkUserName(user); err != nil {
		return err
	}
	if password == "" {
		return fmt.Errorf("user %q: empty password", user)
	}
	u := &userCredentials{password: sha256.Sum256([]byte(password)), hasPassword: true, scram: map[string]SCRAMCredential{}}
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		sc, err := NewSCRAMCredential(m, password, DefaultSCRAMIterations)
		if err != nil {
			return err
		}
		u.scram[m] = sc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.users[user]; ok {
		return fmt.Errorf("user %q is defined twice", user)
	}
	c.users[user] = u
	return nil
}

// AddSCRAMCredential adds a pre-computed SCRAM credential of user for mechanism (SCRAM-SHA-256
// or SCRAM-SHA-512). A user may have one per mechanism; a user added with a password already
// has both.
func (c *Credentials) AddSCRAMCredential(user, mechanism string, cred SCRAMCredential) error {
	if err := c.addSCRAMCredential(user, mechanism, cred); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

func (c *Credentials) addSCRAMCredential(user, mechanism string, cred SCRAMCredential) error {
	if err := checkUserName(user); err != nil {
		return err
	}
	if err := cred.check(mechanism); err != nil {
		return fmt.Errorf("user %q: %w", user, err)
	}
	cred = SCRAMCredential{Salt: slices.Clone(cred.Salt), StoredKey: slices.Clone(cred.StoredKey), ServerKey: slices.Clone(cred.ServerKey), Iterations: cred.Iterations}
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.users[user]
	switch {
	case u == nil:
		u = &userCredentials{scram: map[string]SCRAMCredential{}}
		c.users[user] = u
	case u.hasPassword:
		return fmt.Errorf("user %q has a password and a %s credential", user, mechanism)
	case u.scram[mechanism].StoredKey != nil:
		return fmt.Errorf("user %q has two %s credentials", user, mechanism)
	}
	u.scram[mechanism] = cred
	return nil
}

// Users returns the user names, sorted.
func (c *Credentials) Users() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	users := make([]string, 0, len(c.users))
	for u := range c.users {
		users = append(users, u)
	}
	slices.Sort(users)
	return users
}

// scramCredential returns user's credential for mechanism; for an unknown user, or one without
// a credential of mechanism, a made-up one that no proof matches, with a salt that is the same
// on every attempt (known is false then).
func (c *Credentials) scramCredential(user, mechanism string) (cred SCRAMCredential, known bool) {
	c.mu.RLock()
	u := c.users[user]
	if u != nil {
		cred, known = u.scram[mechanism]
	}
	c.mu.RUnlock()
	if known {
		return cred, true
	}
	hash, _ := scramHash(mechanism)
	mac := hmac.New(sha256.New, c.fakeKey[:])
	mac.Write([]byte(mechanism + "\x00" + user))
	size := hash().Size()
	key := make([]byte, size)
	rand.Read(key)
	return SCRAMCredential{Salt: mac.Sum(nil)[:scramSaltBytes], StoredKey: key, ServerKey: key, Iterations: DefaultSCRAMIterations}, false
}

// verifyPassword says whether password is user's: compared in constant time with the password
// (their SHA-256s), or, for a user with SCRAM credentials only, by deriving the StoredKey of one
// of them.
func (c *Credentials) verifyPassword(user, password string) bool {
	c.mu.RLock()
	u := c.users[user]
	c.mu.RUnlock()
	given := sha256.Sum256([]byte(password))
	if u == nil {
		var none [sha256.Size]byte
		subtle.ConstantTimeCompare(given[:], none[:])
		return false
	}
	if u.hasPassword {
		return subtle.ConstantTimeCompare(given[:], u.password[:]) == 1
	}
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		sc, ok := u.scram[m]
		if !ok {
			continue
		}
		hash, _ := scramHash(m)
		derived, err := deriveSCRAM(hash, password, sc.Salt, sc.Iterations)
		return err == nil && hmac.Equal(derived.StoredKey, sc.StoredKey)
	}
	return false
}

// LoadCredentials reads a credentials file (the format is in SASLConfig's documentation).
// Errors name the file and the line, never a password.
func LoadCredentials(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("broker: credentials file: %w", err)
	}
	defer f.Close()
	c, err := parseCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("broker: credentials file %s: %w", path, err)
	}
	return c, nil
}

// ParseCredentials reads credentials in the file format of SASLConfig's documentation. An error
// names the line ("line 3: ..."), never a password.
func ParseCredentials(r io.Reader) (*Credentials, error) {
	c, err := parseCredentials(r)
	if err != nil {
		return nil, fmt.Errorf("broker: credentials: %w", err)
	}
	return c, nil
}

func parseCredentials(r io.Reader) (*Credentials, error) {
	c := NewCredentials()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxCredentialsLine)
	n := 0
	for sc.Scan() {
		n++
		if err := c.parseLine(sc.Text()); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, maxCredentialsLine)
		}
		return nil, fmt.Errorf("after line %d: %w", n, err)
	}
	return c, nil
}

// scramPrefix begins the secret of a pre-computed SCRAM credential line.
const scramPrefix = "SCRAM-"

// parseLine adds the user of one line. Errors leave out the line, which may hold a password.
func (c *Credentials) parseLine(line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	user, secret, ok := strings.Cut(line, ":")
	if !ok {
		return errors.New("no ':' between user and password")
	}
	if user == "" {
		return errors.New("empty user name")
	}
	if secret == "" {
		return fmt.Errorf("user %q: empty password", user)
	}
	if !strings.HasPrefix(secret, scramPrefix) {
		return c.addUser(user, secret)
	}
	mechanism, cred, ok := strings.Cut(secret, "=")
	if !ok {
		return fmt.Errorf("user %q: a SCRAM credential is %s-SHA-256=[salt=...,stored_key=...,server_key=...,iterations=...] (a password cannot begin with %q)", user, scramPrefix[:len(scramPrefix)-1], scramPrefix)
	}
	if _, ok := scramHash(mechanism); !ok {
		return fmt.Errorf("user %q: unknown SCRAM mechanism %q (%s or %s)", user, mechanism, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
	}
	if strings.HasPrefix(cred, "[") {
		if !strings.HasSuffix(cred, "]") {
			return fmt.Errorf("user %q: %s credential: no closing ']'", user, mechanism)
		}
		cred = cred[1 : len(cred)-1]
	}
	sc, err := parseSCRAMCredential(mechanism, cred)
	if err != nil {
		return fmt.Errorf("user %q: %s credential: %w", user, mechanism, err)
	}
	return c.addSCRAMCredential(user, mechanism, sc)
}
