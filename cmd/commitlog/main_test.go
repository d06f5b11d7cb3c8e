package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The command's tests build it once, when the first of them needs it, and run it as a
// subprocess, as an operator would. (Lazily, so that fuzzing workers, which run only the fuzz
// target, do not build it.)

var (
	buildOnce sync.Once
	buildDir  string
	cmdPath   string // the built command
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// command returns the path of the built command.
func command(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "commitlog-cmd-test-")
		if buildErr != nil {
			return
		}
		cmdPath = filepath.Join(buildDir, "commitlog")
		if runtime.GOOS == "windows" {
			cmdPath += ".exe"
		}
		out, err := exec.Command(goTool(), "build", "-o", cmdPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building the command: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return cmdPath
}

// goTool returns the go command: the one on PATH, else the one under $GOROOT (go test runs
// tests with it set), else "go", whose run then fails saying it is not found.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command with args (and stdin, when not nil) and returns what it did.
func cli(t testing.TB, stdin io.Reader, args ...string) result {
	t.Helper()
	return cliIn(t, "", stdin, args...)
}

// cliIn runs the command in the working directory wd ("" for the test's).
func cliIn(t testing.TB, wd string, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := exec.Command(command(t), args...)
	cmd.Dir = wd
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustCLI runs the command and fails the test unless it exits 0.
func mustCLI(t testing.TB, stdin io.Reader, args ...string) result {
	t.Helper()
	r := cli(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("commitlog %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// sharedData returns the path of a file of the project's shared data (the repository's
// ../shared/data), skipping the test when it is absent.
func sharedData(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join("..", "..", "..", "shared", "data", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared data %s not found (the project's ../shared/data folder beside the repository): %v", path, err)
	}
	return path
}

// gzipLines returns the first n lines of a gzip-compressed file.
func gzipLines(t testing.TB, path string, n int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func writeFile(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outLines splits output into lines, without the empty one after the last newline.
func outLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
