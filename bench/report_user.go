package main

import (
	"fmt"
	"slices"
	"strings"
)

// The report's sections of the user-path workloads: reader and producers (one table a case, the
// × column over the workload's Base system, CPU per record), and scale (one table of phases).

// writeUserPath writes the tables of a workload with a Base system.
func (r *Report) writeUserPath(pw *printer, wl Workload) {
	baseName := wl.Base
	if s, err := systemByName(wl.Base); err == nil {
		baseName = s.DisplayName(wl.Letter)
	}
	for _, c := range wl.Cases {
		if c.Title != "" {
			pw.p("### %s\n\n", c.Title)
		}
		pw.p("| system | records/s | MB/s | CPU µs/record | allocs/record | peak RSS | × %s | target |\n|---|--:|--:|--:|--:|--:|--:|---|\n", baseName)
		base := r.med(c.ID, wl.Base)
		for _, s := range r.Systems {
			if !s.Takes(wl.Letter) {
				continue
			}
			name := s.DisplayName(wl.Letter)
			if s.Kind == KindOurs {
				name = "**" + name + "**"
			}
			sum := summarize(r.Results[c.ID][s.Name])
			if sum.Runs == 0 {
				if sum.Failed > 0 {
					pw.p("| %s | failed: %s | | | | | | |\n", name, cellText(sum.Err))
				}
				continue
			}
			ratio := ""
			if base != nil && base.RPS > 0 {
				ratio = fmt.Sprintf("%.2f", sum.RPS/base.RPS)
			}
			pw.p("| %s | %s ±%.0f%% | %.1f | %.2f | %.3f | %.0f MiB | %s | %s |\n", name, human(sum.RPS), 100*sum.Spread,
				sum.MBps, sum.CPUus, sum.Allocs, mib(sum.RSS), ratio, r.targetCell(c.ID, s))
			if sum.Failed > 0 {
				pw.p("| ↳ %d of %d runs failed | %s | | | | | | |\n", sum.Failed, sum.Failed+sum.Runs, cellText(sum.Err))
			}
		}
		pw.p("\n")
	}
}

// ScaleSummary is the scale workload's figures over one case's runs: times are medians, with
// their spread (max−min)/median; descriptors and memory the most seen in any run, a failed one
// included (a run that failed for want of descriptors counted them up to the failure).
type ScaleSummary struct {
	Runs, Failed int
	Err          string // the last failure
	Partitions   int
	CreateMS     float64
	CreateEachMS float64 // one CreateTopic call a topic
	LayoutMS     float64 // the file system's share (ScaleResult.LayoutMS)
	CloseMS      float64
	ReopenMS     float64
	CreateSpread float64
	EachSpread   float64
	LayoutSpread float64
	CloseSpread  float64
	ReopenSpread float64
	FDs          int
	SegmentFDs   int
	RSS          int64 // VmRSS
	PeakRSS      int64 // VmHWM
	FDLimit      int64
	MaxOpenFiles int
	CPU          float64 // median CPU seconds of the case's timed part
}

// summarizeScale takes the figures of one scale case's runs.
func summarizeScale(rs []Result) *ScaleSummary {
	s := &ScaleSummary{}
	var create, each, layout, closeT, reopen, cpu []float64
	for _, r := range rs {
		if sr := r.Scale; sr != nil {
			s.Partitions, s.FDLimit, s.MaxOpenFiles = sr.Partitions, sr.FDLimit, sr.MaxOpenFiles
			s.FDs, s.SegmentFDs, s.RSS = max(s.FDs, sr.FDs), max(s.SegmentFDs, sr.SegmentFDs), max(s.RSS, sr.RSS)
			s.PeakRSS = max(s.PeakRSS, r.PeakRSS)
		}
		if r.Err != "" || r.Scale == nil {
			s.Failed++
			s.Err = r.Err
			if s.Err == "" {
				s.Err = "no scale figures in the result"
			}
			continue
		}
		s.Runs++
		create, closeT, reopen = append(create, r.Scale.CreateMS), append(closeT, r.Scale.CloseMS), append(reopen, r.Scale.ReopenMS)
		if r.Scale.CreateEachMS > 0 {
			each = append(each, r.Scale.CreateEachMS)
		}
		if r.Scale.LayoutMS > 0 {
			layout = append(layout, r.Scale.LayoutMS)
		}
		cpu = append(cpu, r.CPU)
	}
	s.CreateMS, s.CreateSpread = median(create), spread(create)
	s.CreateEachMS, s.EachSpread = median(each), spread(each)
	s.LayoutMS, s.LayoutSpread = median(layout), spread(layout)
	s.CloseMS, s.CloseSpread = median(closeT), spread(closeT)
	s.ReopenMS, s.ReopenSpread = median(reopen), spread(reopen)
	s.CPU = median(cpu)
	return s
}

