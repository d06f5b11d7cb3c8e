package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/commitlog-go/commitlog"
)

// metricsRE matches serve's line naming its metrics address.
var metricsRE = regexp.MustCompile(`commitlog serve: metrics on (http://\S+/metrics)\n`)

// scrape returns the lines of a GET of url that are not comments.
func scrape(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestServeMetrics: serve with --metrics-addr serves /metrics; after three records produced one
// at a time, consumed, and a group's commit, the scrape holds the exact figures (a batch of one
// record with a 2-byte key and value, uncompressed, is 72 bytes).
func TestServeMetrics(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := commitlog.Open(dir, commitlog.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	_, err = s.CreateTopic("orders", commitlog.TopicConfig{Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	b := startServe(t, dir, "--metrics-addr", "127.0.0.1:0")
	m := metricsRE.FindStringSubmatch(b.log.String())
	require.NotNil(t, m, "serve names its metrics address before the broker's:\n%s", b.log)
	url := m[1]

	cl := kgoClient(t, b.addr, kgo.DefaultProduceTopic("orders"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range 3 {
		res := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
		require.NoError(t, res.FirstErr())
	}
	require.Len(t, consumeKgo(t, ctx, b.addr, "orders", 3), 3)
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 0, 1, -1)
	committed, err := kadm.NewClient(kgoClient(t, b.addr)).CommitOffsets(ctx, "billing", offs)
	require.NoError(t, err)
	require.NoError(t, committed.Error())

	lines := scrape(t, url)
	for _, want := range []string{
		`kafka_log_log_logstartoffset{partition="0",topic="orders"} 0`,
		`kafka_log_log_logendoffset{partition="0",topic="orders"} 3`,
		`kafka_log_log_size{partition="0",topic="orders"} 216`,
		`kafka_log_log_numlogsegments{partition="0",topic="orders"} 1`,
		`kafka_topic_partition_current_offset{partition="0",topic="orders"} 3`,
		`kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 3`,
		`kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 216`,
		`kafka_server_brokertopicmetrics_totalproducerequests_total{topic="orders"} 3`,
		`commitlog_topic_batches_in_total{topic="orders"} 3`,
		`kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 216`,
		`commitlog_topic_messages_out_total{topic="orders"} 3`,
		// The internal logs (__consumer_offsets, which the commit created) are not topics.
		`kafka_server_replicamanager_partitioncount 1`,
	} {
		require.Contains(t, lines, want)
	}
	require.Contains(t, lines, `kafka_consumergroup_lag{consumergroup="billing",partition="0",topic="orders"} 2`)
	require.Contains(t, lines, `kafka_consumergroup_current_offset{consumergroup="billing",partition="0",topic="orders"} 1`)
	require.Contains(t, lines, `kafka_server_replicamanager_underreplicatedpartitions 0`)
	var goLines int
	for _, l := range lines {
		if strings.HasPrefix(l, "go_goroutines ") {
			goLines++
		}
	}
	require.Equal(t, 1, goLines, "the Go runtime's metrics are served too")

	require.Equal(t, 0, b.stop(t, syscall.SIGTERM))
	_, err = http.Get(url)
	require.Error(t, err, "the metrics server stops with serve")
}

// TestServeMetricsOff: without --metrics-addr serve serves no metrics; a bad address is a usage
// error.
func TestServeMetricsOff(t *testing.T) {
	b := startServe(t, filepath.Join(t.TempDir(), "store"))
	require.NotContains(t, b.log.String(), "metrics on")
	require.Equal(t, 0, b.stop(t, syscall.SIGTERM))

	r := cli(t, nil, "--dir", filepath.Join(t.TempDir(), "store"), "serve", "--metrics-addr", "9308")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, `--metrics-addr "9308": not a host:port`)
}
