// Command fanout shows one log feeding several readers, each at its own pace, on real events:
// 500 earthquakes of the USGS feed (embedded, public domain) are appended to a topic of three
// partitions, keyed by the seismic network that reported them, while four readers consume it:
//
//   - a live scorer, tailing the topic from before the first append, flags strong quakes as
//     they arrive;
//   - an hourly loader, a named reader, groups events by the hour they happened, "loads" each
//     hour and commits; it runs twice, and the second run resumes where the first committed;
//   - an audit, started after the appends, reads everything from the oldest record and checks
//     it against the sample;
//   - a replay starts from a point in time and reads only what happened since.
//
// It prints what each saw. It needs no flags and no network, and works in a temporary folder
// that it removes:
//
//	go run ./examples/fanout
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commitlog-go/commitlog"
)

// testdata/earthquakes.jsonl: 500 events of the USGS earthquake feed, 2018-02-04 to 2018-02-07
// (all_week.geojson, US public domain, via vega-datasets 3.2.1); see testdata/SOURCES.md.
//
//go:embed testdata/earthquakes.jsonl
var sample []byte

type quake struct {
	ID    string  `json:"id"`
	Net   string  `json:"net"`
	Time  int64   `json:"time"`
	Mag   float64 `json:"mag"`
	Place string  `json:"place"`
}

const (
	topicName  = "quakes"
	partitions = 3
	batchSize  = 20  // events per append
	strong     = 2.5 // the scorer's threshold
)

// replayFrom is where the replay starts: the last 13 hours of the sample.
var replayFrom = time.Date(2018, 2, 6, 12, 0, 0, 0, time.UTC)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// seen is what one reader saw.
type seen struct {
	name, start string
	perPart     [partitions]int
	note        string
}

func (s *seen) total() int {
	n := 0
	for _, c := range s.perPart {
		n += c
	}
	return n
}

func loadSample() ([]quake, error) {
	var quakes []quake
	sc := bufio.NewScanner(bytes.NewReader(sample))
	for sc.Scan() {
		var q quake
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		quakes = append(quakes, q)
	}
	// The feed lists the newest first; append in the order the events happened.
	slices.SortStableFunc(quakes, func(a, b quake) int { return int(a.Time - b.Time) })
	return quakes, sc.Err()
}

func run(ctx context.Context, w io.Writer) error {
	quakes, err := loadSample()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "commitlog-fanout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := commitlog.Open(dir)
	if err != nil {
		return err
	}
	defer s.Close()
	t, err := s.CreateTopic(topicName, commitlog.TopicConfig{Partitions: partitions})
	if err != nil {
		return err
	}
	first, last := time.UnixMilli(quakes[0].Time).UTC(), time.UnixMilli(quakes[len(quakes)-1].Time).UTC()
	fmt.Fprintf(w, "%d USGS earthquakes, %s to %s, keyed by network into topic %q (%d partitions)\n\n",
		len(quakes), first.Format("2006-01-02 15:04"), last.Format("2006-01-02 15:04 MST"), topicName, partitions)

	// 1. The live scorer: positioned at the end before the first append, tailing from there.
	live, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.Latest})
	if err != nil {
		return err
	}
	scored := make(chan seen, 1)
	scoreErr := make(chan error, 1)
	go func() {
		defer live.Close()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		r := seen{name: "live-scorer", start: "before the first append"}
		var flagged int
		var top quake
		for r.total() < len(quakes) {
			rec, err := live.Next(ctx) // blocks until the next append
			if err != nil {
				scoreErr <- err
				return
			}
			var q quake
			if err := json.Unmarshal(rec.Value, &q); err != nil {
				scoreErr <- err
				return
			}
			r.perPart[rec.Partition]++
			if q.Mag >= strong {
				flagged++
			}
			if q.Mag > top.Mag {
				top = q
			}
		}
		r.note = fmt.Sprintf("flagged %d of M%.1f or more as they came; strongest M%.1f, %s", flagged, strong, top.Mag, top.Place)
		scored <- r
	}()

	// Append the first half, the hourly loader's first run, then the second half.
	half := len(quakes) / 2
	if err := appendQuakes(ctx, t, quakes[:half]); err != nil {
		return err
	}
	loader := seen{name: "hourly-loader", start: "earliest, then its commit"}
	loads1, err := hourlyLoad(ctx, t, &loader)
	if err != nil {
		return err
	}
	committed, err := s.CommittedPositions("hourly-loader")
	if err != nil {
		return err
	}
	if err := appendQuakes(ctx, t, quakes[half:]); err != nil {
		return err
	}
	loads2, err := hourlyLoad(ctx, t, &loader)
	if err != nil {
		return err
	}
	pos := committed[topicName]
	loader.note = fmt.Sprintf("run 1 loaded %d hours and committed; run 2 resumed at offsets %d/%d/%d and loaded %d more",
		loads1, pos[0], pos[1], pos[2], loads2)

	var score seen
	select {
	case score = <-scored:
	case err := <-scoreErr:
		return fmt.Errorf("live scorer: %w", err)
	}

	audit, err := auditAll(ctx, t, quakes)
	if err != nil {
		return err
	}
	replay, err := replaySince(ctx, t, quakes)
	if err != nil {
		return err
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "reader\tstarted\trecords\tp0\tp1\tp2\twhat it did\n")
	for _, r := range []seen{score, loader, audit, replay} {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.name, r.start, r.total(), r.perPart[0], r.perPart[1], r.perPart[2], r.note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var ends []string
	for id := range int32(partitions) {
		p, _ := t.Partition(id)
		ends = append(ends, fmt.Sprintf("%d", p.LogEndOffset()))
	}
	fmt.Fprintf(w, "\npartition end offsets %s: four readers, one copy of the log, each at its own position; reading removed nothing\n", strings.Join(ends, "/"))
	return nil
}

