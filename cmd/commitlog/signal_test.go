package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInterruptedCommandsStop: verify and dump, asked to stop (the context a SIGINT or SIGTERM
// cancels), stop before the next partition or file with exit code 130, having printed nothing
// more.
func TestInterruptedCommandsStop(t *testing.T) {
	dir, _ := adminStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"--dir", dir, "verify"},
		{"--dir", dir, "verify", "--output", "json"},
		{"dump", filepath.Join(dir, "events-0", "00000000000000000000.log")},
	} {
		var out, errb bytes.Buffer
		code := run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		require.Equal(t, exitInterrupted, code, args)
		require.Equal(t, "", out.String(), args)
		require.Equal(t, "", errb.String(), args)
	}
}

// TestSignalStopsConsume: SIGTERM stops a consume waiting at the end of the log cleanly (its
// named reader's position committed), exit 0.
func TestSignalStopsConsume(t *testing.T) {
	dir, _ := adminStore(t)
	cmd := exec.Command(command(t), "--dir", dir, "consume", "-t", "events", "-p", "1", "-r", "tail")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "commitlog-reader-tail"))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the reader never committed")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), errb.String())
	require.Equal(t, "1-0\n1-1\n1-2\n1-3\n", out.String())
	r := mustCLI(t, nil, "--dir", dir, "describe", "--reader", "tail")
	require.Equal(t, "tail    events  1          4         4               0", outLines(r.stdout)[1])
}

// TestHelpNamesInterruptedExitCode: the root --help lists every exit code the command gives,
// 130 for a command a signal stopped before it finished included.
func TestHelpNamesInterruptedExitCode(t *testing.T) {
	r := mustCLI(t, nil, "--help")
	require.Contains(t, r.stdout, "Exit codes: 0 success, 1 a data problem (damaged files, unknown topic, unparsable input, I/O\n"+
		"error), 2 a usage error, 130 a produce, compact, dump or verify that SIGINT or SIGTERM stopped\n"+
		"before it finished (consume, serve and mirror stop at a signal as their normal end: exit 0).")
}
