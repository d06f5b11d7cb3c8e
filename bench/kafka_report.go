package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// KafkaReport is the section of BENCHMARKS.md the Kafka workloads make.
type KafkaReport struct {
	Command    string
	Started    time.Time
	Elapsed    time.Duration
	Machine    Machine
	Scale      float64
	Runs       int
	Systems    []*KafkaSystem
	Cases      []KafkaCase
	Results    map[string]map[string][]KafkaResult
	LoadBefore string
	LoadAfter  string
}

// KafkaSummary is the median of one server's runs in one case, each figure its own median.
type KafkaSummary struct {
	Runs, Failed int
	Err          string
	RPS, MBps    float64
	P50, P99     float64
	P999         float64
	// RecsPerReq is the records per Produce request; ReqP50, ReqP99 and ReqMax the requests'
	// round trips in ms.
	RecsPerReq             float64
	ReqP50, ReqP99, ReqMax float64
	// LagP99 and LagMax are how late the steady case's Produce calls were, in ms.
	LagP99, LagMax float64
	// ServerUS and ClientUS are the CPU µs per record of the server and of the client.
	ServerUS, ClientUS float64
	ServerRSS          int64
	// Idempotent is set when every run's producer had a producer id.
	Idempotent bool
	// Spread is (max-min)/median of the records/s.
	Spread float64
}

// summarizeKafka takes the medians of rs.
func summarizeKafka(rs []KafkaResult) *KafkaSummary {
	s := &KafkaSummary{Idempotent: true}
	var rps, mbps, p50, p99, p999, srv, cli, rss, rpr, rq50, rq99, rqMax, lag99, lagMax []float64
	for _, r := range rs {
		if r.Err != "" {
			s.Failed++
			s.Err = r.Err
			continue
		}
		s.Runs++
		rps = append(rps, r.RecordsPerSec())
		mbps = append(mbps, float64(r.Bytes)/1e6/r.Seconds)
		p50, p99, p999 = append(p50, r.P50), append(p99, r.P99), append(p999, r.P999)
		srv = append(srv, 1e6*r.ServerCPU/float64(r.Records))
		cli = append(cli, 1e6*r.ClientCPU/float64(r.Records))
		rss = append(rss, float64(r.ServerRSS))
		lag99, lagMax = append(lag99, r.LagP99), append(lagMax, r.LagMax)
		if r.Requests > 0 {
			rpr = append(rpr, float64(r.Records)/float64(r.Requests))
			rq50, rq99, rqMax = append(rq50, r.ReqP50), append(rq99, r.ReqP99), append(rqMax, r.ReqMax)
		}
		s.Idempotent = s.Idempotent && r.Idempotent
	}
	if s.Runs == 0 {
		return s
	}
	s.RPS, s.MBps = median(rps), median(mbps)
	s.P50, s.P99, s.P999 = median(p50), median(p99), median(p999)
	s.ServerUS, s.ClientUS, s.ServerRSS = median(srv), median(cli), int64(median(rss))
	s.RecsPerReq, s.ReqP50, s.ReqP99, s.ReqMax = median(rpr), median(rq50), median(rq99), median(rqMax)
	s.LagP99, s.LagMax = median(lag99), median(lagMax)
	if s.RPS > 0 {
		s.Spread = (slices.Max(rps) - slices.Min(rps)) / s.RPS
	}
	return s
}

// med returns the summary of a server in a case, nil when it has no successful run.
func (r *KafkaReport) med(c, sys string) *KafkaSummary {
	rs := r.Results[c][sys]
	if len(rs) == 0 {
		return nil
	}
	if s := summarizeKafka(rs); s.Runs > 0 {
		return s
	}
	return nil
}

