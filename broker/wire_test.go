package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The wire-level helpers of the connection tests and the fuzz targets: request frames written
// as a client writes them, response frames read and decoded with kmsg.

// testClientID is the client id of the frames the tests write.
const testClientID = "wire-test"

// rawFrame is a request frame as a client sends it (kfake's client_conn.go reads it so): the
// size, the request header v1 (api key, version, correlation id, nullable client id), its
// tagged fields when flexible (header v2), and body.
func rawFrame(key, version int16, corr int32, flexible bool, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, kmsg.StringPtr(testClientID))
	if flexible {
		b = append(b, 0) // no tagged fields
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// requestFrame is the frame of req at version with correlation id corr, its body encoded by
// kmsg.
func requestFrame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	return rawFrame(req.Key(), version, corr, req.IsFlexible(), req.AppendTo(nil))
}

// readFrame reads one response frame from r: its correlation id and the bytes after it.
func readFrame(r io.Reader) (corr int32, rest []byte, err error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response frame size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, fmt.Errorf("response frame of %d bytes: %w", n, err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

// decodeResponse decodes rest, a response frame after its correlation id, as the response to
// key at version: the response header's tagged fields (header v1, for a flexible version but
// ApiVersions', which keeps header v0 for clients that do not know the version yet), then the
// body, which must be wholly kmsg's encoding of what it decodes to.
func decodeResponse(key, version int16, rest []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, fmt.Errorf("no kmsg response for api key %d", key)
	}
	resp.SetVersion(version)
	if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
		rd := kbin.Reader{Src: rest}
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, errors.New("bad tagged fields in the response header")
		}
		rest = rd.Src
	}
	if err := resp.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	if n := len(resp.AppendTo(nil)); n != len(rest) {
		return nil, fmt.Errorf("%s v%d response of %d bytes re-encodes to %d", kmsg.NameForKey(key), version, len(rest), n)
	}
	return resp, nil
}

// roundTrip writes req at version on nc and returns its decoded response.
func roundTrip(t testing.TB, nc net.Conn, req kmsg.Request, version int16, corr int32) kmsg.Response {
	t.Helper()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	_, err := nc.Write(requestFrame(req, version, corr))
	require.NoError(t, err)
	got, rest, err := readFrame(nc)
	require.NoError(t, err)
	require.Equal(t, corr, got, "correlation id")
	resp, err := decodeResponse(req.Key(), version, rest)
	require.NoError(t, err)
	return resp
}

// testBatch is a record batch (magic 2) of values, as a producer sends it: offsets from 0,
// no producer id, its CRC set.
func testBatch(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  1_700_000_000_000,
		MaxTimestamp:    1_700_000_000_000,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(values)),
		Records:         recs,
	}
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[8:], uint32(len(enc)-12))
	binary.BigEndian.PutUint32(enc[17:], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc
}

// logBuffer collects a broker's log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until a line holds every one of parts and returns it.
func (l *logBuffer) waitFor(t testing.TB, parts ...string) string {
	t.Helper()
	var found string
	require.Eventually(t, func() bool {
		for line := range strings.Lines(l.String()) {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				found = line
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "no log line with %q in:\n%s", parts, l)
	return found
}

// requireClosedByServer reads nc until the server's close: it must end in io.EOF or a
// connection reset, with no bytes before it, not a timeout of the guard deadline.
func requireClosedByServer(t testing.TB, nc net.Conn) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(30*time.Second)))
	n, err := io.Copy(io.Discard, nc)
	if err == nil {
		err = io.EOF // io.Copy reports the io.EOF that ended it as nil
	}
	require.Zero(t, n, "bytes answered before the close")
	require.Truef(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET),
		"read ends with %v, want io.EOF or a connection reset", err)
}

// dial opens a raw connection to b, closed when the test ends.
func (b *testBroker) dial(t testing.TB) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.addr, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc
}
