package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Workload g: the project's shared flights data, CSV with the header
// time_ms,delay_min,distance_mi,origin,destination (gzip), as examples/flights reads it: key =
// origin, value = the line, timestamp = time_ms.

// findFlights returns the absolute path of the flights file: path when given, else the shared
// data's file seen from bench/ or from the repository root; "" when there is none.
func findFlights(path string) string {
	paths := []string{
		"../../shared/data/flights/flights-3m.csv.gz",
		"../shared/data/flights/flights-3m.csv.gz",
	}
	if path != "" {
		paths = []string{path}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
		}
	}
	return ""
}

// loadFlights reads up to limit flights (0: all) into records whose keys and values are views
// of one buffer.
func loadFlights(path string, limit int) ([]Rec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		in = zr
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	header, data, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !bytes.HasPrefix(header, []byte("time_ms,")) {
		return nil, fmt.Errorf("%s: header %q, want time_ms,delay_min,distance_mi,origin,destination", path, header)
	}
	recs := make([]Rec, 0, bytes.Count(data, []byte{'\n'})+1)
	for line := 2; len(data) > 0 && (limit == 0 || len(recs) < limit); line++ {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(l) == 0 {
			continue
		}
		r, err := parseFlight(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no flights", path)
	}
	return recs, nil
}

// parseFlight makes the record of one CSV line.
func parseFlight(line []byte) (Rec, error) {
	var fields [5][]byte
	rest := line
	for i := range fields {
		var ok bool
		fields[i], rest, ok = bytes.Cut(rest, []byte{','})
		if !ok && i < len(fields)-1 {
			return Rec{}, fmt.Errorf("%d fields, want 5", i+1)
		}
	}
	ts, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return Rec{}, fmt.Errorf("time_ms %q: %w", fields[0], err)
	}
	return Rec{Key: fields[3], Value: line, Time: ts}, nil
}

// runFlights appends the flights to a topic of p.Partitions partitions (workload g).
func runFlights(s *System, dir string, p Params) (Result, error) {
	if p.FlightsPath == "" {
		return Result{}, errors.New("flights data not found")
	}
	recs, err := loadFlights(p.FlightsPath, p.Flights)
	if err != nil {
		return Result{}, err
	}
	r := Result{Records: int64(len(recs))}
	for i := range recs {
		r.Bytes += int64(len(recs[i].Key) + len(recs[i].Value))
	}
	t, err := openTopic(s, dir, p.Partitions, Options{SizeHint: r.Bytes})
	if err != nil {
		return r, err
	}
	m := startMeter()
	for i := 0; i < len(recs); i += p.FlightBatch {
		if err := t.Append(recs[i:min(i+p.FlightBatch, len(recs))]); err != nil {
			return r, errors.Join(fmt.Errorf("appending flight %d: %w", i, err), t.Close())
		}
	}
	m.stop(&r)
	n, err := t.Count()
	if err == nil && n != r.Records {
		err = fmt.Errorf("topic holds %d records, want %d", n, r.Records)
	}
	return r, errors.Join(err, t.Sync(), t.Close())
}