// kafkaVerdicts checks the targets of the Kafka workloads for server sys in case c: the
// issue's, all set against the discard server and kfake measured in the same run but for the
// absolute produce rate and the steady latency.
func (r *KafkaReport) kafkaVerdicts(c, sys string) []Verdict {
	me := r.med(c, sys)
	ratio := func(target string, base *KafkaSummary, min float64) Verdict {
		v := Verdict{Case: c, Target: target}
		if me == nil || base == nil || base.RPS == 0 {
			return v
		}
		x := me.RPS / base.RPS
		return Verdict{Case: c, Target: target, Measured: fmt.Sprintf("%.2f×", x), Met: x >= min, Known: true}
	}
	switch c {
	case "p4":
		abs := Verdict{Case: c, Target: "≥1,000,000 records/s"}
		if me != nil {
			abs.Measured, abs.Met, abs.Known = human(me.RPS), me.RPS >= 1e6, true
		}
		return []Verdict{abs, ratio("≥0.7× discard", r.med(c, "discard"), 0.7), ratio("≥2× kfake", r.med(c, "kfake"), 2)}
	case "consume":
		return []Verdict{ratio("≥0.7× discard", r.med(c, "discard"), 0.7)}
	case "steady":
		v := Verdict{Case: c, Target: "p99 <50 ms"}
		if me != nil {
			v.Measured, v.Met, v.Known = fmt.Sprintf("%.1f ms", me.P99), me.P99 < 50, true
		}
		return []Verdict{v}
	}
	return nil
}

// Write writes the Markdown section.
func (r *KafkaReport) Write(w io.Writer) error {
	pw := &printer{w: w}
	pw.p("## (k) Kafka's wire protocol: the broker against kfake and a discard server\n\n")
	pw.p("One kgo client (franz-go %s) in the bench's process produces to and consumes from each server over loopback; every server runs in a child process of the bench binary, a new one for every case and run, so that its heap, CPU time and peak RSS are its own. ", moduleVersion("github.com/twmb/franz-go"))
	pw.p("The client keeps kgo's defaults (acks=all, idempotence, 10 ms linger, batches up to 1 MB, 5 produce requests in flight with a producer id and 1 without, 50,000 records buffered) but for compression, off: the values are random, and snappy would only take CPU from the server on the same cores. ")
	pw.p("Records have 16-byte keys and 100-byte values (MB/s counts those 116 bytes; kgo partitions by the key's hash). ")
	pw.p("The discard server is the ceiling the client and the protocol leave on this machine: it answers a produce at once and keeps nothing, and answers a fetch with copies of one stored batch. ")
	pw.p("Produce cases produce one record first (not timed: metadata and producer id), then time from the first Produce call to the last promise; latency is per record, from its Produce call to its promise (Produce blocks while kgo buffers 50,000 records, so at saturation it is mostly the client's queue). ")
	pw.p("The steady case produces on a schedule (record j due j/rate after the start) and counts each latency from the record's due time, so a producer that falls behind is charged for it; how late the Produce calls themselves were is given apart (the client's own stalls, not the server's). ")
	pw.p("The consume case fills a topic first (not timed; the discard server's partitions hold the records from the start), then times a new consumer from its creation to the last record, each record's value checked against its key's number. ")
	pw.p("Server and client CPU are the user and system CPU time of each process in the timed part, per record: on a shared machine they move less than records/s. Peak RSS is the server's VmHWM in the timed part, reset at its start.\n\n")
	pw.p("```sh\n%s\n```\n\n", r.Command)
	m := r.Machine
	line := fmt.Sprintf("Run %s, took %s; %s, %d cores, %s, %s; 1-minute load average %s before the run and %s after it.", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second), m.CPU, m.Cores, m.Kernel, m.Go, r.LoadBefore, r.LoadAfter)
	if r.Runs > 1 {
		line += fmt.Sprintf(" %d interleaved runs; each figure is the median of its runs, ± the spread (max−min)/median of the records/s.", r.Runs)
	} else {
		line += " One run (-runs sets more, interleaved, medians reported)."
	}
	if r.Scale != 1 {
		line += fmt.Sprintf(" **Scaled run (-scale=%g).**", r.Scale)
	}
	pw.p("%s", line)
	pw.p("\n\n")

	pw.p("| target (%s, the store's default durability) | measured | |\n|---|--:|---|\n", oursKafka)
	for _, c := range r.Cases {
		for _, v := range r.kafkaVerdicts(c.ID, oursKafka) {
			state := "n/a"
			switch {
			case v.Known && v.Met:
				state = "met"
			case v.Known:
				state = "**missed**"
			}
			pw.p("| %s: %s | %s | %s |\n", c.ID, v.Target, v.Measured, state)
		}
	}
	pw.p("\n")

	for _, c := range r.Cases {
		r.writeCase(pw, c)
	}
	pw.p("| system | version | configuration |\n|---|---|---|\n")
	for _, s := range r.Systems {
		pw.p("| %s | %s | %s |\n", s.Name, s.Version, cellText(s.Config))
	}
	pw.p("\n")
	return pw.err
}

