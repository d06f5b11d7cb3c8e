package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Workload f: the time to open a log again, after a clean close and after its writer was killed.
// The kill is real: a grandchild process (the bench binary in -fill mode) appends without fsync,
// prints "ready N" once its log holds the size asked for, and goes on appending; the child kills
// it with SIGKILL as soon as it reads that line and opens the folder as the writer left it.

// reopenRecords is the number of records of f's log: payload of 63/64 of p.ReopenBytes, so that
// with its framing a log of 1 GiB stays in the one segment Kafka's default segment.bytes (1 GiB)
// allows, and a kill leaves a whole unflushed segment to recover, not the small tail of a
// segment started after a roll (which flushes the sealed one).
func reopenRecords(p Params) int {
	return int(max(1, p.ReopenBytes/64*63/int64(keySize+p.ReopenValue)))
}

// timedReopen opens dir, asks the log for its record count and reads the last record back; it
// returns the count and fills r's open time, allocations and peak RSS.
func timedReopen(s *System, dir string, gen *Gen, r *Result) (int64, error) {
	m := startMeter()
	t0 := time.Now()
	l, err := s.Open(dir, Options{})
	if err != nil {
		return 0, err
	}
	n, err := l.Count()
	if err == nil && n == 0 {
		err = errors.New("reopened an empty log")
	}
	if err == nil {
		var k, v []byte
		if k, v, err = l.Get(n - 1); err == nil {
			err = gen.Check(n-1, k, v)
		}
	}
	r.OpenMS = float64(time.Since(t0).Microseconds()) / 1000
	m.stop(r)
	r.Records = n
	return n, errors.Join(err, l.Close())
}

// runReopenClean fills a log, closes it, and times its reopen.
func runReopenClean(s *System, dir string, p Params) (Result, error) {
	gen := NewGen(p.ReopenValue)
	n := reopenRecords(p)
	l, err := s.Open(dir, Options{})
	if err != nil {
		return Result{}, err
	}
	if err := fill(l, gen, 0, n, p.Batch); err != nil {
		return Result{}, errors.Join(err, l.Close())
	}
	if err := closeChecked(l, int64(n)); err != nil {
		return Result{}, err
	}
	r := Result{Written: int64(n)}
	got, err := timedReopen(s, dir, gen, &r)
	if err == nil && got != int64(n) {
		err = fmt.Errorf("reopened with %d records, want %d", got, n)
	}
	return r, err
}

// runReopenKill has a grandchild fill the log, kills it, and times the reopen.
func runReopenKill(s *System, dir string, p Params) (Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.Command(exe, "-fill", "-system", s.Name, "-dir", dir,
		"-reopen-bytes", strconv.FormatInt(p.ReopenBytes, 10), "-scale", "1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	line, readErr := bufio.NewReader(out).ReadString('\n')
	killErr := cmd.Process.Signal(syscall.SIGKILL)
	waitErr := cmd.Wait()
	ready, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if readErr != nil || !ok {
		return Result{}, fmt.Errorf("the writer did not get ready (%q, %v, kill: %v, wait: %v)", line, readErr, killErr, waitErr)
	}
	written, err := strconv.ParseInt(ready, 10, 64)
	if err != nil {
		return Result{}, fmt.Errorf("the writer said %q: %w", line, err)
	}
	r := Result{Written: written}
	_, err = timedReopen(s, dir, NewGen(p.ReopenValue), &r)
	return r, err
}

// fillUntilKilled is the grandchild of runReopenKill: it appends to the log in dir until it
// holds p's size, says "ready N" on standard output, and keeps appending (up to twice the size,
// then it waits) until it is killed.
func fillUntilKilled(s *System, dir string, p Params) error {
	gen := NewGen(p.ReopenValue)
	n := reopenRecords(p)
	l, err := s.Open(dir, Options{})
	if err != nil {
		return err
	}
	if err := fill(l, gen, 0, n, p.Batch); err != nil {
		return err
	}
	if _, err := fmt.Printf("ready %d\n", n); err != nil {
		return err
	}
	for i := n; i < 2*n; i += p.Batch {
		if err := fill(l, gen, int64(i), p.Batch, p.Batch); err != nil {
			return err
		}
	}
	time.Sleep(time.Hour)
	return errors.New("not killed within an hour")
}
