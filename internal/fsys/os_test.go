package fsys_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/fsys"
)

// lockChildEnv names the lock file a re-executed test binary is to hold.
const lockChildEnv = "FSYS_TEST_LOCK_CHILD"

// TestOSLockHeldByChildProcess re-executes the test binary as a child that takes the lock and waits;
// the parent sees ErrLocked until it kills the child with SIGKILL, after which the operating
// system has released the lock.
func TestOSLockHeldByChildProcess(t *testing.T) {
	if name := os.Getenv(lockChildEnv); name != "" {
		holdLockAsChild(name)
		return
	}
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1", "aix":
		t.Skip("needs flock and a killable child process")
	}

	name := filepath.Join(t.TempDir(), ".lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOSLockHeldByChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+name)
	stdin, err := cmd.StdinPipe() // the child exits when this closes, should the parent die first
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, err = fsys.OS().Lock(name)
	require.ErrorIs(t, err, fsys.ErrLocked)

	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no deferred unlock runs in the child
	require.Error(t, cmd.Wait())
	killed = true

	l, err := fsys.OS().Lock(name)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

func holdLockAsChild(name string) {
	if _, err := fsys.OS().Lock(name); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestOSLockSameProcessSecondOpen checks the flock property the log relies on: the lock belongs to
// the open file description, so a second open of the lock file in the same process cannot take it.
func TestOSLockSameProcessSecondOpen(t *testing.T) {
	name := filepath.Join(t.TempDir(), ".lock")
	l, err := fsys.OS().Lock(name)
	require.NoError(t, err)
	defer l.Close()
	for i := 0; i < 3; i++ {
		_, err := fsys.OS().Lock(name)
		require.ErrorIs(t, err, fsys.ErrLocked)
	}
}

// TestOSMapSeesWrites checks mmap's sharing with the file: on the fallback, a mapping is a copy
// taken by Map, so only writes before Map are seen.
func TestOSMapSeesWrites(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := fsys.OS().OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("abcd"), 0)
	require.NoError(t, err)
	m, err := f.Map(4, true)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, "abcd", string(m.Bytes()))
	if !fsys.MapIsMmap {
		t.Skip("built without mmap")
	}
	_, err = f.WriteAt([]byte("X"), 1)
	require.NoError(t, err)
	require.Equal(t, "aXcd", string(m.Bytes()))
	m.Bytes()[3] = 'Y'
	buf := make([]byte, 4)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "aXcY", string(buf))
}
