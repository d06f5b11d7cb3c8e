package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClosedOutputEndsQuietly: a command whose standard output is a pipe that its reader closes
// (dump | head, consume | head) stops with exit 0 and says nothing, as cat does.
func TestClosedOutputEndsQuietly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var in strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&in, "k%d:value %d\n", i, i)
	}
	mustCLI(t, strings.NewReader(in.String()), "--dir", dir, "produce", "-t", "big", "-K", ":")
	for _, args := range [][]string{
		{"dump", "--records", filepath.Join(dir, "big-0", "00000000000000000000.log")},
		{"consume", "-t", "big", "-e"},
		{"--dir", dir, "consume", "-t", "big", "-e", "-J"},
	} {
		if args[0] != "--dir" {
			args = append([]string{"--dir", dir}, args...)
		}
		cmd := exec.Command(command(t), args...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.NotEmpty(t, line)
		require.NoError(t, stdout.(*os.File).Close()) // head exits
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("commitlog %s: exit %d, stderr %q; want exit 0", strings.Join(args, " "), ee.ExitCode(), stderr.String())
		}
		require.NoError(t, err)
		require.Equal(t, "", stderr.String(), args)
	}
}