// spread is (max−min)/median of xs, 0 for none.
func spread(xs []float64) float64 {
	m := median(xs)
	if m <= 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// scaleSummaries are the scale workload's two cases: after a clean close, and after a kill.
func (r *Report) scaleSummaries() (clean, kill *ScaleSummary) {
	return summarizeScale(r.Results["scale"][scaleOwner]), summarizeScale(r.Results["scalekill"][scaleOwner])
}

// scaleOwner is the system the scale workload measures.
const scaleOwner = "commitlog-Topic"

// The scale workload's targets (issue 22). The create target applies to the creation in one
// Store.CreateTopics call, as one Kafka CreateTopics request creates many topics.
const (
	scaleCreateMS     = 10_000
	scaleCloseMS      = 2_000
	scaleReopenMS     = 2_000
	scaleReopenKillMS = 10_000
	scaleRSS          = 256 << 20
)

// scaleVerdicts checks the scale workload's targets. A case that failed misses its targets;
// one that did not run leaves them n/a.
func (r *Report) scaleVerdicts() []Verdict {
	clean, kill := r.scaleSummaries()
	size := ""
	if p := r.Params; p.ScaleTopics != 1000 || p.ScalePartitions != 10 {
		size = " (set for 1,000 × 10)"
	}
	timed := func(s *ScaleSummary, what string, got float64, limit float64) Verdict {
		v := Verdict{Case: "scale", Target: fmt.Sprintf("%s <%s%s", what, msString(limit), size)}
		switch {
		case s.Runs > 0:
			v.Measured, v.Met, v.Known = msString(got), got < limit, true
		case s.Failed > 0:
			v.Measured, v.Known = "failed", true
		}
		return v
	}
	out := []Verdict{
		timed(clean, "create (one CreateTopics call)", clean.CreateMS, scaleCreateMS),
		timed(clean, "clean close", clean.CloseMS, scaleCloseMS),
		timed(clean, "reopen after a clean close", clean.ReopenMS, scaleReopenMS),
		timed(kill, "reopen after SIGKILL", kill.ReopenMS, scaleReopenKillMS),
	}
	fd := Verdict{Case: "scale", Target: fmt.Sprintf("segment files open ≤ WithMaxOpenFiles (%s)", count(r.Params.ScaleMaxOpenFiles))}
	if seg := max(clean.SegmentFDs, kill.SegmentFDs); clean.FDs > 0 || kill.FDs > 0 {
		fd.Measured, fd.Met, fd.Known = count(seg), r.Params.ScaleMaxOpenFiles < 0 || seg <= r.Params.ScaleMaxOpenFiles, true
	}
	rss := Verdict{Case: "scale", Target: "VmRSS <256 MiB" + size}
	if m := max(clean.RSS, kill.RSS); m > 0 {
		rss.Measured, rss.Met, rss.Known = fmt.Sprintf("%.0f MiB", mib(m)), m < scaleRSS, true
	}
	return append(out, fd, rss)
}

// longCellText makes s safe inside a table cell as cellText does, keeping up to 600 bytes
// rather than 200: a scale failure's cause comes at the end of its message.
func longCellText(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// msString formats milliseconds as ms below a second, else as seconds.
func msString(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f s", v/1000)
}

// writeScale writes the scale workload's table.
func (r *Report) writeScale(pw *printer) {
	clean, kill := r.scaleSummaries()
	if clean.Runs+clean.Failed+kill.Runs+kill.Failed == 0 {
		pw.p("Not run (the system %s was not selected).\n\n", scaleOwner)
		return
	}
	vs := r.scaleVerdicts()
	pw.p("| %s | measured | target |\n|---|--:|---|\n", scaleOwner)
	timeRow := func(s *ScaleSummary, what string, got, spread float64, v Verdict, first bool) {
		cell := "not reached"
		switch {
		case s.Runs > 0:
			cell = fmt.Sprintf("%s ±%.0f%%", msString(got), 100*spread)
			if s.Failed > 0 {
				cell += fmt.Sprintf(" (%d of %d runs failed: %s)", s.Failed, s.Failed+s.Runs, cellText(s.Err))
			}
		case s.Failed > 0 && first:
			cell = "failed: " + longCellText(s.Err)
		case s.Failed == 0:
			cell = "not run"
		}
		pw.p("| %s | %s | %s |\n", what, cell, v.Cell())
	}
	p := r.Params
	timeRow(clean, fmt.Sprintf("create: Open, %s topics in one CreateTopics call, one record in each of their %s partitions", count(p.ScaleTopics), count(p.ScaleTopics*p.ScalePartitions)),
		clean.CreateMS, clean.CreateSpread, vs[0], true)
	if clean.CreateEachMS > 0 {
		pw.p("| create as above, one CreateTopic call a topic (in a store of its own; the target is the CreateTopics call's) | %s ±%.0f%% | |\n",
			msString(clean.CreateEachMS), 100*clean.EachSpread)
	}
	if clean.LayoutMS > 0 {
		pw.p("| the file system's share of create, alone: the same %s folders made and %s files written (a few bytes each, no fsync) by os.Mkdir and os.WriteFile from 16 goroutines, just before the CreateTopics call | %s ±%.0f%% | |\n",
			count(p.ScaleTopics*p.ScalePartitions), count(len(layoutFiles)*p.ScaleTopics*p.ScalePartitions), msString(clean.LayoutMS), 100*clean.LayoutSpread)
	}
	timeRow(clean, "clean close (Store.Close)", clean.CloseMS, clean.CloseSpread, vs[1], false)
	timeRow(clean, "reopen after the clean close (Open)", clean.ReopenMS, clean.ReopenSpread, vs[2], false)
	timeRow(kill, "reopen after SIGKILL (Open)", kill.ReopenMS, kill.ReopenSpread, vs[3], true)
	fds := func(s *ScaleSummary) string {
		if s.FDs == 0 {
			return "—"
		}
		return fmt.Sprintf("%s (%s)", count(s.FDs), count(s.SegmentFDs))
	}
	pw.p("| descriptors open, most seen (of them segment files): create and clean reopen; reopen after SIGKILL | %s; %s | %s |\n", fds(clean), fds(kill), vs[4].Cell())
	rss := func(s *ScaleSummary) string {
		if s.RSS == 0 {
			return "—"
		}
		if s.PeakRSS == 0 {
			return fmt.Sprintf("%.0f MiB", mib(s.RSS))
		}
		return fmt.Sprintf("%.0f MiB (peak %.0f MiB)", mib(s.RSS), mib(s.PeakRSS))
	}
	pw.p("| VmRSS, most seen (VmHWM): create and clean reopen; reopen after SIGKILL | %s; %s | %s |\n", rss(clean), rss(kill), vs[5].Cell())
	var cpu []string
	for _, s := range []*ScaleSummary{clean, kill} {
		if s.Runs > 0 {
			cpu = append(cpu, fmt.Sprintf("%.2f s", s.CPU))
		} else {
			cpu = append(cpu, "—")
		}
	}
	pw.p("| CPU (user + system): create, close and reopen; reopen after SIGKILL | %s | |\n", strings.Join(cpu, "; "))
	pw.p("| descriptor limit of the process (soft RLIMIT_NOFILE) | %s | |\n\n", count(int(max(clean.FDLimit, kill.FDLimit))))
}
