package broker

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A SCRAM-SHA-256 credential in Kafka's notation, and one of SCRAM-SHA-512.
var (
	testSHA256Cred = SCRAMCredential{Salt: []byte("salt-256"), StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32), Iterations: 8192}
	testSHA512Cred = SCRAMCredential{Salt: []byte("salt-512"), StoredKey: bytes.Repeat([]byte{3}, 64), ServerKey: bytes.Repeat([]byte{4}, 64), Iterations: 4096}
)

func TestSCRAMCredentialString(t *testing.T) {
	require.Equal(t, "salt=c2FsdC0yNTY=,stored_key=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=,server_key=AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=,iterations=8192", testSHA256Cred.String())
}

func TestParseCredentials(t *testing.T) {
	sha256Line := "bob:SCRAM-SHA-256=[" + testSHA256Cred.String() + "]"
	sha512Line := "bob:SCRAM-SHA-512=" + testSHA512Cred.String() // kafka-configs' form, no brackets
	good := strings.Join([]string{
		"# users",
		"",
		"  alice:alice-secret  ",
		"carol:pass:with:colons",
		"\t# indented comment",
		sha256Line,
		sha512Line,
		"dave:# not a comment",
		"erin:SCRAM-SHA-512=[" + testSHA512Cred.String() + "]\r",
	}, "\n")
	c, err := ParseCredentials(strings.NewReader(good))
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "bob", "carol", "dave", "erin"}, c.Users())
	require.True(t, c.verifyPassword("alice", "alice-secret"))
	require.False(t, c.verifyPassword("alice", "alice-secret  "))
	require.False(t, c.verifyPassword("alice", "alice-secre"))
	require.True(t, c.verifyPassword("carol", "pass:with:colons"))
	require.True(t, c.verifyPassword("dave", "# not a comment"))
	require.False(t, c.verifyPassword("nobody", "alice-secret"))

	// Pre-computed credentials come back as written.
	cred, known := c.scramCredential("bob", MechanismSCRAMSHA256)
	require.True(t, known)
	require.Equal(t, testSHA256Cred, cred)
	cred, known = c.scramCredential("bob", MechanismSCRAMSHA512)
	require.True(t, known)
	require.Equal(t, testSHA512Cred, cred)
	_, known = c.scramCredential("erin", MechanismSCRAMSHA256)
	require.False(t, known)

	// A password line derives both SCRAM credentials, salted at random with 4096 iterations.
	a256, known := c.scramCredential("alice", MechanismSCRAMSHA256)
	require.True(t, known)
	require.Equal(t, DefaultSCRAMIterations, a256.Iterations)
	require.Len(t, a256.Salt, scramSaltBytes)
	require.Len(t, a256.StoredKey, 32)
	require.Len(t, a256.ServerKey, 32)
	a512, known := c.scramCredential("alice", MechanismSCRAMSHA512)
	require.True(t, known)
	require.Len(t, a512.StoredKey, 64)
	require.NotEqual(t, a256.Salt, a512.Salt)
	sha256Hash, _ := scramHash(MechanismSCRAMSHA256)
	again, err := deriveSCRAM(sha256Hash, "alice-secret", a256.Salt, a256.Iterations)
	require.NoError(t, err)
	require.Equal(t, a256, again)

	bad := []struct {
		name, text, err string
	}{
		{"no colon", "alice:ok\nalice-secret", "broker: credentials: line 2: no ':' between user and password"},
		{"empty user", "# c\n:secret", "broker: credentials: line 2: empty user name"},
		{"empty password", "alice:", `broker: credentials: line 1: user "alice": empty password`},
		{"user twice", "alice:a\n\nalice:b", `broker: credentials: line 3: user "alice" is defined twice`},
		{"user with white space", "al ice:a\nbad user :b", `broker: credentials: line 2: user name "bad user " begins or ends with white space`},
		{"password and SCRAM", "bob:x\n" + sha256Line, `broker: credentials: line 2: user "bob" has a password and a SCRAM-SHA-256 credential`},
		{"SCRAM then password", sha256Line + "\nbob:x", `broker: credentials: line 2: user "bob" is defined twice`},
		{"two SCRAM-SHA-256", sha256Line + "\n" + sha256Line, `broker: credentials: line 2: user "bob" has two SCRAM-SHA-256 credentials`},
		{"unknown mechanism", "bob:SCRAM-SHA-1=[salt=AA==]", `broker: credentials: line 1: user "bob": unknown SCRAM mechanism "SCRAM-SHA-1" (SCRAM-SHA-256 or SCRAM-SHA-512)`},
		{"SCRAM without =", "bob:SCRAM-secret", `broker: credentials: line 1: user "bob": a SCRAM credential is SCRAM-SHA-256=[salt=...,stored_key=...,server_key=...,iterations=...] (a password cannot begin with "SCRAM-")`},
		{"no closing bracket", "bob:SCRAM-SHA-256=[" + testSHA256Cred.String(), `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: no closing ']'`},
		{"missing key", "bob:SCRAM-SHA-256=[salt=AA==,stored_key=AA==,iterations=4096]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: no server_key`},
		{"unknown key", "bob:SCRAM-SHA-256=[salt=AA==,pepper=AA==]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: unknown key "pepper" (salt, stored_key, server_key, iterations)`},
		{"key twice", "bob:SCRAM-SHA-256=[salt=AA==,salt=AA==]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: salt given twice`},
		{"not key=value", "bob:SCRAM-SHA-256=[salt=AA==,oops]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: a field is not key=value`},
		{"bad base64", "bob:SCRAM-SHA-256=[salt=!!!!,stored_key=AA==,server_key=AA==,iterations=4096]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: salt: illegal base64 data at input byte 0`},
		{"bad iterations", "bob:SCRAM-SHA-256=[salt=AA==,stored_key=AA==,server_key=AA==,iterations=many]", `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: iterations: strconv.Atoi: parsing "many": invalid syntax`},
		{"key of the wrong size", "bob:SCRAM-SHA-512=[" + testSHA256Cred.String() + "]", `broker: credentials: line 1: user "bob": SCRAM-SHA-512 credential: stored_key of 32 bytes, SCRAM-SHA-512 has 64`},
		{"too few iterations", "bob:SCRAM-SHA-256=" + strings.Replace(testSHA256Cred.String(), "iterations=8192", "iterations=4095", 1), `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: 4095 iterations: outside [4096, 16384]`},
		{"too many iterations", "bob:SCRAM-SHA-256=" + strings.Replace(testSHA256Cred.String(), "iterations=8192", "iterations=16385", 1), `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: 16385 iterations: outside [4096, 16384]`},
		{"empty salt", "bob:SCRAM-SHA-256=" + strings.Replace(testSHA256Cred.String(), "salt=c2FsdC0yNTY=", "salt=", 1), `broker: credentials: line 1: user "bob": SCRAM-SHA-256 credential: empty salt`},
		{"line too long", "bob:b\nalice:" + strings.Repeat("x", maxCredentialsLine), "broker: credentials: line 2: longer than 65536 bytes"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCredentials(strings.NewReader(tc.text))
			require.EqualError(t, err, tc.err)
		})
	}
}

// TestParseCredentialsErrorsHideSecrets: an error names the line, not its password.
func TestParseCredentialsErrorsHideSecrets(t *testing.T) {
	for _, text := range []string{"Sup3r-s3cret", "SCRAM-Sup3r-s3cret", "bob:SCRAM-SHA-256=[salt=AA==,Sup3r-s3cret]"} {
		_, err := ParseCredentials(strings.NewReader(text))
		require.Error(t, err)
		require.NotContains(t, err.Error(), "Sup3r-s3cret")
	}
}

func TestNewSCRAMCredentialRoundTrip(t *testing.T) {
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		cred, err := NewSCRAMCredential(m, "bob-secret", 0)
		require.NoError(t, err)
		require.Equal(t, DefaultSCRAMIterations, cred.Iterations)
		c, err := ParseCredentials(strings.NewReader("bob:" + m + "=[" + cred.String() + "]\n"))
		require.NoError(t, err)
		got, known := c.scramCredential("bob", m)
		require.True(t, known)
		require.Equal(t, cred, got)
		// PLAIN checks a password against the SCRAM credential.
		require.True(t, c.verifyPassword("bob", "bob-secret"))
		require.False(t, c.verifyPassword("bob", "bob-secreT"))
	}
	_, err := NewSCRAMCredential("SCRAM-SHA-1", "x", 0)
	require.EqualError(t, err, `broker: "SCRAM-SHA-1" is not a SCRAM mechanism (SCRAM-SHA-256 or SCRAM-SHA-512)`)
	_, err = NewSCRAMCredential(MechanismSCRAMSHA256, "x", 100)
	require.EqualError(t, err, "broker: 100 SCRAM iterations: outside [4096, 16384]")
	_, err = NewSCRAMCredential(MechanismSCRAMSHA256, "", 0)
	require.EqualError(t, err, "broker: empty password")
}

func TestCredentialsAdd(t *testing.T) {
	c := NewCredentials()
	require.NoError(t, c.AddUser("alice", "a"))
	require.EqualError(t, c.AddUser("alice", "b"), `broker: user "alice" is defined twice`)
	require.EqualError(t, c.AddUser("a:b", "x"), `broker: user name "a:b" holds ':' or a line break`)
	require.EqualError(t, c.AddUser("#x", "x"), `broker: user name "#x" begins with '#'`)
	require.EqualError(t, c.AddUser("", "x"), "broker: empty user name")
	require.NoError(t, c.AddSCRAMCredential("bob", MechanismSCRAMSHA256, testSHA256Cred))
	require.EqualError(t, c.AddSCRAMCredential("bob", MechanismSCRAMSHA512, testSHA256Cred), `broker: user "bob": stored_key of 32 bytes, SCRAM-SHA-512 has 64`)
	require.EqualError(t, c.AddSCRAMCredential("bob", MechanismPlain, testSHA256Cred), `broker: user "bob": "PLAIN" is not a SCRAM mechanism (SCRAM-SHA-256 or SCRAM-SHA-512)`)
	require.Equal(t, []string{"alice", "bob"}, c.Users())
}

func TestLoadSASLConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users")
	require.NoError(t, os.WriteFile(path, []byte("alice:a\nbob:SCRAM-SHA-256=["+testSHA256Cred.String()+"]\n"), 0o600))
	cfg, err := LoadSASLConfig(path, []string{" plain", "scram-sha-512, SCRAM-SHA-256", ""})
	require.NoError(t, err)
	require.Equal(t, []string{MechanismPlain, MechanismSCRAMSHA512, MechanismSCRAMSHA256}, cfg.Mechanisms)
	require.Equal(t, []string{"alice", "bob"}, cfg.Credentials.Users())

	cfg, err = LoadSASLConfig(path, nil)
	require.NoError(t, err)
	require.Nil(t, cfg.Mechanisms)
	require.Equal(t, allMechanisms, cfg.mechanisms())

	_, err = LoadSASLConfig(path, []string{"GSSAPI"})
	require.EqualError(t, err, `broker: SASL mechanism "GSSAPI" is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)`)

	require.NoError(t, os.WriteFile(path, []byte("alice:a\nbroken\n"), 0o600))
	_, err = LoadSASLConfig(path, nil)
	require.EqualError(t, err, "broker: credentials file "+path+": line 2: no ':' between user and password")

	_, err = LoadSASLConfig(filepath.Join(dir, "missing"), nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}
