package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog"
)

// kcatStore makes a store with topic ts: three records at 1000, 2000 and 3000 ms, the second
// with a null key and headers, the third with a null value.
func kcatStore(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := commitlog.Open(dir)
	require.NoError(t, err)
	tp, err := s.CreateTopic("ts", commitlog.TopicConfig{Partitions: 1, LogConfig: commitlog.LogConfig{RetentionDuration: -1}})
	require.NoError(t, err)
	require.NoError(t, tp.Append(t.Context(),
		&commitlog.Record{Key: []byte("a"), Value: []byte(`{"t":1000}`), Timestamp: time.UnixMilli(1000)},
		&commitlog.Record{Value: []byte(`two "q"`), Timestamp: time.UnixMilli(2000), Headers: []commitlog.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}},
		&commitlog.Record{Key: []byte("c"), Timestamp: time.UnixMilli(3000)}))
	require.NoError(t, s.Close())
	return dir
}

// TestConsumeKcatJSON: -J prints kcat's JSON envelope, a null key or value as null, headers only
// when the record has some.
func TestConsumeKcatJSON(t *testing.T) {
	dir := kcatStore(t)
	r := mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-e", "-o", "1", "-J")
	require.Equal(t, `{"topic":"ts","partition":0,"offset":1,"tstype":"create","ts":2000,"broker":-1,"headers":["h1","x","h2",null],"key":null,"payload":"two \"q\""}`+"\n"+
		`{"topic":"ts","partition":0,"offset":2,"tstype":"create","ts":3000,"broker":-1,"key":"c","payload":null}`+"\n", r.stdout)
}

// TestConsumeKcatFlags: -K DELIM prints key DELIM value, -Z a null as NULL, -o s@MS starts at a
// timestamp and -o e@MS stops before one (and exits, without -e).
func TestConsumeKcatFlags(t *testing.T) {
	dir := kcatStore(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-e", "-K", "|"}, "a|{\"t\":1000}\n|two \"q\"\nc|\n"},
		{[]string{"-e", "-K", "|", "-Z"}, "a|{\"t\":1000}\nNULL|two \"q\"\nc|NULL\n"},
		{[]string{"-e", "-o", "s@2000", "-f", `%o %T\n`}, "1 2000\n2 3000\n"},
		{[]string{"-o", "e@3000", "-f", `%o %T\n`}, "0 1000\n1 2000\n"},
		{[]string{"-o", "s@1500", "-o", "e@2500", "-f", `%o %T\n`}, "1 2000\n"},
		{[]string{"-o", "e@500", "-f", `%o %T\n`}, ""},
		{[]string{"-o", "@1970-01-01T00:00:02Z", "-o", "e@1970-01-01T00:00:03Z", "-f", `%o\n`}, "1\n"},
	} {
		r := mustCLI(t, nil, append([]string{"--dir", dir, "consume", "-t", "ts"}, c.args...)...)
		require.Equal(t, c.want, r.stdout, c.args)
	}
	// A named reader stopped by e@ commits the stop, not the records it read past it.
	mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-r", "upto", "-o", "e@2000", "-f", `%o\n`)
	r := mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-r", "upto", "-e", "-f", `%o\n`)
	require.Equal(t, "1\n2\n", r.stdout)

	r = cli(t, nil, "--dir", dir, "consume", "-t", "ts", "-o", "e@1", "-o", "e@2")
	require.Equal(t, 2, r.code)
	r = cli(t, nil, "--dir", dir, "consume", "-t", "ts", "-o", "1", "-o", "2")
	require.Equal(t, 2, r.code)
}

// TestConsumePastEnd: an offset past a partition's end is said on standard error, with where
// the log ends and where the reset policy moves the reader.
func TestConsumePastEnd(t *testing.T) {
	dir := kcatStore(t)
	r := mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-o", "99999", "-e", "--reset", "latest")
	require.Equal(t, "", r.stdout)
	require.Equal(t, "commitlog consume: ts-0: offset 99999 is past the end of the log (log end offset 3, log start offset 0); reading from the end, 3 (--reset latest)\n", r.stderr)
	r = mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-o", "7", "-e", "-f", `%o\n`)
	require.Equal(t, "0\n1\n2\n", r.stdout)
	require.Equal(t, "commitlog consume: ts-0: offset 7 is past the end of the log (log end offset 3, log start offset 0); reading from the log start offset 0 (--reset earliest)\n", r.stderr)
	r = mustCLI(t, nil, "--dir", dir, "consume", "-t", "ts", "-o", "3", "-e")
	require.Equal(t, "", r.stdout+r.stderr)
}
