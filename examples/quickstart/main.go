// Command quickstart runs a real event stream through one partition's log: it appends 400 events
// of the USGS earthquake feed (embedded, public domain), reads them back by offset, seeks by
// time, then simulates a crash (a copy of the open log's files) with its last batch torn and shows
// recovery cutting the torn batch and keeping every earlier record.
//
//	go run ./examples/quickstart [dir]
//
// Without dir it works in a temporary folder and removes it afterwards.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/commitlog-go/commitlog"
)

// earthquakes.jsonl: 400 events of the USGS earthquake feed, 2018-01-31 to 2018-02-07
// (all_week.geojson, US public domain, via vega-datasets 3.2.1), one JSON object a line.
//
//go:embed earthquakes.jsonl
var sample []byte

type quake struct {
	ID    string  `json:"id"`
	Net   string  `json:"net"`
	Time  int64   `json:"time"`
	Mag   float64 `json:"mag"`
	Place string  `json:"place"`
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	dir := ""
	if len(args) > 0 {
		dir = args[0]
	} else {
		tmp, err := os.MkdirTemp("", "commitlog-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	dir = filepath.Join(dir, "earthquakes-0")
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Small segments, so that the sample spans several and the indexes have entries.
	cfg := commitlog.LogConfig{SegmentBytes: 16 << 10, IndexIntervalBytes: 512, Compression: commitlog.CompressionZstd}

	l, err := commitlog.OpenLog(dir, cfg, commitlog.WithLogger(logger))
	if err != nil {
		return err
	}
	var quakes []quake
	sc := bufio.NewScanner(bytes.NewReader(sample))
	for sc.Scan() {
		var q quake
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		quakes = append(quakes, q)
	}

	// The feed lists the newest first; append in time order, as the events happened.
	slices.Reverse(quakes)

	// Append in batches of 25, keyed by network, stamped with the event's own time.
	start := time.Now()
	for i := 0; i < len(quakes); i += 25 {
		var recs []*commitlog.Record
		for _, q := range quakes[i:min(i+25, len(quakes))] {
			v, _ := json.Marshal(q)
			recs = append(recs, &commitlog.Record{
				Key: []byte(q.Net), Value: v, Timestamp: time.UnixMilli(q.Time),
				Headers: []commitlog.Header{{Key: "source", Value: []byte("usgs")}, {Key: "id", Value: []byte(q.ID)}},
			})
		}
		if err := l.Append(ctx, recs...); err != nil {
			return err
		}
	}
	fmt.Printf("appended %d events in %s (SyncAlways: each batch fsynced)\n", len(quakes), time.Since(start).Round(time.Millisecond))
	fmt.Printf("log: start offset %d, end offset %d, %d segments, %d bytes on disk (zstd)\n",
		l.LogStartOffset(), l.LogEndOffset(), l.SegmentCount(), l.Size())

	// Read back from offset 100.
	recs, err := readRecords(l, 100, 3)
	if err != nil {
		return err
	}
	fmt.Println("\nthree records from offset 100:")
	for _, r := range recs {
		fmt.Printf("  offset %d  key %-3s  %s  %s\n", r.offset, r.key, time.UnixMilli(r.ts).UTC().Format(time.RFC3339), r.id)
	}

	// Replay from a point in time: the time index finds the first offset at or after it.
	t := time.UnixMilli(quakes[len(quakes)/2].Time).Add(-time.Second)
	off, err := l.OffsetForTime(t)
	if err != nil {
		return err
	}
	fmt.Printf("\nfirst offset with a timestamp >= %s: %d\n", t.UTC().Format(time.RFC3339), off)

	// Crash: the files as they are while the log is open are what a killed process leaves (its
	// state says the shutdown was not clean); tear the last batch in half, as a power cut
	// mid-write would. After a clean Close recovery cuts nothing: a bad batch then is kept for
	// verify to report, and reads of it return ErrCorrupt.
	end := l.LogEndOffset()
	crashed := filepath.Join(filepath.Dir(dir), "earthquakes-0-crashed")
	if err := copyFolder(dir, crashed); err != nil {
		return err
	}
	if err := l.Close(); err != nil {
		return err
	}
	if err := tearLastBatch(crashed); err != nil {
		return err
	}
	l, err = commitlog.OpenLog(crashed, cfg, commitlog.WithLogger(logger))
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Printf("\nafter tearing the last batch: end offset %d (was %d); the torn batch was cut off, every earlier record reads back\n", l.LogEndOffset(), end)
	got, err := readRecords(l, 0, int(l.LogEndOffset()))
	if err != nil {
		return err
	}
	for i, r := range got {
		if r.id != quakes[i].ID {
			return fmt.Errorf("offset %d: got %s, want %s", i, r.id, quakes[i].ID)
		}
	}
	fmt.Printf("verified %d records byte for byte against the input\n", len(got))
	return nil
}

type row struct {
	offset int64
	key    string
	ts     int64
	id     string
}

// readRecords returns up to n records from offset on.
func readRecords(l *commitlog.Log, offset int64, n int) ([]row, error) {
	var out []row
	for len(out) < n && offset < l.LogEndOffset() {
		recs, err := l.ReadRecords(offset, 64<<10)
		if err != nil {
			return nil, err
		}
		for _, r := range recs[:min(len(recs), n-len(out))] {
			var q quake
			if err := json.Unmarshal(r.Value, &q); err != nil {
				return nil, err
			}
			out = append(out, row{r.Offset, string(r.Key), r.Timestamp.UnixMilli(), q.ID})
		}
		offset = recs[len(recs)-1].Offset + 1
	}
	return out, nil
}

// copyFolder copies the files of the folder src into a new folder dst, but the directory lock
// (a killed holder's lock dies with it).
func copyFolder(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".lock" || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tearLastBatch cuts the newest segment file 30 bytes short: inside its last batch, as a power
// cut in the middle of a write would leave it.
func tearLastBatch(dir string) error {
	matches, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(matches) == 0 {
		return errors.Join(err, errors.New("no segment files"))
	}
	last := matches[len(matches)-1]
	st, err := os.Stat(last)
	if err != nil {
		return err
	}
	return os.Truncate(last, st.Size()-30)
}
