package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/broker"
)

// mirrorGuard bounds each wait of the mirror command's tests.
const mirrorGuard = 2 * time.Minute

// mirrorProduce produces n records over partitions of topic with cl (keys k<i>, values
// <prefix>-<i>, a header, timestamps of their own) and returns their values by partition, in
// offset order.
func mirrorProduce(t *testing.T, cl *kgo.Client, topic, prefix string, partitions int32, n int) map[int32][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mirrorGuard)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, "%s-%d", prefix, i), Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	out := map[int32][]string{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], string(r.Value))
	}
	return out
}

// mirrorLocal returns the values of the local topic a read_committed reader sees, by
// partition, and checks each record's header and timestamp against its value's number.
func mirrorLocal(t *testing.T, dir, topic string) map[int32][]string {
	t.Helper()
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer s.Close()
	tp, err := s.Topic(topic)
	require.NoError(t, err)
	out := map[int32][]string{}
	for p := range tp.PartitionCount() {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		end := part.LastStableOffset()
		r, err := tp.NewReader(commitlog.ReaderConfig{Partitions: []int32{p}, Start: commitlog.Earliest, Isolation: commitlog.ReadCommitted})
		require.NoError(t, err)
		for {
			pos, err := r.Position(p)
			require.NoError(t, err)
			if pos >= end {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			rec, err := r.Next(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				continue // markers at the end: the position has passed them
			}
			require.NoError(t, err)
			v := string(rec.Value)
			i := v[strings.LastIndexByte(v, '-')+1:]
			require.Equal(t, []commitlog.Header{{Key: "i", Value: []byte(i)}}, rec.Headers, "record %s", v)
			require.Equal(t, "k"+i, string(rec.Key), "record %s", v)
			var n int64
			fmt.Sscan(i, &n)
			require.Equal(t, 1_700_000_000_000+n, rec.Timestamp.UnixMilli(), "record %s", v)
			out[p] = append(out[p], v)
		}
		require.NoError(t, r.Close())
	}
	return out
}

func mirrorMerge(dst, src map[int32][]string) {
	for p, vs := range src {
		dst[p] = append(dst[p], vs...)
	}
}

// TestMirrorUsage: mistakes in mirror pull's and push's flags exit 2 with one line, before the
// store is opened.
func TestMirrorUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for _, args := range [][]string{
		{"mirror"},
		{"mirror", "sideways"},
		{"mirror", "pull"},
		{"mirror", "pull", "--topics", "a"},
		{"mirror", "pull", "--brokers", "kafka:9092"},
		{"mirror", "pull", "--brokers", "kafka", "--topics", "a"},
		{"mirror", "pull", "--brokers", "kafka:0", "--topics", "a"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a,b/c"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--prefix", "x:"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--name", "two words"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--tls-ca", filepath.Join(dir, "none.pem")},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--sasl-user", "u"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--sasl-mechanism", "PLAIN"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--sasl-mechanism", "GSSAPI", "--sasl-user", "u", "--sasl-password", "p"},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "--client-id", ""},
		{"mirror", "pull", "--brokers", "kafka:9092", "--topics", "a", "extra"},
		{"mirror", "push"},
		{"mirror", "push", "--brokers", "kafka:9092", "--name", ""},
		{"mirror", "push", "--brokers", "kafka:9092", "--topics", "a", "--prefix", "x:"},
		{"mirror", "push", "--brokers", "kafka:9092", "--sasl-password", "p"},
	} {
		r := cli(t, nil, append([]string{"--dir", dir}, args...)...)
		lines := outLines(r.stderr)
		if r.code != 2 || len(lines) != 1 || r.stdout != "" {
			t.Errorf("commitlog %s: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "a usage error created the store")
}

// TestMirrorPullKfake: mirror pull --exit-at-end copies a kfake cluster's topic into the store,
// renamed by --prefix; a second run copies only what is new.
func TestMirrorPullKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.CreateTopic("orders", 3, nil))
	cl := kgoClient(t, c.ListenAddrs()[0], kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := mirrorProduce(t, cl, "orders", "a", 3, 3000)
	dir := filepath.Join(t.TempDir(), "store")
	args := []string{"--dir", dir, "mirror", "pull", "--brokers", c.ListenAddrs()[0], "--topics", "orders", "--prefix", "dc1.", "--exit-at-end"}
	r := mustCLI(t, nil, args...)
	require.Contains(t, r.stderr, "commitlog mirror pull: following orders on "+c.ListenAddrs()[0])
	require.Contains(t, r.stderr, "commitlog mirror pull: stopped; 3000 records in ")
	require.Contains(t, r.stderr, "lag 0\n")
	require.Equal(t, want, mirrorLocal(t, dir, "dc1.orders"))

	mirrorMerge(want, mirrorProduce(t, cl, "orders", "b", 3, 300))
	r = mustCLI(t, nil, args...)
	require.Contains(t, r.stderr, "commitlog mirror pull: stopped; 300 records in ")
	require.Equal(t, want, mirrorLocal(t, dir, "dc1.orders"))
}

// TestMirrorPullSIGTERM: SIGTERM stops mirror pull cleanly (exit 0, a summary line), and the
// next run takes up where it stopped: every record once.
func TestMirrorPullSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.CreateTopic("events", 4, nil))
	cl := kgoClient(t, c.ListenAddrs()[0], kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := mirrorProduce(t, cl, "events", "e", 4, 20_000)
	dir := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(command(t), "--dir", dir, "mirror", "pull", "--brokers", c.ListenAddrs()[0], "--topics", "events")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		require.Contains(t, line, "commitlog mirror pull: following events on ")
	case <-time.After(mirrorGuard):
		t.Fatal("mirror pull did not start")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	require.NoError(t, cmd.Wait(), "exit code after SIGTERM; stderr %q", rest)
	require.Len(t, rest, 1, "stderr %q", rest)
	require.Contains(t, rest[0], "commitlog mirror pull: stopped; ")

	mustCLI(t, nil, "--dir", dir, "mirror", "pull", "--brokers", c.ListenAddrs()[0], "--topics", "events", "--exit-at-end")
	require.Equal(t, want, mirrorLocal(t, dir, "events"))
}

// mirrorTLS writes a self-signed certificate for 127.0.0.1 and returns the broker's TLS
// configuration, a client's, and the certificate's PEM file (for --tls-ca).
func mirrorTLS(t *testing.T) (server, client *tls.Config, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "commitlog mirror test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	d := t.TempDir()
	caFile, keyFile := filepath.Join(d, "ca.pem"), filepath.Join(d, "key.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	server, err = broker.LoadTLSConfig(caFile, keyFile)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, caFile
}

// TestMirrorPullTLSSASL: mirror pull reaches a broker (this module's, over a second store)
// with TLS (--tls-ca) and SCRAM-SHA-512 (--sasl-mechanism, --sasl-user, the password from
// COMMITLOG_SASL_PASSWORD); a wrong password exits 1 with the cluster's refusal.
func TestMirrorPullTLSSASL(t *testing.T) {
	srvTLS, cliTLS, caFile := mirrorTLS(t)
	creds, err := broker.ParseCredentials(strings.NewReader("alice:alice-secret\n"))
	require.NoError(t, err)
	remote, err := commitlog.Open(t.TempDir(), commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer remote.Close()
	_, err = remote.CreateTopic("secure", commitlog.TopicConfig{Partitions: 2})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- broker.Serve(ctx, ln, remote, broker.Config{TLS: srvTLS, Logger: slog.New(slog.DiscardHandler),
			SASL: &broker.SASLConfig{Mechanisms: []string{broker.MechanismSCRAMSHA512}, Credentials: creds}})
	}()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()
	addr := ln.Addr().String()
	cl := kgoClient(t, addr, kgo.DialTLSConfig(cliTLS), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	want := mirrorProduce(t, cl, "secure", "s", 2, 500)

	dir := filepath.Join(t.TempDir(), "store")
	args := []string{"--dir", dir, "mirror", "pull", "--brokers", addr, "--topics", "secure", "--exit-at-end",
		"--tls-ca", caFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice"}
	t.Setenv(saslPasswordEnv, "alice-secret")
	r := mustCLI(t, nil, args...)
	require.Contains(t, r.stderr, "stopped; 500 records in ")
	require.Equal(t, want, mirrorLocal(t, dir, "secure"))

	t.Setenv(saslPasswordEnv, "wrong")
	r = cli(t, nil, args...)
	require.Equal(t, 1, r.code, "stderr %q", r.stderr)
	lines := outLines(r.stderr)
	require.Contains(t, lines[len(lines)-1], "SASL_AUTHENTICATION_FAILED")

	// Without --tls-ca the broker's certificate is not trusted.
	t.Setenv(saslPasswordEnv, "alice-secret")
	r = cli(t, nil, append(args[:len(args)-6:len(args)-6], "--tls", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice")...)
	require.Equal(t, 1, r.code, "stderr %q", r.stderr)
	lines = outLines(r.stderr)
	require.Contains(t, lines[len(lines)-1], "certificate")
}

// TestMirrorPushKfake: mirror push --exit-at-end ships a topic of the store to a kfake cluster,
// renamed by --prefix; a second run ships only what is new. A read_committed consumer of the
// cluster sees every record once, in order per partition.
func TestMirrorPushKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, "k%d|v%d\n", i%37, i)
	}
	mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "--topic", "quakes", "--partitions", "3", "--key-delim", "|")
	args := []string{"--dir", dir, "mirror", "push", "--brokers", c.ListenAddrs()[0], "--topics", "quakes", "--prefix", "edge-7.", "--exit-at-end"}
	r := mustCLI(t, nil, args...)
	require.Contains(t, r.stderr, "commitlog mirror push: shipping quakes of "+dir)
	require.Contains(t, r.stderr, "commitlog mirror push: stopped; 2000 records in ")

	in.Reset()
	for i := 2000; i < 2300; i++ {
		fmt.Fprintf(&in, "k%d|v%d\n", i%37, i)
	}
	mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "--topic", "quakes", "--key-delim", "|")
	r = mustCLI(t, nil, args...)
	require.Contains(t, r.stderr, "commitlog mirror push: stopped; 300 records in ")

	// The cluster's copy, partition for partition, against the store's.
	want := map[int32][]string{}
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	tp, err := s.Topic("quakes")
	require.NoError(t, err)
	for p := range tp.PartitionCount() {
		part, err := tp.Partition(p)
		require.NoError(t, err)
		for rec, err := range part.Scan(0) {
			require.NoError(t, err)
			want[p] = append(want[p], string(rec.Key)+"|"+string(rec.Value))
			if rec.Offset+1 >= part.HighWatermark() {
				break
			}
		}
	}
	require.NoError(t, s.Close())
	ctx, cancel := context.WithTimeout(context.Background(), mirrorGuard)
	defer cancel()
	cons := kgoClient(t, c.ListenAddrs()[0], kgo.ConsumeTopics("edge-7.quakes"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	for n := 0; n < 2300; {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d records of 2300", n)
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Key)+"|"+string(r.Value))
			n++
		})
	}
	require.Equal(t, want, got)
}
