package main

import (
	"slices"
)

// Summary is the median of one system's runs in one case, each figure its own median.
type Summary struct {
	Runs    int // successful runs
	Failed  int
	Err     string // the last failure
	RPS     float64
	MBps    float64
	Allocs  float64
	CPUus   float64 // CPU µs per record
	RSS     int64
	OpenMS  float64
	Records int64 // median records (f: in the reopened log)
	Written int64 // median records written before the reopen (f)
	Lost    int64 // most records lost by a reopen after a kill, over the runs
	// Spread is (max-min)/median of the records/s (of the open time in f).
	Spread float64
}

// summarize takes the medians of rs.
func summarize(rs []Result) *Summary {
	s := &Summary{}
	var rps, mbps, allocs, cpu, rss, open, recs, written []float64
	for _, r := range rs {
		if r.Err != "" {
			s.Failed++
			s.Err = r.Err
			continue
		}
		s.Runs++
		rps = append(rps, r.RecordsPerSec())
		mbps = append(mbps, r.MBPerSec())
		allocs = append(allocs, r.AllocsPerRecord())
		cpu = append(cpu, r.CPUMicrosPerRecord())
		rss = append(rss, float64(r.PeakRSS))
		open = append(open, r.OpenMS)
		recs = append(recs, float64(r.Records))
		written = append(written, float64(r.Written))
		if r.Written > 0 && r.Records < r.Written {
			s.Lost = max(s.Lost, r.Written-r.Records)
		}
	}
	if s.Runs == 0 {
		return s
	}
	s.RPS, s.MBps, s.Allocs, s.CPUus = median(rps), median(mbps), median(allocs), median(cpu)
	s.RSS, s.OpenMS = int64(median(rss)), median(open)
	s.Records, s.Written = int64(median(recs)), int64(median(written))
	spreadOf := rps
	if s.OpenMS > 0 {
		spreadOf = open
	}
	if m := median(spreadOf); m > 0 {
		s.Spread = (slices.Max(spreadOf) - slices.Min(spreadOf)) / m
	}
	return s
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