// appendQuakes appends events in batches, each keyed by its network and stamped with the time
// it happened.
func appendQuakes(ctx context.Context, t *commitlog.Topic, quakes []quake) error {
	for i := 0; i < len(quakes); i += batchSize {
		var recs []*commitlog.Record
		for _, q := range quakes[i:min(i+batchSize, len(quakes))] {
			v, err := json.Marshal(q)
			if err != nil {
				return err
			}
			recs = append(recs, &commitlog.Record{Key: []byte(q.Net), Value: v, Timestamp: time.UnixMilli(q.Time)})
		}
		if err := t.Append(ctx, recs...); err != nil {
			return err
		}
	}
	return nil
}

// caughtUp reports whether r has read everything appended so far.
func caughtUp(r *commitlog.Reader) bool {
	for _, lag := range r.Lag() {
		if lag > 0 {
			return false
		}
	}
	return true
}

// hourlyLoad is one run of the hourly loader: it reads what is new since its last commit,
// groups the events by the hour they happened, loads each hour (here: counts it) and commits.
// It returns the number of hours loaded.
func hourlyLoad(ctx context.Context, t *commitlog.Topic, r *seen) (int, error) {
	rd, err := t.NewReader(commitlog.ReaderConfig{Name: "hourly-loader", Start: commitlog.Earliest})
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	hours := map[time.Time]int{}
	for !caughtUp(rd) {
		rec, err := rd.Next(ctx)
		if err != nil {
			return 0, err
		}
		hours[rec.Timestamp.UTC().Truncate(time.Hour)]++
		r.perPart[rec.Partition]++
	}
	// A real loader would write each hour's events to a warehouse here, then commit: after a
	// crash between the two it loads those hours again, never loses one.
	return len(hours), rd.Commit(ctx)
}

// auditAll reads the whole topic from the oldest record and checks it against the sample:
// every event once, each network in one partition, offsets without gaps.
func auditAll(ctx context.Context, t *commitlog.Topic, quakes []quake) (seen, error) {
	r := seen{name: "audit", start: "oldest record, afterwards"}
	rd, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest})
	if err != nil {
		return r, err
	}
	defer rd.Close()
	want := map[string]quake{}
	for _, q := range quakes {
		want[q.ID] = q
	}
	netPart := map[string]int32{}
	next := [partitions]int64{}
	for !caughtUp(rd) {
		rec, err := rd.Next(ctx)
		if err != nil {
			return r, err
		}
		var q quake
		if err := json.Unmarshal(rec.Value, &q); err != nil {
			return r, err
		}
		switch p, ok := netPart[q.Net]; {
		case want[q.ID] != q:
			return r, fmt.Errorf("audit: offset %d of partition %d holds %+v, not an event of the sample or seen twice", rec.Offset, rec.Partition, q)
		case rec.Offset != next[rec.Partition]:
			return r, fmt.Errorf("audit: partition %d jumps from offset %d to %d", rec.Partition, next[rec.Partition], rec.Offset)
		case ok && p != rec.Partition:
			return r, fmt.Errorf("audit: network %s in partitions %d and %d", q.Net, p, rec.Partition)
		}
		delete(want, q.ID)
		netPart[q.Net] = rec.Partition
		next[rec.Partition]++
		r.perPart[rec.Partition]++
	}
	if len(want) > 0 {
		return r, fmt.Errorf("audit: %d events of the sample missing", len(want))
	}
	r.note = fmt.Sprintf("all %d events once, no offset gaps, each of %d networks in one partition", len(quakes), len(netPart))
	return r, nil
}

// replaySince replays what happened from replayFrom on, found through the time index.
func replaySince(ctx context.Context, t *commitlog.Topic, quakes []quake) (seen, error) {
	r := seen{name: "replay", start: "at " + replayFrom.Format("2006-01-02 15:04 MST")}
	rd, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.AtTime, StartTime: replayFrom})
	if err != nil {
		return r, err
	}
	defer rd.Close()
	want := 0
	for _, q := range quakes {
		if q.Time >= replayFrom.UnixMilli() {
			want++
		}
	}
	for !caughtUp(rd) {
		rec, err := rd.Next(ctx)
		if err != nil {
			return r, err
		}
		if rec.Timestamp.Before(replayFrom) {
			return r, fmt.Errorf("replay: offset %d of partition %d is from %s, before the start", rec.Offset, rec.Partition, rec.Timestamp)
		}
		r.perPart[rec.Partition]++
	}
	if r.total() != want {
		return r, errors.New("replay: read a different number of events than the sample has since the start")
	}
	r.note = fmt.Sprintf("only the %d events since then, as the sample has", want)
	return r, nil
}
