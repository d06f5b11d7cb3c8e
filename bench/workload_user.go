package main

import (
	"errors"
	"strconv"
	"strings"
)

// The user-path workloads: reader (Reader.Records next to the engine's scans) and producers
// (Topic.Append of one record per call next to the Log's group commit). The partition scale
// workload is in scale.go.

// runReader writes p.SmallN records of 100-byte values to a new log of s (not timed), closes it,
// opens it again in this process (not timed) and times a read of every record from the first.
func runReader(s *System, dir string, p Params) (Result, error) {
	gen := NewGen(100)
	n := int64(p.SmallN)
	size := n * (keySize + 100)
	l, err := s.Open(dir, Options{SizeHint: size})
	if err != nil {
		return Result{}, err
	}
	if err := fill(l, gen, 0, p.SmallN, p.Batch); err != nil {
		return Result{}, errors.Join(err, l.Close())
	}
	if !s.Persistent {
		return timedScan(l, gen, n)
	}
	if err := closeChecked(l, n); err != nil {
		return Result{}, err
	}
	if l, err = s.Open(dir, Options{SizeHint: size, ReadMostly: true}); err != nil {
		return Result{}, err
	}
	return timedScan(l, gen, n)
}

// producerGoroutines returns the writers of a producers case ID ("producers16": 16).
func producerGoroutines(caseID string) (int, bool) {
	n, ok := strings.CutPrefix(caseID, "producers")
	if !ok {
		return 0, false
	}
	g, err := strconv.Atoi(n)
	if err != nil || g < 1 {
		return 0, false
	}
	return g, true
}