// writeCase writes one case's table.
func (r *KafkaReport) writeCase(pw *printer, c KafkaCase) {
	pw.p("### %s: %s\n\n", c.ID, c.Title)
	produce := c.ID != "consume"
	head := "| system | records/s | MB/s |"
	align := "|---|--:|--:|"
	if produce {
		head += " p50 ms | p99 ms | p99.9 ms | records per request | request p50 / p99 / max ms |"
		align += "--:|--:|--:|--:|--:|"
	}
	if c.Rate > 0 {
		head += " Produce call late p99 / max ms |"
		align += "--:|"
	}
	head += " server µs/record | client µs/record | server peak RSS |"
	align += "--:|--:|--:|"
	if produce {
		head += " idempotent |"
		align += "---|"
	}
	var bases []string // the ratio columns
	if c.Rate == 0 {
		for _, name := range []string{"discard", "kfake", "discard-nopid"} {
			if i := slices.IndexFunc(r.Systems, func(s *KafkaSystem) bool { return s.Name == name }); i >= 0 && r.Systems[i].Takes(c.ID) {
				bases = append(bases, name)
				head += " × " + name + " |"
				align += "--:|"
			}
		}
	}
	pw.p("%s target |\n%s---|\n", head, align)
	for _, s := range r.Systems {
		if !s.Takes(c.ID) {
			continue
		}
		name := s.Name
		if s.Kind == KindOurs {
			name = "**" + name + "**"
		}
		sum := summarizeKafka(r.Results[c.ID][s.Name])
		if sum.Runs == 0 {
			pw.p("| %s | failed: %s |\n", name, cellText(sum.Err))
			continue
		}
		row := fmt.Sprintf("| %s | %s", name, human(sum.RPS))
		if r.Runs > 1 {
			row += fmt.Sprintf(" ±%.0f%%", 100*sum.Spread)
		}
		row += fmt.Sprintf(" | %.1f |", sum.MBps)
		if produce {
			row += fmt.Sprintf(" %.1f | %.1f | %.1f | %s | %.1f / %.1f / %.0f |", sum.P50, sum.P99, sum.P999, count(int(sum.RecsPerReq+0.5)), sum.ReqP50, sum.ReqP99, sum.ReqMax)
		}
		if c.Rate > 0 {
			row += fmt.Sprintf(" %.1f / %.1f |", sum.LagP99, sum.LagMax)
		}
		row += fmt.Sprintf(" %.2f | %.2f | %.0f MiB |", sum.ServerUS, sum.ClientUS, mib(sum.ServerRSS))
		if produce {
			row += map[bool]string{true: " yes |", false: " **no** |"}[sum.Idempotent]
		}
		for _, name := range bases {
			if base := r.med(c.ID, name); base != nil && base.RPS > 0 {
				row += fmt.Sprintf(" %.2f |", sum.RPS/base.RPS)
			} else {
				row += " |"
			}
		}
		var cells []string
		if s.Kind == KindOurs {
			for _, v := range r.kafkaVerdicts(c.ID, s.Name) {
				cells = append(cells, v.Cell())
			}
		}
		pw.p("%s %s |\n", row, strings.Join(cells, "; "))
		if sum.Failed > 0 {
			pw.p("| ↳ %d of %d runs failed: %s |\n", sum.Failed, sum.Failed+sum.Runs, cellText(sum.Err))
		}
	}
	pw.p("\n")
}
